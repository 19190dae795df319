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
top=$(cd "$here/../.." && pwd) || exit 2
java=${JAVA:-java}
scenario=$here/bracha-byzantine.json
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
case $tamper in '' | digest | early | forge | revote) ;; *)
	echo "validate: unknown tamper mode '$tamper' (digest, early, forge, revote)" >&2
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
	echo "validate: python3 not found (trace2tla.py needs it)" >&2
	exit 2
fi
[ -f "$scenario" ] || [ ! -f "$here/$scenario" ] || scenario=$here/$scenario
if [ ! -f "$scenario" ]; then
	echo "validate: no scenario $scenario" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-trace.XXXXXX") || exit 2
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
	python3 "$here/trace2tla.py" tamper --mode "$tamper" --scenario "$scenario" "$trace" "$work/tampered.ndjson" ||
		exit 2
	trace=$work/tampered.ndjson
fi

# 3. NDJSON -> TLA+.
mkdir -p "$work/tla"
python3 "$here/trace2tla.py" convert --scenario "$scenario" --trace "$trace" --out "$work/tla" \
	${instance:+--instance "$instance"} || exit 2
cp "$top/tla/BrachaBRB.tla" "$here/BrachaTrace.tla" "$work/tla/" || exit 2
if ! grep -q 'Mode: exact' "$work/tla/BrachaTraceLog.tla"; then
	echo "validate: note: the trace has no message bytes (weft-sim without --trace-data):" \
		"the values messages carry are left open, a weaker check"
fi
records=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$work/tla/steps.json")

# 4. TLC, and the verdict.
spec=BrachaTrace
converter=trace2tla.py
. "$here/tlc-verdict.sh"
