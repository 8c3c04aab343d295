#!/usr/bin/env bash
# What the test suite needs beside Python, installed when missing (scripts/test.sh runs this
# first; run it alone to prepare a machine):
# - Debian packages: Chromium (the dashboard's browser tests drive /usr/bin/chromium through
#   Playwright; no browser is ever downloaded), docker-compose (it validates
#   docker-compose.yml offline), a JDK and Maven (ZooKeeper, Spark and Apache Kafka's own
#   Java client, tools and Streams; tests/process/test_java_example.py builds examples/java),
#   kcat (librdkafka's command-line client), Node.js and npm (kafkajs is installed into
#   ~/.cache/minikafka/node, outside the repository), iptables (link-fault tests cut links on
#   loopback; they run as root), python3-venv where Debian's python3 lacks ensurepip (the
#   suite's virtual environment), libatomic1 (Playwright's driver needs it). apt-get runs as root, or through sudo.
# - Apache Kafka's jars of both client generations (4.x and 3.9.x) from Maven Central into
#   ~/.cache/minikafka/jars (scripts/kafka-jars.sh), before the tests that run them.
# Set MINIKAFKA_TEST_SETUP=0 to skip all of it (a machine prepared some other way).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[ "${MINIKAFKA_TEST_SETUP:-1}" = 0 ] && exit 0

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need+=(iptables)
# scripts/test.sh makes .venv-test with "$PYTHON" -m venv, which needs ensurepip: Debian's
# python3 has it only with python3-venv
"${PYTHON:-python3}" -c "import ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
# Playwright's driver (the Node.js build inside its wheel) needs libatomic, which a minimal
# Debian lacks
ldconfig -p 2>/dev/null | grep -q "libatomic\.so\.1" || need+=(libatomic1)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "installing ${need[*]} (apt-get)" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

scripts/kafka-jars.sh 4 >/dev/null
scripts/kafka-jars.sh 3.9 >/dev/null
