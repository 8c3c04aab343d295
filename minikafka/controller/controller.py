"""The controller's event loop (Kafka's KafkaController with its ControllerEventManager).

ZooKeeper watches only put events on one queue; one task handles them in order.
Decisions come from :mod:`minikafka.replication.rules`; every partition state
write is conditional on the state znode version and on /controller_epoch's
version, so a deposed controller cannot overwrite a newer one.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..config import topic_setting
from ..errors import NotControllerError
from ..replication import rules
from ..zk import layout
from ..zk.session import BadVersionError, NoNodeError, NodeExistsError
from .channel import ChannelManager

if TYPE_CHECKING:
    from ..broker.server import Broker

log = logging.getLogger(__name__)

TP = tuple[str, int]


class ControllerMovedError(Exception):
    """/controller_epoch changed under us: another broker is controller now."""


@dataclass
class PartitionInfo:
    replicas: list[int]
    state: layout.LeaderIsr | None = None
    zk_version: int = -1
    # zxid of the state znode's last write: a memory-storage broker registered after it
    # (czxid greater) restarted since and lost what the ISR says it holds.
    mzxid: int = -1


@dataclass
class Context:
    """What the controller knows (Kafka's ControllerContext)."""

    live: dict[int, layout.BrokerInfo] = field(default_factory=dict)
    topics: dict[str, dict[int, PartitionInfo]] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)

    def partitions(self) -> list[tuple[TP, PartitionInfo]]:
        return [((t, p), info) for t, parts in sorted(self.topics.items()) for p, info in sorted(parts.items())]

    def info(self, tp: TP) -> PartitionInfo:
        return self.topics[tp[0]][tp[1]]


