#!/bin/sh
# store_put.sh - the storage benchmarks (issue 15): weftd's store.put and
# store.get against the chain limit of one core and against restic, the
# deduplication of two versions of a source tree, and a 4-node committee
# on this machine with a node killed during a get.  Writes three sections
# of docs/performance.md (store-put, store-dedup, store-net; WRITE=0 prints
# them instead).  Never part of make check: a timing is not an assertion.
#
#   one    one core: a one-node committee ("dag"), weftd pinned to CPU
#          (taskset), `weft-cli store put FILE -q` of SIZE_MIB MiB of random
#          data, then `store get ID OUT -q`; beside it in the same run the
#          chain limit (tests/bench/store_chain.c, pinned to the same CPU)
#          and restic (`restic backup FILE`, `restic restore`, pinned to the
#          same CPU, repository on the same filesystem), once with its
#          default compression (auto) and once with --compression off.  The
#          three (four) are interleaved: RUNS rounds, the order reversed
#          every other round, a fresh committee and a fresh repository each
#          round.  Then, with perf, one more put and get under
#          `perf record` and `perf stat` for where the time goes.
#   dedup  for each OLD:NEW in DEDUP_PAIRS (default "HEAD~30:HEAD
#          HEAD~5:HEAD"), the two trees of this repository tarred (name
#          order, fixed times), put one after the other (and the second
#          again) on a one-node committee (convergent mode at the default
#          and at a 64 KiB average chunk, and random mode), and backed up
#          one after the other by restic (compression auto and off): bytes
#          stored and chunks after each; for the pair DEDUP_PLAIN (default
#          HEAD~5:HEAD) also git archive's own tarballs.
#   net    NET_RUNS times: 4 weftd on 127.0.0.1 ("dag"), a put of NET_MIB
#          MiB (k = 2 of n = 4) on node0, a get on node3 with every node
#          up, and a get on node3 during which node1 is killed (SIGKILL,
#          KILL_AFTER seconds after the get starts); then, with perf, one
#          more round under `perf record` on the daemons; then, on a fresh
#          committee, the file put twice in convergent mode: node0's bytes
#          sent to its peers for each put (the second places its chunks
#          by reference).
#
# Usage: sh tests/bench/store_put.sh               (builds what it needs;
#        installs restic, and perf, with apt-get when missing)
#   SIZE_MIB=256 NET_MIB=128 RUNS=1 NET_RUNS=1 WRITE=0 sh tests/bench/store_put.sh
#   PARTS="one dedup net" DATA=/tmp CPU=0 PERF=1 BASE_PORT=7700
#
# DATA is where every file, database and repository goes (default /tmp, the
# disk here; all of it on one filesystem); the script checks its free space
# first and deletes everything it made at the end.  PRIORITY=1 (default)
# runs in a new session whose scheduler autogroup gets nice -10, as
# dag_bench.sh does, so other sessions' load takes less of the pinned core.
# The programs are copied into the run's directory first, so a rebuild in
# the tree meanwhile does not change what is measured.  Ports: BASE_PORT
# (the one-node committee) and BASE_PORT + 10 to + 13 (the 4 nodes).
set -eu
cd "$(dirname "$0")/../.."

PRIORITY=${PRIORITY:-1}
if [ "$PRIORITY" = 1 ] && [ -z "${STORE_BENCH_SESSION:-}" ] && command -v setsid > /dev/null 2>&1; then
	STORE_BENCH_SESSION=1 exec setsid --wait sh "$0" "$@"
fi
prio="none"
if [ "$PRIORITY" = 1 ] && [ -w /proc/self/autogroup ] && echo -10 > /proc/self/autogroup 2> /dev/null; then
	prio="autogroup nice -10"
fi

. tests/bench/lib.sh

PARTS=${PARTS:-"one dedup net"}
SIZE_MIB=${SIZE_MIB:-2048}
NET_MIB=${NET_MIB:-1024}
RUNS=${RUNS:-3}
NET_RUNS=${NET_RUNS:-2}
CHAIN_MIB=${CHAIN_MIB:-256}
KILL_AFTER=${KILL_AFTER:-0.5}
DEDUP_PAIRS=${DEDUP_PAIRS:-"HEAD~30:HEAD HEAD~5:HEAD"}
DEDUP_PLAIN=${DEDUP_PLAIN:-HEAD~5:HEAD}
DATA=${DATA:-/tmp}
CPU=${CPU:-0}
PERF=${PERF:-1}
BASE_PORT=${BASE_PORT:-7700}
QUIET_WAIT=${QUIET_WAIT:-10}
WRITE=${WRITE:-1}
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
CLI=build/bin/weft-cli
HZ=$(getconf CLK_TCK)
started=$(date +%s)

has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# ---- tools ----
make build/bin/weftd build/bin/weft-cli build/libweft.a >&2
mkdir -p build/bench
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -O2 -g -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/store_chain.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o build/bench/store_chain

apt_install() {
	echo "store_put: installing $1 with apt-get" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y "$1" > /dev/null 2>&1 ||
		{ apt-get update > /dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y "$1" > /dev/null 2>&1; } ||
		echo "store_put: could not install $1" >&2
}
if has one || has dedup; then
	command -v restic > /dev/null 2>&1 || apt_install restic
	command -v restic > /dev/null 2>&1 || { echo "store_put: restic is needed" >&2; exit 1; }
fi
perf_ok=0
if [ "$PERF" = 1 ]; then
	command -v perf > /dev/null 2>&1 || apt_install linux-perf
	if command -v perf > /dev/null 2>&1 && perf stat -e cpu-clock true > /dev/null 2>&1; then perf_ok=1; fi
fi

# ---- room ----
need_mib=0
has one && need_mib=$((SIZE_MIB * 5 + 1024))
has net && [ $((NET_MIB * 5 + 1024)) -gt "$need_mib" ] && need_mib=$((NET_MIB * 5 + 1024))
free_mib=$(df -Pm "$DATA" | awk 'NR == 2 { print $4 }')
if [ "$free_mib" -lt "$need_mib" ]; then
	echo "store_put: $DATA has $free_mib MiB free, this run needs about $need_mib MiB" >&2
	exit 1
fi
fs_of() { df -P "$1" | awk 'NR == 2 { print $1 " (" $6 ")" }'; }
fstype=$(df -PT "$DATA" | awk 'NR == 2 { print $2 }')

wd=$(mktemp -d "$DATA/storebench.XXXXXX")
wpid=""
pids=""
committee=""
cleanup() {
	[ -n "$wpid" ] && kill "$wpid" 2> /dev/null || true
	bench_committee_stop 2> /dev/null || true
	[ -n "${KEEP:-}" ] || rm -rf "$wd"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Private copies of the programs: a rebuild in the tree during the run
# (make from another shell) must not change what is measured.
mkdir "$wd/bin"
cp build/bin/weftd build/bin/weft-cli build/bench/store_chain "$wd/bin/"
CLI=$wd/bin/weft-cli
WEFTD=$wd/bin/weftd
echo pw-store-bench > "$wd/restic.pw"
export RESTIC_PASSWORD_FILE="$wd/restic.pw"
RCACHE="$wd/restic-cache"

# ---- measuring ----
now() { date +%s.%N; }
# CPU seconds (user + system) of the processes PID...
pcpu() {
	for p in "$@"; do sed 's/^.*) //' "/proc/$p/stat" 2> /dev/null || true; done |
		awk -v hz="$HZ" '{ s += $12 + $13 } END { printf "%.3f\n", s / hz }'
}
# CPU seconds of this shell's waited-for children (and theirs).
kids() { sed 's/^.*) //' "/proc/$$/stat" | awk -v hz="$HZ" '{ printf "%.3f\n", ($14 + $15) / hz }'; }
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }

