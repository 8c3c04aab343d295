"""Transactions on real in-process brokers (harness.py): the transaction coordinator, the
markers it writes, the leader's last stable offset and aborted-transaction index."""
from __future__ import annotations

from harness import Cluster, run_cluster
from minikafka.client import TopicPartition

TOPIC = "ledger"
TP = TopicPartition(TOPIC, 0)


async def read_up_to(c: Cluster, consumer, end: int, timeout_s: float = 20.0) -> list[bytes]:
    """The values ``consumer`` hands out until its position reaches ``end``."""
    got: list = []
    deadline = c.now() + timeout_s
    while (position := await consumer.position(TP)) < end:
        assert c.now() < deadline, f"position {position} short of {end} after {timeout_s:g} virtual s"
        got += await consumer.poll(timeout_ms=200)
    got += await consumer.poll(timeout_ms=300)
    return [r.value for r in got]


def test_read_committed_sees_only_committed_transactions_and_stops_at_the_last_stable_offset():
    """KIP-98: a transaction's records become visible to read_committed consumers only when
    its commit marker is written; an aborted transaction's records are skipped (the
    leader's aborted-transaction index); an open transaction holds the last stable offset,
    and read_committed reads no further (ListOffsets latest answers the LSO).
    read_uncommitted sees every record up to the high watermark."""

    async def body(c: Cluster) -> None:
        await c.create_topic(TOPIC, partitions=1, replication_factor=3)
        producer = await c.started(c.producer("tx1", transactional_id="ledger-writer"))
        await producer.init_transactions()

        producer.begin_transaction()
        for v in (b"c0", b"c1", b"c2"):
            await producer.send(TOPIC, v, partition=0)
        await producer.commit_transaction()  # offsets 0-2, commit marker at 3

        producer.begin_transaction()
        for v in (b"a0", b"a1", b"a2"):
            await producer.send(TOPIC, v, partition=0)
        await producer.flush()  # in the log before the abort
        await producer.abort_transaction()  # offsets 4-6, abort marker at 7

        producer.begin_transaction()
        await producer.send_and_wait(TOPIC, b"o0", partition=0)  # offset 8, its transaction open
        lead = c.leader_replica(TOPIC)
        assert (lead.high_watermark, lead.last_stable_offset) == (9, 8)

        committed = await c.started(c.consumer("rc", isolation_level="read_committed"))
        uncommitted = await c.started(c.consumer("ru", isolation_level="read_uncommitted"))
        assert await committed.end_offsets([TP]) == {TP: 8}  # the LSO
        assert await uncommitted.end_offsets([TP]) == {TP: 9}  # the HW
        committed.assign([TP])
        uncommitted.assign([TP])
        assert await read_up_to(c, committed, 8) == [b"c0", b"c1", b"c2"]
        assert await committed.position(TP) == 8, "read_committed went past the last stable offset"
        assert await read_up_to(c, uncommitted, 9) == [b"c0", b"c1", b"c2", b"a0", b"a1", b"a2", b"o0"]

        await producer.commit_transaction()  # marker at 9: the LSO moves to 10
        assert await read_up_to(c, committed, 10) == [b"o0"]

    run_cluster(body, seed=41, transactions=True)
