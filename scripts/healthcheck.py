"""Container healthcheck of a broker: healthy (exit 0) when its HTTP API answers
api_versions without an error.  docker-compose.yml runs it as
``CMD-SHELL python /opt/minikafka/scripts/healthcheck.py`` (a script rather than
``python -c "..."``: podman's Docker API splits an exec-form argument at its spaces).

    python scripts/healthcheck.py [HOST:PORT]      # default 127.0.0.1:19092
"""
from __future__ import annotations

import sys
import urllib.request

import msgpack


def main() -> int:
    where = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:19092"
    req = urllib.request.Request(f"http://{where}/v1/api_versions", data=msgpack.packb({}),
                                 headers={"Content-Type": "application/msgpack"})
    try:
        with urllib.request.urlopen(req, timeout=3) as r:
            return int(msgpack.unpackb(r.read()).get("error_code", 1))
    except (OSError, ValueError) as exc:
        print(f"broker at {where} does not answer: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
