"""The controller's shell: one event queue per broker (Kafka's ControllerEventManager).

Everything the controller does is an event on one queue, handled one at a time by one
task: the race for ``/controller`` and resignation, ZooKeeper watch firings, ZooKeeper
session loss, timers and API requests (controlled shutdown, elections).  The queue holds
the dataclasses of :mod:`.events`, dispatched with ``match``.  Decisions come
from the pure :class:`~minikafka.controller.core.ControllerCore`; this shell only reads
ZooKeeper to build core events and carries out the plans in order: the fenced
transaction, then the requests to brokers, then admin znode clean-ups.

Failure rules:

- a conditional write that loses a race is planned again from fresh state (up to
  ``MAX_TRIES`` times), never dropped;
- ``/controller_epoch`` moved (another broker is controller): stop acting as controller;
- any other failure of a handler: resign and delete ``/controller`` (fenced by the epoch
  version) so that another broker takes over; this broker holds back from the race for
  ``MOVE_BACKOFF_S`` (Kafka's triggerControllerMove);
- ``/controller`` deleted under the active controller (a tool forcing an election):
  resign, and race again after ``MOVE_BACKOFF_S`` (Kafka's processReelect).

Watches belong to the active controller and are cancelled when it resigns; every task
(channel senders, the rebalance timer) belongs to the controller's TaskGroup.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, NamedTuple, assert_never, overload

from ..config import LiveConfig
from ..errors import NotControllerError
from ..metric_names import CONTROLLER_ELECTIONS, CONTROLLER_MOVES, CONTROLLER_WRITE_CONFLICTS, Metric
from ..zk import layout
from ..zk.session import Watch, ZkSession
from . import core
from . import events as ev
from .channel import Call, ChannelManager
from .settings import ControllerSettings
from .store import ControllerStore, Fenced, StateConflict, parse_preferred, parse_reassignment

log = logging.getLogger(__name__)

MAX_TRIES = 10  # plans of one event before a persistent write conflict moves the controller
SESSION_LOST = "ZooKeeper session lost"
MOVE_BACKOFF_S = 2.0  # a broker whose controller failed lets the others race first


class ClusterCounts(NamedTuple):
    """The cluster as the active controller knows it (for /metrics)."""

    topics: int
    partitions: int
    offline_partitions: int  # without a live leader


@dataclass(frozen=True)
class ControllerHost:
    """What the controller needs from its broker, and nothing more."""

    broker_id: int
    config: LiveConfig  # the broker's configuration in effect (dynamic broker configs change it)
    zk: ZkSession
    record_event: Callable[..., None]
    count: Callable[[Metric], None]  # add one to a counter declared in minikafka.metric_names
    call: Call  # (host, port, api, body, timeout_s) -> the answer's map
    stopping: Callable[[], bool]
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000)  # the broker's wall clock, ms
    new_topic_id: Callable[[], str] | None = None  # a fresh random topic id (KIP-516) for topics stored without one


class KafkaController:
    """A broker's controller component; :attr:`active` while it holds ``/controller``."""

    def __init__(self, host: ControllerHost) -> None:
        self.host = host
        self.store = ControllerStore(host.zk, host.now_ms, host.new_topic_id)
        self.queue: asyncio.Queue[ev.QueueEvent] = asyncio.Queue()
        self.core: core.ControllerCore | None = None
        self.epoch = -1
        self.epoch_zk_version = -1
        self.channels: ChannelManager | None = None
        self._main: asyncio.Task[None] | None = None
        self._tg: asyncio.TaskGroup | None = None
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._controller_watch: Watch | None = None
        self._timers: list[asyncio.Task[None]] = []
        self._waiting: set[asyncio.Future[core.Reply]] = set()
        self._race_after = 0.0  # loop time before which this broker does not race (after a move)
        self._elected_session: int | None = None  # the ZooKeeper session this broker won /controller in
        self._last_holder: int | None = None  # the broker /controller last named, as seen here
        self.handled = 0  # events handled (for tests and metrics)

    # -- public ---------------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return self.core is not None

    @property
    def ctx(self) -> core.Context:
        assert self.core is not None
        return self.core.ctx

    @property
    def queue_size(self) -> int:
        """Events waiting in the queue (Kafka's EventQueueSize)."""
        return self.queue.qsize()

    def cluster_counts(self) -> ClusterCounts | None:
        """Topics, partitions and offline partitions while this broker is the active
        controller; None elsewhere."""
        if self.core is None:
            return None
        ctx = self.core.ctx
        live = set(ctx.live)
        partitions = offline = 0
        for _, info in ctx.partitions():
            partitions += 1
            if info.state is None or info.state.leader < 0 or info.state.leader not in live:
                offline += 1
        return ClusterCounts(len(ctx.topics), partitions, offline)

    def start(self) -> None:
        """Start the event loop; it watches /controller and races for it."""
        self._main = asyncio.get_running_loop().create_task(self._run(), name=f"controller-{self.host.broker_id}")
        self.put(ev.Startup())

    async def stop(self) -> None:
        """Resign (when active) and stop the event loop."""
        if self._main is None:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.put(ev.Shutdown(done))
        try:
            await asyncio.wait_for(asyncio.shield(done), 10.0)
        except asyncio.TimeoutError:
            log.warning("controller did not resign within 10 s; cancelling it")
        self._main.cancel()
        await asyncio.gather(self._main, return_exceptions=True)
        self._main = None

    def put(self, event: ev.QueueEvent) -> None:
        """Queue an event (watch callbacks, timers and the broker call this)."""
        self.queue.put_nowait(event)

    def session_lost(self) -> None:
        self.put(ev.Resign(SESSION_LOST))

    def session_regained(self) -> None:
        self.put(ev.Elect())

    def config_changed(self, topic: str, config: dict[str, str]) -> None:
        """A topic's overrides changed (a /config/changes notification)."""
        self.put(ev.Decide(core.TopicConfigChanged(topic, dict(config))))

    def broker_config_changed(self) -> None:
        """This broker's dynamic configs changed (the controller decides with them)."""
        self.put(ev.Decide(core.BrokerConfigChanged(self.host.config.current)))

    @overload
    async def request(self, event: core.ControlledShutdown) -> list[core.TP]: ...

    @overload
    async def request(self, event: core.PreferredElection | core.UncleanElection) -> dict[core.TP, str]: ...

    async def request(self, event: core.ControlledShutdown | core.PreferredElection | core.UncleanElection) -> core.Reply:
        """Handle ``event`` on the queue and return the plan's reply: the partitions the
        broker still leads for a controlled shutdown, partition -> error name for an
        election.  Raises NOT_CONTROLLER when this broker is not (or stops being) the
        controller first."""
        if not self.active:
            raise NotControllerError(f"broker {self.host.broker_id} is not the controller")
        fut: asyncio.Future[core.Reply] = asyncio.get_running_loop().create_future()
        self._waiting.add(fut)
        fut.add_done_callback(self._waiting.discard)
        self.put(ev.Request(event, fut))
        return await fut

    # -- the loop ---------------------------------------------------------------------------------
    async def _run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            self._tg = tg
            while True:
                event = await self.queue.get()
                try:
                    await self._dispatch(event)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("controller event %s failed", type(event).__name__)
                self.handled += 1

    async def _dispatch(self, event: ev.QueueEvent) -> None:
        match event:
            case ev.Startup():
                await self._on_startup()
            case ev.Shutdown(done):
                await self._on_shutdown(done)
            case ev.Elect():
                await self._on_elect()
            case ev.Resign(reason):
                await self._on_resign(reason)
            case ev.ControllerZnodeChanged(data):
                await self._on_controller_change(data)
            case ev.Decide(decide):
                await self._on_decide(decide)
            case ev.Request(asked, reply):
                await self._on_request(asked, reply)
            case ev.BrokerIdsChanged():
                await self._on_broker_change()
            case ev.TopicChildrenChanged():
                await self._on_topic_change()
            case ev.TopicZnodeChanged(topic):
                await self._on_partition_modification(topic)
            case ev.IsrNotificationsChanged():
                await self._on_isr_change()
            case ev.DeleteTopicsChanged():
                await self._on_delete_topics()
            case ev.ReassignZnodeChanged(data):
                await self._on_reassign(data)
            case ev.PreferredZnodeChanged(data):
                await self._on_preferred_znode(data)
            case _:  # mypy fails here when a QueueEvent has no case above
                assert_never(event)

    async def _on_startup(self) -> None:
        self._controller_watch = self.host.zk.watch_data(layout.CONTROLLER, self._on_controller_znode)

    def _on_controller_znode(self, data: bytes | None, stat: Any) -> None:
        self.put(ev.ControllerZnodeChanged(data))

    async def _on_controller_change(self, data: bytes | None) -> None:
        if data is None:
            if self.active and not await self._still_holder():
                # deleted under us (Kafka's processReelect): resign, and race again once the
                # others had their turn (alone, this broker becomes controller again)
                await self._resign("/controller was deleted")
                self._race_after = asyncio.get_running_loop().time() + MOVE_BACKOFF_S
                assert self._tg is not None
                self._tg.create_task(self._after(MOVE_BACKOFF_S, ev.Elect()))
                return
            if not self.active:
                await self._on_elect()
            return
        try:
            holder = layout.decode_controller(data)
        except (ValueError, KeyError, TypeError):
            holder = -1
        self._last_holder = holder
        if holder != self.host.broker_id and self.active and not await self._still_holder():
            await self._resign(f"broker {holder} holds /controller")

    async def _still_holder(self) -> bool:
        """Whether /controller names this broker now.  As Kafka's processReelect, a change
        is judged by what /controller says, not by the notification: one read before this
        broker won (a watch refreshed across a reconnect) can arrive after it, and
        resigning on it would leave /controller naming a broker that no longer acts as
        controller, so that no broker ever races for it again."""
        try:
            return (await self.store.controller_holder()) == self.host.broker_id
        except Exception:  # ZooKeeper unreachable: resign, as before the check
            return False

    async def _on_shutdown(self, done: asyncio.Future[None]) -> None:
        if self._controller_watch is not None:
            self._controller_watch.cancel()
        if self.active:
            await self._resign("broker stopping")
        if not done.done():
            done.set_result(None)

    async def _on_resign(self, reason: str) -> None:
        if not self.active:
            return
        if reason == SESSION_LOST and self._elected_session is not None \
                and self._elected_session == self.host.zk.session_id:
            # the news of a lost session reached the queue after this broker had won
            # /controller in its new session: that controller is not the one lost
            return
        await self._resign(reason)

    async def _on_elect(self) -> None:
        """Race for /controller (Kafka's elect): create it and bump /controller_epoch in one
        transaction; the winner loads the cluster (failover)."""
        h = self.host
        if self.active or h.stopping():
            return
        loop = asyncio.get_running_loop()
        if loop.time() < self._race_after:
            return  # a timer queues Elect when the hold-back ends
        won = await self.store.try_elect(h.broker_id)
        if won is None:
            return
        self.epoch, self.epoch_zk_version = won
        self._elected_session = h.zk.session_id
        self.core = core.ControllerCore(h.broker_id, self.epoch, h.config.current)
        assert self._tg is not None
        settings = h.config.view(ControllerSettings)
        self.channels = ChannelManager(h.call, settings.request_timeout_ms / 1000.0, self._tg)
        h.record_event("controller_elected", f"broker {h.broker_id} became controller with controller epoch {self.epoch}",
                       controller_epoch=self.epoch)
        h.count(CONTROLLER_ELECTIONS)
        await self.store.enable_feature_versioning()
        self._watch()
        if settings.auto_leader_rebalance_enable:
            self._timers.append(self._tg.create_task(self._rebalance_timer()))
        previous = self._last_holder
        await self._active(lambda: self.store.read_failover(previous))

    def _watch(self) -> None:
        """The active controller's watches; their first firing is queued behind the failover
        event and handled as a no-op diff if nothing changed meanwhile."""
        zk = self.host.zk

        def children(event: ev.QueueEvent) -> Callable[[list[str]], None]:
            return lambda _children: self.put(event)

        def data(event: Callable[[bytes | None], ev.QueueEvent]) -> Callable[[bytes | None, Any], None]:
            return lambda value, _stat: self.put(event(value))

        self._watches = [
            zk.watch_children(layout.BROKER_IDS, children(ev.BrokerIdsChanged())),
            zk.watch_children(layout.BROKER_TOPICS, children(ev.TopicChildrenChanged())),
            zk.watch_children(layout.ISR_CHANGE_NOTIFICATION, children(ev.IsrNotificationsChanged())),
            zk.watch_children(layout.DELETE_TOPICS, children(ev.DeleteTopicsChanged())),
            zk.watch_data(layout.REASSIGN_PARTITIONS, data(ev.ReassignZnodeChanged)),
            zk.watch_data(layout.PREFERRED_REPLICA_ELECTION, data(ev.PreferredZnodeChanged)),
        ]

    def _watch_topics(self) -> None:
        """Watch /brokers/topics/T of every topic in the context (partition additions)."""
        assert self.core is not None

        def changed(topic: str) -> Callable[[bytes | None, Any], None]:
            def deliver(data: bytes | None, _stat: Any) -> None:
                # a change that adds no partition changes nothing (PartitionsChanged acts on
                # added partitions only): the watch's first firing, a thousand of them after
                # a failover at 10,000 partitions, then queues no event
                if data is None or self.core is None:
                    return
                try:
                    partitions = layout.TopicZnode.decode(data).partitions
                except (ValueError, KeyError, TypeError, AttributeError):
                    partitions = None  # the event's handler reads it again and says what is wrong
                if partitions is None or self.core.adds_partitions(topic, partitions):
                    self.put(ev.TopicZnodeChanged(topic))
            return deliver

        for topic in self.core.ctx.topics:
            if topic not in self._topic_watches:
                self._topic_watches[topic] = self.host.zk.watch_data(layout.topic_path(topic), changed(topic))
        for topic in [t for t in self._topic_watches if t not in self.core.ctx.topics]:
            self._topic_watches.pop(topic).cancel()

    async def _resign(self, reason: str) -> None:
        """Stop acting as controller (Kafka's onControllerResignation): watches cancelled,
        timers and channels stopped, waiting requests answered NOT_CONTROLLER."""
        h = self.host
        self.core = None
        for w in self._watches + list(self._topic_watches.values()):
            w.cancel()
        self._watches, self._topic_watches = [], {}
        for t in self._timers:
            t.cancel()
        self._timers = []
        if self.channels is not None:
            await self.channels.stop()
            self.channels = None
        for fut in list(self._waiting):
            if not fut.done():
                fut.set_exception(NotControllerError(
                    f"broker {h.broker_id} stopped acting as controller ({reason}) before answering"))
        h.record_event("controller_resigned", f"broker {h.broker_id} stops acting as controller: {reason}")

    async def _move(self, why: str) -> None:
        """A handler failed: hand the controller to another broker (Kafka's
        triggerControllerMove): resign, delete /controller fenced by our epoch, and hold
        back from the race so the others go first."""
        h = self.host
        version = self.epoch_zk_version
        h.record_event("controller_moved", f"broker {h.broker_id}: controller event failed ({why}); "
                                           f"resigning and deleting /controller")
        h.count(CONTROLLER_MOVES)
        await self._resign(f"event failed: {why}")
        self._race_after = asyncio.get_running_loop().time() + MOVE_BACKOFF_S
        assert self._tg is not None
        self._tg.create_task(self._delete_controller(version))
        self._tg.create_task(self._after(MOVE_BACKOFF_S, ev.Elect()))

    async def _delete_controller(self, version: int) -> None:
        """Delete /controller (fenced); retried while ZooKeeper is unreachable, since while
        it names this broker no other broker races for it."""
        while not self.host.stopping():
            try:
                await self.store.delete_controller(version)
                return
            except Exception as exc:
                log.warning("deleting /controller failed (%s); retrying", exc)
                await asyncio.sleep(0.5)

    async def _after(self, delay_s: float, event: ev.QueueEvent) -> None:
        await asyncio.sleep(delay_s)
        self.put(event)

    async def _rebalance_timer(self) -> None:
        """auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds."""
        live = self.host.config
        threshold = live.view(ControllerSettings).leader_imbalance_per_broker_percentage / 100.0
        while True:
            await asyncio.sleep(live.view(ControllerSettings).leader_imbalance_check_interval_seconds)
            self.put(ev.Decide(core.CheckImbalance(threshold)))

    # -- active-controller events -------------------------------------------------------------------
    async def _handle(self, read: Callable[[], Awaitable[core.Event | None]]) -> core.Reply:
        """Read, plan, write, carry out; re-plan from fresh state on a lost race.  A fenced
        controller stops; any other failure moves the controller to another broker."""
        if not self.active:
            return None
        try:
            for _ in range(MAX_TRIES):
                event = await read()
                if event is None or self.core is None:
                    return None
                plan = self.core.plan(event)
                try:
                    zxid = await self.store.execute(plan, self.epoch_zk_version)
                except StateConflict as conflict:
                    self.host.count(CONTROLLER_WRITE_CONFLICTS)
                    self.core.refresh(await self.store.read_states(conflict.tps))
                    continue
                self.core.commit(plan, zxid)
                await self._carry_out(plan)
                return plan.reply
            raise RuntimeError(f"write conflicts on every one of {MAX_TRIES} tries")
        except Fenced:
            self.host.record_event("controller_fenced", f"broker {self.host.broker_id}: /controller_epoch moved past "
                                                        f"{self.epoch}; stopping as controller")
            await self._resign("fenced by a newer controller epoch")
            raise NotControllerError(f"broker {self.host.broker_id} was fenced as controller") from None
        except NotControllerError:
            raise
        except Exception as exc:
            log.exception("controller event failed")
            await self._move(f"{exc.__class__.__name__}: {exc}" if str(exc) else exc.__class__.__name__)
            raise NotControllerError(f"broker {self.host.broker_id} resigned as controller: the event failed") from None

    async def _carry_out(self, plan: core.Plan) -> None:
        h = self.host
        assert self.channels is not None
        for b in plan.channels_removed:
            await self.channels.remove(b)
        for b, endpoint in plan.channels_added.items():
            self.channels.add(b, endpoint)
        self.channels.send(plan.sends)
        for n in plan.notes:
            h.record_event(n.kind, n.text, **n.fields)
        for c in plan.counters:
            h.count(c)
        for op in plan.after:
            await self.store.run_after(op, self.epoch_zk_version)
        self._watch_topics()

    async def _active(self, read: Callable[[], Awaitable[core.Event | None]]) -> None:
        try:
            await self._handle(read)
        except NotControllerError:
            pass

    async def _on_decide(self, event: core.Event) -> None:
        async def read() -> core.Event:
            return event
        await self._active(read)

    # Watch firings only say "look again": each handler reads the znodes as they are when
    # it runs (as Kafka's event handlers do), never the children the watch saw, which may
    # be older than what the failover or an earlier event already read.
    async def _on_broker_change(self) -> None:
        async def read() -> core.Event:
            return core.BrokersChanged(await self.store.read_brokers(await self.host.zk.children(layout.BROKER_IDS)))
        await self._active(read)

    async def _on_topic_change(self) -> None:
        async def read() -> core.Event | None:
            assert self.core is not None
            children = await self.host.zk.children(layout.BROKER_TOPICS)
            new = sorted(set(children) - set(self.core.ctx.topics))
            if not new:
                return None
            return core.TopicsAdded(await self.store.read_topics(new))
        await self._active(read)

    async def _on_partition_modification(self, topic: str) -> None:
        async def read() -> core.Event | None:
            assignment = await self.store.read_assignment(topic)
            return None if assignment is None else core.PartitionsChanged(topic, assignment)
        await self._active(read)

    async def _on_isr_change(self) -> None:
        if not self.active:
            return
        children = await self.host.zk.children(layout.ISR_CHANGE_NOTIFICATION)
        notified = await self.store.take_isr_notifications(children) if children else {}
        first = sorted(notified)
        taken: dict[core.TP, core.StateRead] | None = notified

        async def read() -> core.Event | None:
            nonlocal taken
            if taken is None:  # a re-plan: read the states again
                taken = await self.store.read_states(first)
            event, taken = core.IsrChanged(dict(taken)), None
            return event if event.states else None
        await self._active(read)

    async def _on_delete_topics(self) -> None:
        async def read() -> core.Event | None:
            children = await self.host.zk.children(layout.DELETE_TOPICS)
            return core.DeleteTopics(tuple(sorted(children))) if children else None
        await self._active(read)

    async def _on_reassign(self, data: bytes | None) -> None:
        async def read() -> core.Event | None:
            current = await self.store.read_znode(layout.REASSIGN_PARTITIONS)
            return None if not current else core.Reassign(parse_reassignment(current))
        if data:
            await self._active(read)

    async def _on_preferred_znode(self, data: bytes | None) -> None:
        async def read() -> core.Event | None:
            current = await self.store.read_znode(layout.PREFERRED_REPLICA_ELECTION)
            if not current:
                return None
            tps = parse_preferred(current)
            return core.PreferredElection(tuple(tps or ()), from_znode=True,
                                          malformed=None if tps is not None else repr(current[:200]))
        if data:
            await self._active(read)

    async def _on_request(self, event: core.Event, fut: asyncio.Future[core.Reply]) -> None:
        async def read() -> core.Event:
            return event
        try:
            if not self.active:
                raise NotControllerError(f"broker {self.host.broker_id} is not the controller")
            reply = await self._handle(read)
        except NotControllerError as exc:
            if not fut.done():
                fut.set_exception(exc)
            return
        if not fut.done():
            fut.set_result(reply)


__all__ = ["ControllerHost", "KafkaController", "MAX_TRIES", "MOVE_BACKOFF_S"]
