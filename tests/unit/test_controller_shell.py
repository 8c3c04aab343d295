"""The controller shell's failure rules, with the ZooKeeper side replaced by a scripted
store: a lost race is planned again from fresh state, a fenced controller stops, any
other failure moves the controller."""
from __future__ import annotations

import asyncio

from minikafka.config import BrokerConfig, LiveConfig
from minikafka.controller import core
from minikafka.controller.channel import ChannelManager, wire
from minikafka.controller.controller import ClusterCounts, ControllerHost, KafkaController
from minikafka.controller.events import Startup, TopicZnodeChanged
from minikafka.controller.store import Fenced, StateConflict
from minikafka.errors import NotControllerError
from minikafka.protocol.rpc import codec
from minikafka.protocol.rpc.types import DECODE_REQUEST, LeaderAndIsrRequest, StopReplicaRequest, UpdateMetadataRequest
from minikafka.zk.layout import BrokerInfo, LeaderIsr, TopicZnode
from minikafka.zk.session import Watch


class ScriptedStore:
    """Answers execute() from a script: an exception to raise or a zxid to return."""

    def __init__(self, script: list) -> None:
        self.script = list(script)
        self.executed: list[core.Plan] = []
        self.deleted_controller: list[int] = []
        self.state = core.StateRead(LeaderIsr(1, 4, (1, 3), 1), 9, 650)  # what a re-read finds

    async def execute(self, plan: core.Plan, epoch_zk_version: int) -> int:
        self.executed.append(plan)
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step

    async def read_state(self, tp):
        return self.state

    async def read_states(self, tps):
        return {tp: self.state for tp in tps}

    async def run_after(self, op, epoch_zk_version):
        pass

    async def delete_controller(self, version: int) -> bool:
        self.deleted_controller.append(version)
        return True


class Channels:
    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []

    def add(self, b, endpoint):
        pass

    async def remove(self, b):
        pass

    def send(self, sends):
        self.sent += [(s.broker, wire(s.request)[0]) for s in sends]

    async def stop(self):
        pass


class Watches:
    """The ZooKeeper session's watch calls only."""

    def __init__(self) -> None:
        self.watches: set = set()
        self.callbacks: dict = {}

    def watch_data(self, path, callback):
        self.callbacks[path] = callback
        return Watch(path)


def make(script: list) -> tuple[KafkaController, ScriptedStore, list[tuple[str, str]], Channels]:
    events: list[tuple[str, str]] = []
    host = ControllerHost(broker_id=1, config=LiveConfig(BrokerConfig(broker_id=1, zookeeper_connect="unused")), zk=Watches(),
                          record_event=lambda kind, text, **kw: events.append((kind, text)),
                          count=lambda name: None, call=None, stopping=lambda: False)
    ctl = KafkaController(host)
    store = ScriptedStore(script)
    ctl.store = store
    ctl.core = core.ControllerCore(1, 5, host.config.current)
    live = {b: BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10) for b in (1, 2, 3)}
    read = core.TopicRead({0: [1, 2, 3]}, {}, {0: core.StateRead(LeaderIsr(1, 4, (1, 2, 3), 1), 8, 600)})
    ctl.core.commit(ctl.core.plan(core.Failover(live, {"t": read})), 600)
    ctl.epoch, ctl.epoch_zk_version = 5, 5
    channels = Channels()
    ctl.channels = channels
    return ctl, store, events, channels


async def no_broker_3() -> core.Event:
    return core.BrokersChanged({b: BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10) for b in (1, 2)})


def handle(ctl: KafkaController, read) -> object:
    """Run one event in a TaskGroup as the controller's loop does; return the reply or
    the exception it raised."""
    async def main() -> object:
        async with asyncio.TaskGroup() as tg:
            ctl._tg = tg
            try:
                return await ctl._handle(read)
            except Exception as exc:
                return exc
            finally:
                await asyncio.sleep(0.01)  # let the move delete /controller
                for t in list(tg._tasks):  # the move's delayed re-election: not needed here
                    t.cancel()
    return asyncio.run(main())


def test_a_lost_race_is_planned_again_from_the_state_zookeeper_has_now():
    ctl, store, events, channels = make([StateConflict([("t", 0)], "BadVersion"), 900])
    assert handle(ctl, no_broker_3) is None
    first, second = store.executed
    assert first.writes[0].expected_version == 8 and first.writes[0].state.isr == (1, 2)
    # the leader had shrunk the ISR to [1, 3] meanwhile (version 9): the new plan builds on it
    assert second.writes[0].expected_version == 9 and second.writes[0].state.isr == (1,)
    assert ctl.core.ctx.info(("t", 0)).zk_version == 10
    assert (3, "leader_and_isr") not in channels.sent and (2, "update_metadata") in channels.sent
    assert ctl.active


def test_a_fenced_controller_stops_without_touching_controller_znode():
    ctl, store, events, _ = make([Fenced("epoch moved")])
    assert isinstance(handle(ctl, no_broker_3), NotControllerError)
    assert not ctl.active
    assert store.deleted_controller == []
    assert [k for k, _ in events] == ["controller_fenced", "controller_resigned"]


