#!/bin/sh
# dag_bench.sh - the DAG consensus benchmark, reported the way Narwhal's
# harness does (nodes, rate, transaction size, duration; consensus TPS,
# end-to-end TPS, latency p50 / p99): a committee of NODES weftd (default 4)
# on 127.0.0.1 running the "dag" protocol, all sharing this machine's cores,
# and one client process (tests/bench/dag_bench.c) submitting SIZE-byte
# transactions (default 512) at a fixed total rate through the nodes' RPC
# sockets (tx.submit_batch, one connection per node, a batch every 5 ms)
# and timing each one from its submission to the proto.deliver notification
# of its commit at the node it was submitted to (tx.subscribe).
#
# For each rate in RATES a fresh committee is started (new keys, empty
# databases under DATA, default /tmp: the disk), loaded for WARMUP +
# DURATION seconds (measured: the last DURATION), drained for at most DRAIN
# seconds, and stopped; then the same for TMPFS_RATES with the databases on
# /dev/shm (no disk); then one more run at PROFILE_RATE (on PROFILE_DATA)
# with `perf record` on the daemons, when perf works here, for "where the
# time goes".  Writes its section of docs/performance.md (WRITE=0: prints
# it instead).  Never part of make check: a timing is not an assertion.
# One run of the script takes about 4 minutes with the defaults.
#
# PRIORITY=1 (the default) runs everything in a new session whose
# scheduler autogroup gets nice -10: with autogroups (Linux's default for
# desktop and many VM kernels) every session gets an equal share of the
# CPUs whatever its processes' nice values, so on a machine other work
# keeps busy the committee would otherwise get a fraction of the cores and
# the figures would measure that.  PRIORITY=0 leaves scheduling alone.
#
# Usage: sh tests/bench/dag_bench.sh        (builds what it needs)
#   RATES="50000 100000" TMPFS_RATES= DURATION=10 sh tests/bench/dag_bench.sh
#   PARAMS='"batch_bytes": 1048576, "round_min_ms": 50'   (genesis params of the dag)
#   SUBSCRIBE=one   (latency at node 0 only: a quarter of the notifications)
#
# The C client is built here rather than by the Makefile, with the
# Makefile's flags, against build/libweft.a (as net_throughput.sh does).
set -eu
cd "$(dirname "$0")/../.."

PRIORITY=${PRIORITY:-1}
if [ "$PRIORITY" = 1 ] && [ -z "${DAG_BENCH_SESSION:-}" ] && command -v setsid > /dev/null 2>&1; then
	DAG_BENCH_SESSION=1 exec setsid --wait sh "$0" "$@"
fi
prio="none"
if [ "$PRIORITY" = 1 ] && [ -w /proc/self/autogroup ] && echo -10 > /proc/self/autogroup 2> /dev/null; then
	prio="autogroup nice -10"
fi

. tests/bench/lib.sh

NODES=${NODES:-4}
RATES=${RATES-"10000 20000 30000 50000 100000"}
TMPFS_RATES=${TMPFS_RATES-"30000 50000"}
SIZE=${SIZE:-512}
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-5}
DRAIN=${DRAIN:-5}
SUBSCRIBE=${SUBSCRIBE:-all}
PROFILE_RATE=${PROFILE_RATE-50000}
PROFILE_DATA=${PROFILE_DATA:-/dev/shm}
PROFILE_SECONDS=${PROFILE_SECONDS:-5}
PARAMS=${PARAMS:-}
DATA=${DATA:-/tmp}
QUIET_WAIT=${QUIET_WAIT:-3}
BASE_PORT=${BASE_PORT:-$((20000 + $$ % 20000))}
WRITE=${WRITE:-1}
PKGS="libevent libsodium lmdb libsecp256k1 msgpack libisal jansson inih"
BIN=build/bench/dag_bench

make build/bin/weftd build/bin/weft-cli build/libweft.a >&2
mkdir -p build/bench
# shellcheck disable=SC2046 # word splitting of pkg-config output is intended
${CC:-cc} -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -O2 -g -Iinclude $(pkg-config --cflags $PKGS) \
	tests/bench/dag_bench.c build/libweft.a $(pkg-config --libs $PKGS) -lm -o "$BIN"

tmp=$(mktemp -d /tmp/dagb.XXXXXX)
committee=""
pids=""
trap 'bench_committee_stop; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

# jarr LINE KEY: the members of a top-level array, space separated.
jarr() {
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\[\([^]]*\)\].*/\1/p" | tr ',' ' '
}

