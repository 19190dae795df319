#!/bin/sh
# validate-echo.sh - trace validation of the signed echo broadcast: check
# with TLC that a run of the C code is a behaviour of tla/EchoBRB.tla
# (tla/trace/README.md, "Echo broadcast").
#
# usage: tla/trace/validate-echo.sh [options] [TRACE.ndjson]
#
#   --scenario FILE   the scenario (default: echo-byzantine.json next to
#                     this script); gives n, f and the Byzantine nodes, and
#                     is what runs when no TRACE is given
#   --seed N          the seed to run (default 1)
#   --instance S:Q    the instance to check (default: the first broadcast)
#   --tamper[=MODE]   tamper with the trace first and expect TLC to reject
#                     it; MODE: digest (default; an honest node delivers a
#                     digest no certificate names), early (an honest node
#                     delivers on the SEND, before the FINAL), sign (an
#                     accepted certificate lists honest signatures over
#                     another digest than the payload they took), report (an
#                     honest node's catch-up report carries another payload)
#   --keep            keep the work directory (trace, TLA+ files, TLC log)
#
# Without TRACE it runs WEFT_SIM (default build/bin/weft-sim) on the
# scenario with --trace --trace-data.  The trace must carry the message
# bytes (weft-sim --trace-data, weftd --trace): an ECHO's signature and a
# FINAL's certificate are read from them.
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
scenario=$here/echo-byzantine.json
tampers="digest early sign report"
select=instance
converter=echo2tla.py
model=EchoBRB
spec=EchoTrace
workname=weft-etrace

parse_options "$@"
prepare
get_trace
convert_trace
tlc_verdict
