"""The waits a test of a Kafka application needs around a fault, each polling a
condition (never a fixed sleep) and failing with what it last saw after ``timeout_s``:

* :meth:`Waits.leader`: a partition has a leader (other than a given broker);
* :meth:`Waits.isr_full`: every replica of a partition (of a topic, of every topic) is in
  its ISR, under a leader (a timeout names a partition that is not, with its leader, ISR
  and replicas);
* :meth:`Waits.group_stable`: a consumer group is Stable (with so many members);
* :meth:`Waits.caught_up`: a group's committed offsets reached the partitions' end
  offsets (the consumer processed everything written so far).

Leaders and ISRs are read from ZooKeeper (the partition state znodes); groups and
offsets are asked of the brokers with an admin client.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, TypeVar

from ..polling import poll
from ..zk import layout
from .roles import partition_state, replicas

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """A wait ran out of time; the message says for what and what was seen last."""


def wait_until(condition: Callable[[], T], timeout_s: float = 30.0, what: str = "the condition",
               interval_s: float = 0.05) -> T:
    """Poll ``condition`` until it returns something truthy and return that; an exception
    it raises counts as not yet (and is quoted if time runs out)."""
    got = poll(condition, timeout_s, interval_s, not_yet=(Exception,))  # a broker or ZooKeeper not answering
    if got.value is None:
        raise WaitTimeout(f"timed out after {timeout_s:g} s waiting for {what} (last seen: {got.last!r})")
    return got.value


class Waits:
    """Waits on one cluster: ``zk`` reads ZooKeeper, ``bootstrap`` is the brokers'
    msgpack/HTTP bootstrap string for the admin client and consumer the waits use."""

    def __init__(self, zk: Any, bootstrap: str) -> None:
        self.zk = zk
        self.bootstrap = bootstrap

    def admin(self) -> Any:
        from ..client.sync import Admin

        return Admin(self.bootstrap)

    def leader(self, topic: str, partition: int = 0, not_broker: int | None = None,
               timeout_s: float = 30.0) -> tuple[int, int]:
        """Until ``topic-partition`` has a leader (not ``not_broker`` when given); returns
        ``(leader, leader epoch)``."""
        def led() -> tuple[int, int] | None:
            st = partition_state(self.zk, topic, partition)
            if st is None or st.leader < 0 or st.leader == not_broker:
                return None
            return st.leader, st.leader_epoch
        other = f" other than broker {not_broker}" if not_broker is not None else ""
        return wait_until(led, timeout_s, f"{topic}-{partition} to have a leader{other}")

    def isr_full(self, topic: str | None = None, partitions: Iterable[int] | None = None,
                 timeout_s: float = 60.0) -> bool:
        """Until every partition of ``topic`` (or the ones named; every topic when None)
        has a leader and all its replicas in the ISR."""
        def full() -> bool | str:
            topics = [topic] if topic is not None else self.zk.children(layout.BROKER_TOPICS)
            for t in topics:
                assigned = replicas(self.zk, t)
                if not assigned:
                    return f"{t}: no such topic"
                for p in (sorted(assigned) if partitions is None or topic is None else partitions):
                    st = partition_state(self.zk, t, p)
                    if st is None:
                        return f"{t}-{p}: no partition state"
                    if st.leader < 0 or sorted(st.isr) != sorted(assigned.get(p, [])):
                        return (f"{t}-{p}: leader {st.leader}, leader epoch {st.leader_epoch}, ISR {sorted(st.isr)}, "
                                f"replicas {assigned.get(p, [])}")
            return True
        seen: list[bool | str] = [False]

        def done() -> bool:
            seen[0] = full()
            return seen[0] is True
        what = f"every replica of {topic or 'every topic'} in its ISR, under a leader"
        try:
            return wait_until(done, timeout_s, what)
        except WaitTimeout as exc:
            if not isinstance(seen[0], str):
                raise
            raise WaitTimeout(f"timed out after {timeout_s:g} s waiting for {what} (last seen: {seen[0]})") from exc

    def group_stable(self, group_id: str, members: int | None = None, timeout_s: float = 60.0) -> Any:
        """Until consumer group ``group_id`` is Stable (with ``members`` members when given);
        returns its description."""
        with self.admin() as admin:
            def stable() -> Any:
                d = admin.describe_group(group_id)
                if d.state != "Stable" or (members is not None and len(d.members) != members):
                    return None
                return d
            return wait_until(stable, timeout_s, f"group {group_id!r} to be Stable"
                              + (f" with {members} member(s)" if members is not None else ""))

    def caught_up(self, group_id: str, topic: str, timeout_s: float = 60.0) -> dict:
        """Until group ``group_id`` has committed, for every partition of ``topic``, the
        partition's end offset (the high watermark now); returns the committed offsets."""
        from ..client.sync import Consumer
        from ..client.types import TopicPartition

        with self.admin() as admin:
            parts = [p.partition for p in admin.describe_topics([topic])[0].partitions]
            tps = [TopicPartition(topic, p) for p in parts]
            with Consumer(self.bootstrap) as c:
                def done() -> dict | None:
                    ends = c.end_offsets(tps)
                    committed = admin.list_group_offsets(group_id)
                    behind = {tp: (committed.get(tp, 0), end) for tp, end in ends.items() if committed.get(tp, 0) < end}
                    return None if behind else {tp: committed.get(tp, 0) for tp in tps}
                return wait_until(done, timeout_s, f"group {group_id!r} to commit the end offsets of {topic}")
