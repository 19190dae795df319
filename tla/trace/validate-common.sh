# validate-common.sh - what the trace validators (validate.sh,
# validate-echo.sh, validate-amortized.sh, validate-coded.sh,
# validate-dag.sh) share, sourced by them, not run: their options and
# usage, finding TLC, the work directory, the trace (weft-sim's, or a
# file), tampering, the conversion, and TLC on the converted trace with the
# verdict: whether the trace validated, and if not, which record failed
# and in which spec state (tla/trace/README.md).  daemon.sh takes usage and
# skip_without_tlc from here.
#
# A validator sets here (this directory), sources this file, then sets
# what is its own:
#   scenario   its default scenario
#   tampers    its tamper modes, the default first
#   select     how it picks what to check: instance (--instance S:Q),
#              sender (--sender N), or empty (the whole trace)
#   converter  its converter (trace2tla.py, echo2tla.py, ...): convert,
#              tamper and describe, with --instance or --sender as selected
#   model      the spec, tla/$model.tla (BrachaBRB, ...)
#   spec       its trace module here (BrachaTrace, ...): TLC checks
#              $spec.tla with $spec.cfg in $work/tla
#   workname   the name of its work directory (mktemp)
# and where it differs from the defaults below: prog, sim_data,
# sim_violations, jvm_opts, tlc_opts, stop_alias, what, and the function
# property_violated.  It then calls parse_options "$@", prepare,
# get_trace, convert_trace (or converts on its own: $work/tla, $records)
# and tlc_verdict, which exits: 0 validated (or, with --tamper, rejected),
# 1 rejected (or, with --tamper, accepted), 2 TLC failed.

top=$(cd "$here/../.." && pwd) || exit 2
java=${JAVA:-java}
prog=validate            # the prefix of the messages
sim_data=--trace-data    # weft-sim's option for the message bytes, or empty
sim_violations=0         # 1: a weft-sim run whose checker failed is still validated
jvm_opts=                # options for java, before TLC_JAVA_OPTS
tlc_opts=                # options for TLC
stop_alias=              # the ALIAS of the run that shows the state before a rejected record
what=                    # what the matched events were (default: steps of honest nodes)

# property_violated: called when TLC found neither the trace's end nor no
# error; a validator whose cfg checks properties along the trace redefines
# it to report their violation (and exit).
property_violated() { :; }

# usage: prints the comment at the top of the script, exits 2.
usage() {
	sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

bad_option() {
	echo "$prog: unknown option $1" >&2
	usage
}

# parse_options "$@": sets scenario, seed, instance or sender, tamper, keep
# and trace; exits 2 on a usage error.
parse_options() {
	seed=1
	instance=
	sender=
	tamper=
	keep=0
	trace=
	while [ $# -gt 0 ]; do
		case $1 in
		--scenario) [ $# -ge 2 ] || usage; scenario=$2; shift ;;
		--scenario=*) scenario=${1#*=} ;;
		--seed) [ $# -ge 2 ] || usage; seed=$2; shift ;;
		--seed=*) seed=${1#*=} ;;
		--instance) [ "$select" = instance ] || bad_option "$1"; [ $# -ge 2 ] || usage; instance=$2; shift ;;
		--instance=*) [ "$select" = instance ] || bad_option "$1"; instance=${1#*=} ;;
		--sender) [ "$select" = sender ] || bad_option "$1"; [ $# -ge 2 ] || usage; sender=$2; shift ;;
		--sender=*) [ "$select" = sender ] || bad_option "$1"; sender=${1#*=} ;;
		--tamper) tamper=${tampers%% *} ;;
		--tamper=*) tamper=${1#*=} ;;
		--keep) keep=1 ;;
		-h | --help) usage ;;
		-*) bad_option "$1" ;;
		*) [ -z "$trace" ] || usage; trace=$1 ;;
		esac
		shift
	done
	if [ -n "$tamper" ]; then
		known= modes=
		for m in $tampers; do
			[ "$m" = "$tamper" ] && known=1
			modes="${modes:+$modes, }$m"
		done
		if [ -z "$known" ]; then
			echo "$prog: unknown tamper mode '$tamper' ($modes)" >&2
			exit 2
		fi
	fi
	case $seed in '' | *[!0-9]*) echo "$prog: bad seed '$seed'" >&2; exit 2 ;; esac
	case $sender in *[!0-9]*) echo "$prog: bad sender '$sender'" >&2; exit 2 ;; esac
}