# others LINE: CPU (cores) the rest of the machine used over the window:
# machine busy minus the daemons and the client.
others() {
	awk -v b="$(bench_jget "$1" machine_busy)" -v n="$(bench_jget "$1" nodes_cpu)" -v c="$(bench_jget "$1" client_cpu)" \
		'BEGIN { o = b - n - c; printf "%.2f", o < 0 ? 0 : o }'
}

socks() {
	for d in "$committee"/node*; do printf -- '--sock %s/rpc.sock ' "$d"; done
}

# run RATE DIR LABEL [perf]: one committee with its databases under DIR, one
# client run; its JSON line (with "storage":LABEL) appended to
# $tmp/results, the daemons' warnings to $tmp/warnings.
run() {
	rate=$1
	bench_quiet dag_bench
	bench_committee_start "$2"
	if [ "${4:-}" = perf ]; then
		(sleep "$((WARMUP + 2))" && perf record -q -F 499 --call-graph dwarf,16384 -o "$tmp/perf.data" \
			-p "$(echo $pids | tr ' ' ',')" -- sleep "$PROFILE_SECONDS" > /dev/null 2>&1) &
		perf_pid=$!
	fi
	# shellcheck disable=SC2046 # socks is a list of arguments
	if ! "$BIN" $(socks) --rate "$rate" --size "$SIZE" --duration "$DURATION" --warmup "$WARMUP" \
		--drain "$DRAIN" --subscribe "$SUBSCRIBE" > "$tmp/last" 2> "$tmp/last.err"; then
		echo "dag_bench: the client failed at $rate tx/s:" >&2
		cat "$tmp/last.err" >&2
		printf '{"rate":%s,"failed":"%s"}\n' "$rate" "$(tail -n 1 "$tmp/last.err" | tr -d '"\\')" > "$tmp/last"
	fi
	if [ "${4:-}" = perf ]; then wait "$perf_pid" 2> /dev/null || true; fi
	sed -i "s|^{|{\"storage\":\"$3\",|" "$tmp/last"
	cat "$tmp/last" >&2
	if [ "${4:-}" = perf ]; then
		cp "$tmp/last" "$tmp/perf.json"
	else
		cat "$tmp/last" >> "$tmp/results"
	fi
	grep -h ' warn \| error ' "$committee"/node*/weftd.log 2> /dev/null |
		sed 's/^[^ ]* //' | sed "s|^|$3, $rate tx/s: |" >> "$tmp/warnings" || true
	bench_committee_stop
}

start=$(date +%s)
: > "$tmp/results"
: > "$tmp/warnings"
for r in $RATES; do run "$r" "$DATA" "disk"; done
for r in $TMPFS_RATES; do run "$r" /dev/shm tmpfs; done

