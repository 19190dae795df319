#!/bin/sh
# run-node.sh - `make run` / `make stop`: one weftd (a one-node committee)
# in ./weft-data, in the background, logging to weft-data/weftd.log.
set -eu
cd "$(dirname "$0")/.."
BIN=${BUILD:-build}/bin
DIR=${WEFT_DATADIR:-weft-data}
case "${1:-start}" in
start)
	if [ -S "$DIR/rpc.sock" ] && "$BIN/weft-cli" --datadir "$DIR" status >/dev/null 2>&1; then
		echo "weftd already running in $DIR"
	else
		mkdir -p "$DIR"
		nohup "$BIN/weftd" --datadir "$DIR" >>"$DIR/weftd.log" 2>&1 &
		i=0
		until "$BIN/weft-cli" --datadir "$DIR" status >/dev/null 2>&1; do
			i=$((i + 1))
			if [ $i -gt 50 ]; then
				echo "weftd did not start; last lines of $DIR/weftd.log:" >&2
				tail -n 20 "$DIR/weftd.log" >&2
				exit 1
			fi
			sleep 0.1
		done
		echo "weftd started in $DIR (log: $DIR/weftd.log)"
	fi
	"$BIN/weft-cli" --datadir "$DIR" status
	cat <<MSG

Talk to it:
  $BIN/weft-cli --datadir $DIR help
  $BIN/weft-cli --datadir $DIR status
Stop it:
  make stop
MSG
	;;
stop)
	if "$BIN/weft-cli" --datadir "$DIR" stop >/dev/null 2>&1; then
		echo "weftd in $DIR stopped"
	else
		echo "no weftd running in $DIR"
	fi
	;;
*)
	echo "usage: run-node.sh start|stop" >&2
	exit 2
	;;
esac
