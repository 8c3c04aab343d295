"""The differential fuzzer's comparison: answers side by side, the allow-list, the shrinker.

Pure: no clusters here.  :func:`compare` walks two runs of the same sequence (the answers
of :class:`.fuzz_run.Runner`, one per operation, then the end state) and gives every
leaf where Kafka's and minikafka's differ, each with a path such as
``op 7 fetch/batches/0/offsets/1`` or ``state znodes//brokers/topics/t1/version``.
:data:`ALLOWED` lists the differences that are known and explained (deliberate, or being
fixed elsewhere); :func:`unexplained` keeps the others, which fail the fuzz run.
:func:`shrink` reduces a failing sequence to a smaller one that still fails (delta
debugging over the operation list), and :func:`reproduction` writes it as JSON for
``minikafka reference fuzz --replay FILE``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Allowed:
    """A known difference: paths matching ``pattern`` (a regular expression over the whole
    path), optionally only where Kafka's value is ``kafka`` and minikafka's ``ours``."""

    name: str  # a short handle, quoted in reports
    pattern: str
    reason: str
    kafka: Any = ...  # ... = any value; a tuple: any of its values
    ours: Any = ...
    after: str | None = None  # only after an operation of this kind in the sequence
    cascade: bool = False  # what differs later in the sequence (and in the end state) follows from it
    test: Callable[[dict], bool] | None = None  # the difference -> whether it is this one
    # (the difference, every difference of the same operation) -> whether it is this one
    context: Callable[[dict, list[dict]], bool] | None = None
    operation: Callable[[dict], bool] | None = None  # the operation answered -> whether it is this one

    def matches(self, diff: dict, ops: list[dict] | None = None, same_op: list[dict] | None = None) -> bool:
        if not re.fullmatch(self.pattern, diff["path"]) or not _value_in(diff["kafka"], self.kafka) \
                or not _value_in(diff["ours"], self.ours):
            return False
        if self.test is not None and not self.test(diff):
            return False
        if self.context is not None and not self.context(diff, same_op or []):
            return False
        if self.operation is not None:
            at = _op_index(diff["path"])
            if ops is None or at is None or at >= len(ops) or not self.operation(ops[at]):
                return False
        if self.after is None:
            return True
        at = _op_index(diff["path"])
        return ops is not None and any(op["op"] == self.after for op in ops[:len(ops) if at is None else at])


def _fewer(diff: dict) -> bool:
    """Kafka's list is shorter (a count) or lacks the element, and minikafka's has it."""
    kafka, ours = diff["kafka"], diff["ours"]
    if kafka == "<absent>":
        return re.search(r"/(batches|aborted)/\d+(/|$)", diff["path"]) is not None
    return bool(re.search(r"/(batches|aborted)/#$", diff["path"])) and isinstance(kafka, int) \
        and isinstance(ours, int) and kafka < ours


def _more(diff: dict) -> bool:
    """Kafka's list is longer (a count) or has an element that minikafka's lacks."""
    kafka, ours = diff["kafka"], diff["ours"]
    if ours == "<absent>":
        return re.search(r"/batches/\d+(/|$)", diff["path"]) is not None
    return bool(re.search(r"/batches/#$", diff["path"])) and isinstance(kafka, int) \
        and isinstance(ours, int) and kafka > ours


def _in_a_batch_more(diff: dict, same_op: list[dict]) -> bool:
    """An aborted transaction in Kafka's Fetch answer that minikafka's lacks, where Kafka's
    answer holds more batches: the count is higher with Kafka's batch count higher too, or
    the transaction's first offset lies in one of the batches only Kafka returned."""
    kafka, ours = diff["kafka"], diff["ours"]
    prefix = diff["path"].split("/aborted/")[0]
    if diff["path"].endswith("/aborted/#"):
        return isinstance(kafka, int) and isinstance(ours, int) and kafka > ours and any(
            d["path"] == f"{prefix}/batches/#" and isinstance(d["kafka"], int) and isinstance(d["ours"], int)
            and d["kafka"] > d["ours"] for d in same_op)
    if ours != "<absent>" or not isinstance(kafka, int):
        return False
    firsts = {d["path"][:-len("/offsets/0")]: d["kafka"] for d in same_op
              if d["path"].startswith(f"{prefix}/batches/") and d["path"].endswith("/offsets/0") and d["ours"] == "<absent>"}
    lasts = {d["path"][:-len("/offsets/1")]: d["kafka"] for d in same_op
             if d["path"].startswith(f"{prefix}/batches/") and d["path"].endswith("/offsets/1") and d["ours"] == "<absent>"}
    return any(isinstance(first, int) and isinstance(lasts.get(batch), int) and first <= kafka <= lasts[batch]
               for batch, first in firsts.items())


