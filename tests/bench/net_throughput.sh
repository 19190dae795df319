#!/bin/sh
# net_throughput.sh - the peer transport benchmark (issue 4): two nodes on
# loopback, authenticated payload throughput with 64 KiB messages and message
# rate with 64-byte messages, beside the raw single-core speed of
# ChaCha20-Poly1305 measured in the same run.  Each measurement is taken
# RUNS times (default 3), interleaved, and the median is reported; before
# each one the script waits (up to QUIET_WAIT seconds, default 20) for the
# machine to be idle, and every run records how much CPU other processes
# used meanwhile.  With perf available it also profiles one run of each size
# and counts system calls, for the "where the time goes" paragraph.  Writes
# its section of docs/performance.md.  Never part of make check: a timing is
# not an assertion.
#
# Usage: sh tests/bench/net_throughput.sh     (builds what it needs)
#   RUNS=5 LINK_SECONDS=5 sh tests/bench/net_throughput.sh
#
# The C driver (tests/bench/net_throughput.c) is built here rather than by the
# Makefile, with the Makefile's flags, against build/libweft.a.
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh

RUNS=${RUNS:-3}
LINK_SECONDS=${LINK_SECONDS:-3}
AEAD_SECONDS=${AEAD_SECONDS:-1}
QUIET_WAIT=${QUIET_WAIT:-20}
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
BIN=build/bench/net_throughput

make build/libweft.a >&2
mkdir -p build/bench
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -O2 -g -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/net_throughput.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o "$BIN"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run OUT ARGS...: one run of the driver, its JSON lines appended to OUT.
run() {
	out=$1
	shift
	bench_quiet net_throughput
	if ! "$BIN" "$@" > "$tmp/last" 2> "$tmp/last.err"; then
		echo "net_throughput: '$BIN $*' failed:" >&2
		cat "$tmp/last" "$tmp/last.err" >&2
		exit 1
	fi
	cat "$tmp/last" >> "$out"
	cat "$tmp/last" >&2
}

# median FILE MEASURE KEY: the line of FILE (measure MEASURE) with the median
# value of KEY (for an even count, the lower middle).
median() {
	grep "\"measure\":\"$2\"" "$1" | while IFS= read -r line; do
		printf '%s\t%s\n' "$(bench_jget "$line" "$3")" "$line"
	done | sort -g | awk -F '\t' '{ l[NR] = $2 } END { print l[int((NR + 1) / 2)] }'
}

# range FILE MEASURE KEY: "min-max" of KEY over the runs.
range() {
	grep "\"measure\":\"$2\"" "$1" | while IFS= read -r line; do bench_jget "$line" "$3"; done |
		sort -g | awk -v fmt="$4" 'NR == 1 { lo = $1 } { hi = $1 } END { printf fmt "-" fmt, lo, hi }'
}

i=0
while [ "$i" -lt "$RUNS" ]; do
	run "$tmp/aead" --aead --seconds "$AEAD_SECONDS"
	run "$tmp/big" --size 65536 --seconds "$LINK_SECONDS"
	run "$tmp/small" --size 64 --seconds "$LINK_SECONDS"
	i=$((i + 1))
done

# Medians, each over its own runs: by the wall clock, and per CPU second
# (payload over the CPU time of the busier side; for the AEAD, of its one
# thread), which other load on the machine disturbs much less.
enc=$(median "$tmp/aead" aead_encrypt mb_per_s)
dec=$(median "$tmp/aead" aead_decrypt mb_per_s)
cpy=$(median "$tmp/aead" memcpy mb_per_s)
big=$(median "$tmp/big" link mb_per_s)
small=$(median "$tmp/small" link msgs_per_s)
enc_mb=$(bench_jget "$enc" mb_per_s)
dec_mb=$(bench_jget "$dec" mb_per_s)
cpy_mb=$(bench_jget "$cpy" mb_per_s)
big_mb=$(bench_jget "$big" mb_per_s)
small_rate=$(bench_jget "$small" msgs_per_s)
small_mb=$(bench_jget "$small" mb_per_s)
enc_c=$(bench_jget "$(median "$tmp/aead" aead_encrypt mb_per_cpu_s)" mb_per_cpu_s)
dec_c=$(bench_jget "$(median "$tmp/aead" aead_decrypt mb_per_cpu_s)" mb_per_cpu_s)
cpy_c=$(bench_jget "$(median "$tmp/aead" memcpy mb_per_cpu_s)" mb_per_cpu_s)
big_cl=$(median "$tmp/big" link ceiling_mb_s)
big_c=$(bench_jget "$big_cl" ceiling_mb_s)
small_cl=$(median "$tmp/small" link ceiling_msgs_s)
small_c=$(bench_jget "$small_cl" ceiling_msgs_s)

