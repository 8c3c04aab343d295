"""The event timeline of a fault-injection run: every broker's own ``events``, gathered
while the brokers live."""
from __future__ import annotations

import threading
from typing import Callable

from .cluster import post


class EventCollector:
    """Polls every broker's own ``events`` and keeps the union (a killed broker's
    events are gone with its process, so they are gathered while it lives)."""

    def __init__(self, brokers: dict[int, tuple[str, int]], since: float, skip: Callable[[int], bool]) -> None:
        self.brokers = brokers
        self.since = since
        self.skip = skip
        self.seen: dict[tuple, dict] = {}
        self.last_ts: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="chaos-events", daemon=True)

    def start(self) -> None:
        """Start polling in a background thread."""
        self.thread.start()

    def poll_once(self) -> None:
        """Ask every reachable broker for its events since the last poll."""
        for b, (host, port) in self.brokers.items():
            if self.skip(b):
                continue
            since = self.last_ts.get(b, self.since)
            try:
                answer = post(host, port, "events", {"since": since, "cluster": False, "limit": 5000}, timeout_s=1.5)
            except Exception:
                continue
            for e in answer.get("events") or ():
                self.seen.setdefault((e["ts"], e["broker"], e["kind"], e["text"]), e)
                if e["broker"] == b:
                    self.last_ts[b] = max(self.last_ts.get(b, self.since), e["ts"] - 0.001)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.poll_once()
            self.stop.wait(0.5)

    def finish(self) -> None:
        """Stop polling, after one last poll."""
        self.stop.set()
        self.thread.join(10)
        self.poll_once()

    def count(self, kind: str) -> int:
        """How many events of ``kind`` were seen (a new partition's first election not counted)."""
        return sum(1 for e in self.seen.values() if e["kind"] == kind and "new partition" not in e["text"])

    def timeline(self) -> list[dict]:
        """Every event seen, oldest first."""
        return sorted(self.seen.values(), key=lambda e: (e["ts"], e["broker"]))
