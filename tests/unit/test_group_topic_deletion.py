"""A deleted topic takes the groups' committed offsets of its partitions along, and an empty
group left without offsets is gone (Dead), as Kafka's GroupCoordinator.onPartitionsDeleted
and GroupMetadataManager.cleanupGroupMetadata do; the coordinator writes tombstones, so a
coordinator that replays the partition later does not bring them back (found by the
differential fuzzer: minikafka kept both until offsets.retention.minutes)."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from minikafka.broker.coordinator import GroupCoordinator
from minikafka.groups import records as grec
from minikafka.groups.group import Group, GroupSettings, GroupState
from minikafka.groups.records import OffsetValue
from minikafka.groups.replay import OffsetsReplay
from minikafka.protocol.records.batch import batch_records, encode_batch, split_batches
from minikafka.protocol.rpc.types import ProducePartitionResponse


def committed(g: Group, *tps: tuple[str, int]) -> Group:
    g.offsets_committed([(tp, OffsetValue(5)) for tp in tps])
    return g


def test_an_empty_group_with_offsets_of_the_deleted_topic_only_is_dead():
    g = committed(Group("g"), ("gone", 0), ("gone", 1))
    assert g.topics_deleted({"gone"}) == ([("gone", 0), ("gone", 1)], True)
    assert g.offsets == {}


def test_an_empty_group_keeps_its_other_offsets_and_lives_on():
    g = committed(Group("g"), ("gone", 0), ("kept", 0))
    assert g.topics_deleted({"gone"}) == ([("gone", 0)], False)
    assert list(g.offsets) == [("kept", 0)] and g.state is GroupState.EMPTY


def test_a_group_without_offsets_of_the_deleted_topic_is_untouched():
    g = committed(Group("g"), ("kept", 0))
    assert g.topics_deleted({"gone"}) == ([], False)
    assert list(g.offsets) == [("kept", 0)]


def test_a_group_with_members_loses_the_offsets_but_not_its_life():
    g = committed(Group("g"), ("gone", 0))
    answer, _ = g.join("", None, "c", "h", 10000, 10000, "consumer", [("range", b"")], 0, "m-1", GroupSettings(0),
                       require_known_id=False)
    assert g.members
    assert g.topics_deleted({"gone"}) == ([("gone", 0)], False)
    assert g.offsets == {} and g.state is not GroupState.DEAD


def test_pending_transactional_offsets_of_the_deleted_topic_go_too():
    g = committed(Group("g"), ("gone", 0))
    g.stage_txn_offsets(7, [(("gone", 1), OffsetValue(3)), (("kept", 0), OffsetValue(3))])
    assert g.topics_deleted({"gone"}) == ([("gone", 0), ("gone", 1)], False)
    assert g.pending_partitions() == {("kept", 0)}  # the open transaction's other offset stays


def test_a_producer_left_without_pending_offsets_keeps_the_group_until_its_marker():
    """Kafka's hasOffsets counts a producer with pending offsets even once they are all
    removed: the group is not Dead while its transaction is open."""
    g = Group("g")
    g.stage_txn_offsets(7, [(("gone", 0), OffsetValue(3))])
    assert g.topics_deleted({"gone"}) == ([("gone", 0)], False)
    assert g.pending_partitions() == set()
    assert g.complete_txn(7, True) == []  # the marker changes nothing


def test_the_tombstones_keep_a_replayed_partition_from_bringing_them_back():
    replay = OffsetsReplay()
    replay.offset(0, grec.OffsetKey("g", "gone", 0), OffsetValue(5))
    replay.offset(1, grec.OffsetKey("h", "gone", 0), OffsetValue(5))
    replay.offset(2, grec.OffsetKey("h", "kept", 0), OffsetValue(5))
    replay.offset(3, grec.OffsetKey("g", "gone", 0), None)
    replay.group(grec.GroupKey("g"), None)
    replay.offset(4, grec.OffsetKey("h", "gone", 0), None)
    groups = replay.groups(0)
    assert list(groups) == ["h"] and list(groups["h"].offsets) == [("kept", 0)]


# -- the coordinator (shell): told by UpdateMetadata, writes the tombstones ---------------
class _Log:
    def __init__(self, records: list[tuple[bytes, bytes | None]]) -> None:
        self.batches = [encode_batch([(k, v, None, 0)], base_offset=i) for i, (k, v) in enumerate(records)]
        self.log_start_offset = 0

    def read(self, offset: int, max_bytes: int, upto: int | None) -> bytes:
        return b"".join(self.batches[offset:])


class _Partition:
    def __init__(self, records: list[tuple[bytes, bytes | None]]) -> None:
        self.log = _Log(records)
        self.is_leader = True

    @property
    def log_end_offset(self) -> int:
        return len(self.log.batches)

    high_watermark = log_end_offset


class _Replicas:
    """The replica manager as the coordinator uses it: its partition of __consumer_offsets,
    and a produce that appends to that log."""

    def __init__(self, partition: _Partition) -> None:
        self.partitions = {(grec.OFFSETS_TOPIC, 0): partition}
        self.partition = partition
        self.written: list[tuple[bytes, bytes | None]] = []

    async def produce(self, req, internal: bool = False):  # noqa: ANN001, ANN201
        [m] = req.partitions
        base = self.partition.log_end_offset
        for h, raw in split_batches(m.records):
            for _, _, key, value, _ in batch_records(h, raw):
                self.written.append((key, value))
                self.partition.log.batches.append(encode_batch([(key, value, None, 0)],
                                                               base_offset=self.partition.log_end_offset))
        return [ProducePartitionResponse(topic=m.topic, partition=0, base_offset=base, log_append_time=-1,
                                         log_start_offset=0)]


def _coordinator(replicas: _Replicas) -> GroupCoordinator:
    return GroupCoordinator(
        config=SimpleNamespace(broker_id=1, get=lambda name: 1000), rng=None,
        clock=SimpleNamespace(time=lambda: 1000.0, monotonic=lambda: 1.0),
        metadata=SimpleNamespace(partitions_of=lambda t: [0]),  # one partition: every group maps to 0
        record_event=lambda kind, text, **extra: None, replica_manager=replicas,
        spawn=lambda coro, name: asyncio.get_running_loop().create_task(coro),
        zk=None, metrics=None, topic_admin=None)


def _offset(group: str, topic: str) -> tuple[bytes, bytes]:
    return grec.encode_key(grec.OffsetKey(group, topic, 0)), grec.encode_offset(OffsetValue(5))


async def _loaded(c: GroupCoordinator) -> None:
    c.on_leadership(0, True)
    for _ in range(100):
        if c.shards[0].loaded:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the partition was not loaded")


async def test_the_coordinator_removes_the_offsets_and_the_empty_group_and_tombstones_them():
    replicas = _Replicas(_Partition([_offset("g", "gone"), _offset("h", "gone"), _offset("h", "kept")]))
    c = _coordinator(replicas)
    await _loaded(c)
    c.on_topics_deleted(["gone"])
    assert c.describe_group("g") is None  # Dead at once: DescribeGroups says DEAD
    assert c.fetch_offsets("h", None) == [("kept", 0, OffsetValue(5))]
    await asyncio.gather(*c._tasks)
    assert sorted(replicas.written) == sorted([
        (grec.encode_key(grec.OffsetKey("g", "gone", 0)), None), (grec.encode_key(grec.GroupKey("g")), None),
        (grec.encode_key(grec.OffsetKey("h", "gone", 0)), None)])
    # a coordinator that loads the partition again (a failover) finds the same
    again = _coordinator(replicas)
    await _loaded(again)
    assert again.describe_group("g") is None
    assert again.fetch_offsets("h", None) == [("kept", 0, OffsetValue(5))]
    await c.stop()
    await again.stop()
