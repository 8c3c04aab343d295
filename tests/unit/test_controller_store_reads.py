"""The controller's failover read (controller/store.py): every partition's state is read
many at a time, in multiRead requests several at once on the session, not one round trip
after another."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

from minikafka.controller import store as store_mod
from minikafka.controller.store import ControllerStore, pipelined
from minikafka.zk import layout

TOPICS = 30
PARTITIONS = 20
TOPIC_ID = "X2VguUoXQmKPrQo4dGrXNw"


class CountingZk:
    """A ZooKeeper session over a dict of znodes that counts the reads in flight."""

    def __init__(self, nodes: dict[str, bytes]) -> None:
        self.nodes = nodes
        self.in_flight = 0
        self.most = 0
        self.reads = 0
        self.requests = 0  # multiRead requests

    async def get(self, path: str):
        self.in_flight += 1
        self.reads += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0)  # a round trip: the others are sent meanwhile
        self.in_flight -= 1
        if path not in self.nodes:
            return None
        return self.nodes[path], SimpleNamespace(version=3, mzxid=7, czxid=5)

    async def get_many(self, paths: list[str]):
        self.requests += 1
        return [await self.get(p) for p in paths]

    async def children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/")[0] for p in self.nodes if p.startswith(prefix)})


def _cluster() -> dict[str, bytes]:
    nodes: dict[str, bytes] = {}
    for b in (1, 2, 3):
        nodes[layout.broker_path(b)] = layout.BrokerInfo(b, "127.0.0.1", 9090 + b).encode(0)
    for t in range(TOPICS):
        topic = f"t{t}"
        assignment = {p: [1 + (p + i) % 3 for i in range(3)] for p in range(PARTITIONS)}
        nodes[layout.topic_path(topic)] = layout.encode_assignment(assignment, TOPIC_ID)
        for p, replicas in assignment.items():
            nodes[layout.partition_state_path(topic, p)] = layout.LeaderIsr(replicas[0], 4, tuple(replicas), 2).encode()
    return nodes


def test_a_failover_reads_every_partition_state_pipelined():
    zk = CountingZk(_cluster())
    failover = asyncio.run(ControllerStore(zk).read_failover(previous_controller=2))  # type: ignore[arg-type]
    assert sorted(failover.live) == [1, 2, 3] and failover.previous_controller == 2
    assert len(failover.topics) == TOPICS
    assert all(len(t.states) == PARTITIONS for t in failover.topics.values())
    st = failover.topics["t4"].states[5]
    assert (st.state.leader, st.state.leader_epoch, st.state.isr, st.version, st.mzxid) == (3, 4, (3, 1, 2), 3, 7)
    # three steps over the whole cluster (assignments, configs, states), many reads in each
    # request: not a wave of a few topics after another, nor one request per znode
    assert zk.reads == 3 + 2 * TOPICS + TOPICS * PARTITIONS
    per = store_mod.READS_PER_REQUEST
    assert zk.requests == 1 + 2 * -(-TOPICS // per) + -(-(TOPICS * PARTITIONS) // per)  # 6
    assert 1 < zk.most <= store_mod.REQUESTS_IN_FLIGHT  # the states' requests go several at once


def test_pipelined_keeps_the_keys_order_and_bounds_what_is_in_flight():
    in_flight = 0
    most = 0

    async def read(k: int) -> int:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0)
        in_flight -= 1
        return k * k

    got = asyncio.run(pipelined(read, [5, 3, 9, 1, 7], width=2))
    assert list(got.items()) == [(5, 25), (3, 9), (9, 81), (1, 1), (7, 49)]
    assert most == 2


def test_pipelined_is_a_window_one_slow_read_holds_back_one_slot():
    order: list[int] = []

    async def read(k: int) -> int:
        await asyncio.sleep(0.2 if k == 0 else 0.001)
        order.append(k)
        return k

    got = asyncio.run(pipelined(read, range(10), width=3))
    assert list(got) == list(range(10))
    assert order[-1] == 0 and order[:-1] == list(range(1, 10))  # the others went on past it


def test_pipelined_raises_the_first_failure_and_leaves_no_read_running():
    started: list[int] = []
    finished: list[int] = []

    async def read(k: int) -> int:
        started.append(k)
        if k == 2:
            raise ValueError("broken")
        await asyncio.sleep(0.05)
        finished.append(k)
        return k

    async def main() -> None:
        try:
            await pipelined(read, range(6), width=3)
        except ValueError:  # the read's own error, as callers catch it (not an ExceptionGroup)
            pass
        else:
            raise AssertionError("no failure raised")
        await asyncio.sleep(0.1)  # a read left running would finish here

    asyncio.run(main())
    assert 2 in started and finished == []


class CommittingZk:
    """A session whose transactions record their ops and answer in the order sent; the
    op whose path is in ``refuse`` loses its race (BadVersionError)."""

    def __init__(self, refuse: str = "") -> None:
        self.sent: list[list[str]] = []
        self.in_flight = 0
        self.most = 0
        self.refuse = refuse

    async def commit(self, build):
        from minikafka.zk.errors import BadVersionError, RolledBackError
        ops: list[str] = []
        tx = SimpleNamespace(check=lambda path, version: ops.append(f"check {path}"),
                             set_data=lambda path, data, version: ops.append(path))
        build(tx)
        zxid = 1000 + len(self.sent)
        self.sent.append(ops)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1
        if self.refuse in ops:
            return [RolledBackError() if op != self.refuse else BadVersionError("version") for op in ops]
        return [True] + [SimpleNamespace(mzxid=zxid) for _ in ops[1:]]


def _big_plan(partitions: int):
    from minikafka.controller import core
    plan = core.Plan(core.Context(1, 5))
    plan.writes = [core.StateWrite(("t", p), layout.LeaderIsr(1, 5, (1, 2), 5), 3) for p in range(partitions)]
    return plan


def test_a_big_plan_goes_in_transactions_a_few_at_once_in_order_each_fenced():
    zk = CommittingZk()
    n = store_mod.CHUNK_OPS * 5 + 7
    zxid = asyncio.run(ControllerStore(zk).execute(_big_plan(n), 42))
    assert len(zk.sent) == 6 and zk.most == store_mod.COMMITS_IN_FLIGHT
    assert all(ops[0] == f"check {layout.CONTROLLER_EPOCH}" for ops in zk.sent)
    written = [path for ops in zk.sent for path in ops[1:]]
    assert written == [layout.partition_state_path("t", p) for p in range(n)]  # in the plan's order
    assert zxid == 1000  # the first transaction's


def test_a_lost_race_in_a_later_transaction_names_every_partition_of_the_plan():
    zk = CommittingZk(refuse=layout.partition_state_path("t", store_mod.CHUNK_OPS * 2 + 1))
    try:
        asyncio.run(ControllerStore(zk).execute(_big_plan(store_mod.CHUNK_OPS * 3), 42))
    except store_mod.StateConflict as conflict:
        assert len(conflict.tps) == store_mod.CHUNK_OPS * 3
    else:
        raise AssertionError("no StateConflict")
