#!/bin/sh
# interrupt.sh - a campaign interrupted by Ctrl-C leaves nothing behind
# (issue 14's bad input; needs docker, so CI runs it where docker is, after
# make campaign).  Starts tests/campaign/ci-short.json, sends SIGINT once
# its load is running, and checks that weft-campaign exits 3 and that no
# container, network or volume labelled org.weft.testnet remains.
set -eu
cd "$(dirname "$0")/../.."
out=$(mktemp -d "${TMPDIR:-/tmp}/weft-interrupt.XXXXXX")
log="$out/campaign.log"
build/bin/weft-campaign run tests/campaign/ci-short.json --out "$out/run" >"$log" 2>&1 &
pid=$!
i=0
until grep -q '] load:' "$log"; do
	i=$((i + 1))
	if [ $i -gt 1200 ] || ! kill -0 $pid 2>/dev/null; then
		echo "interrupt: the campaign never reached its load stage:" >&2
		cat "$log" >&2
		kill -INT $pid 2>/dev/null || true
		exit 1
	fi
	sleep 0.1
done
sleep 5
kill -INT $pid
status=0
wait $pid || status=$?
left=$(docker ps -aq --filter label=org.weft.testnet; docker network ls -q --filter label=org.weft.testnet;
	docker volume ls -q --filter label=org.weft.testnet)
rm -rf "$out"
if [ "$status" -ne 3 ]; then
	echo "interrupt: weft-campaign exited $status after SIGINT, not 3" >&2
	exit 1
fi
if [ -n "$left" ]; then
	echo "interrupt: left behind after SIGINT: $left" >&2
	exit 1
fi
echo "interrupt: SIGINT during the load: exit 3, no container, network or volume left"
