#!/bin/sh
# daemon.sh - trace validation of real daemons: run a 4-node committee of
# weftd on this host with --trace, make it work, merge the four traces into
# one and check it against the protocol's spec with its validator
# (tla/trace/README.md, "Traces of weftd"):
#     bracha  tla/BrachaBRB.tla        validate.sh
#     echo    tla/EchoBRB.tla          validate-echo.sh
#     dag     tla/SparseBullshark.tla  validate-dag.sh
#     amortized  tla/AmortizedBRB.tla  validate-amortized.sh
#     coded   tla/CodedBRB.tla         validate-coded.sh
#
# usage: tla/trace/daemon.sh [--protocol P] [--equivocate] [--broadcasts K] [--tamper[=MODE]] [--keep]
#
#   --protocol P     bracha (default), echo, or dag (sparse, d = 2,
#                    weak_max = 2: every honest node submits K
#                    transactions, and the run lasts until every honest
#                    node committed all of them)
#                    or amortized (node 0's stream, validate-amortized.sh)
#                    or coded (each of node 0's broadcasts, as bracha's)
#   --equivocate     node 0 runs with --byzantine equivocate (a twin tells
#                    nodes 2 and 3 another story); it is the scenario's
#                    Byzantine node, its steps are not checked
#   --broadcasts K   Bracha: node 0 broadcasts K payloads (default 1), each
#                    instance checked on its own (the spec has one); DAG:
#                    the transactions per node; amortized: node 0
#                    broadcasts K payloads, its stream checked at once
#   --tamper[=MODE]  tamper with the merged trace; TLC must reject it
#                    (the first instance is checked)
#   --keep           keep the work directory (data dirs, traces, logs)
#
# Exit status as validate.sh's: 0 validated (with --tamper: rejected) or
# TLC not found ("skipped"); 1 not; 2 a tool or set-up error.
# Environment: WEFTD, WEFT_CLI (default build/bin/...), TRACE_BASE_PORT
# (default 7460, 7600 for amortized, 7700 for coded: the nodes listen on 4
# ports from it),
# and the validators'.

here=$(cd "$(dirname "$0")" && pwd) || exit 2
. "$here/validate-common.sh" # top, usage, skip_without_tlc
weftd=${WEFTD:-$top/build/bin/weftd}
cli=${WEFT_CLI:-$top/build/bin/weft-cli}
port=${TRACE_BASE_PORT:-7460}
equivocate=0
protocol=bracha
broadcasts=1
tamper=
keep=0

while [ $# -gt 0 ]; do
	case $1 in
	--protocol) [ $# -ge 2 ] || usage; protocol=$2; shift ;;
	--protocol=*) protocol=${1#*=} ;;
	--equivocate) equivocate=1 ;;
	--broadcasts) [ $# -ge 2 ] || usage; broadcasts=$2; shift ;;
	--broadcasts=*) broadcasts=${1#*=} ;;
	--tamper | --tamper=*) tamper=$1 ;;
	--keep) keep=1 ;;
	-h | --help) usage ;;
	*) echo "daemon: unknown argument $1" >&2; usage ;;
	esac
	shift
done
case $broadcasts in '' | *[!0-9]* | 0) echo "daemon: bad --broadcasts '$broadcasts'" >&2; exit 2 ;; esac
case $protocol in
bracha) validator=validate.sh ;;
echo) validator=validate-echo.sh ;;
dag) validator=validate-dag.sh ;;
amortized) validator=validate-amortized.sh; [ -n "$TRACE_BASE_PORT" ] || port=7600 ;;
coded) validator=validate-coded.sh; [ -n "$TRACE_BASE_PORT" ] || port=7700 ;;
*) echo "daemon: no trace validation for protocol '$protocol' (bracha, echo, dag, amortized, coded)" >&2; exit 2 ;;
esac
dag=0
[ "$protocol" = dag ] && dag=1
skip_without_tlc
for b in "$weftd" "$cli"; do
	if [ ! -x "$b" ]; then
		echo "daemon: $b not found: build it with 'make'" >&2
		exit 2
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-dtrace.XXXXXX") || exit 2
pids=
cleanup() {
	for d in "$work"/net/node*; do
		[ -S "$d/rpc.sock" ] && "$cli" --datadir "$d" stop >/dev/null 2>&1
	done
	for p in $pids; do
		i=0
		while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
	pids=
}
finish() {
	cleanup
	if [ "$keep" = 1 ]; then
		echo "daemon: work directory kept: $work"
	else
		rm -rf "$work"
	fi
}
trap finish EXIT
trap 'exit 130' INT TERM