def test_a_failed_event_moves_the_controller():
    ctl, store, events, _ = make([PermissionError("ZooKeeper said NoAuth")])
    assert isinstance(handle(ctl, no_broker_3), NotControllerError)
    assert not ctl.active
    assert store.deleted_controller == [5]  # fenced by the epoch's znode version
    assert [k for k, _ in events][:2] == ["controller_moved", "controller_resigned"]


def test_endless_conflicts_move_the_controller_instead_of_dropping_the_event():
    ctl, store, events, _ = make([StateConflict([("t", 0)], "BadVersion")] * 10)
    assert isinstance(handle(ctl, no_broker_3), NotControllerError)
    assert len(store.executed) == 10
    assert store.deleted_controller == [5]
    assert "conflicts on every one of 10 tries" in events[0][1]


def test_the_controller_tells_metrics_its_cluster_counts_and_queue_size():
    ctl, _, _, _ = make([])
    assert ctl.cluster_counts() == ClusterCounts(topics=1, partitions=1, offline_partitions=0)
    assert ctl.queue_size == 0
    ctl.put(Startup())
    assert ctl.queue_size == 1
    ctl.core = None  # not the active controller
    assert ctl.cluster_counts() is None


def test_the_core_sends_typed_requests_that_go_out_as_the_maps_brokers_decode_back():
    """No dict body leaves the core: each send is a typed request, which the channel turns
    into its API name and wire map only when sending; the broker's codec accepts the map
    and decodes it back to an equal request."""
    c = core.ControllerCore(1, 5, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    live = {b: BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10, kafka=("127.0.0.1", 19000 + b)) for b in (1, 2, 3)}
    read = core.TopicRead({0: [1, 2, 3], 1: [3, 1]}, {}, {0: core.StateRead(LeaderIsr(1, 4, (1, 2, 3), 1), 8, 600)},
                          topic_id="zWE-MNjxSt-Rt1hKImWx9Q")
    plan = c.plan(core.Failover(live, {"t": read}))
    c.commit(plan, 600)
    plan = c.plan(core.ControlledShutdown(3))
    kinds = set()
    for p in (plan, c.plan(core.DeleteTopics(("t",)))):
        for s in p.sends:
            assert isinstance(s.request, (LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest))
            api, body = wire(s.request)
            decoded = DECODE_REQUEST[api](codec.decode_request(api, codec.pack(body)))
            assert decoded == s.request
            kinds.add(api)
    assert kinds == {"leader_and_isr", "update_metadata", "stop_replica"}


def test_the_channels_send_each_broker_its_requests_in_order_encoded_once():
    """A plan's sends reach each broker with a channel in the plan's order, as wire maps;
    a request that goes to several brokers (UpdateMetadata) is encoded once; a broker
    without a channel gets nothing."""
    c = core.ControllerCore(1, 5, BrokerConfig(broker_id=1, zookeeper_connect="unused"))
    live = {b: BrokerInfo(b, "127.0.0.1", 9000 + b, epoch=10) for b in (1, 2, 3)}
    read = core.TopicRead({0: [1, 2, 3], 1: [2, 3, 1]}, {}, {0: core.StateRead(LeaderIsr(1, 4, (1, 2, 3), 1), 8, 600)})
    plan = c.plan(core.Failover(live, {"t": read}))
    got: dict[int, list[tuple[str, dict]]] = {1: [], 2: []}

    async def call(host: str, port: int, api: str, body: dict, timeout_s: float) -> dict:
        got[port - 9000].append((api, body))
        return {}

    async def main() -> None:
        async with asyncio.TaskGroup() as tg:
            channels = ChannelManager(call, 1.0, tg)
            for b in (1, 2):
                channels.add(b, ("127.0.0.1", 9000 + b))
            channels.send(plan.sends)
            while sum(map(len, got.values())) < sum(1 for s in plan.sends if s.broker in got):
                await asyncio.sleep(0)
            await channels.stop()

    asyncio.run(main())
    for b in (1, 2):
        assert got[b] == [wire(s.request) for s in plan.sends if s.broker == b]
        assert [api for api, _ in got[b]] == ["update_metadata", "leader_and_isr"]
    assert got[1][0][1] is got[2][0][1]  # one UpdateMetadata, encoded once for both


def test_a_topic_watch_queues_an_event_only_for_a_znode_that_adds_partitions():
    # its first firing after a failover (one per topic) adds none, and so queues nothing
    ctl, _, _, _ = make([])
    ctl._watch_topics()
    fire = ctl.host.zk.callbacks["/brokers/topics/t"]
    fire(TopicZnode({0: [1, 2, 3]}).encode(), None)
    fire(None, None)  # deleted: the deletion's own events handle it
    assert ctl.queue.qsize() == 0
    fire(TopicZnode({0: [1, 2, 3], 1: [2, 3, 1]}).encode(), None)
    fire(b"not json", None)  # the event's handler reads it again and says what is wrong
    assert [ctl.queue.get_nowait() for _ in range(2)] == [TopicZnodeChanged("t")] * 2
