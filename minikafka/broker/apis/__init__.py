"""The request layer (Kafka's KafkaApis): one handler per API, behind both listeners.

Each handler takes a typed request (:mod:`minikafka.protocol.rpc.types`) and a
:class:`~.context.RequestContext`, and returns the typed response or raises a
:class:`~minikafka.errors.KafkaError` for the request as a whole.  No handler knows a
transport: the msgpack/HTTP listener (:mod:`..rpc_listener`) and the Kafka listener
(:mod:`..kafka`) decode into these types, call :class:`~.layer.RequestLayer`, and
encode what comes back.  Handlers are grouped by what they serve:

* :mod:`.data` -- Produce, Fetch, ListOffsets, OffsetsForLeaderEpoch, DeleteRecords, InitProducerId
* :mod:`.cluster` -- Metadata, ApiVersions, Events, ReplicaState
* :mod:`.admin` -- CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs, AlterConfigs,
  AlterPartitionReassignments
* :mod:`.control` -- LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown, ElectLeaders
* :mod:`.groups` -- the consumer-group APIs
* :mod:`.acls` -- CreateAcls, DescribeAcls, DeleteAcls
"""