params=
if [ "$dag" = 1 ]; then
	params='{"mode": "sparse", "d": 2, "weak_max": 2}'
	"$cli" genesis --nodes 4 --out "$work/net" --base-port "$port" --protocol dag \
		--param mode=sparse --param d=2 --param weak_max=2 >/dev/null || exit 2
else
	"$cli" genesis --nodes 4 --out "$work/net" --base-port "$port" --protocol "$protocol" >/dev/null || exit 2
fi
for i in 0 1 2 3; do
	byz=
	[ "$equivocate" = 1 ] && [ "$i" = 0 ] && byz="--byzantine equivocate"
	# shellcheck disable=SC2086 # $byz is empty or two words
	"$weftd" --datadir "$work/net/node$i" --trace "$work/trace$i.ndjson" $byz >"$work/weftd$i.out" 2>&1 &
	pids="$pids $!"
done

# wait_for WHAT SECONDS COMMAND...: polls COMMAND every 0.1 s.
wait_for() {
	what=$1 limit=$(($2 * 10))
	shift 2
	i=0
	until "$@"; do
		i=$((i + 1))
		if [ $i -ge $limit ]; then
			echo "daemon: timed out waiting for $what" >&2
			for f in "$work"/weftd*.out; do tail -n 5 "$f" | sed "s|^|    $(basename "$f"): |" >&2; done
			exit 2
		fi
		sleep 0.1
	done
}
connected() {
	for i in 0 1 2 3; do
		"$cli" --datadir "$work/net/node$i" status 2>/dev/null | grep -q '"connected": 3' || return 1
	done
}
delivered() {
	for i in $honest; do
		n=$("$cli" --datadir "$work/net/node$i" proto.info 2>/dev/null |
			sed -n 's/^  "delivered": \([0-9]*\).*/\1/p')
		[ "${n:-0}" -ge "$want" ] || return 1
	done
}
honest="0 1 2 3"
[ "$equivocate" = 1 ] && honest="1 2 3"
wait_for "the four nodes to connect" 20 connected
k=0
want=$broadcasts
while [ $k -lt "$broadcasts" ]; do
	if [ "$dag" = 1 ]; then
		for i in $honest; do
			"$cli" --datadir "$work/net/node$i" tx.submit data="trace tx $i.$k" >/dev/null || exit 2
		done
	else
		"$cli" --datadir "$work/net/node0" brb.broadcast data="trace payload $k" >/dev/null || exit 2
	fi
	k=$((k + 1))
done
[ "$dag" = 1 ] && want=$((broadcasts * $(echo $honest | wc -w)))
wait_for "every honest node to deliver $want" 30 delivered
sleep 0.3 # the last steps' echoes and READYs settle
cleanup

scenario=$work/scenario.json
faults= byzlist=
if [ "$equivocate" = 1 ]; then
	faults='{"kind": "equivocate", "nodes": [0]}'
	byzlist=0
fi
printf '{"n": 4, "f": 1, "protocol": "%s", %s"faults": [%s]}\n' "$protocol" \
	"${params:+\"params\": $params, }" "$faults" >"$scenario"

python3 "$here/trace2tla.py" merge --byzantine "$byzlist" --out "$work/merged.ndjson" "$work"/trace[0-3].ndjson ||
	exit 2
echo "daemon: 4 weftd ($protocol$([ "$equivocate" = 1 ] && echo ', node 0 equivocating'))," \
	"$want deliveries: $(wc -l <"$work/merged.ndjson" | tr -d ' ') trace lines"
if [ "$dag" = 1 ] || [ "$protocol" = amortized ] || [ -n "$tamper" ]; then
	# shellcheck disable=SC2086 # $tamper is empty or one word
	sh "$here/$validator" --scenario "$scenario" $tamper "$work/merged.ndjson"
	exit
fi
k=0
while [ $k -lt "$broadcasts" ]; do
	sh "$here/$validator" --scenario "$scenario" --instance "0:$k" "$work/merged.ndjson" || exit
	k=$((k + 1))
done
