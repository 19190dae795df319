#!/bin/sh
# docker-available.sh - exits 0 when Docker can run a testnet here (the
# daemon answers `docker info` and docker-compose is installed), else says
# "skipped: no docker" and exits 1.  CI and the campaign runner call it
# before anything that needs tools/docker-testnet.sh.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 &&
	command -v docker-compose >/dev/null 2>&1; then
	exit 0
fi
echo "skipped: no docker"
exit 1
