"""Container healthcheck of the Spark master: healthy (exit 0) when its web UI's /json/
answers and lists at least N ALIVE workers.  docker-compose.yml runs it as
``CMD-SHELL python /opt/minikafka/scripts/spark_healthcheck.py ...`` for spark-master
(N 0: it serves) and spark-worker (N 1: the worker registered with the master).

    python scripts/spark_healthcheck.py [HOST:PORT] [N]      # default 127.0.0.1:8080 0
"""
from __future__ import annotations

import json
import sys
import urllib.request


def main() -> int:
    where = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8080"
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    try:
        with urllib.request.urlopen(f"http://{where}/json/", timeout=3) as r:
            answer = json.loads(r.read().decode())
    except (OSError, ValueError) as exc:
        print(f"Spark master at {where} does not answer: {exc}", file=sys.stderr)
        return 1
    alive = sum(1 for w in answer.get("workers", ()) if w.get("state") == "ALIVE")
    if alive < workers:
        print(f"Spark master at {where} lists {alive} ALIVE workers, not {workers}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
