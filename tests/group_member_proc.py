"""A consumer-group member in its own process, for tests that SIGKILL one.

Usage: python group_member_proc.py BOOTSTRAP GROUP TOPIC NAME

Prints one JSON line per event on stdout: ``{"assigned": [[topic, p], ...]}`` after
each rebalance, and ``{"read": [[p, offset, value], ...]}`` per poll with records.
Commits after printing what it read (at-least-once); SIGTERM closes the consumer
(LeaveGroup), SIGKILL does not.
"""
from __future__ import annotations

import json
import signal
import sys

from minikafka import Consumer


class Listener:
    def on_partitions_revoked(self, tps) -> None:
        pass

    def on_partitions_assigned(self, tps) -> None:
        print(json.dumps({"assigned": sorted([tp.topic, tp.partition] for tp in tps)}), flush=True)


def main() -> None:
    bootstrap, group, topic, name = sys.argv[1:5]
    c = Consumer(bootstrap, group_id=group, client_id=name, auto_offset_reset="earliest", enable_auto_commit=False,
                 session_timeout_ms=6000, heartbeat_interval_ms=500)
    c.subscribe([topic], listener=Listener())
    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            records = c.poll(timeout_ms=300)
            if records:
                print(json.dumps({"read": [[r.partition, r.offset, r.value.decode()] for r in records]}), flush=True)
                c.commit()
    except KeyboardInterrupt:
        pass
    finally:
        c.close()  # leaves the group at once


def stop(signum, frame) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    main()
