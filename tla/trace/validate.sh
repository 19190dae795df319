#!/bin/sh
# validate.sh - trace validation of Bracha BRB: check with TLC that a
# weft-sim trace is a behaviour of tla/BrachaBRB.tla (tla/trace/README.md).
#
# usage: tla/trace/validate.sh [options] [TRACE.ndjson]
#
#   --scenario FILE   the scenario (default: bracha-byzantine.json; a file
#                     name alone is looked up next to this script too);
#                     gives n, f and the Byzantine nodes, and
#                     is what runs when no TRACE is given
#   --seed N          the seed to run (default 1)
#   --instance S:Q    the instance to check (default: the first broadcast)
#   --tamper[=MODE]   tamper with the trace first and expect TLC to reject
#                     it; MODE: digest (default; one honest delivery names
#                     another digest), early (an honest node delivers right
#                     after its first READY), forge (an honest node's ECHO
#                     arrives with another payload; needs message data),
#                     revote (a restarted honest node echoes the other
#                     payload of an equivocating sender, against its
#                     persisted vote; needs a crash_recover scenario such
#                     as bracha-restart.json)
#   --keep            keep the work directory (trace, TLA+ files, TLC log)
#
# Without TRACE it runs WEFT_SIM (default build/bin/weft-sim) on the
# scenario with --trace --trace-data.  A trace without message data (weft-sim
# without --trace-data) is checked partially (message values left open), and
# the output says so.
#
# Exit status: 0 the trace was validated (with --tamper: the tampered trace
# was rejected), or TLC was not found ("skipped"); 1 it was not (with
# --tamper: it was accepted); 2 usage or tool error, or a trace showing
# something the spec does not model.
#
# Environment: TLA2TOOLS_JAR (a tla2tools.jar, run with java; else a `tlc`
# command on PATH), JAVA (default java), TLC_JAVA_OPTS, WEFT_SIM.

here=$(cd "$(dirname "$0")" && pwd) || exit 2
. "$here/validate-common.sh"
scenario=$here/bracha-byzantine.json
tampers="digest early forge revote"
select=instance
converter=trace2tla.py
model=BrachaBRB
spec=BrachaTrace
workname=weft-trace

parse_options "$@"
prepare
get_trace
convert_trace
if ! grep -q 'Mode: exact' "$work/tla/BrachaTraceLog.tla"; then
	echo "validate: note: the trace has no message bytes (weft-sim without --trace-data):" \
		"the values messages carry are left open, a weaker check"
fi
tlc_verdict
