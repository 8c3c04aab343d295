"""A deterministic asyncio event loop on virtual time.

The broker's asyncio code runs on it unchanged.  What differs from a real loop:

* ``time()`` is virtual: when nothing is ready, the loop jumps to the next timer
  instead of waiting, so a minute of cluster time costs only the work done in it;
* timers due at the same instant run in the order they were set (a sequence number
  breaks ties), and ready callbacks run first in, first out: one order, every run;
* every callback and task step belongs to the *process* (a simulated node and its
  incarnation) that was current when it was scheduled, read from the context variable
  :data:`PROCESS`.  Before it runs, the loop asks the world's ``gate``: run it, defer it
  (the process is paused: SIGSTOP) or drop it (the process crashed: no ``finally``
  block of a killed process ever runs, as with SIGKILL);
* tasks and futures hash by their creation number, so sets of them iterate in one
  order (object hashes are memory addresses, which differ from run to run);
* ``run_in_executor`` runs the function at once, on the loop's thread (no threads);
* there is no I/O: the simulated network and ZooKeeper move messages with timers.

``after_step`` (when set) runs after every loop iteration: the invariant checker.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import heapq
import itertools
from asyncio import base_events, events
from collections import defaultdict, deque
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, TypeVar, TypeVarTuple, Unpack

# (node name, incarnation) of the simulated process a callback belongs to; None: the world
PROCESS: contextvars.ContextVar[tuple[str, int] | None] = contextvars.ContextVar("minikafka_sim_process", default=None)


class Gate(Enum):
    """What the world says about a process's callback that is due."""

    RUN = "run"
    DEFER = "defer"  # paused: run it when the process resumes
    DROP = "drop"  # crashed: never run it


class SimStalled(RuntimeError):
    """Nothing is ready and no timer is set, or the loop spun without virtual time
    moving on: the simulation cannot go on."""


# loop iterations without virtual time moving on before the run is declared livelocked:
# a busy moment of the cluster takes a few hundred; a livelock, millions
LIVELOCK_STEPS = 200_000

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


class _SeqTimerHandle(events.TimerHandle):
    """A timer ordered by (due time, sequence number)."""

    __slots__ = ("_seq",)
    if TYPE_CHECKING:  # asyncio's own attributes, private and so absent from its type stubs
        _when: float
        _loop: SimLoop
        _scheduled: bool

    def __init__(self, when: float, seq: int, callback: Callable[..., object], args: tuple[Any, ...],
                 loop: SimLoop, context: contextvars.Context | None) -> None:
        super().__init__(when, callback, args, loop, context)
        self._seq = seq

    def __lt__(self, other: Any) -> bool:
        return (self._when, self._seq) < (other._when, other._seq)

    def __le__(self, other: Any) -> bool:
        return (self._when, self._seq) <= (other._when, other._seq)

    def __gt__(self, other: Any) -> bool:
        return (self._when, self._seq) > (other._when, other._seq)

    def __ge__(self, other: Any) -> bool:
        return (self._when, self._seq) >= (other._when, other._seq)

    def __eq__(self, other: Any) -> bool:
        return self is other

    __hash__ = object.__hash__

    def _run(self) -> None:
        # asyncio runs a timer due within the clock's resolution of now without moving
        # the clock to it.  On a virtual clock that can livelock: a task whose deadline is
        # 1e-12 s away sets a timer, the timer fires, the deadline is still ahead, and
        # another task's ready callbacks keep the loop from ever selecting (moving time).
        # A timer never runs before its due time here.
        loop = self._loop
        if loop._now < self._when:
            loop._now = self._when
        super()._run()


class _SeqTask(asyncio.Task):
    """A task whose hash is its creation number: sets of tasks (asyncio's TaskGroup
    cancels its set's tasks in iteration order) iterate alike in every run."""

    def __init__(self, coro: Any, *, loop: "SimLoop", context: Any = None) -> None:
        self._sim_seq = next(loop._seq)
        super().__init__(coro, loop=loop, context=context)

    def __hash__(self) -> int:
        return self._sim_seq


class _SeqFuture(asyncio.Future):
    """A future whose hash is its creation number (see :class:`_SeqTask`)."""

    def __init__(self, *, loop: "SimLoop") -> None:
        self._sim_seq = next(loop._seq)
        super().__init__(loop=loop)

    def __hash__(self) -> int:
        return self._sim_seq


