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
	tmp=$(mktemp)
	if grep -q "<!-- bench:$name -->" "$doc"; then
		awk -v name="$name" -v body="$body" '
			$0 == "<!-- bench:" name " -->" { print; while ((getline line < body) > 0) print line; skip = 1; next }
			$0 == "<!-- /bench:" name " -->" { skip = 0 }
			!skip { print }' "$doc" > "$tmp"
	else
		{ cat "$doc"; printf '\n<!-- bench:%s -->\n' "$name"; cat "$body"; printf '<!-- /bench:%s -->\n' "$name"; } > "$tmp"
	fi
	mv "$tmp" "$doc"
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