# ---- where the time goes ----
profile="(No profile: perf is not available here, or PROFILE_RATE is empty.)"
if [ -n "$PROFILE_RATE" ] && command -v perf > /dev/null 2>&1 && perf stat -e task-clock true > /dev/null 2>&1; then
	plabel=$PROFILE_DATA
	[ "$PROFILE_DATA" = /dev/shm ] && plabel=tmpfs
	run "$PROFILE_RATE" "$PROFILE_DATA" "$plabel" perf
	if [ -s "$tmp/perf.data" ]; then
		perf script -i "$tmp/perf.data" -F comm,ip,sym,dso 2> /dev/null | awk '
		# Per sample: the library the leaf frame is in, and the innermost
		# weftd function on the stack (inlined frames count as the function
		# they were inlined into is in); plus, inclusive, every weftd
		# function on the stack.
		function base(d) {
			if (d ~ /kernel/) return "kernel"
			sub(/.*\//, "", d)
			if (d ~ /^libsodium/) return "libsodium"
			if (d ~ /^liblmdb/) return "LMDB"
			if (d ~ /^libc\./) return "libc"
			if (d ~ /^libevent/) return "libevent"
			return d
		}
		function flush(   i, d, leaf, inner, seen) {
			if (n == 0) return
			total++
			d = ""
			for (i = n; i >= 1; i--) { if (fd[i] != "inlined") d = fd[i]; rd[i] = d }
			for (i = 1; i <= n; i++) if (fd[i] != "inlined") break
			leaf = i <= n ? base(fd[i]) : "?"
			inner = "-"
			for (i = 1; i <= n; i++) if (rd[i] ~ /\/weftd$/) { inner = fs[i]; break }
			libs[leaf]++
			pair[leaf " | " inner]++
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
			for (l in libs) printf "LIB\t%.1f\t%s\n", 100 * libs[l] / total, l
			for (p in pair) printf "PAIR\t%.1f\t%s\n", 100 * pair[p] / total, p
			for (f in incl) printf "INCL\t%.1f\t%s\n", 100 * incl[f] / total, f
			printf "TOTAL\t%d\n", total
		}' > "$tmp/prof"
		pj=$(cat "$tmp/perf.json")
		libs=$(grep '^LIB' "$tmp/prof" | sort -t "$(printf '\t')" -k2 -rn | awk -F '\t' '$2 >= 0.5 { printf "%s%s %s%%", sep, $3, $2; sep = ", " }')
		pairs=$(grep '^PAIR' "$tmp/prof" | sort -t "$(printf '\t')" -k2 -rn | head -n 25 |
			awk -F '\t' '{ split($3, a, " \\| "); printf "| %s%% | %s | %s |\n", $2, a[1], a[2] }')
		incl=$(grep '^INCL' "$tmp/prof" | sort -t "$(printf '\t')" -k2 -rn |
			grep -E '	(conn_process|weft_rpc_tx_submit_batch|dag_on_request|dag_mempool_add|make_vertex|dag_vertex_encode|on_conn_read|weft_host_on_message|echo_on_message|on_brb_deliver|dag_vertex_decode|dag_accept|try_commit|order_vertex|weft_ledger_apply|env_deliver|weft_rpc_notify|weft_kv_put|weft_kv_del|weft_kv_commit|weft_verify|weft_sign|weft_sc_seal|weft_sc_open|peer_flush|dag_sync_on_message|dag_gc|dag_state_save|dag_txindex_set|dag_txindex_get)$' |
			awk -F '\t' '{ printf "%s%s %s%%", sep, $3, $2; sep = ", " }')
		profile="\`perf record -F 499 --call-graph dwarf\` on the four daemons for ${PROFILE_SECONDS} s of a run at
$PROFILE_RATE tx/s with the databases on $plabel ($(grep '^TOTAL' "$tmp/prof" | cut -f2) samples; that run: consensus
$(bench_jget "$pj" consensus_tps) tx/s, end-to-end $(bench_jget "$pj" e2e_tps) tx/s, p50 $(bench_jget "$pj" p50_ms) ms, daemons $(bench_jget "$pj" nodes_cpu) cores,
client $(bench_jget "$pj" client_cpu), others $(others "$pj")).

Samples by the library the CPU was in: $libs.

Samples by library and the innermost weftd function on the stack (the phase that
called into the library; \"inlined\" helpers count as the function they are inlined
into), top 25:

| share | library | weftd function |
|---|---|---|
$pairs

Inclusive share (the function anywhere on the stack; stacks the unwinder could not
follow to main are in the totals but not here): $incl.
"
	fi
fi
secs=$(($(date +%s) - start))

# ---- the section ----
table=""
while IFS= read -r line; do
	rate=$(bench_jget "$line" rate)
	st=$(bench_jget "$line" storage)
	if [ -n "$(bench_jget "$line" failed)" ]; then
		table="$table| $NODES | $rate | $SIZE B | ${DURATION} s | $st | failed: $(bench_jget "$line" failed) | | | | | | | | |
"
		continue
	fi
	cons=$(bench_jget "$line" consensus_tps)
	ncpu=$(bench_jget "$line" nodes_cpu)
	eff=$(bench_num %.0f "$cons / ($ncpu > 0 ? $ncpu : 1)")
	rps=$(jarr "$line" rounds | awk -v d="$DURATION" '{ printf "%.1f", $1 / d }')
	table="$table| $NODES | $rate | $SIZE B | ${DURATION} s | $st | **$cons** | **$(bench_jget "$line" e2e_tps)** | **$(bench_jget "$line" p50_ms)** | $(bench_jget "$line" p99_ms) | $ncpu ($(jarr "$line" node_cpu | sed 's/ /, /g')) | $(bench_jget "$line" client_cpu) / $(others "$line") | $eff | $rps | $(bench_jget "$line" sub_drops) | $(bench_jget "$line" rejected) / $(bench_jget "$line" not_sent) |
"
done < "$tmp/results"

# Per storage: the highest consensus TPS measured, and the highest rate
# still committed in full (e2e TPS within 5% of the rate) with p50 <= 500 ms.
summary=$(awk -v want=100000 '
	function get(k,   m) { m = $0; if (!sub(".*\"" k "\":\"?", "", m)) return ""; sub(/[",}].*/, "", m); return m }
	get("failed") == "" {
		st = get("storage"); c = get("consensus_tps") + 0; r = get("rate") + 0
		if (!(st in best) || c > best[st]) best[st] = c
		if (get("p50_ms") + 0 <= 500 && get("e2e_tps") + 0 >= 0.95 * r && r > ok[st]) {
			ok[st] = r; okp[st] = get("p50_ms")
		}
		if (c >= want && get("p50_ms") + 0 <= 500) met = 1
	}
	END {
		for (st in best)
			printf "- %s: at most %d committed tx/s; %s\n", st, best[st],
				ok[st] ? "the highest rate taken in full with p50 <= 500 ms: " ok[st] " tx/s (p50 " okp[st] " ms)" : "no rate taken in full with p50 <= 500 ms"
		printf "- target (>= 100,000 tx/s with p50 <= 500 ms): %s\n", met ? "met" : "**not met**"
	}' "$tmp/results")

warn=""
if [ -s "$tmp/warnings" ]; then
	warn="Daemon warnings during the runs, counted:

\`\`\`
$(sed 's/ conn=[0-9]*//; s/ buffered=[0-9]*//; s/^\([^:]*: \)[^ ]* /\1/' "$tmp/warnings" | sort | uniq -c | sort -rn | head -n 12)
\`\`\`
"
fi

body="$tmp/body.md"
cat > "$body" <<MD
## DAG consensus: throughput and latency (issue 7)

$NODES weftd on 127.0.0.1 running the "dag" protocol (genesis params: ${PARAMS:-the defaults, e.g.
batch_bytes 1 MiB, round_min_ms 50, brb echo}), each with its LMDB database on the disk
($DATA; db.no_sync off: the steps of one event-loop turn share one fsync'd LMDB transaction) or on tmpfs;
one client process, single-threaded, with a connection per node submitting $SIZE-byte
transactions with tx.submit_batch every 5 ms at a fixed total rate (open loop, split evenly
over the nodes), and a subscription per node (tx.subscribe, $SUBSCRIBE): a transaction's
latency runs from the moment its batch was handed to the socket to the proto.deliver
notification of its commit at the node it was submitted to.  Everything shares this
machine's $(nproc) cores (scheduling: $prio).  Per rate a fresh committee, ${WARMUP} s of warm-up,
then ${DURATION} s measured and at most ${DRAIN} s to drain.

- consensus TPS: committed_txs (dag.info) gained over the window, mean over the nodes;
- end-to-end TPS: transactions submitted in the window that came back committed, / window;
- latency: of those transactions, submission to commit notification (p50 / p99, ms);
- CPU: cores used over the window by the daemons (sum, then each), by the client, and by
  other processes on the machine (what /proc/stat counts busy beyond those);
- tx / CPU-s: consensus TPS per core the daemons used, the efficiency figure other load on
  the machine disturbs least (when the daemons are CPU-bound, the ceiling on $(nproc) idle cores
  is about $(nproc) times it, less the client's share);
- rounds/s: DAG rounds node 0 advanced per second of the window;
- sub drops: subscriptions the nodes cut (rpc.slow_subscriber: more notifications waiting
  than 16 MiB and than 5 s of their rate); the client subscribes again at once, but what was sent meanwhile is lost, so
  those transactions are missing from the end-to-end figures;
- rejected / not sent: transactions the nodes refused (mempool full) / the client did not
  hand over because a node stopped reading (over 32 MiB queued for it).

| nodes | rate (tx/s) | tx size | duration | storage | consensus TPS | e2e TPS | p50 (ms) | p99 (ms) | daemons CPU (cores: sum (each)) | client / others CPU | tx / CPU-s | rounds/s | sub drops | rejected / not sent |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
$table
Target: at least 100,000 committed tx/s with p50 end-to-end latency at most 500 ms.

$summary

### Where the time goes

$profile

$warn
Machine: $(bench_machine).
Command: \`sh tests/bench/dag_bench.sh\` (RATES="$RATES" TMPFS_RATES="$TMPFS_RATES" DURATION=$DURATION
WARMUP=$WARMUP SUBSCRIBE=$SUBSCRIBE PRIORITY=$PRIORITY; $(date -u +%Y-%m-%d), ${secs} s, commit $(git rev-parse --short HEAD 2> /dev/null || echo unknown)$(git diff --quiet HEAD -- src net protocols storage 2> /dev/null || echo ", with uncommitted changes to the daemon")).

MD
if [ "$WRITE" = 1 ]; then
	bench_write_section dag-bench "$body"
	echo "dag_bench: results written to docs/performance.md" >&2
else
	cat "$body"
fi
