# tlc-verdict.sh - the common end of validate.sh, validate-echo.sh and
# validate-amortized.sh (sourced by them, not run): runs TLC on the trace
# converted into $work/tla and says whether the trace validated, and if
# not, which record failed and in which spec state.
#
# Expects the caller's variables: mode (jar or cmd) and java, as the
# callers find TLC; work, trace, records, tamper, here; spec, the trace
# module (BrachaTrace, EchoTrace, AmortizedTrace: $work/tla holds its .tla
# and .cfg); converter, the converter that describes a record
# (trace2tla.py, echo2tla.py, amortized2tla.py).  Exits: 0 validated (or,
# with tamper, rejected), 1 rejected (or, with tamper, accepted), 2 TLC
# failed.

run_tlc() { # LOG CFG SPEC
	if [ "$mode" = jar ]; then
		# shellcheck disable=SC2086 # TLC_JAVA_OPTS is a list of options
		(cd "$work/tla" && exec "$java" -XX:+UseParallelGC $TLC_JAVA_OPTS -cp "$TLA2TOOLS_JAR" tlc2.TLC \
			-deadlock -workers 1 -cleanup -metadir "$work/states-$2" -config "$2" "$3") >"$1" 2>&1
	else
		(cd "$work/tla" && exec tlc -deadlock -workers 1 -cleanup -metadir "$work/states-$2" \
			-config "$2" "$3") >"$1" 2>&1
	fi
}
start=$(date +%s)
run_tlc "$work/tlc.log" "$spec.cfg" "$spec.tla"
secs=$(($(date +%s) - start))
log=$work/tlc.log
distinct=$(sed -n 's/.* \([0-9,]*\) distinct states found.*/\1/p' "$log" | tail -n 1 | tr -d ,)
depth=$(sed -n 's/^The depth of the complete state graph search is \([0-9]*\).*/\1/p' "$log" | tail -n 1)
stats="TLC: ${distinct:-?} distinct states, depth ${depth:-?}, ${secs}s"

if grep -q '^Error: Invariant TraceNotMatched is violated' "$log"; then
	lines=$(grep -c . "$trace")
	echo "trace validated: $records events matched ($records steps of honest nodes in $lines trace lines; $stats)"
	if [ -n "$tamper" ]; then
		echo "validate: FAIL: the tampered trace ($tamper) was accepted"
		exit 1
	fi
	exit 0
fi
if ! grep -q '^Model checking completed. No error has been found' "$log" || [ -z "$depth" ]; then
	echo "validate: TLC failed; the end of its output:" >&2
	tail -n 30 "$log" | sed 's/^/    /' >&2
	exit 2
fi

# Not matched: every state TLC reached has l <= depth, and the records
# before TraceLog[depth] were matched; no behaviour matching them can take
# TraceLog[depth].
k=$depth
echo "trace rejected: event $k of $records did not match ($((k - 1)) matched; $stats)"
python3 "$here/$converter" describe "$work/tla/steps.json" "$k" | sed 's/^/  /'
# The state(s) the spec was in: a run stopping at l = k prints one behaviour.
{
	sed -n '/^INVARIANTS/q;p' "$work/tla/$spec.cfg"
	echo "INVARIANT StopBefore"
} >"$work/tla/Stop.cfg"
cat >"$work/tla/${spec}Stop.tla" <<EOF
---- MODULE ${spec}Stop ----
EXTENDS $spec
StopBefore == l < $k
====
EOF
run_tlc "$work/stop.log" Stop.cfg "${spec}Stop.tla"
if grep -q '^Error: Invariant StopBefore is violated' "$work/stop.log"; then
	if [ "$k" -gt 1 ]; then
		echo "  a spec state matching events 1..$((k - 1)) (one of possibly several):"
	else
		echo "  the initial state of the spec:"
	fi
	awk '/^State [0-9]+:/ || /violated by the initial state/ { buf = ""; keep = 1; next }
	     keep && /^$/ { last = buf; keep = 0 } keep { buf = buf $0 "\n" }
	     END { if (keep) last = buf; printf "%s", last }' "$work/stop.log" | sed 's/^/    /'
fi
if [ -n "$tamper" ]; then
	echo "validate: the tampered trace ($tamper) was rejected, as it must be"
	exit 0
fi
exit 1
