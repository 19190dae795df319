#!/bin/sh
# slow_node_inclusion.sh - how much of a slow honest node's traffic the DAG
# orders (issue 13): weft-sim, n = 7 (f = 2), links 2 to 15 ms, timeout_ms
# 60, node 6's sends delayed 0.5x, 1x and 5x the timeout (30, 60, 300 ms),
# every node submitting 200 transactions; for each delay, both modes and
# weak links on (weak_max = n, the default) and off (weak_max = 0, as
# before they existed), SEEDS seeds (default 10).  The figure is weft-sim's
# per-origin inclusion fraction (docs/sim.md): the share of an origin's
# transactions (made before the last 20% of the run) that every correct
# node ordered, min over the correct nodes; the table gives the slow
# node's (min and mean over seeds) and the worst other origin's.  Writes
# its section of docs/performance.md (WRITE=0: prints it).  Virtual time:
# the figures do not depend on the machine.
#
# Usage: sh tests/bench/slow_node_inclusion.sh
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh

SEEDS=${SEEDS:-10}
WRITE=${WRITE:-1}
make build/bin/weft-sim >&2
tmp=$(mktemp -d /tmp/slowinc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# scenario MODE DELAY_MS WEAK_MAX
scenario() {
	cat <<-JSON
	{"name": "slow-node", "n": 7, "protocol": "dag",
	 "params": {"mode": "$1", "d": 2, "timeout_ms": 60, "sync_ms": 100, "weak_max": $3},
	 "network": {"latency": {"dist": "uniform", "min_ms": 2, "max_ms": 15}},
	 "faults": [{"kind": "delay", "nodes": [6], "ms": $2}],
	 "workload": [{"nodes": "all", "every_ms": 20, "count": 200, "size": 32}],
	 "duration_ms": 8000, "seeds": {"from": 1, "to": $SEEDS}, "kv": "memory", "signatures": "fast",
	 "checkers": ["inclusion"]}
	JSON
}

: > "$tmp/rows"
for delay in 30 60 300; do
	for mode in sparse dense; do
		row="| $delay ms ($(bench_num '%.1f' "$delay / 60")x) | $mode"
		for weak in 7 0; do
			scenario "$mode" "$delay" "$weak" > "$tmp/s.json"
			build/bin/weft-sim --quiet "$tmp/s.json" 2> /dev/null |
				sed -n 's/.*"by_origin":\[\([^]]*\)\].*/\1/p' | tr ',' ' ' > "$tmp/fr" || true
			cell=$(awk '{ s = $7; o = 1; for (i = 1; i <= 6; i++) if ($i < o) o = $i;
				if (NR == 1 || s < smin) smin = s; ssum += s; if (NR == 1 || o < omin) omin = o }
				END { printf "%.3f (mean %.3f) | %.3f", smin, ssum / NR, omin }' "$tmp/fr")
			row="$row | $cell"
		done
		echo "$row |" >> "$tmp/rows"
	done
done

{
	echo "## Inclusion of a slow honest node (weak links)"
	echo
	echo "weft-sim (virtual time; machine: $(bench_machine)). Command: \`SEEDS=$SEEDS sh tests/bench/slow_node_inclusion.sh\`" \
		"($(date -u +%Y-%m-%d)). n = 7, links 2-15 ms, timeout 60 ms, node 6's sends delayed; per-origin inclusion"
	echo "fraction (min over correct nodes; transactions of the first 80% of the run): node 6's min and mean over"
	echo "$SEEDS seeds, and the worst other origin's min."
	echo
	echo "| node 6 slower by | mode | node 6, weak links | others, weak links | node 6, no weak links | others, no weak links |"
	echo "|---|---|---|---|---|---|"
	cat "$tmp/rows"
} > "$tmp/section"
if [ "$WRITE" = 1 ]; then bench_write_section slow-node "$tmp/section"; else cat "$tmp/section"; fi
