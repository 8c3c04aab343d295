"""Read partitions from their log start to the end offsets they have now, with the sync Consumer.

What checkers need after a run: every record a partition holds (``read_committed``: up to
the last stable offset, without aborted transactions), waited for while the broker asked
first may not know the newest leaders yet.
"""
from __future__ import annotations

import time
from typing import Callable

from ..errors import KafkaError
from .types import TopicPartition


def read_to_end(bootstrap: str, tps: list[TopicPartition], timeout_s: float,
                isolation_level: str = "read_uncommitted",
                decode: Callable[[bytes | None], str] = lambda v: v.decode() if v is not None else "",
                ) -> dict[tuple[str, int], dict[int, str]]:
    """``(topic, partition)`` -> offset -> decoded value of every record of ``tps`` below the
    end offsets read first; TimeoutError naming them when that takes over ``timeout_s``."""
    from .sync import Consumer

    out: dict[tuple[str, int], dict[int, str]] = {(tp.topic, tp.partition): {} for tp in tps}
    deadline = time.monotonic() + timeout_s
    with Consumer(bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100, isolation_level=isolation_level) as c:
        c.assign(tps)
        while True:  # the broker asked for metadata may not know the latest leaders yet
            try:
                ends = c.end_offsets(tps)
                break
            except KafkaError as exc:
                if not exc.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        c.seek_to_beginning(*tps)
        while any(c.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                names = ", ".join(sorted({tp.topic for tp in tps}))
                raise TimeoutError(f"reading {names} to their end offsets {ends} took over {timeout_s:g} s")
            for r in c.poll(timeout_ms=200):
                out[(r.topic, r.partition)][r.offset] = decode(r.value)
    return out
