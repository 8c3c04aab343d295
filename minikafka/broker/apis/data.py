"""Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch, DeleteRecords, InitProducerId,
DescribeLogDirs and WriteTxnMarkers."""
from __future__ import annotations

import os

from ...auth.acls import CLUSTER_NAME
from ...errors import CoordinatorLoadInProgressError, InvalidRequestError
from ...protocol.rpc.types import (
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    FetchRequest,
    FetchResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    LogDir,
    LogDirPartition,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
)
from ...zk.errors import ZooKeeperUnavailableError
from ..producer_ids import ProducerIdManager
from ..replica_manager import ReplicaManager
from .context import RequestContext


class DataApis:
    """The data plane: records in and out of partition leaders."""

    def __init__(self, broker_id: int, replicas: ReplicaManager, producer_ids: ProducerIdManager) -> None:
        self.broker_id = broker_id
        self.replicas = replicas
        self.producer_ids = producer_ids

    async def produce(self, req: ProduceRequest, ctx: RequestContext) -> ProduceResponse:
        """Append to the leaders; acks=-1 waits for the high watermark (the produce
        purgatory).  acks=0 is answered with no partitions (the Kafka listener sends no
        answer at all)."""
        parts = await self.replicas.produce(req)
        return ProduceResponse(partitions=[] if req.acks == 0 else parts)

    async def fetch(self, req: FetchRequest, ctx: RequestContext) -> FetchResponse:
        """Read from the leaders, waiting in the fetch purgatory for min_bytes or max_wait_ms.
        replica_id >= 0 is a follower (the msgpack listener lets only holders of the cluster
        credential send one)."""
        return await self.replicas.fetch(req)

    async def list_offsets(self, req: ListOffsetsRequest, ctx: RequestContext) -> ListOffsetsResponse:
        return ListOffsetsResponse(partitions=self.replicas.list_offsets(req))

    async def offsets_for_leader_epoch(self, req: OffsetsForLeaderEpochRequest,
                                       ctx: RequestContext) -> OffsetsForLeaderEpochResponse:
        return OffsetsForLeaderEpochResponse(partitions=self.replicas.offsets_for_leader_epoch(req))

    async def delete_records(self, req: DeleteRecordsRequest, ctx: RequestContext) -> DeleteRecordsResponse:
        return DeleteRecordsResponse(partitions=await self.replicas.delete_records(req))

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
        rm = self.replicas
        rm.security.require("Describe", "Cluster", CLUSTER_NAME)
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
