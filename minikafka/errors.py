"""One registry of Kafka error codes: wire code, name, exception class, flags.

Every response on the wire carries ``error_code`` (Kafka's number) and ``error``
(Kafka's name).  Clients turn a non-zero code back into the exception class
registered here with :func:`error_for`.

Two flags describe what a client may conclude from an error:

* ``retriable``: the same request may succeed later (a leader moved, a replica
  caught up).
* ``definite``: the request certainly had no effect.  An indefinite error
  (``REQUEST_TIMED_OUT`` after append, ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``, a
  dropped connection) means the write may still become committed.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    """A Kafka error: its wire number, its name and what a client may conclude."""

    code: int
    name: str
    retriable: bool
    definite: bool
    description: str


MAX_MESSAGE_CHARS = 1000  # an error message quoting a huge request field is cut here


class KafkaError(Exception):
    """Base class of every minikafka error; ``code`` is the registry entry.  Its message
    is at most :data:`MAX_MESSAGE_CHARS` long: one answer may carry an error per entry of a
    request, and a message quoting a 100 KB field 20,000 times would take gigabytes."""

    code: ErrorCode
    #: KIP-467: the records of a refused produce batch that caused the refusal, as
    #: ``(index in the batch, message)``; ProduceResponse v8+ carries them as
    #: ``record_errors``, so that a client fails only those records with this error and
    #: the others of the batch with its own "different record" error (librdkafka's
    #: _INVALID_DIFFERENT_RECORD).  Empty for every other error.
    record_errors: tuple[tuple[int, str | None], ...] = ()

    def __init__(self, message: str = "") -> None:
        message = message or self.code.description
        if len(message) > MAX_MESSAGE_CHARS:
            message = f"{message[:MAX_MESSAGE_CHARS]}... ({len(message)} characters)"
        super().__init__(message)
        self.message = message

    @property
    def retriable(self) -> bool:
        return self.code.retriable

    @property
    def definite(self) -> bool:
        return self.code.definite

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


_BY_CODE: dict[int, type[KafkaError]] = {}
_BY_NAME: dict[str, type[KafkaError]] = {}
REGISTRY: list[ErrorCode] = []


def _register(code: int, name: str, retriable: bool, description: str, definite: bool = True) -> type[KafkaError]:
    entry = ErrorCode(code, name, retriable, definite, description)
    cls_name = "".join(part.capitalize() for part in name.lower().split("_")) + "Error"
    cls = type(cls_name, (KafkaError,), {"code": entry, "__doc__": f"{name} ({code}): {description}"})
    cls.__module__ = __name__
    _BY_CODE[code] = cls
    _BY_NAME[name] = cls
    REGISTRY.append(entry)
    globals()[cls_name] = cls
    return cls


NONE = ErrorCode(0, "NONE", False, True, "No error.")

UnknownServerError = _register(-1, "UNKNOWN_SERVER_ERROR", False, "An unexpected error on the broker.", definite=False)
OffsetOutOfRangeError = _register(1, "OFFSET_OUT_OF_RANGE", False, "The requested offset is not within the range of offsets the broker holds.")
CorruptMessageError = _register(2, "CORRUPT_MESSAGE", True, "The record batch failed its CRC check, has an invalid size or is otherwise corrupt.")
UnknownTopicOrPartitionError = _register(3, "UNKNOWN_TOPIC_OR_PARTITION", True, "This server does not host this topic-partition.")
InvalidFetchSizeError = _register(4, "INVALID_FETCH_SIZE", False, "The requested fetch size is invalid.")
LeaderNotAvailableError = _register(5, "LEADER_NOT_AVAILABLE", True, "There is no leader for this topic-partition as we are in the middle of a leadership election.")
NotLeaderOrFollowerError = _register(6, "NOT_LEADER_OR_FOLLOWER", True, "This server is not the leader (or a follower, for follower fetches) of that topic-partition.")
RequestTimedOutError = _register(7, "REQUEST_TIMED_OUT", True, "The request timed out; a write may still become committed.", definite=False)
BrokerNotAvailableError = _register(8, "BROKER_NOT_AVAILABLE", True, "The broker is not available.")
ReplicaNotAvailableError = _register(9, "REPLICA_NOT_AVAILABLE", True, "The replica is not available for the requested topic-partition.")
MessageTooLargeError = _register(10, "MESSAGE_TOO_LARGE", False, "The request included a record batch larger than the maximum the server accepts.")
StaleControllerEpochError = _register(11, "STALE_CONTROLLER_EPOCH", False, "The controller moved to another broker: the request carries an old controller epoch.")
NetworkExceptionError = _register(13, "NETWORK_EXCEPTION", True, "The server disconnected before a response was received.", definite=False)
OffsetMetadataTooLargeError = _register(12, "OFFSET_METADATA_TOO_LARGE", False, "The metadata field of the offset request was too large.")
CoordinatorLoadInProgressError = _register(14, "COORDINATOR_LOAD_IN_PROGRESS", True, "The coordinator is loading its partition of __consumer_offsets and cannot answer yet.")
CoordinatorNotAvailableError = _register(15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available.")
NotCoordinatorError = _register(16, "NOT_COORDINATOR", True, "This is not the correct coordinator.")
InvalidTopicExceptionError = _register(17, "INVALID_TOPIC_EXCEPTION", False, "The topic name is invalid.")
RecordListTooLargeError = _register(18, "RECORD_LIST_TOO_LARGE", False, "The request included a record list larger than the maximum request size.")
NotEnoughReplicasError = _register(19, "NOT_ENOUGH_REPLICAS", True, "The ISR is smaller than min.insync.replicas: nothing was written.")
NotEnoughReplicasAfterAppendError = _register(20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, "The record was written, but the ISR shrank below min.insync.replicas before it was committed; it may still become visible.", definite=False)
InvalidRequiredAcksError = _register(21, "INVALID_REQUIRED_ACKS", False, "acks must be -1 (all), 0 or 1.")
IllegalGenerationError = _register(22, "ILLEGAL_GENERATION", False, "The generation id of the group is not the current one.")
InconsistentGroupProtocolError = _register(23, "INCONSISTENT_GROUP_PROTOCOL", False, "The group member's supported protocols are incompatible with those of existing members, or the protocol type is empty.")
InvalidGroupIdError = _register(24, "INVALID_GROUP_ID", False, "The group id is invalid.")
UnknownMemberIdError = _register(25, "UNKNOWN_MEMBER_ID", False, "The member id is not known to the coordinator.")
InvalidSessionTimeoutError = _register(26, "INVALID_SESSION_TIMEOUT", False, "The session timeout is not within the range allowed by the broker (group.min.session.timeout.ms, group.max.session.timeout.ms).")
RebalanceInProgressError = _register(27, "REBALANCE_IN_PROGRESS", False, "The group is rebalancing, so a rejoin is needed.")
InvalidCommitOffsetSizeError = _register(28, "INVALID_COMMIT_OFFSET_SIZE", False, "The committing offset data size is not valid.")
TopicAuthorizationFailedError = _register(29, "TOPIC_AUTHORIZATION_FAILED", False, "Topic authorization failed: an ACL does not allow this principal the operation on the topic.")
GroupAuthorizationFailedError = _register(30, "GROUP_AUTHORIZATION_FAILED", False, "Group authorization failed.")
ClusterAuthorizationFailedError = _register(31, "CLUSTER_AUTHORIZATION_FAILED", False, "The client is not allowed to perform this cluster action (e.g. a replica fetch).")
UnsupportedSaslMechanismError = _register(33, "UNSUPPORTED_SASL_MECHANISM", False, "The broker does not support the requested SASL mechanism.")
IllegalSaslStateError = _register(34, "ILLEGAL_SASL_STATE", False, "Request is not valid given the current SASL state.")
InvalidTimestampError = _register(32, "INVALID_TIMESTAMP", False, "The timestamp of the record is out of the acceptable range.")
UnsupportedVersionError = _register(35, "UNSUPPORTED_VERSION", False, "The API or version is not supported by this broker.")
TopicAlreadyExistsError = _register(36, "TOPIC_ALREADY_EXISTS", False, "The topic already exists.")
InvalidPartitionsError = _register(37, "INVALID_PARTITIONS", False, "The number of partitions is invalid.")
InvalidReplicationFactorError = _register(38, "INVALID_REPLICATION_FACTOR", False, "The replication factor is invalid (larger than the number of live brokers, or below 1).")
InvalidReplicaAssignmentError = _register(39, "INVALID_REPLICA_ASSIGNMENT", False, "The replica assignment is invalid.")
InvalidConfigError = _register(40, "INVALID_CONFIG", False, "The configuration is invalid.")
NotControllerError = _register(41, "NOT_CONTROLLER", True, "This is not the correct controller for this cluster.")
InvalidRequestError = _register(42, "INVALID_REQUEST", False, "The request is malformed: a field is missing, has the wrong type or is out of range.")
PolicyViolationError = _register(44, "POLICY_VIOLATION", False, "The request violates a policy of the cluster.")
OutOfOrderSequenceNumberError = _register(45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, "The broker received an out of order sequence number from an idempotent producer.")
DuplicateSequenceNumberError = _register(46, "DUPLICATE_SEQUENCE_NUMBER", False, "The broker received a duplicate sequence number.")
InvalidProducerEpochError = _register(47, "INVALID_PRODUCER_EPOCH", False, "Producer attempted to produce with an old epoch (another instance of it took over).")
SecurityDisabledError = _register(54, "SECURITY_DISABLED", False, "Security features are disabled (no authorizer is configured).")
KafkaStorageError = _register(56, "KAFKA_STORAGE_ERROR", True, "Disk error when trying to access the log.")
SaslAuthenticationFailedError = _register(58, "SASL_AUTHENTICATION_FAILED", False, "SASL authentication failed: unknown user or wrong password.")
UnknownProducerIdError = _register(59, "UNKNOWN_PRODUCER_ID", False, "The broker has no state for this producer id. Produce no longer answers it: as since Kafka 2.5, a partition accepts a producer it does not know at any sequence.")
ReassignmentInProgressError = _register(60, "REASSIGNMENT_IN_PROGRESS", False, "A partition reassignment is in progress.")
TopicDeletionDisabledError = _register(73, "TOPIC_DELETION_DISABLED", False, "Topic deletion is disabled.")
FencedLeaderEpochError = _register(74, "FENCED_LEADER_EPOCH", True, "The leader epoch in the request is older than the epoch on the broker.")
UnknownLeaderEpochError = _register(75, "UNKNOWN_LEADER_EPOCH", True, "The leader epoch in the request is newer than the epoch on the broker.")
UnsupportedCompressionTypeError = _register(76, "UNSUPPORTED_COMPRESSION_TYPE", False, "The requesting client does not support the compression type of given partition.")
FetchSessionIdNotFoundError = _register(70, "FETCH_SESSION_ID_NOT_FOUND", True, "The fetch session id is not known to the leader (it restarted, or evicted the session): send a full fetch.")
InvalidFetchSessionEpochError = _register(71, "INVALID_FETCH_SESSION_EPOCH", True, "The fetch session epoch is not the one the leader expects: send a full fetch.")
StaleBrokerEpochError = _register(77, "STALE_BROKER_EPOCH", False, "The broker epoch has changed: the request is from an earlier registration.")
OffsetNotAvailableError = _register(78, "OFFSET_NOT_AVAILABLE", True, "The leader high watermark has not caught up from a recent leader election, so the offset is not yet available.")
PreferredLeaderNotAvailableError = _register(80, "PREFERRED_LEADER_NOT_AVAILABLE", True, "The preferred leader was not available.")
EligibleLeadersNotAvailableError = _register(83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True, "Eligible topic partition leaders are not available.")
ElectionNotNeededError = _register(84, "ELECTION_NOT_NEEDED", False, "Leader election not needed for topic partition.")
NoReassignmentInProgressError = _register(85, "NO_REASSIGNMENT_IN_PROGRESS", False, "No partition reassignment is in progress.")
NonEmptyGroupError = _register(68, "NON_EMPTY_GROUP", False, "The group is not empty.")
GroupIdNotFoundError = _register(69, "GROUP_ID_NOT_FOUND", False, "The group id does not exist.")
MemberIdRequiredError = _register(79, "MEMBER_ID_REQUIRED", False, "The group member needs a valid member id before entering the group: join again with the member id in this answer.")
FencedInstanceIdError = _register(82, "FENCED_INSTANCE_ID", False, "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.")
GroupMaxSizeReachedError = _register(81, "GROUP_MAX_SIZE_REACHED", False, "The consumer group has reached its max size (group.max.size).")
GroupSubscribedToTopicError = _register(86, "GROUP_SUBSCRIBED_TO_TOPIC", False, "The consumer group is actively subscribed to the topic.")
InvalidRecordError = _register(87, "INVALID_RECORD", False, "A record failed validation on the broker.")
UnknownTopicIdError = _register(100, "UNKNOWN_TOPIC_ID", True, "This server does not host this topic ID.")
InconsistentTopicIdError = _register(103, "INCONSISTENT_TOPIC_ID", True, "The log's topic ID did not match the topic ID in the request.")

# Transactions (KIP-98, KIP-360, KIP-447, KIP-588, KIP-664), with Kafka's codes.
InvalidTxnStateError = _register(48, "INVALID_TXN_STATE", False, "The producer attempted a transactional operation in an invalid state.")
InvalidProducerIdMappingError = _register(49, "INVALID_PRODUCER_ID_MAPPING", False, "The producer attempted to use a producer id which is not currently assigned to its transactional id.")
InvalidTransactionTimeoutError = _register(50, "INVALID_TRANSACTION_TIMEOUT", False, "The transaction timeout is larger than transaction.max.timeout.ms or not positive.")
ConcurrentTransactionsError = _register(51, "CONCURRENT_TRANSACTIONS", True, "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.")
TransactionCoordinatorFencedError = _register(52, "TRANSACTION_COORDINATOR_FENCED", False, "A transaction marker came from a coordinator older than one the partition already heard from.")
TransactionalIdAuthorizationFailedError = _register(53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, "Transactional id authorization failed.")
OperationNotAttemptedError = _register(55, "OPERATION_NOT_ATTEMPTED", False, "The broker did not attempt this operation: another part of the request failed.")
ProducerFencedError = _register(90, "PRODUCER_FENCED", False, "A newer producer with the same transactional id (a higher epoch) fenced this one.")
TransactionalIdNotFoundError = _register(105, "TRANSACTIONAL_ID_NOT_FOUND", False, "The transactional id does not exist.")
UnstableOffsetCommitError = _register(88, "UNSTABLE_OFFSET_COMMIT", True, "There are unstable offsets that need to be cleared: a transaction holds offsets of the partition (OffsetFetch with require_stable).")

# The refusals of Kafka's RecordValidationException (a batch whose records fail the broker's
# checks): Kafka's produce answer carries an error message and the partition's log start
# only for these, -1 and no message for any other refusal.
RECORD_VALIDATION_ERRORS = (InvalidRecordError, InvalidTimestampError)


def error_for(code: int, message: str = "") -> KafkaError:
    """The exception instance for a wire error code (UNKNOWN_SERVER_ERROR if unknown)."""
    cls = _BY_CODE.get(code, UnknownServerError)
    return cls(message)


def error_class(name: str) -> type[KafkaError]:
    """The exception class registered under Kafka's error name, e.g. 'NOT_LEADER_OR_FOLLOWER'."""
    return _BY_NAME[name]


def error_name(code: int) -> str:
    """Kafka's name for a wire error code ('NONE' for 0)."""
    if code == 0:
        return "NONE"
    cls = _BY_CODE.get(code)
    return cls.code.name if cls else f"UNKNOWN({code})"


class ClientError(Exception):
    """A mistake in how a client or the CLI was called (no broker involved)."""


class WakeupError(ClientError):
    """A consumer's ``poll`` was cut short by :meth:`wakeup` (Kafka's WakeupException):
    it handed out nothing, so the positions are where they were."""


class LogTruncationError(ClientError):
    """The log a consumer read was truncated under it (an unclean leader election): the
    records it consumed from ``divergent_offsets[tp]`` on are not in the new leader's log.
    Raised by a consumer with ``auto_offset_reset="none"`` (Kafka's LogTruncationException);
    with another reset policy the consumer moves back to the divergent offset instead."""

    def __init__(self, message: str, divergent_offsets: dict | None = None) -> None:
        super().__init__(message)
        self.divergent_offsets = dict(divergent_offsets or {})
