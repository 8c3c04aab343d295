"""The differential fuzzer's operations: a seeded generator of sequences of Kafka requests.

:func:`generate` turns a seed into a list of operations, each a small JSON-able dict
(``{"op": "produce", "topic": "t1", ...}``) that :mod:`.fuzz_run` runs through real clients
on one cluster.  Names are short and unprefixed (topics ``t0``-``t3``, groups ``g0``-``g2``,
transactional ids ``x0``-``x1``); the runner prefixes them per seed so that seeds sharing a
cluster never see each other's state.  Generation is deterministic from the seed (one
``random.Random(seed)``) and keeps a small model of what exists (topics and their partition
counts), so that most operations are valid and some are deliberately not: a partition past
the topic's count, a replication factor above the broker count, a bad config value, a topic
created twice, an offset past the end.

Operations (the runner documents each answer):

* topics and configs: ``create_topic``, ``create_partitions``, ``delete_topic``,
  ``alter_config`` (incremental SET or DELETE), ``describe_config``;
* records: ``produce`` (acks 0, 1 or all, keys, headers, every codec, CreateTime set by
  the generator; idempotent or not), ``transaction`` (commit or abort), ``fence`` (a second
  producer with the same transactional id takes over, the first one's next transaction,
  or its open one, is refused);
* reads: ``fetch`` (any offset, a partition's max bytes, read_uncommitted or
  read_committed), ``list_offsets`` (earliest, latest, max timestamp, a timestamp),
  ``leader_epoch`` (OffsetsForLeaderEpoch), ``delete_records``;
* groups: ``commit_offsets``, ``fetch_offsets``, ``describe_group``, ``delete_group``,
  ``delete_group_offsets``, ``consume`` (a consumer joins, reads what is there, commits and
  leaves);
* faults: ``fault`` (a broker picked by its role, a partition's ``leader`` or ``follower``,
  the ``controller``, a ``group_coordinator`` or a ``txn_coordinator``, gets SIGKILL,
  SIGTERM or SIGSTOP and comes back, see :mod:`.fuzz_faults`).  Fault steps come from a
  second random stream of the seed (about one after every :data:`FAULT_EVERY` operations),
  so that the other operations of a seed are the same with them as without.
"""
from __future__ import annotations

import random
from typing import Any

TOPICS = ("t0", "t1", "t2", "t3")
GROUPS = ("g0", "g1", "g2")
TXN_IDS = ("x0", "x1")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BROKERS = 3
BASE_TIMESTAMP = 1_600_000_000_000  # CreateTime of generated records: fixed, far from the brokers' clocks

# (key, a valid value, an invalid value) of the topic configs the fuzzer alters
TOPIC_CONFIGS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # retention far beyond the records' 2020 timestamps: when a broker's retention check runs is not compared
    ("retention.ms", ("315360000000", "-1", "999999999999"), "abc"),
    ("cleanup.policy", ("delete", "compact", "compact,delete"), "bogus"),
    ("message.timestamp.type", ("CreateTime", "LogAppendTime"), "WallClock"),
    ("compression.type", ("producer", "gzip", "lz4", "uncompressed"), "brotli"),
    ("min.insync.replicas", ("1", "2"), "0"),
    ("max.message.bytes", ("1048588", "400"), "-5"),
    ("retention.bytes", ("-1", "1073741824"), "lots"),
    ("no.such.config", (), "1"),
)
DESCRIBED_CONFIGS = tuple(k for k, valid, _ in TOPIC_CONFIGS if valid)

# weights of the operations once some topic exists
WEIGHTS: dict[str, int] = {
    "create_topic": 6, "create_partitions": 2, "delete_topic": 2, "alter_config": 5, "describe_config": 3,
    "produce": 22, "transaction": 7, "fence": 2,
    "fetch": 12, "list_offsets": 8, "leader_epoch": 4, "delete_records": 4,
    "commit_offsets": 5, "fetch_offsets": 3, "describe_group": 2, "delete_group": 1, "delete_group_offsets": 2,
    "consume": 3,
}

FAULT_ROLES = ("leader", "follower", "controller", "group_coordinator", "txn_coordinator")
FAULT_SIGNALS = ("KILL", "TERM", "STOP")
FAULT_EVERY = 60  # a fault step after an operation with probability 1/60: about 5 in 300 operations
KINDS = (*sorted(WEIGHTS), "fault")  # every operation kind


class _Model:
    """What the generator believes exists: topic -> partition count."""

    def __init__(self) -> None:
        self.topics: dict[str, int] = {}


def _records(rng: random.Random, n: int, keyed: bool) -> list[list[Any]]:
    """``[key, value, headers, timestamp offset]`` per record; values of varied sizes."""
    out = []
    for _ in range(n):
        key = f"k{rng.randrange(6)}" if keyed or rng.random() < 0.3 else None
        value = None if rng.random() < 0.03 else "v" + "x" * rng.choice((0, 3, 20, 120, 600))
        headers = [[f"h{i}", f"hv{rng.randrange(100)}"] for i in range(rng.choice((0, 0, 0, 1, 2)))]
        out.append([key, value, headers, rng.randrange(0, 5000)])
    return out


