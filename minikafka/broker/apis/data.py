"""Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch, DeleteRecords, InitProducerId,
DescribeLogDirs and WriteTxnMarkers."""
from __future__ import annotations

import dataclasses
import os

from ...auth.acls import CLUSTER_NAME
from ...errors import CoordinatorLoadInProgressError, InvalidRequestError, InvalidTopicExceptionError, KafkaError
from ...protocol.rpc.types import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    EpochEndOffset,
    FetchRequest,
    FetchResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    LogDir,
    LogDirPartition,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    ProducePartition,
    ProducePartitionResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from ...zk.errors import ZooKeeperUnavailableError
from ..producer_ids import ProducerIdManager
from ..replica_manager import ReplicaManager
from ..security import Security
from .access import merge, per_entry, split
from .context import RequestContext


class DataApis:
    """The data plane: records in and out of partition leaders.  Each partition a client
    may not use is answered its own error (TOPIC_AUTHORIZATION_FAILED, or
    INVALID_TOPIC_EXCEPTION for an internal topic), the others go to the replica manager."""

    def __init__(self, broker_id: int, replicas: ReplicaManager, producer_ids: ProducerIdManager,
                 security: Security) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.producer_ids = producer_ids
        self.security = security

    async def produce(self, req: ProduceRequest, ctx: RequestContext) -> ProduceResponse:
        """Append to the leaders; acks=-1 waits for the high watermark (the produce
        purgatory).  acks=0 is answered with no partitions (the Kafka listener sends no
        answer at all).  Only the broker itself writes internal topics (``__`` names: the
        coordinators call the replica manager); a client needs Write on the topic."""
        def refused(m: ProducePartition) -> KafkaError | None:
            if m.topic.startswith("__"):
                return InvalidTopicExceptionError(f"cannot append to internal topic {m.topic}")
            return self.security.refused(ctx, "Write", "Topic", m.topic)

        ok, refusals = split(req.partitions, refused)
        if not refusals:
            parts = await self.replicas.produce(req)
        else:
            answered = await self.replicas.produce(dataclasses.replace(req, partitions=ok)) if ok else []
            parts = merge(req.partitions, refusals, answered, lambda m, e: ProducePartitionResponse(
                topic=m.topic, partition=m.partition, base_offset=-1, log_append_time=-1, log_start_offset=-1,
                error=e))
        return ProduceResponse(partitions=[] if req.acks == 0 else parts)

    async def fetch(self, req: FetchRequest, ctx: RequestContext) -> FetchResponse:
        """Read from the leaders, waiting in the fetch purgatory for min_bytes or max_wait_ms.
        replica_id >= 0 is a follower (the msgpack listener lets only holders of the cluster
        credential send one, always allowed).  Read on the topic is checked before every
        read of a partition, those an incremental fetch session holds too."""
        if not self.security.enabled:
            return await self.replicas.fetch(req)

        def may_read(topic: str) -> None:
            self.security.require(ctx, "Read", "Topic", topic)
        return await self.replicas.fetch(req, may_read)

    async def list_offsets(self, req: ListOffsetsRequest, ctx: RequestContext) -> ListOffsetsResponse:
        """Needs Describe on each partition's topic."""
        return ListOffsetsResponse(partitions=per_entry(
            req.partitions, lambda m: self.security.refused(ctx, "Describe", "Topic", m.topic),
            lambda ok: self.replicas.list_offsets(dataclasses.replace(req, partitions=ok)),
            lambda m, e: ListOffsetsPartitionResponse(topic=m.topic, partition=m.partition, offset=-1, timestamp=-1,
                                                      leader_epoch=-1, error=e)))

    async def offsets_for_leader_epoch(self, req: OffsetsForLeaderEpochRequest,
                                       ctx: RequestContext) -> OffsetsForLeaderEpochResponse:
        """Needs Describe on each partition's topic."""
        return OffsetsForLeaderEpochResponse(partitions=per_entry(
            req.partitions, lambda m: self.security.refused(ctx, "Describe", "Topic", m.topic),
            lambda ok: self.replicas.offsets_for_leader_epoch(dataclasses.replace(req, partitions=ok)),
            lambda m, e: EpochEndOffset(topic=m.topic, partition=m.partition, leader_epoch=-1, end_offset=-1,
                                        error=e)))

    async def delete_records(self, req: DeleteRecordsRequest, ctx: RequestContext) -> DeleteRecordsResponse:
        """Needs Delete on each partition's topic; internal topics are refused
        INVALID_TOPIC_EXCEPTION."""
        def refused(m: DeleteRecordsPartition) -> KafkaError | None:
            if m.topic.startswith("__"):
                return InvalidTopicExceptionError(f"cannot delete records of internal topic {m.topic}")
            return self.security.refused(ctx, "Delete", "Topic", m.topic)

        ok, refusals = split(req.partitions, refused)
        if not refusals:
            return DeleteRecordsResponse(partitions=await self.replicas.delete_records(req))
        answered = await self.replicas.delete_records(dataclasses.replace(req, partitions=ok)) if ok else []
        return DeleteRecordsResponse(partitions=merge(req.partitions, refusals, answered, lambda m, e: (
            DeleteRecordsPartitionResult(topic=m.topic, partition=m.partition, low_watermark=-1, error=e))))

    async def init_producer_id(self, req: InitProducerIdRequest, ctx: RequestContext) -> InitProducerIdResponse:
        """A new producer id with epoch 0 for an idempotent producer (the request layer
        sends transactional ones to the transaction coordinator)."""
        if req.transactional_id is not None:
            raise InvalidRequestError("a transactional id is served by its transaction coordinator")
        try:
            pid = await self.producer_ids.generate()
        except ZooKeeperUnavailableError as exc:
            raise CoordinatorLoadInProgressError(
                f"broker {self.broker_id} has no producer ids left and ZooKeeper, which hands out the next block, "
                f"does not answer ({exc}); try again") from None
        return InitProducerIdResponse(producer_id=pid, producer_epoch=0)

    async def write_txn_markers(self, req: WriteTxnMarkersRequest, ctx: RequestContext) -> WriteTxnMarkersResponse:
        """The transaction coordinator's COMMIT and ABORT markers, appended by the leaders
        here (the listener lets only holders of the cluster credential send them)."""
        return WriteTxnMarkersResponse(markers=await self.replicas.write_txn_markers(req))

    async def describe_log_dirs(self, req: DescribeLogDirsRequest, ctx: RequestContext) -> DescribeLogDirsResponse:
        """The broker's one log directory and its local replicas' sizes (Describe on the
        cluster, as in Kafka); with in-memory storage the directory is named ``memory``."""
        self.security.require(ctx, "Describe", "Cluster", CLUSTER_NAME)
        rm = self.replicas
        wanted = {(x.topic, x.partition) for x in req.partitions} if req.partitions is not None else None
        parts = [LogDirPartition(topic=t, partition=p, size=r.log.size_bytes,
                                 offset_lag=max(0, r.high_watermark - r.log_end_offset))
                 for (t, p), r in sorted(rm.partitions.items()) if wanted is None or (t, p) in wanted]
        if rm.config.storage == "disk":
            path = os.path.abspath(rm.config.data_dir)
            try:
                st = os.statvfs(path)
                total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            except OSError:
                total = usable = -1
        else:
            path, total, usable = "memory", -1, -1
        return DescribeLogDirsResponse(log_dirs=[LogDir(log_dir=path, total_bytes=total, usable_bytes=usable,
                                                        partitions=parts)])
