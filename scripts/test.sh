#!/usr/bin/env bash
# Run the whole test suite in a fresh virtual environment (.venv-test).
#   scripts/test.sh                 # everything
#   scripts/test.sh tests/test_cli_errors.py -k config   # pytest arguments pass through
# Needs Python 3.11+ and Java 17+ (ZooKeeper and Spark run on it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
rm -rf .venv-test
"$PYTHON" -m venv .venv-test
.venv-test/bin/python -m pip install --quiet -e '.[dev,spark]'
exec .venv-test/bin/python -m pytest -q "$@"
