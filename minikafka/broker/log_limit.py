"""A logging filter that lets the same line through at most once per interval.

A flood of bad clients makes the same warning (or the same traceback) over and over;
written each time it fills the disk and slows the broker.  :class:`RepeatFilter` keys a
warning or error by its logger, level and message template (not its arguments: "closing
Kafka connection from %s" is one key for every peer), and a record below WARNING by its
whole text (identical lines only: different events of the same template are news), lets
the first through, drops the others for ``interval_s`` seconds, and adds "(suppressed K
similar)" to the next one it lets through.  The timeline's events
(``minikafka.broker.timeline``) are the broker's record of what happened and always pass.
"""
from __future__ import annotations

import logging
import time
from typing import Callable

#: Seconds between two records of the same key that the broker's log keeps.
REPEAT_INTERVAL_S = 10.0
#: Loggers whose every record is kept.
ALWAYS = frozenset({"minikafka.broker.timeline"})


class RepeatFilter(logging.Filter):
    """At most one record per (logger, level, template) every ``interval_s`` seconds."""

    def __init__(self, interval_s: float = REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.clock = clock
        self._last: dict[tuple, float] = {}
        self._suppressed: dict[tuple, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name in ALWAYS:
            return True
        text = str(record.msg) if record.levelno >= logging.WARNING else record.getMessage()
        key = (record.name, record.levelno, text)
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval_s:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return False
        if len(self._last) > 10000:  # many distinct templates: forget the old ones
            self._last = {k: t for k, t in self._last.items() if now - t < self.interval_s}
        self._last[key] = now
        skipped = self._suppressed.pop(key, 0)
        if skipped:
            record.msg = f"{record.msg} (suppressed {skipped} similar in the last {self.interval_s:g} s)"
        return True


def install(interval_s: float = REPEAT_INTERVAL_S) -> RepeatFilter:
    """Put one RepeatFilter on every handler of the root logger."""
    f = RepeatFilter(interval_s)
    for handler in logging.getLogger().handlers:
        handler.addFilter(f)
    return f
