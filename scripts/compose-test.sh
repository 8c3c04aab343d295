#!/usr/bin/env bash
# Runs docker-compose.yml for real and walks the README's Docker steps: build, up, create
# a topic, produce 1,000 records with acks=all, kill a broker and see its leaderships and
# ISR places move, start it and see it rejoin, reach the dashboards and the Kafka listener
# on the published ports, run the spark profile's job over the 1,000 committed records on
# the profile's Spark standalone cluster (spark-master and spark-worker, started by the
# first job), with format("minikafka") and with Spark's own format("kafka") (the image resolved
# spark-sql-kafka-0-10 from Maven Central when it was built), and tear everything down (down -v).  Prints the time of each step and the image sizes.
#
#   scripts/compose-test.sh
#
# Uses docker where an engine answers; otherwise podman (Debian's) with its
# Docker-compatible socket and Debian's docker-compose, which it installs and configures
# when missing (needs root): runc as the runtime, default ulimits (no CAP_SYS_RESOURCE
# needed), and a loop that runs the healthchecks (nothing else does without systemd).
# Where the base images cannot be pulled it builds stand-ins (scripts/stand-in-images.sh).
# Uses host ports 9092-9094 and 29092-29094, as the compose file publishes them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PROJECT=minikafka-compose-test
START=$(date +%s)
LAST=$START
step() {  # step "what was done": prints the seconds since the previous step
  local now; now=$(date +%s)
  printf 'compose-test: %-58s %4ss (total %ss)\n' "$1" "$((now - LAST))" "$((now - START))"
  LAST=$now
}
fail() {
  echo "compose-test: FAILED: $*" >&2
  if [ -n "${UP:-}" ]; then  # what the containers say
    $COMPOSE -p "$PROJECT" ps >&2 || true
    $COMPOSE -p "$PROJECT" logs --tail 25 >&2 || true
  fi
  exit 1
}

