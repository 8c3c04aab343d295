"""Producer ids for idempotent producers, reserved in blocks in ZooKeeper.

Kafka's ZooKeeper-mode ProducerIdManager: a broker reserves a block of
:data:`BLOCK_SIZE` ids by a conditional write of ``/latest_producer_id_block``
(JSON ``{"version":1,"broker":N,"block_start":"S","block_end":"E"}``, ids as
strings as Kafka writes them) and hands them out one by one; when the block is used
up it reserves the next.  The write is conditional on the znode version it read, so
two brokers never get the same block: the loser reads again and takes the next one.
"""
from __future__ import annotations

import asyncio
import json

from ..zk import layout
from ..zk.errors import BadVersionError, NodeExistsError
from ..zk.session import ZkSession

BLOCK_SIZE = 1000


def encode_block(broker_id: int, start: int, end: int) -> bytes:
    return json.dumps({"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)},
                      separators=(",", ":")).encode()


def decode_block(data: bytes) -> tuple[int, int, int]:
    """(broker, block_start, block_end) of a ``/latest_producer_id_block`` value."""
    d = json.loads(data)
    return int(d["broker"]), int(d["block_start"]), int(d["block_end"])


class ProducerIdManager:
    """Hands out producer ids from blocks this broker reserved."""

    def __init__(self, zk: ZkSession, broker_id: int) -> None:
        self.zk = zk
        self.broker_id = broker_id
        self._next = 0
        self._end = -1  # inclusive; empty until the first block is reserved
        self._lock = asyncio.Lock()

    async def generate(self) -> int:
        """A producer id no other broker (or earlier call) has handed out."""
        async with self._lock:
            if self._next > self._end:
                self._next, self._end = await self._reserve_block()
            pid = self._next
            self._next += 1
            return pid

    async def _reserve_block(self) -> tuple[int, int]:
        while True:
            got = await self.zk.get(layout.PRODUCER_ID_BLOCK)
            if got is None:
                start, end = 0, BLOCK_SIZE - 1
                try:
                    await self.zk.create(layout.PRODUCER_ID_BLOCK, encode_block(self.broker_id, start, end))
                    return start, end
                except NodeExistsError:
                    continue
            data, stat = got
            if data:
                _, _, last_end = decode_block(data)
            else:  # the empty znode made at startup (a persistent path): no block taken yet
                last_end = -1
            start, end = last_end + 1, last_end + BLOCK_SIZE
            try:
                await self.zk.set(layout.PRODUCER_ID_BLOCK, encode_block(self.broker_id, start, end), stat.version)
                return start, end
            except BadVersionError:
                continue  # another broker took that block: read again
