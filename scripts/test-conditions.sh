#!/usr/bin/env bash
# Run tests in one of two conditions a user's machine may be in, where the suite must pass too.
#   scripts/test-conditions.sh private-folder PYTEST_ARGS...
#       copies the checkout (its files as git lists them, with local changes) into a folder
#       only its owner can read (mode 700, as /root and many home folders are) and runs
#       scripts/test.sh PYTEST_ARGS there: a fresh .venv-test inside that folder, as a user
#       who clones there gets. Tests that drop to an unprivileged user see a checkout and an
#       interpreter they cannot read.
#   scripts/test-conditions.sh both PYTEST_ARGS...
#       both at once: the private-folder run while the TIME_WAIT sockets are held (CI runs this)
#   scripts/test-conditions.sh time-wait PYTEST_ARGS...
#       runs .venv-test/bin/python -m pytest PYTEST_ARGS (make .venv-test with scripts/test.sh
#       first) while scripts/time_wait.py keeps a few thousand loopback sockets in TIME_WAIT
#       (their ports taken from the kernel's ephemeral range), stopped by its pid afterwards.
# The exit status is pytest's.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [ $# -lt 1 ]; then
  echo "usage: scripts/test-conditions.sh private-folder|time-wait|both [PYTEST_ARGS...]" >&2
  exit 2
fi
condition="$1"
shift

run_private() {  # copy the checkout into a mode-700 folder and run scripts/test.sh there
  private="$(mktemp -d)"
  chmod 700 "$private"
  mkdir "$private/minikafka"
  git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$private/minikafka"
  echo "copied the checkout into $private/minikafka ($(stat -c %a "$private") $(stat -c %U "$private"))"
  status=0
  (cd "$private/minikafka" && scripts/test.sh "$@") || status=$?
  rm -rf "$private"
  return "$status"
}

hold_time_wait() {  # start scripts/time_wait.py; returns once its sockets are in TIME_WAIT
  python="$1"
  out="$(mktemp)"
  "$python" scripts/time_wait.py --sockets 4000 --seconds 1200 >"$out" 2>&1 &
  holder=$!
  trap 'kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true; rm -f "$out"' EXIT
  for _ in $(seq 600); do  # its first line comes once 4000 connections were opened and closed
    [ -s "$out" ] && break
    kill -0 "$holder" 2>/dev/null || { cat "$out" >&2; exit 1; }
    sleep 0.1
  done
  cat "$out"
}

time_wait_count() {
  "$1" -c 'import sys; sys.path.insert(0, "scripts"); import time_wait; print(time_wait.time_wait_count())'
}

case "$condition" in
  private-folder)
    run_private "$@"
    ;;
  time-wait)
    [ -x .venv-test/bin/python ] || { echo "no .venv-test: run scripts/test.sh first" >&2; exit 2; }
    hold_time_wait .venv-test/bin/python
    .venv-test/bin/python -m pytest -q "$@"
    echo "TIME_WAIT sockets at the end: $(time_wait_count .venv-test/bin/python)"
    ;;
  both)
    hold_time_wait "${PYTHON:-python3}"
    run_private "$@"
    echo "TIME_WAIT sockets at the end: $(time_wait_count "${PYTHON:-python3}")"
    ;;
  *)
    echo "scripts/test-conditions.sh: error: unknown condition $condition (private-folder, time-wait or both)" >&2
    exit 2
    ;;
esac
