#!/bin/sh
# validate-dag.sh - trace validation of the DAG consensus: check with TLC
# that a run of weft-sim or of weftd is a behaviour of
# tla/SparseBullshark.tla (tla/trace/README.md, "The DAG").
#
# usage: tla/trace/validate-dag.sh [options] [TRACE.ndjson]
#
#   --scenario FILE   the scenario (default: dag-sparse.json; a file name
#                     is also looked for next to this script, e.g.
#                     dag-withhold.json); gives n, f, the Byzantine nodes
#                     and the DAG parameters (mode, d, weak_max, gc_depth,
#                     unsafe), and is what runs when no TRACE is given; for
#                     a daemon trace {"n":4,"f":1,"protocol":"dag",
#                     "params":{...},"faults":[]} is enough
#   --seed N          the seed to run (default 1)
#   --tamper[=MODE]   tamper with the trace first and expect it to be
#                     rejected; MODE: votes (default; an anchor is committed
#                     with fewer than 2f+1 votes: voters' references to it
#                     dropped), dup (a node orders a vertex a second time),
#                     order (a node orders an anchor's history out of
#                     (round, author) order), weak (a vertex carries a weak
#                     reference to the round below it), walk (a node's
#                     walk back misses an anchor it must commit first;
#                     needs a run with a walk back, e.g. dag-withhold.json),
#                     fork (one node inserts another vertex for a slot than
#                     the others)
#   --keep            keep the work directory (trace, TLA+ files, TLC logs)
#
# TRACE is a weft-sim --trace file or a merged weftd --trace file
# (trace2tla.py merge).  Without TRACE it runs WEFT_SIM (default
# build/bin/weft-sim) on the scenario with --trace.
#
# Exit status: 0 the trace was validated (with --tamper: the tampered trace
# was rejected), or TLC was not found ("skipped"); 1 it was not (with
# --tamper: it was accepted); 2 usage or tool error, or a trace showing
# something the spec does not model (dag2tla.py says what).
#
# Environment: TLA2TOOLS_JAR (a tla2tools.jar, run with java; else a `tlc`
# command on PATH), JAVA (default java), TLC_JAVA_OPTS, WEFT_SIM.

here=$(cd "$(dirname "$0")" && pwd) || exit 2
top=$(cd "$here/../.." && pwd) || exit 2
java=${JAVA:-java}
scenario=$here/dag-sparse.json
seed=1
tamper=
keep=0
trace=

usage() {
	sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--scenario) [ $# -ge 2 ] || usage; scenario=$2; shift ;;
	--scenario=*) scenario=${1#*=} ;;
	--seed) [ $# -ge 2 ] || usage; seed=$2; shift ;;
	--seed=*) seed=${1#*=} ;;
	--tamper) tamper=votes ;;
	--tamper=*) tamper=${1#*=} ;;
	--keep) keep=1 ;;
	-h | --help) usage ;;
	-*) echo "validate-dag: unknown option $1" >&2; usage ;;
	*) [ -z "$trace" ] || usage; trace=$1 ;;
	esac
	shift
done
case $tamper in '' | votes | dup | order | weak | walk | fork) ;; *)
	echo "validate-dag: unknown tamper mode '$tamper' (votes, dup, order, weak, walk, fork)" >&2
	exit 2 ;;
esac
case $seed in '' | *[!0-9]*) echo "validate-dag: bad seed '$seed'" >&2; exit 2 ;; esac

if [ -n "$TLA2TOOLS_JAR" ]; then
	if [ ! -f "$TLA2TOOLS_JAR" ]; then
		echo "validate-dag: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file" >&2
		exit 2
	fi
	if ! command -v "$java" >/dev/null 2>&1; then
		echo "validate-dag: TLA2TOOLS_JAR is set but '$java' was not found" >&2
		exit 2
	fi
	mode=jar
elif command -v tlc >/dev/null 2>&1; then
	mode=cmd