def _topic(rng: random.Random, model: _Model, existing: float = 0.93) -> str:
    if model.topics and rng.random() < existing:
        return rng.choice(sorted(model.topics))
    return rng.choice(TOPICS)


def _partition(rng: random.Random, model: _Model, topic: str) -> int:
    count = model.topics.get(topic, 1)
    return count if rng.random() < 0.04 else rng.randrange(count)  # sometimes one past the last


def _offset(rng: random.Random) -> Any:
    return rng.choice(("start", "end", "end", 0, 1, 2, 5, 10, 30, 200))


def _create_topic(rng: random.Random, model: _Model) -> dict:
    free = [t for t in TOPICS if t not in model.topics]
    topic = rng.choice(free) if free and rng.random() < 0.9 else rng.choice(TOPICS)
    op: dict[str, Any] = {"op": "create_topic", "topic": topic, "partitions": rng.choice((1, 1, 2, 3)),
          "rf": rng.choice((1, 2, 3, 3, 3)), "configs": {}, "validate_only": rng.random() < 0.05}
    if rng.random() < 0.3:
        op["configs"]["message.timestamp.type"] = "LogAppendTime"
    if rng.random() < 0.2:
        op["configs"]["compression.type"] = rng.choice(("gzip", "lz4", "uncompressed"))
    if rng.random() < 0.2:
        op["configs"]["min.insync.replicas"] = rng.choice(("1", "2"))
    bad = rng.random()
    if bad < 0.04:
        op["partitions"] = 0
    elif bad < 0.08:
        op["rf"] = 4
    elif bad < 0.12:
        key, _, invalid = rng.choice(TOPIC_CONFIGS)
        op["configs"][key] = invalid
    valid = bad >= 0.12 and topic not in model.topics and not op["validate_only"]
    if valid:
        model.topics[topic] = op["partitions"]
    return op


def _one(rng: random.Random, model: _Model, kind: str) -> dict:
    topic = _topic(rng, model)
    if kind == "create_partitions":
        current = model.topics.get(topic, 1)
        count = rng.choice((current + 1, current + 1, current + 2, current, max(current - 1, 1)))
        if topic in model.topics and count > current:
            model.topics[topic] = count
        return {"op": kind, "topic": topic, "count": count}
    if kind == "delete_topic":
        model.topics.pop(topic, None)
        return {"op": kind, "topic": topic}
    if kind == "alter_config":
        key, valid, invalid = rng.choice(TOPIC_CONFIGS)
        if rng.random() < 0.2 and valid:
            return {"op": kind, "topic": topic, "key": key, "value": None, "operation": "DELETE"}
        value = rng.choice(valid) if valid and rng.random() < 0.85 else invalid
        return {"op": kind, "topic": topic, "key": key, "value": value, "operation": "SET"}
    if kind == "describe_config":
        return {"op": kind, "topic": topic}
    if kind == "produce":
        keyed = rng.random() < 0.3
        n = rng.choice((1, 1, 2, 3, 5, 10, 20))
        idempotent = rng.random() < 0.35
        return {"op": kind, "topic": topic, "partition": None if keyed else _partition(rng, model, topic),
                "records": _records(rng, n, keyed), "acks": -1 if idempotent else rng.choice((0, 1, -1, -1)),
                "codec": rng.choice(CODECS), "idempotent": idempotent}
    if kind in ("transaction", "fence"):
        op = {"op": kind, "txn": rng.choice(TXN_IDS), "topic": topic, "partition": _partition(rng, model, topic),
              "records": _records(rng, rng.choice((1, 2, 4, 8)), False)}
        if kind == "transaction":
            op["end"] = rng.choice(("commit", "commit", "abort"))
        else:
            op["open"] = rng.random() < 0.5  # the first producer has a transaction open when fenced
        return op
    if kind == "fetch":
        return {"op": kind, "topic": topic, "partition": _partition(rng, model, topic), "offset": _offset(rng),
                "max_bytes": rng.choice((1, 100, 300, 1000, 5000, 1048576)),
                "isolation": rng.choice(("read_uncommitted", "read_committed"))}
    if kind == "list_offsets":
        spec = rng.choice(("earliest", "latest", "max_timestamp", "timestamp", "timestamp"))
        op = {"op": kind, "topic": topic, "partition": _partition(rng, model, topic), "spec": spec,
              "isolation": rng.choice(("read_uncommitted", "read_committed"))}
        if spec == "timestamp":
            op["timestamp"] = BASE_TIMESTAMP + rng.choice((-1, 0, 100, 2500, 4999, 6000))
        return op
    if kind == "leader_epoch":
        return {"op": kind, "topic": topic, "partition": _partition(rng, model, topic),
                "epoch": rng.choice((0, 0, 1, 5, -1))}
    if kind == "delete_records":
        return {"op": kind, "topic": topic, "partition": _partition(rng, model, topic),
                "offset": rng.choice(("hw", 0, 1, 2, 5, 10, 1000))}
    group = rng.choice(GROUPS)
    if kind == "commit_offsets":
        return {"op": kind, "group": group, "topic": topic, "partition": _partition(rng, model, topic),
                "offset": rng.choice((0, 1, 3, 10, 100)), "metadata": rng.choice(("", "m1"))}
    if kind == "delete_group_offsets":
        return {"op": kind, "group": group, "topic": topic, "partition": _partition(rng, model, topic)}
    if kind == "consume":
        return {"op": kind, "group": group, "topic": topic,
                "isolation": rng.choice(("read_uncommitted", "read_committed"))}
    return {"op": kind, "group": group}  # fetch_offsets, describe_group, delete_group