mbs() { bench_num "%.0f MB/s" "$1"; }
pct() { bench_num "%.0f%%" "100 * $1"; }
verdict() { awk "BEGIN { print ($1) ? \"met\" : \"**not met**\" }"; }
ratio=$(bench_num %.2f "$big_mb / $enc_mb")
ratio_c=$(bench_num %.2f "$big_c / $enc_c")
big_met="$(verdict "$big_mb >= 0.60 * $enc_mb") / $(verdict "$big_c >= 0.60 * $enc_c")"
small_met="$(verdict "$small_rate >= 200000") / $(verdict "$small_c >= 200000")"
others_max=$(cat "$tmp/aead" "$tmp/big" "$tmp/small" | while IFS= read -r line; do bench_jget "$line" others; done |
	sort -g | tail -1)

# cpu LINE: "sender X% (user U s, sys S s), receiver Y% (...)" of one run.
cpu() {
	printf 'sender %s of a core (user %s s, sys %s s), receiver %s (user %s s, sys %s s)' \
		"$(pct "$(bench_jget "$1" snd_cpu)")" "$(bench_jget "$1" snd_user_s)" "$(bench_jget "$1" snd_sys_s)" \
		"$(pct "$(bench_jget "$1" rcv_cpu)")" "$(bench_jget "$1" rcv_user_s)" "$(bench_jget "$1" rcv_sys_s)"
}
# per_gb LINE: CPU milliseconds per GB of payload, sender / receiver.
per_gb() {
	awk -v sr="$(bench_jget "$1" snd_mb_per_cpu_s)" -v rr="$(bench_jget "$1" rcv_mb_per_cpu_s)" \
		'BEGIN { printf "%.0f / %.0f", 1e6 / sr, 1e6 / rr }'
}
# per_msg LINE: CPU nanoseconds per message, sender / receiver.
per_msg() {
	awk -v sr="$(bench_jget "$1" snd_mb_per_cpu_s)" -v rr="$(bench_jget "$1" rcv_mb_per_cpu_s)" -v n="$(bench_jget "$1" size)" \
		'BEGIN { printf "%.0f / %.0f", n * 1e3 / sr, n * 1e3 / rr }'
}

# ---- where the time goes: perf, when it works here ----
profile=""
if command -v perf > /dev/null 2>&1 && perf stat -e task-clock true > /dev/null 2>&1; then
	# profile SIZE: per process, the share of CPU samples by library.
	profile_one() {
		bench_quiet net_throughput
		perf record -q -e cpu-clock -F 999 -o "$tmp/perf.data" -- "$BIN" --size "$1" --seconds 2 \
			> "$tmp/perf.json" 2> /dev/null || return 1
		perf report -i "$tmp/perf.data" --no-children --sort comm,dso -g none --stdio -t '|' 2> /dev/null |
			awk -F '|' -v size="$1" '
			/^#/ || NF < 3 { next }
			{
				pct = $1; gsub(/[ %]/, "", pct)
				comm = $2; gsub(/ /, "", comm)
				dso = $3; gsub(/ /, "", dso)
				if (comm != "wt-sender" && comm != "wt-receiver") next
				if (dso ~ /^libsodium/) cat = "AEAD (libsodium)"
				else if (dso ~ /kernel/) cat = "kernel (TCP, syscalls, page faults)"
				else if (dso ~ /^libc/) cat = "libc (memcpy, malloc)"
				else if (dso ~ /^libevent/) cat = "libevent"
				else if (dso ~ /net_throughput/) cat = "weft code (and the driver)"
				else cat = "other"
				share[comm, cat] += pct; total[comm] += pct; cats[cat] = 1
			}
			END {
				n = split("AEAD (libsodium)|kernel (TCP, syscalls, page faults)|libc (memcpy, malloc)|libevent|weft code (and the driver)|other", order, "|")
				for (i = 1; i <= n; i++) {
					c = order[i]
					if (!(c in cats)) continue
					if (share["wt-sender", c] + share["wt-receiver", c] < 0.5) continue
					printf "| %s B | %s | %.0f%% | %.0f%% |\n", size, c,
						total["wt-sender"] ? 100 * share["wt-sender", c] / total["wt-sender"] : 0,
						total["wt-receiver"] ? 100 * share["wt-receiver", c] / total["wt-receiver"] : 0
				}
			}'
	}
	# syscalls: system calls per 64 KiB message (readv/writev/epoll_wait/ioctl).
	syscalls() {
		bench_quiet net_throughput
		perf stat -x '|' -o "$tmp/stat" -e syscalls:sys_enter_readv,syscalls:sys_enter_writev \
			-e syscalls:sys_enter_epoll_wait,syscalls:sys_enter_ioctl \
			-- "$BIN" --size 65536 --seconds 1 > "$tmp/stat.json" 2> /dev/null || return 1
		msgs=$(bench_jget "$(cat "$tmp/stat.json")" messages)
		wire=$(bench_jget "$(cat "$tmp/stat.json")" wire_bytes)
		awk -F '|' -v m="$msgs" -v w="$wire" '
			$3 ~ /sys_enter_/ { name = $3; sub(/.*sys_enter_/, "", name); c[name] = $1 }
			END {
				printf "per 64 KiB message: %.1f readv (%.0f bytes each), %.1f writev (%.0f bytes each), %.1f epoll_wait, %.1f ioctl",
					c["readv"] / m, w / (c["readv"] ? c["readv"] : 1),
					c["writev"] / m, w / (c["writev"] ? c["writev"] : 1),
					c["epoll_wait"] / m, c["ioctl"] / m
			}' "$tmp/stat"
	}
	p_big=$(profile_one 65536) || p_big=""
	p_small=$(profile_one 64) || p_small=""
	calls=$(syscalls 2> /dev/null) || calls=""
	if [ -n "$p_big$p_small" ]; then
		profile="Share of each process's CPU samples by where they fell (\`perf record -e cpu-clock\`, one
