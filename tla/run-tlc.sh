#!/bin/sh
# run-tlc.sh - run every TLC model listed in tla/models.txt (`make tla`).
#
# Finds TLC: $TLA2TOOLS_JAR (a tla2tools.jar, run with java), else a `tlc`
# command on PATH.  Without either it prints one "skipped" line and exits 0,
# so `make tla` is harmless on machines without TLC.  TLC is not packaged;
# tla/README.md says how to get a jar (it never lives in this tree).
#
# Each models.txt line is
#     SPEC.tla  MODEL.cfg  holds|violated:NAME  TIMEOUT_SECONDS  [TLC options...]
# ('#' starts a comment).  "holds": TLC must finish without error.
# "violated:NAME": TLC must report that NAME, and nothing else, is violated
# (a teeth model: a deliberately broken spec that must be rejected for the
# reason it was broken for): NAME is an invariant, a temporal or an action
# property, or "deadlock"; "violated:A|B" accepts either (TLC stops at the
# first violation it finds, and workers may find another first).  A broken model that fails some other property
# (a typo, a bound too small) is a FAIL, not a pass.  TLC runs with
# -deadlock (terminal states are not errors: every run of a broadcast ends
# in one) unless the options include the word check-deadlock.  The option
# max-states=N is the model's state budget: a model whose TLC run reports
# more than N distinct states is a FAIL even when its verdict is right (a
# model that grew past what this machine checks in its time limit).  The
# other options are passed to TLC as they are.
#
# A line starting with the word trace is a trace check (tla/trace/README.md):
#     trace  NAME  TIMEOUT_SECONDS  SCRIPT [arguments...]
# runs tla/trace/SCRIPT (validate.sh, daemon.sh) with the arguments from the
# top of the tree; it passes when the script exits 0 (the trace validated,
# or a tampered one was rejected, as the script's arguments ask).  NAME is
# what TLA_ONLY matches.
#
# The models run in a temporary copy of tla/, so TLC's states/ directories
# and trace files never land in the tree.  Prints a table and exits 1 when
# some model did not meet its expectation.
#
# Environment: TLA2TOOLS_JAR, JAVA (default java), TLC_WORKERS (default 2),
# TLC_JAVA_OPTS (extra JVM options), TLA_ONLY (run only the models whose cfg
# name contains this string), TLA_KEEP=1 (keep the temporary directory with
# every model's log), TLA_MODELS (another models file, same format, e.g. a
# spec's models while they are being written; default tla/models.txt),
# TLA_TIME_SCALE (a whole number, default 1, that multiplies every time
# limit: the limits are set on the machine tla/README.md names, and the
# same TLC has run three times slower on another host of the same kind;
# the state budgets, not the times, are what a model must keep to).

here=$(cd "$(dirname "$0")" && pwd) || exit 2
models=${TLA_MODELS:-$here/models.txt}
workers=${TLC_WORKERS:-2}
java=${JAVA:-java}
scale=${TLA_TIME_SCALE:-1}
case $scale in '' | *[!0-9]* | 0) echo "tla: TLA_TIME_SCALE must be a whole number from 1" >&2; exit 2 ;; esac

if [ -n "$TLA2TOOLS_JAR" ]; then
	if [ ! -f "$TLA2TOOLS_JAR" ]; then
		echo "tla: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file" >&2
		exit 2
	fi
	mode=jar
elif command -v tlc >/dev/null 2>&1; then
	mode=cmd
else
	echo "tla: skipped: TLC not found (set TLA2TOOLS_JAR to a tla2tools.jar)"
	exit 0
fi
if [ "$mode" = jar ] && ! command -v "$java" >/dev/null 2>&1; then
	echo "tla: TLA2TOOLS_JAR is set but '$java' was not found" >&2
	exit 2
fi
if [ ! -f "$models" ]; then
	echo "tla: $models is missing" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-tla.XXXXXX") || exit 2
if [ "${TLA_KEEP:-0}" = 1 ]; then
	trap 'echo "tla: logs kept in $work"' EXIT
else
	trap 'rm -rf "$work"' EXIT
