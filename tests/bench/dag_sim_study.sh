#!/bin/sh
# dag_sim_study.sh - the DAG simulation study: the table of "DAGs for the
# Masses" (Anoprenko, Tonkikh, Spiegelman, Kuznetsov, 2025) redone on
# weft-sim with weft's "dag" protocol (echo BRB, signed echo certificates):
# dense Bullshark against sparse D in {10, 50, 400}, NIC 1, 2 and 8 Gb/s,
# latency normal 50 +- 10 ms; ordered transactions, latency, bytes per node
# per ms.  Four parts:
#   1. probe: wall time, CPU time and peak RSS against n (short runs), to
#      find the largest n a run finishes within 10 minutes;
#   2. the grid at that n with the paper's NICs;
#   3. the grid at that n with each NIC scaled by (n/1000)^2 and D by
#      n/1000: the per-round serialisation of the O(n^2) traffic is then the
#      one n = 1000 sees at the paper's NICs (an emulation, see the section);
#   4. weft's default BRB retransmission (brb_resend_ms 500) against the
#      study's (off), at two points.
# Writes its section of docs/performance.md and docs/perf/dag-latency.png,
# dag-traffic.png, dag-scaling.png; scenario files go to tests/bench/dag-study/
# (default n and duration) or build/bench/dag-study/scen-N-MS/.
# Usage: sh tests/bench/dag_sim_study.sh   (builds weft-sim; 20 min on an idle
# 2-core machine, 50 with other load)
# Knobs: DAG_STUDY_N (100), DAG_STUDY_MS simulated ms per run (20000),
#        DAG_STUDY_SEED (1), DAG_STUDY_JOBS parallel runs (2),
#        DAG_STUDY_PROBE probe sizes ("50 100 150 200"; empty: no probe),
#        DAG_STUDY_REUSE=1 keeps the results in build/bench/dag-study/ of
#        runs whose scenario file and weft-sim binary are unchanged (the
#        output is deterministic; their wall time and RSS are the old ones).
#        DAG_STUDY_OUT results directory (build/bench/dag-study).
set -eu
cd "$(dirname "$0")/../.."
. tests/bench/lib.sh
make -s build/bin/weft-sim >/dev/null
N=${DAG_STUDY_N:-100}
T=${DAG_STUDY_MS:-20000}
SEED=${DAG_STUDY_SEED:-1}
JOBS=${DAG_STUDY_JOBS:-2}
PROBE=${DAG_STUDY_PROBE-50 100 150 200}
PROBE_MS=2000
EVERY=200     # each node gets one transaction every EVERY ms ...
SIZE=512      # ... of SIZE bytes
REUSE=${DAG_STUDY_REUSE:-0}
OUT=${DAG_STUDY_OUT:-build/bench/dag-study}   # results, private binary copy
if [ "$N" = 100 ] && [ "$T" = 20000 ]; then SCEN=tests/bench/dag-study; else SCEN=$OUT/scen-$N-$T; fi
mkdir -p "$OUT" "$SCEN" docs/perf
[ "$REUSE" = 1 ] || rm -f "$OUT"/*.json "$OUT"/*.time "$OUT"/*.rc "$OUT"/*.err "$OUT"/*.key
rm -f "$OUT"/*.kept
rm -f "$OUT"/*.dat
# A private copy: a rebuild during the half hour must not mix two binaries.
SIM=$OUT/weft-sim
cmp -s "${BUILD:-build}/bin/weft-sim" "$SIM" 2>/dev/null || cp "${BUILD:-build}/bin/weft-sim" "$SIM"
BINSUM=$(sha256sum "$SIM" | cut -c1-64)
start=$(date +%s)

# gen FILE N MODE D MBPS DUR_MS RESEND_MS (0: weft's default) [TX_SIZE]
gen() {
	if [ "$3" = dense ]; then p='"mode": "dense"'; else p="\"mode\": \"sparse\", \"d\": $4"; fi
	[ "$7" = 0 ] || p="$p, \"brb_resend_ms\": $7"
	cat > "$1" <<J
{
  "name": "$(basename "$1" .json)",
  "n": $2,
  "protocol": "dag",
  "params": {$p, "round_min_ms": 0, "gc_depth": 20, "tx_index": 1024},
  "network": {"latency": {"dist": "normal", "mean_ms": 50, "stddev_ms": 10, "min_ms": 1}, "bandwidth_mbps": $5},
  "workload": [{"nodes": "all", "start_ms": 0, "every_ms": $EVERY, "count": $(($6 / EVERY)), "size": ${8:-$SIZE}}],
  "duration_ms": $6,
  "seeds": [$SEED],
  "checkers": ["prefix", "no_duplicates"],
  "kv": "memory",
  "signatures": "fast"
}
J
}

# Runs scenario $2 into $OUT/$1.{json,time,rc,err,key}; time: wall user sys
# rss_kib; key: the scenario's and the binary's digest (DAG_STUDY_REUSE).
RUN='key=$( (cat "$1"; echo "$BINSUM") | sha256sum | cut -c1-64)
	if [ "$REUSE" = 1 ] && [ -s "$OUT/$0.json" ] && [ -s "$OUT/$0.time" ] && [ "$(cat "$OUT/$0.key" 2>/dev/null)" = "$key" ]; then
		echo "dag_sim_study: $0 (kept)" >&2; touch "$OUT/$0.kept"; exit 0; fi
	echo "dag_sim_study: $0" >&2; rc=0; rm -f "$OUT/$0.kept"
	/usr/bin/time -f "%e %U %S %M" -o "$OUT/$0.time" "$SIM" -q --out "$OUT/$0.json" "$1" 2> "$OUT/$0.err" || rc=$?
	echo "$rc" > "$OUT/$0.rc"; echo "$key" > "$OUT/$0.key"'
export OUT SIM REUSE BINSUM
run() { sh -c "$RUN" "$1" "$2"; }

# Number after "key": in a result document (keys used here are unique), or 0.
num() { v=$(sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$OUT/$1.json" 2>/dev/null | head -n 1); echo "${v:-0}"; }
# Messages and bytes of one message kind: "msgs bytes".
kind() {
	v=$(sed -n "s/.*\"$2\":{\"messages\":\([0-9]*\),\"bytes\":\([0-9]*\)}.*/\1 \2/p" "$OUT/$1.json" 2>/dev/null | head -n 1)
	echo "${v:-0 0}"
}
# All bytes on the wire in a run (messages.bytes).
total() { v=$(sed -n 's/.*"messages":{"sent":[0-9]*,"bytes":\([0-9]*\).*/\1/p' "$OUT/$1.json" 2>/dev/null | head -n 1); echo "${v:-0}"; }
tm() { awk -v f="$2" '{print $f}' "$OUT/$1.time" 2>/dev/null || echo 0; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

label() { # mode d -> table label
	if [ "$1" = dense ]; then echo dense; else echo "sparse D=$2"; fi
}

# ---- 1. probe ----
probe_rows=""
for n in $PROBE; do
	for m in dense d10; do
		if [ $m = dense ]; then mode=dense; else mode=sparse; fi
		f=$SCEN/probe-n$n-$m.json
		gen "$f" "$n" $mode 10 8000 $PROBE_MS 60000
		run "probe-n$n-$m" "$f"
		probe_rows="$probe_rows $n:$m"
	done
done

# ---- 2-4. the grids (JOBS runs at a time) ----
jobs=$(mktemp)
MODES="dense 10 50 400"
# The emulation scales the transactions too: a node's payload bytes per
# second (rate x size x n) by (n/1000)^2 like its NIC.
SSIZE=$(calc '%d' "($SIZE * $N / 1000 < 16) ? 16 : int($SIZE * $N / 1000 + 0.5)")
for nic in 1000 2000 8000; do
	snic=$(calc '%g' "$nic * $N * $N / 1e6")
	for d in $MODES; do
		if [ "$d" = dense ]; then mode=dense; tag=dense; sd=0; else
			mode=sparse; tag=d$d
			sd=$(calc '%d' "($d * $N / 1000 < 1) ? 1 : int($d * $N / 1000 + 0.5)")
		fi
		gen "$SCEN/real-n$N-$tag-$nic.json" "$N" $mode "$d" "$nic" "$T" 60000
		echo "real-$tag-$nic $SCEN/real-n$N-$tag-$nic.json" >> "$jobs"
		gen "$SCEN/scaled-n$N-$tag-$nic.json" "$N" $mode "$sd" "$snic" "$T" 60000 "$SSIZE"
		echo "scaled-$tag-$nic $SCEN/scaled-n$N-$tag-$nic.json" >> "$jobs"
	done
done
sd50=$(calc '%d' "(50 * $N / 1000 < 1) ? 1 : int(50 * $N / 1000 + 0.5)")
snic1=$(calc '%g' "1000 * $N * $N / 1e6")
for m in dense d50; do
	if [ $m = dense ]; then mode=dense; else mode=sparse; fi
	gen "$SCEN/defaults-n$N-$m-8000.json" "$N" $mode 50 8000 "$T" 0
	echo "defaults-$m-8000 $SCEN/defaults-n$N-$m-8000.json" >> "$jobs"
	gen "$SCEN/defaults-scaled-n$N-$m-1000.json" "$N" $mode "$sd50" "$snic1" "$T" 0 "$SSIZE"
	echo "defaults-scaled-$m-1000 $SCEN/defaults-scaled-n$N-$m-1000.json" >> "$jobs"
done
echo "dag_sim_study: $(wc -l < "$jobs") runs of n=$N, ${T} ms, $JOBS at a time" >&2
xargs -P "$JOBS" -L 1 sh -c "$RUN" < "$jobs"
rm -f "$jobs"
secs=$(( $(date +%s) - start ))
[ -n "$(ls "$OUT"/*.kept 2>/dev/null)" ] || echo "$secs" > "$OUT/made.secs"

# ---- tables ----
TS=$(calc '%g' "$T / 1000")
bpnms() { calc '%.0f' "$(num "$1" bytes_per_node_per_ms)"; }
lat() { # id key -> ms, or "-" without samples
	if [ "$(num "$1" samples)" = 0 ]; then echo "-"; else calc '%.0f' "$(num "$1" "$2")"; fi
}
verdict() {
	rc=$(cat "$OUT/$1.rc" 2>/dev/null || echo "?")
	if [ "$rc" = 0 ]; then echo pass; else echo "**rc $rc**"; fi
}

probe_table() {
	echo "| n | mode | wall | CPU (user + sys) | CPU s per simulated s | peak RSS | DAG rounds / s |"
	echo "|---|---|---|---|---|---|---|"
	for r in $probe_rows; do
		n=${r%%:*} m=${r#*:}
		id=probe-n$n-$m
		cpu=$(calc '%.1f' "$(tm $id 2) + $(tm $id 3)")
		echo "| $n | $(label "$([ $m = dense ] && echo dense || echo sparse)" 10) | $(tm $id 1) s | $cpu s | $(calc '%.1f' "$cpu / ($PROBE_MS / 1000)") | $(calc '%.0f MiB' "$(tm $id 4) / 1024") | $(calc '%.1f' "$(num $id dag.own_vertices) / $n / ($PROBE_MS / 1000)") |"
	done
}

# Power-law fit between the two largest probe sizes: exponent, n = 1000 and
# the largest n whose run of T ms (and of 60 s) takes 600 s.
probe_fit() {
	set -- $PROBE
	[ $# -ge 2 ] || return 0
	while [ $# -gt 2 ]; do shift; done
	a=$1 b=$2
	for m in dense d10; do
		ca=$(calc '%.4f' "($(tm probe-n$a-$m 2) + $(tm probe-n$a-$m 3)) / ($PROBE_MS / 1000)")
		cb=$(calc '%.4f' "($(tm probe-n$b-$m 2) + $(tm probe-n$b-$m 3)) / ($PROBE_MS / 1000)")
		wb=$(calc '%.4f' "$(tm probe-n$b-$m 1) / ($PROBE_MS / 1000)")
		ra=$(tm probe-n$a-$m 4) rb=$(tm probe-n$b-$m 4)
		k=$(calc '%.2f' "log($cb / $ca) / log($b / $a)")
		km=$(calc '%.2f' "log($rb / $ra) / log($b / $a)")
		name=$(label "$([ $m = dense ] && echo dense || echo sparse)" 10)
		echo "- $name: CPU per simulated second grows as n^$k and peak RSS as n^$km between n = $a and $b."
		echo "  Extrapolated to n = 1000: $(calc '%.0f' "$cb * (1000 / $b) ^ $k / 60") CPU minutes per simulated second"
		echo "  ($(calc '%.0f' "$cb * (1000 / $b) ^ $k / 60") CPU hours for the paper's simulated minute) and $(calc '%.0f' "$rb * (1000 / $b) ^ $km / 1048576") GiB."
		echo "  Largest n within 600 s of CPU: $(calc '%.0f' "$b * (600 / ($cb * $T / 1000)) ^ (1 / $k)") for ${TS} s simulated, $(calc '%.0f' "$b * (600 / ($cb * 60)) ^ (1 / $k)") for 60 s"
		echo "  (with this machine's load as measured, wall: $(calc '%.0f' "$b * (600 / ($wb * $T / 1000)) ^ (1 / $k)") and $(calc '%.0f' "$b * (600 / ($wb * 60)) ^ (1 / $k)"))."
	done
}

# grid_table GRID: one row per mode and NIC
grid_table() {
	g=$1
	echo "| NIC | mode | D / n | tx ordered per node (of submitted) | tx / s | latency p50 / p90 (ms) | DAG rounds / s | anchors committed / s | timeouts / node | bytes / node / ms | traffic / dense | wall, RSS | checkers |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for nic in 1000 2000 8000; do
		dense=$(num "$g-dense-$nic" bytes_per_node_per_ms)
		for d in $MODES; do
			if [ "$d" = dense ]; then tag=dense; dn=1; lab=dense; else
				tag=d$d
				if [ "$g" = scaled ]; then
					ud=$(calc '%d' "($d * $N / 1000 < 1) ? 1 : int($d * $N / 1000 + 0.5)")
					lab="sparse D=$d (uses $ud)"
					dn=$(calc '%.3g' "$ud / $N")
				else
					lab="sparse D=$d"
					dn=$(calc '%.3g' "($d >= $N ? 1 : $d / $N)")
					[ "$d" -lt "$N" ] || lab="sparse D=$d (>= n: all refs)"
				fi
			fi
			id=$g-$tag-$nic
			if [ "$g" = scaled ]; then nl="$(calc '%g' "$nic / 1000") Gb/s @1000 = $(calc '%g' "$nic * $N * $N / 1e6") Mb/s"; else nl="$(calc '%g' "$nic / 1000") Gb/s"; fi
			sub=$(calc '%d' "$T / $EVERY")
			del=$(calc '%.0f' "$(num $id deliveries) / $N")
			echo "| $nl | $lab | $dn | $del ($(calc '%.0f%%' "100 * $del / $sub / $N")) | $(calc '%.0f' "$del / $TS") | $(lat $id p50) / $(lat $id p90) | $(calc '%.2f' "$(num $id dag.own_vertices) / $N / $TS") | $(calc '%.2f' "$(num $id dag.committed_anchors) / $N / $TS") | $(calc '%.1f' "$(num $id dag.timeouts) / $N") | $(bpnms $id) | $(calc '%.2f' "$(num $id bytes_per_node_per_ms) / ($dense > 0 ? $dense : 1)") | $(tm $id 1) s, $(calc '%.0f MiB' "$(tm $id 4) / 1024") | $(verdict $id) |"
		done
	done
}

# Bytes per node per ms by message kind at the fastest NIC.
kinds_table() {
	g=$1 nic=$2
	echo "| mode | vertices (echo.send) | certificates (echo.final) | echoes (echo.echo) | BRB status | DAG status + fetch | total | certificate bytes per message |"
	echo "|---|---|---|---|---|---|---|---|"
	for d in $MODES; do
		if [ "$d" = dense ]; then tag=dense; else tag=d$d; fi
		id=$g-$tag-$nic
		per() { calc '%.0f' "$2 / $N / $T"; }
		set -- $(kind $id echo.send); vs=$2
		set -- $(kind $id echo.final); fm=$1 fs=$2
		set -- $(kind $id echo.echo); es=$2
		set -- $(kind $id brb.status); bs=$2
		set -- $(kind $id dag.status); ds=$2
		set -- $(kind $id dag.fetch); ds=$(calc '%.0f' "$ds + $2")
		set -- $(kind $id dag.range); ds=$(calc '%.0f' "$ds + $2")
		tot=$(calc '%.0f' "$(num $id bytes_per_node_per_ms)")
		echo "| $(label "$([ $d = dense ] && echo dense || echo sparse)" "$d") | $(per x $vs) | $(per x $fs) | $(per x $es) | $(per x $bs) | $(per x $ds) | $tot | $(calc '%.0f' "$fs / ($fm > 0 ? $fm : 1)") |"
	done
}

# Sentences computed from the results (so that they stay true on a rerun).
findings() {
	set -- $(kind real-dense-8000 echo.final); cert=$2
	set -- $(kind real-dense-8000 echo.send); vert=$2
	tot=$(total real-dense-8000)
	r10=$(calc '%.2f' "$(num real-d10-8000 bytes_per_node_per_ms) / $(num real-dense-8000 bytes_per_node_per_ms)")
	s10=$(calc '%.2f' "$(num scaled-d10-1000 bytes_per_node_per_ms) / $(num scaled-dense-1000 bytes_per_node_per_ms)")
	rd1=$(calc '%.2f' "$(num scaled-dense-1000 dag.own_vertices) / $N / $TS")
	rs1=$(calc '%.2f' "$(num scaled-d50-1000 dag.own_vertices) / $N / $TS")
	rd2=$(calc '%.2f' "$(num scaled-dense-2000 dag.own_vertices) / $N / $TS")
	rs2=$(calc '%.2f' "$(num scaled-d50-2000 dag.own_vertices) / $N / $TS")
	rd8=$(calc '%.2f' "$(num scaled-dense-8000 dag.own_vertices) / $N / $TS")
	echo "- **Certificates, not references, dominate.** At 8 Gb/s and n = $N the echo FINAL messages (2f + 1"
	echo "  signatures each) are $(calc '%.0f%%' "100 * $cert / $tot") of dense's bytes and the vertices (references and transactions)"
	echo "  $(calc '%.0f%%' "100 * $vert / $tot"). Sparse shrinks only the vertices: sparse D=10 sends $r10 of dense's bytes here and"
	echo "  $s10 in the n = 1000 emulation at 1 Gb/s, against 0.078 in the paper. Both terms are O(n^2) per node"
	echo "  per round, so the ratio stays about this at n = 1000; the paper's figure needs certificates of"
	echo "  constant size (aggregate or threshold signatures) or no certificates at all."
	echo "- **Hence no sparse rescue when the NIC saturates.** In the emulation, DAG rounds per second fall from"
	echo "  $rd8 (8 Gb/s) to $rd2 (2 Gb/s) and $rd1 (1 Gb/s) for dense, and to $rs2 and $rs1 for sparse D=50; the paper"
	echo "  has dense at 1.4 and 0.66 per node-second and sparse D=50 unchanged at 6.0."
	echo "- **Below saturation the two modes are the same protocol in time.** With the NIC far from full"
	echo "  (section 2) rounds and commits agree and sparse D=10's p50 latency is $(calc '%.2f' "$(num real-d10-8000 p50) / $(num real-dense-8000 p50)") x dense's at 8 Gb/s:"
	echo "  sparse's 2f + 1 commit rule (against dense's f + 1) costs next to nothing here."
}

defaults_table() {
	echo "| point | mode | brb_resend_ms | latency p50 (ms) | tx ordered per node | DAG rounds / s | bytes / node / ms | vertex resends (echo.send beyond one per peer) | BRB status share of bytes |"
	echo "|---|---|---|---|---|---|---|---|---|"
	for pt in 8000 scaled-1000; do
		for m in dense d50; do
			if [ $pt = 8000 ]; then base=real-$m-8000; def=defaults-$m-8000; pl="8 Gb/s"; lab=$(label "$([ $m = dense ] && echo dense || echo sparse)" 50)
			else base=scaled-$m-1000; def=defaults-scaled-$m-1000; pl="1 Gb/s @1000 = $snic1 Mb/s"
				lab=$(label "$([ $m = dense ] && echo dense || echo sparse)" 50); [ $m = dense ] || lab="$lab (uses $sd50)"; fi
			for id in $base $def; do
				[ $id = $base ] && rs="60000 (study)" || rs="500 (default)"
				set -- $(kind $id echo.send); sm=$1
				set -- $(kind $id brb.status); bsb=$2
				extra=$(calc '%.0f' "$sm - $(num $id dag.own_vertices) * ($N - 1)")
				echo "| $pl | $lab | $rs | $(lat $id p50) | $(calc '%.0f' "$(num $id deliveries) / $N") | $(calc '%.2f' "$(num $id dag.own_vertices) / $N / $TS") | $(bpnms $id) | $extra | $(calc '%.0f%%' "100 * $bsb / ($(total $id) > 0 ? $(total $id) : 1)") |"
			done
		done
	done
}

# ---- plots ----
for g in real scaled; do
	for d in $MODES; do
		if [ "$d" = dense ]; then tag=dense; else tag=d$d; fi
		for nic in 1000 2000 8000; do
			id=$g-$tag-$nic
			p50=$(num $id p50); [ "$(num $id samples)" != 0 ] || p50=NaN
			echo "$(calc '%g' "$nic / 1000") $p50 $(num $id bytes_per_node_per_ms) $(num $id p90)"
		done > "$OUT/$g-$tag.dat"
	done
done
printf '1 6800\n2 3200\n8 803\n' > "$OUT/paper-dense.dat"
printf '2 901\n8 901\n' > "$OUT/paper-d50.dat"
for r in $probe_rows; do
	n=${r%%:*} m=${r#*:}
	echo "$n $(calc '%.3f' "($(tm probe-n$n-$m 2) + $(tm probe-n$n-$m 3)) / ($PROBE_MS / 1000)") $(calc '%.1f' "$(tm probe-n$n-$m 4) / 1024")" >> "$OUT/probe-$m.dat"
done
if command -v gnuplot >/dev/null 2>&1; then
	lines() { # column
		echo "'$OUT/$1-dense.dat' using 1:$2 with linespoints lw 2 title 'dense', \\"
		echo "'$OUT/$1-d10.dat' using 1:$2 with linespoints lw 2 title 'sparse D=10', \\"
		echo "'$OUT/$1-d50.dat' using 1:$2 with linespoints lw 2 title 'sparse D=50', \\"
		echo "'$OUT/$1-d400.dat' using 1:$2 with linespoints lw 2 title 'sparse D=400'"
	}
	gnuplot <<GP
set terminal pngcairo size 1200,480
set output 'docs/perf/dag-latency.png'
set multiplot layout 1,2 title 'DAG latency (request to delivery, p50), latency normal 50 +- 10 ms, n = $N, seed $SEED'
set logscale x 2
set xtics (1, 2, 8)
set xrange [0.8:10]
set grid
set key bottom right
set xlabel 'NIC (Gb/s)'
set ylabel 'latency p50 (ms)'
set yrange [0:*]
set title 'n = $N, the paper''s NICs'
plot $(lines real 2)
set key top right
set title 'n = $N, NIC x (n/1000)^2, D x n/1000 (n = 1000 equivalent)'
set xlabel 'NIC at n = 1000 (Gb/s)'
plot $(lines scaled 2), \
     '$OUT/paper-dense.dat' using 1:2 with points pt 7 ps 1.5 title 'paper dense (n = 1000)', \
     '$OUT/paper-d50.dat' using 1:2 with points pt 5 ps 1.5 title 'paper sparse D=50'
unset multiplot
set output 'docs/perf/dag-traffic.png'
set multiplot layout 1,2 title 'Bytes sent per node per ms, n = $N, seed $SEED'
set ylabel 'bytes / node / ms'
set key bottom right
set xlabel 'NIC (Gb/s)'
set title 'n = $N, the paper''s NICs'
plot $(lines real 3)
set key top left
set title 'n = $N, NIC x (n/1000)^2, D x n/1000 (n = 1000 equivalent)'
set xlabel 'NIC at n = 1000 (Gb/s)'
plot $(lines scaled 3), \
     '$OUT/real-dense.dat' using 1:(\$1 * 1e6 * $N * $N / 1e6 / 8) with lines dashtype 2 title 'NIC capacity (scaled)'
unset multiplot
GP
	if [ -n "$PROBE" ]; then
		gnuplot <<GP
set terminal pngcairo size 900,480
set output 'docs/perf/dag-scaling.png'
set title 'Simulator cost against n (dag, 8 Gb/s, ${PROBE_MS} ms simulated per run)'
set logscale xy
set grid
set key top left
set xlabel 'n'
set ylabel 'CPU s per simulated s'
set y2label 'peak RSS (MiB)'
set logscale y2
set ytics nomirror
set y2tics
plot '$OUT/probe-dense.dat' using 1:2 with linespoints lw 2 title 'CPU, dense', \
     '$OUT/probe-d10.dat' using 1:2 with linespoints lw 2 title 'CPU, sparse D=10', \
     '$OUT/probe-dense.dat' using 1:3 axes x1y2 with linespoints dashtype 2 title 'RSS, dense', \
     '$OUT/probe-d10.dat' using 1:3 axes x1y2 with linespoints dashtype 2 title 'RSS, sparse D=10'
GP
	fi
fi

# ---- the section ----
body=$(mktemp)
{
	echo "## DAG consensus: dense against sparse (simulation study)"
	echo
	echo "The table of \"DAGs for the Masses\" (Anoprenko et al. 2025, dscale simulator, n = 1000, one simulated"
	echo "minute) redone on weft-sim with weft's \`dag\` protocol: dense Bullshark (\`\"mode\": \"dense\"\`, every vertex"
	echo "references all of the previous round it holds, anchors commit on f + 1 votes) against sparse Bullshark"
	echo "(\`\"mode\": \"sparse\"\`, D random references plus its own and the anchor; anchors reference everything"
	echo "and commit on 2f + 1 votes). Vertices travel by the echo BRB (signed echo certificates, the paper's"
	echo "consistent broadcast). Latency normal 50 +- 10 ms (clamped to [1, 150]); each node's NIC serialises"
	echo "its sends and its receives at the stated speed. Each node gets one ${SIZE}-byte transaction every ${EVERY} ms"
	echo "(open loop); a vertex takes everything its mempool holds. \`round_min_ms\` 0 (rounds as fast as the"
	echo "network allows), \`gc_depth\` 20, \`brb_resend_ms\` 60000 (no BRB retransmission or status gossip: the"
	echo "network loses nothing; part 4 shows weft's default), cheap signature stand-in, in-memory kv, seed $SEED,"
	echo "checkers \`prefix\` and \`no_duplicates\` on every run."
	echo
	echo "Columns: *tx ordered per node*: transactions delivered (committed) per node by the end, and the share"
	echo "of all submitted; *latency*: request to delivery over all deliveries at all nodes (includes the wait"
	echo "in the mempool for the next vertex, about half a round); *DAG rounds / s*: vertices made per node per"
	echo "second; *bytes / node / ms*: everything sent (payloads, references, certificates, votes) per node per"
	echo "simulated ms (Mb/s = 8 x that / 1000); *traffic / dense*: the ratio to dense at the same NIC."
	echo
	echo "### 1. How large an n this machine simulates"
	echo
	if [ -n "$PROBE" ]; then
		echo "${PROBE_MS} ms simulated per run, 8 Gb/s, one run at a time:"
		echo
		probe_table
		echo
		probe_fit
		echo
		echo "![simulator cost](perf/dag-scaling.png)"
		echo
	fi
	echo "The work grows about as n^3 in both modes: every node handles n vertices per round, and each echo"
	echo "certificate carries 2f + 1 signatures that every node checks once (n^2 certificates of O(n)"
	echo "signatures per round, a keyed BLAKE2b each under the stand-in: about half the CPU in a profile at"
	echo "n = 50 to 100). Dense memory grows as n^3 too: each node keeps gc_depth rounds of n vertices of n"
	echo "references. **n = 1000 is out of reach here**; the grids run at **n = $N for ${TS} simulated seconds**"
	echo "(not the paper's minute: ordered counts are per ${TS} s, rates per second)."
	echo
	echo "### 2. n = $N with the paper's NICs"
	echo
	grid_table real
	echo
	echo "At n = $N even dense sends a small fraction of 1 Gb/s, so the NIC changes nothing here: the"
	echo "paper's effect needs n^2 bytes per round to fill the NIC."
	echo
	echo "### 3. n = $N emulating n = 1000: NIC x (n/1000)^2, D x n/1000"
	echo
	echo "Per round a node sends and receives O(n^2) bytes (dense: n references of about 37 bytes in each of n"
	echo "vertices; both modes: n certificates of 2f + 1 signatures of about 69 bytes) and O(n D) for sparse"
	echo "references. Scaling the NIC by (n/1000)^2 = $(calc '%g' "$N * $N / 1e6") and D by n/1000 keeps the"
	echo "serialisation time of those terms per round what it is at n = 1000 with the paper's NICs and D."
	echo "Transactions are scaled alike (${SSIZE} bytes instead of ${SIZE}, same rate), so a node's payloads take"
	echo "the share of its NIC they take at n = 1000 with ${SIZE}-byte transactions. What stays linear in n"
	echo "(72-byte echoes, message framing, DAG status) weighs a little more at n = $N than at n = 1000."
	echo "It is an emulation, not a measurement at n = 1000: the simulated rounds, quorums and latency"
	echo "draws are those of n = $N."
	echo
	grid_table scaled
	echo
	echo "What the grids say:"
	echo
	findings
	echo
	echo "Paper (n = 1000, 60 s; ordered transactions, latency, bytes per node per ms):"
	echo
	echo "| NIC | mode | ordered tx | per node-second | latency | bytes / node / ms | traffic / dense |"
	echo "|---|---|---|---|---|---|---|"
	echo "| 8 Gb/s | dense | 354k | 5.9 | 803 ms | 1,047,000 | 1 |"
	echo "| 8 Gb/s | sparse D=50 | 359k | 6.0 | 901 ms | 82,000 | 0.078 |"
	echo "| 2 Gb/s | dense | 86k | 1.4 | 3.2 s | | |"
	echo "| 2 Gb/s | sparse D=50 | unchanged (~359k) | 6.0 | ~901 ms | | |"
	echo "| 1 Gb/s | dense | 39.7k | 0.66 | 6.8 s | | |"
	echo
	echo "\"Per node-second\" is the paper's count / (1000 x 60): comparable with *DAG rounds / s* above if a"
	echo "paper transaction is a vertex (our reading of the counts: 354k in a minute at n = 1000 is about one"
	echo "per vertex at ~6 rounds per second), not with our transaction counts, which depend on our open-loop"
	echo "workload (a vertex carries all pending transactions, so we order what is submitted as long as rounds"
	echo "progress, later when they slow down)."
	echo
	echo "Where the bytes go, per node per ms, at 8 Gb/s and n = $N (section 2):"
	echo
	kinds_table real 8000
	echo
	echo "and in the n = 1000 emulation at 1 Gb/s (section 3):"
	echo
	kinds_table scaled 1000
	echo
	echo "![latency](perf/dag-latency.png)"
	echo
	echo "![traffic](perf/dag-traffic.png)"
	echo
	echo "### 4. weft's default BRB retransmission"
	echo
	echo "The runs above set \`brb_resend_ms\` to 60000. With the default (500 ms) the echo BRB multicasts n^2"
	echo "STATUS messages of about 12n bytes every 500 ms and re-sends a vertex (and its FINAL) that is not"
	echo "certified after 500 ms, which on a saturated NIC is a vertex still queued, not lost. Bytes / node / ms"
	echo "counts what the protocol hands to its NIC, so above the NIC's $(calc '%.0f' "$snic1 * 1000 / 8") bytes / ms (emulated 1 Gb/s) it is"
	echo "a queue that grows:"
	echo
	defaults_table
	echo
	echo "Scenario files: \`$SCEN/\` (\`probe-*\`, \`real-*\`, \`scaled-*\`, \`defaults-*\`); each runs alone with"
	echo "\`build/bin/weft-sim FILE\`."
	echo "Wall times of the grids are with $JOBS runs in parallel on a machine other processes were also using."
	echo
	echo "Machine: $(bench_machine)."
	knobs=""
	dirty=""
	git diff --quiet HEAD -- protocols src include 2>/dev/null || dirty=" with uncommitted changes in protocols/, src/ or include/"
	[ "$N" = 100 ] || knobs="$knobs DAG_STUDY_N=$N"
	[ "$T" = 20000 ] || knobs="$knobs DAG_STUDY_MS=$T"
	[ "$SEED" = 1 ] || knobs="$knobs DAG_STUDY_SEED=$SEED"
	[ "$REUSE" = 0 ] || knobs="$knobs DAG_STUDY_REUSE=$REUSE"
	echo "Command: \`${knobs# }${knobs:+ }sh tests/bench/dag_sim_study.sh\` ($(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$dirty, ${secs} s)."
	kept=$(ls "$OUT"/*.kept 2>/dev/null | wc -l)
	if [ "$kept" -gt 0 ]; then
		echo "$kept of the runs were kept from an earlier invocation with the same scenario files and binary"
		echo "(deterministic output; their wall time and RSS are from that invocation, which took $(cat "$OUT/made.secs" 2>/dev/null || echo '?') s)."
	fi
	echo
} > "$body"
bench_write_section dag-study "$body"
cp "$body" "$OUT/section.md"
rm -f "$body"
echo "dag_sim_study: results written to docs/performance.md (section dag-study)"
