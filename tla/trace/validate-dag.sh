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
. "$here/validate-common.sh"
prog=validate-dag
scenario=$here/dag-sparse.json
tampers="votes dup order weak walk fork"
select=
converter=dag2tla.py
model=SparseBullshark
spec=DagTrace
workname=weft-dagtrace
sim_data=                   # dag2tla.py reads the protocol's log events
sim_violations=1            # a run of an unsafe parameter is still a run
jvm_opts=-Xss64m            # the spec's recursions on long traces
tlc_opts=-noGenerateSpecTE
stop_alias=DiagAlias        # what the spec says about the rejected record

property_violated() {
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
}

parse_options "$@"
prepare
get_trace

# NDJSON -> TLA+.  dag2tla.py itself rejects a trace in which two honest
# nodes logged different vertices for one slot, or a node inserted a vertex
# before its parents (exit 1).
mkdir -p "$work/tla"
python3 "$here/$converter" convert --scenario "$scenario" --trace "$trace" --out "$work/tla"
rc=$?
if [ "$rc" = 1 ]; then
	if [ -n "$tamper" ]; then
		echo "validate-dag: the tampered trace ($tamper) was rejected, as it must be"
		exit 0
	fi
	exit 1
fi
[ "$rc" = 0 ] || exit 2
cp "$top/tla/$model.tla" "$here/$spec.tla" "$work/tla/" || exit 2
echo "ALIAS ShortAlias" >>"$work/tla/DagTrace.cfg"
counts=$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["steps"]
k = [x["record"]["k"] for x in s]
print(len(s), k.count("vertex") + k.count("genesis"), k.count("fill"), k.count("commit"))' "$work/tla/steps.json") || exit 2
set -- $counts
records=$1 nvert=$2 nfill=$3 ncommit=$4
what="$nvert vertices"
case $nfill in 0) ;; 1) what="$what + 1 filler" ;; *) what="$what + $nfill fillers" ;; esac
what="$what, $ncommit commits of honest nodes in $(grep -c . "$trace") trace lines"

tlc_verdict
