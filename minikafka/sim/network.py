"""The simulated network: messages between nodes, with latency, drops and cut links.

Every message (a broker request, its answer, a ZooKeeper request or ping, a watch
notification) crosses one directed link ``(src, dst)`` and takes a seeded random
latency.  The nemesis cuts links one way (``cut(a, b)``) or both, and slows them
(extra latency, so messages overtake each other).  A message on a cut link is lost.

:class:`SimTransport` is a broker's :class:`~minikafka.broker.ports.Transport` on this
network: a request is msgpack bytes, encoded and decoded by the same functions as over
HTTP, handled by the destination's ``Broker.dispatch`` in the destination's process.
Like a TCP connection, a call belongs to one incarnation of each end: when the callee
crashes or restarts, the caller gets NETWORK_EXCEPTION (a reset); when the request or
its answer is lost, the caller waits for its timeout (REQUEST_TIMED_OUT).

What a call needs of the world is :class:`Nodes` (the world provides it): the network,
which process runs on which node, who serves there and the calls open to each process.
"""
from __future__ import annotations

import asyncio
import contextvars
import random
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..auth.acls import ANONYMOUS
from ..protocol.rpc import http
from ..rpc import BrokerUnreachableError, NoResponseError

if TYPE_CHECKING:
    from ..broker.served import ServedBroker


class Network:
    """Links between named nodes, their latency and their faults."""

    def __init__(self, loop: asyncio.AbstractEventLoop, rng: random.Random,
                 min_latency_s: float = 0.0002, max_latency_s: float = 0.002) -> None:
        self.loop = loop
        self.rng = rng
        self.min_latency_s = min_latency_s
        self.max_latency_s = max_latency_s
        self.cuts: set[tuple[str, str]] = set()  # (src, dst): messages from src to dst are lost
        self.slow: dict[tuple[str, str], float] = {}  # (src, dst): extra latency, seconds
        self.sent = 0
        self.lost = 0
        self.world_context = contextvars.Context()  # callbacks of no process (the world's)
        self._fifo_due: dict[tuple[str, str], float] = {}  # in-order links: when the last message lands

    def cut(self, src: str, dst: str) -> None:
        self.cuts.add((src, dst))

    def heal(self, src: str, dst: str) -> None:
        """Heal the link ``src -> dst``: no longer cut, nor slowed."""
        self.cuts.discard((src, dst))
        self.slow.pop((src, dst), None)

    def heal_all(self) -> None:
        """Heal every link."""
        self.cuts.clear()
        self.slow.clear()

    def latency(self, src: str, dst: str) -> float | None:
        """This message's latency on ``src -> dst``; None when the link drops it."""
        self.sent += 1
        if (src, dst) in self.cuts:
            self.lost += 1
            return None
        return self.rng.uniform(self.min_latency_s, self.max_latency_s) + self.slow.get((src, dst), 0.0)

    def send(self, src: str, dst: str, deliver: Callable[[], Any], context: Any = None, fifo: bool = False) -> bool:
        """Deliver a message: ``deliver()`` runs after the link's latency, in ``context``
        (the receiver's process; by default the world's).  With ``fifo`` it never overtakes an earlier message of
        the same link (one TCP connection).  False when the link lost it."""
        delay = self.latency(src, dst)
        if delay is None:
            return False
        due = self.loop.time() + delay
        if fifo:
            due = max(due, self._fifo_due.get((src, dst), 0.0))
            self._fifo_due[(src, dst)] = due
        self.loop.call_at(due, deliver, context=context if context is not None else self.world_context)
        return True


class Nodes(Protocol):
    """What the network's calls use of the world (:class:`~minikafka.sim.world.World`)."""

    network: Network
    processes: dict[str, tuple[str, int]]  # live node -> its current process
    contexts: dict[str, contextvars.Context]  # node -> its current process's context
    serving: dict[str, "ServedBroker"]  # node -> the broker serving there
    address_book: dict[tuple[str, int], str]  # (host, port) -> node
    open_calls: dict[tuple[str, int], dict[object, Any]]  # process -> its open calls' resets


class SimTransport:
    """A broker's transport on the simulated network (see the module docstring)."""

    def __init__(self, world: Nodes, node: str) -> None:
        self.world = world
        self.node = node

    async def serve(self, served: "ServedBroker") -> None:
        self.world.serving[self.node] = served

    async def close(self) -> None:
        self.world.serving.pop(self.node, None)

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
        return await call(self.world, self.node, host, port, api, body, timeout_s)


async def call(world: Nodes, src: str, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict:
    """``src`` calls ``api`` on the broker at ``host:port`` over the simulated network."""
    where = f"{api} request to {host}:{port}"
    loop = asyncio.get_running_loop()
    answer: asyncio.Future = loop.create_future()
    dst = world.address_book.get((host, port))
    process = world.processes.get(dst) if dst is not None else None
    raw = http.encode_request(body)

    def fail(exc: Exception) -> None:
        if not answer.done():
            answer.set_exception(exc)

    def refused() -> None:
        fail(BrokerUnreachableError(f"{where} failed: connection refused"))

    if dst is None or process is None:
        world.network.send(src, dst or host, refused)
    else:
        dst_context = world.contexts[dst]
        calls = world.open_calls.setdefault(process, {})
        token = object()

        def arrive() -> None:
            if world.processes.get(dst) != process or dst not in world.serving:
                world.network.send(dst, src, refused)
                return
            calls[token] = lambda: world.network.send(dst, src, lambda: fail(
                BrokerUnreachableError(f"{where} failed: connection reset by peer")))
            broker = world.serving[dst]
            task = loop.create_task(broker.dispatch(api, raw, remote=src, credential=None, principal=lambda: ANONYMOUS))
            task.add_done_callback(lambda t: reply(t))

        def reply(task: asyncio.Task) -> None:
            calls.pop(token, None)
            if task.cancelled() or task.exception() is not None:
                world.network.send(dst, src, lambda: fail(BrokerUnreachableError(f"{where} failed: connection reset")))
                return
            out = task.result()

            def deliver() -> None:
                if not answer.done():
                    answer.set_result(out)

            world.network.send(dst, src, deliver)

        world.network.send(src, dst, arrive, context=dst_context)
    try:
        raw_answer = await (asyncio.wait_for(answer, timeout_s) if timeout_s is not None else answer)
    except asyncio.TimeoutError:
        raise NoResponseError(f"{where}: no answer within {timeout_s:g} s") from None
    return http.decode_answer(raw_answer, 200, where)