# skip_without_tlc: without a TLC to run, says "skipped" and exits 0.
skip_without_tlc() {
	if [ -z "$TLA2TOOLS_JAR" ] && ! command -v tlc >/dev/null 2>&1; then
		echo "skipped: TLC not found (set TLA2TOOLS_JAR to a tla2tools.jar)"
		exit 0
	fi
}

# prepare: finds TLC (mode jar or cmd), python3 and the scenario (a bare
# name is also looked up next to this script), and makes the work
# directory, removed at exit unless --keep.
prepare() {
	if [ -n "$TLA2TOOLS_JAR" ]; then
		if [ ! -f "$TLA2TOOLS_JAR" ]; then
			echo "$prog: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file" >&2
			exit 2
		fi
		if ! command -v "$java" >/dev/null 2>&1; then
			echo "$prog: TLA2TOOLS_JAR is set but '$java' was not found" >&2
			exit 2
		fi
		mode=jar
	else
		skip_without_tlc
		mode=cmd
	fi
	if ! command -v python3 >/dev/null 2>&1; then
		echo "$prog: python3 not found ($converter needs it)" >&2
		exit 2
	fi
	[ -f "$scenario" ] || [ ! -f "$here/$scenario" ] || scenario=$here/$scenario
	if [ ! -f "$scenario" ]; then
		echo "$prog: no scenario $scenario" >&2
		exit 2
	fi

	work=$(mktemp -d "${TMPDIR:-/tmp}/$workname.XXXXXX") || exit 2
	if [ "$keep" = 1 ]; then
		trap 'echo "$prog: work directory kept: $work"' EXIT
	else
		trap 'rm -rf "$work"' EXIT
	fi
	trap 'exit 130' INT TERM
}

# get_trace: without a trace file, runs weft-sim on the scenario with
# --trace (and $sim_data); then tampers with the trace if asked.
get_trace() {
	if [ -z "$trace" ]; then
		sim=${WEFT_SIM:-$top/build/bin/weft-sim}
		if [ ! -x "$sim" ]; then
			echo "$prog: $sim not found: build it with 'make', or set WEFT_SIM, or give a trace file" >&2
			exit 2
		fi
		trace=$work/trace.ndjson
		# shellcheck disable=SC2086 # $sim_data is empty or one option
		"$sim" -q --seed "$seed" --trace "$trace" $sim_data --out "$work/run.json" "$scenario"
		rc=$?
		if [ "$rc" = 1 ] && [ "$sim_violations" = 1 ] && [ -s "$trace" ]; then
			# A checker failed (weft-sim printed which): the run is still a run.
			echo "$prog: note: weft-sim reports a checker violation on $(basename "$scenario") seed $seed;" \
				"validating its trace all the same"
		elif [ "$rc" != 0 ]; then
			echo "$prog: weft-sim failed on $scenario (seed $seed)" >&2
			exit 2
		fi
		echo "$prog: $(basename "$scenario") seed $seed: $(wc -l <"$trace" | tr -d ' ') trace lines${sim_data:+ (with message data)}"
	elif [ ! -f "$trace" ]; then
		echo "$prog: no trace file $trace" >&2
		exit 2
	fi

	if [ -n "$tamper" ]; then
		python3 "$here/$converter" tamper --mode "$tamper" --scenario "$scenario" ${sender:+--sender "$sender"} \
			"$trace" "$work/tampered.ndjson" || exit 2
		trace=$work/tampered.ndjson
	fi
}

# convert_trace: NDJSON -> TLA+ in $work/tla, with the specs; records, the
# number of records.
convert_trace() {
	mkdir -p "$work/tla"
	python3 "$here/$converter" convert --scenario "$scenario" --trace "$trace" --out "$work/tla" \
		${instance:+--instance "$instance"} ${sender:+--sender "$sender"} || exit 2
	cp "$top/tla/$model.tla" "$here/$spec.tla" "$work/tla/" || exit 2
	records=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$work/tla/steps.json")
}

