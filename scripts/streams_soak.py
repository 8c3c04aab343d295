"""A Kafka Streams exactly_once_v2 word count kept caught up for a long while (10 minutes by
default) on a running cluster, with Streams purging its repartition topic every 2 s and one
broker SIGKILLed and started again; prints whether the counts came out exact, whether the
application ever left RUNNING after it settled, and the fencing or rebalance lines of its
log.  The long form of tests/process/test_streams_repartition_purge.py.

    minikafka cluster up --dir /tmp/eos --storage disk --zookeeper-port 2391 --base-port 9392 \\
        --kafka-base-port 29392 --config transaction.state.log.num.partitions=5
    .venv/bin/python scripts/streams_soak.py --dir /tmp/eos --minutes 10
    minikafka cluster down --dir /tmp/eos

It builds examples/java (Maven) and runs its ``eos-soak`` step; the input comes in bursts
(one second of ``--rate`` lines a second, then ``--pause-ms`` without) so that the
application catches up between them and a purge deletes every record of its repartition
partitions.  ``--kill-at`` (minutes) picks the leader of repartition partition 0 as the
victim.  Exit status 0 when all three checks pass, 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from minikafka.client.sync import Admin  # noqa: E402
from minikafka.cluster import launcher  # noqa: E402
from minikafka.cluster.state import load  # noqa: E402

EXAMPLE = ROOT / "examples" / "java"
TROUBLE = re.compile(r"ProducerFenced|UNKNOWN_PRODUCER_ID|UnknownProducerId|INVALID_PRODUCER_EPOCH|"
                     r"InvalidProducerEpoch|OUT_OF_ORDER_SEQUENCE|OutOfOrderSequence|TaskMigrated|rebalanc",
                     re.IGNORECASE)


def build() -> list[str]:
    """``mvn package`` in examples/java; the ``java -cp`` argv of its App."""
    subprocess.run(["mvn", "-q", "-B", "package"], cwd=EXAMPLE, check=True, stdin=subprocess.DEVNULL)
    classpath = (EXAMPLE / "target" / "classpath.txt").read_text().strip()
    return ["java", "-cp", f"{EXAMPLE / 'target' / 'classes'}:{classpath}", "minikafka.example.App"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="streams_soak.py", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=".minikafka")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--rate", type=int, default=100, help="input lines a second during a burst")
    ap.add_argument("--pause-ms", type=int, default=4000, help="ms without input between one-second bursts")
    ap.add_argument("--purge-ms", type=int, default=2000, help="Streams' repartition.purge.interval.ms")
    ap.add_argument("--kill-at", type=float, default=3.0, help="minutes in, SIGKILL a broker (negative: never)")
    ap.add_argument("--log", default="streams-soak.log", help="where the application's stderr goes")
    args = ap.parse_args(argv)

    state = load(args.dir)
    bootstrap = ",".join(f"127.0.0.1:{b.port}" for b in state.brokers.values())
    kafka_bootstrap = ",".join(f"127.0.0.1:{b.kafka_port}" for b in state.brokers.values() if b.kafka_port)
    suffix = uuid.uuid4().hex[:6]
    app_id, source, sink = f"soak-{suffix}", f"soak-in-{suffix}", f"soak-out-{suffix}"
    repartition = f"{app_id}-soak-counts-store-repartition"
    with Admin(bootstrap) as admin:
        for topic in (source, sink):
            admin.create_topic(topic, partitions=2, replication_factor=3)
    cmd = [*build(), "eos-soak", "--bootstrap", kafka_bootstrap, "--app-id", app_id, "--input", source,
           "--output", sink, "--seconds", str(int(args.minutes * 60)), "--rate", str(args.rate),
           "--pause-ms", str(args.pause_ms), "--purge-ms", str(args.purge_ms), "--transaction-timeout-ms", "30000",
           "--timeout-ms", "120000"]
    events: list[dict] = []
    with open(args.log, "wb") as log:
        app = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)

        def read() -> None:
            assert app.stdout is not None
            for raw in app.stdout:
                try:
                    events.append(json.loads(raw))
                except ValueError:
                    continue
                print(raw.decode().strip()[:200], flush=True)
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while not any(e.get("event") == "running" for e in events) and app.poll() is None:
            time.sleep(0.2)
        started = time.monotonic()
        if args.kill_at >= 0:
            while time.monotonic() - started < args.kill_at * 60 and app.poll() is None:
                time.sleep(0.5)
            with Admin(bootstrap) as admin:
                (desc,) = admin.describe_topics([repartition])
            victim = desc.partitions[0].leader
            print(f"SIGKILL broker {victim}", flush=True)
            launcher.kill(args.dir, victim)
            time.sleep(10)  # its ZooKeeper session (6 s) expires; the controller moves its leaderships
            launcher.start(args.dir, victim)
            print(f"broker {victim} started again", flush=True)
        code = app.wait()
        reader.join(10)
    soak = next((e for e in events if e.get("event") == "soak"), None)
    trouble = [line for line in Path(args.log).read_text(errors="replace").splitlines() if TROUBLE.search(line)]
    with Admin(bootstrap) as admin:
        (desc,) = admin.describe_topics([repartition])
    starts = [p.log_start_offset for p in desc.partitions]
    ok = code == 0 and soak is not None and soak["match"] and soak["left_running"] == 0 and not trouble
    print(json.dumps({"lines": soak and soak["lines"], "counts_exact": soak and soak["match"],
                      "left_running": soak and soak["left_running"], "trouble_lines": len(trouble),
                      "repartition_log_starts": starts, "exit": code, "ok": ok}))
    for line in trouble[:20]:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
