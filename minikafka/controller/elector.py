"""The /controller race: every broker tries to create it; the winner increments
/controller_epoch in the same ZooKeeper transaction and becomes controller."""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..zk import layout
from ..zk.session import BadVersionError, NodeExistsError, NoNodeError

if TYPE_CHECKING:
    from ..broker.server import Broker

log = logging.getLogger(__name__)


class ControllerElector:
    """Watches /controller and races for it whenever it is free."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        self.broker.zk.watch_data(layout.CONTROLLER, self._on_change)

    def _on_change(self, data: bytes | None, stat: object) -> None:
        loop = asyncio.get_running_loop()
        if data is None:
            loop.create_task(self.elect())
        else:
            try:
                holder = layout.decode_controller(data)
            except Exception:
                holder = -1
            if holder != self.broker.broker_id and self.broker.controller is not None:
                loop.create_task(self.resign(f"broker {holder} holds /controller"))

    async def elect(self) -> None:
        """Try once to become controller (Kafka's KafkaController.elect)."""
        async with self._lock:
            b = self.broker
            if b.controller is not None or b._stopping.is_set():
                return
            zk = b.zk
            got = await zk.get(layout.CONTROLLER_EPOCH)
            if got is None:
                try:
                    await zk.create(layout.CONTROLLER_EPOCH, b"0")
                except NodeExistsError:
                    pass
                got = await zk.get(layout.CONTROLLER_EPOCH)
            epoch = int(got[0]) + 1
            version = got[1].version

            def build(tx):
                tx.create(layout.CONTROLLER, layout.encode_controller(b.broker_id), ephemeral=True)
                tx.set_data(layout.CONTROLLER_EPOCH, str(epoch).encode(), version)
            try:
                results = await zk.transaction(build)
            except (NodeExistsError, BadVersionError, NoNodeError):
                return  # another broker won
            epoch_version = results[1].version
            from .controller import Controller
            b.controller = Controller(b, epoch, epoch_version)
            b.record_event("controller_elected", f"broker {b.broker_id} became controller with controller epoch {epoch}",
                           controller_epoch=epoch)
            b.metrics.count("controller_elections")
            await b.controller.start()

    async def resign(self, reason: str) -> None:
        b = self.broker
        c = b.controller
        if c is None:
            return
        b.controller = None
        b.record_event("controller_resigned", f"broker {b.broker_id} stops acting as controller: {reason}")
        await c.stop()