# A measurement: mark (before), then done NAME RUN BYTES CPU_BEFORE
# CPU_AFTER [REPLY_SECONDS]: one row of $wd/rows:
#   run name mb_wall mb_reply mb_cpu others wall cpu
mark() { m_busy=$(bench_busy); m_t=$(now); }
done_row() {
	d_t=$(now)
	d_busy=$(bench_busy)
	wall=$(calc "$d_t - $m_t")
	cpu=$(calc "$5 - $4")
	reply=${6:-$wall}
	others=$(calc "(($d_busy - $m_busy) / $HZ - $cpu) / $wall")
	awk -v o="$others" 'BEGIN { exit !(o < 0) }' && others=0
	printf '%s\t%s\t%.1f\t%.1f\t%.1f\t%.2f\t%.3f\t%.3f\n' "$1" "$2" "$(calc "$3 / 1e6 / $wall")" \
		"$(calc "$3 / 1e6 / $reply")" "$(calc "$3 / 1e6 / ($cpu > 0 ? $cpu : 1e-9)")" "$others" "$wall" "$cpu" |
		tee -a "$wd/rows" >&2
}
jnum() { sed -n "s/^ *\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -n 1; }

# ---- one-node committee ----
one_start() {
	one=$wd/one
	rm -rf "$one"
	$CLI genesis --nodes 1 --out "$one" --protocol dag --base-port "$BASE_PORT" --chain-id weft-bench-store > /dev/null
	taskset -c "$CPU" "$WEFTD" --datadir "$one/node0" > "$one/node0/weftd.stderr" 2>&1 &
	wpid=$!
	i=0
	until $CLI --datadir "$one/node0" --timeout 2 status > /dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 "$wpid" 2> /dev/null; then
			echo "store_put: the one-node weftd did not come up" >&2
			cat "$one/node0/weftd.stderr" >&2
			exit 1
		fi
		sleep 0.1
	done
}
one_stop() {
	kill "$wpid" 2> /dev/null || true
	wait "$wpid" 2> /dev/null || true
	wpid=""
	rm -rf "$one"
}
# one_put FILE RUN NAME [ARGS...]: put FILE, a row NAME; the reply in $wd/reply.
one_put() {
	f=$1 run=$2 name=$3
	shift 3
	c0=$(pcpu "$wpid")
	mark
	if ! $CLI --datadir "$one/node0" store put "$f" -q "$@" > "$wd/reply" 2> "$wd/reply.err"; then
		echo "store_put: store put $f failed:" >&2
		cat "$wd/reply" "$wd/reply.err" >&2
		tail -n 20 "$one/node0/weftd.log" >&2
		exit 1
	fi
	done_row "$run" "$name" "$(stat -c %s "$f")" "$c0" "$(pcpu "$wpid")" "$(jnum seconds "$wd/reply")"
	put_id=$(jnum id "$wd/reply")
}
# one_get ID OUT RUN NAME
one_get() {
	c0=$(pcpu "$wpid")
	mark
	if ! $CLI --datadir "$one/node0" store get "$1" "$2" -q > "$wd/reply" 2> "$wd/reply.err"; then
		echo "store_put: store get $1 failed:" >&2
		cat "$wd/reply" "$wd/reply.err" >&2
		exit 1
	fi
	done_row "$3" "$4" "$(jnum bytes "$wd/reply")" "$c0" "$(pcpu "$wpid")" "$(jnum seconds "$wd/reply")"
}
# Bytes weftd caused to be written to the storage layer (/proc/PID/io).
wio() { awk '/^write_bytes/ { print $2 }' "/proc/$wpid/io"; }
one_bytes() { $CLI --datadir "$one/node0" store ls > "$wd/ls"; jnum bytes "$wd/ls"; }
one_cids() { jnum cids "$wd/ls"; }

# ---- restic ----
rs() { restic -r "$wd/repo" --cache-dir "$RCACHE" "$@"; }
restic_init() {
	rm -rf "$wd/repo" "$RCACHE"
	rs init > /dev/null 2>&1 || { echo "store_put: restic init failed" >&2; exit 1; }
}
# restic_backup FILE RUN NAME COMPRESSION
restic_backup() {
	c0=$(kids)
	mark
	taskset -c "$CPU" restic -r "$wd/repo" --cache-dir "$RCACHE" --compression "$4" backup --json "$1" \
		> "$wd/rb.json" 2> "$wd/rb.err" || { echo "store_put: restic backup failed" >&2; cat "$wd/rb.err" >&2; exit 1; }
	done_row "$2" "$3" "$(stat -c %s "$1")" "$c0" "$(kids)"
	grep '"message_type":"summary"' "$wd/rb.json" > "$wd/rb.summary"
}

# ---- one core ----
one_round() {
	r=$1
	case $2 in
	chain)
		bench_quiet store_put
		"$wd/bin/store_chain" --mib "$CHAIN_MIB" --passes 2 --cpu "$CPU" > "$wd/chain.json"
		line=$(grep '"measure":"chain_limit"' "$wd/chain.json")
		printf '%s\tchain\t%.1f\t%.1f\t%.1f\t%.2f\t\t\n' "$r" "$(bench_jget "$line" mb_per_s)" \
			"$(bench_jget "$line" mb_per_s)" "$(bench_jget "$line" mb_per_cpu_s)" "$(bench_jget "$line" others)" |
			tee -a "$wd/rows" >&2
		;;
	weft)
		one_start
		bench_quiet store_put
		io0=$(wio)
		one_put "$wd/data" "$r" weft_put
		io1=$(wio)
		bench_quiet store_put
		io2=$(wio)
		one_get "$put_id" "$wd/out" "$r" weft_get
		echo "$((io1 - io0)) $(($(wio) - io2))" >> "$wd/one_io"
		cmp -s "$wd/data" "$wd/out" || { echo "store_put: the file got back differs" >&2; exit 1; }
		echo "$(stat -c %s "$wd/data") $(one_bytes) $(du -sb "$one/node0/chunks" | cut -f1)" > "$wd/one_store"
		rm -f "$wd/out"
		one_stop
		;;
	restic | restic_off)
		comp=auto
		[ "$2" = restic_off ] && comp=off
		restic_init
		bench_quiet store_put
		restic_backup "$wd/data" "$r" "${2}_backup" "$comp"
		du -sb "$wd/repo" | cut -f1 > "$wd/${2}_repo"
		bench_quiet store_put
		rm -rf "$wd/rst"
		c0=$(kids)
		mark
		taskset -c "$CPU" restic -r "$wd/repo" --cache-dir "$RCACHE" restore latest --target "$wd/rst" \
			> /dev/null 2> "$wd/rr.err" || { echo "store_put: restic restore failed" >&2; cat "$wd/rr.err" >&2; exit 1; }
		done_row "$r" "${2}_restore_nosync" "$(stat -c %s "$wd/data")" "$c0" "$(kids)"
		# weftd fsyncs what a get wrote before it replies; restic restore does
		# not: the fsync of the restored file, timed from the same start.
		sync "$wd/rst$wd/data"
		done_row "$r" "${2}_restore" "$(stat -c %s "$wd/data")" "$c0" "$(kids)"
		cmp -s "$wd/data" "$wd/rst$wd/data" || { echo "store_put: restic restored something else" >&2; exit 1; }
		rm -rf "$wd/rst" "$wd/repo" "$RCACHE"
		;;
	esac
}

