"""CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
AlterPartitionReassignments and ListPartitionReassignments: each checks the caller's
access, as Kafka does, then is a thin step onto :class:`~..topic_admin.TopicAdmin`."""
from __future__ import annotations

from typing import Awaitable, Callable

from ...auth.acls import CLUSTER_NAME
from ...errors import InvalidRequestError, InvalidTopicExceptionError, KafkaError, UnknownTopicIdError
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
from ...zk import layout
from ..security import Security, refusal
from ..topic_admin import CONFIG_SOURCE_NAMES, ConfigEntry as SettingEntry, NewTopic, TopicAdmin
from .access import merge, split
from .context import RequestContext


def creatable(security: Security, ctx: RequestContext, name: str) -> KafkaError | None:
    """Why the caller may not create topic ``name`` (None when it may), in Kafka's order: a
    malformed name, a reserved one (``__``: the cluster's internal topics, which only
    the broker itself creates), then Create on the topic or on the cluster."""
    try:
        layout.check_topic_name(name)
    except KafkaError as exc:
        return exc
    if name.startswith("__"):
        return InvalidTopicExceptionError(f"topic name {name!r} is reserved: names starting with '__' "
                                          "are the cluster's internal topics")
    if not security.allowed(ctx, "Create", "Topic", name, ("Cluster", CLUSTER_NAME)):
        return refusal(ctx, "Create", "Topic", name)
    return None


