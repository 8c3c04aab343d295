"""The request layer's typed messages: one dataclass per request and response of the
msgpack API, with the functions that build them from validated maps and turn them back.

Generated from :mod:`minikafka.protocol.rpc.messages` by
``python -m minikafka.protocol.rpc.gen_types``; do not edit by hand.
"""
# fmt: off
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Generic, TypeVar

from ...errors import KafkaError, error_class

R = TypeVar("R")


class Request(Generic[R]):
    """A request of the msgpack API whose answer decodes to an ``R`` (its response
    dataclass); ``API`` is its name in ``POST /v1/<api>``.  ``minikafka.rpc.request``
    sends one and returns the typed answer."""
    __slots__ = ()
    API: ClassVar[str]


def _error_of(m: dict) -> KafkaError | None:
    code = m.get("error_code", 0)
    return None if not code else error_class(m["error"])(m.get("message", ""))


def _error_fields(exc: KafkaError | None) -> dict:
    if exc is None:
        return {"error_code": 0, "error": "NONE", "message": ""}
    return {"error_code": exc.code.code, "error": exc.code.name, "message": exc.message}



@dataclass(slots=True, kw_only=True)
class MetadataRequest(Request['MetadataResponse']):
    """The msgpack API's MetadataRequest."""
    API: ClassVar[str] = 'metadata'
    topics: list[str] | None = None
    allow_auto_topic_creation: bool = False


def decode_MetadataRequest(m: dict) -> MetadataRequest:
    return MetadataRequest(topics=m['topics'], allow_auto_topic_creation=m['allow_auto_topic_creation'])


def encode_MetadataRequest(o: MetadataRequest) -> dict:
    return {'topics': o.topics, 'allow_auto_topic_creation': o.allow_auto_topic_creation}


@dataclass(slots=True, kw_only=True)
class Broker:
    """The msgpack API's Broker."""
    id: int
    host: str
    port: int


def decode_Broker(m: dict) -> Broker:
    return Broker(id=m['id'], host=m['host'], port=m['port'])


def encode_Broker(o: Broker) -> dict:
    return {'id': o.id, 'host': o.host, 'port': o.port}


@dataclass(slots=True, kw_only=True)
class PartitionMetadata:
    """The msgpack API's PartitionMetadata."""
    partition: int
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    offline_replicas: list[int]
    error: KafkaError | None = None


def decode_PartitionMetadata(m: dict) -> PartitionMetadata:
    return PartitionMetadata(partition=m['partition'], leader=m['leader'], leader_epoch=m['leader_epoch'], replicas=m['replicas'], isr=m['isr'], offline_replicas=m['offline_replicas'], error=_error_of(m))


