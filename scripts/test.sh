#!/usr/bin/env bash
# Run the test suite in a virtual environment (.venv-test).
#   scripts/test.sh                 # everything, in a fresh .venv-test (what CI runs)
#   scripts/test.sh tests/process/test_cli_errors.py -k config   # pytest arguments pass through
#   scripts/test.sh --fast          # the tests that start no process (-m "not process"),
#                                   # reusing .venv-test when it exists: about a minute
# Test modules run on MINIKAFKA_TEST_WORKERS pytest-xdist workers (default 2; 0 runs them in
# this process), each module whole on one worker (--dist loadfile: a module's clusters are
# its own), so two clusters (or a cluster and a Kafka reference cluster) usually run side by
# side: the suite is written to pass on a busy machine.
# The full run first installs what the suite needs beside Python when it is missing
# (scripts/test-setup.sh: Chromium, kcat, a JDK and Maven, Node.js, iptables, docker-compose
# from Debian's packages, Apache Kafka's jars from Maven Central); --fast needs none of it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
workers="${MINIKAFKA_TEST_WORKERS:-2}"
fast=0
if [ "${1:-}" = "--fast" ]; then
  fast=1
  shift
fi
if [ "$fast" = 0 ]; then
  scripts/test-setup.sh
fi
if [ "$fast" = 0 ] || [ ! -x .venv-test/bin/python ]; then
  rm -rf .venv-test
  "$PYTHON" -m venv .venv-test
  .venv-test/bin/python -m pip install --quiet -e '.[dev,spark]'
fi
if [ "$fast" = 1 ]; then
  exec .venv-test/bin/python -m pytest -q -m "not process" -n "$workers" --dist loadfile "$@"
fi
# Spark's Kafka connector (spark-sql-kafka-0-10 and kafka-clients) from Maven Central into
# Ivy's cache (~/.ivy2.5.2), before the tests: the first SparkSession then starts in its usual time.
.venv-test/bin/python -m minikafka.spark.kafka_jars
exec .venv-test/bin/python -m pytest -q --durations=25 -n "$workers" --dist loadfile "$@"
