"""Brokers named by the role they play: the leader or a follower of a partition, the
controller, the coordinator of a consumer group or of a transactional id.

A :class:`Role` is only a name; :func:`resolve` finds the broker that plays it *now*,
from ZooKeeper, the cluster's record of truth (the partition state znode for leaders and
their epochs, ``/controller`` and ``/controller_epoch``, the internal topics' partitions
for coordinators: a group's coordinator is the leader of partition
``abs(hashCode(group)) % partitions`` of ``__consumer_offsets``, a transactional id's of
``__transaction_state``, as in Kafka's GroupCoordinator and TransactionCoordinator).

The text form of a role (:func:`parse_role`), for the command line and the HTTP
endpoint: ``leader:TOPIC:PARTITION``, ``follower:TOPIC:PARTITION[:N]``, ``controller``,
``group:GROUP``, ``txn:TRANSACTIONAL_ID``, ``broker:ID`` or a bare broker id.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from ..errors import ClientError
from ..protocol.internal_records import coordinator_partition
from ..zk import layout

OFFSETS_TOPIC = "__consumer_offsets"
TXN_TOPIC = "__transaction_state"
KINDS = ("broker", "leader", "follower", "controller", "group", "txn")


@dataclass(frozen=True)
class Role:
    """A broker named by what it does; ``str(role)`` is its text form."""

    kind: str
    topic: str | None = None
    partition: int = 0
    key: str | None = None  # a group id or a transactional id
    broker: int | None = None
    index: int = 0  # which follower (0: the first in the replica list)

    def __str__(self) -> str:
        if self.kind == "broker":
            return f"broker:{self.broker}"
        if self.kind in ("leader", "follower"):
            tail = f":{self.index}" if self.kind == "follower" and self.index else ""
            return f"{self.kind}:{self.topic}:{self.partition}{tail}"
        if self.kind in ("group", "txn"):
            return f"{self.kind}:{self.key}"
        return self.kind

    def describe(self) -> str:
        """In words: ``the leader of orders-0``."""
        if self.kind == "broker":
            return f"broker {self.broker}"
        if self.kind == "leader":
            return f"the leader of {self.topic}-{self.partition}"
        if self.kind == "follower":
            return f"a follower of {self.topic}-{self.partition}"
        if self.kind == "group":
            return f"the coordinator of group {self.key!r}"
        if self.kind == "txn":
            return f"the transaction coordinator of {self.key!r}"
        return "the controller"


Target = Union[Role, int]


def leader_of(topic: str, partition: int = 0) -> Role:
    """The broker leading ``topic-partition``."""
    return Role("leader", topic=topic, partition=int(partition))


def follower_of(topic: str, partition: int = 0, index: int = 0) -> Role:
    """A follower of ``topic-partition``: the ``index``-th replica that is not the leader
    (in the order of the replica list)."""
    return Role("follower", topic=topic, partition=int(partition), index=int(index))


def controller() -> Role:
    """The active controller."""
    return Role("controller")


def group_coordinator(group_id: str) -> Role:
    """The group coordinator of ``group_id``."""
    return Role("group", key=group_id)


def txn_coordinator(transactional_id: str) -> Role:
    """The transaction coordinator of ``transactional_id``."""
    return Role("txn", key=transactional_id)


def broker(broker_id: int) -> Role:
    """A broker by its id."""
    return Role("broker", broker=int(broker_id))


def as_role(target: Target) -> Role:
    """A role, or a broker id as the role of that broker."""
    if isinstance(target, Role):
        return target
    if isinstance(target, bool) or not isinstance(target, int):
        raise ClientError(f"a fault target is a role (leader_of('t', 0), controller(), ...) or a broker id, "
                          f"got {target!r}")
    return broker(target)


def parse_role(text: str) -> Role:
    """The role a text names (see the module doc); ClientError for anything else."""
    text = str(text).strip()
    usage = ("name a broker as ID, broker:ID, leader:TOPIC:PARTITION, follower:TOPIC:PARTITION[:N], controller, "
             "group:GROUP or txn:TRANSACTIONAL_ID")
    if text.isdigit():
        return broker(int(text))
    kind, _, rest = text.partition(":")
    try:
        if kind == "controller" and not rest:
            return controller()
        if kind == "broker" and rest.isdigit():
            return broker(int(rest))
        if kind in ("group", "txn") and rest:
            return Role(kind, key=rest)
        if kind == "leader":
            topic, _, tail = rest.rpartition(":")
            if topic and tail.isdigit():
                return leader_of(topic, int(tail))
        if kind == "follower":
            topic, partition, index = _follower_parts(rest)
            return follower_of(topic, partition, index)
    except ValueError:
        pass
    raise ClientError(f"unknown fault target {text!r}: {usage}")


def _follower_parts(rest: str) -> tuple[str, int, int]:
    parts = rest.split(":")
    if len(parts) >= 3 and parts[-1].isdigit() and parts[-2].isdigit():
        return ":".join(parts[:-2]), int(parts[-2]), int(parts[-1])
    if len(parts) >= 2 and parts[-1].isdigit():
        return ":".join(parts[:-1]), int(parts[-1]), 0
    raise ValueError(rest)


@dataclass(frozen=True)
class Resolved:
    """The broker playing a role now, and the epoch that goes with it: the partition's
    leader epoch (leader, follower, coordinators: of the internal partition) or the
    controller epoch."""

    role: Role
    broker: int
    epoch: int | None = None
    epoch_name: str = ""  # "leader epoch" or "controller epoch"
    partition: tuple[str, int] | None = None  # the partition whose leadership is meant

    def describe(self) -> str:
        """``broker 2 (the leader of orders-0, leader epoch 0)``."""
        what = self.role.describe()
        if self.role.kind == "broker":
            return what
        epoch = f", {self.epoch_name} {self.epoch}" if self.epoch is not None else ""
        return f"broker {self.broker} ({what}{epoch})"


def _get(zk: Any, path: str) -> bytes | None:
    got = zk.get(path)
    return got[0] if got else None


def partition_state(zk: Any, topic: str, partition: int) -> layout.LeaderIsr | None:
    """The partition state znode of ``topic-partition`` (None: no such partition yet)."""
    data = _get(zk, layout.partition_state_path(topic, partition))
    return layout.LeaderIsr.decode(data) if data else None


def replicas(zk: Any, topic: str) -> dict[int, list[int]]:
    """The replica assignment of ``topic`` (partition -> broker ids); {} when it does not exist."""
    data = _get(zk, layout.topic_path(topic))
    return layout.decode_assignment(data) if data else {}


def controller_and_epoch(zk: Any) -> tuple[int | None, int | None]:
    """(the controller's broker id, the controller epoch), None for what is not there."""
    data = _get(zk, layout.CONTROLLER)
    who = layout.decode_controller(data) if data else None
    raw = _get(zk, layout.CONTROLLER_EPOCH)
    epoch = None
    if raw:
        value = json.loads(raw)
        epoch = int(value["epoch"] if isinstance(value, dict) else value)
    return who, epoch


def resolve(zk: Any, target: Target) -> Resolved:
    """The broker that plays ``target`` now (``zk``: a reader with ``get(path)`` returning
    ``(data, stat)`` or None).  ClientError when no broker plays it (no such partition,
    no leader, no controller elected, the internal topic not created yet)."""
    role = as_role(target)
    if role.kind == "broker":
        return Resolved(role, int(role.broker))  # type: ignore[arg-type]
    if role.kind == "controller":
        who, epoch = controller_and_epoch(zk)
        if who is None:
            raise ClientError("no controller is elected right now (no /controller znode)")
        return Resolved(role, who, epoch, "controller epoch")
    if role.kind in ("group", "txn"):
        topic = OFFSETS_TOPIC if role.kind == "group" else TXN_TOPIC
        assigned = replicas(zk, topic)
        if not assigned:
            users = "consumer group" if role.kind == "group" else "transactional producer"
            raise ClientError(f"{role.describe()} is not known yet: {topic} does not exist until a {users} "
                              f"first uses the cluster")
        partition = coordinator_partition(str(role.key), len(assigned))
        return _leader(zk, role, topic, partition)
    assert role.topic is not None
    if role.kind == "leader":
        return _leader(zk, role, role.topic, role.partition)
    state = partition_state(zk, role.topic, role.partition)
    assigned = replicas(zk, role.topic).get(role.partition)
    if state is None or not assigned:
        raise ClientError(f"no partition {role.topic}-{role.partition} (UNKNOWN_TOPIC_OR_PARTITION)")
    followers = [b for b in assigned if b != state.leader]
    if role.index >= len(followers):
        raise ClientError(f"{role.topic}-{role.partition} has {len(followers)} follower(s) "
                          f"(replicas {assigned}, leader {state.leader}): there is no follower {role.index}")
    return Resolved(role, followers[role.index], state.leader_epoch, "leader epoch", (role.topic, role.partition))


def _leader(zk: Any, role: Role, topic: str, partition: int) -> Resolved:
    state = partition_state(zk, topic, partition)
    if state is None:
        raise ClientError(f"no partition {topic}-{partition} (UNKNOWN_TOPIC_OR_PARTITION)")
    if state.leader < 0:
        raise ClientError(f"{topic}-{partition} has no leader right now (LEADER_NOT_AVAILABLE, "
                          f"leader epoch {state.leader_epoch})")
    return Resolved(role, state.leader, state.leader_epoch, "leader epoch", (topic, partition))
