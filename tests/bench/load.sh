#!/bin/sh
# load.sh - load a running committee (issue 18, item 5): open-loop clients
# submitting SIZE-byte transactions at RATE tx/s in total through every
# node's RPC socket for DURATION seconds (after WARMUP), with the client of
# the DAG benchmark (tests/bench/dag_bench.c).  It reports consensus TPS
# (committed_txs per second), end-to-end TPS (transactions that came back
# committed), latency p50 / p99 and the CPU of each weftd, as one JSON line
# and a short summary.  Nothing is written to docs/.  Point it at any
# committee's data directories, e.g. the one of `make testnet`:
#
#   sh tests/bench/load.sh testnet               (rate 1000, 512 B, 10 s)
#   RATE=20000 SIZE=256 DURATION=30 sh tests/bench/load.sh /dev/shm/tn
set -eu
cd "$(dirname "$0")/../.."
DIR=${1:-testnet}
RATE=${RATE:-1000}
SIZE=${SIZE:-512}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
DRAIN=${DRAIN:-10}
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
BIN=build/bench/dag_bench
socks=""
for d in "$DIR"/node*; do
	[ -S "$d/rpc.sock" ] && socks="$socks --sock $d/rpc.sock"
done
[ -n "$socks" ] || { echo "load: no node*/rpc.sock under $DIR (is the committee running?)" >&2; exit 1; }
make build/libweft.a >&2
mkdir -p build/bench
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/dag_bench.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o "$BIN"
# shellcheck disable=SC2086 # socks is a list of arguments
out=$("$BIN" $socks --rate "$RATE" --size "$SIZE" --duration "$DURATION" --warmup "$WARMUP" --drain "$DRAIN")
echo "$out"
. tests/bench/lib.sh
echo "load: offered $RATE tx/s of $SIZE B for $DURATION s: consensus $(bench_jget "$out" consensus_tps) tx/s," \
	"end to end $(bench_jget "$out" e2e_tps) tx/s, p50 $(bench_jget "$out" p50_ms) ms, p99 $(bench_jget "$out" p99_ms) ms" >&2
