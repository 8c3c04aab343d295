"""The asyncio admin client: create, list and describe topics; cluster view.

:meth:`AIOAdmin.describe_topics` combines the metadata answer (leader, epoch,
replicas, ISR) with what every live broker reports about its own replicas
(``replica_state``): each replica's LEO and HW, the leader's HW and LEO.
"""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Iterable

from .. import errors
from ..auth.acls import AclBinding
from ..protocol.rpc.types import AclBinding as RpcAclBinding
from ..protocol.rpc.types import AclFilter as RpcAclFilter
from ..protocol.rpc.types import (
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    CreatableTopic,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeConfigsRequest,
    ElectLeadersRequest,
    ReassignablePartition,
    ReplicaState,
    ReplicaStatePartition,
    ReplicaStateRequest,
    ReplicaStateResponse,
)
from ..protocol.rpc.types import TopicPartition as RpcTopicPartition
from ..rpc import request
from .connection import ClientSecurity, Connection
from .group_admin import GroupAdminMixin
from .txn_admin import TransactionAdminMixin
from .metadata import Metadata, group_by_leader, needs_refresh
from .ports import SYSTEM_CLOCK, Clock, Transport
from .consumer import as_tp
from .types import ClusterDescription, PartitionDescription, TopicDescription, TopicPartition

# Timeout of introspection requests to each broker: a stopped broker must not
# hold a describe for the whole request timeout.
INTROSPECTION_TIMEOUT_MS = 2000


