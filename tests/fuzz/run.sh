#!/bin/sh
# tests/fuzz/run.sh - runs the libFuzzer targets for `make fuzz` (Makefile,
# tests/fuzz/README).
#
#   run.sh run DIR NAME SECONDS   regression inputs tests/fuzz/regress/NAME-*,
#                                 then NAME for SECONDS on DIR/corpus-NAME (a
#                                 working copy seeded from tests/fuzz/corpus/NAME;
#                                 the tree is never written); prints one line
#                                 and leaves it in DIR/NAME.result
#   run.sh summary DIR NAME...    the result lines of every target; fails when
#                                 one failed or did not run
#   run.sh seeds DIR NAME...      rewrites tests/fuzz/corpus/NAME for the targets
#                                 that write their own seeds (WEFT_FUZZ_SEEDS)
#
# Extra libFuzzer flags for one target come from tests/fuzz/NAME.options (one
# line), a dictionary from tests/fuzz/NAME.dict, LeakSanitizer suppressions
# for known, reported leaks in code the target does not own from
# tests/fuzz/NAME.lsan (each with its report; delete it with the fix).  A
# failure leaves the reproducer as DIR/NAME-crash-* (leak-, timeout-, oom-);
# rerun it with DIR/NAME FILE.
set -u
cd "$(dirname "$0")/../.."

flags() { # NAME
	f="-timeout=10 -rss_limit_mb=2048 -print_final_stats=1"
	[ -f "tests/fuzz/$1.dict" ] && f="$f -dict=tests/fuzz/$1.dict"
	[ -f "tests/fuzz/$1.options" ] && f="$f $(cat "tests/fuzz/$1.options")"
	echo "$f"
}

run() { # DIR NAME SECONDS
	dir=$1 name=$2 secs=$3
	bin=$dir/$name log=$dir/$name.log res=$dir/$name.result
	rm -f "$res"
	mkdir -p "$dir/corpus-$name"
	if [ -d "tests/fuzz/corpus/$name" ]; then
		cp -R "tests/fuzz/corpus/$name/." "$dir/corpus-$name/"
	fi
	if [ -f "tests/fuzz/$name.lsan" ]; then
		LSAN_OPTIONS="suppressions=$(pwd)/tests/fuzz/$name.lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
		export LSAN_OPTIONS
	fi
	# shellcheck disable=SC2046
	set -- $(flags "$name")
	regress=$(ls "tests/fuzz/regress/$name"-* 2>/dev/null)
	if [ -n "$regress" ]; then
		# shellcheck disable=SC2086
		if ! "$bin" "$@" $regress >"$dir/$name.regress.log" 2>&1; then
			printf '%-16s FAILED   a regression input (see %s)\n' "$name" "$dir/$name.regress.log" | tee "$res"
			return 0
		fi
	fi
	"$bin" "$@" -max_total_time="$secs" -artifact_prefix="$dir/$name-" "$dir/corpus-$name" >"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	persec=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	done=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 | sed -E 's/^#[0-9]+[[:space:]]+DONE[[:space:]]+//; s/[[:space:]]+/ /g')
	if [ "$rc" -eq 0 ] && [ -n "$done" ]; then
		printf '%-16s ok       %9s execs %6s/s  %s\n' "$name" "${execs:-?}" "${persec:-?}" "$done" | tee "$res"
	else
		what=$(grep -m 1 -E '^==[0-9]+==ERROR|^SUMMARY|ERROR: libFuzzer|property violated|runtime error' "$log" | cut -c 1-110)
		repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
		printf '%-16s FAILED   exit %s after %s execs: %s\n%-16s          reproducer %s, log %s\n' \
			"$name" "$rc" "${execs:-?}" "${what:-see the log}" "" "${repro:-none}" "$log" | tee "$res"
	fi
	return 0
}

summary() { # DIR NAME...
	dir=$1
	shift
	failed=0
	echo "== fuzz summary (execs, then libFuzzer's final cov: edges, ft: features, corp: units/bytes)"
	for name in "$@"; do
		if [ -f "$dir/$name.result" ]; then
			cat "$dir/$name.result"
			grep -q '^[^ ]* *ok ' "$dir/$name.result" || failed=1
		else
			printf '%-16s FAILED   did not run\n' "$name"
			failed=1
		fi
	done
	if [ $failed -ne 0 ]; then
		echo "fuzz: FAILED"
		exit 1
	fi
	echo "fuzz: ok"
}

seeds() { # DIR NAME...
	dir=$1
	shift
	for name in "$@"; do
		tmp=$dir/seeds-$name
		rm -rf "$tmp"
		mkdir -p "$tmp"
		if ! WEFT_FUZZ_SEEDS="$tmp" "$dir/$name" -runs=0 >"$dir/$name.seeds.log" 2>&1; then
			echo "fuzz-seeds: $name failed (see $dir/$name.seeds.log)"
			exit 1
		fi
		if [ -n "$(ls "$tmp")" ]; then
			rm -rf "tests/fuzz/corpus/$name"
			mkdir -p tests/fuzz/corpus
			mv "$tmp" "tests/fuzz/corpus/$name"
			printf '%-16s %3d seeds, %6d bytes\n' "$name" "$(ls "tests/fuzz/corpus/$name" | wc -l)" \
				"$(cat "tests/fuzz/corpus/$name"/* | wc -c)"
		else
			rm -rf "$tmp"
			printf '%-16s hand-written seeds kept\n' "$name"
		fi
	done
}

cmd=$1
shift
case "$cmd" in
run) run "$@" ;;
summary) summary "$@" ;;
seeds) seeds "$@" ;;
*) echo "usage: run.sh run|summary|seeds ..." >&2; exit 2 ;;
esac
