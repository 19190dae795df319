#!/bin/sh
# sim_speed.sh - the simulator's speed benchmark (issue 3): n = 1000 nodes,
# each multicasting a 1 KiB message every 200 ms of virtual time for 5 s
# (25 million deliveries), with the cheap signature stand-in and the memory
# kv; once without checkers and once with the four broadcast checkers, to
# show what recording and judging the history costs.  Writes its section of
# docs/performance.md.  Usage: sh tests/bench/sim_speed.sh  (after make)
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
SIM=${BUILD:-build}/bin/weft-sim
SCEN=tests/bench/sim-speed.json
out=$(mktemp)
with=$(mktemp)
sed 's/"kv": "memory",/"kv": "memory", "checkers": ["validity", "agreement", "integrity", "totality"],/' "$SCEN" > "$with"

run() { # $1 scenario -> "events wall_s rss_kib"
	/usr/bin/time -f '%e %M' -o "$out.time" "$SIM" --out "$out.json" "$1" 2> "$out.err"
	events=$(sed -n 's/.* \([0-9]*\) events in.*/\1/p' "$out.err")
	echo "$events $(cat "$out.time")"
}
set -- $(run "$SCEN")
e1=$1 w1=$2 m1=$3
lat=$(sed 's/.*"latency_ms":{\([^}]*\)}.*/\1/' "$out.json")
set -- $(run "$with")
e2=$1 w2=$2 m2=$3
verdicts=$(sed 's/.*"checkers":{\([^}]*\)}.*/\1/' "$out.json")

body=$(mktemp)
cat > "$body" <<MD
## Simulator speed (issue 3)

n = 1000 nodes, each multicasting 1 KiB every 200 ms of virtual time for 5 s:
25,000 broadcasts and 25 million deliveries; latency normal 50 +- 10 ms;
cheap signature stand-in, in-memory kv, one core.

| run | events | wall time | events/s | peak RSS |
|---|---|---|---|---|
| no checkers | $e1 | ${w1} s | $(awk "BEGIN {printf \"%.2f M\", $e1 / $w1 / 1e6}") | $(awk "BEGIN {printf \"%.0f MiB\", $m1 / 1024}") |
| 4 broadcast checkers | $e2 | ${w2} s | $(awk "BEGIN {printf \"%.2f M\", $e2 / $w2 / 1e6}") | $(awk "BEGIN {printf \"%.0f MiB\", $m2 / 1024}") |

Ratio with/without checkers: $(awk "BEGIN {printf \"%.2f\", $w2 / $w1}")x the time.
Delivery latency (ms): $lat. Verdicts: $verdicts.
Target: under 60 s and 4 GiB.

Machine: $(bench_machine).
Command: \`sh tests/bench/sim_speed.sh\` ($(date -u +%Y-%m-%d)).

MD
bench_write_section sim-speed "$body"
rm -f "$out" "$out.json" "$out.err" "$out.time" "$with" "$body"
echo "sim_speed: results written to docs/performance.md"