run_tlc() { # LOG CFG SPEC
	if [ "$mode" = jar ]; then
		# shellcheck disable=SC2086 # the options are lists of options
		(cd "$work/tla" && exec "$java" -XX:+UseParallelGC $jvm_opts $TLC_JAVA_OPTS -cp "$TLA2TOOLS_JAR" tlc2.TLC \
			-deadlock -workers 1 -cleanup $tlc_opts -metadir "$work/states-$2" -config "$2" "$3") >"$1" 2>&1
	else
		# shellcheck disable=SC2086
		(cd "$work/tla" && exec tlc -deadlock -workers 1 -cleanup $tlc_opts -metadir "$work/states-$2" \
			-config "$2" "$3") >"$1" 2>&1
	fi
}

# tlc_verdict: runs TLC on $work/tla/$spec.tla and exits with the verdict.
tlc_verdict() {
	start=$(date +%s)
	run_tlc "$work/tlc.log" "$spec.cfg" "$spec.tla"
	secs=$(($(date +%s) - start))
	log=$work/tlc.log
	distinct=$(sed -n 's/.* \([0-9,]*\) distinct states found.*/\1/p' "$log" | tail -n 1 | tr -d ,)
	depth=$(sed -n 's/^The depth of the complete state graph search is \([0-9]*\).*/\1/p' "$log" | tail -n 1)
	stats="TLC: ${distinct:-?} distinct states, depth ${depth:-?}, ${secs}s"

	if grep -q '^Error: Invariant TraceNotMatched is violated' "$log"; then
		[ -n "$what" ] || what="$records steps of honest nodes in $(grep -c . "$trace") trace lines"
		echo "trace validated: $records events matched ($what; $stats)"
		if [ -n "$tamper" ]; then
			echo "$prog: FAIL: the tampered trace ($tamper) was accepted"
			exit 1
		fi
		exit 0
	fi
	property_violated
	if ! grep -q '^Model checking completed. No error has been found' "$log" || [ -z "$depth" ]; then
		echo "$prog: TLC failed; the end of its output:" >&2
		tail -n 30 "$log" | sed 's/^/    /' >&2
		exit 2
	fi

	# Not matched: every state TLC reached has l <= depth, and the records
	# before TraceLog[depth] were matched; no behaviour matching them can
	# take TraceLog[depth].
	k=$depth
	echo "trace rejected: event $k of $records did not match ($((k - 1)) matched; $stats)"
	python3 "$here/$converter" describe "$work/tla/steps.json" "$k" | sed 's/^/  /'
	# The state(s) the spec was in: a run stopping at l = k prints one
	# behaviour (its states shown by the ALIAS stop_alias, if any).
	{
		sed -n '/^INVARIANTS/q;p' "$work/tla/$spec.cfg"
		echo "INVARIANT StopBefore"
		[ -z "$stop_alias" ] || echo "ALIAS $stop_alias"
	} >"$work/tla/Stop.cfg"
	cat >"$work/tla/${spec}Stop.tla" <<EOF
---- MODULE ${spec}Stop ----
EXTENDS $spec
StopBefore == l < $k
====
EOF
	run_tlc "$work/stop.log" Stop.cfg "${spec}Stop.tla"
	if grep -q '^Error: Invariant StopBefore is violated' "$work/stop.log"; then
		if [ -n "$stop_alias" ]; then
			echo "  what the spec says about it, after events 1..$((k - 1)):"
		elif [ "$k" -gt 1 ]; then
			echo "  a spec state matching events 1..$((k - 1)) (one of possibly several):"
		else
			echo "  the initial state of the spec:"
		fi
		awk '/^State [0-9]+:/ || /violated by the initial state/ { buf = ""; keep = 1; next }
		     keep && /^$/ { last = buf; keep = 0 } keep { buf = buf $0 "\n" }
		     END { if (keep) last = buf; printf "%s", last }' "$work/stop.log" | sed 's/^/    /'
	fi
	if [ -n "$tamper" ]; then
		echo "$prog: the tampered trace ($tamper) was rejected, as it must be"
		exit 0
	fi
	exit 1
}
