#!/bin/sh
# brb_compare.sh - issue 5's measurements: the four BRB protocols side by
# side on the simulator (messages and bytes per delivered message, latency in
# ms and rounds, n in {4, 16, 64, 128}, |m| in {1 KiB, 64 KiB, 1 MiB}), plus
# the amortized protocol's steady state and fallback path.  Writes its
# section of docs/performance.md and the plot docs/perf/brb-bytes.png.
# Usage: sh tests/bench/brb_compare.sh   (builds what it needs)
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
make -s build/libweft.a build/libweft-sim.a >/dev/null
mkdir -p build/bench docs/perf
cc -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude tests/bench/brb_compare.c build/libweft-sim.a build/libweft.a \
	$(pkg-config --libs libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih) -lm -lpthread \
	-o build/bench/brb_compare
table=$(mktemp)
dat=build/bench/brb_bytes.dat
start=$(date +%s)
build/bench/brb_compare "$dat" > "$table"
secs=$(( $(date +%s) - start ))
if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<GP
set terminal pngcairo size 900,500
set output 'docs/perf/brb-bytes.png'
set title 'Bytes on the wire per delivered message, relative to n|m| (|m| = 1 MiB)'
set xlabel 'n'
set ylabel 'bytes / (n |m|)'
set logscale y
set key top left
set grid
plot '< grep "^1048576 " $dat' using 2:3 with linespoints title 'bracha', \
     '' using 2:4 with linespoints title 'echo', \
     '' using 2:5 with linespoints title 'coded', \
     '' using 2:6 with linespoints title 'amortized', \
     4 with lines dashtype 2 title 'target 4 n|m|'
GP
fi
body=$(mktemp)
{
	echo "## Byzantine reliable broadcast (issue 5)"
	echo
	echo "All four protocols side by side in one run of the simulator: one broadcast by an honest node,"
	echo "constant 10 ms links, real Ed25519 signatures. Bytes count the protocol messages on the wire"
	echo "(the payload bytes and all headers, votes, proofs and certificates). The periodic catch-up"
	echo "(n^2 STATUS messages of about n * 18 bytes every resend_ms, 500 ms by default, whatever the load)"
	echo "is left out here by setting resend_ms beyond the run. Rounds = latency / link latency."
	echo
	cat "$table"
	echo
	echo "![bytes per delivery](perf/brb-bytes.png)"
	echo
	echo "Target: at n = 64 and |m| = 1 MiB, coded and amortized within 4 n|m| (the ratio column <= 4);"
	echo "bracha's n^2|m| is the reference."
	echo
	echo "Machine: $(bench_machine). Command: \`sh tests/bench/brb_compare.sh\` ($(date -u +%Y-%m-%d), ${secs} s)."
	echo
} > "$body"
bench_write_section brb-compare "$body"
rm -f "$table" "$body"
echo "brb_compare: results written to docs/performance.md"
