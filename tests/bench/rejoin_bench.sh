#!/bin/sh
# rejoin_bench.sh - how long a node whose store was wiped takes to rejoin by
# state sync (docs/protocols/sparse-dag.md, "State sync"), against the
# committed state's size: for each count in COUNTS (default 10000 100000
# 1000000) a fresh committee of 4 weftd on 127.0.0.1 (databases under
# DATA, default /tmp) is loaded with that many 64-byte transactions by
# tests/bench/dag_bench.c at RATE tx/s (default 20000), node 3 is stopped,
# its db/ deleted and started again, and the time until it reports the
# committee's committed_txs with the same order_hash is measured, with the
# snapshot's size.  Writes its section of docs/performance.md (WRITE=0:
# prints it).  Never part of make check.
#
# Usage: sh tests/bench/rejoin_bench.sh
#   COUNTS="10000 100000" RATE=30000 sh tests/bench/rejoin_bench.sh
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh

NODES=4
COUNTS=${COUNTS-"10000 100000 1000000"}
RATE=${RATE:-20000}
DATA=${DATA:-/tmp}
PARAMS=${PARAMS-'"gc_depth": 50, "brb_window": 128'}
BASE_PORT=${BASE_PORT:-$((20000 + $$ % 20000))}
WRITE=${WRITE:-1}
WIPED=3
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
BIN=build/bench/dag_bench

make build/bin/weftd build/bin/weft-cli build/libweft.a >&2
mkdir -p build/bench
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/dag_bench.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o "$BIN"

tmp=$(mktemp -d /tmp/rejoin.XXXXXX)
committee=""
pids=""
trap 'bench_committee_stop; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# info I KEY: a top-level value of node I's dag.info.
info() {
	build/bin/weft-cli --datadir "$committee/node$1" --timeout 5 dag.info 2> /dev/null | tr -d ' \n' |
		sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" | head -n 1
}

now_ms() { date +%s%3N; }

: > "$tmp/rows"
for count in $COUNTS; do
	bench_committee_start "$DATA"
	rate=$((count < RATE ? count : RATE))
	seconds=$(((count + rate - 1) / rate))
	# shellcheck disable=SC2046 # the socket arguments are a list
	"$BIN" $(for d in "$committee"/node*; do printf -- '--sock %s/rpc.sock ' "$d"; done) --rate "$rate" --size 64 \
		--duration "$seconds" --warmup 0 --drain 20 --subscribe one > "$tmp/load" 2> "$tmp/load.err" || true
	committed=$(info 0 committed_txs)
	victim=$(echo $pids | cut -d' ' -f$((WIPED + 1)))
	kill "$victim"
	while kill -0 "$victim" 2> /dev/null; do sleep 0.1; done
	rm -rf "$committee/node$WIPED/db"
	t0=$(now_ms)
	build/bin/weftd --datadir "$committee/node$WIPED" > "$committee/node$WIPED/weftd.stderr" 2>&1 &
	pids=$(echo $pids | sed "s/\b$victim\b/$!/")
	rejoined=""
	while [ $(($(now_ms) - t0)) -lt 600000 ]; do
		h=$(info "$WIPED" committed_txs)
		if [ -n "$h" ] && [ "$h" -ge "$committed" ] && [ "$h" = "$(info 0 committed_txs)" ] &&
			[ "$(info "$WIPED" order_hash)" = "$(info 0 order_hash)" ]; then
			rejoined=$(($(now_ms) - t0))
			break
		fi
		sleep 0.2
	done
	snap=$(build/bin/weft-cli --datadir "$committee/node$WIPED" dag.info 2> /dev/null | tr -d ' \n' |
		sed -n 's/.*"snapshot":{\([^}]*\)}.*/\1/p')
	installs=$(printf '%s' "$snap" | sed -n 's/.*"installs":\([0-9]*\).*/\1/p')
	size=$(du -sk "$committee/node0/db" | cut -f1)
	echo "count=$count committed=$committed rejoin_ms=${rejoined:-timeout} installs=$installs" >&2
	printf '| %s | %s | %s | %s | %s |\n' "$count" "$committed" \
		"$([ -n "$rejoined" ] && bench_num '%.1f s' "$rejoined / 1000" || echo 'not within 600 s')" \
		"${installs:-?}" "$(bench_num '%.0f MiB' "$size / 1024")" >> "$tmp/rows"
	bench_committee_stop
done

{
	echo "## Rejoin of a wiped node (state sync)"
	echo
	echo "Machine: $(bench_machine). Command: \`COUNTS=\"$COUNTS\" RATE=$RATE sh tests/bench/rejoin_bench.sh\`" \
		"($(date -u +%Y-%m-%d); genesis params $PARAMS)."
	echo "A committee of 4 weftd is loaded with the transactions, node $WIPED is stopped, its db/ deleted and"
	echo "started again; the time is from its start to reporting the committee's committed_txs and order_hash."
	echo
	echo "| target | committed | rejoin time | snapshots installed | node 0 store |"
	echo "|---|---|---|---|---|"
	cat "$tmp/rows"
} > "$tmp/section"
if [ "$WRITE" = 1 ]; then bench_write_section rejoin "$tmp/section"; else cat "$tmp/section"; fi
