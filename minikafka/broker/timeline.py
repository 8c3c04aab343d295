"""A broker's timeline: recent events (elections, ISR changes, truncations...) for the
``events`` API and the dashboard, each also logged."""
from __future__ import annotations

import collections
import logging
from typing import Any

from .services import Clock

log = logging.getLogger(__name__)


class Timeline:
    """The last ``size`` events of one broker."""

    def __init__(self, broker_id: int, clock: Clock, size: int = 2000) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.events: collections.deque[dict] = collections.deque(maxlen=size)

    def record(self, kind: str, text: str, **extra: Any) -> None:
        """Remember an event for the timeline and log it."""
        self.events.append({"ts": self.clock.time(), "broker": self.broker_id, "kind": kind, "text": text, **extra})
        log.info("[%s] %s", kind, text)