def _value_in(value: Any, allowed: Any) -> bool:
    return allowed is ... or (value in allowed if isinstance(allowed, tuple) else value == allowed)


def _op_index(path: str) -> int | None:
    """The operation a difference belongs to (None: the end state)."""
    m = re.match(r"op (\d+) ", path)
    return int(m.group(1)) if m else None


ALLOWED: tuple[Allowed, ...] = (
    Allowed("decompressed-batch-cap",
            r"op \d+ (produce|transaction|fence)/(delivered|open|late)/\d+/0",
            "Deliberate: a compressed batch whose records decompress past the topic's max.message.bytes is refused "
            "with MESSAGE_TOO_LARGE (librdkafka: MSG_SIZE_TOO_LARGE) by minikafka, which decompresses step by step "
            "and stops there (compression bombs, docs/security.md); Kafka checks only the compressed size and goes "
            "on (accepting it, or refusing it for another reason such as a keyless record on a compacted topic). "
            "Everything later in the sequence follows from it.", ours="MSG_SIZE_TOO_LARGE", cascade=True),
    Allowed("decompressed-batch-cap", r"op \d+ produce/landed",
            "The same deliberate cap, met by an acks=0 produce: no answer says the batch was refused, so its "
            "records are seen not to reach minikafka's log where Kafka's took them. Everything later in the "
            "sequence follows from it.", kafka=True, ours=False, cascade=True),
    Allowed("fetch-stops-after-a-transactional-batch", r"op \d+ fetch/(batches|aborted)/.*",
            "One Fetch answer from Apache Kafka 3.9.2 holds fewer batches than asked for once the partition holds "
            "transactional batches: from an offset at or before the first transactional batch it returns that batch "
            "alone, whatever max_bytes (three plain batches come back together; after one committed transaction "
            "only the first). minikafka returns every whole batch that fits. A consumer fetches again from the "
            "next offset and reads the same records; the end state compares the whole logs. Only answers where "
            "Kafka's batches are a prefix of minikafka's are explained.",
            test=lambda d: _fewer(d)),
    Allowed("fetch-fit-of-recompressed-batches", r"op \d+ fetch/batches/.*",
            "A Fetch with a small max_bytes on a topic whose compression.type names a codec (the broker "
            "compresses every batch again): how many whole batches fit depends on their compressed sizes, and "
            "Kafka's Java codecs write other bytes than minikafka's (lz4 frames, zstd and gzip levels), so Kafka's "
            "answer may hold a batch more. The batches both return are the same; the end state compares the whole "
            "logs. Only answers where minikafka's batches are a prefix of Kafka's are explained.",
            test=lambda d: _more(d)),
    Allowed("fetch-fit-of-recompressed-batches", r"op \d+ fetch/aborted/.*",
            "The same Fetch, read_committed: the aborted transactions of an answer are those that begin in its "
            "batches, so the batch more that Kafka's answer holds may bring an aborted transaction more. Only "
            "transactions that begin in a batch minikafka's answer lacks are explained.",
            context=_in_a_batch_more),
    Allowed("time-lookup-below-the-log-start", r"op \d+ list_offsets/(leader_epoch|offset|timestamp)",
            "ListOffsets by time after DeleteRecords: Kafka searches the first segment whose largest timestamp "
            "reaches the time asked, and a segment wholly below the new log start stays on disk until the next "
            "retention check (every 5 minutes), so when that segment is the first match and holds nothing at or "
            "past the log start, Kafka answers -1 without looking further; minikafka drops such segments at once "
            "and answers the first record at or after the time from the log start on. Kafka's answer depends on "
            "when its retention check last ran.", kafka=-1, after="delete_records"),
    Allowed("max-timestamp-below-the-log-start", r"op \d+ list_offsets/(leader_epoch|offset|timestamp)",
            "ListOffsets MAX_TIMESTAMP after DeleteRecords: Kafka takes the largest timestamp of every segment it "
            "still has, and a segment wholly below the new log start stays on disk until the next retention check "
            "(every 5 minutes), so it may answer a record below the log start (a transaction marker, stamped by "
            "the broker's clock, often is the largest); minikafka drops such segments at once and answers the "
            "largest timestamp from the log start on: a later record with a smaller timestamp, or -1 when the log "
            "start passed every record. Kafka's answer depends on when its retention check last ran.",
            after="delete_records", operation=lambda op: op.get("spec") == "max_timestamp",
            context=lambda diff, same_op: _older_larger_stamp(same_op)),
    Allowed("leader-epochs-after-a-fault-step",
            r"(state topics/t\d/\d+|op \d+ fetch)/batches/\d+/leader_epoch|op \d+ list_offsets/leader_epoch"
            r"|op \d+ leader_epoch/(leader_epoch|end_offset)|state znodes//brokers/topics/t\d/partitions/\d+/state/leader_epoch",
            "After a fault step, leader epochs are no longer comparable between the two clusters: a fault raises "
            "the leader epoch of every partition its broker holds (once, twice where the partition was offline "
            "until it came back), and which partitions of a topic with fewer replicas than brokers that broker "
            "holds, and whether it was the controller too, depend on where each cluster placed the replicas and "
            "which broker won the controller election (a new controller taking over from a dead one raises the "
            "epochs of the partitions the old one led by 2, on both clusters). The fault step's own answer "
            "compares the epochs of the partition it names; offsets, records and ISRs are compared as before.",
            after="fault",
            test=lambda d: _epoch_value(d)),
)


