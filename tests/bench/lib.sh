#!/bin/sh
# lib.sh - shared by the benchmark scripts: machine description and the
# replacement of one marked section of docs/performance.md.
#   bench_machine                 prints a one-line description of this machine
#   bench_write_section NAME FILE replaces the lines between
#                                 <!-- bench:NAME --> and <!-- /bench:NAME -->
#                                 in docs/performance.md with FILE (appends
#                                 the section when it is not there yet)

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