# perf_classify: reads `perf script -F comm,pid,ip,sym,dso` output and
# prints tab-separated lines: CAT share category / SELF share dso:symbol /
# INCL share weftd-function / TOTAL n.
perf_classify() {
	awk '
	function base(d) {
		if (d ~ /kernel/) return "kernel"
		sub(/.*\//, "", d)
		if (d ~ /^libsodium/) return "libsodium"
		if (d ~ /^liblmdb/) return "LMDB"
		if (d ~ /^libisal/) return "ISA-L"
		if (d ~ /^libc\./) return "libc"
		if (d ~ /^libevent/) return "libevent"
		return d
	}
	# The crypto a libsodium sample does, from the first named frame at or
	# above it (libsodium is stripped: its inner functions are [unknown]).
	function crypto(named, stack) {
		if (stack ~ /\|weft_sc_(seal|open)\|/) return "crypto: secure channel (ChaCha20-Poly1305)"
		if (named ~ /xchacha|chacha|poly1305|crypto_aead|crypto_stream|weft_chunk_(seal|open)/) return "crypto: chunk AEAD (XChaCha20-Poly1305)"
		if (named ~ /generichash|blake2b|merkle|end_block|node_hash|leaf_hash|weft_hash|vertex|key_derive|weft_kdf/) return "crypto: BLAKE2b (Merkle roots, ids, keys)"
		if (named ~ /sign|verify|25519|sha512/) return "crypto: Ed25519 (signatures)"
		if (named ~ /randombytes/) return "crypto: randombytes"
		return "crypto: other libsodium (memzero, allocation, ...)"
	}
	function category(leaf, sym, named, stack) {
		if (sym ~ /^weft_rs_|^ec_encode|^ec_init|^gf_|^gf_vect|^gf_.*mad/ || leaf == "ISA-L") return "coding (ISA-L, weft_rs)"
		if (leaf == "libsodium") return crypto(named, stack)
		if (leaf == "kernel") {
			if (stack ~ /fdatasync|\|do_fsync|vfs_fsync|__x64_sys_fsync|__x64_sys_msync/) return "kernel: fsync"
			if (stack ~ /exc_page_fault|handle_mm_fault|do_anonymous_page|clear_page/) return "kernel: page faults"
			if (stack ~ /\|(tcp_|sock_|skb_|inet_|__sys_sendmsg|__sys_recvmsg|sock_read_iter|sock_write_iter|unix_stream|net_rx_action|__netif|loopback|ip_finish|__dev_queue)/) return "kernel: sockets (TCP, unix)"
			if (stack ~ /\|(generic_perform_write|ext4_file_write_iter|ext4_buffered_write_iter|__x64_sys_pwrite64|__x64_sys_pwritev|__x64_sys_write|__x64_sys_writev|ksys_pwrite64|ksys_write|vfs_write|vfs_writev)/) return "kernel: file writes (copies into the page cache)"
			if (stack ~ /\|(filemap_read|ext4_file_read_iter|__x64_sys_pread64|__x64_sys_read|ksys_pread64|ksys_read|vfs_read)/) return "kernel: file reads (copies out of the page cache)"
			if (stack ~ /\|(__vm_munmap|__x64_sys_munmap|__x64_sys_mmap|do_mmap|__x64_sys_madvise|unmap_region|free_pgtables|tlb_finish)/) return "kernel: mmap / munmap"
			return "kernel: other (scheduler, epoll, timers)"
		}
		if (leaf == "LMDB") return "LMDB (user space)"
		if (leaf == "libevent") return "network: libevent"
		if (sym ~ /memcpy|memmove|memset/) {
			if (stack ~ /\|(weft_mpw_|weft_mp_|mpw_)/) return "memcpy under msgpack (weft_mpw_*)"
			return "memcpy / memset, other"
		}
		if (leaf == "libc") return "libc: malloc, free, other"
		if (sym ~ /^weft_cdc_|cdc_/) return "CDC (FastCDC)"
		if (sym ~ /^weft_mpw_|^weft_mp_|^mpw_/) return "msgpack (weft_mp*)"
		if (stack ~ /\|(peer_flush|on_conn_read|weft_sc_seal|weft_sc_open|weft_net_send)\|/) return "network: weft net/ code"
		return "weftd: other"
	}
	function flush(   i, d, leaf, lsym, named, stack, seen) {
		if (n == 0) return
		total++
		d = ""
		for (i = n; i >= 1; i--) { if (fd[i] != "inlined") d = fd[i]; rd[i] = d }
		for (i = 1; i <= n; i++) if (fd[i] != "inlined") break
		leaf = i <= n ? base(fd[i]) : "?"
		lsym = i <= n ? fs[i] : "?"
		# libc called by libsodium (sodium_memzero and the like) is crypto
		if (leaf == "libc" && i < n && base(rd[i + 1]) == "libsodium") leaf = "libsodium"
		named = "?"
		for (i = 1; i <= n; i++) if (fs[i] != "[unknown]" && base(rd[i]) != "libc") { named = fs[i]; break }
		stack = "|"
		for (i = 1; i <= n; i++) stack = stack fs[i] "|"
		cat[category(leaf, lsym, named, stack)]++
		if (lsym == "[unknown]") lsym = "[unknown] under " named
		self[leaf ": " lsym]++
		split("", seen)
		for (i = 1; i <= n; i++) if (rd[i] ~ /\/weftd$/ && !(fs[i] in seen)) { seen[fs[i]] = 1; incl[fs[i]]++ }
		n = 0
	}
	/^[^ \t]/ { flush(); next }
	/^[ \t]*$/ { flush(); next }
	{
		line = $0
		sub(/^[ \t]+[0-9a-f]+ /, "", line)
		dso = line; sub(/.*\(/, "", dso); sub(/\)$/, "", dso)
		sym = line; sub(/ \([^(]*\)$/, "", sym); sub(/\+0x[0-9a-f]+$/, "", sym)
		n++; fs[n] = sym; fd[n] = dso
	}
	END {
		flush()
		if (total == 0) total = 1
		for (c in cat) printf "CAT\t%.1f\t%s\n", 100 * cat[c] / total, c
		for (s in self) printf "SELF\t%.1f\t%s\n", 100 * self[s] / total, s
		for (f in incl) printf "INCL\t%.1f\t%s\n", 100 * incl[f] / total, f
		printf "TOTAL\t%d\n", total
	}'
}
# prof_table FILE KIND N: the N largest KIND lines of a perf_classify output
# as table rows "| share | name |".
prof_rows() {
	grep "^$2	" "$1" | sort -t "$(printf '\t')" -k2 -rn | head -n "$3" |
		awk -F '\t' '{ printf "| %s%% | %s |\n", $2, $3 }'
}
prof_share() { grep "^CAT	" "$1" | awk -F '\t' -v re="$2" '$3 ~ re { s += $2 } END { printf "%.1f", s }'; }

# ---- statistics over the rows ----
# vals NAME COL: the values of column COL (3 mb_wall, 4 mb_reply, 5 mb_cpu,
# 6 others, 7 wall, 8 cpu) of rows NAME, one a line.
vals() { awk -F '\t' -v n="$1" -v c="$2" '$2 == n { print $c }' "$wd/rows"; }
# med: median of the numbers on stdin (lower middle for an even count);
# rng: "min-max".
med() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.0f", v[int((NR + 1) / 2)]; else printf "n/a" }'; }
med1() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", v[int((NR + 1) / 2)]; else printf "n/a" }'; }
rng() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.0f-%.0f", lo, hi }'; }
rng2() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { if (NR) printf "%.2f-%.2f", lo, hi }'; }
maxv() { sort -g | tail -n 1; }
# ratios A COLA B COLB: per run, A's column over B's.
ratios() {
	awk -F '\t' -v a="$1" -v ca="$2" -v b="$3" -v cb="$4" '
		$2 == a { x[$1] = $ca } $2 == b { y[$1] = $cb }
		END { for (r in x) if ((r in y) && y[r] > 0) printf "%.4f\n", x[r] / y[r] }' "$wd/rows"
}
# oncpu NAME: median of cpu / wall over the rounds, in percent.
oncpu() { awk -F '\t' -v n="$1" '$2 == n && $7 > 0 { print 100 * $8 / $7 }' "$wd/rows" | med; }
# cell NAME COL: "median (min-max)".
cell() { printf '%s (%s)' "$(vals "$1" "$2" | med)" "$(vals "$1" "$2" | rng)"; }
rcell() { printf '%s (%s)' "$(ratios "$@" | med1)" "$(ratios "$@" | rng2)"; }
met() { awk -v v="$(ratios "$1" "$2" "$3" "$4" | med1)" -v t="$5" 'BEGIN { print (v >= t) ? "met" : "**not met**" }'; }

commit="$(git rev-parse --short HEAD 2> /dev/null || echo unknown)$([ -z "$(git status --porcelain -- src storage net protocols 2> /dev/null)" ] || echo ", with uncommitted changes in the tree")"
machine=$(bench_machine)
today=$(date -u +%Y-%m-%d)

# =====================================================================
# one core
# =====================================================================
if has one; then
	: > "$wd/rows"
	echo "store_put: $SIZE_MIB MiB of random data in $wd" >&2
	head -c "$((SIZE_MIB * 1048576))" /dev/urandom > "$wd/data"
	cat "$wd/data" > /dev/null
	r=1
	while [ "$r" -le "$RUNS" ]; do
		if [ $((r % 2)) = 1 ]; then order="chain weft restic restic_off"; else order="restic_off restic weft chain"; fi
		for what in $order; do one_round "$r" "$what"; done
		r=$((r + 1))
	done
	restic_repo=$(cat "$wd/restic_repo")
	restic_off_repo=$(cat "$wd/restic_off_repo")
	set -- $(cat "$wd/one_store")
	one_size=$1 one_share=$2 one_du=$3

	# ---- where the time goes: one more put and get under perf ----
	prof_text="(No profile: perf is not available here, or PERF=0.)"
	if [ "$perf_ok" = 1 ]; then
		one_start
		sc_events="syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_msync,syscalls:sys_enter_pread64,syscalls:sys_enter_pwrite64,syscalls:sys_enter_pwritev,syscalls:sys_enter_write,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,page-faults,context-switches"
		for phase in put get; do
			perf record -q -e cpu-clock -F 499 --call-graph dwarf,16384 -p "$wpid" -o "$wd/$phase.perf" > /dev/null 2>&1 &
			prec=$!
			perf stat -x '|' -e "$sc_events" -p "$wpid" -o "$wd/$phase.stat" > /dev/null 2>&1 &
			pstat=$!
			sleep 1
			if [ "$phase" = put ]; then
				one_put "$wd/data" perf weft_put_perf
				chunks=$(jnum chunks "$wd/reply")
			else
				one_get "$put_id" "$wd/out" perf weft_get_perf
				rm -f "$wd/out"
			fi
			kill -INT "$prec" "$pstat" 2> /dev/null || true
			wait "$prec" 2> /dev/null || true
			wait "$pstat" 2> /dev/null || true
			perf script -i "$wd/$phase.perf" -F comm,pid,ip,sym,dso 2> /dev/null | perf_classify > "$wd/$phase.prof"
			rm -f "$wd/$phase.perf"
		done
		one_stop
		# stat_line PHASE: "N fdatasync, ... per chunk"
		stat_line() {
			awk -F '|' -v c="$chunks" '
				$3 ~ /sys_enter_|page-faults|context-switches/ && $1 ~ /^[0-9]+$/ {
					e = $3; sub(/.*sys_enter_/, "", e)
					printf "%s%s %s (%.1f per chunk)", sep, e, $1, $1 / c; sep = ", " }' "$wd/$1.stat" 2> /dev/null
		}
		put_stat=$(stat_line put)
		get_stat=$(stat_line get)
		prof_text="\`perf record -e cpu-clock -F 499 --call-graph dwarf\` on weftd (pinned to CPU $CPU) during one more
put and get of the same $SIZE_MIB MiB file ($chunks chunks; put $(vals weft_put_perf 3 | med) MB/s, get
$(vals weft_get_perf 3 | med) MB/s by the wall clock under the profiler; $(grep '^TOTAL' "$wd/put.prof" | cut -f2) and
$(grep '^TOTAL' "$wd/get.prof" | cut -f2) samples).  Each sample is put in one category by the function it
was in and the stack above it (kernel samples by the system call or fault they serve).

| category | put | get |
|---|---|---|
$(grep '^CAT' "$wd/put.prof" "$wd/get.prof" | sed 's/^[^:]*\/\([a-z]*\)\.prof:/\1	/' | awk -F '\t' '
	{ v[$4, $1] = $3; c[$4] = 1; s[$4] += $3 }
	END { for (k in c) if (s[k] >= 0.1) printf "%s\t%s\t%s\n", s[k], k, "| " k " | " ((k SUBSEP "put") in v ? v[k, "put"] "%" : "-") " | " ((k SUBSEP "get") in v ? v[k, "get"] "%" : "-") " |" }' |
	sort -t "$(printf '\t')" -k1 -rn | cut -f3)

Top functions by own samples (\"self\"), put:

| share | library: function |
|---|---|
$(prof_rows "$wd/put.prof" SELF 15)

Top functions by own samples, get:

| share | library: function |
|---|---|
$(prof_rows "$wd/get.prof" SELF 12)

weftd functions anywhere on the stack (inclusive), put: $(grep '^INCL' "$wd/put.prof" | sort -t "$(printf '\t')" -k2 -rn |
	awk -F '\t' '$2 >= 2 && $3 !~ /^(main|weft_node_run|event_base_loop|event_process_active|__libc_start|_start)/ { printf "%s%s %s%%", sep, $3, $2; sep = ", " }' | cut -c1-1400).

weftd functions anywhere on the stack, get: $(grep '^INCL' "$wd/get.prof" | sort -t "$(printf '\t')" -k2 -rn |
	awk -F '\t' '$2 >= 2 && $3 !~ /^(main|weft_node_run|event_base_loop|event_process_active|__libc_start|_start)/ { printf "%s%s %s%%", sep, $3, $2; sep = ", " }' | cut -c1-1400).

System calls and faults of weftd (\`perf stat\`, same put and get): put: ${put_stat:-n/a}; get: ${get_stat:-n/a}."
	fi

	wp_c=$(vals weft_put 5 | med)
	wg_c=$(vals weft_get 5 | med)
	ch=$(vals chain 3 | med)
	others_max=$(awk -F '\t' '$1 != "perf" && $6 != "" { print $6 }' "$wd/rows" | maxv)
	body="$wd/one.md"
	cat > "$body" << MD
## Encrypted storage: store.put and store.get on one core, against the chain limit and restic (issue 15)

A one-node committee ("dag"), weftd pinned to CPU $CPU (\`taskset -c $CPU\`), one client (weft-cli, not
pinned, idle while it waits); \`weft-cli store put FILE -q\` of $SIZE_MIB MiB of random data (default
options: random mode, k = 1 of n = 1, average chunk 1 MiB), then \`weft-cli store get ID OUT -q\` (the
daemon decrypts, checks and writes OUT, fsyncs it and renames it).  Beside it, in the same rounds: the
chain limit (tests/bench/store_chain.c, $CHAIN_MIB MiB in memory, pinned to CPU $CPU; see the section
above for what it is) and restic $(restic version | awk '{ print $2 }') (Debian's package):
\`taskset -c $CPU restic backup FILE\` to a fresh local repository (format 2) and
\`taskset -c $CPU restic restore latest --target DIR\`, once with its default compression ("auto": zstd;
random data does not compress) and once with \`--compression off\` (the same work as weft: chunk,
encrypt, authenticate).  restic restore does not fsync what it wrote; weft's get does, so the restic
restore rows include an fsync of the restored file, timed from the same start (without it: the
line below the table).  The source file, the committee's databases, the repository and
the outputs are all on $(fs_of "$wd") ($fstype); the source file is in the page cache for every run.
$RUNS rounds, interleaved (round 1: chain, weft, restic, restic off; round 2 the reverse; ...), a fresh
committee and a fresh repository each round; median (range in brackets) over the rounds; ratios
are taken round by round, then the median.  MB = 10^6 bytes.

- wall: the file's size over the client's wall time (weft-cli or restic from start to exit);
- reply: over the \`seconds\` of weftd's reply (the job's own time, from the request to the reply);
- per CPU second: over the CPU time (user + system) of weftd (from /proc/PID/stat) or of restic
  (its process, all threads): what the code does with a core, whatever else the machine ran;
- others: cores busy with other processes meanwhile (from /proc/stat), the noise.

| measurement (one core) | wall: MB/s | reply: MB/s | per CPU second: MB/s | others (cores) |
|---|---|---|---|---|
| chain limit (CDC + AEAD + BLAKE2b Merkle) | $(cell chain 3) | | $(cell chain 5) | $(vals chain 6 | maxv) |
| **weft store.put** | **$(cell weft_put 3)** | $(cell weft_put 4) | $(cell weft_put 5) | $(vals weft_put 6 | maxv) |
| **weft store.get** | **$(cell weft_get 3)** | $(cell weft_get 4) | $(cell weft_get 5) | $(vals weft_get 6 | maxv) |
| restic backup (compression auto) | $(cell restic_backup 3) | | $(cell restic_backup 5) | $(vals restic_backup 6 | maxv) |
| restic restore + fsync (auto) | $(cell restic_restore 3) | | $(cell restic_restore 5) | $(vals restic_restore 6 | maxv) |
| restic backup --compression off | $(cell restic_off_backup 3) | | $(cell restic_off_backup 5) | $(vals restic_off_backup 6 | maxv) |
| restic restore + fsync (off) | $(cell restic_off_restore 3) | | $(cell restic_off_restore 5) | $(vals restic_off_restore 6 | maxv) |

weftd was on a CPU for $(oncpu weft_put)% of the put's wall time and $(oncpu weft_get)% of the get's (CPU
seconds over wall seconds, median): the rest it was off the CPU, waiting (fsync, mostly; a CPU profile
below does not see that time).  restic backup: $(oncpu restic_backup)%, restore + fsync: $(oncpu restic_restore)%.
restic restore without the fsync: $(cell restic_restore_nosync 3) MB/s (auto), $(cell restic_off_restore_nosync 3) MB/s (off).
CPU seconds per GB (medians): weft put $(calc "1000 / $wp_c" | sed 's/\(\.[0-9]\)[0-9]*/\1/'), get $(calc "1000 / $wg_c" | sed 's/\(\.[0-9]\)[0-9]*/\1/'); restic backup $(calc "1000 / $(vals restic_backup 5 | med)" | sed 's/\(\.[0-9]\)[0-9]*/\1/'), restore $(calc "1000 / $(vals restic_restore 5 | med)" | sed 's/\(\.[0-9]\)[0-9]*/\1/').

| ratio (median of the rounds' ratios, range) | wall | per CPU second | target | met (wall / CPU) |
|---|---|---|---|---|
| put / chain limit | $(rcell weft_put 3 chain 3) | $(rcell weft_put 5 chain 5) | >= 0.70 | $(met weft_put 3 chain 3 0.70) / $(met weft_put 5 chain 5 0.70) |
| get / chain limit | $(rcell weft_get 3 chain 3) | $(rcell weft_get 5 chain 5) | >= 0.70 | $(met weft_get 3 chain 3 0.70) / $(met weft_get 5 chain 5 0.70) |
| put / restic backup | $(rcell weft_put 3 restic_backup 3) | $(rcell weft_put 5 restic_backup 5) | >= 2.5 | $(met weft_put 3 restic_backup 3 2.5) / $(met weft_put 5 restic_backup 5 2.5) |
| get / restic restore + fsync | $(rcell weft_get 3 restic_restore 3) | $(rcell weft_get 5 restic_restore 5) | >= 2.5 | $(met weft_get 3 restic_restore 3 2.5) / $(met weft_get 5 restic_restore 5 2.5) |
| put / restic backup, compression off | $(rcell weft_put 3 restic_off_backup 3) | $(rcell weft_put 5 restic_off_backup 5) | | |
| get / restic restore + fsync, compression off | $(rcell weft_get 3 restic_off_restore 3) | $(rcell weft_get 5 restic_off_restore 5) | | |

weftd's write_bytes (/proc/PID/io: what it dirtied for the disk, LMDB pages, meta pages and
OUT) per round: put $(awk '{ printf "%s%.2f", (NR > 1 ? " / " : ""), $1 / 1e9 }' "$wd/one_io") GB, get
$(awk '{ printf "%s%.2f", (NR > 1 ? " / " : ""), $2 / 1e9 }' "$wd/one_io") GB, for a $(calc "$SIZE_MIB * 1048576 / 1e9" | sed 's/\(\.[0-9][0-9]\)[0-9]*/\1/') GB file.
Stored: weft's chunk store holds $one_share bytes of shares for the $one_size-byte file (the LMDB file
is $one_du bytes on disk); restic's repository is $restic_repo bytes (auto) and $restic_off_repo bytes (off).
Other processes kept up to ${others_max:-0} cores busy during some measurements (the "others" column;
before each the script waited up to $QUIET_WAIT s for a quiet machine).

### Where the time goes on one core

$prof_text

Machine: $machine; scheduling: $prio.
Command: \`PARTS=one sh tests/bench/store_put.sh\` (SIZE_MIB=$SIZE_MIB RUNS=$RUNS CHAIN_MIB=$CHAIN_MIB CPU=$CPU; $today, commit $commit).

MD
	if [ "$WRITE" = 1 ]; then bench_write_section store-put "$body"; else cat "$body"; fi
	rm -f "$wd/data"
fi

# =====================================================================
# dedup
# =====================================================================
if has dedup; then
	: > "$wd/rows"
	rows="$wd/dedup.rows"
	: > "$rows"
	: > "$wd/dedup.disk"
	: > "$wd/dedup.pairs"
	# tarball REV OUT: the tree at REV, unpacked and tarred again in name
	# order with every file's time and owner fixed (git archive writes the
	# commit's time into every header, so no two versions share a header).
	tarball() {
		rm -rf "$wd/tree"
		mkdir "$wd/tree"
		git archive --format=tar "$1" | tar -x -C "$wd/tree"
		tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$2" -C "$wd/tree" .
		rm -rf "$wd/tree"
	}
	# weft_dedup PAIR LABEL V1 V2 ARGS...
	weft_dedup() {
		w_pair=$1 w_label=$2 f1=$3 f2=$4
		shift 4
		one_start
		one_put "$f1" 1 dedup "$@"
		a_b=$(one_bytes) a_c=$(one_cids)
		one_put "$f2" 2 dedup "$@"
		b_ch=$(jnum chunks "$wd/reply") b_pl=$(jnum placed "$wd/reply") b_dd=$(jnum deduplicated "$wd/reply")
		b_b=$(one_bytes) b_c=$(one_cids)
		one_put "$f2" 3 dedup "$@"
		c_b=$(one_bytes)
		one_stop
		printf '| %s | %s | %s B, %s | %s (%s new; reply: placed %s, deduplicated %s) | %s B (%s) | %s B, %s | %s B |\n' \
			"$w_pair" "$w_label" "$a_b" "$a_c" "$b_ch" "$((b_c - a_c))" "$b_pl" "$b_dd" "$((b_b - a_b))" \
			"$(calc "100 * ($b_b - $a_b) / $(stat -c %s "$f2")" | awk '{ printf "%.0f%%", $1 }')" "$b_b" "$b_c" "$((c_b - b_b))" >> "$rows"
	}
	# restic_dedup PAIR LABEL V1 V2 COMPRESSION
	restic_dedup() {
		restic_init
		restic_backup "$3" 1 dedup "$5"
		rs stats --json --mode raw-data > "$wd/st.json" 2> /dev/null
		a_b=$(bench_jget "$(cat "$wd/st.json")" total_size)
		a_c=$(bench_jget "$(cat "$wd/st.json")" total_blob_count)
		a_disk=$(du -sb "$wd/repo" | cut -f1)
		restic_backup "$4" 2 dedup "$5"
		b_new=$(bench_jget "$(cat "$wd/rb.summary")" data_blobs)
		rs stats --json --mode raw-data > "$wd/st.json" 2> /dev/null
		b_b=$(bench_jget "$(cat "$wd/st.json")" total_size)
		b_c=$(bench_jget "$(cat "$wd/st.json")" total_blob_count)
		b_disk=$(du -sb "$wd/repo" | cut -f1)
		restic_backup "$4" 3 dedup "$5"
		rs stats --json --mode raw-data > "$wd/st.json" 2> /dev/null
		c_b=$(bench_jget "$(cat "$wd/st.json")" total_size)
		printf '| %s | %s | %s B, %s | %s new data blobs | %s B (%s) | %s B, %s | %s B |\n' "$1" "$2" "$a_b" "$a_c" "$b_new" \
			"$((b_b - a_b))" "$(calc "100 * ($b_b - $a_b) / $(stat -c %s "$4")" | awk '{ printf "%.0f%%", $1 }')" \
			"$b_b" "$b_c" "$((c_b - b_b))" >> "$rows"
		echo "$1, $2: repository on disk $a_disk bytes after v1, $b_disk after v2" >> "$wd/dedup.disk"
		rm -rf "$wd/repo" "$RCACHE"
	}
	for pair in $DEDUP_PAIRS; do
		old=${pair%%:*} new=${pair#*:}
		tarball "$old" "$wd/v1.tar"
		tarball "$new" "$wd/v2.tar"
		plabel="$old -> $new"
		echo "- $plabel: v1 $(git rev-parse --short "$old"), $(stat -c %s "$wd/v1.tar") bytes; v2 $(git rev-parse --short "$new"), $(stat -c %s "$wd/v2.tar") bytes ($(git diff --shortstat "$old" "$new" | sed 's/^ *//'))" >> "$wd/dedup.pairs"
		weft_dedup "$plabel" "weft, convergent, avg 1 MiB (default)" "$wd/v1.tar" "$wd/v2.tar" --mode convergent
		weft_dedup "$plabel" "weft, convergent, avg 64 KiB" "$wd/v1.tar" "$wd/v2.tar" --mode convergent --avg 64KiB
		weft_dedup "$plabel" "weft, random, avg 1 MiB" "$wd/v1.tar" "$wd/v2.tar" --mode random
		restic_dedup "$plabel" "restic, compression auto (default)" "$wd/v1.tar" "$wd/v2.tar" auto
		restic_dedup "$plabel" "restic, --compression off" "$wd/v1.tar" "$wd/v2.tar" off
		if [ "$pair" = "$DEDUP_PLAIN" ]; then
			git archive --format=tar "$old" > "$wd/r1.tar"
			git archive --format=tar "$new" > "$wd/r2.tar"
			weft_dedup "$plabel, plain git archive" "weft, convergent, avg 64 KiB" "$wd/r1.tar" "$wd/r2.tar" --mode convergent --avg 64KiB
			restic_dedup "$plabel, plain git archive" "restic, --compression off" "$wd/r1.tar" "$wd/r2.tar" off
			rm -f "$wd/r1.tar" "$wd/r2.tar"
		fi
		rm -f "$wd/v1.tar" "$wd/v2.tar"
	done
	body="$wd/dedup.md"
	cat > "$body" << MD
## Encrypted storage: deduplication of two versions of a source tree (issue 15)

This repository at two commits (v1, v2), each tree unpacked from \`git archive\` and tarred again
in name order with every file's time and owner fixed (\`tar --sort=name --mtime=@0 --owner=0
--group=0\`), stored one after the other, then v2 once more: by \`weft-cli store put\` on a fresh
one-node committee per row (weft deduplicates equal chunks of one owner in convergent mode; random
mode for contrast), and by \`restic backup\` into a fresh repository per row.  weft's bytes are the
chunk store's share bytes and its chunks the chunk ids held (\`store ls\`: "store" "bytes" and
"cids"; k = 1 of n = 1, so one share per chunk: ciphertext, tag and header); restic's are
\`restic stats --mode raw-data\` "total_size" and "total_blob_count" (pack contents, compressed when
compression is on, data and tree blobs) and the backup summary's new data blobs.

$(cat "$wd/dedup.pairs")

| v1 -> v2 | store | after v1: bytes, chunks | v2: chunks (new) | v2 added: bytes (of v2's size) | after v2: bytes, chunks | v2 again: added |
|---|---|---|---|---|---|---|
$(cat "$rows")

$(sed 's/^/- /' "$wd/dedup.disk")

A chunk is stored again when any byte of it changed, so what v2 adds depends on how the
changes spread over the archive: files of a few KiB, changed and unchanged, alternate in name
order, and a 1 MiB chunk (weft's default average; restic's chunker: 512 KiB to 8 MiB, 1 MiB on
average) holds hundreds of them.  The 64 KiB row shows a finer grain.  "v2 again" adds nothing in
convergent mode and in restic: equal chunks are found.  The "plain git archive" rows use
\`git archive\`'s own tarballs (for $DEDUP_PLAIN), whose every file header carries the commit's time.  restic's compression (zstd) shrinks source text by itself, which weft does not
do.  weftd's put reply counts a chunk as "deduplicated" when the service had kept it before (it
is placed again all the same, so that every holder references it under the new file), else as
"placed"; the chunk store's own figures above are the ones to read.

Machine: $machine.
Command: \`PARTS=dedup sh tests/bench/store_put.sh\` (DEDUP_PAIRS="$DEDUP_PAIRS" DEDUP_PLAIN=$DEDUP_PLAIN; $today, commit $commit).

MD
	if [ "$WRITE" = 1 ]; then bench_write_section store-dedup "$body"; else cat "$body"; fi
fi

# =====================================================================
# 4-node committee
# =====================================================================
if has net; then
	: > "$wd/rows"
	: > "$wd/netcpu"
	head -c "$((NET_MIB * 1048576))" /dev/urandom > "$wd/ndata"
	BASE_PORT=$((BASE_PORT + 10))
	# net_start: a fresh 4-node committee in $committee, the daemons' pids in
	# $pids, every node connected to the other three (as lib.sh's
	# bench_committee_start, with this run's copy of the programs).
	net_start() {
		committee=$(mktemp -d "$wd/net.XXXXXX")
		$CLI genesis --nodes 4 --out "$committee" --protocol dag --base-port "$BASE_PORT" \
			--chain-id weft-bench-store > /dev/null
		pids=""
		for d in "$committee"/node*; do
			"$WEFTD" --datadir "$d" > "$d/weftd.stderr" 2>&1 &
			pids="$pids $!"
		done
		for d in "$committee"/node*; do
			i=0
			until $CLI --datadir "$d" --timeout 2 status 2> /dev/null | grep -q '"connected": 3'; do
				i=$((i + 1))
				if [ $i -gt 300 ]; then
					echo "store_put: $d did not connect to its peers in 30 s" >&2
					tail -n 20 "$d/weftd.log" "$d/weftd.stderr" >&2 2> /dev/null || true
					exit 1
				fi
				sleep 0.1
			done
		done
		sleep 1
	}
	# net_round RUN [perf]
	net_round() {
		r=$1
		mode=${2:-}
		sfx=""
		[ "$mode" = perf ] && sfx=_perf
		net_start
		# shellcheck disable=SC2086 # a list of pids
		set -- $pids
		p0=$1 p1=$2 p2=$3 p3=$4
		n0=$committee/node0 n3=$committee/node3
		bench_quiet store_put
		if [ "$mode" = perf ]; then
			perf record -q -e cpu-clock -F 199 --call-graph dwarf,16384 -p "$p0,$p1,$p2,$p3" -o "$wd/nput.perf" > /dev/null 2>&1 &
			prec=$!
			sleep 1
		fi
		# put on node0
		cc0=$(pcpu "$p0" "$p1" "$p2" "$p3")
		for p in $p0 $p1 $p2 $p3; do pcpu "$p"; done > "$wd/c0"
		mark
		$CLI --datadir "$n0" store put "$wd/ndata" -q > "$wd/reply" 2> "$wd/reply.err" ||
			{ echo "store_put: 4-node put failed" >&2; cat "$wd/reply" "$wd/reply.err" >&2; tail -n 20 "$n0/weftd.log" >&2; exit 1; }
		done_row "$r" "net_put$sfx" "$(stat -c %s "$wd/ndata")" "$cc0" "$(pcpu "$p0" "$p1" "$p2" "$p3")" "$(jnum seconds "$wd/reply")"
		for p in $p0 $p1 $p2 $p3; do pcpu "$p"; done | paste "$wd/c0" - | awk -v r="$r" '{ printf "%s%s", (NR > 1 ? "\t" : r "\tput\t"), $2 - $1 } END { print "" }' >> "$wd/netcpu"
		# node3 did not put the file: it reads it with the capability.
		id=$(jnum capability "$wd/reply")
		k=$(jnum k "$wd/reply")
		nn=$(jnum n "$wd/reply")
		nchunks=$(jnum chunks "$wd/reply")
		if [ "$mode" = perf ]; then kill -INT "$prec" 2> /dev/null || true; wait "$prec" 2> /dev/null || true; fi
		# get on node3, everyone up
		if [ "$mode" != perf ]; then
			bench_quiet store_put
			cc0=$(pcpu "$p0" "$p1" "$p2" "$p3")
			for p in $p0 $p1 $p2 $p3; do pcpu "$p"; done > "$wd/c0"
			mark
			$CLI --datadir "$n3" store get "$id" "$wd/nout" -q > "$wd/reply" 2> "$wd/reply.err" ||
				{ echo "store_put: 4-node get failed" >&2; cat "$wd/reply" "$wd/reply.err" >&2; exit 1; }
			done_row "$r" net_get "$(jnum bytes "$wd/reply")" "$cc0" "$(pcpu "$p0" "$p1" "$p2" "$p3")" "$(jnum seconds "$wd/reply")"
			for p in $p0 $p1 $p2 $p3; do pcpu "$p"; done | paste "$wd/c0" - | awk -v r="$r" '{ printf "%s%s", (NR > 1 ? "\t" : r "\tget\t"), $2 - $1 } END { print "" }' >> "$wd/netcpu"
			cmp -s "$wd/ndata" "$wd/nout" || { echo "store_put: node3 got something else back" >&2; exit 1; }
			rm -f "$wd/nout"
		fi
		# get on node3, node1 killed KILL_AFTER s after it starts
		bench_quiet store_put
		if [ "$mode" = perf ]; then
			perf record -q -e cpu-clock -F 199 --call-graph dwarf,16384 -p "$p0,$p1,$p2,$p3" -o "$wd/nget.perf" > /dev/null 2>&1 &
			prec=$!
			sleep 1
		fi
		cc0=$(pcpu "$p0" "$p1" "$p2" "$p3")
		for p in $p0 $p1 $p2 $p3; do pcpu "$p"; done > "$wd/c0"
		(sleep "$KILL_AFTER"; pcpu "$p1" > "$wd/c1.killed"; kill -KILL "$p1") &
		killer=$!
		mark
		get_ok=1
		$CLI --datadir "$n3" store get "$id" "$wd/nout" -q > "$wd/reply" 2> "$wd/reply.err" || get_ok=0
		if [ -s "$wd/c1.killed" ]; then
			when=during
			c1k=$(cat "$wd/c1.killed")
		else
			when=after
			c1k=$(pcpu "$p1")
		fi
		if [ "$get_ok" = 1 ]; then
			after=$(calc "$(pcpu "$p0" "$p2" "$p3") + $c1k")
			done_row "$r" "net_getkill$sfx" "$(jnum bytes "$wd/reply")" "$cc0" "$after" "$(jnum seconds "$wd/reply")"
			{ pcpu "$p0"; echo "$c1k"; pcpu "$p2"; pcpu "$p3"; } | paste "$wd/c0" - |
				awk -v r="$r" '{ printf "%s%s", (NR > 1 ? "\t" : r "\tgetkill\t"), $2 - $1 } END { print "" }' >> "$wd/netcpu"
		fi
		wait "$killer" 2> /dev/null || true
		rm -f "$wd/c1.killed"
		echo "$r killed $when the get" >> "$wd/netwhen"
		if [ "$get_ok" = 1 ]; then
			cmp -s "$wd/ndata" "$wd/nout" && echo "$r ok" >> "$wd/netcmp" || echo "$r differs" >> "$wd/netcmp"
		else
			echo "store_put: the get with node1 killed failed:" >&2
			cat "$wd/reply" "$wd/reply.err" >&2
			printf '%s\tnet_getkill_failed\t%s\n' "$r" "$(tail -n 1 "$wd/reply.err" | tr '\t' ' ')" >> "$wd/rows"
			grep -h ' warn \| error ' "$n3/weftd.log" | tail -n 5 | sed "s|^|round $r, node3: |" >> "$wd/netwarn" || true
		fi
		if [ "$mode" = perf ]; then kill -INT "$prec" 2> /dev/null || true; wait "$prec" 2> /dev/null || true; fi
		rm -f "$wd/nout"
		du -sb "$committee"/node0/chunks "$committee"/node3/chunks | awk '{ printf "%s ", $1 }' > "$wd/netdisk"
		bench_committee_stop
	}
	# net_bytes_out DATADIR: what the node has sent to its peers (all links).
	net_bytes_out() {
		$CLI --datadir "$1" peers | sed -n 's/^ *"bytes_out": \([0-9]*\),\{0,1\}$/\1/p' | awk '{ s += $1 } END { print s + 0 }'
	}
	# net_reput: the file put twice in convergent mode on a fresh committee;
	# "first|again SECONDS BYTES_OUT PLACED DEDUPLICATED" lines in $wd/reput.
	net_reput() {
		net_start
		n0=$committee/node0
		for what in first again; do
			b0=$(net_bytes_out "$n0")
			$CLI --datadir "$n0" store put "$wd/ndata" --mode convergent -q > "$wd/reply" 2> "$wd/reply.err" ||
				{ echo "store_put: convergent put failed" >&2; cat "$wd/reply" "$wd/reply.err" >&2; exit 1; }
			sleep 1 # the last ACKs' links settle
			echo "$what $(jnum seconds "$wd/reply") $(($(net_bytes_out "$n0") - b0)) $(jnum placed "$wd/reply") $(jnum deduplicated "$wd/reply")" >> "$wd/reput"
		done
		bench_committee_stop
	}
	: > "$wd/netcmp"
	: > "$wd/netwarn"
	: > "$wd/netwhen"
	: > "$wd/reput"
	r=1
	while [ "$r" -le "$NET_RUNS" ]; do net_round "$r"; r=$((r + 1)); done
	net_reput

	net_prof="(No profile: perf is not available here, or PERF=0: CPU seconds per daemon above, from /proc.)"
	if [ "$perf_ok" = 1 ]; then
		net_round perf perf
		for ph in nput nget; do
			if [ -s "$wd/$ph.perf" ]; then
				perf script -i "$wd/$ph.perf" -F comm,pid,ip,sym,dso 2> /dev/null | perf_classify > "$wd/$ph.prof"
			else
				printf 'TOTAL\t0\n' > "$wd/$ph.prof"
			fi
			rm -f "$wd/$ph.perf"
		done
		# agg FILE: the three shares the issue asks for.
		agg() {
			printf 'crypto (libsodium, all uses) %s%%; coding (ISA-L, weft_rs) %s%%; network (secure-channel AEAD, kernel sockets, libevent, net/ code) %s%%' \
				"$(prof_share "$1" '^crypto')" "$(prof_share "$1" '^coding')" \
				"$(prof_share "$1" 'secure channel|^kernel: sockets|^network')"
		}
		net_prof="\`perf record -e cpu-clock -F 199 --call-graph dwarf\` on the four daemons during one more put and one
more get with node1 killed (profiled runs, not in the table: put $(vals net_put_perf 3 | med) MB/s, get $(vals net_getkill_perf 3 | med) MB/s; $(grep '^TOTAL' "$wd/nput.prof" | cut -f2) and
$(grep '^TOTAL' "$wd/nget.prof" | cut -f2) samples).  Shares of all four daemons' samples:

- put: $(agg "$wd/nput.prof");
- get, node1 killed: $(agg "$wd/nget.prof").

The secure channel's ChaCha20-Poly1305 counts in both crypto and network.  In detail:

| category | put | get (node1 killed) |
|---|---|---|
$(grep '^CAT' "$wd/nput.prof" "$wd/nget.prof" | sed 's/^[^:]*\/\([a-z]*\)\.prof:/\1	/' | awk -F '\t' '
	{ v[$4, $1] = $3; c[$4] = 1; s[$4] += $3 }
	END { for (k in c) if (s[k] >= 0.1) printf "%s\t%s\n", s[k], "| " k " | " ((k SUBSEP "nput") in v ? v[k, "nput"] "%" : "-") " | " ((k SUBSEP "nget") in v ? v[k, "nget"] "%" : "-") " |" }' |
	sort -t "$(printf '\t')" -k1 -rn | cut -f2)

Top functions by own samples, put:

| share | library: function |
|---|---|
$(prof_rows "$wd/nput.prof" SELF 12)"
	fi
	# per-daemon CPU seconds, medians over the rounds
	cpu_line() {
		awk -F '\t' -v p="$1" '$1 != "perf" && $2 == p' "$wd/netcpu" | sort -t "$(printf '\t')" -k1 |
			awk -F '\t' '{ for (i = 3; i <= 6; i++) v[i - 3, NR] = $i; n = NR }
				END { for (i = 0; i < 4; i++) { m = ""; for (j = 1; j <= n; j++) m = m (j > 1 ? "/" : "") sprintf("%.2f", v[i, j]); printf "%snode%d %s", (i ? ", " : ""), i, m } }'
	}
	killed_ok=$(grep -c ' ok$' "$wd/netcmp" || true)
	killed_tries=$(wc -l < "$wd/netcmp")
	body="$wd/net.md"
	cat > "$body" << MD
## Encrypted storage: a 4-node committee on this machine, with a node killed during a get (issue 15)

4 weftd on 127.0.0.1 ("dag", \`weft-cli genesis --nodes 4 --protocol dag\`; each node's databases on
$(fs_of "$wd") ($fstype); the daemons and the client share this machine's $(nproc) cores, not pinned).
\`weft-cli store put FILE -q\` of $NET_MIB MiB of random data on node0 (default options: random mode,
k = ${k:-2} of n = ${nn:-4}, average chunk 1 MiB, $nchunks chunks), then \`store get ID OUT -q\` on node3 with
every node up, then again on node3 while node1 is killed with SIGKILL $KILL_AFTER s after the get
starts (the get must take its shares from node0, node2 and node3 alone).  $NET_RUNS rounds, a fresh
committee each; median (range).  Aggregate MB/s: the file's size over the time (wall: weft-cli's
run; reply: weftd's \`seconds\`); per CPU second: over the CPU time of all the daemons together.

| measurement | wall: MB/s | reply: MB/s | per daemon-CPU second: MB/s | daemons' CPU (s) | others (cores) |
|---|---|---|---|---|---|
| put on node0 | **$(cell net_put 3)** | $(cell net_put 4) | $(cell net_put 5) | $(vals net_put 8 | med1) | $(vals net_put 6 | maxv) |
| get on node3, all up | **$(cell net_get 3)** | $(cell net_get 4) | $(cell net_get 5) | $(vals net_get 8 | med1) | $(vals net_get 6 | maxv) |
| get on node3, node1 killed | **$(cell net_getkill 3)** | $(cell net_getkill 4) | $(cell net_getkill 5) | $(vals net_getkill 8 | med1) | $(vals net_getkill 6 | maxv) |

Gets with node1 killed that returned the file intact: $killed_ok of $killed_tries (with the profiled
round); node1 was killed during the get in $(grep -c ' during ' "$wd/netwhen" || true) of $(wc -l < "$wd/netwhen") rounds.
$(if [ -s "$wd/netwarn" ]; then echo; echo '```'; cat "$wd/netwarn"; echo '```'; fi)
CPU seconds per daemon (round by round, "/"-separated): put: $(cpu_line put); get, all up:
$(cpu_line get); get, node1 killed (node1's up to its kill): $(cpu_line getkill).
Stored after a round: node0 and node3 chunk stores $(cat "$wd/netdisk")bytes on disk (LMDB files).

The same file put twice in convergent mode on a fresh committee (\`store put FILE --mode
convergent\`): node0 sent its peers $(awk '$1 == "first" { print $3 }' "$wd/reput") bytes for the first put
($(awk '$1 == "first" { printf "%.2f", $3 / (NET_MIB * 1048576) }' NET_MIB="$NET_MIB" "$wd/reput") times the file; reply: placed $(awk '$1 == "first" { print $4 }' "$wd/reput"), deduplicated $(awk '$1 == "first" { print $5 }' "$wd/reput"), $(awk '$1 == "first" { printf "%.2f", $2 }' "$wd/reput") s)
and $(awk '$1 == "again" { print $3 }' "$wd/reput") bytes for the second (placed $(awk '$1 == "again" { print $4 }' "$wd/reput"), deduplicated $(awk '$1 == "again" { print $5 }' "$wd/reput"),
$(awk '$1 == "again" { printf "%.2f", $2 }' "$wd/reput") s): a chunk kept before is placed again, so that every holder references it under the
new file, but by reference, without its shares (docs/protocols/store.md).

### Where the daemons' time goes

$net_prof

Machine: $machine; scheduling: $prio.
Command: \`PARTS=net sh tests/bench/store_put.sh\` (NET_MIB=$NET_MIB NET_RUNS=$NET_RUNS; $today, commit $commit).

MD
	if [ "$WRITE" = 1 ]; then bench_write_section store-net "$body"; else cat "$body"; fi
fi

echo "store_put: done in $(($(date +%s) - started)) s" >&2
