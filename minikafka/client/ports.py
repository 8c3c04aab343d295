"""The clients' ports: how they reach brokers (:class:`Transport`) and read time (:class:`Clock`).

The asyncio clients (:class:`~minikafka.client.producer.AIOProducer`,
:class:`~minikafka.client.consumer.AIOConsumer`, the admin client, the group member
and the transaction manager under them) do no I/O and read no clock of their own: every
request goes through a Transport, every deadline and timestamp through a Clock.  By
default the Transport is a :class:`~minikafka.client.connection.Connection` (msgpack
over HTTP) and the Clock is :data:`SYSTEM_CLOCK`; the simulation passes its simulated
network and its virtual-time clock instead, so the same client code runs there
(``docs/simulation.md``).
"""
from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "SYSTEM_CLOCK", "SystemClock", "Transport"]


class Transport(Protocol):
    """Sends one msgpack API request to a broker and returns its answer map.

    ``call`` raises the registered exception of a non-zero top-level ``error_code``,
    :class:`~minikafka.rpc.BrokerUnreachableError` when the broker cannot be reached and
    :class:`~minikafka.rpc.NoResponseError` when no answer came within ``timeout_s``."""

    async def call(self, host: str, port: int, api: str, body: dict, timeout_s: float | None) -> dict: ...

    async def close(self) -> None: ...


class Clock(Protocol):
    """Time as the clients read it: ``monotonic`` (seconds) and ``monotonic_ms`` for
    deadlines and lingering, ``wall_ms`` (milliseconds since the epoch) for record
    timestamps.  The monotonic reading must agree with the event loop's ``time()``, on
    which the clients' sleeps and timeouts run."""

    def monotonic(self) -> float: ...

    def monotonic_ms(self) -> int: ...

    def wall_ms(self) -> int: ...


class SystemClock:
    """The process's clocks (asyncio's default loop reads the same monotonic clock)."""

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()

    @staticmethod
    def monotonic_ms() -> int:
        return time.monotonic_ns() // 1_000_000

    @staticmethod
    def wall_ms() -> int:
        return time.time_ns() // 1_000_000


SYSTEM_CLOCK: Clock = SystemClock()
