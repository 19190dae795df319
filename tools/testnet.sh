#!/bin/sh
# testnet.sh - `make testnet` / `make testnet-stop`: a local committee of
# N weftd (default 4) on 127.0.0.1 under testnet/, with distinct ports,
# running the full node: DAG consensus ordering transactions into the
# ledger (TESTNET_PROTOCOL picks another protocol: beb, bracha, echo, coded,
# amortized).
#   start  generate keys and genesis (first time; for the DAG two ledger
#          accounts, alice and bob, with their keys in testnet/ and alice
#          funded), start the daemons in the background, wait until every
#          node has all its peers connected, and print how to reach each one
#   stop   stop every daemon of the testnet
#   clean  stop, then remove testnet/
set -eu
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/bin
DIR=${TESTNET_DIR:-testnet}
N=${TESTNET_NODES:-4}
PORT=${TESTNET_BASE_PORT:-7100}
PROTOCOL=${TESTNET_PROTOCOL:-dag}

running() { [ -S "$1/rpc.sock" ] && "$BIN/weft-cli" --datadir "$1" --timeout 2 status >/dev/null 2>&1; }

start() {
	if [ -f "$DIR/genesis.json" ] && [ -n "${TESTNET_PROTOCOL:-}" ] &&
	   ! grep -q "\"protocol\": \"$TESTNET_PROTOCOL\"" "$DIR/genesis.json"; then
		echo "testnet: $DIR was generated for another protocol; run 'make testnet-clean' first" >&2
		exit 1
	fi
	if [ ! -f "$DIR/genesis.json" ]; then
		fund=""
		if [ "$PROTOCOL" = dag ]; then
			mkdir -p "$DIR"
			for who in alice bob; do
				[ -f "$DIR/$who.key" ] || "$BIN/weft-cli" ledger-keygen --out "$DIR/$who.key" >"$DIR/$who.account.json"
			done
			alice=$(sed -n 's/.*"account": *"\([0-9a-f]*\)".*/\1/p' "$DIR/alice.account.json")
			fund="--fund $alice=1000000"
		fi
		# shellcheck disable=SC2086
		"$BIN/weft-cli" genesis --nodes "$N" --out "$DIR" --base-port "$PORT" --protocol "$PROTOCOL" \
			--chain-id weft-testnet --force $fund >/dev/null
		echo "testnet: generated $N nodes in $DIR (genesis $DIR/genesis.json, ports $PORT..$((PORT + N - 1)))"
	fi
	nodes=$(ls -d "$DIR"/node* | sort -V)
	for d in $nodes; do
		if running "$d"; then
			echo "testnet: $d already running"
			continue
		fi
		nohup "$BIN/weftd" --datadir "$d" >>"$d/weftd.stderr" 2>&1 &
	done
	count=$(echo "$nodes" | wc -l)
	want=$((count - 1))
	i=0
	for d in $nodes; do
		until out=$("$BIN/weft-cli" --datadir "$d" --timeout 2 status 2>/dev/null) &&
			echo "$out" | grep -q "\"connected\": $want"; do
			i=$((i + 1))
			if [ $i -gt 300 ]; then
				echo "testnet: $d did not connect to its $want peers in 30 s; its log:" >&2
				tail -n 20 "$d/weftd.log" "$d/weftd.stderr" >&2 2>/dev/null || true
				exit 1
			fi
			sleep 0.1
		done
	done
	echo "testnet: $count nodes up, each connected to its $want peers"
	echo
	for d in $nodes; do
		echo "  $BIN/weft-cli --datadir $d status"
	done
	if grep -q '"protocol": "dag"' "$DIR/genesis.json"; then
		bob=$(sed -n 's/.*"account": *"\([0-9a-f]*\)".*/\1/p' "$DIR/bob.account.json" 2>/dev/null)
		cat <<MSG

Try (the DAG orders transactions into the ledger; alice holds 1000000):
  $BIN/weft-cli --datadir $DIR/node0 tx.submit data=hello
  $BIN/weft-cli --datadir $DIR/node2 dag.info             # committed_txs, order_hash, ledger_hash
  $BIN/weft-cli --datadir $DIR/node1 ledger.transfer to=$bob amount=250 key=$DIR/alice.key
  $BIN/weft-cli --datadir $DIR/node3 ledger.balance account=$bob
  $BIN/weft-cli --datadir $DIR/node0 store put README.md       # encrypted across the 4 nodes: id, capability
  $BIN/weft-cli --datadir $DIR/node3 store get CAPABILITY /tmp/copy.md
  $BIN/weft-cli --datadir $DIR/node1 fault.set action=partition peers='[0]'
Payment channels (docs/channels.md): wallet.new on two nodes, fund the wallets from
alice with ledger.transfer, then
  $BIN/weft-cli --datadir $DIR/node0 channel.open members='["W0","W1@1"]' deposits='[500,500]'
  $BIN/weft-cli --datadir $DIR/node0 channel.pay channel=ID to=1 amount=100
Service channels (docs/asc.md): sell a command on node1, buy from node0's wallet
  $BIN/weft-service --datadir $DIR/node1 upper -- tr a-z A-Z &
  $BIN/weft-cli --datadir $DIR/node0 asc.open provider=W1@1 deposit=100
  $BIN/weft-cli --datadir $DIR/node0 asc.request channel=ID service=upper price=3 payload=hello
Load it: RATE=2000 sh tests/bench/load.sh $DIR
Logs: $DIR/node*/weftd.log.   Stop: make testnet-stop
MSG
	else
		cat <<MSG

Try:
  $BIN/weft-cli --datadir $DIR/node0 peers
  $BIN/weft-cli --datadir $DIR/node0 proto.request data=hello
  $BIN/weft-cli --datadir $DIR/node3 proto.info          # delivered at every node
  $BIN/weft-cli --datadir $DIR/node1 fault.set action=partition peers='[0]'
Logs: $DIR/node*/weftd.log.   Stop: make testnet-stop
MSG
	fi
}

stop() {
	[ -d "$DIR" ] || { echo "testnet: nothing in $DIR"; return 0; }
	for d in $(ls -d "$DIR"/node* 2>/dev/null | sort -V); do
		if running "$d"; then
			"$BIN/weft-cli" --datadir "$d" stop >/dev/null 2>&1 || true
			echo "testnet: stopped $d"
		fi
	done
	# Wait for the locks to be released.
	for d in $(ls -d "$DIR"/node* 2>/dev/null); do
		i=0
		while [ -S "$d/rpc.sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	done
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
clean) stop; rm -rf "$DIR"; echo "testnet: removed $DIR" ;;
*) echo "usage: testnet.sh start|stop|clean" >&2; exit 2 ;;
esac