async def create_topics(topic_admin: TopicAdmin, security: Security, ctx: RequestContext, topics: list[NewTopic],
                        validate_only: bool, timeout_ms: int,
                        ids: list[str] | None = None) -> list[KafkaError | None]:
    """:meth:`TopicAdmin.create_topics` of the topics the caller may create (:func:`creatable`),
    the others answered their refusal (and the zero id in ``ids``)."""
    ok, refusals = split(topics, lambda t: creatable(security, ctx, t.name))
    got_ids: list[str] = []
    answered = await topic_admin.create_topics(ok, validate_only, timeout_ms, ids=got_ids) if ok else []
    if ids is not None:
        ids[:] = merge(topics, refusals, got_ids, lambda t, e: ZERO_TOPIC_ID)
    return merge(topics, refusals, answered, lambda t, e: e)


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

    def __init__(self, topic_admin: TopicAdmin, security: Security,
                 load_broker_configs: Callable[[], Awaitable[None]] | None = None) -> None:
        """``load_broker_configs()`` re-reads this broker's dynamic configs from ZooKeeper
        and applies them: after an AlterConfigs of broker settings and before a
        DescribeConfigs of them, so the answer shows the change without waiting for the
        /config/changes watch."""
        self.topic_admin = topic_admin
        self.security = security
        self.load_broker_configs = load_broker_configs

    async def create_topics(self, req: CreateTopicsRequest, ctx: RequestContext) -> CreateTopicsResponse:
        topics = [NewTopic(t.name, t.num_partitions, t.replication_factor, t.config, t.assignment) for t in req.topics]
        ids: list[str] = []
        errors = await create_topics(self.topic_admin, self.security, ctx, topics, req.validate_only, req.timeout_ms,
                                     ids)
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
        errors = await self.delete(names, req.timeout_ms, ctx)
        results = [DeletableTopicResult(name=n, error=e) for n, e in zip(req.topics, errors)]
        resolved = iter(errors[len(req.topics):])
        for topic_id, name, err in by_id:
            results.append(DeletableTopicResult(name=name or "", topic_id=topic_id,
                                                error=err if err is not None else next(resolved)))
        return DeleteTopicsResponse(topics=results)

    async def delete(self, names: list[str], timeout_ms: int, ctx: RequestContext) -> list[KafkaError | None]:
        """Delete the topics: one error (or None) per name.  Delete on the topic is checked
        after what refuses it whoever asks (delete.topic.enable, an internal topic)."""
        def refused(name: str) -> KafkaError | None:
            try:
                self.topic_admin.check_deletable(name)
            except KafkaError as exc:
                return exc
            return self.security.refused(ctx, "Delete", "Topic", name)

        ok, refusals = split(names, refused)
        answered = await self.topic_admin.delete_topics(ok, timeout_ms) if ok else []
        return merge(names, refusals, answered, lambda n, e: e)

    async def create_partitions(self, req: CreatePartitionsRequest, ctx: RequestContext) -> CreatePartitionsResponse:
        """Needs Alter on the topic."""
        self.security.require(ctx, "Alter", "Topic", req.topic)
        added = await self.topic_admin.create_partitions(req.topic, req.count, req.assignments, req.validate_only)
        if added and not req.validate_only and req.timeout_ms > 0:
            await self.topic_admin.wait_led(req.topic, req.count, req.timeout_ms)
        return CreatePartitionsResponse(partitions=added)

    async def describe_configs(self, req: DescribeConfigsRequest, ctx: RequestContext) -> DescribeConfigsResponse:
        entries = await self.settings(req.topic, req.broker, ctx)
        return DescribeConfigsResponse(configs=[ConfigEntry(
            name=e.name, value=e.value, source=CONFIG_SOURCE_NAMES[e.source], documentation=e.documentation,
            read_only=e.read_only, is_sensitive=e.is_sensitive) for e in entries])

    async def settings(self, topic: str | None, broker: str | None, ctx: RequestContext) -> list[SettingEntry]:
        """A topic's settings or a broker's (give exactly one), as DescribeConfigs lists them
        (DescribeConfigs on the topic, or on the cluster)."""
        if (topic is None) == (broker is None):
            raise InvalidRequestError("give either topic or broker")
        if topic is not None:
            self.security.require(ctx, "DescribeConfigs", "Topic", topic)
            return await self.topic_admin.describe_topic(topic)
        assert broker is not None
        self.security.require(ctx, "DescribeConfigs", "Cluster", CLUSTER_NAME)
        self.topic_admin.check_broker_name(broker)
        if self.load_broker_configs is not None:
            await self.load_broker_configs()
        return self.topic_admin.describe_broker(broker)

    async def alter_configs(self, req: AlterConfigsRequest, ctx: RequestContext) -> AlterConfigsResponse:
        await self.alter(req.topic, req.broker, changes(req.set, req.delete), req.validate_only, ctx)
        return AlterConfigsResponse()

    async def alter(self, topic: str | None, broker: str | None, change: Callable[[dict], dict],
                    validate_only: bool, ctx: RequestContext) -> None:
        """Apply ``change(current) -> new`` to a topic's overrides or a broker's dynamic
        settings (give exactly one); AlterConfigs on the topic, or on the cluster."""
        if (topic is None) == (broker is None):
            raise InvalidRequestError("give either topic or broker")
        if topic is not None:
            self.security.require(ctx, "AlterConfigs", "Topic", topic)
            await self.topic_admin.alter_topic(topic, change, validate_only)
        else:
            assert broker is not None
            self.security.require(ctx, "AlterConfigs", "Cluster", CLUSTER_NAME)
            await self.topic_admin.alter_broker(broker, change, validate_only)
            if not validate_only and self.load_broker_configs is not None:
                await self.load_broker_configs()

    async def alter_partition_reassignments(self, req: AlterPartitionReassignmentsRequest,
                                            ctx: RequestContext) -> AlterPartitionReassignmentsResponse:
        self.security.require(ctx, "Alter", "Cluster", CLUSTER_NAME)
        moves = [(m.topic, m.partition, list(m.replicas)) for m in req.partitions]
        errors = await self.topic_admin.reassign(moves)
        return AlterPartitionReassignmentsResponse(partitions=[
            ReassignablePartitionResponse(topic=t, partition=p, error=e) for (t, p, _), e in zip(moves, errors)])

    async def list_partition_reassignments(self, req: ListPartitionReassignmentsRequest,
                                           ctx: RequestContext) -> ListPartitionReassignmentsResponse:
        self.security.require(ctx, "Describe", "Cluster", CLUSTER_NAME)
        wanted = [(x.topic, x.partition) for x in req.partitions] if req.partitions is not None else None
        moving = await self.topic_admin.reassignments(wanted)
        return ListPartitionReassignmentsResponse(partitions=[
            OngoingReassignment(topic=t, partition=p, replicas=r, adding_replicas=a, removing_replicas=rm)
            for t, p, r, a, rm in moving])
