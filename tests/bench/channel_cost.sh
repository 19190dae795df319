#!/bin/sh
# channel_cost.sh - builds tests/bench/channel_cost.c and writes its table
# (the ledger bytes and transactions of a channel's open and closes, by
# member count) into docs/performance.md (WRITE=0: print it only).  Sizes
# from the real encoders, not timings.
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
WRITE=${WRITE:-1}
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
BIN=build/bench/channel_cost
make build/libweft.a >&2
mkdir -p build/bench
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/channel_cost.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o "$BIN"
body=$(mktemp)
trap 'rm -f "$body"' EXIT
{
	echo "## Payment channels: what a channel costs on the ledger (issue 16)"
	echo
	echo "Encoded bytes of the settlement transactions (docs/ledger.md, Channels) with real BIP340"
	echo "signatures, one per member on every all-signed transaction; deposits of 7-digit amounts,"
	echo "a root version of 1,000,000.  The unilateral close is the worst honest case: a stale root"
	echo "committed, one dispute with the newest root, the settlement.  Per member: the open and"
	echo "the close together, divided by the member count.  Sizes are exact, not timings."
	echo
	"$BIN"
	echo
	echo "Command: \`sh tests/bench/channel_cost.sh\` ($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD))."
} > "$body"
if [ "$WRITE" = 1 ]; then
	bench_write_section channel-cost "$body"
	echo "channel_cost: docs/performance.md updated" >&2
else
	cat "$body"
fi
