#!/bin/sh
# deps.sh - installs the Debian packages weft needs when any is missing.
# As root it runs apt-get; otherwise it prints the exact command and fails.
# Fast when nothing is missing, so every make target can depend on it.
set -eu
PKGS="gcc make pkg-config perl libevent-dev libsodium-dev liblmdb-dev libsecp256k1-dev
libmsgpack-dev libisal-dev libjansson-dev libinih-dev clang libclang-rt-14-dev gnuplot-nox"
missing=""
for p in $PKGS; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$st" in
	*" installed") ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
echo "deps: missing Debian packages:$missing"
cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: run as root: apt-get update && $cmd" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
