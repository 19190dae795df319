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
top=$(cd "$here/../.." && pwd) || exit 2
java=${JAVA:-java}
scenario=$here/coded-equivocate.json
seed=1
instance=
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
	--instance) [ $# -ge 2 ] || usage; instance=$2; shift ;;
	--instance=*) instance=${1#*=} ;;
	--tamper) tamper=digest ;;
	--tamper=*) tamper=${1#*=} ;;
	--keep) keep=1 ;;
	-h | --help) usage ;;
	-*) echo "validate: unknown option $1" >&2; usage ;;
	*) [ -z "$trace" ] || usage; trace=$1 ;;
	esac
	shift
done
case $tamper in '' | digest | early | echo | ready) ;; *)
	echo "validate: unknown tamper mode '$tamper' (digest, early, echo, ready)" >&2
	exit 2 ;;
esac
case $seed in '' | *[!0-9]*) echo "validate: bad seed '$seed'" >&2; exit 2 ;; esac

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
	echo "validate: python3 not found (coded2tla.py needs it)" >&2
	exit 2
fi
if [ ! -f "$scenario" ] && [ -f "$here/$scenario" ]; then
	scenario=$here/$scenario
fi
if [ ! -f "$scenario" ]; then
	echo "validate: no scenario $scenario" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-ctrace.XXXXXX") || exit 2
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
	python3 "$here/coded2tla.py" tamper --mode "$tamper" --scenario "$scenario" "$trace" "$work/tampered.ndjson" ||
		exit 2
	trace=$work/tampered.ndjson
fi

# 3. NDJSON -> TLA+.
mkdir -p "$work/tla"
python3 "$here/coded2tla.py" convert --scenario "$scenario" --trace "$trace" --out "$work/tla" \
	${instance:+--instance "$instance"} || exit 2
cp "$top/tla/CodedBRB.tla" "$here/CodedTrace.tla" "$work/tla/" || exit 2
records=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$work/tla/steps.json")

# 4. TLC, and the verdict.
spec=CodedTrace
converter=coded2tla.py
. "$here/tlc-verdict.sh"