def fault(rng: random.Random, model: _Model) -> dict:
    """A fault step: a signal and a role, with the partition, group or transactional id it
    names (a partition of an existing topic)."""
    op: dict[str, Any] = {"op": "fault", "signal": rng.choice(FAULT_SIGNALS), "role": rng.choice(FAULT_ROLES)}
    if op["role"] in ("leader", "follower"):
        op["topic"] = rng.choice(sorted(model.topics))
        op["partition"] = rng.randrange(model.topics[op["topic"]])
    elif op["role"] == "group_coordinator":
        op["group"] = rng.choice(GROUPS)
    elif op["role"] == "txn_coordinator":
        op["txn"] = rng.choice(TXN_IDS)
    return op


def generate(seed: int, ops: int, faults: bool = True) -> list[dict]:
    """``ops`` operations from ``seed``: the same list for the same arguments.  Fault steps
    (``faults``) are drawn from a second random stream, so that the list without them is
    the same operations, only longer at the end."""
    rng = random.Random(seed)
    frng = random.Random(f"faults-{seed}")
    model = _Model()
    out: list[dict] = []
    kinds = sorted(WEIGHTS)
    weights = [WEIGHTS[k] for k in kinds]
    while len(out) < ops:
        if not model.topics or (len(model.topics) < 2 and rng.random() < 0.15):
            out.append(_create_topic(rng, model))
        else:
            kind = rng.choices(kinds, weights)[0]
            out.append(_create_topic(rng, model) if kind == "create_topic" else _one(rng, model, kind))
        if faults and model.topics and len(out) < ops and frng.random() < 1 / FAULT_EVERY:
            out.append(fault(frng, model))
    return out


def fault_drill() -> list[dict]:
    """A short sequence around one SIGKILL (what CI runs besides its seeds, whose sequences hold
    a SIGTERM and a SIGSTOP): the leader of a partition holding an idempotent producer's
    records is killed; the same producer writes on to the new leader, and the reads after it
    must find every acknowledged record under the new leader epoch."""
    recs = [[f"k{i}", "v" + "x" * (i * 7), [], i * 10] for i in range(6)]
    return [
        {"op": "create_topic", "topic": "t0", "partitions": 2, "rf": 3, "configs": {}, "validate_only": False},
        {"op": "create_topic", "topic": "t1", "partitions": 1, "rf": 1, "configs": {}, "validate_only": False},
        {"op": "produce", "topic": "t0", "partition": 0, "records": recs, "acks": -1, "codec": "none",
         "idempotent": True},
        {"op": "produce", "topic": "t1", "partition": 0, "records": recs[:3], "acks": 1, "codec": "gzip",
         "idempotent": False},
        {"op": "fault", "signal": "KILL", "role": "leader", "topic": "t0", "partition": 0},
        {"op": "produce", "topic": "t0", "partition": 0, "records": recs[:2], "acks": -1, "codec": "none",
         "idempotent": True},
        {"op": "fetch", "topic": "t0", "partition": 0, "offset": "start", "max_bytes": 1048576,
         "isolation": "read_uncommitted"},
        {"op": "leader_epoch", "topic": "t0", "partition": 0, "epoch": 0},
        {"op": "list_offsets", "topic": "t1", "partition": 0, "spec": "latest", "isolation": "read_uncommitted"},
    ]


def names(ops: list[dict]) -> dict[str, set[str]]:
    """The topics, groups and transactional ids a sequence uses (the end state covers them)."""
    out: dict[str, set[str]] = {"topics": set(), "groups": set(), "txns": set()}
    for op in ops:
        if "topic" in op:
            out["topics"].add(op["topic"])
        if "group" in op:
            out["groups"].add(op["group"])
        if "txn" in op:
            out["txns"].add(op["txn"])
    return out
