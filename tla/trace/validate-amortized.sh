#!/bin/sh
# validate-amortized.sh - trace validation of the amortized multi-shot BRB:
# check with TLC that a run of the C code (protocols/brb/amortized.c) is a
# behaviour of tla/AmortizedBRB.tla, the whole stream of one sender at once
# (tla/trace/README.md, "Amortized BRB").
#
# usage: tla/trace/validate-amortized.sh [options] [TRACE.ndjson]
#
#   --scenario FILE   the scenario (default: amortized-byzantine.json next
#                     to this script; a bare name is also looked for there);
#                     gives n, f, the Byzantine nodes and the optimistic
#                     parameter, and is what runs when no TRACE is given
#   --seed N          the seed to run (default 1)
#   --sender N        the stream to check (default: the first request's node)
#   --tamper[=MODE]   tamper with the trace first and expect TLC to reject
#                     it; MODE: digest (default; an honest node delivers
#                     another digest), early (an honest node delivers in the
#                     step of its first VOTE for the instance, without n
#                     ECHOs or 2f+1 READYs), ride (an honest tick VOTE(k)
#                     carries a READY(k-1) its node never decided), double
#                     (an honest node delivers an instance a second time),
#                     forge (an honest VOTE arrives with another echo than
#                     its voter's), resend (an honest node's resend step
#                     also sends a standalone READY for an instance it has
#                     not readied)
#   --keep            keep the work directory (trace, TLA+ files, TLC log)
#
# Without TRACE it runs WEFT_SIM (default build/bin/weft-sim) on the
# scenario with --trace --trace-data.  The trace must carry the message
# bytes (weft-sim --trace-data, weftd --trace): a VOTE's instances and
# digests are read from them.
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
scenario=$here/amortized-byzantine.json
tampers="digest early ride double forge resend"
select=sender
converter=amortized2tla.py
model=AmortizedBRB
spec=AmortizedTrace
workname=weft-atrace

parse_options "$@"
prepare
get_trace
convert_trace
tlc_verdict
