#!/usr/bin/env bash
# The main job: set up .venv, start a 3-broker cluster (real ZooKeeper + 3 broker
# processes on 127.0.0.1), create a replicated topic, produce, consume, describe.
# The cluster keeps running afterwards; stop it with `.venv/bin/minikafka cluster down`.
#
# Needs Python 3.11+ and Java 17+. Ports: ZooKeeper 2181, brokers 9092-9094; override
# with MINIKAFKA_ZK_PORT and MINIKAFKA_BASE_PORT. The cluster folder is .minikafka
# (MINIKAFKA_DIR).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
DIR="${MINIKAFKA_DIR:-.minikafka}"
ZK_PORT="${MINIKAFKA_ZK_PORT:-2181}"
BASE_PORT="${MINIKAFKA_BASE_PORT:-9092}"

if [ ! -x .venv/bin/minikafka ]; then
  echo "== creating .venv and installing minikafka (with the spark extra: it ships the ZooKeeper jars)"
  if ! "$PYTHON" -c "import ensurepip" >/dev/null 2>&1; then
    echo "demo.sh: $PYTHON cannot make a virtual environment (no ensurepip): install Debian's python3-venv (apt-get install python3-venv)" >&2
    exit 2
  fi
  "$PYTHON" -m venv .venv
  # -qq: errors only; pip shows the build backend's warnings at -q, among them setuptools'
  # notice of an editable install, which is no concern of the demo's
  .venv/bin/python -m pip install -qq --upgrade pip
  .venv/bin/python -m pip install -qq -e '.[spark]'
fi
mk() { .venv/bin/minikafka "$@"; }

echo "== starting ZooKeeper and 3 brokers"
if mk cluster status --dir "$DIR" >/dev/null 2>&1 && mk cluster status --dir "$DIR" --json | grep -q '"registered": true'; then
  echo "a cluster is already running in $DIR"
else
  mk cluster up --brokers 3 --dir "$DIR" --zookeeper-port "$ZK_PORT" --base-port "$BASE_PORT"
fi

echo
echo "== creating topic 'demo': 3 partitions, replication factor 3, min.insync.replicas=2"
mk topics create demo --partitions 3 --replication-factor 3 --config min.insync.replicas=2 --if-not-exists --dir "$DIR"

echo
echo "== producing 9 records with acks=all (key:value lines)"
for i in 1 2 3 4 5 6 7 8 9; do echo "user-$((i % 3)):event-$i"; done \
  | mk produce demo --acks all --key-separator : --dir "$DIR"

echo
echo "== consuming them back (partition:offset:key:value)"
mk consume demo --from-beginning --max-messages 9 --timeout-ms 5000 --print-offset --dir "$DIR"

echo
echo "== topics describe demo"
mk topics describe demo --dir "$DIR"

echo
echo "== cluster status"
mk cluster status --dir "$DIR"

cat <<MSG

The cluster is still running. Try:
  .venv/bin/minikafka cluster kill 1 --dir $DIR        # kill -9 broker 1, then:
  .venv/bin/minikafka topics describe demo --dir $DIR  # new leaders, shrunk ISRs, leader epochs
  .venv/bin/minikafka cluster start 1 --dir $DIR       # it comes back, catches up, rejoins the ISR
Dashboard: http://127.0.0.1:$BASE_PORT/
Stop everything with:
  .venv/bin/minikafka cluster down --dir $DIR
MSG