def encode_PartitionMetadata(o: PartitionMetadata) -> dict:
    return {'partition': o.partition, 'leader': o.leader, 'leader_epoch': o.leader_epoch, 'replicas': o.replicas, 'isr': o.isr, 'offline_replicas': o.offline_replicas, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class TopicMetadata:
    """The msgpack API's TopicMetadata."""
    name: str
    topic_id: str = 'AAAAAAAAAAAAAAAAAAAAAA'
    partitions: list[PartitionMetadata]
    error: KafkaError | None = None


def decode_TopicMetadata(m: dict) -> TopicMetadata:
    return TopicMetadata(name=m['name'], topic_id=m['topic_id'], partitions=[decode_PartitionMetadata(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_TopicMetadata(o: TopicMetadata) -> dict:
    return {'name': o.name, 'topic_id': o.topic_id, 'partitions': [encode_PartitionMetadata(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class MetadataResponse:
    """The msgpack API's MetadataResponse."""
    cluster_id: str
    controller_id: int
    controller_epoch: int
    brokers: list[Broker]
    topics: list[TopicMetadata]
    error: KafkaError | None = None


def decode_MetadataResponse(m: dict) -> MetadataResponse:
    return MetadataResponse(cluster_id=m['cluster_id'], controller_id=m['controller_id'], controller_epoch=m['controller_epoch'], brokers=[decode_Broker(x0) for x0 in m['brokers']], topics=[decode_TopicMetadata(x0) for x0 in m['topics']], error=_error_of(m))


def encode_MetadataResponse(o: MetadataResponse) -> dict:
    return {'cluster_id': o.cluster_id, 'controller_id': o.controller_id, 'controller_epoch': o.controller_epoch, 'brokers': [encode_Broker(x0) for x0 in o.brokers], 'topics': [encode_TopicMetadata(x0) for x0 in o.topics], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ProducePartition:
    """The msgpack API's ProducePartition."""
    topic: str
    partition: int
    records: bytes


def decode_ProducePartition(m: dict) -> ProducePartition:
    return ProducePartition(topic=m['topic'], partition=m['partition'], records=m['records'])


def encode_ProducePartition(o: ProducePartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'records': o.records}


@dataclass(slots=True, kw_only=True)
class ProduceRequest(Request['ProduceResponse']):
    """The msgpack API's ProduceRequest."""
    API: ClassVar[str] = 'produce'
    acks: int
    timeout_ms: int = 30000
    partitions: list[ProducePartition]


def decode_ProduceRequest(m: dict) -> ProduceRequest:
    return ProduceRequest(acks=m['acks'], timeout_ms=m['timeout_ms'], partitions=[decode_ProducePartition(x0) for x0 in m['partitions']])


def encode_ProduceRequest(o: ProduceRequest) -> dict:
    return {'acks': o.acks, 'timeout_ms': o.timeout_ms, 'partitions': [encode_ProducePartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class ProducePartitionResponse:
    """The msgpack API's ProducePartitionResponse."""
    topic: str
    partition: int
    base_offset: int
    log_append_time: int
    log_start_offset: int
    error: KafkaError | None = None


def decode_ProducePartitionResponse(m: dict) -> ProducePartitionResponse:
    return ProducePartitionResponse(topic=m['topic'], partition=m['partition'], base_offset=m['base_offset'], log_append_time=m['log_append_time'], log_start_offset=m['log_start_offset'], error=_error_of(m))


def encode_ProducePartitionResponse(o: ProducePartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'base_offset': o.base_offset, 'log_append_time': o.log_append_time, 'log_start_offset': o.log_start_offset, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ProduceResponse:
    """The msgpack API's ProduceResponse."""
    partitions: list[ProducePartitionResponse]
    error: KafkaError | None = None


def decode_ProduceResponse(m: dict) -> ProduceResponse:
    return ProduceResponse(partitions=[decode_ProducePartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_ProduceResponse(o: ProduceResponse) -> dict:
    return {'partitions': [encode_ProducePartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class InitProducerIdRequest(Request['InitProducerIdResponse']):
    """The msgpack API's InitProducerIdRequest."""
    API: ClassVar[str] = 'init_producer_id'
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    producer_id: int = -1
    producer_epoch: int = -1


def decode_InitProducerIdRequest(m: dict) -> InitProducerIdRequest:
    return InitProducerIdRequest(transactional_id=m['transactional_id'], transaction_timeout_ms=m['transaction_timeout_ms'], producer_id=m['producer_id'], producer_epoch=m['producer_epoch'])


def encode_InitProducerIdRequest(o: InitProducerIdRequest) -> dict:
    return {'transactional_id': o.transactional_id, 'transaction_timeout_ms': o.transaction_timeout_ms, 'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch}


@dataclass(slots=True, kw_only=True)
class InitProducerIdResponse:
    """The msgpack API's InitProducerIdResponse."""
    producer_id: int
    producer_epoch: int
    error: KafkaError | None = None


def decode_InitProducerIdResponse(m: dict) -> InitProducerIdResponse:
    return InitProducerIdResponse(producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], error=_error_of(m))


def encode_InitProducerIdResponse(o: InitProducerIdResponse) -> dict:
    return {'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class FetchPartition:
    """The msgpack API's FetchPartition."""
    topic: str
    partition: int
    fetch_offset: int
    current_leader_epoch: int = -1
    partition_max_bytes: int = 1048576
    log_start_offset: int = -1
    high_watermark: int = -1


def decode_FetchPartition(m: dict) -> FetchPartition:
    return FetchPartition(topic=m['topic'], partition=m['partition'], fetch_offset=m['fetch_offset'], current_leader_epoch=m['current_leader_epoch'], partition_max_bytes=m['partition_max_bytes'], log_start_offset=m['log_start_offset'], high_watermark=m['high_watermark'])


def encode_FetchPartition(o: FetchPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'fetch_offset': o.fetch_offset, 'current_leader_epoch': o.current_leader_epoch, 'partition_max_bytes': o.partition_max_bytes, 'log_start_offset': o.log_start_offset, 'high_watermark': o.high_watermark}


@dataclass(slots=True, kw_only=True)
class FetchForgottenPartition:
    """The msgpack API's FetchForgottenPartition."""
    topic: str
    partition: int


def decode_FetchForgottenPartition(m: dict) -> FetchForgottenPartition:
    return FetchForgottenPartition(topic=m['topic'], partition=m['partition'])


def encode_FetchForgottenPartition(o: FetchForgottenPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition}


@dataclass(slots=True, kw_only=True)
class FetchRequest(Request['FetchResponse']):
    """The msgpack API's FetchRequest."""
    API: ClassVar[str] = 'fetch'
    replica_id: int = -1
    broker_epoch: int = -1
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 52428800
    isolation_level: int = 0
    partitions: list[FetchPartition]
    session_id: int = 0
    session_epoch: int = -1
    forgotten: list[FetchForgottenPartition] = field(default_factory=list)


def decode_FetchRequest(m: dict) -> FetchRequest:
    return FetchRequest(replica_id=m['replica_id'], broker_epoch=m['broker_epoch'], max_wait_ms=m['max_wait_ms'], min_bytes=m['min_bytes'], max_bytes=m['max_bytes'], isolation_level=m['isolation_level'], partitions=[decode_FetchPartition(x0) for x0 in m['partitions']], session_id=m['session_id'], session_epoch=m['session_epoch'], forgotten=[decode_FetchForgottenPartition(x0) for x0 in m['forgotten']])


def encode_FetchRequest(o: FetchRequest) -> dict:
    return {'replica_id': o.replica_id, 'broker_epoch': o.broker_epoch, 'max_wait_ms': o.max_wait_ms, 'min_bytes': o.min_bytes, 'max_bytes': o.max_bytes, 'isolation_level': o.isolation_level, 'partitions': [encode_FetchPartition(x0) for x0 in o.partitions], 'session_id': o.session_id, 'session_epoch': o.session_epoch, 'forgotten': [encode_FetchForgottenPartition(x0) for x0 in o.forgotten]}


@dataclass(slots=True, kw_only=True)
class AbortedTransaction:
    """The msgpack API's AbortedTransaction."""
    producer_id: int
    first_offset: int


def decode_AbortedTransaction(m: dict) -> AbortedTransaction:
    return AbortedTransaction(producer_id=m['producer_id'], first_offset=m['first_offset'])


def encode_AbortedTransaction(o: AbortedTransaction) -> dict:
    return {'producer_id': o.producer_id, 'first_offset': o.first_offset}


@dataclass(slots=True, kw_only=True)
class FetchPartitionResponse:
    """The msgpack API's FetchPartitionResponse."""
    topic: str
    partition: int
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    leader_epoch: int
    last_stable_offset: int = -1
    aborted_transactions: list[AbortedTransaction] | None = None
    records: bytes
    error: KafkaError | None = None


def decode_FetchPartitionResponse(m: dict) -> FetchPartitionResponse:
    return FetchPartitionResponse(topic=m['topic'], partition=m['partition'], high_watermark=m['high_watermark'], log_start_offset=m['log_start_offset'], log_end_offset=m['log_end_offset'], leader_epoch=m['leader_epoch'], last_stable_offset=m['last_stable_offset'], aborted_transactions=None if m['aborted_transactions'] is None else [decode_AbortedTransaction(x0) for x0 in m['aborted_transactions']], records=m['records'], error=_error_of(m))


def encode_FetchPartitionResponse(o: FetchPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'high_watermark': o.high_watermark, 'log_start_offset': o.log_start_offset, 'log_end_offset': o.log_end_offset, 'leader_epoch': o.leader_epoch, 'last_stable_offset': o.last_stable_offset, 'aborted_transactions': None if o.aborted_transactions is None else [encode_AbortedTransaction(x0) for x0 in o.aborted_transactions], 'records': o.records, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class FetchResponse:
    """The msgpack API's FetchResponse."""
    session_id: int = 0
    partitions: list[FetchPartitionResponse]
    error: KafkaError | None = None


def decode_FetchResponse(m: dict) -> FetchResponse:
    return FetchResponse(session_id=m['session_id'], partitions=[decode_FetchPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_FetchResponse(o: FetchResponse) -> dict:
    return {'session_id': o.session_id, 'partitions': [encode_FetchPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ListOffsetsPartition:
    """The msgpack API's ListOffsetsPartition."""
    topic: str
    partition: int
    timestamp: int
    current_leader_epoch: int = -1


def decode_ListOffsetsPartition(m: dict) -> ListOffsetsPartition:
    return ListOffsetsPartition(topic=m['topic'], partition=m['partition'], timestamp=m['timestamp'], current_leader_epoch=m['current_leader_epoch'])


def encode_ListOffsetsPartition(o: ListOffsetsPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'timestamp': o.timestamp, 'current_leader_epoch': o.current_leader_epoch}


@dataclass(slots=True, kw_only=True)
class ListOffsetsRequest(Request['ListOffsetsResponse']):
    """The msgpack API's ListOffsetsRequest."""
    API: ClassVar[str] = 'list_offsets'
    replica_id: int = -1
    isolation_level: int = 0
    partitions: list[ListOffsetsPartition]


def decode_ListOffsetsRequest(m: dict) -> ListOffsetsRequest:
    return ListOffsetsRequest(replica_id=m['replica_id'], isolation_level=m['isolation_level'], partitions=[decode_ListOffsetsPartition(x0) for x0 in m['partitions']])


def encode_ListOffsetsRequest(o: ListOffsetsRequest) -> dict:
    return {'replica_id': o.replica_id, 'isolation_level': o.isolation_level, 'partitions': [encode_ListOffsetsPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class ListOffsetsPartitionResponse:
    """The msgpack API's ListOffsetsPartitionResponse."""
    topic: str
    partition: int
    offset: int
    timestamp: int
    leader_epoch: int
    error: KafkaError | None = None


def decode_ListOffsetsPartitionResponse(m: dict) -> ListOffsetsPartitionResponse:
    return ListOffsetsPartitionResponse(topic=m['topic'], partition=m['partition'], offset=m['offset'], timestamp=m['timestamp'], leader_epoch=m['leader_epoch'], error=_error_of(m))


def encode_ListOffsetsPartitionResponse(o: ListOffsetsPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'offset': o.offset, 'timestamp': o.timestamp, 'leader_epoch': o.leader_epoch, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ListOffsetsResponse:
    """The msgpack API's ListOffsetsResponse."""
    partitions: list[ListOffsetsPartitionResponse]
    error: KafkaError | None = None


def decode_ListOffsetsResponse(m: dict) -> ListOffsetsResponse:
    return ListOffsetsResponse(partitions=[decode_ListOffsetsPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_ListOffsetsResponse(o: ListOffsetsResponse) -> dict:
    return {'partitions': [encode_ListOffsetsPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class CreatableTopic:
    """The msgpack API's CreatableTopic."""
    name: str
    num_partitions: int
    replication_factor: int
    config: dict[str, str] = field(default_factory=dict)
    assignment: dict[str, list[int]] | None = None


def decode_CreatableTopic(m: dict) -> CreatableTopic:
    return CreatableTopic(name=m['name'], num_partitions=m['num_partitions'], replication_factor=m['replication_factor'], config=m['config'], assignment=m['assignment'])


def encode_CreatableTopic(o: CreatableTopic) -> dict:
    return {'name': o.name, 'num_partitions': o.num_partitions, 'replication_factor': o.replication_factor, 'config': o.config, 'assignment': o.assignment}


@dataclass(slots=True, kw_only=True)
class CreateTopicsRequest(Request['CreateTopicsResponse']):
    """The msgpack API's CreateTopicsRequest."""
    API: ClassVar[str] = 'create_topics'
    topics: list[CreatableTopic]
    timeout_ms: int = 30000
    validate_only: bool = False


def decode_CreateTopicsRequest(m: dict) -> CreateTopicsRequest:
    return CreateTopicsRequest(topics=[decode_CreatableTopic(x0) for x0 in m['topics']], timeout_ms=m['timeout_ms'], validate_only=m['validate_only'])


def encode_CreateTopicsRequest(o: CreateTopicsRequest) -> dict:
    return {'topics': [encode_CreatableTopic(x0) for x0 in o.topics], 'timeout_ms': o.timeout_ms, 'validate_only': o.validate_only}


@dataclass(slots=True, kw_only=True)
class CreatableTopicResult:
    """The msgpack API's CreatableTopicResult."""
    name: str
    topic_id: str = 'AAAAAAAAAAAAAAAAAAAAAA'
    error: KafkaError | None = None


def decode_CreatableTopicResult(m: dict) -> CreatableTopicResult:
    return CreatableTopicResult(name=m['name'], topic_id=m['topic_id'], error=_error_of(m))


def encode_CreatableTopicResult(o: CreatableTopicResult) -> dict:
    return {'name': o.name, 'topic_id': o.topic_id, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class CreateTopicsResponse:
    """The msgpack API's CreateTopicsResponse."""
    topics: list[CreatableTopicResult]
    error: KafkaError | None = None


def decode_CreateTopicsResponse(m: dict) -> CreateTopicsResponse:
    return CreateTopicsResponse(topics=[decode_CreatableTopicResult(x0) for x0 in m['topics']], error=_error_of(m))


def encode_CreateTopicsResponse(o: CreateTopicsResponse) -> dict:
    return {'topics': [encode_CreatableTopicResult(x0) for x0 in o.topics], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class PartitionState:
    """The msgpack API's PartitionState."""
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: list[int]
    zk_version: int
    replicas: list[int]
    is_new: bool = False
    topic_id: str = 'AAAAAAAAAAAAAAAAAAAAAA'


def decode_PartitionState(m: dict) -> PartitionState:
    return PartitionState(topic=m['topic'], partition=m['partition'], controller_epoch=m['controller_epoch'], leader=m['leader'], leader_epoch=m['leader_epoch'], isr=m['isr'], zk_version=m['zk_version'], replicas=m['replicas'], is_new=m['is_new'], topic_id=m['topic_id'])


def encode_PartitionState(o: PartitionState) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'controller_epoch': o.controller_epoch, 'leader': o.leader, 'leader_epoch': o.leader_epoch, 'isr': o.isr, 'zk_version': o.zk_version, 'replicas': o.replicas, 'is_new': o.is_new, 'topic_id': o.topic_id}


@dataclass(slots=True, kw_only=True)
class Endpoint:
    """The msgpack API's Endpoint."""
    host: str
    port: int


def decode_Endpoint(m: dict) -> Endpoint:
    return Endpoint(host=m['host'], port=m['port'])


def encode_Endpoint(o: Endpoint) -> dict:
    return {'host': o.host, 'port': o.port}


@dataclass(slots=True, kw_only=True)
class LiveBroker:
    """The msgpack API's LiveBroker."""
    id: int
    host: str
    port: int
    external: Endpoint | None = None
    kafka: Endpoint | None = None
    kafka_external: Endpoint | None = None


def decode_LiveBroker(m: dict) -> LiveBroker:
    return LiveBroker(id=m['id'], host=m['host'], port=m['port'], external=None if m['external'] is None else decode_Endpoint(m['external']), kafka=None if m['kafka'] is None else decode_Endpoint(m['kafka']), kafka_external=None if m['kafka_external'] is None else decode_Endpoint(m['kafka_external']))


def encode_LiveBroker(o: LiveBroker) -> dict:
    return {'id': o.id, 'host': o.host, 'port': o.port, 'external': None if o.external is None else encode_Endpoint(o.external), 'kafka': None if o.kafka is None else encode_Endpoint(o.kafka), 'kafka_external': None if o.kafka_external is None else encode_Endpoint(o.kafka_external)}


@dataclass(slots=True, kw_only=True)
class LeaderAndIsrRequest(Request['LeaderAndIsrResponse']):
    """The msgpack API's LeaderAndIsrRequest."""
    API: ClassVar[str] = 'leader_and_isr'
    controller_id: int
    controller_epoch: int
    broker_epoch: int = -1
    partition_states: list[PartitionState]
    live_leaders: list[LiveBroker]


def decode_LeaderAndIsrRequest(m: dict) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(controller_id=m['controller_id'], controller_epoch=m['controller_epoch'], broker_epoch=m['broker_epoch'], partition_states=[decode_PartitionState(x0) for x0 in m['partition_states']], live_leaders=[decode_LiveBroker(x0) for x0 in m['live_leaders']])


def encode_LeaderAndIsrRequest(o: LeaderAndIsrRequest) -> dict:
    return {'controller_id': o.controller_id, 'controller_epoch': o.controller_epoch, 'broker_epoch': o.broker_epoch, 'partition_states': [encode_PartitionState(x0) for x0 in o.partition_states], 'live_leaders': [encode_LiveBroker(x0) for x0 in o.live_leaders]}


@dataclass(slots=True, kw_only=True)
class LeaderAndIsrPartitionResponse:
    """The msgpack API's LeaderAndIsrPartitionResponse."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_LeaderAndIsrPartitionResponse(m: dict) -> LeaderAndIsrPartitionResponse:
    return LeaderAndIsrPartitionResponse(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_LeaderAndIsrPartitionResponse(o: LeaderAndIsrPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class LeaderAndIsrResponse:
    """The msgpack API's LeaderAndIsrResponse."""
    partitions: list[LeaderAndIsrPartitionResponse]
    error: KafkaError | None = None


def decode_LeaderAndIsrResponse(m: dict) -> LeaderAndIsrResponse:
    return LeaderAndIsrResponse(partitions=[decode_LeaderAndIsrPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_LeaderAndIsrResponse(o: LeaderAndIsrResponse) -> dict:
    return {'partitions': [encode_LeaderAndIsrPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class UpdateMetadataRequest(Request['UpdateMetadataResponse']):
    """The msgpack API's UpdateMetadataRequest."""
    API: ClassVar[str] = 'update_metadata'
    controller_id: int
    controller_epoch: int
    partition_states: list[PartitionState]
    live_brokers: list[LiveBroker]
    deleted_topics: list[str] = field(default_factory=list)


def decode_UpdateMetadataRequest(m: dict) -> UpdateMetadataRequest:
    return UpdateMetadataRequest(controller_id=m['controller_id'], controller_epoch=m['controller_epoch'], partition_states=[decode_PartitionState(x0) for x0 in m['partition_states']], live_brokers=[decode_LiveBroker(x0) for x0 in m['live_brokers']], deleted_topics=m['deleted_topics'])


def encode_UpdateMetadataRequest(o: UpdateMetadataRequest) -> dict:
    return {'controller_id': o.controller_id, 'controller_epoch': o.controller_epoch, 'partition_states': [encode_PartitionState(x0) for x0 in o.partition_states], 'live_brokers': [encode_LiveBroker(x0) for x0 in o.live_brokers], 'deleted_topics': o.deleted_topics}


@dataclass(slots=True, kw_only=True)
class UpdateMetadataResponse:
    """The msgpack API's UpdateMetadataResponse."""
    error: KafkaError | None = None


def decode_UpdateMetadataResponse(m: dict) -> UpdateMetadataResponse:
    return UpdateMetadataResponse(error=_error_of(m))


def encode_UpdateMetadataResponse(o: UpdateMetadataResponse) -> dict:
    return {**_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class TopicPartition:
    """The msgpack API's TopicPartition."""
    topic: str
    partition: int


def decode_TopicPartition(m: dict) -> TopicPartition:
    return TopicPartition(topic=m['topic'], partition=m['partition'])


def encode_TopicPartition(o: TopicPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition}


@dataclass(slots=True, kw_only=True)
class StopReplicaRequest(Request['StopReplicaResponse']):
    """The msgpack API's StopReplicaRequest."""
    API: ClassVar[str] = 'stop_replica'
    controller_id: int
    controller_epoch: int
    delete_partitions: bool = False
    partitions: list[TopicPartition]


def decode_StopReplicaRequest(m: dict) -> StopReplicaRequest:
    return StopReplicaRequest(controller_id=m['controller_id'], controller_epoch=m['controller_epoch'], delete_partitions=m['delete_partitions'], partitions=[decode_TopicPartition(x0) for x0 in m['partitions']])


def encode_StopReplicaRequest(o: StopReplicaRequest) -> dict:
    return {'controller_id': o.controller_id, 'controller_epoch': o.controller_epoch, 'delete_partitions': o.delete_partitions, 'partitions': [encode_TopicPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class StopReplicaPartitionResponse:
    """The msgpack API's StopReplicaPartitionResponse."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_StopReplicaPartitionResponse(m: dict) -> StopReplicaPartitionResponse:
    return StopReplicaPartitionResponse(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_StopReplicaPartitionResponse(o: StopReplicaPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class StopReplicaResponse:
    """The msgpack API's StopReplicaResponse."""
    partitions: list[StopReplicaPartitionResponse]
    error: KafkaError | None = None


def decode_StopReplicaResponse(m: dict) -> StopReplicaResponse:
    return StopReplicaResponse(partitions=[decode_StopReplicaPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_StopReplicaResponse(o: StopReplicaResponse) -> dict:
    return {'partitions': [encode_StopReplicaPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetForLeaderPartition:
    """The msgpack API's OffsetForLeaderPartition."""
    topic: str
    partition: int
    current_leader_epoch: int = -1
    leader_epoch: int


def decode_OffsetForLeaderPartition(m: dict) -> OffsetForLeaderPartition:
    return OffsetForLeaderPartition(topic=m['topic'], partition=m['partition'], current_leader_epoch=m['current_leader_epoch'], leader_epoch=m['leader_epoch'])


def encode_OffsetForLeaderPartition(o: OffsetForLeaderPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'current_leader_epoch': o.current_leader_epoch, 'leader_epoch': o.leader_epoch}


@dataclass(slots=True, kw_only=True)
class OffsetsForLeaderEpochRequest(Request['OffsetsForLeaderEpochResponse']):
    """The msgpack API's OffsetsForLeaderEpochRequest."""
    API: ClassVar[str] = 'offsets_for_leader_epoch'
    replica_id: int = -1
    partitions: list[OffsetForLeaderPartition]


def decode_OffsetsForLeaderEpochRequest(m: dict) -> OffsetsForLeaderEpochRequest:
    return OffsetsForLeaderEpochRequest(replica_id=m['replica_id'], partitions=[decode_OffsetForLeaderPartition(x0) for x0 in m['partitions']])


def encode_OffsetsForLeaderEpochRequest(o: OffsetsForLeaderEpochRequest) -> dict:
    return {'replica_id': o.replica_id, 'partitions': [encode_OffsetForLeaderPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class EpochEndOffset:
    """The msgpack API's EpochEndOffset."""
    topic: str
    partition: int
    leader_epoch: int
    end_offset: int
    error: KafkaError | None = None


def decode_EpochEndOffset(m: dict) -> EpochEndOffset:
    return EpochEndOffset(topic=m['topic'], partition=m['partition'], leader_epoch=m['leader_epoch'], end_offset=m['end_offset'], error=_error_of(m))


def encode_EpochEndOffset(o: EpochEndOffset) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'leader_epoch': o.leader_epoch, 'end_offset': o.end_offset, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetsForLeaderEpochResponse:
    """The msgpack API's OffsetsForLeaderEpochResponse."""
    partitions: list[EpochEndOffset]
    error: KafkaError | None = None


def decode_OffsetsForLeaderEpochResponse(m: dict) -> OffsetsForLeaderEpochResponse:
    return OffsetsForLeaderEpochResponse(partitions=[decode_EpochEndOffset(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_OffsetsForLeaderEpochResponse(o: OffsetsForLeaderEpochResponse) -> dict:
    return {'partitions': [encode_EpochEndOffset(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ReplicaStatePartition:
    """The msgpack API's ReplicaStatePartition."""
    topic: str
    partition: int
    checksum_upto: int | None = None


def decode_ReplicaStatePartition(m: dict) -> ReplicaStatePartition:
    return ReplicaStatePartition(topic=m['topic'], partition=m['partition'], checksum_upto=m['checksum_upto'])


def encode_ReplicaStatePartition(o: ReplicaStatePartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'checksum_upto': o.checksum_upto}


@dataclass(slots=True, kw_only=True)
class ReplicaStateRequest(Request['ReplicaStateResponse']):
    """The msgpack API's ReplicaStateRequest."""
    API: ClassVar[str] = 'replica_state'
    partitions: list[ReplicaStatePartition] | None = None
    checksum_upto: int | None = None


def decode_ReplicaStateRequest(m: dict) -> ReplicaStateRequest:
    return ReplicaStateRequest(partitions=None if m['partitions'] is None else [decode_ReplicaStatePartition(x0) for x0 in m['partitions']], checksum_upto=m['checksum_upto'])


def encode_ReplicaStateRequest(o: ReplicaStateRequest) -> dict:
    return {'partitions': None if o.partitions is None else [encode_ReplicaStatePartition(x0) for x0 in o.partitions], 'checksum_upto': o.checksum_upto}


@dataclass(slots=True, kw_only=True)
class ProducerState:
    """The msgpack API's ProducerState."""
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    last_timestamp: int


def decode_ProducerState(m: dict) -> ProducerState:
    return ProducerState(producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], last_sequence=m['last_sequence'], last_offset=m['last_offset'], last_timestamp=m['last_timestamp'])


def encode_ProducerState(o: ProducerState) -> dict:
    return {'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'last_sequence': o.last_sequence, 'last_offset': o.last_offset, 'last_timestamp': o.last_timestamp}


@dataclass(slots=True, kw_only=True)
class OngoingTransaction:
    """The msgpack API's OngoingTransaction."""
    producer_id: int
    first_offset: int


def decode_OngoingTransaction(m: dict) -> OngoingTransaction:
    return OngoingTransaction(producer_id=m['producer_id'], first_offset=m['first_offset'])


def encode_OngoingTransaction(o: OngoingTransaction) -> dict:
    return {'producer_id': o.producer_id, 'first_offset': o.first_offset}


@dataclass(slots=True, kw_only=True)
class ReplicaState:
    """The msgpack API's ReplicaState."""
    topic: str
    partition: int
    role: str
    leader: int
    leader_epoch: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    isr: list[int]
    replicas: list[int] = field(default_factory=list)
    remote_leos: dict[int, int]
    out_of_sync: list[int] = field(default_factory=list)
    epochs: list[list[int]]
    checksum: int | None
    checksum_upto: int | None = None
    size_bytes: int = 0
    segments: int = 1
    producers: list[ProducerState] = field(default_factory=list)
    fetched_records: int = 0
    fetched_bytes: int = 0
    last_stable_offset: int = -1
    ongoing_transactions: list[OngoingTransaction] = field(default_factory=list)
    aborted_transactions: int = 0


def decode_ReplicaState(m: dict) -> ReplicaState:
    return ReplicaState(topic=m['topic'], partition=m['partition'], role=m['role'], leader=m['leader'], leader_epoch=m['leader_epoch'], log_start_offset=m['log_start_offset'], log_end_offset=m['log_end_offset'], high_watermark=m['high_watermark'], isr=m['isr'], replicas=m['replicas'], remote_leos=m['remote_leos'], out_of_sync=m['out_of_sync'], epochs=m['epochs'], checksum=m['checksum'], checksum_upto=m['checksum_upto'], size_bytes=m['size_bytes'], segments=m['segments'], producers=[decode_ProducerState(x0) for x0 in m['producers']], fetched_records=m['fetched_records'], fetched_bytes=m['fetched_bytes'], last_stable_offset=m['last_stable_offset'], ongoing_transactions=[decode_OngoingTransaction(x0) for x0 in m['ongoing_transactions']], aborted_transactions=m['aborted_transactions'])


def encode_ReplicaState(o: ReplicaState) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'role': o.role, 'leader': o.leader, 'leader_epoch': o.leader_epoch, 'log_start_offset': o.log_start_offset, 'log_end_offset': o.log_end_offset, 'high_watermark': o.high_watermark, 'isr': o.isr, 'replicas': o.replicas, 'remote_leos': o.remote_leos, 'out_of_sync': o.out_of_sync, 'epochs': o.epochs, 'checksum': o.checksum, 'checksum_upto': o.checksum_upto, 'size_bytes': o.size_bytes, 'segments': o.segments, 'producers': [encode_ProducerState(x0) for x0 in o.producers], 'fetched_records': o.fetched_records, 'fetched_bytes': o.fetched_bytes, 'last_stable_offset': o.last_stable_offset, 'ongoing_transactions': [encode_OngoingTransaction(x0) for x0 in o.ongoing_transactions], 'aborted_transactions': o.aborted_transactions}


@dataclass(slots=True, kw_only=True)
class ReplicaStateResponse:
    """The msgpack API's ReplicaStateResponse."""
    broker_id: int
    zookeeper_session: str = ''
    replicas: list[ReplicaState]
    error: KafkaError | None = None


def decode_ReplicaStateResponse(m: dict) -> ReplicaStateResponse:
    return ReplicaStateResponse(broker_id=m['broker_id'], zookeeper_session=m['zookeeper_session'], replicas=[decode_ReplicaState(x0) for x0 in m['replicas']], error=_error_of(m))


def encode_ReplicaStateResponse(o: ReplicaStateResponse) -> dict:
    return {'broker_id': o.broker_id, 'zookeeper_session': o.zookeeper_session, 'replicas': [encode_ReplicaState(x0) for x0 in o.replicas], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ApiVersionsRequest(Request['ApiVersionsResponse']):
    """The msgpack API's ApiVersionsRequest."""
    API: ClassVar[str] = 'api_versions'


def decode_ApiVersionsRequest(m: dict) -> ApiVersionsRequest:
    return ApiVersionsRequest()


def encode_ApiVersionsRequest(o: ApiVersionsRequest) -> dict:
    return {}


@dataclass(slots=True, kw_only=True)
class ApiVersionsResponse:
    """The msgpack API's ApiVersionsResponse."""
    apis: list[str]
    broker_id: int
    error: KafkaError | None = None


def decode_ApiVersionsResponse(m: dict) -> ApiVersionsResponse:
    return ApiVersionsResponse(apis=m['apis'], broker_id=m['broker_id'], error=_error_of(m))


def encode_ApiVersionsResponse(o: ApiVersionsResponse) -> dict:
    return {'apis': o.apis, 'broker_id': o.broker_id, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class EventsRequest(Request['EventsResponse']):
    """The msgpack API's EventsRequest."""
    API: ClassVar[str] = 'events'
    since: float = 0.0
    cluster: bool = False
    limit: int = 500


def decode_EventsRequest(m: dict) -> EventsRequest:
    return EventsRequest(since=m['since'], cluster=m['cluster'], limit=m['limit'])


def encode_EventsRequest(o: EventsRequest) -> dict:
    return {'since': o.since, 'cluster': o.cluster, 'limit': o.limit}


@dataclass(slots=True, kw_only=True)
class Event:
    """The msgpack API's Event."""
    ts: float
    broker: int
    kind: str
    text: str


def decode_Event(m: dict) -> Event:
    return Event(ts=m['ts'], broker=m['broker'], kind=m['kind'], text=m['text'])


def encode_Event(o: Event) -> dict:
    return {'ts': o.ts, 'broker': o.broker, 'kind': o.kind, 'text': o.text}


@dataclass(slots=True, kw_only=True)
class EventsResponse:
    """The msgpack API's EventsResponse."""
    events: list[Event]
    error: KafkaError | None = None


def decode_EventsResponse(m: dict) -> EventsResponse:
    return EventsResponse(events=[decode_Event(x0) for x0 in m['events']], error=_error_of(m))


def encode_EventsResponse(o: EventsResponse) -> dict:
    return {'events': [encode_Event(x0) for x0 in o.events], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ControlledShutdownRequest(Request['ControlledShutdownResponse']):
    """The msgpack API's ControlledShutdownRequest."""
    API: ClassVar[str] = 'controlled_shutdown'
    broker_id: int
    broker_epoch: int = -1


def decode_ControlledShutdownRequest(m: dict) -> ControlledShutdownRequest:
    return ControlledShutdownRequest(broker_id=m['broker_id'], broker_epoch=m['broker_epoch'])


def encode_ControlledShutdownRequest(o: ControlledShutdownRequest) -> dict:
    return {'broker_id': o.broker_id, 'broker_epoch': o.broker_epoch}


@dataclass(slots=True, kw_only=True)
class ControlledShutdownResponse:
    """The msgpack API's ControlledShutdownResponse."""
    remaining_partitions: list[TopicPartition]
    error: KafkaError | None = None


def decode_ControlledShutdownResponse(m: dict) -> ControlledShutdownResponse:
    return ControlledShutdownResponse(remaining_partitions=[decode_TopicPartition(x0) for x0 in m['remaining_partitions']], error=_error_of(m))


def encode_ControlledShutdownResponse(o: ControlledShutdownResponse) -> dict:
    return {'remaining_partitions': [encode_TopicPartition(x0) for x0 in o.remaining_partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ElectLeadersRequest(Request['ElectLeadersResponse']):
    """The msgpack API's ElectLeadersRequest."""
    API: ClassVar[str] = 'elect_leaders'
    partitions: list[TopicPartition] | None = None
    election_type: int = 0
    timeout_ms: int = 30000


def decode_ElectLeadersRequest(m: dict) -> ElectLeadersRequest:
    return ElectLeadersRequest(partitions=None if m['partitions'] is None else [decode_TopicPartition(x0) for x0 in m['partitions']], election_type=m['election_type'], timeout_ms=m['timeout_ms'])


def encode_ElectLeadersRequest(o: ElectLeadersRequest) -> dict:
    return {'partitions': None if o.partitions is None else [encode_TopicPartition(x0) for x0 in o.partitions], 'election_type': o.election_type, 'timeout_ms': o.timeout_ms}


@dataclass(slots=True, kw_only=True)
class ElectLeadersPartitionResponse:
    """The msgpack API's ElectLeadersPartitionResponse."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_ElectLeadersPartitionResponse(m: dict) -> ElectLeadersPartitionResponse:
    return ElectLeadersPartitionResponse(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_ElectLeadersPartitionResponse(o: ElectLeadersPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ElectLeadersResponse:
    """The msgpack API's ElectLeadersResponse."""
    partitions: list[ElectLeadersPartitionResponse]
    error: KafkaError | None = None


def decode_ElectLeadersResponse(m: dict) -> ElectLeadersResponse:
    return ElectLeadersResponse(partitions=[decode_ElectLeadersPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_ElectLeadersResponse(o: ElectLeadersResponse) -> dict:
    return {'partitions': [encode_ElectLeadersPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteTopicsRequest(Request['DeleteTopicsResponse']):
    """The msgpack API's DeleteTopicsRequest."""
    API: ClassVar[str] = 'delete_topics'
    topics: list[str] = field(default_factory=list)
    topic_ids: list[str] = field(default_factory=list)
    timeout_ms: int = 30000


def decode_DeleteTopicsRequest(m: dict) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(topics=m['topics'], topic_ids=m['topic_ids'], timeout_ms=m['timeout_ms'])


def encode_DeleteTopicsRequest(o: DeleteTopicsRequest) -> dict:
    return {'topics': o.topics, 'topic_ids': o.topic_ids, 'timeout_ms': o.timeout_ms}


@dataclass(slots=True, kw_only=True)
class DeletableTopicResult:
    """The msgpack API's DeletableTopicResult."""
    name: str
    topic_id: str = 'AAAAAAAAAAAAAAAAAAAAAA'
    error: KafkaError | None = None


def decode_DeletableTopicResult(m: dict) -> DeletableTopicResult:
    return DeletableTopicResult(name=m['name'], topic_id=m['topic_id'], error=_error_of(m))


def encode_DeletableTopicResult(o: DeletableTopicResult) -> dict:
    return {'name': o.name, 'topic_id': o.topic_id, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteTopicsResponse:
    """The msgpack API's DeleteTopicsResponse."""
    topics: list[DeletableTopicResult]
    error: KafkaError | None = None


def decode_DeleteTopicsResponse(m: dict) -> DeleteTopicsResponse:
    return DeleteTopicsResponse(topics=[decode_DeletableTopicResult(x0) for x0 in m['topics']], error=_error_of(m))


def encode_DeleteTopicsResponse(o: DeleteTopicsResponse) -> dict:
    return {'topics': [encode_DeletableTopicResult(x0) for x0 in o.topics], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class CreatePartitionsRequest(Request['CreatePartitionsResponse']):
    """The msgpack API's CreatePartitionsRequest."""
    API: ClassVar[str] = 'create_partitions'
    topic: str
    count: int
    assignments: list[list[int]] | None = None
    timeout_ms: int = 30000
    validate_only: bool = False


def decode_CreatePartitionsRequest(m: dict) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(topic=m['topic'], count=m['count'], assignments=m['assignments'], timeout_ms=m['timeout_ms'], validate_only=m['validate_only'])


def encode_CreatePartitionsRequest(o: CreatePartitionsRequest) -> dict:
    return {'topic': o.topic, 'count': o.count, 'assignments': o.assignments, 'timeout_ms': o.timeout_ms, 'validate_only': o.validate_only}


@dataclass(slots=True, kw_only=True)
class CreatePartitionsResponse:
    """The msgpack API's CreatePartitionsResponse."""
    partitions: list[int]
    error: KafkaError | None = None


def decode_CreatePartitionsResponse(m: dict) -> CreatePartitionsResponse:
    return CreatePartitionsResponse(partitions=m['partitions'], error=_error_of(m))


def encode_CreatePartitionsResponse(o: CreatePartitionsResponse) -> dict:
    return {'partitions': o.partitions, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteRecordsPartition:
    """The msgpack API's DeleteRecordsPartition."""
    topic: str
    partition: int
    offset: int


def decode_DeleteRecordsPartition(m: dict) -> DeleteRecordsPartition:
    return DeleteRecordsPartition(topic=m['topic'], partition=m['partition'], offset=m['offset'])


def encode_DeleteRecordsPartition(o: DeleteRecordsPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'offset': o.offset}


@dataclass(slots=True, kw_only=True)
class DeleteRecordsRequest(Request['DeleteRecordsResponse']):
    """The msgpack API's DeleteRecordsRequest."""
    API: ClassVar[str] = 'delete_records'
    partitions: list[DeleteRecordsPartition]
    timeout_ms: int = 30000


def decode_DeleteRecordsRequest(m: dict) -> DeleteRecordsRequest:
    return DeleteRecordsRequest(partitions=[decode_DeleteRecordsPartition(x0) for x0 in m['partitions']], timeout_ms=m['timeout_ms'])


def encode_DeleteRecordsRequest(o: DeleteRecordsRequest) -> dict:
    return {'partitions': [encode_DeleteRecordsPartition(x0) for x0 in o.partitions], 'timeout_ms': o.timeout_ms}


@dataclass(slots=True, kw_only=True)
class DeleteRecordsPartitionResult:
    """The msgpack API's DeleteRecordsPartitionResult."""
    topic: str
    partition: int
    low_watermark: int
    error: KafkaError | None = None


def decode_DeleteRecordsPartitionResult(m: dict) -> DeleteRecordsPartitionResult:
    return DeleteRecordsPartitionResult(topic=m['topic'], partition=m['partition'], low_watermark=m['low_watermark'], error=_error_of(m))


def encode_DeleteRecordsPartitionResult(o: DeleteRecordsPartitionResult) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'low_watermark': o.low_watermark, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteRecordsResponse:
    """The msgpack API's DeleteRecordsResponse."""
    partitions: list[DeleteRecordsPartitionResult]
    error: KafkaError | None = None


def decode_DeleteRecordsResponse(m: dict) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(partitions=[decode_DeleteRecordsPartitionResult(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_DeleteRecordsResponse(o: DeleteRecordsResponse) -> dict:
    return {'partitions': [encode_DeleteRecordsPartitionResult(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AclBinding:
    """The msgpack API's AclBinding."""
    resource_type: str
    resource_name: str
    pattern_type: str = 'LITERAL'
    principal: str
    host: str = '*'
    operation: str
    permission: str = 'Allow'


def decode_AclBinding(m: dict) -> AclBinding:
    return AclBinding(resource_type=m['resource_type'], resource_name=m['resource_name'], pattern_type=m['pattern_type'], principal=m['principal'], host=m['host'], operation=m['operation'], permission=m['permission'])


def encode_AclBinding(o: AclBinding) -> dict:
    return {'resource_type': o.resource_type, 'resource_name': o.resource_name, 'pattern_type': o.pattern_type, 'principal': o.principal, 'host': o.host, 'operation': o.operation, 'permission': o.permission}


@dataclass(slots=True, kw_only=True)
class CreateAclsRequest(Request['CreateAclsResponse']):
    """The msgpack API's CreateAclsRequest."""
    API: ClassVar[str] = 'create_acls'
    acls: list[AclBinding]


def decode_CreateAclsRequest(m: dict) -> CreateAclsRequest:
    return CreateAclsRequest(acls=[decode_AclBinding(x0) for x0 in m['acls']])


def encode_CreateAclsRequest(o: CreateAclsRequest) -> dict:
    return {'acls': [encode_AclBinding(x0) for x0 in o.acls]}


@dataclass(slots=True, kw_only=True)
class CreateAclsResponse:
    """The msgpack API's CreateAclsResponse."""
    error: KafkaError | None = None


def decode_CreateAclsResponse(m: dict) -> CreateAclsResponse:
    return CreateAclsResponse(error=_error_of(m))


def encode_CreateAclsResponse(o: CreateAclsResponse) -> dict:
    return {**_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AclFilter:
    """The msgpack API's AclFilter."""
    resource_type: str | None = None
    resource_name: str | None = None
    pattern_type: str | None = None
    principal: str | None = None
    host: str | None = None
    operation: str | None = None
    permission: str | None = None


def decode_AclFilter(m: dict) -> AclFilter:
    return AclFilter(resource_type=m['resource_type'], resource_name=m['resource_name'], pattern_type=m['pattern_type'], principal=m['principal'], host=m['host'], operation=m['operation'], permission=m['permission'])


def encode_AclFilter(o: AclFilter) -> dict:
    return {'resource_type': o.resource_type, 'resource_name': o.resource_name, 'pattern_type': o.pattern_type, 'principal': o.principal, 'host': o.host, 'operation': o.operation, 'permission': o.permission}


@dataclass(slots=True, kw_only=True)
class DescribeAclsRequest(Request['DescribeAclsResponse']):
    """The msgpack API's DescribeAclsRequest."""
    API: ClassVar[str] = 'describe_acls'
    filter: AclFilter | None = None


def decode_DescribeAclsRequest(m: dict) -> DescribeAclsRequest:
    return DescribeAclsRequest(filter=None if m['filter'] is None else decode_AclFilter(m['filter']))


def encode_DescribeAclsRequest(o: DescribeAclsRequest) -> dict:
    return {'filter': None if o.filter is None else encode_AclFilter(o.filter)}


@dataclass(slots=True, kw_only=True)
class DescribeAclsResponse:
    """The msgpack API's DescribeAclsResponse."""
    acls: list[AclBinding]
    error: KafkaError | None = None


def decode_DescribeAclsResponse(m: dict) -> DescribeAclsResponse:
    return DescribeAclsResponse(acls=[decode_AclBinding(x0) for x0 in m['acls']], error=_error_of(m))


def encode_DescribeAclsResponse(o: DescribeAclsResponse) -> dict:
    return {'acls': [encode_AclBinding(x0) for x0 in o.acls], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteAclsRequest(Request['DeleteAclsResponse']):
    """The msgpack API's DeleteAclsRequest."""
    API: ClassVar[str] = 'delete_acls'
    filters: list[AclFilter]


def decode_DeleteAclsRequest(m: dict) -> DeleteAclsRequest:
    return DeleteAclsRequest(filters=[decode_AclFilter(x0) for x0 in m['filters']])


def encode_DeleteAclsRequest(o: DeleteAclsRequest) -> dict:
    return {'filters': [encode_AclFilter(x0) for x0 in o.filters]}


@dataclass(slots=True, kw_only=True)
class DeleteAclsResult:
    """The msgpack API's DeleteAclsResult."""
    acls: list[AclBinding]


def decode_DeleteAclsResult(m: dict) -> DeleteAclsResult:
    return DeleteAclsResult(acls=[decode_AclBinding(x0) for x0 in m['acls']])


def encode_DeleteAclsResult(o: DeleteAclsResult) -> dict:
    return {'acls': [encode_AclBinding(x0) for x0 in o.acls]}


@dataclass(slots=True, kw_only=True)
class DeleteAclsResponse:
    """The msgpack API's DeleteAclsResponse."""
    results: list[DeleteAclsResult]
    error: KafkaError | None = None


def decode_DeleteAclsResponse(m: dict) -> DeleteAclsResponse:
    return DeleteAclsResponse(results=[decode_DeleteAclsResult(x0) for x0 in m['results']], error=_error_of(m))


def encode_DeleteAclsResponse(o: DeleteAclsResponse) -> dict:
    return {'results': [encode_DeleteAclsResult(x0) for x0 in o.results], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DescribeConfigsRequest(Request['DescribeConfigsResponse']):
    """The msgpack API's DescribeConfigsRequest."""
    API: ClassVar[str] = 'describe_configs'
    topic: str | None = None
    broker: str | None = None


def decode_DescribeConfigsRequest(m: dict) -> DescribeConfigsRequest:
    return DescribeConfigsRequest(topic=m['topic'], broker=m['broker'])


def encode_DescribeConfigsRequest(o: DescribeConfigsRequest) -> dict:
    return {'topic': o.topic, 'broker': o.broker}


@dataclass(slots=True, kw_only=True)
class ConfigEntry:
    """The msgpack API's ConfigEntry."""
    name: str
    value: str | None
    source: str
    documentation: str
    read_only: bool = False
    is_sensitive: bool = False


def decode_ConfigEntry(m: dict) -> ConfigEntry:
    return ConfigEntry(name=m['name'], value=m['value'], source=m['source'], documentation=m['documentation'], read_only=m['read_only'], is_sensitive=m['is_sensitive'])


def encode_ConfigEntry(o: ConfigEntry) -> dict:
    return {'name': o.name, 'value': o.value, 'source': o.source, 'documentation': o.documentation, 'read_only': o.read_only, 'is_sensitive': o.is_sensitive}


@dataclass(slots=True, kw_only=True)
class DescribeConfigsResponse:
    """The msgpack API's DescribeConfigsResponse."""
    configs: list[ConfigEntry]
    error: KafkaError | None = None


def decode_DescribeConfigsResponse(m: dict) -> DescribeConfigsResponse:
    return DescribeConfigsResponse(configs=[decode_ConfigEntry(x0) for x0 in m['configs']], error=_error_of(m))


def encode_DescribeConfigsResponse(o: DescribeConfigsResponse) -> dict:
    return {'configs': [encode_ConfigEntry(x0) for x0 in o.configs], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AlterConfigsRequest(Request['AlterConfigsResponse']):
    """The msgpack API's AlterConfigsRequest."""
    API: ClassVar[str] = 'alter_configs'
    topic: str | None = None
    broker: str | None = None
    set: dict[str, str] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    validate_only: bool = False


def decode_AlterConfigsRequest(m: dict) -> AlterConfigsRequest:
    return AlterConfigsRequest(topic=m['topic'], broker=m['broker'], set=m['set'], delete=m['delete'], validate_only=m['validate_only'])


def encode_AlterConfigsRequest(o: AlterConfigsRequest) -> dict:
    return {'topic': o.topic, 'broker': o.broker, 'set': o.set, 'delete': o.delete, 'validate_only': o.validate_only}


@dataclass(slots=True, kw_only=True)
class AlterConfigsResponse:
    """The msgpack API's AlterConfigsResponse."""
    error: KafkaError | None = None


def decode_AlterConfigsResponse(m: dict) -> AlterConfigsResponse:
    return AlterConfigsResponse(error=_error_of(m))


def encode_AlterConfigsResponse(o: AlterConfigsResponse) -> dict:
    return {**_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ReassignablePartition:
    """The msgpack API's ReassignablePartition."""
    topic: str
    partition: int
    replicas: list[int]


def decode_ReassignablePartition(m: dict) -> ReassignablePartition:
    return ReassignablePartition(topic=m['topic'], partition=m['partition'], replicas=m['replicas'])


def encode_ReassignablePartition(o: ReassignablePartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'replicas': o.replicas}


@dataclass(slots=True, kw_only=True)
class AlterPartitionReassignmentsRequest(Request['AlterPartitionReassignmentsResponse']):
    """The msgpack API's AlterPartitionReassignmentsRequest."""
    API: ClassVar[str] = 'alter_partition_reassignments'
    partitions: list[ReassignablePartition]


def decode_AlterPartitionReassignmentsRequest(m: dict) -> AlterPartitionReassignmentsRequest:
    return AlterPartitionReassignmentsRequest(partitions=[decode_ReassignablePartition(x0) for x0 in m['partitions']])


def encode_AlterPartitionReassignmentsRequest(o: AlterPartitionReassignmentsRequest) -> dict:
    return {'partitions': [encode_ReassignablePartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class ReassignablePartitionResponse:
    """The msgpack API's ReassignablePartitionResponse."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_ReassignablePartitionResponse(m: dict) -> ReassignablePartitionResponse:
    return ReassignablePartitionResponse(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_ReassignablePartitionResponse(o: ReassignablePartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AlterPartitionReassignmentsResponse:
    """The msgpack API's AlterPartitionReassignmentsResponse."""
    partitions: list[ReassignablePartitionResponse]
    error: KafkaError | None = None


def decode_AlterPartitionReassignmentsResponse(m: dict) -> AlterPartitionReassignmentsResponse:
    return AlterPartitionReassignmentsResponse(partitions=[decode_ReassignablePartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_AlterPartitionReassignmentsResponse(o: AlterPartitionReassignmentsResponse) -> dict:
    return {'partitions': [encode_ReassignablePartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ListPartitionReassignmentsRequest(Request['ListPartitionReassignmentsResponse']):
    """The msgpack API's ListPartitionReassignmentsRequest."""
    API: ClassVar[str] = 'list_partition_reassignments'
    partitions: list[TopicPartition] | None = None


def decode_ListPartitionReassignmentsRequest(m: dict) -> ListPartitionReassignmentsRequest:
    return ListPartitionReassignmentsRequest(partitions=None if m['partitions'] is None else [decode_TopicPartition(x0) for x0 in m['partitions']])


def encode_ListPartitionReassignmentsRequest(o: ListPartitionReassignmentsRequest) -> dict:
    return {'partitions': None if o.partitions is None else [encode_TopicPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class OngoingReassignment:
    """The msgpack API's OngoingReassignment."""
    topic: str
    partition: int
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]


def decode_OngoingReassignment(m: dict) -> OngoingReassignment:
    return OngoingReassignment(topic=m['topic'], partition=m['partition'], replicas=m['replicas'], adding_replicas=m['adding_replicas'], removing_replicas=m['removing_replicas'])


def encode_OngoingReassignment(o: OngoingReassignment) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'replicas': o.replicas, 'adding_replicas': o.adding_replicas, 'removing_replicas': o.removing_replicas}


@dataclass(slots=True, kw_only=True)
class ListPartitionReassignmentsResponse:
    """The msgpack API's ListPartitionReassignmentsResponse."""
    partitions: list[OngoingReassignment]
    error: KafkaError | None = None


def decode_ListPartitionReassignmentsResponse(m: dict) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(partitions=[decode_OngoingReassignment(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_ListPartitionReassignmentsResponse(o: ListPartitionReassignmentsResponse) -> dict:
    return {'partitions': [encode_OngoingReassignment(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DescribeLogDirsRequest(Request['DescribeLogDirsResponse']):
    """The msgpack API's DescribeLogDirsRequest."""
    API: ClassVar[str] = 'describe_log_dirs'
    partitions: list[TopicPartition] | None = None


def decode_DescribeLogDirsRequest(m: dict) -> DescribeLogDirsRequest:
    return DescribeLogDirsRequest(partitions=None if m['partitions'] is None else [decode_TopicPartition(x0) for x0 in m['partitions']])


def encode_DescribeLogDirsRequest(o: DescribeLogDirsRequest) -> dict:
    return {'partitions': None if o.partitions is None else [encode_TopicPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class LogDirPartition:
    """The msgpack API's LogDirPartition."""
    topic: str
    partition: int
    size: int
    offset_lag: int


def decode_LogDirPartition(m: dict) -> LogDirPartition:
    return LogDirPartition(topic=m['topic'], partition=m['partition'], size=m['size'], offset_lag=m['offset_lag'])


def encode_LogDirPartition(o: LogDirPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'size': o.size, 'offset_lag': o.offset_lag}


@dataclass(slots=True, kw_only=True)
class LogDir:
    """The msgpack API's LogDir."""
    log_dir: str
    total_bytes: int
    usable_bytes: int
    partitions: list[LogDirPartition]


def decode_LogDir(m: dict) -> LogDir:
    return LogDir(log_dir=m['log_dir'], total_bytes=m['total_bytes'], usable_bytes=m['usable_bytes'], partitions=[decode_LogDirPartition(x0) for x0 in m['partitions']])


def encode_LogDir(o: LogDir) -> dict:
    return {'log_dir': o.log_dir, 'total_bytes': o.total_bytes, 'usable_bytes': o.usable_bytes, 'partitions': [encode_LogDirPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class DescribeLogDirsResponse:
    """The msgpack API's DescribeLogDirsResponse."""
    log_dirs: list[LogDir]
    error: KafkaError | None = None


def decode_DescribeLogDirsResponse(m: dict) -> DescribeLogDirsResponse:
    return DescribeLogDirsResponse(log_dirs=[decode_LogDir(x0) for x0 in m['log_dirs']], error=_error_of(m))


def encode_DescribeLogDirsResponse(o: DescribeLogDirsResponse) -> dict:
    return {'log_dirs': [encode_LogDir(x0) for x0 in o.log_dirs], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class FindCoordinatorRequest(Request['FindCoordinatorResponse']):
    """The msgpack API's FindCoordinatorRequest."""
    API: ClassVar[str] = 'find_coordinator'
    key: str
    key_type: int = 0


def decode_FindCoordinatorRequest(m: dict) -> FindCoordinatorRequest:
    return FindCoordinatorRequest(key=m['key'], key_type=m['key_type'])


def encode_FindCoordinatorRequest(o: FindCoordinatorRequest) -> dict:
    return {'key': o.key, 'key_type': o.key_type}


@dataclass(slots=True, kw_only=True)
class FindCoordinatorResponse:
    """The msgpack API's FindCoordinatorResponse."""
    node_id: int
    host: str
    port: int
    error: KafkaError | None = None


def decode_FindCoordinatorResponse(m: dict) -> FindCoordinatorResponse:
    return FindCoordinatorResponse(node_id=m['node_id'], host=m['host'], port=m['port'], error=_error_of(m))


def encode_FindCoordinatorResponse(o: FindCoordinatorResponse) -> dict:
    return {'node_id': o.node_id, 'host': o.host, 'port': o.port, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class JoinGroupProtocol:
    """The msgpack API's JoinGroupProtocol."""
    name: str
    metadata: bytes


def decode_JoinGroupProtocol(m: dict) -> JoinGroupProtocol:
    return JoinGroupProtocol(name=m['name'], metadata=m['metadata'])


def encode_JoinGroupProtocol(o: JoinGroupProtocol) -> dict:
    return {'name': o.name, 'metadata': o.metadata}


@dataclass(slots=True, kw_only=True)
class JoinGroupRequest(Request['JoinGroupResponse']):
    """The msgpack API's JoinGroupRequest."""
    API: ClassVar[str] = 'join_group'
    group_id: str
    member_id: str = ''
    group_instance_id: str | None = None
    client_id: str = ''
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    protocol_type: str
    protocols: list[JoinGroupProtocol]


def decode_JoinGroupRequest(m: dict) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=m['group_id'], member_id=m['member_id'], group_instance_id=m['group_instance_id'], client_id=m['client_id'], session_timeout_ms=m['session_timeout_ms'], rebalance_timeout_ms=m['rebalance_timeout_ms'], protocol_type=m['protocol_type'], protocols=[decode_JoinGroupProtocol(x0) for x0 in m['protocols']])


def encode_JoinGroupRequest(o: JoinGroupRequest) -> dict:
    return {'group_id': o.group_id, 'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'client_id': o.client_id, 'session_timeout_ms': o.session_timeout_ms, 'rebalance_timeout_ms': o.rebalance_timeout_ms, 'protocol_type': o.protocol_type, 'protocols': [encode_JoinGroupProtocol(x0) for x0 in o.protocols]}


@dataclass(slots=True, kw_only=True)
class JoinGroupMember:
    """The msgpack API's JoinGroupMember."""
    member_id: str
    group_instance_id: str | None
    metadata: bytes


def decode_JoinGroupMember(m: dict) -> JoinGroupMember:
    return JoinGroupMember(member_id=m['member_id'], group_instance_id=m['group_instance_id'], metadata=m['metadata'])


def encode_JoinGroupMember(o: JoinGroupMember) -> dict:
    return {'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'metadata': o.metadata}


@dataclass(slots=True, kw_only=True)
class JoinGroupResponse:
    """The msgpack API's JoinGroupResponse."""
    generation_id: int
    protocol_type: str
    protocol_name: str
    leader: str
    member_id: str
    members: list[JoinGroupMember]
    error: KafkaError | None = None


def decode_JoinGroupResponse(m: dict) -> JoinGroupResponse:
    return JoinGroupResponse(generation_id=m['generation_id'], protocol_type=m['protocol_type'], protocol_name=m['protocol_name'], leader=m['leader'], member_id=m['member_id'], members=[decode_JoinGroupMember(x0) for x0 in m['members']], error=_error_of(m))


def encode_JoinGroupResponse(o: JoinGroupResponse) -> dict:
    return {'generation_id': o.generation_id, 'protocol_type': o.protocol_type, 'protocol_name': o.protocol_name, 'leader': o.leader, 'member_id': o.member_id, 'members': [encode_JoinGroupMember(x0) for x0 in o.members], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class SyncGroupAssignment:
    """The msgpack API's SyncGroupAssignment."""
    member_id: str
    assignment: bytes


def decode_SyncGroupAssignment(m: dict) -> SyncGroupAssignment:
    return SyncGroupAssignment(member_id=m['member_id'], assignment=m['assignment'])


def encode_SyncGroupAssignment(o: SyncGroupAssignment) -> dict:
    return {'member_id': o.member_id, 'assignment': o.assignment}


@dataclass(slots=True, kw_only=True)
class SyncGroupRequest(Request['SyncGroupResponse']):
    """The msgpack API's SyncGroupRequest."""
    API: ClassVar[str] = 'sync_group'
    group_id: str
    member_id: str = ''
    group_instance_id: str | None = None
    generation_id: int
    assignments: list[SyncGroupAssignment] = field(default_factory=list)


def decode_SyncGroupRequest(m: dict) -> SyncGroupRequest:
    return SyncGroupRequest(group_id=m['group_id'], member_id=m['member_id'], group_instance_id=m['group_instance_id'], generation_id=m['generation_id'], assignments=[decode_SyncGroupAssignment(x0) for x0 in m['assignments']])


def encode_SyncGroupRequest(o: SyncGroupRequest) -> dict:
    return {'group_id': o.group_id, 'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'generation_id': o.generation_id, 'assignments': [encode_SyncGroupAssignment(x0) for x0 in o.assignments]}


@dataclass(slots=True, kw_only=True)
class SyncGroupResponse:
    """The msgpack API's SyncGroupResponse."""
    protocol_type: str
    protocol_name: str
    assignment: bytes
    error: KafkaError | None = None


def decode_SyncGroupResponse(m: dict) -> SyncGroupResponse:
    return SyncGroupResponse(protocol_type=m['protocol_type'], protocol_name=m['protocol_name'], assignment=m['assignment'], error=_error_of(m))


def encode_SyncGroupResponse(o: SyncGroupResponse) -> dict:
    return {'protocol_type': o.protocol_type, 'protocol_name': o.protocol_name, 'assignment': o.assignment, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class HeartbeatRequest(Request['HeartbeatResponse']):
    """The msgpack API's HeartbeatRequest."""
    API: ClassVar[str] = 'heartbeat'
    group_id: str
    member_id: str = ''
    group_instance_id: str | None = None
    generation_id: int


def decode_HeartbeatRequest(m: dict) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=m['group_id'], member_id=m['member_id'], group_instance_id=m['group_instance_id'], generation_id=m['generation_id'])


def encode_HeartbeatRequest(o: HeartbeatRequest) -> dict:
    return {'group_id': o.group_id, 'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'generation_id': o.generation_id}


@dataclass(slots=True, kw_only=True)
class HeartbeatResponse:
    """The msgpack API's HeartbeatResponse."""
    error: KafkaError | None = None


def decode_HeartbeatResponse(m: dict) -> HeartbeatResponse:
    return HeartbeatResponse(error=_error_of(m))


def encode_HeartbeatResponse(o: HeartbeatResponse) -> dict:
    return {**_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class LeavingMember:
    """The msgpack API's LeavingMember."""
    member_id: str = ''
    group_instance_id: str | None = None


def decode_LeavingMember(m: dict) -> LeavingMember:
    return LeavingMember(member_id=m['member_id'], group_instance_id=m['group_instance_id'])


def encode_LeavingMember(o: LeavingMember) -> dict:
    return {'member_id': o.member_id, 'group_instance_id': o.group_instance_id}


@dataclass(slots=True, kw_only=True)
class LeaveGroupRequest(Request['LeaveGroupResponse']):
    """The msgpack API's LeaveGroupRequest."""
    API: ClassVar[str] = 'leave_group'
    group_id: str
    members: list[LeavingMember]


def decode_LeaveGroupRequest(m: dict) -> LeaveGroupRequest:
    return LeaveGroupRequest(group_id=m['group_id'], members=[decode_LeavingMember(x0) for x0 in m['members']])


def encode_LeaveGroupRequest(o: LeaveGroupRequest) -> dict:
    return {'group_id': o.group_id, 'members': [encode_LeavingMember(x0) for x0 in o.members]}


@dataclass(slots=True, kw_only=True)
class LeaveGroupMemberResponse:
    """The msgpack API's LeaveGroupMemberResponse."""
    member_id: str
    group_instance_id: str | None
    error: KafkaError | None = None


def decode_LeaveGroupMemberResponse(m: dict) -> LeaveGroupMemberResponse:
    return LeaveGroupMemberResponse(member_id=m['member_id'], group_instance_id=m['group_instance_id'], error=_error_of(m))


def encode_LeaveGroupMemberResponse(o: LeaveGroupMemberResponse) -> dict:
    return {'member_id': o.member_id, 'group_instance_id': o.group_instance_id, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class LeaveGroupResponse:
    """The msgpack API's LeaveGroupResponse."""
    members: list[LeaveGroupMemberResponse]
    error: KafkaError | None = None


def decode_LeaveGroupResponse(m: dict) -> LeaveGroupResponse:
    return LeaveGroupResponse(members=[decode_LeaveGroupMemberResponse(x0) for x0 in m['members']], error=_error_of(m))


def encode_LeaveGroupResponse(o: LeaveGroupResponse) -> dict:
    return {'members': [encode_LeaveGroupMemberResponse(x0) for x0 in o.members], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetCommitPartition:
    """The msgpack API's OffsetCommitPartition."""
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ''


def decode_OffsetCommitPartition(m: dict) -> OffsetCommitPartition:
    return OffsetCommitPartition(topic=m['topic'], partition=m['partition'], offset=m['offset'], leader_epoch=m['leader_epoch'], metadata=m['metadata'])


def encode_OffsetCommitPartition(o: OffsetCommitPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'offset': o.offset, 'leader_epoch': o.leader_epoch, 'metadata': o.metadata}


@dataclass(slots=True, kw_only=True)
class OffsetCommitRequest(Request['OffsetCommitResponse']):
    """The msgpack API's OffsetCommitRequest."""
    API: ClassVar[str] = 'offset_commit'
    group_id: str
    member_id: str = ''
    group_instance_id: str | None = None
    generation_id: int = -1
    offsets: list[OffsetCommitPartition]


def decode_OffsetCommitRequest(m: dict) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=m['group_id'], member_id=m['member_id'], group_instance_id=m['group_instance_id'], generation_id=m['generation_id'], offsets=[decode_OffsetCommitPartition(x0) for x0 in m['offsets']])


def encode_OffsetCommitRequest(o: OffsetCommitRequest) -> dict:
    return {'group_id': o.group_id, 'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'generation_id': o.generation_id, 'offsets': [encode_OffsetCommitPartition(x0) for x0 in o.offsets]}


@dataclass(slots=True, kw_only=True)
class OffsetCommitPartitionResponse:
    """The msgpack API's OffsetCommitPartitionResponse."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_OffsetCommitPartitionResponse(m: dict) -> OffsetCommitPartitionResponse:
    return OffsetCommitPartitionResponse(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_OffsetCommitPartitionResponse(o: OffsetCommitPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetCommitResponse:
    """The msgpack API's OffsetCommitResponse."""
    partitions: list[OffsetCommitPartitionResponse]
    error: KafkaError | None = None


def decode_OffsetCommitResponse(m: dict) -> OffsetCommitResponse:
    return OffsetCommitResponse(partitions=[decode_OffsetCommitPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_OffsetCommitResponse(o: OffsetCommitResponse) -> dict:
    return {'partitions': [encode_OffsetCommitPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetFetchRequest(Request['OffsetFetchResponse']):
    """The msgpack API's OffsetFetchRequest."""
    API: ClassVar[str] = 'offset_fetch'
    group_id: str
    partitions: list[TopicPartition] | None = None
    require_stable: bool = False


def decode_OffsetFetchRequest(m: dict) -> OffsetFetchRequest:
    return OffsetFetchRequest(group_id=m['group_id'], partitions=None if m['partitions'] is None else [decode_TopicPartition(x0) for x0 in m['partitions']], require_stable=m['require_stable'])


def encode_OffsetFetchRequest(o: OffsetFetchRequest) -> dict:
    return {'group_id': o.group_id, 'partitions': None if o.partitions is None else [encode_TopicPartition(x0) for x0 in o.partitions], 'require_stable': o.require_stable}


@dataclass(slots=True, kw_only=True)
class OffsetFetchPartition:
    """The msgpack API's OffsetFetchPartition."""
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    error: KafkaError | None = None


def decode_OffsetFetchPartition(m: dict) -> OffsetFetchPartition:
    return OffsetFetchPartition(topic=m['topic'], partition=m['partition'], offset=m['offset'], leader_epoch=m['leader_epoch'], metadata=m['metadata'], error=_error_of(m))


def encode_OffsetFetchPartition(o: OffsetFetchPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'offset': o.offset, 'leader_epoch': o.leader_epoch, 'metadata': o.metadata, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetFetchResponse:
    """The msgpack API's OffsetFetchResponse."""
    partitions: list[OffsetFetchPartition]
    error: KafkaError | None = None


def decode_OffsetFetchResponse(m: dict) -> OffsetFetchResponse:
    return OffsetFetchResponse(partitions=[decode_OffsetFetchPartition(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_OffsetFetchResponse(o: OffsetFetchResponse) -> dict:
    return {'partitions': [encode_OffsetFetchPartition(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ListGroupsRequest(Request['ListGroupsResponse']):
    """The msgpack API's ListGroupsRequest."""
    API: ClassVar[str] = 'list_groups'


def decode_ListGroupsRequest(m: dict) -> ListGroupsRequest:
    return ListGroupsRequest()


def encode_ListGroupsRequest(o: ListGroupsRequest) -> dict:
    return {}


@dataclass(slots=True, kw_only=True)
class ListedGroup:
    """The msgpack API's ListedGroup."""
    group_id: str
    protocol_type: str
    state: str


def decode_ListedGroup(m: dict) -> ListedGroup:
    return ListedGroup(group_id=m['group_id'], protocol_type=m['protocol_type'], state=m['state'])


def encode_ListedGroup(o: ListedGroup) -> dict:
    return {'group_id': o.group_id, 'protocol_type': o.protocol_type, 'state': o.state}


@dataclass(slots=True, kw_only=True)
class ListGroupsResponse:
    """The msgpack API's ListGroupsResponse."""
    groups: list[ListedGroup]
    error: KafkaError | None = None


def decode_ListGroupsResponse(m: dict) -> ListGroupsResponse:
    return ListGroupsResponse(groups=[decode_ListedGroup(x0) for x0 in m['groups']], error=_error_of(m))


def encode_ListGroupsResponse(o: ListGroupsResponse) -> dict:
    return {'groups': [encode_ListedGroup(x0) for x0 in o.groups], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DescribeGroupsRequest(Request['DescribeGroupsResponse']):
    """The msgpack API's DescribeGroupsRequest."""
    API: ClassVar[str] = 'describe_groups'
    groups: list[str]


def decode_DescribeGroupsRequest(m: dict) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(groups=m['groups'])


def encode_DescribeGroupsRequest(o: DescribeGroupsRequest) -> dict:
    return {'groups': o.groups}


@dataclass(slots=True, kw_only=True)
class DescribedMember:
    """The msgpack API's DescribedMember."""
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


def decode_DescribedMember(m: dict) -> DescribedMember:
    return DescribedMember(member_id=m['member_id'], group_instance_id=m['group_instance_id'], client_id=m['client_id'], client_host=m['client_host'], metadata=m['metadata'], assignment=m['assignment'])


def encode_DescribedMember(o: DescribedMember) -> dict:
    return {'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'client_id': o.client_id, 'client_host': o.client_host, 'metadata': o.metadata, 'assignment': o.assignment}


@dataclass(slots=True, kw_only=True)
class DescribedGroup:
    """The msgpack API's DescribedGroup."""
    group_id: str
    state: str
    generation: int
    protocol_type: str
    protocol: str
    leader: str
    members: list[DescribedMember]
    error: KafkaError | None = None


def decode_DescribedGroup(m: dict) -> DescribedGroup:
    return DescribedGroup(group_id=m['group_id'], state=m['state'], generation=m['generation'], protocol_type=m['protocol_type'], protocol=m['protocol'], leader=m['leader'], members=[decode_DescribedMember(x0) for x0 in m['members']], error=_error_of(m))


def encode_DescribedGroup(o: DescribedGroup) -> dict:
    return {'group_id': o.group_id, 'state': o.state, 'generation': o.generation, 'protocol_type': o.protocol_type, 'protocol': o.protocol, 'leader': o.leader, 'members': [encode_DescribedMember(x0) for x0 in o.members], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DescribeGroupsResponse:
    """The msgpack API's DescribeGroupsResponse."""
    groups: list[DescribedGroup]
    error: KafkaError | None = None


def decode_DescribeGroupsResponse(m: dict) -> DescribeGroupsResponse:
    return DescribeGroupsResponse(groups=[decode_DescribedGroup(x0) for x0 in m['groups']], error=_error_of(m))


def encode_DescribeGroupsResponse(o: DescribeGroupsResponse) -> dict:
    return {'groups': [encode_DescribedGroup(x0) for x0 in o.groups], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteGroupsRequest(Request['DeleteGroupsResponse']):
    """The msgpack API's DeleteGroupsRequest."""
    API: ClassVar[str] = 'delete_groups'
    groups: list[str]


def decode_DeleteGroupsRequest(m: dict) -> DeleteGroupsRequest:
    return DeleteGroupsRequest(groups=m['groups'])


def encode_DeleteGroupsRequest(o: DeleteGroupsRequest) -> dict:
    return {'groups': o.groups}


@dataclass(slots=True, kw_only=True)
class DeletedGroup:
    """The msgpack API's DeletedGroup."""
    group_id: str
    error: KafkaError | None = None


def decode_DeletedGroup(m: dict) -> DeletedGroup:
    return DeletedGroup(group_id=m['group_id'], error=_error_of(m))


def encode_DeletedGroup(o: DeletedGroup) -> dict:
    return {'group_id': o.group_id, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DeleteGroupsResponse:
    """The msgpack API's DeleteGroupsResponse."""
    groups: list[DeletedGroup]
    error: KafkaError | None = None


def decode_DeleteGroupsResponse(m: dict) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(groups=[decode_DeletedGroup(x0) for x0 in m['groups']], error=_error_of(m))


def encode_DeleteGroupsResponse(o: DeleteGroupsResponse) -> dict:
    return {'groups': [encode_DeletedGroup(x0) for x0 in o.groups], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetDeleteRequest(Request['OffsetDeleteResponse']):
    """The msgpack API's OffsetDeleteRequest."""
    API: ClassVar[str] = 'offset_delete'
    group_id: str
    partitions: list[TopicPartition]


def decode_OffsetDeleteRequest(m: dict) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(group_id=m['group_id'], partitions=[decode_TopicPartition(x0) for x0 in m['partitions']])


def encode_OffsetDeleteRequest(o: OffsetDeleteRequest) -> dict:
    return {'group_id': o.group_id, 'partitions': [encode_TopicPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class OffsetDeletePartition:
    """The msgpack API's OffsetDeletePartition."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_OffsetDeletePartition(m: dict) -> OffsetDeletePartition:
    return OffsetDeletePartition(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_OffsetDeletePartition(o: OffsetDeletePartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class OffsetDeleteResponse:
    """The msgpack API's OffsetDeleteResponse."""
    partitions: list[OffsetDeletePartition]
    error: KafkaError | None = None


def decode_OffsetDeleteResponse(m: dict) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(partitions=[decode_OffsetDeletePartition(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_OffsetDeleteResponse(o: OffsetDeleteResponse) -> dict:
    return {'partitions': [encode_OffsetDeletePartition(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class WritableTxnMarker:
    """The msgpack API's WritableTxnMarker."""
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    partitions: list[TopicPartition]


def decode_WritableTxnMarker(m: dict) -> WritableTxnMarker:
    return WritableTxnMarker(producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], committed=m['committed'], coordinator_epoch=m['coordinator_epoch'], partitions=[decode_TopicPartition(x0) for x0 in m['partitions']])


def encode_WritableTxnMarker(o: WritableTxnMarker) -> dict:
    return {'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'committed': o.committed, 'coordinator_epoch': o.coordinator_epoch, 'partitions': [encode_TopicPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class WriteTxnMarkersRequest(Request['WriteTxnMarkersResponse']):
    """The msgpack API's WriteTxnMarkersRequest."""
    API: ClassVar[str] = 'write_txn_markers'
    markers: list[WritableTxnMarker]
    timeout_ms: int = 30000


def decode_WriteTxnMarkersRequest(m: dict) -> WriteTxnMarkersRequest:
    return WriteTxnMarkersRequest(markers=[decode_WritableTxnMarker(x0) for x0 in m['markers']], timeout_ms=m['timeout_ms'])


def encode_WriteTxnMarkersRequest(o: WriteTxnMarkersRequest) -> dict:
    return {'markers': [encode_WritableTxnMarker(x0) for x0 in o.markers], 'timeout_ms': o.timeout_ms}


@dataclass(slots=True, kw_only=True)
class WritableTxnMarkerPartitionResult:
    """The msgpack API's WritableTxnMarkerPartitionResult."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_WritableTxnMarkerPartitionResult(m: dict) -> WritableTxnMarkerPartitionResult:
    return WritableTxnMarkerPartitionResult(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_WritableTxnMarkerPartitionResult(o: WritableTxnMarkerPartitionResult) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class WritableTxnMarkerResult:
    """The msgpack API's WritableTxnMarkerResult."""
    producer_id: int
    partitions: list[WritableTxnMarkerPartitionResult]


def decode_WritableTxnMarkerResult(m: dict) -> WritableTxnMarkerResult:
    return WritableTxnMarkerResult(producer_id=m['producer_id'], partitions=[decode_WritableTxnMarkerPartitionResult(x0) for x0 in m['partitions']])


def encode_WritableTxnMarkerResult(o: WritableTxnMarkerResult) -> dict:
    return {'producer_id': o.producer_id, 'partitions': [encode_WritableTxnMarkerPartitionResult(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class WriteTxnMarkersResponse:
    """The msgpack API's WriteTxnMarkersResponse."""
    markers: list[WritableTxnMarkerResult]
    error: KafkaError | None = None


def decode_WriteTxnMarkersResponse(m: dict) -> WriteTxnMarkersResponse:
    return WriteTxnMarkersResponse(markers=[decode_WritableTxnMarkerResult(x0) for x0 in m['markers']], error=_error_of(m))


def encode_WriteTxnMarkersResponse(o: WriteTxnMarkersResponse) -> dict:
    return {'markers': [encode_WritableTxnMarkerResult(x0) for x0 in o.markers], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AddPartitionsToTxnRequest(Request['AddPartitionsToTxnResponse']):
    """The msgpack API's AddPartitionsToTxnRequest."""
    API: ClassVar[str] = 'add_partitions_to_txn'
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]


def decode_AddPartitionsToTxnRequest(m: dict) -> AddPartitionsToTxnRequest:
    return AddPartitionsToTxnRequest(transactional_id=m['transactional_id'], producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], partitions=[decode_TopicPartition(x0) for x0 in m['partitions']])


def encode_AddPartitionsToTxnRequest(o: AddPartitionsToTxnRequest) -> dict:
    return {'transactional_id': o.transactional_id, 'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'partitions': [encode_TopicPartition(x0) for x0 in o.partitions]}


@dataclass(slots=True, kw_only=True)
class AddPartitionsToTxnResult:
    """The msgpack API's AddPartitionsToTxnResult."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_AddPartitionsToTxnResult(m: dict) -> AddPartitionsToTxnResult:
    return AddPartitionsToTxnResult(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_AddPartitionsToTxnResult(o: AddPartitionsToTxnResult) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AddPartitionsToTxnResponse:
    """The msgpack API's AddPartitionsToTxnResponse."""
    partitions: list[AddPartitionsToTxnResult]
    error: KafkaError | None = None


def decode_AddPartitionsToTxnResponse(m: dict) -> AddPartitionsToTxnResponse:
    return AddPartitionsToTxnResponse(partitions=[decode_AddPartitionsToTxnResult(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_AddPartitionsToTxnResponse(o: AddPartitionsToTxnResponse) -> dict:
    return {'partitions': [encode_AddPartitionsToTxnResult(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class AddOffsetsToTxnRequest(Request['AddOffsetsToTxnResponse']):
    """The msgpack API's AddOffsetsToTxnRequest."""
    API: ClassVar[str] = 'add_offsets_to_txn'
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str


def decode_AddOffsetsToTxnRequest(m: dict) -> AddOffsetsToTxnRequest:
    return AddOffsetsToTxnRequest(transactional_id=m['transactional_id'], producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], group_id=m['group_id'])


def encode_AddOffsetsToTxnRequest(o: AddOffsetsToTxnRequest) -> dict:
    return {'transactional_id': o.transactional_id, 'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'group_id': o.group_id}


@dataclass(slots=True, kw_only=True)
class AddOffsetsToTxnResponse:
    """The msgpack API's AddOffsetsToTxnResponse."""
    error: KafkaError | None = None


def decode_AddOffsetsToTxnResponse(m: dict) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error=_error_of(m))


def encode_AddOffsetsToTxnResponse(o: AddOffsetsToTxnResponse) -> dict:
    return {**_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class EndTxnRequest(Request['EndTxnResponse']):
    """The msgpack API's EndTxnRequest."""
    API: ClassVar[str] = 'end_txn'
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool


def decode_EndTxnRequest(m: dict) -> EndTxnRequest:
    return EndTxnRequest(transactional_id=m['transactional_id'], producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], committed=m['committed'])


def encode_EndTxnRequest(o: EndTxnRequest) -> dict:
    return {'transactional_id': o.transactional_id, 'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'committed': o.committed}


@dataclass(slots=True, kw_only=True)
class EndTxnResponse:
    """The msgpack API's EndTxnResponse."""
    error: KafkaError | None = None


def decode_EndTxnResponse(m: dict) -> EndTxnResponse:
    return EndTxnResponse(error=_error_of(m))


def encode_EndTxnResponse(o: EndTxnResponse) -> dict:
    return {**_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DescribeTransactionsRequest(Request['DescribeTransactionsResponse']):
    """The msgpack API's DescribeTransactionsRequest."""
    API: ClassVar[str] = 'describe_transactions'
    transactional_ids: list[str]


def decode_DescribeTransactionsRequest(m: dict) -> DescribeTransactionsRequest:
    return DescribeTransactionsRequest(transactional_ids=m['transactional_ids'])


def encode_DescribeTransactionsRequest(o: DescribeTransactionsRequest) -> dict:
    return {'transactional_ids': o.transactional_ids}


@dataclass(slots=True, kw_only=True)
class DescribedTransaction:
    """The msgpack API's DescribedTransaction."""
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    partitions: list[TopicPartition]
    error: KafkaError | None = None


def decode_DescribedTransaction(m: dict) -> DescribedTransaction:
    return DescribedTransaction(transactional_id=m['transactional_id'], state=m['state'], producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], transaction_timeout_ms=m['transaction_timeout_ms'], transaction_start_time_ms=m['transaction_start_time_ms'], partitions=[decode_TopicPartition(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_DescribedTransaction(o: DescribedTransaction) -> dict:
    return {'transactional_id': o.transactional_id, 'state': o.state, 'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'transaction_timeout_ms': o.transaction_timeout_ms, 'transaction_start_time_ms': o.transaction_start_time_ms, 'partitions': [encode_TopicPartition(x0) for x0 in o.partitions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class DescribeTransactionsResponse:
    """The msgpack API's DescribeTransactionsResponse."""
    transactions: list[DescribedTransaction]
    error: KafkaError | None = None


def decode_DescribeTransactionsResponse(m: dict) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(transactions=[decode_DescribedTransaction(x0) for x0 in m['transactions']], error=_error_of(m))


def encode_DescribeTransactionsResponse(o: DescribeTransactionsResponse) -> dict:
    return {'transactions': [encode_DescribedTransaction(x0) for x0 in o.transactions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class ListTransactionsRequest(Request['ListTransactionsResponse']):
    """The msgpack API's ListTransactionsRequest."""
    API: ClassVar[str] = 'list_transactions'
    state_filters: list[str] = field(default_factory=list)
    producer_id_filters: list[int] = field(default_factory=list)
    duration_filter_ms: int = -1


def decode_ListTransactionsRequest(m: dict) -> ListTransactionsRequest:
    return ListTransactionsRequest(state_filters=m['state_filters'], producer_id_filters=m['producer_id_filters'], duration_filter_ms=m['duration_filter_ms'])


def encode_ListTransactionsRequest(o: ListTransactionsRequest) -> dict:
    return {'state_filters': o.state_filters, 'producer_id_filters': o.producer_id_filters, 'duration_filter_ms': o.duration_filter_ms}


@dataclass(slots=True, kw_only=True)
class ListedTransaction:
    """The msgpack API's ListedTransaction."""
    transactional_id: str
    producer_id: int
    state: str


def decode_ListedTransaction(m: dict) -> ListedTransaction:
    return ListedTransaction(transactional_id=m['transactional_id'], producer_id=m['producer_id'], state=m['state'])


def encode_ListedTransaction(o: ListedTransaction) -> dict:
    return {'transactional_id': o.transactional_id, 'producer_id': o.producer_id, 'state': o.state}


@dataclass(slots=True, kw_only=True)
class ListTransactionsResponse:
    """The msgpack API's ListTransactionsResponse."""
    unknown_state_filters: list[str]
    transactions: list[ListedTransaction]
    error: KafkaError | None = None


def decode_ListTransactionsResponse(m: dict) -> ListTransactionsResponse:
    return ListTransactionsResponse(unknown_state_filters=m['unknown_state_filters'], transactions=[decode_ListedTransaction(x0) for x0 in m['transactions']], error=_error_of(m))


def encode_ListTransactionsResponse(o: ListTransactionsResponse) -> dict:
    return {'unknown_state_filters': o.unknown_state_filters, 'transactions': [encode_ListedTransaction(x0) for x0 in o.transactions], **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class TxnOffsetCommitPartition:
    """The msgpack API's TxnOffsetCommitPartition."""
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ''


def decode_TxnOffsetCommitPartition(m: dict) -> TxnOffsetCommitPartition:
    return TxnOffsetCommitPartition(topic=m['topic'], partition=m['partition'], offset=m['offset'], leader_epoch=m['leader_epoch'], metadata=m['metadata'])


def encode_TxnOffsetCommitPartition(o: TxnOffsetCommitPartition) -> dict:
    return {'topic': o.topic, 'partition': o.partition, 'offset': o.offset, 'leader_epoch': o.leader_epoch, 'metadata': o.metadata}


@dataclass(slots=True, kw_only=True)
class TxnOffsetCommitRequest(Request['TxnOffsetCommitResponse']):
    """The msgpack API's TxnOffsetCommitRequest."""
    API: ClassVar[str] = 'txn_offset_commit'
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int = -1
    member_id: str = ''
    group_instance_id: str | None = None
    offsets: list[TxnOffsetCommitPartition]


def decode_TxnOffsetCommitRequest(m: dict) -> TxnOffsetCommitRequest:
    return TxnOffsetCommitRequest(transactional_id=m['transactional_id'], group_id=m['group_id'], producer_id=m['producer_id'], producer_epoch=m['producer_epoch'], generation_id=m['generation_id'], member_id=m['member_id'], group_instance_id=m['group_instance_id'], offsets=[decode_TxnOffsetCommitPartition(x0) for x0 in m['offsets']])


def encode_TxnOffsetCommitRequest(o: TxnOffsetCommitRequest) -> dict:
    return {'transactional_id': o.transactional_id, 'group_id': o.group_id, 'producer_id': o.producer_id, 'producer_epoch': o.producer_epoch, 'generation_id': o.generation_id, 'member_id': o.member_id, 'group_instance_id': o.group_instance_id, 'offsets': [encode_TxnOffsetCommitPartition(x0) for x0 in o.offsets]}


@dataclass(slots=True, kw_only=True)
class TxnOffsetCommitPartitionResponse:
    """The msgpack API's TxnOffsetCommitPartitionResponse."""
    topic: str
    partition: int
    error: KafkaError | None = None


def decode_TxnOffsetCommitPartitionResponse(m: dict) -> TxnOffsetCommitPartitionResponse:
    return TxnOffsetCommitPartitionResponse(topic=m['topic'], partition=m['partition'], error=_error_of(m))


def encode_TxnOffsetCommitPartitionResponse(o: TxnOffsetCommitPartitionResponse) -> dict:
    return {'topic': o.topic, 'partition': o.partition, **_error_fields(o.error)}


@dataclass(slots=True, kw_only=True)
class TxnOffsetCommitResponse:
    """The msgpack API's TxnOffsetCommitResponse."""
    partitions: list[TxnOffsetCommitPartitionResponse]
    error: KafkaError | None = None


def decode_TxnOffsetCommitResponse(m: dict) -> TxnOffsetCommitResponse:
    return TxnOffsetCommitResponse(partitions=[decode_TxnOffsetCommitPartitionResponse(x0) for x0 in m['partitions']], error=_error_of(m))


def encode_TxnOffsetCommitResponse(o: TxnOffsetCommitResponse) -> dict:
    return {'partitions': [encode_TxnOffsetCommitPartitionResponse(x0) for x0 in o.partitions], **_error_fields(o.error)}


# Each API's request decoder and response encoder, by its name in ``POST /v1/<api>``.
DECODE_REQUEST: dict[str, Callable[[dict], Any]] = {
    'metadata': decode_MetadataRequest,
    'produce': decode_ProduceRequest,
    'init_producer_id': decode_InitProducerIdRequest,
    'fetch': decode_FetchRequest,
    'list_offsets': decode_ListOffsetsRequest,
    'create_topics': decode_CreateTopicsRequest,
    'leader_and_isr': decode_LeaderAndIsrRequest,
    'update_metadata': decode_UpdateMetadataRequest,
    'stop_replica': decode_StopReplicaRequest,
    'offsets_for_leader_epoch': decode_OffsetsForLeaderEpochRequest,
    'replica_state': decode_ReplicaStateRequest,
    'api_versions': decode_ApiVersionsRequest,
    'events': decode_EventsRequest,
    'controlled_shutdown': decode_ControlledShutdownRequest,
    'elect_leaders': decode_ElectLeadersRequest,
    'delete_topics': decode_DeleteTopicsRequest,
    'create_partitions': decode_CreatePartitionsRequest,
    'delete_records': decode_DeleteRecordsRequest,
    'create_acls': decode_CreateAclsRequest,
    'describe_acls': decode_DescribeAclsRequest,
    'delete_acls': decode_DeleteAclsRequest,
    'describe_configs': decode_DescribeConfigsRequest,
    'alter_configs': decode_AlterConfigsRequest,
    'alter_partition_reassignments': decode_AlterPartitionReassignmentsRequest,
    'list_partition_reassignments': decode_ListPartitionReassignmentsRequest,
    'describe_log_dirs': decode_DescribeLogDirsRequest,
    'find_coordinator': decode_FindCoordinatorRequest,
    'join_group': decode_JoinGroupRequest,
    'sync_group': decode_SyncGroupRequest,
    'heartbeat': decode_HeartbeatRequest,
    'leave_group': decode_LeaveGroupRequest,
    'offset_commit': decode_OffsetCommitRequest,
    'offset_fetch': decode_OffsetFetchRequest,
    'list_groups': decode_ListGroupsRequest,
    'describe_groups': decode_DescribeGroupsRequest,
    'delete_groups': decode_DeleteGroupsRequest,
    'offset_delete': decode_OffsetDeleteRequest,
    'write_txn_markers': decode_WriteTxnMarkersRequest,
    'add_partitions_to_txn': decode_AddPartitionsToTxnRequest,
    'add_offsets_to_txn': decode_AddOffsetsToTxnRequest,
    'end_txn': decode_EndTxnRequest,
    'describe_transactions': decode_DescribeTransactionsRequest,
    'list_transactions': decode_ListTransactionsRequest,
    'txn_offset_commit': decode_TxnOffsetCommitRequest,
}
ENCODE_RESPONSE: dict[str, Callable[[Any], dict]] = {
    'metadata': encode_MetadataResponse,
    'produce': encode_ProduceResponse,
    'init_producer_id': encode_InitProducerIdResponse,
    'fetch': encode_FetchResponse,
    'list_offsets': encode_ListOffsetsResponse,
    'create_topics': encode_CreateTopicsResponse,
    'leader_and_isr': encode_LeaderAndIsrResponse,
    'update_metadata': encode_UpdateMetadataResponse,
    'stop_replica': encode_StopReplicaResponse,
    'offsets_for_leader_epoch': encode_OffsetsForLeaderEpochResponse,
    'replica_state': encode_ReplicaStateResponse,
    'api_versions': encode_ApiVersionsResponse,
    'events': encode_EventsResponse,
    'controlled_shutdown': encode_ControlledShutdownResponse,
    'elect_leaders': encode_ElectLeadersResponse,
    'delete_topics': encode_DeleteTopicsResponse,
    'create_partitions': encode_CreatePartitionsResponse,
    'delete_records': encode_DeleteRecordsResponse,
    'create_acls': encode_CreateAclsResponse,
    'describe_acls': encode_DescribeAclsResponse,
    'delete_acls': encode_DeleteAclsResponse,
    'describe_configs': encode_DescribeConfigsResponse,
    'alter_configs': encode_AlterConfigsResponse,
    'alter_partition_reassignments': encode_AlterPartitionReassignmentsResponse,
    'list_partition_reassignments': encode_ListPartitionReassignmentsResponse,
    'describe_log_dirs': encode_DescribeLogDirsResponse,
    'find_coordinator': encode_FindCoordinatorResponse,
    'join_group': encode_JoinGroupResponse,
    'sync_group': encode_SyncGroupResponse,
    'heartbeat': encode_HeartbeatResponse,
    'leave_group': encode_LeaveGroupResponse,
    'offset_commit': encode_OffsetCommitResponse,
    'offset_fetch': encode_OffsetFetchResponse,
    'list_groups': encode_ListGroupsResponse,
    'describe_groups': encode_DescribeGroupsResponse,
    'delete_groups': encode_DeleteGroupsResponse,
    'offset_delete': encode_OffsetDeleteResponse,
    'write_txn_markers': encode_WriteTxnMarkersResponse,
    'add_partitions_to_txn': encode_AddPartitionsToTxnResponse,
    'add_offsets_to_txn': encode_AddOffsetsToTxnResponse,
    'end_txn': encode_EndTxnResponse,
    'describe_transactions': encode_DescribeTransactionsResponse,
    'list_transactions': encode_ListTransactionsResponse,
    'txn_offset_commit': encode_TxnOffsetCommitResponse,
}

# The caller's side: each API's request encoder and response decoder, by name.
ENCODE_REQUEST: dict[str, Callable[[Any], dict]] = {
    'metadata': encode_MetadataRequest,
    'produce': encode_ProduceRequest,
    'init_producer_id': encode_InitProducerIdRequest,
    'fetch': encode_FetchRequest,
    'list_offsets': encode_ListOffsetsRequest,
    'create_topics': encode_CreateTopicsRequest,
    'leader_and_isr': encode_LeaderAndIsrRequest,
    'update_metadata': encode_UpdateMetadataRequest,
    'stop_replica': encode_StopReplicaRequest,
    'offsets_for_leader_epoch': encode_OffsetsForLeaderEpochRequest,
    'replica_state': encode_ReplicaStateRequest,
    'api_versions': encode_ApiVersionsRequest,
    'events': encode_EventsRequest,
    'controlled_shutdown': encode_ControlledShutdownRequest,
    'elect_leaders': encode_ElectLeadersRequest,
    'delete_topics': encode_DeleteTopicsRequest,
    'create_partitions': encode_CreatePartitionsRequest,
    'delete_records': encode_DeleteRecordsRequest,
    'create_acls': encode_CreateAclsRequest,
    'describe_acls': encode_DescribeAclsRequest,
    'delete_acls': encode_DeleteAclsRequest,
    'describe_configs': encode_DescribeConfigsRequest,
    'alter_configs': encode_AlterConfigsRequest,
    'alter_partition_reassignments': encode_AlterPartitionReassignmentsRequest,
    'list_partition_reassignments': encode_ListPartitionReassignmentsRequest,
    'describe_log_dirs': encode_DescribeLogDirsRequest,
    'find_coordinator': encode_FindCoordinatorRequest,
    'join_group': encode_JoinGroupRequest,
    'sync_group': encode_SyncGroupRequest,
    'heartbeat': encode_HeartbeatRequest,
    'leave_group': encode_LeaveGroupRequest,
    'offset_commit': encode_OffsetCommitRequest,
    'offset_fetch': encode_OffsetFetchRequest,
    'list_groups': encode_ListGroupsRequest,
    'describe_groups': encode_DescribeGroupsRequest,
    'delete_groups': encode_DeleteGroupsRequest,
    'offset_delete': encode_OffsetDeleteRequest,
    'write_txn_markers': encode_WriteTxnMarkersRequest,
    'add_partitions_to_txn': encode_AddPartitionsToTxnRequest,
    'add_offsets_to_txn': encode_AddOffsetsToTxnRequest,
    'end_txn': encode_EndTxnRequest,
    'describe_transactions': encode_DescribeTransactionsRequest,
    'list_transactions': encode_ListTransactionsRequest,
    'txn_offset_commit': encode_TxnOffsetCommitRequest,
}
DECODE_RESPONSE: dict[str, Callable[[dict], Any]] = {
    'metadata': decode_MetadataResponse,
    'produce': decode_ProduceResponse,
    'init_producer_id': decode_InitProducerIdResponse,
    'fetch': decode_FetchResponse,
    'list_offsets': decode_ListOffsetsResponse,
    'create_topics': decode_CreateTopicsResponse,
    'leader_and_isr': decode_LeaderAndIsrResponse,
    'update_metadata': decode_UpdateMetadataResponse,
    'stop_replica': decode_StopReplicaResponse,
    'offsets_for_leader_epoch': decode_OffsetsForLeaderEpochResponse,
    'replica_state': decode_ReplicaStateResponse,
    'api_versions': decode_ApiVersionsResponse,
    'events': decode_EventsResponse,
    'controlled_shutdown': decode_ControlledShutdownResponse,
    'elect_leaders': decode_ElectLeadersResponse,
    'delete_topics': decode_DeleteTopicsResponse,
    'create_partitions': decode_CreatePartitionsResponse,
    'delete_records': decode_DeleteRecordsResponse,
    'create_acls': decode_CreateAclsResponse,
    'describe_acls': decode_DescribeAclsResponse,
    'delete_acls': decode_DeleteAclsResponse,
    'describe_configs': decode_DescribeConfigsResponse,
    'alter_configs': decode_AlterConfigsResponse,
    'alter_partition_reassignments': decode_AlterPartitionReassignmentsResponse,
    'list_partition_reassignments': decode_ListPartitionReassignmentsResponse,
    'describe_log_dirs': decode_DescribeLogDirsResponse,
    'find_coordinator': decode_FindCoordinatorResponse,
    'join_group': decode_JoinGroupResponse,
    'sync_group': decode_SyncGroupResponse,
    'heartbeat': decode_HeartbeatResponse,
    'leave_group': decode_LeaveGroupResponse,
    'offset_commit': decode_OffsetCommitResponse,
    'offset_fetch': decode_OffsetFetchResponse,
    'list_groups': decode_ListGroupsResponse,
    'describe_groups': decode_DescribeGroupsResponse,
    'delete_groups': decode_DeleteGroupsResponse,
    'offset_delete': decode_OffsetDeleteResponse,
    'write_txn_markers': decode_WriteTxnMarkersResponse,
    'add_partitions_to_txn': decode_AddPartitionsToTxnResponse,
    'add_offsets_to_txn': decode_AddOffsetsToTxnResponse,
    'end_txn': decode_EndTxnResponse,
    'describe_transactions': decode_DescribeTransactionsResponse,
    'list_transactions': decode_ListTransactionsResponse,
    'txn_offset_commit': decode_TxnOffsetCommitResponse,
}