else
	echo "skipped: TLC not found (set TLA2TOOLS_JAR to a tla2tools.jar)"
	exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
	echo "validate-dag: python3 not found (dag2tla.py needs it)" >&2
	exit 2
fi
# A bare name is also looked up next to this script (dag-withhold.json).
[ -f "$scenario" ] || [ ! -f "$here/$scenario" ] || scenario=$here/$scenario
if [ ! -f "$scenario" ]; then
	echo "validate-dag: no scenario $scenario" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-dagtrace.XXXXXX") || exit 2
if [ "$keep" = 1 ]; then
	trap 'echo "validate-dag: work directory kept: $work"' EXIT
else
	trap 'rm -rf "$work"' EXIT
fi
trap 'exit 130' INT TERM

# 1. The trace.
if [ -z "$trace" ]; then
	sim=${WEFT_SIM:-$top/build/bin/weft-sim}
	if [ ! -x "$sim" ]; then
		echo "validate-dag: $sim not found: build it with 'make', or set WEFT_SIM, or give a trace file" >&2
		exit 2
	fi
	trace=$work/trace.ndjson
	"$sim" -q --seed "$seed" --trace "$trace" --out "$work/run.json" "$scenario"
	rc=$?
	if [ "$rc" = 1 ] && [ -s "$trace" ]; then
		# A checker failed (weft-sim printed which): the run is still a run.
		echo "validate-dag: note: weft-sim reports a checker violation on $(basename "$scenario") seed $seed;" \
			"validating its trace all the same"
	elif [ "$rc" != 0 ]; then
		echo "validate-dag: weft-sim failed on $scenario (seed $seed)" >&2
		exit 2
	fi
	echo "validate-dag: $(basename "$scenario") seed $seed: $(wc -l <"$trace" | tr -d ' ') trace lines"
elif [ ! -f "$trace" ]; then
	echo "validate-dag: no trace file $trace" >&2
	exit 2
fi

# 2. Tampering.
if [ -n "$tamper" ]; then
	python3 "$here/dag2tla.py" tamper --mode "$tamper" --scenario "$scenario" "$trace" "$work/tampered.ndjson" ||
		exit 2
	trace=$work/tampered.ndjson
fi

# 3. NDJSON -> TLA+.  dag2tla.py itself rejects a trace in which two honest
# nodes logged different vertices for one slot, or a node inserted a vertex
# before its parents (exit 1).
mkdir -p "$work/tla"
python3 "$here/dag2tla.py" convert --scenario "$scenario" --trace "$trace" --out "$work/tla"
rc=$?
if [ "$rc" = 1 ]; then
	if [ -n "$tamper" ]; then
		echo "validate-dag: the tampered trace ($tamper) was rejected, as it must be"
		exit 0
	fi
	exit 1
fi
[ "$rc" = 0 ] || exit 2
cp "$top/tla/SparseBullshark.tla" "$here/DagTrace.tla" "$work/tla/" || exit 2
echo "ALIAS ShortAlias" >>"$work/tla/DagTrace.cfg"
counts=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
k = [x["record"]["k"] for x in s]
print(len(s), k.count("vertex") + k.count("genesis"), k.count("fill"), k.count("commit"))' "$work/tla/steps.json") || exit 2
set -- $counts
records=$1 nvert=$2 nfill=$3 ncommit=$4

