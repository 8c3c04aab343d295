"""What the two coordinators (groups and transactions) share about replaying the
partition of their internal topic they lead: they serve committed records only.

A broker that becomes the leader of a ``__consumer_offsets`` or ``__transaction_state``
partition may hold records past the high watermark: the previous coordinator appended
them and never got them committed, so never answered for them.  If this leader fails
before its followers have them, a replica without them is elected and they are gone.
A coordinator that had replayed them meanwhile would have answered from a state its
successor does not have: an AddPartitionsToTxn answered at once because its partitions
were "already in the transaction", the transaction then committed by the next
coordinator without markers to those partitions.  So the replay waits until the high
watermark reaches the log end offset the leader had when it took over (clients are
told COORDINATOR_LOAD_IN_PROGRESS meanwhile); nothing else writes to the partition
before the replay ends.
"""
from __future__ import annotations

import asyncio
from typing import Protocol

INTERVAL_S = 0.05


class Replica(Protocol):
    """The two offsets of a partition replica the wait reads."""

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...


async def wait_committed(partition: Replica, interval_s: float = INTERVAL_S) -> None:
    """Return once ``partition``'s high watermark reaches the log end offset it has now."""
    end = partition.log_end_offset
    while partition.high_watermark < end:
        await asyncio.sleep(interval_s)