class AIOAdmin(GroupAdminMixin, TransactionAdminMixin):
    """Topic administration and cluster introspection (asyncio)."""

    def __init__(self, bootstrap_servers: Any, *, request_timeout_ms: int = 30000, client_id: str | None = None,
                 transport: Transport | None = None, clock: Clock = SYSTEM_CLOCK, **security: Any) -> None:
        self.request_timeout_ms = int(request_timeout_ms)
        self._conn: Transport = transport or Connection(client_id, ClientSecurity.of(security))
        self._meta = Metadata(self._conn, bootstrap_servers, self.request_timeout_ms, clock)
        self._started = False
        self._closed = False

    async def start(self) -> None:
        """Fetch metadata from a bootstrap server."""
        if self._started:
            return
        try:
            await self._meta.refresh()
        except BaseException:
            await self._conn.close()
            raise
        self._started = True

    async def __aenter__(self) -> "AIOAdmin":
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._conn.close()

    # ----- topics -------------------------------------------------------
    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        config: dict[str, Any] | None = None,
        timeout_ms: int = 30000,
        assignment: dict[int, list[int]] | None = None,
    ) -> None:
        """Create a topic; waits up to ``timeout_ms`` until every partition has a leader.

        Raises the broker's error for the topic, e.g. TOPIC_ALREADY_EXISTS or
        INVALID_REPLICATION_FACTOR.  ``assignment`` optionally fixes the replicas
        of each partition (partition -> broker ids, the first is the preferred leader).
        """
        self._check_open()
        if not isinstance(name, str) or not name:
            raise errors.ClientError(f"topic name must be a non-empty str, got {name!r}")
        topic = CreatableTopic(
            name=name, num_partitions=int(partitions), replication_factor=int(replication_factor),
            config={str(k): _config_value(v) for k, v in (config or {}).items()},
            assignment=None if assignment is None else {
                str(p): [int(b) for b in brokers] for p, brokers in assignment.items()})
        answer = await self._meta.request_any(CreateTopicsRequest(topics=[topic], timeout_ms=int(timeout_ms)),
                                              (timeout_ms + self.request_timeout_ms) / 1000)
        for t in answer.topics:
            if t.name == name and t.error is not None:
                raise t.error
        try:
            await self._meta.refresh_topics([name])
        except errors.KafkaError:
            pass

    async def delete_topic(self, name: str, timeout_ms: int = 30000) -> None:
        """Delete a topic; waits up to ``timeout_ms`` until it left the metadata."""
        self._check_open()
        answer = await self._meta.request_any(DeleteTopicsRequest(topics=[name], timeout_ms=int(timeout_ms)),
                                              (timeout_ms + self.request_timeout_ms) / 1000)
        for t in answer.topics:
            if t.name == name and t.error is not None:
                raise t.error
        try:
            await self._meta.refresh()
        except errors.KafkaError:
            pass

    async def elect_leaders(
        self, partitions: Iterable[Any] | None = None, timeout_ms: int = 30000, election_type: str = "preferred"
    ) -> dict[TopicPartition, errors.KafkaError | None]:
        """Leader election for ``partitions``, as Kafka's Admin.electLeaders.  ``election_type``
        ``"preferred"``: the first replica where it is alive and in the ISR (None: every partition
        not led by it); ``"unclean"``: a leader for partitions that have none, an out-of-sync live
        replica if no ISR replica is alive (None: every partition without a leader).

        Returns each partition's outcome: None, or the error (e.g. ELECTION_NOT_NEEDED).
        """
        self._check_open()
        kinds = {"preferred": 0, "unclean": 1}
        if str(election_type).lower() not in kinds:
            raise errors.ClientError(f"election_type must be preferred or unclean, got {election_type!r}")
        tps = None if partitions is None else [as_tp(tp) for tp in partitions]
        req = ElectLeadersRequest(
            partitions=None if tps is None else [RpcTopicPartition(topic=tp.topic, partition=tp.partition) for tp in tps],
            election_type=kinds[str(election_type).lower()], timeout_ms=int(timeout_ms))
        answer = await self._meta.request_any(req, (timeout_ms + self.request_timeout_ms) / 1000)
        return {TopicPartition(p.topic, p.partition): p.error for p in answer.partitions}

    async def delete_records(self, offsets: dict[Any, int], timeout_ms: int = 30000
                             ) -> dict[TopicPartition, int | errors.KafkaError]:
        """Kafka's DeleteRecords: ``{TopicPartition: offset}`` becomes each partition's log start
        offset (-1: its high watermark); records below it are gone for consumers.  Sent to each
        partition's leader; returns each partition's low watermark (the smallest log start of
        its in-sync replicas once they all moved) or its error (OFFSET_OUT_OF_RANGE above the
        high watermark, REQUEST_TIMED_OUT when a follower did not follow within ``timeout_ms``)."""
        self._check_open()
        wanted = {as_tp(tp): int(off) for tp, off in offsets.items()}
        out: dict[TopicPartition, int | errors.KafkaError] = {}
        pending = dict(wanted)
        for attempt in range(4):
            if attempt:
                await asyncio.sleep(0.2 * attempt)
            await self._meta.refresh()
            groups, missing = group_by_leader(self._meta, [(tp.topic, tp.partition) for tp in pending])
            for t, p in missing:
                tp = TopicPartition(t, p)
                known = self._meta.topics.get(t)
                out[tp] = (errors.LeaderNotAvailableError(f"{tp}: no leader") if known and p in known.partitions
                           else errors.UnknownTopicOrPartitionError(f"{t}-{p} does not exist"))
            retry: dict[TopicPartition, int] = {}

            async def ask(leader: int, tps: list[tuple[str, int]]) -> None:
                host, port = self._meta.brokers[leader]
                req = DeleteRecordsRequest(partitions=[
                    DeleteRecordsPartition(topic=t, partition=p, offset=pending[TopicPartition(t, p)]) for t, p in tps],
                    timeout_ms=int(timeout_ms))
                try:
                    answer = await request(self._conn.call, host, port, req,
                                           (timeout_ms + self.request_timeout_ms) / 1000)
                except errors.KafkaError as exc:
                    for t, p in tps:
                        out[TopicPartition(t, p)] = exc
                    return
                for r in answer.partitions:
                    tp = TopicPartition(r.topic, r.partition)
                    out[tp] = r.low_watermark if r.error is None else r.error
                    if r.error is not None and needs_refresh(r.error) \
                            and not isinstance(r.error, errors.RequestTimedOutError):
                        retry[tp] = pending[tp]

            await asyncio.gather(*(ask(leader, tps) for leader, tps in groups.items()))
            if not retry:
                break
            pending = retry
        return {tp: out[tp] for tp in wanted}

    async def alter_partition_reassignments(
        self, reassignments: dict[Any, list[int]]
    ) -> dict[TopicPartition, errors.KafkaError | None]:
        """Move partitions to new replica lists (``{TopicPartition: [broker ids]}``); returns each outcome."""
        self._check_open()
        req = AlterPartitionReassignmentsRequest(partitions=[
            ReassignablePartition(topic=tp.topic, partition=tp.partition, replicas=[int(b) for b in replicas])
            for tp, replicas in ((as_tp(k), v) for k, v in reassignments.items())])
        answer = await self._meta.request_any(req, self.request_timeout_ms / 1000)
        return {TopicPartition(p.topic, p.partition): p.error for p in answer.partitions}

    async def create_partitions(self, topic: str, count: int, assignments: list[list[int]] | None = None,
                                timeout_ms: int = 30000, validate_only: bool = False) -> list[int]:
        """Raise ``topic``'s partition count to ``count`` (Kafka's CreatePartitions); returns the
        new partition ids once they are led (within ``timeout_ms``)."""
        self._check_open()
        answer = await self._meta.request_any(CreatePartitionsRequest(
            topic=topic, count=int(count), assignments=assignments, timeout_ms=int(timeout_ms),
            validate_only=bool(validate_only)), (timeout_ms + self.request_timeout_ms) / 1000)
        try:
            await self._meta.refresh()
        except errors.KafkaError:
            pass
        return list(answer.partitions)

    async def describe_configs(self, topic: str) -> dict[str, tuple[str | None, str]]:
        """Every setting of ``topic``: name -> (value, source), source "topic" (an override),
        "broker" (the broker's --config) or "default"."""
        self._check_open()
        answer = await self._meta.request_any(DescribeConfigsRequest(topic=topic), self.request_timeout_ms / 1000)
        return {c.name: (c.value, c.source) for c in answer.configs}

    async def alter_configs(self, topic: str, set: dict[str, Any] | None = None,
                            delete: Iterable[str] = (), validate_only: bool = False) -> None:
        """Set and delete topic overrides (Kafka's IncrementalAlterConfigs SET / DELETE); every
        broker applies the change through /config/changes."""
        self._check_open()
        await self._meta.request_any(AlterConfigsRequest(
            topic=topic, set={str(k): str(v) for k, v in (set or {}).items()}, delete=[str(k) for k in delete],
            validate_only=bool(validate_only)), self.request_timeout_ms / 1000)

    async def describe_broker_configs(self, broker: int) -> dict[str, tuple[str | None, str, bool]]:
        """Every setting of ``broker``: name -> (value, source, read_only); source
        "dynamic_broker", "dynamic_default" (changed live), "broker" (its --config) or
        "default"; read_only for the settings that cannot change live."""
        self._check_open()
        await self._meta.refresh()
        addr = self._meta.brokers.get(int(broker))
        if addr is None:
            raise errors.BrokerNotAvailableError(f"broker {broker} is not live")
        answer = await request(self._meta.conn.call, addr[0], addr[1], DescribeConfigsRequest(broker=str(broker)),
                               self.request_timeout_ms / 1000)
        return {c.name: (c.value, c.source, c.read_only) for c in answer.configs}

    async def alter_broker_configs(self, broker: int | None, set: dict[str, Any] | None = None,
                                   delete: Iterable[str] = (), validate_only: bool = False) -> None:
        """Set and delete dynamic broker configs of ``broker`` (None: the default of every
        broker), as kafka-configs.sh --entity-type brokers does; every broker concerned
        applies them at once."""
        self._check_open()
        await self._meta.request_any(AlterConfigsRequest(
            broker="" if broker is None else str(int(broker)), set={str(k): str(v) for k, v in (set or {}).items()},
            delete=[str(k) for k in delete], validate_only=bool(validate_only)), self.request_timeout_ms / 1000)

    # -- ACLs ------------------------------------------------------------------------
    async def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """Add ACLs (:class:`~minikafka.auth.acls.AclBinding`, e.g. ``AclBinding.make("Topic",
        "orders", "User:alice", "Read")``); needs Alter on the Cluster."""
        self._check_open()
        await self._meta.request_any(CreateAclsRequest(acls=[_rpc_binding(b) for b in bindings]),
                                     self.request_timeout_ms / 1000)

    async def describe_acls(self, **filter: str | None) -> list[AclBinding]:
        """The ACLs matching a filter by field (resource_type, resource_name, pattern_type
        -- "Match" for every rule that applies to resource_name --, principal, host,
        operation, permission); no field: every ACL.  Needs Describe on the Cluster."""
        self._check_open()
        answer = await self._meta.request_any(DescribeAclsRequest(filter=RpcAclFilter(**filter) if filter else None),
                                              self.request_timeout_ms / 1000)
        return [_binding(m) for m in answer.acls]

    async def delete_acls(self, **filter: str | None) -> list[AclBinding]:
        """Remove the ACLs matching a filter (fields as :meth:`describe_acls`); returns them."""
        self._check_open()
        answer = await self._meta.request_any(DeleteAclsRequest(filters=[RpcAclFilter(**filter)]),
                                              self.request_timeout_ms / 1000)
        return [_binding(m) for r in answer.results for m in r.acls]

    async def list_topics(self) -> list[str]:
        """Names of every topic, sorted."""
        self._check_open()
        await self._meta.refresh()
        return sorted(name for name, t in self._meta.topics.items() if not t.error_code)

    async def cluster(self) -> ClusterDescription:
        """Live brokers and the controller id, from fresh metadata."""
        self._check_open()
        await self._meta.refresh()
        return self._meta.describe_cluster()

    async def replica_states(self, partitions: Iterable[tuple[str, int]] | None = None,
                             checksum_upto: dict[tuple[str, int], int] | None = None
                             ) -> dict[int, ReplicaStateResponse | Exception]:
        """The ``replica_state`` answer of every live broker (an exception for those that failed).

        ``checksum_upto`` asks each replica for a CRC-32 of its log below the given offset per
        partition, so replicas can be compared (equal checksums: identical batches)."""
        self._check_open()
        if checksum_upto and partitions is None:
            partitions = list(checksum_upto)
        req = ReplicaStateRequest(partitions=None if partitions is None else [
            ReplicaStatePartition(topic=t, partition=p, checksum_upto=(checksum_upto or {}).get((t, p)))
            for t, p in partitions])
        brokers = dict(self._meta.brokers)
        timeout_s = min(self.request_timeout_ms, INTROSPECTION_TIMEOUT_MS) / 1000
        answers = await asyncio.gather(*(request(self._conn.call, h, p, req, timeout_s) for h, p in brokers.values()),
                                       return_exceptions=True)
        out: dict[int, ReplicaStateResponse | Exception] = {}
        for broker_id, answer in zip(brokers, answers):
            if isinstance(answer, BaseException) and not isinstance(answer, Exception):
                raise answer
            out[broker_id] = answer
        return out

    async def describe_topics(self, topics: Iterable[str] | None = None, checksums: bool = False) -> list[TopicDescription]:
        """Describe ``topics`` (every topic when None), sorted by name.

        With ``checksums`` each replica also reports a CRC-32 of its log below the leader's
        HW (``replica_checksums``, ``checksum_upto``): replicas agree when the values are equal.
        A named topic that does not exist raises UNKNOWN_TOPIC_OR_PARTITION.

        The ISR and leader epoch are the leader's own (it writes ISR changes itself) when
        it answers as leader at the epoch the metadata names or a newer one; otherwise
        the metadata's, which follow the controller's UpdateMetadata.
        """
        self._check_open()
        await self._meta.refresh()
        if topics is None:
            names = sorted(self._meta.topics)
        else:
            names = [topics] if isinstance(topics, str) else list(topics)
            for name in names:
                t = self._meta.topics.get(name)
                if t is None:
                    raise errors.UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        tps = [(name, p) for name in names for p in self._meta.topics[name].partition_ids]
        states = await self.replica_states(None if topics is None else tps) if tps else {}
        reported: dict[tuple[str, int], dict[int, ReplicaState]] = {}
        for broker_id, answer in states.items():
            if isinstance(answer, Exception):
                continue
            for r in answer.replicas:
                reported.setdefault((r.topic, r.partition), {})[answer.broker_id] = r
        sums: dict[tuple[str, int], dict[int, int]] = {}
        bounds: dict[tuple[str, int], int] = {}
        if checksums and tps:
            for tp in tps:
                lead = self._meta.topics[tp[0]].partitions[tp[1]].leader
                lead_state = reported.get(tp, {}).get(lead)
                if lead_state is not None and lead_state.high_watermark >= 0:
                    bounds[tp] = lead_state.high_watermark
            if bounds:
                for broker_id, answer in (await self.replica_states(list(bounds), checksum_upto=bounds)).items():
                    if isinstance(answer, Exception):
                        continue
                    for r in answer.replicas:
                        if r.checksum is not None:
                            sums.setdefault((r.topic, r.partition), {})[answer.broker_id] = r.checksum
        out: list[TopicDescription] = []
        for name in names:
            info = self._meta.topics[name]
            parts: list[PartitionDescription] = []
            for pid in info.partition_ids:
                pi = info.partitions[pid]
                rep = reported.get((name, pid), {})
                leader_state = rep.get(pi.leader) if pi.leader >= 0 else None
                ids = list(pi.replicas)
                isr, leader_epoch = list(pi.isr), pi.leader_epoch
                if leader_state and leader_state.role == "leader" and leader_state.leader_epoch >= leader_epoch:
                    # The leader owns the ISR: it writes shrinks and expansions itself, and
                    # the metadata lags behind until the controller passes them on (not at
                    # all while the controller is frozen).
                    isr, leader_epoch = list(leader_state.isr), leader_state.leader_epoch
                parts.append(PartitionDescription(
                    topic=name,
                    partition=pid,
                    leader=pi.leader,
                    leader_epoch=leader_epoch,
                    replicas=list(pi.replicas),
                    isr=isr,
                    offline_replicas=list(pi.offline_replicas),
                    high_watermark=leader_state.high_watermark if leader_state else -1,
                    last_stable_offset=leader_state.last_stable_offset if leader_state else -1,
                    ongoing_transactions=[{"producer_id": t.producer_id, "first_offset": t.first_offset}
                                          for t in leader_state.ongoing_transactions] if leader_state else [],
                    log_start_offset=leader_state.log_start_offset if leader_state else -1,
                    log_end_offset=leader_state.log_end_offset if leader_state else -1,
                    replica_leos={b: rep[b].log_end_offset if b in rep else -1 for b in ids},
                    replica_hws={b: rep[b].high_watermark if b in rep else -1 for b in ids},
                    replica_log_starts={b: rep[b].log_start_offset if b in rep else -1 for b in ids},
                    size_bytes=leader_state.size_bytes if leader_state else -1,
                    segments=leader_state.segments if leader_state else -1,
                    error=errors.error_name(pi.error_code),
                    checksum_upto=bounds.get((name, pid), -1),
                    replica_checksums=dict(sums.get((name, pid), {})),
                    producers=[dataclasses.asdict(x) for x in leader_state.producers] if leader_state else [],
                ))
            out.append(TopicDescription(name, parts, errors.error_name(info.error_code), info.topic_id))
        return out

    def _check_open(self) -> None:
        if self._closed:
            raise errors.ClientError("the admin client is closed")
        if not self._started:
            raise errors.ClientError("the admin client is not started")

    @property
    def metadata(self) -> Metadata:
        return self._meta


def _config_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _binding(m: RpcAclBinding) -> AclBinding:
    return AclBinding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation, m.permission)


def _rpc_binding(b: AclBinding) -> RpcAclBinding:
    return RpcAclBinding(resource_type=b.resource_type, resource_name=b.resource_name, pattern_type=b.pattern_type,
                         principal=b.principal, host=b.host, operation=b.operation, permission=b.permission)
