#!/bin/sh
# validate-coded.sh - trace validation of the erasure-coded reliable
# broadcast: check with TLC that a run of the C code is a behaviour of
# tla/CodedBRB.tla (tla/trace/README.md, "Erasure-coded broadcast").
#
# usage: tla/trace/validate-coded.sh [options] [TRACE.ndjson]
#
#   --scenario FILE   the scenario (a path, or a name next to this script;
#                     default coded-equivocate.json); gives n, f and the
#                     Byzantine nodes, and is what runs when no TRACE is
#                     given
#   --seed N          the seed to run (default 1)
#   --instance S:Q    the instance to check (default: the first broadcast)
#   --tamper[=MODE]   tamper with the trace first and expect TLC to reject
#                     it; MODE: digest (default; an honest node delivers
#                     another outcome than its root gives: invalid for a
#                     message, a message for invalid), early (an honest node
#                     delivers on its first vote of the instance), echo (an
#                     honest node's ECHO names a root it never took), ready
#                     (an honest node's READY names a root nobody echoed)
#   --keep            keep the work directory (trace, TLA+ files, TLC log)
#
# Without TRACE it runs WEFT_SIM (default build/bin/weft-sim) on the
# scenario with --trace --trace-data.  The trace must carry the message
# bytes (weft-sim --trace-data, weftd --trace): the roots, leaves and
# outcomes are read from them (coded2tla.py decodes each root's leaves and
# re-encodes them, as deliver_root does, to name the root).
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
scenario=$here/coded-equivocate.json
tampers="digest early echo ready"
select=instance
converter=coded2tla.py
model=CodedBRB
spec=CodedTrace
workname=weft-ctrace

parse_options "$@"
prepare
get_trace
convert_trace
tlc_verdict
