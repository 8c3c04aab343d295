"""The request layer's table: every msgpack API name to its one handler."""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from ...protocol.rpc.messages import APIS
from ...protocol.rpc.types import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
)
from .acls import AclApis
from .admin import AdminApis
from .cluster import ClusterApis
from .context import RequestContext
from .control import ControlApis
from .data import DataApis
from .groups import GroupApis
from .transactions import TransactionApis

Handler = Callable[[Any, RequestContext], Awaitable[Any]]


class RequestLayer:
    """One broker's handlers, by area (:mod:`minikafka.broker.apis`), and by API name."""

    def __init__(self, data: DataApis, cluster: ClusterApis, admin: AdminApis, control: ControlApis,
                 groups: GroupApis, acls: AclApis, txn: TransactionApis) -> None:
        self.data = data
        self.cluster = cluster
        self.admin = admin
        self.control = control
        self.groups = groups
        self.acls = acls
        self.txn = txn
        self.handlers: dict[str, Handler] = {
            "produce": data.produce, "fetch": data.fetch, "list_offsets": data.list_offsets,
            "offsets_for_leader_epoch": data.offsets_for_leader_epoch, "delete_records": data.delete_records,
            "init_producer_id": data.init_producer_id, "describe_log_dirs": data.describe_log_dirs,
            "write_txn_markers": data.write_txn_markers,
            "metadata": cluster.metadata_, "api_versions": cluster.api_versions, "events": cluster.events,
            "replica_state": cluster.replica_state_,
            "create_topics": admin.create_topics, "delete_topics": admin.delete_topics,
            "create_partitions": admin.create_partitions, "describe_configs": admin.describe_configs,
            "alter_configs": admin.alter_configs, "alter_partition_reassignments": admin.alter_partition_reassignments,
            "list_partition_reassignments": admin.list_partition_reassignments,
            "leader_and_isr": control.leader_and_isr, "update_metadata": control.update_metadata,
            "stop_replica": control.stop_replica, "controlled_shutdown": control.controlled_shutdown,
            "elect_leaders": control.elect_leaders,
            "find_coordinator": groups.find_coordinator, "join_group": groups.join_group,
            "sync_group": groups.sync_group, "heartbeat": groups.heartbeat, "leave_group": groups.leave_group,
            "offset_commit": groups.offset_commit, "offset_fetch": groups.offset_fetch,
            "list_groups": groups.list_groups, "describe_groups": groups.describe_groups,
            "delete_groups": groups.delete_groups, "offset_delete": groups.offset_delete,
            "create_acls": acls.create_acls, "describe_acls": acls.describe_acls, "delete_acls": acls.delete_acls,
            "txn_offset_commit": groups.txn_offset_commit,
        }
        # transactions: a transactional InitProducerId and FindCoordinator key_type 1 go to the
        # transaction coordinator
        self.handlers.update({
            "init_producer_id": self.init_producer_id, "find_coordinator": self.find_coordinator,
            "add_partitions_to_txn": txn.add_partitions_to_txn, "add_offsets_to_txn": txn.add_offsets_to_txn,
            "end_txn": txn.end_txn, "describe_transactions": txn.describe_transactions,
            "list_transactions": txn.list_transactions,
        })
        assert set(self.handlers) == set(APIS), set(APIS) ^ set(self.handlers)

    async def init_producer_id(self, req: InitProducerIdRequest, ctx: RequestContext) -> InitProducerIdResponse:
        """An idempotent producer's id from the data plane; a transactional one from the
        transaction coordinator of its id."""
        if req.transactional_id is None:
            return await self.data.init_producer_id(req, ctx)
        return await self.txn.init_producer_id(req, ctx)

    async def find_coordinator(self, req: FindCoordinatorRequest, ctx: RequestContext) -> FindCoordinatorResponse:
        """key_type 0: a group's coordinator; 1: a transactional id's."""
        if req.key_type == 1:
            return await self.txn.find_coordinator(req, ctx)
        return await self.groups.find_coordinator(req, ctx)
