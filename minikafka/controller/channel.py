"""Controller-to-broker channels: one queue and one sender task per live broker, so
requests to a broker arrive in the order the controller made them (Kafka's
ControllerChannelManager).  A failed send is retried until the broker is removed."""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..errors import KafkaError, StaleControllerEpochError
from ..broker import rpc

if TYPE_CHECKING:
    from ..broker.server import Broker

log = logging.getLogger(__name__)


class BrokerChannel:
    def __init__(self, owner: "Broker", broker_id: int, endpoint: tuple[str, int]) -> None:
        self.owner = owner
        self.broker_id = broker_id
        self.endpoint = endpoint
        self.queue: asyncio.Queue[tuple[str, dict]] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run(), name=f"controller-channel-{broker_id}")

    def send(self, api: str, body: dict) -> None:
        self.queue.put_nowait((api, body))

    async def _run(self) -> None:
        timeout = self.owner.config.get("request.timeout.ms") / 1000.0
        while True:
            api, body = await self.queue.get()
            delay = 0.05
            while True:
                host, port = self.endpoint
                try:
                    await rpc.call(self.owner.http, host, port, api, body, timeout)
                    break
                except StaleControllerEpochError as exc:
                    log.warning("broker %d refused %s: %s", self.broker_id, api, exc)
                    break
                except KafkaError as exc:
                    if not exc.retriable:
                        log.warning("broker %d answered %s with %s", self.broker_id, api, exc)
                        break
                    log.debug("send %s to broker %d failed (%s); retrying", api, self.broker_id, exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 1.0)

    async def stop(self) -> None:
        self.task.cancel()
        try:
            await self.task
        except (asyncio.CancelledError, Exception):
            pass


class ChannelManager:
    def __init__(self, owner: "Broker") -> None:
        self.owner = owner
        self.channels: dict[int, BrokerChannel] = {}

    def add(self, broker_id: int, endpoint: tuple[str, int]) -> None:
        ch = self.channels.get(broker_id)
        if ch is None:
            self.channels[broker_id] = BrokerChannel(self.owner, broker_id, endpoint)
        else:
            ch.endpoint = endpoint

    async def remove(self, broker_id: int) -> None:
        ch = self.channels.pop(broker_id, None)
        if ch is not None:
            await ch.stop()

    def send(self, broker_id: int, api: str, body: dict) -> None:
        ch = self.channels.get(broker_id)
        if ch is not None:
            ch.send(api, body)

    async def stop(self) -> None:
        for b in list(self.channels):
            await self.remove(b)