class _VirtualSelector:
    """Instead of waiting ``timeout`` seconds for I/O, move the clock forward."""

    def __init__(self, loop: "SimLoop") -> None:
        self.loop = loop

    def select(self, timeout: float | None) -> list:
        if timeout is None:
            raise SimStalled("no callback is ready and no timer is set")
        if timeout > 0:
            self.loop._now += timeout
        return []

    def close(self) -> None:
        pass


class SimLoop(base_events.BaseEventLoop):
    """The deterministic loop (see the module docstring)."""

    if TYPE_CHECKING:  # BaseEventLoop's own attributes, private and so absent from its type stubs
        _ready: deque[events.Handle]
        _scheduled: list[events.TimerHandle]

        def _check_closed(self) -> None: ...

    def __init__(self, gate: Callable[[tuple[str, int]], Gate] = lambda p: Gate.RUN) -> None:
        super().__init__()
        self._now = 0.0
        self._seq = itertools.count()
        self._selector = _VirtualSelector(self)
        self._clock_resolution = 1e-9
        self.gate = gate
        self.deferred: dict[str, list[tuple[Callable, tuple, Any]]] = defaultdict(list)
        self.after_step: Callable[[], None] | None = None
        self.steps = 0
        self._still_since = (0.0, 0)  # (virtual time, step) when the clock last moved
        self.set_task_factory(lambda loop, coro, context=None: _SeqTask(coro, loop=loop, context=context))

    def create_future(self) -> asyncio.Future:
        return _SeqFuture(loop=self)

    # -- time -----------------------------------------------------------------------------
    def time(self) -> float:
        return self._now

    # -- scheduling ---------------------------------------------------------------------------
    def _guard(self, callback: Callable[[Unpack[_Ts]], object],
               context: contextvars.Context | None) -> Callable[[Unpack[_Ts]], object]:
        process = context.get(PROCESS) if context is not None else PROCESS.get()
        if process is None:
            return callback
        gate = self.gate

        def guarded(*args: Unpack[_Ts]) -> None:
            verdict = gate(process)
            if verdict is Gate.RUN:
                callback(*args)
            elif verdict is Gate.DEFER:
                self.deferred[process[0]].append((callback, args, contextvars.copy_context()))

        return guarded

    def call_soon(self, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                  context: contextvars.Context | None = None) -> events.Handle:
        return super().call_soon(self._guard(callback, context), *args, context=context)

    def call_at(self, when: float, callback: Callable[[Unpack[_Ts]], object], *args: Unpack[_Ts],
                context: contextvars.Context | None = None) -> events.TimerHandle:
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()
        timer = _SeqTimerHandle(when, next(self._seq), self._guard(callback, context), args, self, context)
        heapq.heappush(self._scheduled, timer)
        timer._scheduled = True
        return timer

    def resume(self, node: str) -> None:
        """Run what a paused node's callbacks would have run, in their order."""
        for callback, args, context in self.deferred.pop(node, []):
            self.call_soon(callback, *args, context=context)

    def forget(self, node: str) -> None:
        """A crashed node's deferred callbacks never run."""
        self.deferred.pop(node, None)

    def run_in_executor(self, executor: concurrent.futures.Executor | None, func: Callable[[Unpack[_Ts]], _T],
                        *args: Unpack[_Ts]) -> asyncio.Future[_T]:
        fut: asyncio.Future[_T] = self.create_future()
        try:
            fut.set_result(func(*args))
        except Exception as exc:  # handed to the awaiting task, as a thread's would be
            fut.set_exception(exc)
        return fut

    # -- the loop's machinery without I/O ---------------------------------------------------------
    def _process_events(self, event_list: list) -> None:
        pass

    def _write_to_self(self) -> None:
        pass

    def _run_once(self) -> None:
        super()._run_once()  # type: ignore[misc]  # BaseEventLoop's private step, absent from its type stubs
        self.steps += 1
        if self._now != self._still_since[0]:
            self._still_since = (self._now, self.steps)
        elif self.steps - self._still_since[1] > LIVELOCK_STEPS:
            raise SimStalled(f"livelock: {LIVELOCK_STEPS} loop iterations at virtual time {self._now:.6f} s "
                             f"without the clock moving on ({len(self._ready)} callbacks ready)")
        if self.after_step is not None:
            self.after_step()