def _older_larger_stamp(same_op: list[dict]) -> bool:
    """A MAX_TIMESTAMP answer where Kafka's record comes before minikafka's (or minikafka has
    none) and its timestamp is larger: a record minikafka no longer holds."""
    found = {d["path"].rsplit("/", 1)[-1]: d for d in same_op}
    offset, stamp = found.get("offset"), found.get("timestamp")
    if offset is None or not all(isinstance(v, int) for v in (offset["kafka"], offset["ours"])):
        return False
    if offset["ours"] != -1 and not 0 <= offset["kafka"] < offset["ours"]:
        return False
    if stamp is None:  # the same timestamp: the first of equals, which minikafka would have answered
        return offset["ours"] != -1
    kafka, ours = stamp["kafka"], stamp["ours"]
    if ours == -1 or kafka == "<broker clock>" and isinstance(ours, int):
        return True
    return isinstance(kafka, int) and isinstance(ours, int) and kafka > ours


def _epoch_value(diff: dict) -> bool:
    """Both values are leader epochs or offsets (numbers), not errors or missing entries."""
    return all(isinstance(v, int) and not isinstance(v, bool) for v in (diff["kafka"], diff["ours"]))


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Leaf path -> value; a list's length is a leaf too (``.../#``), so that a missing
    element shows once rather than as one difference per element."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        if not value:
            out[path] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{path}/{k}" if path else str(k)))
    elif isinstance(value, list):
        out[f"{path}/#"] = len(value)
        for i, v in enumerate(value):
            out.update(flatten(v, f"{path}/{i}"))
    else:
        out[path] = value
    return out


