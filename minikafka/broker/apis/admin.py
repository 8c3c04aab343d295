"""CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
AlterPartitionReassignments and ListPartitionReassignments: each a thin step onto
:class:`~..topic_admin.TopicAdmin`."""
from __future__ import annotations

from typing import Awaitable, Callable

from ...errors import InvalidRequestError, KafkaError, UnknownTopicIdError
from ...protocol.topic_ids import ZERO_TOPIC_ID, is_topic_id
from ...protocol.rpc.types import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ConfigEntry,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
    OngoingReassignment,
    ReassignablePartitionResponse,
)
from ..topic_admin import CONFIG_SOURCE_NAMES, ConfigEntry as SettingEntry, NewTopic, TopicAdmin
from .context import RequestContext


def changes(set_: dict[str, str], delete: list[str]) -> Callable[[dict], dict]:
    """``current -> new`` overrides: ``delete`` removed, then ``set_`` applied
    (INVALID_REQUEST when a name is both set and deleted)."""
    overlap = set(set_) & set(delete)
    if overlap:
        raise InvalidRequestError(f"configs both set and deleted: {', '.join(sorted(overlap))}")

    def change(current: dict) -> dict:
        new = {k: v for k, v in current.items() if k not in delete}
        new.update(set_)
        return new
    return change


class AdminApis:
    """Topic administration, the same for both listeners."""

    def __init__(self, topic_admin: TopicAdmin, load_broker_configs: Callable[[], Awaitable[None]] | None = None) -> None:
        """``load_broker_configs()`` re-reads this broker's dynamic configs from ZooKeeper
        and applies them: after an AlterConfigs of broker settings and before a
        DescribeConfigs of them, so the answer shows the change without waiting for the
        /config/changes watch."""
        self.topic_admin = topic_admin
        self.load_broker_configs = load_broker_configs

    async def create_topics(self, req: CreateTopicsRequest, ctx: RequestContext) -> CreateTopicsResponse:
        topics = [NewTopic(t.name, t.num_partitions, t.replication_factor, t.config, t.assignment) for t in req.topics]
        ids: list[str] = []
        errors = await self.topic_admin.create_topics(topics, req.validate_only, req.timeout_ms, ids=ids)
        return CreateTopicsResponse(topics=[CreatableTopicResult(name=t.name, topic_id=i, error=e)
                                            for t, e, i in zip(topics, errors, ids)])

    async def delete_topics(self, req: DeleteTopicsRequest, ctx: RequestContext) -> DeleteTopicsResponse:
        """Topics by name, then topics by id (KIP-516, DeleteTopics v6): an id is resolved
        through this broker's metadata (an id no topic has is UNKNOWN_TOPIC_ID, a
        malformed one INVALID_REQUEST) and answered with the topic's name."""
        by_id: list[tuple[str, str | None, KafkaError | None]] = []
        for topic_id in req.topic_ids:
            if not is_topic_id(topic_id) or topic_id == ZERO_TOPIC_ID:
                by_id.append((topic_id, None, InvalidRequestError(f"{topic_id!r} is not a topic id")))
                continue
            name = self.topic_admin.metadata.topic_name(topic_id)
            by_id.append((topic_id, name, None if name is not None else UnknownTopicIdError(
                f"no topic has the id {topic_id}")))
        names = list(req.topics) + [n for _, n, e in by_id if e is None and n is not None]
        errors = await self.topic_admin.delete_topics(names, req.timeout_ms)
        results = [DeletableTopicResult(name=n, error=e) for n, e in zip(req.topics, errors)]
        resolved = iter(errors[len(req.topics):])
        for topic_id, name, err in by_id:
            results.append(DeletableTopicResult(name=name or "", topic_id=topic_id,
                                                error=err if err is not None else next(resolved)))
        return DeleteTopicsResponse(topics=results)

    async def create_partitions(self, req: CreatePartitionsRequest, ctx: RequestContext) -> CreatePartitionsResponse:
        added = await self.topic_admin.create_partitions(req.topic, req.count, req.assignments, req.validate_only)
        if added and not req.validate_only and req.timeout_ms > 0:
            await self.topic_admin.wait_led(req.topic, req.count, req.timeout_ms)
        return CreatePartitionsResponse(partitions=added)

    async def describe_configs(self, req: DescribeConfigsRequest, ctx: RequestContext) -> DescribeConfigsResponse:
        entries = await self.settings(req.topic, req.broker)
        return DescribeConfigsResponse(configs=[ConfigEntry(
            name=e.name, value=e.value, source=CONFIG_SOURCE_NAMES[e.source], documentation=e.documentation,
            read_only=e.read_only, is_sensitive=e.is_sensitive) for e in entries])

    async def settings(self, topic: str | None, broker: str | None) -> list[SettingEntry]:
        """A topic's settings or a broker's (give exactly one), as DescribeConfigs lists them."""
        if (topic is None) == (broker is None):
            raise InvalidRequestError("give either topic or broker")
        if topic is not None:
            return await self.topic_admin.describe_topic(topic)
        assert broker is not None
        self.topic_admin.check_broker_name(broker)
        if self.load_broker_configs is not None:
            await self.load_broker_configs()
        return self.topic_admin.describe_broker(broker)

    async def alter_configs(self, req: AlterConfigsRequest, ctx: RequestContext) -> AlterConfigsResponse:
        await self.alter(req.topic, req.broker, changes(req.set, req.delete), req.validate_only)
        return AlterConfigsResponse()

    async def alter(self, topic: str | None, broker: str | None, change: Callable[[dict], dict],
                    validate_only: bool) -> None:
        """Apply ``change(current) -> new`` to a topic's overrides or a broker's dynamic
        settings (give exactly one)."""
        if (topic is None) == (broker is None):
            raise InvalidRequestError("give either topic or broker")
        if topic is not None:
            await self.topic_admin.alter_topic(topic, change, validate_only)
        else:
            assert broker is not None
            await self.topic_admin.alter_broker(broker, change, validate_only)
            if not validate_only and self.load_broker_configs is not None:
                await self.load_broker_configs()

    async def alter_partition_reassignments(self, req: AlterPartitionReassignmentsRequest,
                                            ctx: RequestContext) -> AlterPartitionReassignmentsResponse:
        moves = [(m.topic, m.partition, list(m.replicas)) for m in req.partitions]
        errors = await self.topic_admin.reassign(moves)
        return AlterPartitionReassignmentsResponse(partitions=[
            ReassignablePartitionResponse(topic=t, partition=p, error=e) for (t, p, _), e in zip(moves, errors)])

    async def list_partition_reassignments(self, req: ListPartitionReassignmentsRequest,
                                           ctx: RequestContext) -> ListPartitionReassignmentsResponse:
        wanted = [(x.topic, x.partition) for x in req.partitions] if req.partitions is not None else None
        moving = await self.topic_admin.reassignments(wanted)
        return ListPartitionReassignmentsResponse(partitions=[
            OngoingReassignment(topic=t, partition=p, replicas=r, adding_replicas=a, removing_replicas=rm)
            for t, p, r, a, rm in moving])
