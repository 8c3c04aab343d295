"""Typed views of the broker's configuration, one per service.

Each view is a frozen dataclass of the settings one service reads, with their types,
built from a :class:`~minikafka.config.BrokerConfig` by one classmethod, ``of``; its
field names are the Kafka names with dots turned into underscores, as the config's own
attributes.  A service that reads only static settings builds its view once, from the
config it was given.  A service that reads a dynamic setting (see
:data:`~minikafka.config.DYNAMIC_BROKER_CONFIGS`) holds the broker's
:class:`~minikafka.config.LiveConfig` and reads ``live.view(Kind)`` on every use: the
view is built once per config value and rebuilt after a dynamic change, which thus
applies at the next read, as before.

What stays a read by name: DescribeConfigs and the config APIs (the setting is named by
the request), the topic settings with their broker defaults
(:func:`~minikafka.config.topic_setting`), and the builders of the connection policy
and of the HTTP host allow-list, which are typed values of their own.  The controller's
view is :class:`minikafka.controller.settings.ControllerSettings`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..config import BrokerConfig, security_protocol, settings_of
from ..groups.group import GroupSettings
from ..replication.partition import TruncationMode

__all__ = ["BrokerSettings", "FetcherSettings", "GroupCoordinatorSettings", "InternalTopicSettings",
           "ReplicaSettings", "SecuritySettings", "TopicAdminSettings", "TxnCoordinatorSettings"]


@dataclass(frozen=True)
class BrokerSettings:
    """The broker's own: its ZooKeeper session and ACLs, the periodic work it runs over
    the replica manager, and controlled shutdown (:mod:`.server`, :mod:`.assembly`,
    :mod:`.ports`).  All static."""

    zookeeper_session_timeout_ms: int
    zookeeper_set_acl: bool
    controlled_shutdown_enable: bool
    replica_lag_time_max_ms: int  # the ISR check runs every half of it
    replica_high_watermark_checkpoint_interval_ms: int
    log_flush_start_offset_checkpoint_interval_ms: int
    log_retention_check_interval_ms: int
    producer_id_expiration_check_interval_ms: int
    log_cleaner_enable: bool
    log_cleaner_backoff_ms: int

    @classmethod
    def of(cls, config: BrokerConfig) -> BrokerSettings:
        """The broker settings of ``config``."""
        return settings_of(cls, config)


@dataclass(frozen=True)
class ReplicaSettings:
    """The replica manager's: the ISR rule, fetch sessions, truncation and producer
    expiry.  ``producer_id_expiration_ms`` is dynamic: the replica manager reads this view
    from its :class:`~minikafka.config.LiveConfig` on every use."""

    replica_lag_time_max_ms: int
    replica_lag_max_messages: int
    minikafka_replica_lag_idle_followers: bool
    max_incremental_fetch_session_cache_slots: int
    replication_truncation: TruncationMode
    producer_id_expiration_ms: int  # dynamic

    @classmethod
    def of(cls, config: BrokerConfig) -> ReplicaSettings:
        """The replica settings of ``config``."""
        return settings_of(cls, config, replication_truncation=TruncationMode(config.get("replication.truncation")))


@dataclass(frozen=True)
class FetcherSettings:
    """The follower fetchers' (:mod:`.fetcher`).  All static."""

    num_replica_fetchers: int
    replica_fetch_max_bytes: int
    replica_fetch_min_bytes: int
    replica_fetch_wait_max_ms: int
    replica_fetch_backoff_ms: int
    request_timeout_ms: int

    @classmethod
    def of(cls, config: BrokerConfig) -> FetcherSettings:
        """The fetcher settings of ``config``."""
        return settings_of(cls, config)


@dataclass(frozen=True)
class InternalTopicSettings:
    """How a coordinator creates its internal topic: partition count, replication factor
    (at most the live brokers) and topic configs; ``min_insync_replicas``, when given, is
    capped by the replication factor the topic gets."""

    num_partitions: int
    replication_factor: int
    configs: Mapping[str, str]
    min_insync_replicas: int | None = None

    def creation(self, live: int) -> tuple[int, dict[str, str]]:
        """The replication factor and configs of the topic created with ``live`` brokers."""
        rf = max(1, min(self.replication_factor, live))
        configs = dict(self.configs)
        if self.min_insync_replicas is not None:
            configs["min.insync.replicas"] = str(max(1, min(self.min_insync_replicas, rf)))
        return rf, configs


