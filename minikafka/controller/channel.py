"""Controller-to-broker channels: one queue and one sender task per live broker, so
requests to a broker arrive in the order the controller made them (Kafka's
ControllerChannelManager).  A failed send is retried until the broker is removed.

The core's sends carry typed requests (:data:`~.core.ControllerRequest`); the manager
turns each into its API name and wire map (:func:`wire`) once, however many brokers it
goes to (an UpdateMetadata goes to every live broker), and queues that map."""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Sequence, assert_never

from ..errors import KafkaError, StaleControllerEpochError
from ..protocol.rpc.types import (LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest,
                                  encode_LeaderAndIsrRequest, encode_StopReplicaRequest, encode_UpdateMetadataRequest)
from .core import ControllerRequest, Send

log = logging.getLogger(__name__)

# a call to a broker's msgpack API: (host, port, api, body, timeout_s) -> the answer's map
Call = Callable[[str, int, str, dict[str, Any], float], Awaitable[dict[str, Any]]]


def wire(request: ControllerRequest) -> tuple[str, dict[str, Any]]:
    """The msgpack API name of ``request`` and the map the wire carries for it."""
    match request:
        case LeaderAndIsrRequest():
            return "leader_and_isr", encode_LeaderAndIsrRequest(request)
        case UpdateMetadataRequest():
            return "update_metadata", encode_UpdateMetadataRequest(request)
        case StopReplicaRequest():
            return "stop_replica", encode_StopReplicaRequest(request)
        case _:  # mypy fails here when a ControllerRequest has no case above
            assert_never(request)


class BrokerChannel:
    """The queue of requests to one broker and the task that sends them in order."""

    def __init__(self, call: Call, timeout_s: float, broker_id: int, endpoint: tuple[str, int],
                 tg: asyncio.TaskGroup) -> None:
        self.call = call
        self.timeout_s = timeout_s
        self.broker_id = broker_id
        self.endpoint = endpoint
        self.queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self.task = tg.create_task(self._run(), name=f"controller-channel-{broker_id}")

    def send(self, api: str, body: dict[str, Any]) -> None:
        self.queue.put_nowait((api, body))

    async def _run(self) -> None:
        while True:
            api, body = await self.queue.get()
            delay = 0.05
            while True:
                host, port = self.endpoint
                try:
                    await self.call(host, port, api, body, self.timeout_s)
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
                except Exception:
                    log.exception("send %s to broker %d failed; dropping it", api, self.broker_id)
                    break

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


class ChannelManager:
    """One :class:`BrokerChannel` per live broker; tasks belong to the controller's TaskGroup."""

    def __init__(self, call: Call, timeout_s: float, tg: asyncio.TaskGroup) -> None:
        self.call = call
        self.timeout_s = timeout_s
        self.tg = tg
        self.channels: dict[int, BrokerChannel] = {}

    def add(self, broker_id: int, endpoint: tuple[str, int]) -> None:
        ch = self.channels.get(broker_id)
        if ch is None:
            self.channels[broker_id] = BrokerChannel(self.call, self.timeout_s, broker_id, endpoint, self.tg)
        else:
            ch.endpoint = endpoint

    async def remove(self, broker_id: int) -> None:
        ch = self.channels.pop(broker_id, None)
        if ch is not None:
            await ch.stop()

    def send(self, sends: Sequence[Send]) -> None:
        """Queue a plan's requests, in order, to the brokers that have a channel."""
        encoded: dict[int, tuple[str, dict[str, Any]]] = {}  # id of a request -> its wire form
        for s in sends:
            ch = self.channels.get(s.broker)
            if ch is None:
                continue
            if id(s.request) not in encoded:
                encoded[id(s.request)] = wire(s.request)
            ch.send(*encoded[id(s.request)])

    async def stop(self) -> None:
        for b in list(self.channels):
            await self.remove(b)
