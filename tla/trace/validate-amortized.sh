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
top=$(cd "$here/../.." && pwd) || exit 2
java=${JAVA:-java}
scenario=$here/amortized-byzantine.json
seed=1
sender=
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
	--sender) [ $# -ge 2 ] || usage; sender=$2; shift ;;
	--sender=*) sender=${1#*=} ;;
	--tamper) tamper=digest ;;
	--tamper=*) tamper=${1#*=} ;;
	--keep) keep=1 ;;
	-h | --help) usage ;;
	-*) echo "validate: unknown option $1" >&2; usage ;;
	*) [ -z "$trace" ] || usage; trace=$1 ;;
	esac
	shift
done
case $tamper in '' | digest | early | ride | double | forge | resend) ;; *)
	echo "validate: unknown tamper mode '$tamper' (digest, early, ride, double, forge, resend)" >&2
	exit 2 ;;
esac
case $seed in '' | *[!0-9]*) echo "validate: bad seed '$seed'" >&2; exit 2 ;; esac
case $sender in *[!0-9]*) echo "validate: bad sender '$sender'" >&2; exit 2 ;; esac

if [ -n "$TLA2TOOLS_JAR" ]; then
	if [ ! -f "$TLA2TOOLS_JAR" ]; then
		echo "validate: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file" >&2
		exit 2
	fi
	if ! command -v "$java" >/dev/null 2>&1; then
		echo "validate: TLA2TOOLS_JAR is set but '$java' was not found" >&2
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
	echo "validate: python3 not found (amortized2tla.py needs it)" >&2
	exit 2
fi
if [ ! -f "$scenario" ] && [ -f "$here/$scenario" ]; then
	scenario=$here/$scenario
fi
if [ ! -f "$scenario" ]; then
	echo "validate: no scenario $scenario" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-atrace.XXXXXX") || exit 2
if [ "$keep" = 1 ]; then
	trap 'echo "validate: work directory kept: $work"' EXIT
else
	trap 'rm -rf "$work"' EXIT
fi
trap 'exit 130' INT TERM

# 1. The trace.
if [ -z "$trace" ]; then
	sim=${WEFT_SIM:-$top/build/bin/weft-sim}
	if [ ! -x "$sim" ]; then
		echo "validate: $sim not found: build it with 'make', or set WEFT_SIM, or give a trace file" >&2
		exit 2
	fi
	trace=$work/trace.ndjson
	if ! "$sim" -q --seed "$seed" --trace "$trace" --trace-data --out "$work/run.json" "$scenario"; then
		echo "validate: weft-sim failed on $scenario (seed $seed)" >&2
		exit 2
	fi
	echo "validate: $(basename "$scenario") seed $seed: $(wc -l <"$trace" | tr -d ' ') trace lines (with message data)"
elif [ ! -f "$trace" ]; then
	echo "validate: no trace file $trace" >&2
	exit 2
fi

# 2. Tampering.
if [ -n "$tamper" ]; then
	python3 "$here/amortized2tla.py" tamper --mode "$tamper" --scenario "$scenario" \
		${sender:+--sender "$sender"} "$trace" "$work/tampered.ndjson" ||
		exit 2
	trace=$work/tampered.ndjson
fi

# 3. NDJSON -> TLA+.
mkdir -p "$work/tla"
python3 "$here/amortized2tla.py" convert --scenario "$scenario" --trace "$trace" --out "$work/tla" \
	${sender:+--sender "$sender"} || exit 2
cp "$top/tla/AmortizedBRB.tla" "$here/AmortizedTrace.tla" "$work/tla/" || exit 2
records=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$work/tla/steps.json")

# 4. TLC, and the verdict.
spec=AmortizedTrace
converter=amortized2tla.py
. "$here/tlc-verdict.sh"