@dataclass(frozen=True)
class GroupCoordinatorSettings:
    """The group coordinator's (:mod:`.coordinator`): the group rules, committed offsets
    and ``__consumer_offsets``.  All static."""

    group_initial_rebalance_delay_ms: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_max_size: int
    offsets_topic_num_partitions: int
    offsets_topic_replication_factor: int
    offsets_topic_segment_bytes: int
    offsets_commit_timeout_ms: int
    offsets_retention_minutes: int
    offsets_retention_check_interval_ms: int
    offset_metadata_max_bytes: int

    @classmethod
    def of(cls, config: BrokerConfig) -> GroupCoordinatorSettings:
        """The group coordinator settings of ``config``."""
        return settings_of(cls, config)

    @property
    def groups(self) -> GroupSettings:
        """The rules each group keeps (the pure core's :class:`~minikafka.groups.group.GroupSettings`)."""
        return GroupSettings(self.group_initial_rebalance_delay_ms, self.group_min_session_timeout_ms,
                             self.group_max_session_timeout_ms, self.group_max_size)

    @property
    def offsets_topic(self) -> InternalTopicSettings:
        """``__consumer_offsets`` as Kafka creates it: compacted (the last commit per group
        and partition is what counts), and stored with the committing client's codec
        whatever the broker's compression.type."""
        return InternalTopicSettings(self.offsets_topic_num_partitions, self.offsets_topic_replication_factor,
                                     {"cleanup.policy": "compact", "segment.bytes": str(self.offsets_topic_segment_bytes),
                                      "compression.type": "producer"})


@dataclass(frozen=True)
class TxnCoordinatorSettings:
    """The transaction coordinator's (:mod:`.txn_coordinator`): transaction timeouts,
    the periodic aborts and expiries, and ``__transaction_state``.  All static."""

    transaction_state_log_num_partitions: int
    transaction_state_log_replication_factor: int
    transaction_state_log_min_isr: int
    transaction_state_log_segment_bytes: int
    transaction_max_timeout_ms: int
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int
    transaction_remove_expired_transaction_cleanup_interval_ms: int
    transactional_id_expiration_ms: int
    request_timeout_ms: int  # the coordinator's writes and its markers to other leaders
    offsets_topic_num_partitions: int  # AddOffsetsToTxn before __consumer_offsets exists

    @classmethod
    def of(cls, config: BrokerConfig) -> TxnCoordinatorSettings:
        """The transaction coordinator settings of ``config``."""
        return settings_of(cls, config)

    @property
    def state_topic(self) -> InternalTopicSettings:
        """``__transaction_state`` as Kafka's TransactionStateManager creates it: compacted,
        never unclean, and uncompressed whatever the broker's compression.type (the
        coordinator's own records are small and read back on every load)."""
        return InternalTopicSettings(self.transaction_state_log_num_partitions,
                                     self.transaction_state_log_replication_factor,
                                     {"cleanup.policy": "compact", "unclean.leader.election.enable": "false",
                                      "segment.bytes": str(self.transaction_state_log_segment_bytes),
                                      "compression.type": "uncompressed"},
                                     min_insync_replicas=self.transaction_state_log_min_isr)


@dataclass(frozen=True)
class TopicAdminSettings:
    """Topic creation and deletion defaults (:mod:`.topic_admin`, and the listeners'
    CreateTopics and Metadata through it).  All static."""

    num_partitions: int
    default_replication_factor: int
    auto_create_topics_enable: bool
    delete_topic_enable: bool

    @classmethod
    def of(cls, config: BrokerConfig) -> TopicAdminSettings:
        """The topic admin settings of ``config``."""
        return settings_of(cls, config)


@dataclass(frozen=True)
class SecuritySettings:
    """Authentication and authorization (:mod:`.security`).  All static; the passwords
    are left out of the repr."""

    listener_security_protocol_map: str
    sasl_users_file: str | None
    sasl_jaas_config: str | None = field(repr=False)
    ssl_keystore_location: str | None
    ssl_key_password: str | None = field(repr=False)
    ssl_truststore_location: str | None
    ssl_client_auth: str  # none, requested, required
    authorizer_class_name: str  # "": no ACLs
    super_users: str
    allow_everyone_if_no_acl_found: bool

    @classmethod
    def of(cls, config: BrokerConfig) -> SecuritySettings:
        """The security settings of ``config``."""
        return settings_of(cls, config)

    def protocol(self, listener: str) -> str:
        """The security protocol of ``listener`` (INTERNAL, EXTERNAL, KAFKA, KAFKA_EXTERNAL)."""
        return security_protocol(self.listener_security_protocol_map, listener)
