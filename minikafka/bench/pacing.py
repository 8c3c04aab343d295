"""Sending at a fixed rate: the schedule the latency scenarios share."""
from __future__ import annotations

import time
from typing import Iterator


def paced(rate: float, total: int) -> Iterator[int]:
    """Yield ``0 .. total-1``, the ``i``-th no earlier than ``i / rate`` seconds after the
    first (a late sender catches up at once rather than sliding the schedule)."""
    start = time.perf_counter()
    for i in range(total):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        yield i