class Controller:
    """Active while its broker holds /controller; stops when it resigns or is fenced."""

    def __init__(self, broker: "Broker", epoch: int, epoch_zk_version: int) -> None:
        self.broker = broker
        self.epoch = epoch
        self.epoch_zk_version = epoch_zk_version
        self.ctx = Context()
        self.channels = ChannelManager(broker)
        self.queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self._rebalance_task: asyncio.Task | None = None
        self.reassigning: dict[TP, list[int]] = {}
        self.shutting_down: set[int] = set()
        self.active = True
        self._waiting: set[asyncio.Future] = set()  # futures of request() not answered yet
        self._assignment_watches: set[str] = set()  # topics whose /brokers/topics/T is watched

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="controller")

    async def stop(self) -> None:
        self.active = False
        self._fail_waiting("stopped")
        if self._rebalance_task is not None:
            self._rebalance_task.cancel()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        await self.channels.stop()

    def _put(self, kind: str, payload: Any) -> None:
        if self.active:
            self.queue.put_nowait((kind, payload))

    async def _run(self) -> None:
        try:
            await self.on_failover()
            while self.active:
                kind, payload = await self.queue.get()
                if not self.active:
                    break
                try:
                    await getattr(self, f"on_{kind}")(payload)
                except ControllerMovedError:
                    raise
                except Exception:
                    log.exception("controller event %s failed", kind)
        except ControllerMovedError:
            self.broker.record_event("controller_fenced", f"broker {self.broker.broker_id}: /controller_epoch moved past "
                                                          f"{self.epoch}; stopping as controller")
            self.active = False
            self._fail_waiting("fenced")
            if self.broker.controller is self:
                self.broker.controller = None
            await self.channels.stop()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("controller failed; resigning")
            if self.broker.controller is self:
                await self.broker.elector.resign("controller failure")

    # -- ZooKeeper reads ------------------------------------------------------------------
    async def _read_brokers(self, ids: list[str]) -> dict[int, layout.BrokerInfo]:
        out = {}
        zk = self.broker.zk
        for s in ids:
            got = await zk.get(layout.broker_path(int(s)))
            if got is not None:
                out[int(s)] = layout.BrokerInfo.decode(int(s), got[0], got[1].czxid)
        return out

    async def _load_topic(self, topic: str) -> None:
        zk = self.broker.zk
        got = await zk.get(layout.topic_path(topic))
        if got is None:
            return
        assignment = layout.decode_assignment(got[0])
        if topic not in self._assignment_watches:
            self._assignment_watches.add(topic)
            zk.watch_data(layout.topic_path(topic), lambda data, stat, t=topic: self._put("partition_modification", t))
        cfg = await zk.get(layout.topic_config_path(topic))
        self.ctx.configs[topic] = layout.decode_topic_config(cfg[0]) if cfg else {}
        parts = {}
        for p, replicas in assignment.items():
            info = PartitionInfo(replicas)
            st = await zk.get(layout.partition_state_path(topic, p))
            if st is not None:
                info.state = layout.LeaderIsr.decode(st[0])
                info.zk_version = st[1].version
                info.mzxid = st[1].mzxid
            parts[p] = info
        self.ctx.topics[topic] = parts

    async def _reread_state(self, tp: TP) -> None:
        info = self.ctx.info(tp)
        st = await self.broker.zk.get(layout.partition_state_path(*tp))
        if st is not None:
            info.state = layout.LeaderIsr.decode(st[0])
            info.zk_version = st[1].version
            info.mzxid = st[1].mzxid

    # -- failover ------------------------------------------------------------------------
    async def on_failover(self) -> None:
        """Kafka's onControllerFailover: watches, context load, metadata to every broker,
        state for every partition, elections for partitions without a live leader."""
        zk = self.broker.zk
        # Register watches first; their first firing is queued and handled after the load
        # below, as a no-op diff if nothing changed meanwhile.
        zk.watch_children(layout.BROKER_IDS, lambda ch: self._put("broker_change", ch))
        zk.watch_children(layout.BROKER_TOPICS, lambda ch: self._put("topic_change", ch))
        zk.watch_children(layout.ISR_CHANGE_NOTIFICATION, lambda ch: self._put("isr_change", ch))
        zk.watch_children(layout.DELETE_TOPICS, lambda ch: self._put("delete_topics", ch))
        zk.watch_data(layout.REASSIGN_PARTITIONS, lambda data, stat: self._put("reassign", data))
        zk.watch_data(layout.PREFERRED_REPLICA_ELECTION, lambda data, stat: self._put("preferred_znode", data))
        if self.broker.config.get("auto.leader.rebalance.enable"):
            self._rebalance_task = asyncio.get_running_loop().create_task(self._auto_rebalance())
        self.ctx.live = await self._read_brokers(await zk.children(layout.BROKER_IDS))
        for topic in await zk.children(layout.BROKER_TOPICS):
            await self._load_topic(topic)
        for b, info in self.ctx.live.items():
            self.channels.add(b, (info.host, info.port))
        self.broker.record_event("controller_loaded", f"controller {self.broker.broker_id} (epoch {self.epoch}) loaded "
                                                      f"{len(self.ctx.topics)} topics, live brokers {sorted(self.ctx.live)}")
        new = [tp for tp, info in self.ctx.partitions() if info.state is None]
        await self._initialize(new)
        # Memory-storage brokers that restarted since a partition's last state write come
        # back empty: out of its ISR first, while the znode's mzxid still tells (any
        # write below moves it past their registration and would hide the restart).
        await self._drop_restarted_memory_replicas()
        # Replicas on brokers that are not registered are offline (Kafka's replica state
        # machine start-up): new leaders where they led, out of the ISRs elsewhere.
        dead = {r for _, info in self.ctx.partitions() for r in info.replicas if r not in self.ctx.live}
        await self._offline_replicas(dead)
        self._send_metadata(all_partitions=True)
        self._send_leader_and_isr([tp for tp, _ in self.ctx.partitions()], new=set(new))

    # -- events ---------------------------------------------------------------------------
    async def on_broker_change(self, children: list[str]) -> None:
        current = await self._read_brokers(children)
        old = self.ctx.live
        dead = sorted(set(old) - set(current))
        born = sorted(set(current) - set(old))
        bounced = sorted(b for b in set(old) & set(current) if old[b].epoch != current[b].epoch)
        if not (dead or born or bounced):
            return
        if dead or bounced:
            for b in dead:
                self.broker.record_event("broker_lost", f"controller: broker {b} is gone (its registration vanished)", broker_id=b)
            for b in bounced:
                self.broker.record_event("broker_bounced", f"controller: broker {b} re-registered with a new epoch "
                                                           f"{current[b].epoch}", broker_id=b)
            await self.on_broker_failure(dead + bounced)
        self.shutting_down -= set(dead)
        if born or bounced:
            for b in born + bounced:
                self.shutting_down.discard(b)
                self.ctx.live[b] = current[b]
                self.channels.add(b, (current[b].host, current[b].port))
            for b in born:
                self.broker.record_event("broker_registered", f"controller: broker {b} registered at "
                                                              f"{current[b].host}:{current[b].port} epoch {current[b].epoch}", broker_id=b)
            await self.on_broker_startup(born + bounced)

    async def on_broker_failure(self, ids: list[int]) -> None:
        """Kafka's onBrokerFailure: new leaders where the leader died, the dead brokers out
        of every ISR (never the last member), leader epoch + 1 on every change."""
        for b in ids:
            self.ctx.live.pop(b, None)
            await self.channels.remove(b)
        changed = await self._offline_replicas(set(ids))
        self._send_leader_and_isr(changed)
        self._send_metadata(all_partitions=True)

    async def _offline_replicas(self, gone: set[int]) -> list[TP]:
        """Move replicas on ``gone`` brokers offline: elect where they led, drop them
        from ISRs elsewhere.  Returns the partitions whose state changed."""
        changed: list[TP] = []
        for tp, info in self.ctx.partitions():
            st = info.state
            if st is None or not (gone & set(info.replicas)):
                continue
            if st.leader in gone or st.leader == rules.NO_LEADER:
                if await self._elect_one(tp, "leader failure", dead=gone):
                    changed.append(tp)
            elif gone & set(st.isr):
                isr = st.isr
                for b in gone:
                    isr = rules.shrink_isr_on_failure(isr, b)
                if await self._write(tp, layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, self.epoch)):
                    self.broker.record_event("isr_shrink_controller", f"{tp[0]}-{tp[1]}: controller removed {sorted(gone & set(st.isr))} "
                                                                      f"from ISR -> {list(isr)} (leader epoch {st.leader_epoch + 1})")
                    changed.append(tp)
        return changed

    async def _drop_restarted_memory_replicas(self) -> list[TP]:
        """A memory-storage broker whose registration (czxid) is newer than a partition's
        last state write restarted since then: its log is gone, so it leaves that ISR and,
        if it leads, the partition gets a new leader (or goes offline).  A controller that
        was not watching when the broker bounced (it was elected meanwhile) finds these here."""
        changed: list[TP] = []
        live = self.ctx.live
        for tp, info in self.ctx.partitions():
            st = info.state
            if st is None:
                continue
            stale = {b for b in st.isr if b in live and live[b].storage == "memory" and live[b].log_born > info.mzxid}
            if not stale:
                continue
            isr = tuple(b for b in st.isr if b not in stale)
            unclean_ok = bool(topic_setting("unclean.leader.election.enable", self.ctx.configs.get(tp[0], {}), self.broker.config))
            if st.leader in stale or st.leader not in live:
                e = rules.elect_leader(info.replicas, isr, set(live), unclean_ok)
                new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, e.isr if e.leader != rules.NO_LEADER else isr, self.epoch)
            else:
                new = layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, self.epoch)
            if await self._write(tp, new):
                self.broker.record_event("isr_shrink_controller",
                                         f"{tp[0]}-{tp[1]}: brokers {sorted(stale)} restarted with memory storage after the "
                                         f"last state change: out of the ISR -> {list(new.isr)}, leader {new.leader} "
                                         f"at epoch {new.leader_epoch}", topic=tp[0], partition=tp[1])
                if new.leader != st.leader:
                    self.broker.metrics.count("leader_elections")
                changed.append(tp)
        return changed

    async def on_broker_startup(self, ids: list[int]) -> None:
        """Kafka's onBrokerStartup: metadata to everyone, state to the new brokers for
        their replicas, elections for offline partitions they can lead.  A broker with
        memory storage came back empty: it leaves every ISR it was still listed in (not
        when the same process re-registered after losing its session: its log is kept)."""
        new = set(ids)
        changed: list[TP] = []
        for b in ids:
            if self.ctx.live[b].memory_log_is_new:
                for tp, info in self.ctx.partitions():
                    st = info.state
                    if st is not None and b in st.isr and st.leader != b:
                        isr = tuple(x for x in st.isr if x != b)
                        if await self._write(tp, layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, self.epoch)):
                            self.broker.record_event("isr_shrink_controller",
                                                     f"{tp[0]}-{tp[1]}: broker {b} registered anew with memory storage "
                                                     f"(its log may be gone): removed from ISR -> {list(isr)}")
                            changed.append(tp)
        self._send_metadata(all_partitions=True)
        offline = [tp for tp, info in self.ctx.partitions()
                   if info.state is not None and info.state.leader not in self.ctx.live and new & set(info.replicas)]
        for tp in offline:
            if await self._elect_one(tp, "broker startup"):
                changed.append(tp)
        hosted = [tp for tp, info in self.ctx.partitions() if new & set(info.replicas)]
        self._send_leader_and_isr(sorted(set(changed) | set(hosted)))
        if changed:
            self._send_metadata(partitions=changed)

    async def on_topic_change(self, children: list[str]) -> None:
        new_topics = sorted(set(children) - set(self.ctx.topics))
        if not new_topics:
            return
        new: list[TP] = []
        for topic in new_topics:
            await self._load_topic(topic)
            new += [(topic, p) for p, info in self.ctx.topics.get(topic, {}).items() if info.state is None]
        await self._initialize(new)
        self._send_leader_and_isr(new, new=set(new))
        self._send_metadata(partitions=new)

    async def on_partition_modification(self, topic: str) -> None:
        """Kafka's PartitionModifications: partitions added to /brokers/topics/T (CreatePartitions)
        are initialized like a new topic's; changes to existing partitions are reassignments'."""
        parts = self.ctx.topics.get(topic)
        if parts is None:
            return
        got = await self.broker.zk.get(layout.topic_path(topic))
        if got is None:
            return
        assignment = layout.decode_assignment(got[0])
        added = sorted(p for p in assignment if p not in parts)
        if not added:
            return
        for p in added:
            parts[p] = PartitionInfo(assignment[p])
        new = [(topic, p) for p in added]
        await self._initialize(new)
        self._send_leader_and_isr(new, new=set(new))
        self._send_metadata(partitions=new)

    async def on_isr_change(self, children: list[str]) -> None:
        """Leaders changed ISRs themselves: re-read those partitions and spread the news."""
        zk = self.broker.zk
        tps: set[TP] = set()
        for name in sorted(children):
            path = f"{layout.ISR_CHANGE_NOTIFICATION}/{name}"
            got = await zk.get(path)
            if got is not None:
                try:
                    tps.update(layout.decode_isr_change(got[0]))
                except Exception:
                    log.warning("malformed %s", path)
            await zk.delete(path)
        known = [tp for tp in tps if tp[0] in self.ctx.topics and tp[1] in self.ctx.topics[tp[0]]]
        for tp in known:
            await self._reread_state(tp)
        if known:
            self._send_metadata(partitions=sorted(known))
        progressed = [tp for tp in known if tp in self.reassigning]
        for tp in progressed:
            await self._reassign_step(tp)
        if progressed:
            await self._finish_reassign_znode()

    # -- requests that need the controller ---------------------------------------------------
    async def request(self, kind: str, payload: Any) -> Any:
        """Queue an event that answers through a future (controlled shutdown, elections).

        Raises NOT_CONTROLLER when this controller is stopped or fenced before it answers,
        so the caller retries with the new controller instead of waiting forever.
        """
        if not self.active:
            raise NotControllerError(f"broker {self.broker.broker_id} is no longer the controller")
        fut = asyncio.get_running_loop().create_future()
        self._waiting.add(fut)
        fut.add_done_callback(self._waiting.discard)
        self._put(kind, (payload, fut))
        return await fut

    def _fail_waiting(self, why: str) -> None:
        for fut in list(self._waiting):
            if not fut.done():
                fut.set_exception(NotControllerError(
                    f"broker {self.broker.broker_id} stopped acting as controller ({why}) before answering"))

    async def on_controlled_shutdown(self, arg: tuple[int, asyncio.Future]) -> None:
        """Kafka's ControlledShutdown: for each partition the broker leads, a new leader from
        the rest of the ISR; for each it follows, out of the ISR.  The stopping broker gets
        StopReplica (logs kept) for those partitions instead of LeaderAndIsr, so it stops
        fetching and no leader adds it back to an ISR.  Answers what it still leads."""
        broker_id, fut = arg
        self.shutting_down.add(broker_id)
        changed: list[TP] = []
        stop_only: list[TP] = []
        remaining: list[TP] = []
        for tp, info in self.ctx.partitions():
            st = info.state
            if st is None or broker_id not in info.replicas:
                continue
            if st.leader == broker_id:
                live = set(self.ctx.live) - self.shutting_down
                e = rules.elect_leader(info.replicas, [b for b in st.isr if b != broker_id], live)
                if e.leader == rules.NO_LEADER:
                    remaining.append(tp)
                    continue
                new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, e.isr, self.epoch)
                if await self._write(tp, new):
                    self.broker.metrics.count("leader_elections")
                    self.broker.record_event("leader_elected", f"{tp[0]}-{tp[1]}: leader {e.leader} at epoch {new.leader_epoch}, "
                                                               f"ISR {list(e.isr)} (controlled shutdown of broker {broker_id})",
                                             topic=tp[0], partition=tp[1], leader=e.leader, leader_epoch=new.leader_epoch)
                    changed.append(tp)
                else:
                    remaining.append(tp)
            elif broker_id in st.isr and len(st.isr) > 1:
                isr = tuple(b for b in st.isr if b != broker_id)
                if await self._write(tp, layout.LeaderIsr(st.leader, st.leader_epoch + 1, isr, self.epoch)):
                    changed.append(tp)
            elif broker_id not in st.isr:
                stop_only.append(tp)  # out of the ISR already: only stop its fetcher
        self._send_leader_and_isr(changed, exclude={broker_id})
        stop = changed + stop_only
        if stop and broker_id in self.ctx.live:
            self.channels.send(broker_id, "stop_replica", {
                "controller_id": self.broker.broker_id, "controller_epoch": self.epoch, "delete_partitions": False,
                "partitions": [{"topic": t, "partition": p} for t, p in stop]})
        self._send_metadata(partitions=changed)
        if not fut.done():
            fut.set_result(remaining)

    async def on_elect_preferred(self, arg: tuple[list[TP] | None, asyncio.Future]) -> None:
        tps, fut = arg
        results = await self._elect_preferred(tps)
        if not fut.done():
            fut.set_result(results)

    async def on_preferred_znode(self, data: bytes | None) -> None:
        """The ZooKeeper-era path: /admin/preferred_replica_election lists partitions.

        Only the listed partitions are elected (Kafka's tool writes every partition
        explicitly when asked for all); an empty or malformed list elects none."""
        if not data:
            return
        import json
        try:
            tps = [(d["topic"], int(d["partition"])) for d in json.loads(data).get("partitions", [])]
        except Exception:
            tps = []
            self.broker.record_event("preferred_election_ignored", "controller: malformed "
                                     f"{layout.PREFERRED_REPLICA_ELECTION} ignored: {data[:200]!r}")
        if tps:
            await self._elect_preferred(tps)
        await self.broker.zk.delete(layout.PREFERRED_REPLICA_ELECTION)

    async def _elect_preferred(self, tps: list[TP] | None) -> dict[TP, str]:
        """Move leadership to the preferred (first) replica where it is alive and in the ISR.
        Returns an error name per partition (NONE, ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE,
        UNKNOWN_TOPIC_OR_PARTITION)."""
        results: dict[TP, str] = {}
        changed: list[TP] = []
        wanted = tps if tps is not None else [tp for tp, _ in self.ctx.partitions()]
        for tp in wanted:
            if tp[0] not in self.ctx.topics or tp[1] not in self.ctx.topics[tp[0]]:
                results[tp] = "UNKNOWN_TOPIC_OR_PARTITION"
                continue
            info = self.ctx.info(tp)
            st = info.state
            preferred = info.replicas[0]
            if st is None or st.leader == preferred:
                if tps is not None:
                    results[tp] = "ELECTION_NOT_NEEDED"
                continue
            if preferred not in self.ctx.live or preferred not in st.isr or preferred in self.shutting_down:
                results[tp] = "PREFERRED_LEADER_NOT_AVAILABLE"
                continue
            new = layout.LeaderIsr(preferred, st.leader_epoch + 1, st.isr, self.epoch)
            if await self._write(tp, new):
                self.broker.metrics.count("leader_elections")
                self.broker.metrics.count("preferred_elections")
                self.broker.record_event("leader_elected", f"{tp[0]}-{tp[1]}: preferred leader {preferred} at epoch "
                                                           f"{new.leader_epoch}", topic=tp[0], partition=tp[1],
                                         leader=preferred, leader_epoch=new.leader_epoch)
                changed.append(tp)
                results[tp] = "NONE"
            else:
                results[tp] = "PREFERRED_LEADER_NOT_AVAILABLE"
        self._send_leader_and_isr(changed)
        self._send_metadata(partitions=changed)
        return results

    async def _auto_rebalance(self) -> None:
        """auto.leader.rebalance.enable: every leader.imbalance.check.interval.seconds, a
        preferred election for brokers whose imbalance ratio exceeds the threshold."""
        cfg = self.broker.config
        interval = cfg.get("leader.imbalance.check.interval.seconds")
        threshold = cfg.get("leader.imbalance.per.broker.percentage") / 100.0
        while self.active:
            await asyncio.sleep(interval)
            self._put("check_imbalance", threshold)

    async def on_check_imbalance(self, threshold: float) -> None:
        leaders = {tp: info.state.leader for tp, info in self.ctx.partitions() if info.state is not None}
        preferred = {tp: info.replicas[0] for tp, info in self.ctx.partitions()}
        ratios = rules.preferred_leader_imbalance(leaders, preferred)
        brokers = {b for b, r in ratios.items() if r > threshold and b in self.ctx.live}
        if brokers:
            tps = [tp for tp, pref in preferred.items() if pref in brokers and leaders.get(tp) != pref]
            self.broker.record_event("leader_rebalance", f"controller: leader imbalance above {threshold:.0%} on brokers "
                                                         f"{sorted(brokers)}; preferred election for {len(tps)} partitions")
            await self._elect_preferred(tps)

    async def on_delete_topics(self, children: list[str]) -> None:
        """/admin/delete_topics/T: stop and delete every replica, then remove the znodes."""
        zk = self.broker.zk
        deleted = []
        for topic in sorted(children):
            if topic not in self.ctx.topics:
                await zk.delete(f"{layout.DELETE_TOPICS}/{topic}")
                continue
            if not self.broker.config.get("delete.topic.enable"):
                continue
            parts = self.ctx.topics[topic]
            per_broker: dict[int, list[dict]] = {}
            for p, info in parts.items():
                for r in info.replicas:
                    per_broker.setdefault(r, []).append({"topic": topic, "partition": p})
            for b, tps in per_broker.items():
                if b in self.ctx.live:
                    self.channels.send(b, "stop_replica", {"controller_id": self.broker.broker_id,
                                                           "controller_epoch": self.epoch,
                                                           "delete_partitions": True, "partitions": tps})
            await zk.delete(layout.topic_path(topic), recursive=True)
            await zk.delete(layout.topic_config_path(topic))
            await zk.delete(f"{layout.DELETE_TOPICS}/{topic}")
            del self.ctx.topics[topic]
            self.ctx.configs.pop(topic, None)
            for tp in [tp for tp in self.reassigning if tp[0] == topic]:
                del self.reassigning[tp]
            deleted.append(topic)
            self.broker.record_event("topic_deleted", f"controller: topic {topic} deleted")
        if deleted:
            body = {"controller_id": self.broker.broker_id, "controller_epoch": self.epoch,
                    "partition_states": [], "live_brokers": self._brokers_msg(), "deleted_topics": deleted}
            for b in self.ctx.live:
                self.channels.send(b, "update_metadata", body)

    # -- partition reassignment -------------------------------------------------------------
    async def on_reassign(self, data: bytes | None) -> None:
        """/admin/reassign_partitions: {"version":1,"partitions":[{"topic","partition","replicas"}]}."""
        if not data:
            return
        import json
        try:
            wanted = {(d["topic"], int(d["partition"])): [int(b) for b in d["replicas"]]
                      for d in json.loads(data).get("partitions", [])}
        except Exception:
            log.warning("malformed %s; ignoring it", layout.REASSIGN_PARTITIONS)
            await self.broker.zk.delete(layout.REASSIGN_PARTITIONS)
            return
        for tp, target in wanted.items():
            if tp[0] in self.ctx.topics and tp[1] in self.ctx.topics[tp[0]] and tp not in self.reassigning:
                self.reassigning[tp] = target
                await self._reassign_step(tp)
        await self._finish_reassign_znode()

    async def _reassign_step(self, tp: TP) -> None:
        """Kafka's reassignment: AR = new + old; once every new replica is in the ISR, lead
        from the new set, shrink AR/ISR to the new set, stop and delete the old replicas."""
        target = self.reassigning.get(tp)
        if target is None:
            return
        info = self.ctx.info(tp)
        st = info.state
        if st is None:
            return
        union = list(target) + [r for r in info.replicas if r not in target]
        if info.replicas == list(target):
            del self.reassigning[tp]
            return
        if info.replicas != union:
            self.broker.record_event("reassign_start", f"{tp[0]}-{tp[1]}: reassigning {info.replicas} -> {target}")
            await self._write_assignment(tp[0], {tp[1]: union})
            new = layout.LeaderIsr(st.leader, st.leader_epoch + 1, st.isr, self.epoch)
            await self._write(tp, new)
            self._send_leader_and_isr([tp])
            self._send_metadata(partitions=[tp])
            # No return: when every target replica is already in the ISR (the new set is a
            # subset or a reordering of the old one) no ISR change will come to finish it.
        st = info.state
        if not all(r in st.isr for r in target):
            return  # wait for the ISR change notifications
        leader = st.leader if st.leader in target else next((r for r in target if r in st.isr and r in self.ctx.live), rules.NO_LEADER)
        isr = tuple(r for r in st.isr if r in target)
        removed = [r for r in info.replicas if r not in target]
        new = layout.LeaderIsr(leader, st.leader_epoch + 1, isr, self.epoch)
        if not await self._write(tp, new):
            return
        await self._write_assignment(tp[0], {tp[1]: list(target)})
        self._send_leader_and_isr([tp])
        for r in removed:
            if r in self.ctx.live:
                self.channels.send(r, "stop_replica", {"controller_id": self.broker.broker_id, "controller_epoch": self.epoch,
                                                       "delete_partitions": True, "partitions": [{"topic": tp[0], "partition": tp[1]}]})
        self._send_metadata(partitions=[tp])
        del self.reassigning[tp]
        self.broker.record_event("reassign_done", f"{tp[0]}-{tp[1]}: replicas now {list(target)}, leader {leader}")

    async def _write_assignment(self, topic: str, changes: dict[int, list[int]]) -> None:
        parts = self.ctx.topics[topic]
        for p, replicas in changes.items():
            parts[p].replicas = list(replicas)
        assignment = {p: info.replicas for p, info in parts.items()}
        await self.broker.zk.set(layout.topic_path(topic), layout.encode_assignment(assignment))

    async def _finish_reassign_znode(self) -> None:
        """Leave in /admin/reassign_partitions only what is still moving (delete it when
        nothing is).  Written only when that changes: the controller's own watch fires on
        every write, and an unchanged rewrite would queue this handler again and again."""
        import json
        zk = self.broker.zk
        if not self.reassigning:
            await zk.delete(layout.REASSIGN_PARTITIONS)
            return
        got = await zk.get(layout.REASSIGN_PARTITIONS)
        if got is None:
            return
        try:
            current = {(d["topic"], int(d["partition"])): [int(b) for b in d["replicas"]]
                       for d in json.loads(got[0]).get("partitions", [])}
        except Exception:
            current = None
        if current == self.reassigning:
            return
        body = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for (t, p), r in sorted(self.reassigning.items())]}
        try:
            await zk.set(layout.REASSIGN_PARTITIONS, json.dumps(body).encode(), got[1].version)
        except (NoNodeError, BadVersionError):
            pass  # changed meanwhile: its watch brings the new content

    # -- partition state changes ---------------------------------------------------------
    async def _initialize(self, tps: list[TP]) -> set[TP]:
        """New partitions: leader = first live replica in AR order, ISR = live replicas,
        leader epoch 0 (Kafka's NewPartition -> OnlinePartition)."""
        done = set()
        zk = self.broker.zk
        for tp in tps:
            info = self.ctx.info(tp)
            live = [r for r in info.replicas if r in self.ctx.live]
            st = layout.LeaderIsr(live[0] if live else rules.NO_LEADER, 0, tuple(live) if live else tuple(info.replicas), self.epoch)

            def build(tx, tp=tp, st=st):
                tx.check(layout.CONTROLLER_EPOCH, self.epoch_zk_version)
                tx.create(layout.partition_path(*tp), b"")
                tx.create(layout.partition_state_path(*tp), st.encode())
            await zk.ensure_path(layout.partitions_path(tp[0]))
            results = await zk.commit(build)
            self._check_fenced(results)
            if any(isinstance(r, Exception) for r in results):
                await self._reread_state(tp)  # someone created it: take what is there
                continue
            info.state, info.zk_version = st, 0
            created = await zk.exists(layout.partition_state_path(*tp))
            info.mzxid = created.mzxid if created is not None else info.mzxid
            done.add(tp)
            self.broker.record_event("leader_elected", f"{tp[0]}-{tp[1]}: new partition, leader {st.leader} at epoch 0, "
                                                       f"ISR {list(st.isr)}", topic=tp[0], partition=tp[1], leader=st.leader, leader_epoch=0)
        return done

    async def _elect(self, tps: list[TP], reason: str) -> set[TP]:
        return {tp for tp in tps if await self._elect_one(tp, reason)}

    async def _elect_one(self, tp: TP, reason: str, dead: set[int] = frozenset()) -> bool:
        """Elect a leader for one partition and write it; True if the state changed."""
        for _ in range(5):
            info = self.ctx.info(tp)
            st = info.state
            if st is None:
                return False
            live = set(self.ctx.live) - set(dead) - self.shutting_down
            unclean_ok = bool(topic_setting("unclean.leader.election.enable", self.ctx.configs.get(tp[0], {}), self.broker.config))
            e = rules.elect_leader(info.replicas, st.isr, live, unclean_ok)
            isr = e.isr
            if e.leader == rules.NO_LEADER:
                for b in dead:
                    isr = rules.shrink_isr_on_failure(isr, b)
            if e.leader == st.leader and tuple(isr) == tuple(st.isr):
                return False
            new = layout.LeaderIsr(e.leader, st.leader_epoch + 1, tuple(isr), self.epoch)
            if await self._write(tp, new):
                self.broker.metrics.count("leader_elections")
                if e.unclean:
                    self.broker.metrics.count("unclean_leader_elections")
                    self.broker.record_event("unclean_election", f"{tp[0]}-{tp[1]}: UNCLEAN election of broker {e.leader} "
                                                                 f"(no ISR replica alive; data may be lost), epoch {new.leader_epoch}",
                                             topic=tp[0], partition=tp[1], leader=e.leader, leader_epoch=new.leader_epoch)
                elif e.leader == rules.NO_LEADER:
                    self.broker.record_event("partition_offline", f"{tp[0]}-{tp[1]}: no live ISR replica; offline with ISR {list(isr)} "
                                                                  f"({reason})", topic=tp[0], partition=tp[1])
                else:
                    self.broker.record_event("leader_elected", f"{tp[0]}-{tp[1]}: leader {e.leader} at epoch {new.leader_epoch}, "
                                                               f"ISR {list(isr)} ({reason})", topic=tp[0], partition=tp[1],
                                             leader=e.leader, leader_epoch=new.leader_epoch)
                return True
        return False

    def _check_fenced(self, results: list[Any]) -> None:
        if results and isinstance(results[0], BadVersionError):
            raise ControllerMovedError()

    async def _write(self, tp: TP, new: layout.LeaderIsr) -> bool:
        """Conditional write of a partition state (fenced by /controller_epoch's version).
        On a version conflict the state is re-read and False returned."""
        info = self.ctx.info(tp)

        def build(tx):
            tx.check(layout.CONTROLLER_EPOCH, self.epoch_zk_version)
            tx.set_data(layout.partition_state_path(*tp), new.encode(), info.zk_version)
        results = await self.broker.zk.commit(build)
        self._check_fenced(results)
        if any(isinstance(r, Exception) for r in results):
            await self._reread_state(tp)
            return False
        info.state, info.zk_version, info.mzxid = new, results[1].version, results[1].mzxid
        return True

    # -- requests to brokers ----------------------------------------------------------------
    def _state_msg(self, tp: TP, is_new: bool = False) -> dict:
        info = self.ctx.info(tp)
        st = info.state
        assert st is not None
        return {"topic": tp[0], "partition": tp[1], "controller_epoch": st.controller_epoch, "leader": st.leader,
                "leader_epoch": st.leader_epoch, "isr": list(st.isr), "zk_version": info.zk_version,
                "replicas": list(info.replicas), "is_new": is_new}

    def _brokers_msg(self) -> list[dict]:
        def endpoint(hp: tuple[str, int] | None) -> dict | None:
            return None if hp is None else {"host": hp[0], "port": hp[1]}

        return [{"id": b, "host": i.host, "port": i.port, "external": endpoint(i.external),
                 "kafka": endpoint(i.kafka), "kafka_external": endpoint(i.kafka_external)}
                for b, i in sorted(self.ctx.live.items())]

    def _send_leader_and_isr(self, tps: list[TP], new: set[TP] = frozenset(), exclude: set[int] = frozenset()) -> None:
        per_broker: dict[int, list[dict]] = {}
        for tp in tps:
            info = self.ctx.info(tp)
            if info.state is None:
                continue
            msg = self._state_msg(tp, tp in new)
            for r in info.replicas:
                if r in self.ctx.live and r not in exclude:
                    per_broker.setdefault(r, []).append(msg)
        brokers = self._brokers_msg()
        for b, states in per_broker.items():
            leaders = {s["leader"] for s in states}
            self.channels.send(b, "leader_and_isr", {
                "controller_id": self.broker.broker_id, "controller_epoch": self.epoch,
                "broker_epoch": self.ctx.live[b].epoch, "partition_states": states,
                "live_leaders": [x for x in brokers if x["id"] in leaders]})

    def _send_metadata(self, partitions: list[TP] | None = None, all_partitions: bool = False) -> None:
        tps = [tp for tp, _ in self.ctx.partitions()] if all_partitions or partitions is None else partitions
        states = [self._state_msg(tp) for tp in tps if self.ctx.info(tp).state is not None]
        body = {"controller_id": self.broker.broker_id, "controller_epoch": self.epoch,
                "partition_states": states, "live_brokers": self._brokers_msg(), "deleted_topics": []}
        for b in self.ctx.live:
            self.channels.send(b, "update_metadata", body)


__all__ = ["Controller", "ControllerMovedError", "NoNodeError", "NodeExistsError"]
