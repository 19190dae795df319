#!/bin/sh
# store_chain.sh - the chain limit of the encrypted chunk pipeline on one
# core (issue 15): FastCDC, XChaCha20-Poly1305 and the BLAKE2b Merkle tree,
# each alone over the same in-memory random data with 1 MiB chunks, the
# limit 1 / (1/CDC + 1/AEAD + 1/Merkle) they imply, and the three run in
# sequence chunk by chunk as the put path will.  store.put's target is
# >= 70% of this limit, measured on the same machine.  Each measurement is
# taken RUNS times (default 3) and the median reported; before each run the
# script waits (up to QUIET_WAIT seconds, default 20) for the machine to be
# idle, and the driver pins itself to one CPU (CPU, default the last one).
# Writes its section of docs/performance.md (WRITE=0: prints it instead).
# Never part of make check: a timing is not an assertion.
#
# Usage: sh tests/bench/store_chain.sh     (builds what it needs)
#   RUNS=5 MIB=512 PASSES=3 CPU=0 sh tests/bench/store_chain.sh
#
# The C driver (tests/bench/store_chain.c) is built here rather than by the
# Makefile, with the Makefile's flags, against build/libweft.a.
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh

RUNS=${RUNS:-3}
MIB=${MIB:-256}
PASSES=${PASSES:-2}
CPU=${CPU:-$(($(nproc) - 1))}
QUIET_WAIT=${QUIET_WAIT:-20}
WRITE=${WRITE:-1}
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
BIN=build/bench/store_chain

make build/libweft.a >&2
mkdir -p build/bench
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -O2 -g -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/store_chain.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o "$BIN"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

i=0
while [ "$i" -lt "$RUNS" ]; do
	bench_quiet store_chain
	if ! "$BIN" --mib "$MIB" --passes "$PASSES" --cpu "$CPU" > "$tmp/last" 2> "$tmp/last.err"; then
		echo "store_chain: '$BIN' failed:" >&2
		cat "$tmp/last" "$tmp/last.err" >&2
		exit 1
	fi
	cat "$tmp/last" >> "$tmp/all"
	cat "$tmp/last" >&2
	i=$((i + 1))
done

# median MEASURE KEY: the line of that measure with the median value of KEY
# (for an even count, the lower middle).
median() {
	grep "\"measure\":\"$1\"" "$tmp/all" | while IFS= read -r line; do
		printf '%s\t%s\n' "$(bench_jget "$line" "$2")" "$line"
	done | sort -g | awk -F '\t' '{ l[NR] = $2 } END { print l[int((NR + 1) / 2)] }'
}
# range MEASURE KEY: "min-max" of KEY over the runs, in whole units.
range() {
	grep "\"measure\":\"$1\"" "$tmp/all" | while IFS= read -r line; do bench_jget "$line" "$2"; done |
		sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'
}
val() { bench_jget "$(median "$1" "$2")" "$2"; }

# row LABEL MEASURE REFERENCE: one table row.
row() {
	printf '| %s | %s MB/s (%s) | %s MB/s | %s |\n' "$1" "$(bench_num %.0f "$(val "$2" mb_per_s)")" \
		"$(range "$2" mb_per_s)" "$(bench_num %.0f "$(val "$2" mb_per_cpu_s)")" "$3"
}

chain=$(val chain_limit mb_per_s)
chain_c=$(val chain_limit mb_per_cpu_s)
pipe=$(val pipeline mb_per_s)
pipe_c=$(val pipeline mb_per_cpu_s)
mean_chunk=$(bench_jget "$(median cdc mb_per_s)" mean_chunk)
others_max=$(while IFS= read -r line; do bench_jget "$line" others; done < "$tmp/all" | grep -v '^$' | sort -g | tail -1)

others_note=""
if awk "BEGIN { exit !(${others_max:-0} > 0.25) }"; then
	others_note="
**The machine was not idle**: other processes kept up to $others_max cores busy during some
runs (\"others\" in the JSON lines; the script waited up to ${QUIET_WAIT} s for a quiet machine before
each run), so the wall-clock column may understate what the code can do here; the per-CPU
column is the figure to compare.
"
fi

body="$tmp/body.md"
cat > "$body" <<MD
## Encrypted storage: the chain limit of one core (issue 15)

$MIB MiB of random data in memory, one thread pinned to CPU $CPU, passes per stage: $PASSES; each
stage alone: FastCDC (storage/cdc.c, default parameters: avg 1 MiB, min 256 KiB, max 8 MiB,
normalised level 2, key-derived gear table; mean chunk here $(bench_num %.0f "$mean_chunk / 1024") KiB),
libsodium's crypto_aead_xchacha20poly1305_ietf_encrypt on 1 MiB chunks, and the BLAKE2b-256
Merkle root (storage/merkle.c: 4 KiB leaves) of each 1 MiB chunk.  The chain limit is
1 / (1/CDC + 1/AEAD + 1/Merkle), computed per run from that run's three stages: the rate of one
core doing the three passes one after the other and nothing else.  "In sequence" runs them
as store.put will, chunk by chunk (CDC cut, encrypt, Merkle root of ciphertext and tag while
it is in cache).  Median of $RUNS runs (range in brackets); MB = 10^6 bytes.  The last column
is what the anchor note (shared/anchors/encrypted-storage.md, "Throughput") measured on its
2-core Xeon VM.

| stage (one core) | wall clock: median (range) | per CPU second | anchor VM |
|---|---|---|---|
$(row "CDC: FastCDC, avg 1 MiB" cdc "2.0 GB/s (gear loop)")
$(row "AEAD: XChaCha20-Poly1305, 1 MiB" aead "1.11-1.78 GB/s")
$(row "Merkle: BLAKE2b-256, 4 KiB leaves" merkle "0.94-1.12 GB/s (plain BLAKE2b)")
| **chain limit** 1/(1/CDC + 1/AEAD + 1/Merkle) | **$(bench_num %.0f "$chain") MB/s** ($(range chain_limit mb_per_s)) | **$(bench_num %.0f "$chain_c") MB/s** | 410-520 MB/s |
$(row "the three in sequence, per CDC chunk" pipeline "")
| store.put target: 70% of the chain limit | $(bench_num %.0f "0.7 * $chain") MB/s | $(bench_num %.0f "0.7 * $chain_c") MB/s | >= 300 MB/s |

In sequence the three reach $(bench_num %.0f "100 * $pipe / $chain")% of the chain limit by the wall clock
($(bench_num %.0f "100 * $pipe_c / $chain_c")% per CPU second): above 100% means the chunk still being in cache
makes the later passes cheaper than over memory.
$others_note
Machine: $(bench_machine).
Command: \`sh tests/bench/store_chain.sh\` ($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown)$([ -z "$(git status --porcelain -- storage/cdc.c storage/merkle.c 2> /dev/null)" ] || echo ", with uncommitted changes to storage/cdc.c or storage/merkle.c")).

MD
if [ "$WRITE" = 1 ]; then
	bench_write_section store-chain "$body"
	echo "store_chain: results written to docs/performance.md" >&2
else
	cat "$body"
fi
