#!/bin/sh
# build-image.sh - `make docker-image`: builds the weft image (default
# weft:local; WEFT_IMAGE overrides) FROM scratch out of this machine's own
# build, so that no registry is needed: build/bin/weftd and weft-cli, every
# shared library they load (as ldd finds them, the dynamic loader included)
# at the same paths, a user weft (uid 10001), nsswitch.conf so that
# getaddrinfo resolves the testnet's service names through Docker's DNS,
# and /weft/db (mode 01777, the LMDB volume's mount point).  The image runs
# `weftd --datadir /weft` as uid 10001 and checks its health with
# `weft-cli status`.  It holds no shell: debug with `docker exec NAME
# weft-cli --datadir /weft ...` or from the host (docs/docker.md).  An
# image whose org.weft.content label matches what it would hold is kept, so
# `make docker-testnet` rebuilds it only when the binaries change.
# docker/Dockerfile is the portable alternative for machines that can pull
# debian:bookworm.
set -eu
cd "$(dirname "$0")/.."
SELF=$PWD/docker/build-image.sh
BIN=${BUILD:-build}/bin
IMAGE=${WEFT_IMAGE:-weft:local}

for prog in weftd weft-cli; do
	[ -x "$BIN/$prog" ] || { echo "docker-image: $BIN/$prog is missing; run make first" >&2; exit 1; }
done
command -v docker >/dev/null 2>&1 || { echo "docker-image: docker is not installed" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ctx=$work/context
root=$ctx/rootfs
mkdir -p "$root/usr/bin" "$root/etc" "$root/tmp" "$ctx/weft/db"
chmod 1777 "$root/tmp" "$ctx/weft/db"
cp "$BIN/weftd" "$BIN/weft-cli" "$root/usr/bin/"

# The libraries: "name => /path (addr)" and the loader's "/path (addr)";
# a library ldd cannot find would make the image useless.
if ldd "$BIN/weftd" "$BIN/weft-cli" | grep -q 'not found'; then
	echo "docker-image: a shared library is missing:" >&2
	ldd "$BIN/weftd" "$BIN/weft-cli" | grep 'not found' >&2
	exit 1
fi
libs=$(ldd "$BIN/weftd" "$BIN/weft-cli" |
	sed -n 's/.*=> \(\/[^ ]*\) (0x.*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (0x.*/\1/p' | sort -u)
for lib in $libs; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done

cat >"$root/etc/passwd" <<PASSWD
root:x:0:0:root:/:/nonexistent
weft:x:10001:10001:weft:/weft:/nonexistent
PASSWD
cat >"$root/etc/group" <<GROUP
root:x:0:
weft:x:10001:
GROUP
# glibc 2.34 and later carry the files and dns NSS modules inside libc.so.6,
# so this needs no libnss_*.so.
cat >"$root/etc/nsswitch.conf" <<NSS
passwd: files
group: files
hosts: files dns
NSS

version=$("$BIN/weftd" --version | sed 's/^weftd //')
revision=$(git describe --always --dirty 2>/dev/null || echo unknown)
# The content: every file, its mode, and this script (which writes the
# Dockerfile).
content=$( (cd "$ctx" && find . -printf '%p %m\n' | sort && find . -type f -print0 | sort -z |
	xargs -0 sha256sum && sha256sum <"$SELF") | sha256sum | cut -c1-16)
old=$(docker image inspect -f '{{.Id}} {{index .Config.Labels "org.weft.content"}}' "$IMAGE" 2>/dev/null || true)
if [ "${old#* }" = "$content" ]; then
	echo "docker-image: $IMAGE is up to date (weft $version, content $content)"
	exit 0
fi
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM scratch
COPY rootfs/ /
COPY --chown=10001:10001 weft/ /weft/
LABEL org.weft.version="$version" \\
      org.weft.revision="$revision" \\
      org.weft.content="$content" \\
      org.weft.built-from="docker/build-image.sh" \\
      org.opencontainers.image.title="weft" \\
      org.opencontainers.image.description="weftd, a BFT consensus daemon, and weft-cli" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$revision"
USER 10001:10001
WORKDIR /weft
EXPOSE 7100 9100
HEALTHCHECK --interval=3s --timeout=3s --start-period=30s --retries=3 \\
  CMD ["/usr/bin/weft-cli", "--datadir", "/weft", "--timeout", "2", "status"]
ENTRYPOINT ["/usr/bin/weftd"]
CMD ["--datadir", "/weft"]
DOCKERFILE

echo "docker-image: building $IMAGE (weft $version, $revision) from $BIN"
# The classic builder: BuildKit needs the buildx plugin, which a Debian
# docker.io may lack; FROM scratch needs nothing else.  Its deprecation
# notice is noise; anything else it says is shown when the build fails.
if ! DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$ctx" >"$work/build.log" 2>&1; then
	grep -v -e DEPRECATED -e 'BuildKit is currently disabled' -e 'environment-variable' "$work/build.log" >&2 || true
	echo "docker-image: docker build failed" >&2
	exit 1
fi
# The image this one replaces goes, unless a container still uses it.
[ -z "$old" ] || docker image rm "${old%% *}" >/dev/null 2>&1 || true
size=$(docker image inspect -f '{{.Size}}' "$IMAGE")
echo "docker-image: $IMAGE is $((size / 1024)) KiB ($(echo "$libs" | wc -l) shared libraries)"
