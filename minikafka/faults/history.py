"""The history of a fault-testing run (Jepsen's history): every operation the clients
invoked and how it completed.

An operation is invoked, then completes at most once:

* ``ok``: the cluster acknowledged it (a produce: at this offset);
* ``fail``: a definite error (``errors.py``'s ``definite`` flag): it certainly had no
  effect;
* ``info``: indefinite, it may or may not have happened: no answer came (a timeout, a
  reset connection) or an indefinite error (``NOT_ENOUGH_REPLICAS_AFTER_APPEND``,
  ``REQUEST_TIMED_OUT``).  The checker never requires an unacknowledged value to be
  absent.

An operation never completed is *unresolved* (its client stopped first).  Reads (a
consumer handed a record) complete when they happen.  Times are the runner's clock
(virtual seconds in the simulation, ``time.monotonic()`` live), passed in by the caller:
the history itself reads no clock.  It is not thread-safe: the live clients record under
a lock of their own.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Union

TP = tuple[str, int]


class Outcome(str, Enum):
    """How an operation completed (Jepsen's ``:ok``, ``:fail`` and ``:info``)."""

    OK = "ok"
    FAIL = "fail"
    INFO = "info"


@dataclass
class Produce:
    """One record sent with acks=all: ``value`` to ``tp``; ``offset`` once acknowledged."""

    process: str
    tp: TP
    value: str
    invoked_at: float
    outcome: Outcome | None = None  # None: unresolved
    offset: int | None = None
    completed_at: float | None = None
    error: str = ""


@dataclass(frozen=True)
class Read:
    """A consumer was handed ``value`` at ``tp`` offset ``offset``."""

    process: str
    tp: TP
    offset: int
    value: str
    at: float


@dataclass
class OffsetCommit:
    """One OffsetCommit of ``group``: ``offsets`` per partition, all or nothing."""

    process: str
    group: str
    offsets: dict[TP, int]
    invoked_at: float
    outcome: Outcome | None = None
    completed_at: float | None = None
    error: str = ""


Op = Union[Produce, Read, OffsetCommit]


@dataclass
class History:
    """The operations of one run, in the order they were recorded.

    ``watch(fn)`` calls ``fn(op)`` for every read and every completion as it is recorded
    (the simulation checks each read against the brokers' state at that moment)."""

    produces: list[Produce] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)
    commits: list[OffsetCommit] = field(default_factory=list)
    _watchers: list[Callable[[Op], None]] = field(default_factory=list, repr=False)

    def watch(self, fn: Callable[[Op], None]) -> None:
        """Call ``fn(op)`` for every read and completion recorded from now on."""
        self._watchers.append(fn)

    def _tell(self, op: Op) -> None:
        for fn in self._watchers:
            fn(op)

    # -- recording -------------------------------------------------------------------------
    def invoke_produce(self, process: str, tp: TP, value: str, at: float) -> Produce:
        """A producer sends ``value`` to ``tp``; complete the returned operation later."""
        op = Produce(process, tp, value, at)
        self.produces.append(op)
        return op

    def invoke_commit(self, process: str, group: str, offsets: dict[TP, int], at: float) -> OffsetCommit:
        """A committer commits ``offsets`` for ``group``; complete the returned operation later."""
        op = OffsetCommit(process, group, dict(offsets), at)
        self.commits.append(op)
        return op

    def ok(self, op: Produce | OffsetCommit, at: float, offset: int | None = None) -> None:
        """``op`` was acknowledged (a produce at ``offset``)."""
        self._complete(op, Outcome.OK, at, "")
        if isinstance(op, Produce):
            op.offset = offset

    def fail(self, op: Produce | OffsetCommit, at: float, error: str = "") -> None:
        """``op`` certainly had no effect (a definite error)."""
        self._complete(op, Outcome.FAIL, at, error)

    def info(self, op: Produce | OffsetCommit, at: float, error: str = "") -> None:
        """``op`` may or may not have happened (no answer, or an indefinite error)."""
        self._complete(op, Outcome.INFO, at, error)

    def error(self, op: Produce | OffsetCommit, at: float, error: str, definite: bool) -> None:
        """``op`` ended in ``error``: :meth:`fail` when ``definite``, else :meth:`info`."""
        (self.fail if definite else self.info)(op, at, error)

    def _complete(self, op: Produce | OffsetCommit, outcome: Outcome, at: float, error: str) -> None:
        assert op.outcome is None, f"{op} completed twice"
        op.outcome, op.completed_at, op.error = outcome, at, error
        self._tell(op)

    def read(self, process: str, tp: TP, offset: int, value: str, at: float) -> None:
        """A consumer was handed ``value`` at ``tp`` offset ``offset``."""
        op = Read(process, tp, offset, value, at)
        self.reads.append(op)
        self._tell(op)

    # -- views -----------------------------------------------------------------------------
    def acknowledged(self) -> list[Produce]:
        """The produces that completed ok, in the order they were sent."""
        return [op for op in self.produces if op.outcome is Outcome.OK]

    @property
    def sent(self) -> int:
        """Produces invoked."""
        return len(self.produces)

    @property
    def acked(self) -> int:
        """Produces acknowledged."""
        return sum(1 for op in self.produces if op.outcome is Outcome.OK)

    @property
    def failed(self) -> int:
        """Produces completed without an acknowledgement (``fail`` or ``info``)."""
        return sum(1 for op in self.produces if op.outcome is not None and op.outcome is not Outcome.OK)

    @property
    def unresolved(self) -> int:
        """Produces never completed."""
        return sum(1 for op in self.produces if op.outcome is None)

    @property
    def commits_acked(self) -> int:
        """Offset commits acknowledged."""
        return sum(1 for op in self.commits if op.outcome is Outcome.OK)

    def values_read(self) -> dict[tuple[TP, int], set[str]]:
        """Every value a consumer was handed, per ``(tp, offset)``."""
        out: dict[tuple[TP, int], set[str]] = {}
        for r in self.reads:
            out.setdefault((r.tp, r.offset), set()).add(r.value)
        return out

    def longest_without_ack(self, start: float, end: float) -> float:
        """The longest time between ``start`` and ``end`` in which no produce was acknowledged."""
        times = sorted(op.completed_at for op in self.produces
                       if op.outcome is Outcome.OK and op.completed_at is not None and start <= op.completed_at <= end)
        points = [start, *times, end]
        return max(b - a for a, b in zip(points, points[1:]))
