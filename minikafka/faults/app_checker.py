"""The checks of an application's own records (the public checker of
:mod:`minikafka.testing`): given the :class:`~minikafka.faults.history.History` its
producers and consumers recorded and the final logs of the topics it wrote, what went
wrong, record by record, with the offsets.

* **lost**: an acknowledged record (of a committed transaction, for a transactional
  producer) is not in the final log at its acknowledged offset;
* **unread**: an acknowledged record that a consumer expected to see every record of
  its topics (``once``) was never handed (the application lost it on the way);
* **duplicated**: a value is in a topic's final log more than once (the offsets of each copy);
* **reread**: a ``once`` consumer was handed the same offset more than once (the
  application processed it twice);
* **reordered**: a producer's record acknowledged before it sent the next one to the
  same partition is at a higher offset than that one (:mod:`.checker`'s rule);
* **aborted_seen**: a ``read_committed`` consumer was handed a record of an aborted
  transaction;
* **vanished**: a consumer was handed a record that the final log does not hold at that
  offset.

Pure: the caller gathers the final logs (``final``: ``(topic, partition)`` -> offset ->
value, as read_committed reads them) and says which consumers are ``once`` and which read
committed.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .checker import _reordered
from .history import History, Outcome

TP = tuple[str, int]
SHOWN = 5


@dataclass
class AppVerdict:
    """What :func:`check_application` found; each list holds the offending records."""

    acked: int = 0
    read: int = 0
    lost: list[tuple[TP, int, str, str | None]] = field(default_factory=list)  # tp, offset, value, the log has
    unread: list[tuple[str, TP, int, str]] = field(default_factory=list)  # consumer, tp, offset, value
    duplicated: list[tuple[str, list[tuple[TP, int]]]] = field(default_factory=list)  # value, its copies
    reread: list[tuple[str, TP, int, int]] = field(default_factory=list)  # consumer, tp, offset, times handed
    reordered: list[tuple[TP, str, int, str, int]] = field(default_factory=list)  # tp, earlier, offset, later, offset
    aborted_seen: list[tuple[str, TP, int, str]] = field(default_factory=list)  # consumer, tp, offset, value
    vanished: list[tuple[str, TP, int, str, str | None]] = field(default_factory=list)  # consumer, tp, offset, read, log
    duplicates_allowed: bool = False

    @property
    def ok(self) -> bool:
        """True when nothing was lost, unread, reread, reordered, aborted-but-seen or vanished,
        and nothing duplicated (unless allowed)."""
        return not (self.lost or self.unread or self.reread or self.reordered or self.aborted_seen or self.vanished
                    or (self.duplicated and not self.duplicates_allowed))

    def counts(self) -> dict[str, int]:
        return {"acked": self.acked, "read": self.read, "lost": len(self.lost), "unread": len(self.unread),
                "duplicated": len(self.duplicated), "reread": len(self.reread), "reordered": len(self.reordered),
                "aborted_seen": len(self.aborted_seen), "vanished": len(self.vanished)}

    def line(self) -> str:
        """``acked=100 read=100 lost=0 ... ok=true``."""
        return " ".join(f"{k}={v}" for k, v in self.counts().items()) + f" ok={'true' if self.ok else 'false'}"

    def problems(self, shown: int = SHOWN) -> list[str]:
        """One line per violation, the first ``shown`` of each kind."""
        def at(tp: TP, o: int) -> str:
            return f"{tp[0]}-{tp[1]}@{o}"
        out = [f"lost: acknowledged {v!r} at {at(tp, o)} (the log has {has!r})" for tp, o, v, has in self.lost[:shown]]
        out += [f"unread: {c} never read acknowledged {v!r} at {at(tp, o)}" for c, tp, o, v in self.unread[:shown]]
        if not self.duplicates_allowed:
            out += [f"duplicated: {v!r} at {', '.join(at(tp, o) for tp, o in copies)}"
                    for v, copies in self.duplicated[:shown]]
        out += [f"reread: {c} was handed {at(tp, o)} {n} times" for c, tp, o, n in self.reread[:shown]]
        out += [f"reordered: {b!r} at {at(tp, ob)} is below {a!r} at {at(tp, oa)}, acknowledged before it was sent"
                for tp, a, oa, b, ob in self.reordered[:shown]]
        out += [f"aborted_seen: {c} (read_committed) was handed {v!r} of an aborted transaction at {at(tp, o)}"
                for c, tp, o, v in self.aborted_seen[:shown]]
        out += [f"vanished: {c} read {v!r} at {at(tp, o)}, the log has {has!r}"
                for c, tp, o, v, has in self.vanished[:shown]]
        return out

    def __str__(self) -> str:
        return "\n".join([self.line(), *self.problems()])


def check_application(history: History, final: dict[TP, dict[int, str]], aborted: set[TP | tuple[TP, int]] | None = None,
                      once: set[str] | None = None, read_committed: set[str] | None = None,
                      duplicates_allowed: bool = False, topics: dict[str, set[str]] | None = None) -> AppVerdict:
    """Check ``history`` against ``final`` (see the module doc).  ``aborted``: the
    ``(tp, offset)`` of every record written in an aborted transaction; ``once``: the
    consumer names expected to see every acknowledged record of their topics, once each
    (``topics``: consumer name -> its topics; by default the topics it was handed records
    of); ``read_committed``: the consumer names that read with read_committed."""
    aborted = aborted or set()
    once = once or set()
    read_committed = read_committed or set()
    acked = history.acknowledged()
    v = AppVerdict(acked=len(acked), read=len(history.reads), duplicates_allowed=duplicates_allowed)
    for op in sorted(acked, key=lambda op: (op.tp, op.offset if op.offset is not None else -1, op.value)):
        if op.offset is None or op.tp not in final:
            continue
        has = final[op.tp].get(op.offset)
        if has != op.value:
            v.lost.append((op.tp, op.offset, op.value, has))
    copies: dict[tuple[str, str], list[tuple[TP, int]]] = {}  # (topic, value) -> where it is
    for tp, log in sorted(final.items()):
        for o, value in sorted(log.items()):
            copies.setdefault((tp[0], value), []).append((tp, o))
    v.duplicated = [(value, where) for (_, value), where in sorted(copies.items()) if len(where) > 1]
    v.reordered = _reordered([op for op in acked if op.offset is not None and op.completed_at is not None])
    handed: dict[str, Counter] = {}
    topics_read: dict[str, set[str]] = {}
    for r in history.reads:
        handed.setdefault(r.process, Counter())[(r.tp, r.offset)] += 1
        if topics is None or r.process not in topics:
            topics_read.setdefault(r.process, set()).add(r.tp[0])
        if r.process in read_committed and (r.tp, r.offset) in aborted:
            v.aborted_seen.append((r.process, r.tp, r.offset, r.value))
        if r.tp in final and final[r.tp].get(r.offset) != r.value and (r.tp, r.offset) not in aborted:
            v.vanished.append((r.process, r.tp, r.offset, r.value, final[r.tp].get(r.offset)))
    for name, wanted in (topics or {}).items():
        topics_read.setdefault(name, set()).update(wanted)
    for name in sorted(once):
        seen = handed.get(name, Counter())
        v.reread += [(name, tp, o, n) for (tp, o), n in sorted(seen.items()) if n > 1]
        for op in acked:
            if op.offset is not None and op.tp[0] in topics_read.get(name, set()) and (op.tp, op.offset) not in seen:
                v.unread.append((name, op.tp, op.offset, op.value))
    v.unread.sort(key=lambda u: (u[0], u[1], u[2]))
    return v


__all__ = ["AppVerdict", "Outcome", "check_application"]
