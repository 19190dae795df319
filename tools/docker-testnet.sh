#!/bin/sh
# docker-testnet.sh - a weft committee in Docker containers, one weftd per
# container on a user-defined bridge network, driven by docker-compose
# (docs/docker.md).  `make docker-testnet` / `make docker-testnet-stop` use
# it, and so does the campaign runner, which reads DIR/testnet.env.
#
#   gen   --dir DIR [--nodes N] [--project NAME] [--protocol P] [--brb B]
#         [--mode sparse|dense] [--d D] [--byzantine I=STRATEGY]...
#         [--param K=V]... [--image IMG] [--metrics-port BASE] [--subnet CIDR]
#         [--swarm]
#         writes DIR: genesis.json, node<i>/ (identity.key, weft.conf),
#         docker-compose.yml, testnet.env and, for the dag, the ledger
#         accounts alice (funded) and bob; with --swarm the compose file is
#         for `docker stack deploy` on a swarm of one or more hosts (an
#         overlay network, keys as secrets, one host per node), which up,
#         wait and down leave to the docker stack commands (docs/docker.md)
#   up    --dir DIR [--timeout S]   start the containers and wait until every
#         node has all its N-1 peers connected; print how to reach them
#   wait  --dir DIR [--timeout S]   that wait alone
#   down  --dir DIR                 remove the containers, network and volumes
#   clean                           remove every container, network and volume
#                                   labelled org.weft.testnet, whatever made it
#
# Exit status: 0 done, 1 failed (docker, a node that does not come up, a
# running testnet in the way), 2 usage error (the message names the option).
set -eu
# Option values are never globbed; the few globs below turn it on.
set -f

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${WEFT_BIN:-$ROOT/build/bin}
CLI=$BIN/weft-cli
PEER_PORT=7100
METRICS_PORT=9100
LABEL=org.weft.testnet
NL='
'

usage() {
	cat <<'USAGE'
usage: docker-testnet.sh gen  --dir DIR [--nodes N] [--project NAME] [--protocol P] [--brb B]
                              [--mode sparse|dense] [--d D] [--byzantine I=STRATEGY]...
                              [--param K=V]... [--image IMG] [--metrics-port BASE] [--subnet CIDR]
                              [--swarm]
       docker-testnet.sh up   --dir DIR [--timeout S]
       docker-testnet.sh wait --dir DIR [--timeout S]
       docker-testnet.sh down --dir DIR
       docker-testnet.sh clean
USAGE
}

die() {
	echo "docker-testnet: $*" >&2
	exit 1
}

usage_error() {
	echo "docker-testnet: $*" >&2
	usage >&2
	exit 2
}