fi
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; exit 130' INT TERM
cp "$here"/*.tla "$here"/*.cfg "$work"/ || exit 2

if [ "$mode" = jar ]; then
	echo "tla: TLC: $TLA2TOOLS_JAR ($workers workers)"
else
	echo "tla: TLC: $(command -v tlc) ($workers workers)"
fi

# run_tlc LOG TIMEOUT ARGS... : runs TLC in $work with a watchdog that ends
# it (and only it) after TIMEOUT seconds; leaves "timeout" in LOG.timeout.
run_tlc() {
	log=$1 limit=$2
	shift 2
	if [ "$mode" = jar ]; then
		# shellcheck disable=SC2086 # TLC_JAVA_OPTS is a list of options
		(cd "$work" && exec "$java" -XX:+UseParallelGC $TLC_JAVA_OPTS -cp "$TLA2TOOLS_JAR" tlc2.TLC "$@") \
			>"$log" 2>&1 &
	else
		(cd "$work" && exec tlc "$@") >"$log" 2>&1 &
	fi
	pid=$!
	(
		s=0
		while [ "$s" -lt "$limit" ]; do
			sleep 1
			kill -0 "$pid" 2>/dev/null || exit 0
			s=$((s + 1))
		done
		echo timeout >"$log.timeout"
		kill "$pid" 2>/dev/null
	) &
	dog=$!
	wait "$pid"
	rc=$?
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	return "$rc"
}

# violated_names LOG: what TLC's log says is violated, as NAME or
# NAME,NAME (several temporal properties), "deadlock", or "liveness" when
# TLC names none; nothing when it reports no violation.
violated_names() {
	sed -n -e 's/^Error: Invariant \([A-Za-z0-9_]*\) is violated.*/\1/p' \
		-e 's/^Error: Property \([A-Za-z0-9_]*\) is violated by the initial state.*/\1/p' \
		-e 's/^Error: Action property \([A-Za-z0-9_]*\) is violated.*/\1/p' \
		-e 's/^Error: Temporal property \([A-Za-z0-9_]*\) was violated.*/\1/p' \
		-e 's/^Error: Temporal properties \(.*\) were violated.*/\1/p' \
		-e 's/^Error: Temporal properties were violated.*/liveness/p' \
		-e 's/^Error: Deadlock reached.*/deadlock/p' "$1" | head -n 1 |
		sed 's/, and /,/; s/ and /,/; s/, /,/g'
}

fmt='%-27s %9s  %-32s %6s  %-44s %s\n'
# shellcheck disable=SC2059 # the format is ours
table=$(printf "$fmt" model "distinct" result time expected verdict)
failed=0
ran=0

# run_trace NAME LIMIT SCRIPT ARGS...: one trace check, a row of the table.
run_trace() {
	tname=$1 tlimit=$2 script=$3
	shift 3
	case $tlimit in '' | *[!0-9]*) tlimit=300 ;; esac
	tlimit=$((tlimit * scale))
	if [ -n "$TLA_ONLY" ]; then
		case $tname in *"$TLA_ONLY"*) ;; *) return 0 ;; esac
	fi
	tlog="$work/$tname.log"
	echo "tla: $tname: tla/trace/$script $* (limit ${tlimit}s)"
	start=$(date +%s)
	(cd "$here/.." && exec sh "tla/trace/$script" "$@") >"$tlog" 2>&1 &
	tpid=$!
	(
		s=0
		while [ "$s" -lt "$tlimit" ]; do
			sleep 1
			kill -0 "$tpid" 2>/dev/null || exit 0
			s=$((s + 1))
		done
		echo timeout >"$tlog.timeout"
		kill "$tpid" 2>/dev/null
	) &
	tdog=$!
	wait "$tpid"
	trc=$?
	kill "$tdog" 2>/dev/null
	wait "$tdog" 2>/dev/null
	secs=$(($(date +%s) - start))
	ran=$((ran + 1))
	distinct=$(sed -n 's/.*TLC: \([0-9,]*\) distinct states.*/\1/p' "$tlog" | head -n 1 | tr -d ,)
	[ -n "$distinct" ] || distinct=-
	if [ -f "$tlog.timeout" ]; then
		result=timeout
	elif grep -q '^trace validated:' "$tlog"; then
		result="validated:$(sed -n 's/^trace validated: \([0-9]*\) events.*/\1/p' "$tlog" | head -n 1)"
	elif grep -q '^trace rejected:' "$tlog"; then
		at=$(sed -n 's/^trace rejected: event \([0-9]*\) of \([0-9]*\).*/\1\/\2/p' "$tlog" | head -n 1)
		result="rejected${at:+@$at}"
	else
		result="error (exit $trc)"
	fi
	verdict=FAIL
	[ "$trc" = 0 ] && ! grep -q '^skipped:' "$tlog" && verdict=OK
	[ "$verdict" = OK ] || failed=$((failed + 1))
	case $* in *--tamper*) texpect=rejected ;; *) texpect=validated ;; esac
	# shellcheck disable=SC2059
	line=$(printf "$fmt" "$tname" "$distinct" "$result" "${secs}s" "trace $texpect" "$verdict")
	table="$table