# 4. TLC.
run_tlc() { # LOG CFG SPEC
	if [ "$mode" = jar ]; then
		# shellcheck disable=SC2086 # TLC_JAVA_OPTS is a list of options
		(cd "$work/tla" && exec "$java" -XX:+UseParallelGC -Xss64m $TLC_JAVA_OPTS -cp "$TLA2TOOLS_JAR" tlc2.TLC \
			-deadlock -workers 1 -cleanup -noGenerateSpecTE -metadir "$work/states-$2" -config "$2" "$3") >"$1" 2>&1
	else
		(cd "$work/tla" && exec tlc -deadlock -workers 1 -cleanup -noGenerateSpecTE -metadir "$work/states-$2" \
			-config "$2" "$3") >"$1" 2>&1
	fi
}
start=$(date +%s)
run_tlc "$work/tlc.log" DagTrace.cfg DagTrace.tla
secs=$(($(date +%s) - start))
log=$work/tlc.log
distinct=$(sed -n 's/.* \([0-9,]*\) distinct states found.*/\1/p' "$log" | tail -n 1 | tr -d ,)
depth=$(sed -n 's/^The depth of the complete state graph search is \([0-9]*\).*/\1/p' "$log" | tail -n 1)
stats="TLC: ${distinct:-?} distinct states, depth ${depth:-?}, ${secs}s"
what="$nvert vertices"
case $nfill in 0) ;; 1) what="$what + 1 filler" ;; *) what="$what + $nfill fillers" ;; esac
what="$what, $ncommit commits of honest nodes in $(grep -c . "$trace") trace lines"

if grep -q '^Error: Invariant TraceNotMatched is violated' "$log"; then
	echo "trace validated: $records events matched ($what; $stats)"
	if [ -n "$tamper" ]; then
		echo "validate-dag: FAIL: the tampered trace ($tamper) was accepted"
		exit 1
	fi
	exit 0
fi
broken=$(sed -n 's/^Error: Invariant Trace\(AnchorsConsistent\|LogsConsistent\|NoDoubleOrder\) is violated.*/\1/p' "$log")
if [ -n "$broken" ]; then
	# Events 1..l-1 were matched by a spec behaviour that breaks the
	# property: the run is a violation the spec predicts (an unsafe
	# parameter, or more than f faulty nodes), not a mismatch.
	at=$(sed -n 's/^ *\/\\ l = \([0-9]*\).*/\1/p' "$log" | tail -n 1)
	echo "validate-dag: the spec's $broken fails along the trace: events 1..$((${at:-1} - 1)) of $records" \
		"matched, and the behaviour they make breaks it ($stats)"
	grep -o '"unsafe": *"[a-z_0-9]*"' "$scenario" | sed 's/^/validate-dag: the scenario runs /'
	exit 2
fi
if ! grep -q '^Model checking completed. No error has been found' "$log" || [ -z "$depth" ]; then
	echo "validate-dag: TLC failed; the end of its output:" >&2
	tail -n 30 "$log" | sed 's/^/    /' >&2
	exit 2
fi

# Not matched: every state TLC reached has l <= depth, and the records
# before TraceLog[depth] were matched; no behaviour matching them can take
# TraceLog[depth].
k=$depth
echo "trace rejected: event $k of $records did not match ($((k - 1)) matched; $stats)"
python3 "$here/dag2tla.py" describe "$work/tla/steps.json" "$k" | sed 's/^/  /'
# What the spec says about that record, in the state before it: a run
# stopping at l = k prints the behaviour, its states shown by DiagAlias.
{
	sed -n '/^INVARIANTS/q;p' "$work/tla/DagTrace.cfg"
	echo "INVARIANT StopBefore"
	echo "ALIAS DiagAlias"
} >"$work/tla/Stop.cfg"
cat >"$work/tla/DagTraceStop.tla" <<EOF
---- MODULE DagTraceStop ----
EXTENDS DagTrace
StopBefore == l < $k
====
EOF
run_tlc "$work/stop.log" Stop.cfg DagTraceStop.tla
if grep -q '^Error: Invariant StopBefore is violated' "$work/stop.log"; then
	echo "  what the spec says about it, after events 1..$((k - 1)):"
	awk '/^State [0-9]+:/ || /violated by the initial state/ { buf = ""; keep = 1; next }
	     keep && /^$/ { last = buf; keep = 0 } keep { buf = buf $0 "\n" }
	     END { if (keep) last = buf; printf "%s", last }' "$work/stop.log" | sed 's/^/    /'
fi
if [ -n "$tamper" ]; then
	echo "validate-dag: the tampered trace ($tamper) was rejected, as it must be"
	exit 0
fi
exit 1