# is_uint VALUE: a decimal number without sign or leading zero.
is_uint() {
	case "$1" in
	0) return 0 ;;
	'' | 0* | *[!0-9]*) return 1 ;;
	esac
	[ ${#1} -le 9 ]
}

# The value of option $1, which must be present as $2.
need_value() {
	[ $# -ge 2 ] || usage_error "option '$1' needs a value"
}

# Paths end up unquoted in testnet.env and inside YAML strings.
check_path() {
	case "$1" in
	*[!A-Za-z0-9_./+-]*) usage_error "--dir '$1': use letters, digits and _ . / + - only" ;;
	esac
}

compose() {
	docker-compose -p "$PROJECT" -f "$DIR/docker-compose.yml" "$@"
}

# Loads DIR/testnet.env (written by gen) or fails; so does a --swarm DIR,
# which the docker stack commands run.
load_env() {
	[ -f "$DIR/testnet.env" ] || die "$DIR holds no testnet (no testnet.env); run gen first"
	# shellcheck disable=SC1091
	. "$DIR/testnet.env"
	[ "${SWARM:-0}" = 0 ] ||
		die "$DIR is a swarm testnet (gen --swarm): docker stack deploy -c $DIR/docker-compose.yml $PROJECT; docker stack rm $PROJECT (docs/docker.md)"
}

# Running containers of project $1, one id a line.
running_containers() {
	docker ps -q --filter "label=$LABEL=$1" || die "docker ps failed; is the docker daemon reachable?"
}

# Removes the containers (running or not), networks and volumes whose label
# matches $1 (org.weft.testnet or org.weft.testnet=NAME) and says how many
# (with $2 = quiet, only when there were some).
remove_labelled() {
	containers=$(docker ps -aq --filter "label=$1")
	networks=$(docker network ls -q --filter "label=$1")
	volumes=$(docker volume ls -q --filter "label=$1")
	# shellcheck disable=SC2086
	[ -z "$containers" ] || docker rm -f -v $containers >/dev/null
	# shellcheck disable=SC2086
	[ -z "$networks" ] || docker network rm $networks >/dev/null
	# shellcheck disable=SC2086
	[ -z "$volumes" ] || docker volume rm $volumes >/dev/null
	[ "${2:-}" != quiet ] || [ -n "$containers$networks$volumes" ] || return 0
	echo "docker-testnet: removed what was labelled $1: containers $(echo $containers | wc -w)," \
		"networks $(echo $networks | wc -w), volumes $(echo $volumes | wc -w)"
}

# ---- gen ----

gen() {
	DIR="" N=4 PROJECT=weft PROTOCOL=dag BRB="" MODE="" D="" IMAGE=weft:local
	MBASE=9100 SUBNET=172.28.0.0/24 PARAMS="" BYZ="" SWARM=0
	while [ $# -gt 0 ]; do
		case "$1" in
		--dir) need_value "$@"; DIR=$2 ;;
		--nodes) need_value "$@"; N=$2 ;;
		--project) need_value "$@"; PROJECT=$2 ;;
		--protocol) need_value "$@"; PROTOCOL=$2 ;;
		--brb) need_value "$@"; BRB=$2 ;;
		--mode) need_value "$@"; MODE=$2 ;;
		--d) need_value "$@"; D=$2 ;;
		--byzantine) need_value "$@"; BYZ="$BYZ $2" ;;
		--param) need_value "$@"; PARAMS="$PARAMS$NL$2" ;;
		--image) need_value "$@"; IMAGE=$2 ;;
		--metrics-port) need_value "$@"; MBASE=$2 ;;
		--subnet) need_value "$@"; SUBNET=$2 ;;
		--swarm) SWARM=1; shift; continue ;;
		*) usage_error "gen: unknown option '$1'" ;;
		esac
		shift 2
	done

	[ -n "$DIR" ] || usage_error "gen: --dir DIR is required"
	case "$DIR" in
	/*) check_path "$DIR" ;;
	*) check_path "$PWD/$DIR" ;;
	esac
	if ! is_uint "$N" || [ "$N" -lt 1 ] || [ "$N" -gt 64 ]; then
		usage_error "--nodes wants a number of nodes from 1 to 64, not '$N'"
	fi
	F=$(((N - 1) / 3))
	case "$PROJECT" in
	'' | [!a-z0-9]* | *[!a-z0-9_-]*) usage_error "--project '$PROJECT': lower-case letters, digits, _ and - (first a letter or digit)" ;;
	esac
	[ ${#PROJECT} -le 40 ] || usage_error "--project '$PROJECT': at most 40 characters"
	case "$PROTOCOL" in
	'' | *[!a-z0-9_]*) usage_error "--protocol '$PROTOCOL': a protocol name (dag, beb, bracha, echo, coded, amortized)" ;;
	esac
	if [ "$PROTOCOL" != dag ]; then
		[ -z "$BRB$MODE$D" ] || usage_error "--brb, --mode and --d are parameters of --protocol dag, not $PROTOCOL"
	fi
	case "$BRB" in
	'' | echo | bracha | coded | amortized) ;;
	*) usage_error "--brb '$BRB': echo, bracha, coded or amortized" ;;
	esac
	case "$MODE" in
	'' | sparse | dense) ;;
	*) usage_error "--mode '$MODE': sparse or dense" ;;
	esac
	if [ -n "$D" ] && { ! is_uint "$D" || [ "$D" -lt 1 ] || [ "$D" -gt 1024 ]; }; then
		usage_error "--d '$D': a number of sampled references from 1 to 1024"
	fi
	# K=V lists are split at newlines only: a V may hold spaces.
	genparams=""
	[ -z "$BRB" ] || genparams="$genparams${NL}brb=$BRB"
	[ -z "$MODE" ] || genparams="$genparams${NL}mode=$MODE"
	[ -z "$D" ] || genparams="$genparams${NL}d=$D"
	IFS=$NL
	for kv in $PARAMS; do
		key=${kv%%=*}
		case "$kv" in
		*=*) ;;
		*) usage_error "--param wants K=V, not '$kv'" ;;
		esac
		case "$key" in
		'' | *[!A-Za-z0-9_.-]*) usage_error "--param '$kv': K must be letters, digits, '_', '-' or '.'" ;;
		balances) usage_error "--param '$kv': the testnet funds alice itself; balances cannot be set" ;;
		esac
		for seen in $genparams; do
			[ "${seen%%=*}" != "$key" ] ||
				usage_error "--param '$kv': $key is given twice (--brb, --mode and --d set brb, mode and d)"
		done
		genparams="$genparams$NL$kv"
	done
	set --
	for kv in $genparams; do
		set -- "$@" --param "$kv"
	done
	IFS=' 	'"$NL"
	case "$IMAGE" in
	'' | *[!A-Za-z0-9_./:@-]*) usage_error "--image '$IMAGE': an image name such as weft:local" ;;
	esac
	if ! is_uint "$MBASE" || [ "$MBASE" -lt 1 ] || [ $((MBASE + N - 1)) -gt 65535 ]; then
		usage_error "--metrics-port '$MBASE': a port such that BASE+$((N - 1)) is at most 65535"
	fi
	prefix=${SUBNET#*/}
	net=${SUBNET%/*}
	net3=${net%.*}
	if [ "$prefix" = "$SUBNET" ] || ! is_uint "$prefix" || [ "$prefix" -lt 8 ] || [ "$prefix" -gt 24 ] ||
		[ "${net##*.}" != 0 ] || ! echo "$net3" | grep -Eq '^(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])){2}$'; then
		usage_error "--subnet '$SUBNET': an IPv4 network A.B.C.0/P with P from 8 to 24 (nodes at A.B.C.10 and up)"
	fi
	byz_nodes=""
	for b in $BYZ; do
		i=${b%%=*}
		strategy=${b#*=}
		[ "$i" != "$b" ] || usage_error "--byzantine wants I=STRATEGY, not '$b'"
		if ! is_uint "$i" || [ "$i" -ge "$N" ]; then
			usage_error "--byzantine '$b': node index from 0 to $((N - 1)), not '$i'"
		fi
		case "$strategy" in
		'' | *[!A-Za-z0-9_]*) usage_error "--byzantine '$b': STRATEGY is a name such as omission, corrupt, equivocate or bad_refs (docs/faults.md)" ;;
		esac
		for seen in $byz_nodes; do
			[ "$seen" != "$i" ] || usage_error "--byzantine '$b': node $i is given twice"
		done
		byz_nodes="$byz_nodes $i"
	done
	nbyz=$(echo $byz_nodes | wc -w)
	[ "$nbyz" -le "$F" ] ||
		usage_error "--byzantine: $nbyz Byzantine nodes, but a committee of $N tolerates at most f = $F"
	[ -x "$CLI" ] || die "$CLI is missing; run make first (or set WEFT_BIN)"

	# A testnet of this project, or the one DIR held, must not be running.
	# (Without docker, gen only writes the files.)
	old=""
	if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR")" ]; then
		[ -f "$DIR/testnet.env" ] ||
			die "$DIR is not empty and holds no testnet (no testnet.env); choose another --dir"
		old=$(sed -n 's/^PROJECT=//p' "$DIR/testnet.env")
	fi
	docker=""
	if command -v docker >/dev/null 2>&1; then
		docker=yes
		[ -z "$old" ] || [ -z "$(running_containers "$old")" ] ||
			die "$DIR holds a running testnet (project $old); stop it first: $0 down --dir $DIR"
		[ -z "$(running_containers "$PROJECT")" ] ||
			die "project $PROJECT is running from another directory; stop it first ($0 down --dir THAT_DIR, or $0 clean)"
	fi

	# Stage everything next to DIR, so that a failing genesis leaves DIR
	# as it was.
	mkdir -p "$(dirname "$DIR")"
	stage=$(mktemp -d "$(dirname "$DIR")/.docker-testnet.XXXXXX")
	trap 'rm -rf "$stage"' EXIT
	trap 'exit 130' INT TERM
	fund=""
	if [ "$PROTOCOL" = dag ]; then
		for who in alice bob; do
			"$CLI" ledger-keygen --out "$stage/$who.key" >"$stage/$who.account.json"
		done
		alice=$(sed -n 's/.*"account": *"\([0-9a-f]*\)".*/\1/p' "$stage/alice.account.json")
		fund="--fund $alice=1000000"
	fi
	# shellcheck disable=SC2086
	"$CLI" genesis --nodes "$N" --out "$stage" --host 'node{i}' --base-port $PEER_PORT --protocol "$PROTOCOL" \
		--chain-id weft-docker --force $fund "$@" >/dev/null || {
		st=$?
		[ $st -eq 2 ] && exit 2
		die "weft-cli genesis failed"
	}

	# What is left of DIR's old testnet and of this project goes: stopped
	# containers, the network and the volumes (a volume holds a database of
	# old keys, which weftd would refuse), then DIR's old files.
	if [ -n "$docker" ]; then
		[ -z "$old" ] || [ "$old" = "$PROJECT" ] || remove_labelled "$LABEL=$old" quiet
		remove_labelled "$LABEL=$PROJECT" quiet
	fi
	set +f
	if [ -n "$old" ]; then
		rm -rf "$DIR"/node* "$DIR/genesis.json" "$DIR/docker-compose.yml" "$DIR/testnet.env" "$DIR/hosts" \
			"$DIR"/alice.* "$DIR"/bob.*
	fi
	mkdir -p "$DIR"
	for f in "$stage"/*; do
		mv "$f" "$DIR/"
	done
	set -f
	DIR=$(cd "$DIR" && pwd)

	if [ "$(id -u)" -eq 0 ]; then
		user=10001:10001
	else
		user=$(id -u):$(id -g)
	fi
	i=0
	while [ $i -lt "$N" ]; do
		cat >"$DIR/node$i/weft.conf" <<CONF
# weft.conf for node$i of testnet $PROJECT, written by tools/docker-testnet.sh gen.
# weftd runs in a container with --datadir /weft; /weft/db is the volume
# $PROJECT-node$i-db and /weft/genesis.json is $DIR/genesis.json.
[node]
genesis = /weft/genesis.json
listen = 0.0.0.0:$PEER_PORT
[metrics]
listen = 0.0.0.0:$METRICS_PORT
[log]
# stderr: docker logs $PROJECT-node$i
file = -
[fault]
enabled = true
CONF
		[ "$(id -u)" -ne 0 ] || chown -R 10001:10001 "$DIR/node$i"
		i=$((i + 1))
	done

	if [ $SWARM = 1 ]; then
		write_stack >"$DIR/docker-compose.yml"
	else
		write_hosts >"$DIR/hosts"
		write_compose >"$DIR/docker-compose.yml"
	fi
	write_env >"$DIR/testnet.env"
	echo "docker-testnet: generated $N nodes in $DIR (project $PROJECT, network $PROJECT-net $SUBNET, image $IMAGE)"
}

# strategy_of I: the --byzantine STRATEGY of node I, or nothing.
strategy_of() {
	for b in $BYZ; do
		[ "${b%%=*}" != "$1" ] || echo "${b#*=}"
	done
}

# DIR/hosts, every container's /etc/hosts: the nodes' names and addresses.
# weftd resolves a peer's name with getaddrinfo, synchronously, on every
# dial.  From this file that is instant even while the container is cut
# from the network (docker network disconnect), where a query to Docker's
# DNS would time out and stall the node, RPC included, for seconds; and
# Docker rewrites its own /etc/hosts on disconnect and connect.
write_hosts() {
	echo "# hosts - /etc/hosts of every container of testnet $PROJECT, written by tools/docker-testnet.sh gen"
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
	i=0
	while [ $i -lt "$N" ]; do
		printf '%s\tnode%d\n' "$net3.$((10 + i))" $i
		i=$((i + 1))
	done
}

write_compose() {
	cat <<HEAD
# docker-compose.yml - a weft testnet of $N nodes (project $PROJECT), written by
# tools/docker-testnet.sh gen; regenerate rather than edit.  Run it with
# tools/docker-testnet.sh up|down --dir $DIR, or
# docker-compose -p $PROJECT -f $DIR/docker-compose.yml ...
version: "3.7"
services:
HEAD
	i=0
	while [ $i -lt "$N" ]; do
		strategy=$(strategy_of $i)
		byz=""
		[ -z "$strategy" ] || byz=", \"--byzantine\", \"$strategy\""
		cat <<SERVICE
  node$i:
    image: $IMAGE
    container_name: $PROJECT-node$i
    hostname: node$i
    user: "$user"
    command: ["--datadir", "/weft"$byz]
    volumes:
      - type: bind
        source: $DIR/node$i
        target: /weft
      - type: bind
        source: $DIR/genesis.json
        target: /weft/genesis.json
        read_only: true
      - type: bind
        source: $DIR/hosts
        target: /etc/hosts
        read_only: true
      - type: volume
        source: node$i-db
        target: /weft/db
    networks:
      net:
        ipv4_address: $net3.$((10 + i))
    ports:
      - "127.0.0.1:$((MBASE + i)):$METRICS_PORT"
    labels:
      $LABEL: "$PROJECT"
      org.weft.node: "$i"
    stop_grace_period: 10s
    restart: "no"
SERVICE
		i=$((i + 1))
	done
	cat <<NET
networks:
  net:
    name: $PROJECT-net
    driver: bridge
    ipam:
      config:
        - subnet: $SUBNET
    labels:
      $LABEL: "$PROJECT"
volumes:
NET
	i=0
	while [ $i -lt "$N" ]; do
		cat <<VOLUME
  node$i-db:
    name: $PROJECT-node$i-db
    labels:
      $LABEL: "$PROJECT"
      org.weft.node: "$i"
VOLUME
		i=$((i + 1))
	done
}

# The --swarm variant: `docker stack deploy -c DIR/docker-compose.yml
# PROJECT`.  Nothing of the host's DIR is mounted, since tasks may run on
# other hosts: the genesis and each weft.conf are configs, each identity.key
# a secret, all placed in the image's /weft (owned by uid 10001); the
# database is the volume PROJECT-node<i>-db on whichever host runs node i,
# which the constraint node.labels.weft.node<i> == true pins.  Peers find
# each other by service name on the overlay network: endpoint_mode dnsrr
# makes the name resolve to the task itself (weftd resolves on every dial,
# so a replaced task is found), where a virtual IP took half a minute to
# route to a new task.  Metrics are published on the task's host.
write_stack() {
	cat <<HEAD
# docker-compose.yml - a weft testnet of $N nodes for a Docker swarm (stack
# $PROJECT), written by tools/docker-testnet.sh gen --swarm; regenerate rather
# than edit.  Label one host per node, then deploy from a manager:
#   docker node update --label-add weft.node<i>=true HOST   (for each i)
#   docker stack deploy -c $DIR/docker-compose.yml $PROJECT
#   docker stack rm $PROJECT
version: "3.7"
services:
HEAD
	i=0
	while [ $i -lt "$N" ]; do
		strategy=$(strategy_of $i)
		byz=""
		[ -z "$strategy" ] || byz=", \"--byzantine\", \"$strategy\""
		cat <<SERVICE
  node$i:
    image: $IMAGE
    hostname: node$i
    user: "10001:10001"
    command: ["--datadir", "/weft"$byz]
    configs:
      - source: genesis
        target: /weft/genesis.json
        mode: 0444
      - source: node$i-conf
        target: /weft/weft.conf
        mode: 0444
    secrets:
      - source: node$i-key
        target: /weft/identity.key
        uid: "10001"
        gid: "10001"
        mode: 0400
    volumes:
      - type: volume
        source: node$i-db
        target: /weft/db
    networks:
      - net
    ports:
      - target: $METRICS_PORT
        published: $((MBASE + i))
        protocol: tcp
        mode: host
    labels:
      $LABEL: "$PROJECT"
      org.weft.node: "$i"
    stop_grace_period: 10s
    deploy:
      replicas: 1
      endpoint_mode: dnsrr
      restart_policy:
        condition: none
      placement:
        constraints: ["node.labels.weft.node$i == true"]
      labels:
        $LABEL: "$PROJECT"
        org.weft.node: "$i"
SERVICE
		i=$((i + 1))
	done
	cat <<NET
networks:
  net:
    name: $PROJECT-net
    driver: overlay
    attachable: true
    ipam:
      config:
        - subnet: $SUBNET
    labels:
      $LABEL: "$PROJECT"
configs:
  genesis:
    file: $DIR/genesis.json
NET
	i=0
	while [ $i -lt "$N" ]; do
		printf '  node%d-conf:\n    file: %s\n' $i "$DIR/node$i/weft.conf"
		i=$((i + 1))
	done
	echo "secrets:"
	i=0
	while [ $i -lt "$N" ]; do
		printf '  node%d-key:\n    file: %s\n' $i "$DIR/node$i/identity.key"
		i=$((i + 1))
	done
	echo "volumes:"
	i=0
	while [ $i -lt "$N" ]; do
		cat <<VOLUME
  node$i-db:
    name: $PROJECT-node$i-db
    labels:
      $LABEL: "$PROJECT"
      org.weft.node: "$i"
VOLUME
		i=$((i + 1))
	done
}

write_env() {
	cat <<HEAD
# testnet.env - the facts of the docker testnet in this directory, written by
# tools/docker-testnet.sh gen for scripts: \`. DIR/testnet.env\`.  One KEY=value
# a line; only BYZANTINE (node indices, space-separated) is quoted.
PROJECT=$PROJECT
N=$N
F=$F
PROTOCOL=$PROTOCOL
NETWORK=$PROJECT-net
IMAGE=$IMAGE
SUBNET=$SUBNET
DIR=$DIR
COMPOSE=$DIR/docker-compose.yml
SWARM=$SWARM
BYZANTINE="$(echo $byz_nodes | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')"
HEAD
	i=0
	while [ $i -lt "$N" ]; do
		cat <<NODE
NODE${i}_IP=$net3.$((10 + i))
NODE${i}_CONTAINER=$PROJECT-node$i
NODE${i}_DATADIR=$DIR/node$i
NODE${i}_METRICS=127.0.0.1:$((MBASE + i))
NODE${i}_STRATEGY=$(strategy_of $i)
NODE
		i=$((i + 1))
	done
}

# ---- up, wait, down, clean ----

# Parses --dir DIR [--timeout S] for up, wait and down.
dir_opts() {
	DIR="" TIMEOUT=60
	cmd=$1
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--dir) need_value "$@"; DIR=$2 ;;
		--timeout)
			[ "$cmd" != down ] || usage_error "down: unknown option '$1'"
			need_value "$@"
			TIMEOUT=$2
			is_uint "$TIMEOUT" && [ "$TIMEOUT" -ge 1 ] || usage_error "--timeout wants seconds (1 or more), not '$2'"
			;;
		*) usage_error "$cmd: unknown option '$1'" ;;
		esac
		shift 2
	done
	[ -n "$DIR" ] || usage_error "$cmd: --dir DIR is required"
}

# Waits until every node reports N-1 connected peers.  A node whose
# container is not running, or that is not there by the deadline, fails
# the wait with its log.
wait_ready() {
	want=$((N - 1))
	deadline=$(($(date +%s) + TIMEOUT))
	pending=$(seq 0 $((N - 1)))
	while [ -n "$pending" ]; do
		waiting=""
		running=""
		for i in $pending; do
			datadir=$(eval echo "\$NODE${i}_DATADIR")
			out=$("$CLI" --datadir "$datadir" --timeout 2 status 2>/dev/null) || out=""
			! echo "$out" | grep -Eq "\"connected\": $want,?\$" || continue
			[ -n "$running" ] || running=" $(docker ps --filter "label=$LABEL=$PROJECT" --filter status=running \
				--format '{{.Names}}' | tr '\n' ' ')"
			case "$running" in
			*" $PROJECT-node$i "*) ;;
			*) not_ready "$i" "is not running" ;;
			esac
			waiting="$waiting $i"
		done
		pending=$waiting
		[ -z "$pending" ] || [ "$(date +%s)" -lt "$deadline" ] ||
			not_ready "${pending# }" "did not connect to its $want peers within $TIMEOUT s"
		[ -z "$pending" ] || sleep 0.2
	done
	echo "docker-testnet: $N nodes up, each connected to its $want peers"
}

# not_ready I WHY: reports node I (the first of a list) with its log; fails.
not_ready() {
	i=${1%% *}
	echo "docker-testnet: node$i ($PROJECT-node$i) $2; its log:" >&2
	docker logs --tail 30 "$PROJECT-node$i" >&2 2>&1 || true
	compose ps >&2 || true
	exit 1
}

up() {
	dir_opts up "$@"
	load_env
	[ -x "$CLI" ] || die "$CLI is missing; run make first (or set WEFT_BIN)"
	docker image inspect "$IMAGE" >/dev/null 2>&1 ||
		die "image $IMAGE is missing; build it with make docker-image (nothing is pulled)"
	compose up -d --no-build
	wait_ready
	show_nodes
}

show_nodes() {
	cli=$CLI
	case "$cli" in "$PWD"/*) cli=${cli#"$PWD"/} ;; esac
	dir=$DIR
	case "$dir" in "$PWD"/*) dir=${dir#"$PWD"/} ;; esac
	stop="$0 down --dir $dir"
	[ "$DIR" != "$ROOT/docker-testnet" ] || stop="make docker-testnet-stop"
	echo
	i=0
	while [ $i -lt "$N" ]; do
		strategy=$(eval echo "\$NODE${i}_STRATEGY")
		echo "  node$i $(eval echo "\$NODE${i}_IP")${strategy:+ (byzantine $strategy)}:"
		echo "    $cli --datadir $dir/node$i status"
		echo "    curl -s http://$(eval echo "\$NODE${i}_METRICS")/metrics"
		echo "    docker logs $PROJECT-node$i"
		i=$((i + 1))
	done
	if [ "$PROTOCOL" = dag ]; then
		bob=$(sed -n 's/.*"account": *"\([0-9a-f]*\)".*/\1/p' "$DIR/bob.account.json")
		last=$((N - 1))
		cat <<MSG

Try (the DAG orders transactions into the ledger; alice holds 1000000):
  $cli --datadir $dir/node0 tx.submit data=hello
  $cli --datadir $dir/node$last dag.info             # committed_txs, order_hash, ledger_hash
  $cli --datadir $dir/node0 tx.status digest=DIGEST
  $cli --datadir $dir/node1 ledger.transfer to=$bob amount=250 key=$dir/alice.key
  $cli --datadir $dir/node$last ledger.balance account=$bob
  $cli --datadir $dir/node1 fault.set action=partition peers='[0]'
  docker kill -s KILL $PROJECT-node$last; docker start $PROJECT-node$last   # a crash and a restart
  docker network disconnect $NETWORK $PROJECT-node$last; docker network connect --ip $(eval echo "\$NODE${last}_IP") $NETWORK $PROJECT-node$last
Stop: $stop
MSG
	else
		cat <<MSG

Try:
  $cli --datadir $dir/node0 peers
  $cli --datadir $dir/node0 proto.request data=hello
  $cli --datadir $dir/node$((N - 1)) proto.info          # delivered at every node
  $cli --datadir $dir/node1 fault.set action=partition peers='[0]'
Stop: $stop
MSG
	fi
}

wait_cmd() {
	dir_opts wait "$@"
	load_env
	[ -x "$CLI" ] || die "$CLI is missing; run make first (or set WEFT_BIN)"
	wait_ready
}

down() {
	dir_opts down "$@"
	if [ ! -f "$DIR/testnet.env" ]; then
		echo "docker-testnet: no testnet in $DIR; nothing to stop"
		return 0
	fi
	load_env
	compose down -v --remove-orphans
	echo "docker-testnet: removed the containers, network and volumes of project $PROJECT"
}

clean() {
	[ $# -eq 0 ] || usage_error "clean: unknown option '$1'"
	remove_labelled "$LABEL"
}

[ $# -ge 1 ] || usage_error "no command given"
command=$1
shift
case "$command" in
gen) gen "$@" ;;
up) up "$@" ;;
wait) wait_cmd "$@" ;;
down) down "$@" ;;
clean) clean "$@" ;;
-h | --help | help) usage ;;
*) usage_error "unknown command '$command'" ;;
esac