$line"
	if [ "$verdict" != OK ]; then
		echo "tla: $tname: FAIL; the end of its output:"
		tail -n 30 "$tlog" | sed 's/^/    /'
	fi
}

# Read models.txt on fd 3 so TLC cannot consume it.
while read -r spec cfg expect limit extra <&3; do
	case $spec in '' | '#'*) continue ;; esac
	if [ "$spec" = trace ]; then
		# shellcheck disable=SC2086 # the script and its arguments
		run_trace "$cfg" "$expect" $limit $extra
		continue
	fi
	case $expect in holds | violated:?*) ;; *)
		echo "tla: models.txt: bad expectation '$expect' for $cfg (holds, or violated:NAME)" >&2
		exit 2 ;;
	esac
	case $limit in '' | *[!0-9]*) limit=600 ;; esac
	limit=$((limit * scale))
	if [ -n "$TLA_ONLY" ]; then
		case $cfg in *"$TLA_ONLY"*) ;; *) continue ;; esac
	fi
	name=${cfg%.cfg}
	log="$work/$name.log"
	dl=-deadlock
	opts=
	budget=
	for o in $extra; do
		case $o in
		check-deadlock) dl= ;;
		max-states=*)
			budget=${o#max-states=}
			case $budget in '' | *[!0-9]*)
				echo "tla: models.txt: bad state budget '$o' for $cfg (max-states=N)" >&2
				exit 2 ;;
			esac ;;
		*) opts="$opts $o" ;;
		esac
	done
	echo "tla: $name: checking $spec with $cfg (expected: $expect, limit ${limit}s)"
	start=$(date +%s)
	# shellcheck disable=SC2086 # $dl and $opts are word lists
	run_tlc "$log" "$limit" -workers "$workers" $dl $opts -cleanup -metadir "$work/states-$name" \
		-config "$cfg" "$spec"
	rc=$?
	secs=$(($(date +%s) - start))
	ran=$((ran + 1))

	distinct=$(sed -n 's/.* \([0-9,]*\) distinct states found.*/\1/p' "$log" | tail -n 1 | tr -d ,)
	[ -n "$distinct" ] || distinct=-
	if [ -f "$log.timeout" ]; then
		result="timeout"
	elif grep -q '^Model checking completed. No error has been found' "$log"; then
		result="holds"
	elif what=$(violated_names "$log") && [ -n "$what" ]; then
		result="violated:$what"
	else
		result="error (TLC exit $rc)"
	fi
	verdict=FAIL
	if [ "$result" = "$expect" ]; then
		verdict=OK
	elif [ "${expect#violated:}" != "$expect" ] && [ "${result#violated:}" != "$result" ]; then
		# violated:A|B: either one (TLC stops at the first it finds)
		for want in $(echo "${expect#violated:}" | tr '|' ' '); do
			[ "${result#violated:}" = "$want" ] && verdict=OK
		done
	fi
	if [ "$verdict" = OK ] && [ -n "$budget" ] && [ "$distinct" != - ] && [ "$distinct" -gt "$budget" ]; then
		verdict="FAIL (over max-states=$budget)"
	fi
	[ "$verdict" = OK ] || failed=$((failed + 1))
	# shellcheck disable=SC2059
	line=$(printf "$fmt" "$name" "$distinct" "$result" "${secs}s" "$expect" "$verdict")
	table="$table
$line"
	if [ "$verdict" != OK ]; then
		echo "tla: $name: $verdict; the end of TLC's output:"
		tail -n 30 "$log" | sed 's/^/    /'
	fi
done 3<"$models"

echo
echo "$table"
if [ "$ran" -eq 0 ]; then
	echo "tla: no model ran (models.txt empty, or TLA_ONLY='$TLA_ONLY' matched none)" >&2
	exit 1
fi
if [ "$failed" -gt 0 ]; then
	echo "tla: $failed of $ran models did not meet their expectation"
	exit 1
fi
echo "tla: all $ran models met their expectation"
exit 0
