#!/bin/sh
# lib.sh - shared by the benchmark scripts: machine description and the
# replacement of one marked section of docs/performance.md.
#   bench_machine                 prints a one-line description of this machine
#   bench_write_section NAME FILE replaces the lines between
#                                 <!-- bench:NAME --> and <!-- /bench:NAME -->
#                                 in docs/performance.md with FILE (appends
#                                 the section when it is not there yet)
#   bench_jget LINE KEY           a top-level value of a flat JSON line
#   bench_num FMT EXPR            an awk expression, printf-formatted
#   bench_quiet NAME              waits (up to QUIET_WAIT s, default 20) until
#                                 the machine is nearly idle for half a second
#   bench_committee_start DIR     fresh keys, a "dag" genesis (with PARAMS:
#                                 genesis params, NODES nodes, BASE_PORT, and
#                                 GENESIS_ARGS: more weft-cli genesis
#                                 arguments, e.g. --fund ACCOUNT=AMOUNT) and
#                                 databases in a new directory under DIR,
#                                 kept in $committee; the daemons started
#                                 ($pids), every node connected to its peers
#   bench_committee_stop          stops them and deletes $committee

bench_machine() {
	cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
	mem=$(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)
	echo "$(nproc) cores ($cpu), $mem RAM, $(uname -sr)"
}

bench_write_section() {
	name=$1
	body=$2
	doc=docs/performance.md
	[ -f "$doc" ] || printf '# Performance\n\nMeasured by the scripts in tests/bench/; each section says the machine and the command.\n' > "$doc"
	# (its own name: a caller's $tmp, often its work directory, is left alone)
	section_tmp=$(mktemp)
	if grep -q "<!-- bench:$name -->" "$doc"; then
		awk -v name="$name" -v body="$body" '
			$0 == "<!-- bench:" name " -->" { print; while ((getline line < body) > 0) print line; skip = 1; next }
			$0 == "<!-- /bench:" name " -->" { skip = 0 }
			!skip { print }' "$doc" > "$section_tmp"
	else
		{ cat "$doc"; printf '\n<!-- bench:%s -->\n' "$name"; cat "$body"; printf '<!-- /bench:%s -->\n' "$name"; } > "$section_tmp"
	fi
	mv "$section_tmp" "$doc"
}

bench_jget() {
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

bench_num() { awk "BEGIN { printf \"$1\", $2 }"; }

# CPU time (ticks) the machine has been busy, from /proc/stat.
bench_busy() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

bench_quiet() {
	waited=0
	while [ "$waited" -lt "$((${QUIET_WAIT:-20} * 2))" ]; do
		b0=$(bench_busy)
		sleep 0.5
		b1=$(bench_busy)
		# under a quarter of a core busy: 0.5 s * 0.25 core * CLK_TCK ticks
		[ $((b1 - b0)) -le $(($(getconf CLK_TCK) / 8)) ] && return 0
		waited=$((waited + 1))
	done
	echo "$1: machine still busy after ${QUIET_WAIT:-20}s, measuring anyway" >&2
}

bench_committee_start() {
	committee=$(mktemp -d "$1/dagc.XXXXXX")
	# shellcheck disable=SC2086
	build/bin/weft-cli genesis --nodes "$NODES" --out "$committee" --protocol dag --base-port "$BASE_PORT" \
		--chain-id weft-bench ${GENESIS_ARGS:-} > /dev/null
	if [ -n "$PARAMS" ]; then
		sed -i "s|^  \"protocol\": \"dag\",|  \"protocol\": \"dag\",\n  \"params\": { $PARAMS },|" \
			"$committee/genesis.json"
	fi
	for d in "$committee"/node*; do
		# rpc.partial_timeout_ms: weftd times an incomplete request from the
		# moment one is first buffered and does not restart the timer when
		# requests complete, so a client that keeps pipelining (always part
		# of a request in flight) is cut after 10 s.  db.map_size: the
		# vertices of gc_depth rounds stay in LMDB.
		cat >> "$d/weft.conf" <<-CONF
		[rpc]
		partial_timeout_ms = 3600000
		[db]
		map_size = 16GiB
		CONF
		build/bin/weftd --datadir "$d" > "$d/weftd.stderr" 2>&1 &
		pids="$pids $!"
	done
	want=$((NODES - 1))
	for d in "$committee"/node*; do
		i=0
		until build/bin/weft-cli --datadir "$d" --timeout 2 status 2> /dev/null | grep -q "\"connected\": $want"; do
			i=$((i + 1))
			if [ $i -gt 300 ]; then
				echo "bench: $d did not connect to its peers in 30 s" >&2
				tail -n 20 "$d/weftd.log" "$d/weftd.stderr" >&2 2> /dev/null || true
				exit 1
			fi
			sleep 0.1
		done
	done
	sleep 1 # a few empty rounds
}

bench_committee_stop() {
	for p in $pids; do kill "$p" 2> /dev/null || true; done
	for p in $pids; do
		i=0
		while kill -0 "$p" 2> /dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$p" 2> /dev/null || true
	done
	pids=""
	[ -n "$committee" ] && rm -rf "$committee"
	committee=""
}
