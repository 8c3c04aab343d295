#!/usr/bin/env bash
# Build local stand-ins for the base images docker-compose.yml and the Dockerfile name,
# for machines that cannot pull from an image registry: each is a Debian bookworm root
# file system made by debootstrap from Debian's packages, imported under the name the
# files use.  An image that is already present is left alone.
#
#   scripts/stand-in-images.sh [ENGINE]     # ENGINE: podman (default) or docker
#
# * python:3.11-slim-bookworm  Debian's python3 (3.11) and pip; pip may install into the
#   system Python (PIP_BREAK_SYSTEM_PACKAGES), as in the official image.  The host's CA
#   bundle is copied in, so builds reach PyPI and apt through a proxy the host trusts; the
#   CAs in it that Debian lacks are installed as local CAs too, so that a JRE installed on
#   top (the spark image) trusts them and Spark's Ivy reaches Maven Central.
# * zookeeper:3.8              Debian's zookeeper (3.8) on its JRE, started like the
#   official image: zoo.cfg from ZOO_* variables, data in /data and /datalog.
# Needs root and debootstrap (apt-get install debootstrap).
set -euo pipefail
ENGINE="${1:-podman}"
SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$(mktemp -d /tmp/minikafka-stand-in.XXXXXX)"
trap 'rm -rf "$work"' EXIT

have() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

extra_cas() {  # extra_cas DEBIAN_BUNDLE DIR: the host bundle's CAs not in DEBIAN_BUNDLE, one .crt each in DIR
  python3 - "$1" "$2" <<'PY'
import re, sys
from pathlib import Path
pem = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
def certs(path):
    return [re.sub(r"\s+", "", c) for c in pem.findall(Path(path).read_text())]
known = set(certs(sys.argv[1]))
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
for i, c in enumerate(pem.findall(Path("/etc/ssl/certs/ca-certificates.crt").read_text())):
    if re.sub(r"\s+", "", c) not in known:
        (out / f"host-ca-{i}.crt").write_text(c + "\n")
PY
}

rootfs() {  # rootfs DIR PACKAGES
  debootstrap --variant=minbase --include="$2" "$SUITE" "$1" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2; return 1; }
  # The host's CA bundle, and each CA in it that Debian's ca-certificates lacks (a proxy's)
  # as a local CA: update-ca-certificates links it, so that a JRE installed in an image
  # built on this one trusts it too (ca-certificates-java imports local CAs into cacerts).
  extra_cas "$1/etc/ssl/certs/ca-certificates.crt" "$1/usr/local/share/ca-certificates"
  chroot "$1" update-ca-certificates >/dev/null 2>&1 || true
  cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*
  # the image's apt reads the same mirror as debootstrap did
  echo "deb $MIRROR $SUITE main" > "$1/etc/apt/sources.list"
}

if have python:3.11-slim-bookworm; then
  echo "python:3.11-slim-bookworm: present"
else
  echo "python:3.11-slim-bookworm: no registry image here; building a stand-in from Debian's python3 with debootstrap"
  rootfs "$work/python" python3,python3-pip,ca-certificates
  ln -sf python3 "$work/python/usr/bin/python"
  tar -C "$work/python" -c . | "$ENGINE" import \
    --change 'ENV PIP_BREAK_SYSTEM_PACKAGES=1' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' - docker.io/library/python:3.11-slim-bookworm >/dev/null
  rm -rf "$work/python"
fi

if have zookeeper:3.8; then
  echo "zookeeper:3.8: present"
else
  echo "zookeeper:3.8: no registry image here; building a stand-in from Debian's zookeeper with debootstrap"
  rootfs "$work/zk" zookeeper,openjdk-17-jre-headless,netcat-openbsd,ca-certificates
  cat > "$work/zk/usr/local/bin/zookeeper-entrypoint" <<'SH'
#!/bin/sh
# Starts ZooKeeper in the foreground like the official image: zoo.cfg from ZOO_* variables.
set -e
mkdir -p /conf /data /datalog
cat > /conf/zoo.cfg <<CFG
dataDir=/data
dataLogDir=/datalog
clientPort=2181
tickTime=${ZOO_TICK_TIME:-2000}
initLimit=${ZOO_INIT_LIMIT:-5}
syncLimit=${ZOO_SYNC_LIMIT:-2}
maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}
4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}
admin.enableServer=${ZOO_ADMINSERVER_ENABLED:-true}
CFG
# Debian's classpath (zookeeper.jar names its dependencies); logs to the console
exec java -Dzookeeper.log.dir=/datalog -Dzookeeper.root.logger=INFO,CONSOLE \
  -Dlog4j.configuration=file:/etc/zookeeper/conf/log4j.properties \
  -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
SH
  chmod +x "$work/zk/usr/local/bin/zookeeper-entrypoint"
  tar -C "$work/zk" -c . | "$ENGINE" import \
    --change 'ENTRYPOINT ["/usr/local/bin/zookeeper-entrypoint"]' \
    --change 'EXPOSE 2181' - docker.io/library/zookeeper:3.8 >/dev/null
  rm -rf "$work/zk"
fi