2-second run of each size; libsodium here is ChaCha20-Poly1305, the kernel share is the
loopback TCP path, copies to and from the socket, and page faults):

| size | where | sender | receiver |
|---|---|---|---|
$p_big
$p_small
"
	fi
	if [ -n "$calls" ]; then
		profile="$profile
System calls (\`perf stat\` on syscall tracepoints, both processes, one 1-second run): $calls.
"
	fi
else
	profile="(perf is not available here: no profile, only the CPU split above.)
"
fi

# The copy count below was made by reading net/peer.c.  Each part is printed
# only while the code it describes is still there (a fixed grep per part),
# so a change to the transport drops the parts it made untrue.
has() { grep -qF -- "$1" net/peer.c; }
copies=""
add() { copies="$copies$1
"; }
if has 'evbuffer_add(q, hdr, sizeof(hdr));'; then
	add "- weft_net_send copies each message into the peer queue with two evbuffer_add calls
  (frame header, payload), so a 64 KiB frame straddles two chains;"
fi
if has 'evbuffer_pullup(p->queue'; then
	add "- peer_flush makes each record's plaintext contiguous with evbuffer_pullup, a second
  copy (into a freshly allocated chain) whenever the record spans chains;"
fi
if has 'bufferevent_write(c->bev, net->rec.buf'; then
	add "- it seals into a scratch writer, and bufferevent_write copies the sealed record into
  the socket's output buffer: a third copy before the kernel's own;"
fi
if has 'EVBUFFER_PTR_SET' && has 'next_record_size'; then
	add "- next_record_size sizes a record by re-walking the queue's chains from the start
  (EVBUFFER_PTR_SET) for every frame, which counts with small messages;"
fi
if has 'bufferevent_get_input' && ! has 'readv(' && ! has 'evbuffer_reserve_space(in' &&
	pkg-config --modversion libevent 2> /dev/null | grep -q '^2\.1\.'; then
	add "- the receiver reads through the bufferevent, and libevent 2.1's evbuffer_read moves at
  most 4096 bytes per call (EVBUFFER_MAX_READ, fixed in 2.1: bufferevent_set_max_single_read
  cannot raise it; 2.2 adds evbuffer_set_max_read), one call per readable event: about 16
  rounds of epoll_wait + ioctl(FIONREAD) + readv, and 16 on_conn_read calls, per 64 KiB
  record (compare the system call counts above);"
fi
if has 'evbuffer_pullup(in, (ev_ssize_t)(WEFT_SC_HEADER + body))'; then
	add "- on_conn_read copies each record out of those small chains with evbuffer_pullup before
  weft_sc_open decrypts it into net->plain; messages are delivered from there without a copy."
fi
if [ -n "$copies" ]; then
	copies="Copies and calls on the data path in net/peer.c as measured:

$copies"
fi

others_note=""
if awk "BEGIN { exit !(${others_max:-0} > 0.25) }"; then
	others_note="
**The machine was not idle**: other processes kept up to $others_max cores busy during
some runs (\"others\" in the JSON lines; the script waited up to ${QUIET_WAIT} s for a bench_quiet net_throughput
machine before each run), so the wall-clock column understates what the code can do on
this machine; the per-CPU column and the CPU costs above are the figures to compare.
"
fi

body="$tmp/body.md"
cat > "$body" <<MD
## Peer transport (issue 4)

Two weft_net nodes on 127.0.0.1, one process each (both share this machine's cores),
over the real secure channel (ChaCha20-Poly1305 records).  Node 0 sends as fast as
backpressure allows (queue high-water mark 8 MiB; on WEFT_EAGAIN it waits until the
queue is below 4 MiB) for ${LINK_SECONDS} s; node 1 times the window from the first
message to the end marker and checks every sequence number (none lost).  The raw AEAD
is libsodium's crypto_aead_chacha20poly1305_ietf on 64 KiB buffers, one thread, in the
same run.  Median of ${RUNS} interleaved runs (range in brackets); MB = 10^6 bytes.

| measurement | wall clock: median (range) | per CPU second | ratio to AEAD encrypt (wall / CPU) | target | met (wall / CPU) |
|---|---|---|---|---|---|
| raw AEAD encrypt, 64 KiB, 1 thread | $(mbs "$enc_mb") ($(range "$tmp/aead" aead_encrypt mb_per_s %.0f)) | $(mbs "$enc_c") | 1.00 | | |
| raw AEAD decrypt, 64 KiB, 1 thread | $(mbs "$dec_mb") ($(range "$tmp/aead" aead_decrypt mb_per_s %.0f)) | $(mbs "$dec_c") | $(bench_num %.2f "$dec_mb / $enc_mb") / $(bench_num %.2f "$dec_c / $enc_c") | | |
| memcpy 64 KiB (in cache), for scale | $(mbs "$cpy_mb") | $(mbs "$cpy_c") | $(bench_num %.1f "$cpy_mb / $enc_mb") / $(bench_num %.1f "$cpy_c / $enc_c") | | |
| link, 64 KiB messages: payload | $(mbs "$big_mb") ($(range "$tmp/big" link mb_per_s %.0f)) | $(mbs "$big_c") ($(bench_jget "$big_cl" bottleneck)-bound) | **$ratio / $ratio_c** | >= 0.60 | $big_met |
| link, 64-byte messages: rate | $(bench_num %.0f "$small_rate") msg/s ($(range "$tmp/small" link msgs_per_s %.0f)), payload $(mbs "$small_mb") | $(bench_num %.0f "$small_c") msg/s ($(bench_jget "$small_cl" bottleneck)-bound) | $(bench_num %.2f "$small_mb / $enc_mb") (payload) | >= 200,000 msg/s | $small_met ($(bench_num %.0f "$small_rate / 200000")x / $(bench_num %.0f "$small_c / 200000")x) |

"Per CPU second" divides the payload by the CPU time (user + system, getrusage) of the
busier of the two processes, and the AEAD's by its own thread's: it is what the link
would carry with a core for each side, and it moves much less than the wall clock when
other processes load the machine.  On an idle machine the two columns agree when the
busier side runs near 100% of a core (in the median 64 KiB run the wall clock is
$(pct "$big_mb / $(bench_jget "$big" ceiling_mb_s)") of its per-CPU figure; other processes kept up to ${others_max} cores
busy during the runs).

Wire overhead: $(bench_num "%.2f%%" "100 * $(bench_jget "$big" wire_overhead)") for 64 KiB messages, $(bench_num "%.1f%%" "100 * $(bench_jget "$small" wire_overhead)") for 64-byte ones (5-byte frame header per message,
20 bytes per record; small messages are batched into records of up to 64 KiB, so this
measures batched throughput, not the cost of a lone message).

### Where the time goes

CPU over the window (getrusage in each process), median runs.  64 KiB: $(cpu "$big");
that is $(per_gb "$big") CPU ms per GB of payload (sender / receiver), against
$(bench_num "%.0f / %.0f" "1e6 / $enc_c, 1e6 / $dec_c") ms/GB for the raw AEAD encrypt / decrypt alone.  64 bytes: $(cpu "$small");
$(per_msg "$small") CPU ns per message.  A side near 100% of a core is the bottleneck;
both well below it means they wait on each other or on other load.

$profile
$copies$others_note
Machine: $(bench_machine).
Command: \`sh tests/bench/net_throughput.sh\` ($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown)$(git diff --quiet HEAD -- net/peer.c net/secure.c 2> /dev/null || echo ", with uncommitted changes to net/peer.c or net/secure.c")).

MD
bench_write_section net-throughput "$body"
echo "net_throughput: results written to docs/performance.md" >&2