pids=()
HEALTH_LOOP=""
stop_health_loop() {  # before containers go: no healthcheck exec may race their removal
  # the loop finishes the round it is in (a healthcheck cut short leaves a conmon behind)
  if [ -n "$HEALTH_LOOP" ]; then touch "$SOCKDIR/stop-health"; wait "$HEALTH_LOOP" 2>/dev/null; HEALTH_LOOP=""; fi
}
cleanup() {
  set +e
  stop_health_loop
  if [ -n "${COMPOSE:-}" ]; then
    $COMPOSE -p "$PROJECT" --profile spark down -v --remove-orphans >/dev/null 2>&1
  fi
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  [ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
}
trap cleanup EXIT

# -- the engine ----------------------------------------------------------------------
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  ENGINE=docker
  if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"; else COMPOSE=docker-compose; fi
else
  ENGINE=podman
  need=()
  command -v podman >/dev/null 2>&1 || need+=(podman)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
  # service names resolve inside a compose network only with the CNI dnsname plugin
  [ -x /usr/lib/cni/dnsname ] || need+=(golang-github-containernetworking-plugin-dnsname)
  # the spark service runs with init: true, which is catatonit under podman
  [ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)
  command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need+=(iptables)
  if [ ${#need[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || fail "podman and friends are missing (${need[*]}); run as root to install them"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
      containernetworking-plugins golang-github-containernetworking-plugin-dnsname dnsmasq-base slirp4netns uidmap >/dev/null
  fi
  mkdir -p /etc/containers
  if ! grep -qs 'minikafka compose-test' /etc/containers/containers.conf; then
    # crun refuses hybrid cgroups: runc
    printf '# written by minikafka compose-test\n[engine]\nruntime = "runc"\n' > /etc/containers/containers.conf
  fi
  COMPOSE=docker-compose
fi
step "engine: $ENGINE, compose: $COMPOSE"

# -- base images -----------------------------------------------------------------------
missing=0
for image in python:3.11-slim-bookworm zookeeper:3.8; do
  $ENGINE image inspect "$image" >/dev/null 2>&1 && continue
  timeout 60 $ENGINE pull -q "docker.io/library/$image" >/dev/null 2>&1 || missing=1
done
if [ $missing = 1 ]; then
  echo "compose-test: base images cannot be pulled here: building stand-ins from Debian packages"
  scripts/stand-in-images.sh "$ENGINE"
fi
step "base images"

if [ "$ENGINE" = podman ]; then
  if ! grep -qs 'default_ulimits' /etc/containers/containers.conf; then
    # Containers must not raise a limit (no CAP_SYS_RESOURCE here): find the largest
    # nofile and nproc that a container may set, and make them the defaults.
    fits() { podman run --rm --ulimit "nofile=$1:$1" --ulimit "nproc=$2:$2" python:3.11-slim-bookworm true >/dev/null 2>&1; }
    nofile=""; nproc=""
    for f in 1048576 65536 20000 8192 4096 1024; do
      for p in 65536 32768 16384 8192 4096; do
        if fits "$f" "$p"; then nofile=$f; nproc=$p; break 2; fi
      done
    done
    [ -n "$nofile" ] || fail "no nofile/nproc limits a container may set"
    printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' "$nofile" "$nofile" "$nproc" "$nproc" \
      >> /etc/containers/containers.conf
  fi
  SOCKDIR=$(mktemp -d /tmp/minikafka-podman.XXXXXX)
  podman system service --time=0 "unix://$SOCKDIR/podman.sock" >"$SOCKDIR/service.log" 2>&1 &
  pids+=($!)
  export DOCKER_HOST="unix://$SOCKDIR/podman.sock"
  for _ in $(seq 1 50); do [ -S "$SOCKDIR/podman.sock" ] && break; sleep 0.2; done
  [ -S "$SOCKDIR/podman.sock" ] || fail "podman system service did not open its socket"
  # Nothing runs healthchecks without systemd: run them every 2 s for this project.
  ( while [ ! -e "$SOCKDIR/stop-health" ]; do
      for c in $(podman ps -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null); do
        podman healthcheck run "$c" >/dev/null 2>&1 || true
      done
      sleep 2
    done ) &
  HEALTH_LOOP=$!
  step "podman: socket $DOCKER_HOST, $(grep default_ulimits /etc/containers/containers.conf)"
fi

# -- build and up ----------------------------------------------------------------------
c() { $COMPOSE -p "$PROJECT" "$@"; }
mk() { c exec -T broker-1 minikafka "$@" --bootstrap-server broker-1:19092; }
c --profile spark build >/tmp/$PROJECT-build.log 2>&1 || { tail -30 /tmp/$PROJECT-build.log; fail "build"; }
step "build (images minikafka:local, minikafka-spark:local)"
c up -d >/tmp/$PROJECT-up.log 2>&1 || { tail -30 /tmp/$PROJECT-up.log; c logs --tail 30 >&2 || true; fail "up"; }
UP=1
step "up -d: ZooKeeper and 3 brokers healthy"

wait_until() {  # wait_until SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds
  local deadline=$(( $(date +%s) + $1 )) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out waiting for: $what"
    sleep 1
  done
}
describe() { mk topics describe demo; }
full_isr() { describe | grep -cE "Isr: [123],[123],[123]	" | grep -qx 3; }
no_broker2() { ! describe | grep -q "Leader: 2	" && describe | grep -c "Isr: [13],[13]	" | grep -qx 3; }

wait_until 60 "brokers that answer" mk topics list
mk topics create demo --partitions 3 --replication-factor 3 --config min.insync.replicas=2 >/dev/null
mk topics create demo-key-counts --partitions 1 --replication-factor 3 >/dev/null
wait_until 60 "leaders for demo" full_isr
step "topics demo and demo-key-counts created"
seq 1 1000 | c exec -T broker-1 minikafka produce demo --acks all --bootstrap-server broker-1:19092
step "1,000 records produced (acks=all)"

c kill broker-2 >/dev/null 2>&1
wait_until 60 "broker 2 out of every leadership and ISR" no_broker2
step "broker-2 killed: leaders moved, ISR shrank to 1,3"
describe | sed 's/^/    /'
c start broker-2 >/dev/null 2>&1
wait_until 120 "broker 2 back in every ISR" full_isr
step "broker-2 started: back in every ISR"

for port in 9092 9093 9094; do
  # the page is read whole first: grep -q stops at the first match, and under pipefail
  # curl's "failed writing body" would then fail the check
  page=$(curl -fsS "http://localhost:$port/") && grep -qi "minikafka" <<<"$page" || fail "no dashboard on localhost:$port"
done
if command -v kcat >/dev/null 2>&1; then
  kcat -b localhost:29092 -L -t demo | grep -q "3 brokers" || fail "kcat -b localhost:29092 -L"
  n=$(kcat -b localhost:29092 -C -t demo -o beginning -e -q | wc -l)
  [ "$n" = 1000 ] || fail "kcat read $n records of demo, not 1000"
fi
step "dashboards on localhost:9092-9094, Kafka listener on 29092"

all_healthy() {
  local svc id
  for svc in zookeeper broker-1 broker-2 broker-3; do
    id=$(c ps -q "$svc") || return 1
    [ "$($ENGINE inspect --format '{{.State.Health.Status}}' "$id" 2>/dev/null)" = healthy ] || return 1
  done
}
wait_until 120 "every broker healthy again (the spark service depends on it)" all_healthy
out=$(c --profile spark run --rm spark 2>&1) || { echo "$out" | tail -30; fail "the spark job"; }
echo "$out" | grep -q "topic demo: 1000 committed records" || { echo "$out" | tail -30; fail "spark did not read 1000 records"; }
step "spark profile: the job read 1,000 committed records (on spark-master + spark-worker)"
out=$(c --profile spark run --rm spark-kafka 2>&1) || { echo "$out" | tail -30; fail "the spark-kafka job"; }
echo "$out" | grep -q "topic demo: 1000 committed records .*(format kafka)" || { echo "$out" | tail -30; fail "Spark's format(\"kafka\") did not read 1000 records"; }
step "spark profile: format(\"kafka\") read the same 1,000 records"

echo "compose-test: image sizes:"
$ENGINE images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "minikafka|zookeeper|python" | sed 's/^/    /'
stop_health_loop
c --profile spark down -v --remove-orphans >/dev/null 2>&1
step "down -v"
echo "compose-test: passed"