def _path_order(path: str) -> list[tuple]:
    """Paths in document order: list indexes as numbers, a list's length first."""
    return [(0, int(s), "") if s.isdigit() else (0, -1, "") if s == "#" else (1, 0, s) for s in path.split("/")]


def diff_values(where: str, kafka: Any, ours: Any) -> list[dict]:
    """The leaves of ``kafka`` and ``ours`` that differ: ``{"path", "kafka", "ours"}``
    (a leaf missing on one side is ``"<absent>"`` there)."""
    k, o = flatten(kafka), flatten(ours)
    out = []
    for path in sorted(set(k) | set(o), key=_path_order):
        kv, ov = k.get(path, "<absent>"), o.get(path, "<absent>")
        if kv != ov:
            out.append({"path": f"{where}/{path}" if path else where, "kafka": kv, "ours": ov})
    return out


def compare(ops: list[dict], kafka: dict, ours: dict) -> list[dict]:
    """Every difference between two runs of ``ops`` (``{"answers": [...], "state": {...}}``
    each), with ``allowed`` set to the :class:`Allowed` entry that explains it (or None)."""
    diffs = []
    for i, op in enumerate(ops):
        ka = kafka["answers"][i] if i < len(kafka["answers"]) else "<not run>"
        oa = ours["answers"][i] if i < len(ours["answers"]) else "<not run>"
        diffs += diff_values(f"op {i} {op['op']}", ka, oa)
    for part in sorted(set(kafka.get("state", {})) | set(ours.get("state", {}))):
        diffs += diff_values(f"state {part}", kafka.get("state", {}).get(part), ours.get("state", {}).get(part))
    out = []
    since: tuple[int, Allowed] | None = None  # the first operation that showed a cascading difference
    by_op: dict[int | None, list[dict]] = {}
    for d in diffs:
        by_op.setdefault(_op_index(d["path"]), []).append(d)
    for d in diffs:
        at = _op_index(d["path"])
        allowed = next((a for a in ALLOWED if a.matches(d, ops, by_op[at])), None)
        if allowed is None and since is not None and (at is None or at >= since[0]):
            allowed = since[1]  # a consequence of that difference
        elif allowed is not None and allowed.cascade and since is None and at is not None:
            since = (at, allowed)
        out.append({**d, "allowed": allowed})
    return out


def unexplained(diffs: list[dict]) -> list[dict]:
    return [d for d in diffs if d["allowed"] is None]


def shrink(ops: list[dict], fails: Callable[[list[dict]], bool], budget: int = 60) -> list[dict]:
    """A smaller list of operations for which ``fails`` still holds (``fails(ops)`` is taken
    as true): delta debugging (ddmin) over the list, removing chunks, then single
    operations, while ``fails`` is asked at most ``budget`` times."""
    asked = 0

    def still(candidate: list[dict]) -> bool:
        nonlocal asked
        if asked >= budget or not candidate:
            return False
        asked += 1
        return fails(candidate)

    n = 2
    while len(ops) >= 2 and asked < budget:
        size = -(-len(ops) // n)
        chunks = [ops[i:i + size] for i in range(0, len(ops), size)]
        for i in range(len(chunks)):
            rest = [op for j, c in enumerate(chunks) if j != i for op in c]
            if still(rest):
                ops, n = rest, max(n - 1, 2)
                break
        else:
            if n >= len(ops):
                break
            n = min(2 * n, len(ops))
    return ops


def reproduction(seed: int | None, ops: list[dict], diffs: list[dict]) -> str:
    """The JSON that ``minikafka reference fuzz --replay FILE`` runs: the seed it came from,
    the operations, and the differences they showed."""
    return json.dumps({"seed": seed, "ops": ops,
                       "differences": [{k: d[k] for k in ("path", "kafka", "ours")} for d in diffs]}, indent=1)


def describe(diff: dict) -> str:
    """One line for a difference."""
    return f"{diff['path']}: Kafka {json.dumps(diff['kafka'])} minikafka {json.dumps(diff['ours'])}"
