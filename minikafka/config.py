"""Broker and topic configuration under Kafka's own names.

Each setting is declared once in :data:`BROKER_CONFIGS` / :data:`TOPIC_CONFIGS`
(Kafka name, type, default, doc).  :class:`BrokerConfig` is the frozen result;
its attribute names are the Kafka names with dots turned into underscores
(``replica.lag.time.max.ms`` -> ``replica_lag_time_max_ms``).  Units are in the
names, as in Kafka (``_ms``, ``_bytes``).

A :class:`BrokerConfig` never changes: its settings and dynamic layers are read-only
mappings.  A change of the dynamic broker configs (``/config/brokers/<default>`` and
``/config/brokers/<id>``, see :data:`DYNAMIC_BROKER_CONFIGS`) makes a new value,
:meth:`BrokerConfig.with_dynamic`.  The broker holds the value in effect in one
:class:`LiveConfig`, which the config change listener replaces.  Only the services that
read a dynamic setting hold the :class:`LiveConfig` (the replica manager, for the topic
defaults, min.insync.replicas and producer.id.expiration.ms, and everything that reads
topic settings through it: metrics, the dashboard; the topic admin, for DescribeConfigs'
values, sources and synonyms; the controller, for unclean.leader.election.enable); their
``config`` property is the value in effect, so a read is a consistent snapshot.  Every
other service reads static settings only and keeps the value it was built with.

Services read their settings as typed attributes of a view, a frozen dataclass built from
a :class:`BrokerConfig` by one classmethod (:mod:`minikafka.broker.settings`,
:mod:`minikafka.controller.settings`): built once from a static config, or read as
:meth:`LiveConfig.view` on every use, which rebuilds it after a dynamic change.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Callable, Mapping, Protocol, Self, TypeVar

from .errors import InvalidConfigError, InvalidRequestError
from .listener_spec import LISTENER_NAMES, parse_advertised_listeners, parse_inter_broker_listener_name, parse_listeners


def _bool(text: str) -> bool:
    low = str(text).strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _choice(*options: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"expected one of {', '.join(options)}, got {text!r}")
        return text
    parse.__name__ = "|".join(options)
    return parse


CLEANUP_POLICIES = ("delete", "compact")


def _cleanup_policy(text: str) -> str:
    """Kafka's cleanup.policy: a list of delete and compact ("compact,delete" both)."""
    parts = [p.strip() for p in str(text).split(",")]
    if not parts or any(p not in CLEANUP_POLICIES for p in parts):
        raise ValueError(f"expected delete, compact or compact,delete, got {text!r}")
    return ",".join(p for p in ("compact", "delete") if p in parts)


def _ratio(text: str) -> float:
    try:
        v = float(text)
    except (TypeError, ValueError):
        v = float("nan")
    if not 0.0 <= v <= 1.0:
        raise ValueError(f"expected a number between 0 and 1, got {text!r}")
    return v


LONG_MAX = 9223372036854775807  # Kafka's Long.MAX_VALUE: "never" for the flush and lag settings

# Kafka's topic compression.type: "producer" keeps the producer's codec, "uncompressed" none.
TOPIC_COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


def _throttled_replicas(text: str) -> str:
    """Kafka's leader/follower.replication.throttled.replicas: "" (none), "*" (all) or
    PARTITION:BROKER pairs."""
    items = [p.strip() for p in str(text).split(",") if p.strip()]
    if items == ["*"]:
        return "*"
    for item in items:
        part, sep, broker = item.partition(":")
        if not sep or not part.strip().isdigit() or not broker.strip().isdigit():
            raise ValueError(f"expected '*' or PARTITION:BROKER pairs such as 0:1,1:2, got {text!r}")
    return ",".join(items)


def _host_names(text: str) -> str:
    """minikafka.http.allowed.hosts: host names separated by commas ("" none, "*" any)."""
    items = [p.strip().lower() for p in str(text).split(",") if p.strip()]
    for item in items:
        if any(c.isspace() or c in "/?#@" for c in item):
            raise ValueError(f"expected host names separated by commas (or *), got {item!r}")
    return ",".join(items)


def _jaas_config(text: str) -> str | None:
    """sasl.jaas.config: checked as Kafka's PLAIN login module entry (auth/users.py); "" unsets it."""
    from .auth.users import parse_jaas_users

    if not str(text).strip():
        return None
    try:
        parse_jaas_users(str(text))
    except InvalidConfigError as exc:
        raise ValueError(exc.message.removeprefix("sasl.jaas.config: ")) from None
    return str(text)


def _text_value(text: str) -> str:
    return str(text)


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _protocol_map(text: str) -> str:
    """Kafka's listener.security.protocol.map over minikafka's four listeners:
    ``INTERNAL:SASL_PLAINTEXT,KAFKA:SASL_SSL``; a listener not named is PLAINTEXT."""
    out = {}
    for item in (p.strip() for p in str(text).split(",")):
        if not item:
            continue
        name, sep, proto = item.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or name not in LISTENER_NAMES or proto not in SECURITY_PROTOCOLS:
            raise ValueError(f"expected LISTENER:PROTOCOL pairs with a listener of {', '.join(LISTENER_NAMES)} "
                             f"and a protocol of {', '.join(SECURITY_PROTOCOLS)}, got {item!r}")
        out[name] = proto
    return ",".join(f"{n}:{out.get(n, 'PLAINTEXT')}" for n in LISTENER_NAMES)


def security_protocol(protocol_map: str, listener: str) -> str:
    """The security protocol of ``listener`` in a (checked) listener.security.protocol.map."""
    return dict(p.split(":") for p in _protocol_map(protocol_map).split(",")).get(listener, "PLAINTEXT")


def _mechanisms(text: str) -> str:
    parts = [p.strip().upper() for p in str(text).split(",") if p.strip()]
    if parts != ["PLAIN"]:
        raise ValueError(f"only PLAIN is supported, got {text!r}")
    return "PLAIN"


def _authorizer(text: str) -> str:
    if text not in AUTHORIZERS:
        raise ValueError(f"expected empty (no authorizer) or one of {', '.join(a for a in AUTHORIZERS if a)}, got {text!r}")
    return text


# Kafka's ZooKeeper-based ACL authorizers (2.x and 1.x names); both mean the same here.
AUTHORIZERS = ("", "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer")


def _optional_path(text: str) -> str | None:
    return str(text) or None


def compacts(policy: str) -> bool:
    """True when a cleanup.policy value includes compaction."""
    return "compact" in policy.split(",")


def deletes(policy: str) -> bool:
    """True when a cleanup.policy value includes deletion by retention."""
    return "delete" in policy.split(",")


@dataclass(frozen=True)
class ConfigDef:
    """One configuration: Kafka's name, a parser, the default and what it does."""

    name: str
    parse: Callable[[str], Any]
    default: Any
    doc: str
    minimum: int | None = None

    @property
    def attr(self) -> str:
        return self.name.replace(".", "_")

    def convert(self, value: Any) -> Any:
        try:
            v = self.parse(value) if isinstance(value, str) or self.parse is not int else int(value)
        except (ValueError, TypeError) as exc:
            # int() says "invalid literal for int() with base 10": say it in words
            why = "expected a whole number" if self.parse is int else str(exc)
            shown = "(not shown: a password)" if self.name in SENSITIVE_CONFIGS else repr(value)
            raise InvalidConfigError(f"invalid value {shown} for {self.name}: {why}") from None
        if self.minimum is not None and v < self.minimum:
            raise InvalidConfigError(f"invalid value {value!r} for {self.name}: must be >= {self.minimum}")
        return v


BROKER_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("zookeeper.session.timeout.ms", int, 6000, "ZooKeeper session timeout; a dead broker's registration vanishes after it.", 1000),
    ConfigDef("zookeeper.set.acl", _bool, False, "Create znodes that only the brokers may change (ZooKeeper digest ACLs from the "
              "cluster credential; everyone may read), the root of the namespace included. Needs the cluster credential. "
              "`cluster up` and docker-compose.yml turn it on (`cluster up --no-zookeeper-acl` leaves it off).", None),
    ConfigDef("listeners", parse_listeners, None,
              "Where the broker listens, as NAME://HOST:PORT items: INTERNAL (msgpack/HTTP, required: brokers, "
              "the controller and minikafka's clients), EXTERNAL (msgpack/HTTP for clients outside the brokers' "
              "network), KAFKA and KAFKA_EXTERNAL (Kafka's binary protocol). 0.0.0.0 or an empty host binds every "
              "interface. The flags --listen, --listen-external, --kafka-listen, --kafka-listen-external are "
              "shorthands and must agree. See docs/deployment.md.", None),
    ConfigDef("advertised.listeners", parse_advertised_listeners, None,
              "The NAME://HOST:PORT others use to reach each listener (registered in ZooKeeper and answered in "
              "Metadata); names must be among listeners, 0.0.0.0 is refused. A listener left out advertises its "
              "listeners address, or the machine's host name where that binds every interface. The flags "
              "--advertise, --advertise-external, --kafka-advertise, --kafka-advertise-external are shorthands.",
              None),
    ConfigDef("inter.broker.listener.name", parse_inter_broker_listener_name, "INTERNAL",
              "The listener brokers and the controller use. Only INTERNAL is valid: the inter-broker hop is "
              "msgpack/HTTP (not KAFKA, KAFKA_EXTERNAL) on the listener every broker registers (not the "
              "optional EXTERNAL).", None),
    ConfigDef("listener.security.protocol.map", _protocol_map, _protocol_map(""),
              "Security protocol of each listener (INTERNAL, EXTERNAL, KAFKA, KAFKA_EXTERNAL): PLAINTEXT, SSL (TLS), "
              "SASL_PLAINTEXT (user and password) or SASL_SSL (both). Brokers authenticate to each other with the "
              "cluster credential.", None),
    ConfigDef("sasl.enabled.mechanisms", _mechanisms, "PLAIN", "SASL mechanisms of SASL_* listeners (PLAIN only).", None),
    ConfigDef("sasl.users.file", _optional_path, None, "File of NAME=PASSWORD lines: the users who may authenticate "
              "on SASL_* listeners (Kafka's user_NAME=\"PASSWORD\" entries of the PLAIN login module).", None),
    ConfigDef("sasl.jaas.config", _jaas_config, None, "Kafka's JAAS entry for SASL/PLAIN on SASL_* listeners: "
              "org.apache.kafka.common.security.plain.PlainLoginModule required user_NAME=\"PASSWORD\" ...; "
              "its user_ entries are users as sasl.users.file's lines are (both may be given). username and "
              "password are accepted and not used: brokers authenticate to each other with the cluster "
              "credential. A password: DescribeConfigs answers no value, and cluster up passes it in a file, "
              "not on the command line.", None),
    ConfigDef("authorizer.class.name", _authorizer, "", "Turn on ACLs (kept in ZooKeeper's /kafka-acl, as Kafka 2.x): "
              "kafka.security.authorizer.AclAuthorizer. Empty: every principal may do everything.", None),
    ConfigDef("super.users", str, "", "Principals that pass every ACL check, separated by ';' (User:admin;User:ops). "
              "Holders of the cluster credential always do.", None),
    ConfigDef("allow.everyone.if.no.acl.found", _bool, False, "With an authorizer: allow everything on a resource "
              "that no ACL names.", None),
    ConfigDef("ssl.keystore.location", _optional_path, None, "PEM file with this broker's private key and "
              "certificate chain (Kafka's ssl.keystore.type=PEM), for SSL and SASL_SSL listeners.", None),
    ConfigDef("ssl.key.password", _optional_path, None, "Password of the private key in ssl.keystore.location, if "
              "it is encrypted. A password: DescribeConfigs answers no value (is_sensitive); give it in the "
              "broker's --config-file rather than on its command line.", None),
    ConfigDef("ssl.truststore.location", _optional_path, None, "PEM file of the certificate authorities whose "
              "client certificates this broker accepts (ssl.client.auth).", None),
    ConfigDef("ssl.client.auth", _choice("none", "requested", "required"), "none", "Ask TLS clients for a "
              "certificate: none, requested or required. A client certificate's subject is the principal "
              "(User:CN=...).", None),
    ConfigDef("replica.lag.time.max.ms", int, 10000, "A follower that has not caught up to the leader's LEO for this long leaves the ISR, unless the LEO it "
              "last reported is the leader's LEO now (an idle partition keeps a follower that stopped fetching; see "
              "minikafka.replica.lag.idle.followers).", 1),
    ConfigDef("replica.lag.max.messages", int, 0, "Legacy rule (Kafka < 0.9): a follower this many messages behind leaves the ISR; 0 turns it off.", 0),
    ConfigDef("minikafka.replica.lag.idle.followers", _bool, False, "false (Kafka's rule): a follower whose last "
              "fetch reached the leader's log end stays in the ISR while nothing new is written, however long it "
              "has not fetched. true: replica.lag.time.max.ms alone decides, so a stopped (frozen, cut off) "
              "follower leaves the ISR of idle partitions too, which shows the lag rule without writing anything. "
              "Not a Kafka setting.", None),
    ConfigDef("replica.fetch.wait.max.ms", int, 500, "Longest a follower fetch waits at the leader for data.", 0),
    ConfigDef("replica.fetch.min.bytes", int, 1, "Bytes a follower fetch waits for before the leader answers.", 0),
    ConfigDef("replica.fetch.max.bytes", int, 1048576, "Bytes a follower asks for per partition (at least one batch is returned).", 1),
    ConfigDef("replica.fetch.backoff.ms", int, 1000, "Pause of a fetcher after an error (a new partition its leader has not taken up yet is first asked again every 20 ms, up to 50 times).", 0),
    ConfigDef("num.replica.fetchers", int, 1, "Fetcher tasks per source broker.", 1),
    ConfigDef("max.incremental.fetch.session.cache.slots", int, 1000, "Incremental fetch sessions (KIP-227) a "
              "leader keeps: a session's fetches name only the partitions that changed. 0 turns sessions off "
              "(every fetch names every partition).", 0),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", int, 5000, "How often replication-offset-checkpoint is written.", 1),
    ConfigDef("log.flush.start.offset.checkpoint.interval.ms", int, 60000,
              "How often log-start-offset-checkpoint is written (when a log start moved; also at a clean stop). A "
              "broker that crashes comes back with the log starts last written: a DeleteRecords inside a segment "
              "newer than that is undone, as in Kafka.", 1),
    ConfigDef("min.insync.replicas", int, 1, "Default for topics: smallest ISR with which acks=all produces are accepted.", 1),
    ConfigDef("unclean.leader.election.enable", _bool, False, "Default for topics: elect a live out-of-sync replica when no ISR replica is alive (may lose data).", None),
    ConfigDef("default.replication.factor", int, 1, "Replication factor for topics created without one.", 1),
    ConfigDef("num.partitions", int, 1, "Partitions for topics created without a count.", 1),
    ConfigDef("auto.create.topics.enable", _bool, True, "Create a topic (num.partitions, default.replication.factor) "
              "when a Metadata request names an unknown topic and allows it, as producers' requests do, on the Kafka "
              "and the msgpack listener alike (`minikafka produce newtopic` creates it); false answers "
              "UNKNOWN_TOPIC_OR_PARTITION.", None),
    ConfigDef("message.max.bytes", int, 1048588, "Largest record batch the broker accepts (read from the batch's "
              "header, before anything else is checked), and the most a compressed batch may expand to when the "
              "leader decompresses it to validate it: one expanding further is MESSAGE_TOO_LARGE.", 1),
    ConfigDef("socket.request.max.bytes", int, 104857600, "Largest request body the broker accepts: a larger "
              "HTTP Content-Length is answered 413 (INVALID_REQUEST) at once, a larger Kafka frame closes its "
              "connection.", 1),
    ConfigDef("request.timeout.ms", int, 30000, "Timeout of controller-to-broker and broker-to-broker requests. "
              "On both client listeners, also how long a request may take to arrive once its first byte did: its "
              "head (an HTTP request head: else 408 and closed; a Kafka frame's size), then its body (else "
              "closed). A connection handed to the dashboard's web app waits this long at most for its next "
              "request.", 1),
    ConfigDef("max.connections", int, None, "Most client connections the broker keeps open, over both client "
              "listeners (msgpack HTTP and Kafka); a new one beyond it is closed at once. Unset (Kafka: "
              "2147483647): the process's open-file limit (RLIMIT_NOFILE) minus a reserve of 256 descriptors for "
              "ZooKeeper, log files, checkpoints and replication. A larger value is lowered to that, so a client "
              "flood never takes the descriptors the broker needs to keep its ZooKeeper session.", 1),
    ConfigDef("max.connections.per.ip", int, 2147483647, "Most connections from one IP address, over both "
              "client listeners; a new one beyond it is closed at once.", 0),
    ConfigDef("connections.max.idle.ms", int, 600000, "A client connection that has had no request in flight "
              "for this long is closed (both listeners).", 1),
    ConfigDef("queued.max.request.bytes", int, 536870912, "Bytes the client requests of both client listeners "
              "hold at once, each from its first byte read until its answer has left: its head as it arrives, "
              "its body (taken before the body is read) and its answer while it waits to be sent. A connection "
              "whose next body does not fit waits (it is not read) until memory frees, as Kafka mutes its "
              "channel; -1 sets no bound (Kafka's default; here 512 MiB, at least socket.request.max.bytes). A "
              "broker's memory stays within about this much above its resting size (security.md, memory "
              "floods).", -1),
    ConfigDef("minikafka.http.allowed.hosts", _host_names, "", "More names the HTTP listeners answer for, "
              "separated by commas (* for any). A request whose Host header (its port aside) names neither these nor "
              "the broker's own (each listener's host and advertised host, localhost, 127.0.0.1, ::1) gets 421 "
              "Misdirected Request and changes nothing: a web page whose name was pointed at the broker (DNS "
              "rebinding) cannot use it. Add the names clients use beyond the advertised ones (a load balancer's, "
              "an address of a broker listening on 0.0.0.0). Not a Kafka setting.", None),
    ConfigDef("connection.failed.authentication.delay.ms", int, 100, "After a failed authentication (SASL on "
              "the Kafka listener, HTTP Basic on the msgpack listener) the answer waits this long, then the "
              "connection is closed: each password guess costs a new connection and this delay.", 0),
    ConfigDef("controlled.shutdown.enable", _bool, True, "On SIGTERM, ask the controller to move leaderships away first.", None),
    ConfigDef("auto.leader.rebalance.enable", _bool, True, "Periodically move leadership back to preferred replicas.", None),
    ConfigDef("leader.imbalance.check.interval.seconds", int, 300, "How often the controller checks leader imbalance.", 1),
    ConfigDef("leader.imbalance.per.broker.percentage", int, 10, "Imbalance ratio above which a preferred election is triggered.", 0),
    ConfigDef("delete.topic.enable", _bool, True, "Allow topic deletion.", None),
    ConfigDef("replication.truncation", _choice("leader_epoch", "high_watermark"), "leader_epoch",
              "How a follower truncates on becoming follower or restart: by leader epoch (KIP-101, default) or to its HW "
              "(before KIP-101; its fetches then carry no leader epoch either, so a stale follower is not fenced: "
              "before KIP-320)."),
    ConfigDef("log.segment.bytes", int, 1073741824, "Default for topics: a new log segment starts before a batch "
              "that would take the active one past this size (memory and disk storage; retention deletes whole "
              "segments).", 1024),
    ConfigDef("log.roll.hours", int, 168, "Default for topics: a new segment starts when a batch's timestamp is "
              "this long after the active segment's first (log.roll.ms wins when set).", 1),
    ConfigDef("log.roll.ms", int, None, "Default for topics, in ms (see log.roll.hours).", 1),
    ConfigDef("log.retention.hours", int, 168, "Default for topics: segments whose newest record is older than this "
              "are deleted (log.retention.minutes, then log.retention.ms win when set); -1 keeps them forever.", -1),
    ConfigDef("log.retention.minutes", int, None, "Default for topics, in minutes (see log.retention.hours).", -1),
    ConfigDef("log.retention.ms", int, None, "Default for topics, in ms (see log.retention.hours); -1 keeps "
              "records forever.", -1),
    ConfigDef("log.retention.bytes", int, -1, "Default for topics: the oldest segments of a partition are deleted "
              "while it holds more than this without them; -1 sets no bound.", -1),
    ConfigDef("log.retention.check.interval.ms", int, 300000, "How often each broker applies retention to its "
              "replicas' logs.", 1),
    ConfigDef("log.cleanup.policy", _cleanup_policy, "delete", "Default for topics: delete old segments by "
              "retention, compact (keep the last record per key), or compact,delete (both)."),
    ConfigDef("log.cleaner.threads", int, 1, "Threads of the log cleaner (dynamic). Accepted and described; "
              "each broker cleans one log at a time here.", 0),
    ConfigDef("leader.replication.throttled.rate", int, LONG_MAX, "Bytes per second a leader may send to the "
              "throttled replicas of a reassignment (dynamic; kafka-reassign-partitions --throttle sets it and "
              "--verify clears it). Accepted and described; no effect here: replication is not throttled.", 0),
    ConfigDef("follower.replication.throttled.rate", int, LONG_MAX, "Bytes per second a follower may fetch "
              "for throttled replicas (dynamic). Accepted and described; no effect here: replication is not "
              "throttled.", 0),
    ConfigDef("replica.alter.log.dirs.io.max.bytes.per.second", int, LONG_MAX, "Bytes per second of moves "
              "between log directories (dynamic). Accepted and described; no effect here: a broker has one "
              "log directory.", 0),
    ConfigDef("log.cleaner.enable", _bool, True, "Run the log cleaner, which compacts topics with "
              "cleanup.policy=compact.", None),
    ConfigDef("log.cleaner.backoff.ms", int, 15000, "How often the log cleaner looks for logs to compact.", 1),
    ConfigDef("log.cleaner.delete.retention.ms", int, 86400000, "Default for topics: how long a tombstone (a "
              "record with a null value) stays in a compacted log, by its timestamp.", 0),
    ConfigDef("log.cleaner.min.cleanable.ratio", _ratio, 0.5, "Default for topics: a compacted log is cleaned "
              "when at least this share of its cleanable bytes was written since the last cleaning."),
    ConfigDef("log.cleaner.min.compaction.lag.ms", int, 0, "Default for topics: records younger than this "
              "(by timestamp) are not compacted.", 0),
    ConfigDef("log.cleaner.max.compaction.lag.ms", int, LONG_MAX, "Default for topics: a compacted log is "
              "cleaned once its oldest uncleaned record is older than this, whatever its dirty ratio.", 1),
    ConfigDef("compression.type", _choice(*TOPIC_COMPRESSION_TYPES), "producer", "Default for topics: the "
              "codec the leader stores batches with: producer (the producer's), uncompressed, gzip, snappy, lz4 "
              "or zstd (the leader recompresses other batches)."),
    ConfigDef("compression.gzip.level", int, -1, "Default for topics: gzip level. Accepted and described; no effect here (the default level is used).", -1),
    ConfigDef("compression.lz4.level", int, 9, "Default for topics: lz4 level. Accepted and described; no effect here (the default level is used).", 1),
    ConfigDef("compression.zstd.level", int, 3, "Default for topics: zstd level. Accepted and described; no effect here (the default level is used).", -131072),
    ConfigDef("log.message.timestamp.type", _choice("CreateTime", "LogAppendTime"), "CreateTime", "Default for "
              "topics: CreateTime keeps the producer's timestamps; LogAppendTime has the leader stamp each batch "
              "with its clock (the batch's max timestamp and timestamp type bit)."),
    ConfigDef("log.message.timestamp.difference.max.ms", int, LONG_MAX, "Default for topics (deprecated in "
              "Kafka): how far a CreateTime may be from the leader's clock, either way, where "
              "log.message.timestamp.before.max.ms or log.message.timestamp.after.max.ms is left at its default.", 0),
    ConfigDef("log.message.timestamp.before.max.ms", int, LONG_MAX, "Default for topics: how far before the leader's "
              "clock a record's CreateTime may be; a batch with an older one is refused with INVALID_TIMESTAMP "
              "naming those records (record_errors).", 0),
    ConfigDef("log.message.timestamp.after.max.ms", int, LONG_MAX, "Default for topics: how far after the leader's "
              "clock a record's CreateTime may be; a batch with a later one is refused with INVALID_TIMESTAMP naming "
              "those records (record_errors).", 0),
    ConfigDef("log.message.downconversion.enable", _bool, True, "Default for topics. Accepted and described; no effect here: "
              "only record batch v2 is served, to clients that all read it.", None),
    ConfigDef("log.message.format.version", _text_value, "3.0-IV1", "Default for topics (deprecated in Kafka). "
              "Accepted and described; no effect here: batches are always v2.", None),
    ConfigDef("log.flush.interval.messages", int, LONG_MAX, "Default for topics. Accepted and described; no effect here: "
              "memory storage never flushes; disk storage writes through at each append.", 1),
    ConfigDef("log.flush.interval.ms", int, LONG_MAX, "Default for topics. Accepted and described; no effect here (see "
              "log.flush.interval.messages).", 0),
    ConfigDef("log.index.interval.bytes", int, 4096, "Default for topics. Accepted and described; no effect here: the log "
              "indexes every batch in memory.", 0),
    ConfigDef("log.index.size.max.bytes", int, 10485760, "Default for topics. Accepted and described; no effect here (no "
              "index files).", 4),
    ConfigDef("log.preallocate", _bool, False, "Default for topics. Accepted and described; no effect here (no segment files "
              "are preallocated).", None),
    ConfigDef("log.roll.jitter.ms", int, 0, "Default for topics. Accepted and described; no effect here: segments roll at "
              "segment.ms exactly.", 0),
    ConfigDef("log.segment.delete.delay.ms", int, 60000, "Default for topics. Accepted and described; no effect here: deleted "
              "segments go at once.", 0),
    ConfigDef("log.local.retention.ms", int, -2, "Default for topics (tiered storage). Accepted and described; no effect here.", -2),
    ConfigDef("log.local.retention.bytes", int, -2, "Default for topics (tiered storage). Accepted and described; no effect here.", -2),
    ConfigDef("offsets.topic.segment.bytes", int, 104857600, "segment.bytes of __consumer_offsets (a compacted "
              "topic: only closed segments are compacted).", 1024),
    ConfigDef("offsets.topic.num.partitions", int, 50, "Partitions of __consumer_offsets, created on first use "
              "(Kafka's default, 50; a lower value makes a small cluster's listings shorter). Fixed once the topic "
              "exists.", 1),
    ConfigDef("offsets.topic.replication.factor", int, 3, "Replication factor of __consumer_offsets "
              "(fewer when fewer brokers are alive at its creation).", 1),
    ConfigDef("offsets.commit.timeout.ms", int, 5000, "How long an offset commit or group metadata write waits "
              "for every ISR replica (acks=all).", 1),
    ConfigDef("offsets.retention.minutes", int, 10080, "Committed offsets of a group that has been empty this long are deleted.", 1),
    ConfigDef("offsets.retention.check.interval.ms", int, 600000, "How often the coordinator looks for expired offsets.", 1),
    ConfigDef("offset.metadata.max.bytes", int, 4096, "Largest metadata string of a committed offset.", 0),
    ConfigDef("group.initial.rebalance.delay.ms", int, 3000, "How long the first rebalance of an empty group waits "
              "for more members (each new member extends it, up to the rebalance timeout).", 0),
    ConfigDef("group.min.session.timeout.ms", int, 6000, "Smallest session.timeout.ms a group member may ask for.", 1),
    ConfigDef("group.max.session.timeout.ms", int, 1800000, "Largest session.timeout.ms a group member may ask for.", 1),
    ConfigDef("group.max.size", int, 2147483647, "Most members a group may have.", 1),
    # -- transactions (KIP-98): the transaction coordinator and __transaction_state
    ConfigDef("transaction.state.log.num.partitions", int, 50, "Partitions of __transaction_state, created on the "
              "first FindCoordinator for a transactional id. Fixed once the topic exists.", 1),
    ConfigDef("transaction.state.log.replication.factor", int, 3, "Replication factor of __transaction_state "
              "(fewer when fewer brokers are alive at its creation).", 1),
    ConfigDef("transaction.state.log.min.isr", int, 2, "min.insync.replicas of __transaction_state (capped by "
              "its replication factor).", 1),
    ConfigDef("transaction.state.log.segment.bytes", int, 104857600, "segment.bytes of __transaction_state "
              "(a compacted topic).", 1024),
    ConfigDef("transaction.max.timeout.ms", int, 900000, "Largest transaction.timeout.ms a producer may ask for "
              "in InitProducerId (INVALID_TRANSACTION_TIMEOUT above it).", 1),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", int, 10000, "How often the "
              "transaction coordinator aborts transactions that ran past their transaction.timeout.ms.", 1),
    ConfigDef("producer.id.expiration.ms", int, 86400000, "An idempotent producer that wrote nothing to a "
              "partition for this long (from its last batch's timestamp) is forgotten by that partition's "
              "replicas, unless a transaction of it is open there; until then it is kept even when retention "
              "or DeleteRecords removed all its batches (dynamic).", 1),
    ConfigDef("producer.id.expiration.check.interval.ms", int, 600000, "How often each broker looks for "
              "expired producers in its replicas (producer.id.expiration.ms).", 1),
    ConfigDef("transactional.id.expiration.ms", int, 604800000, "A transactional id with no transaction for this "
              "long is removed (a tombstone in __transaction_state); its next InitProducerId starts afresh.", 1),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", int, 3600000, "How often the "
              "transaction coordinator looks for expired transactional ids.", 1),
)

TOPIC_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("min.insync.replicas", int, None, "Smallest ISR with which acks=all produces are accepted (broker default if unset); "
              "above the replication factor it counts as the replication factor, as in Kafka.", 1),
    ConfigDef("unclean.leader.election.enable", _bool, None, "Allow electing an out-of-sync replica (broker default if unset).", None),
    ConfigDef("max.message.bytes", int, None, "Largest record batch for this topic, and the most one may expand to "
              "once decompressed (broker message.max.bytes if unset).", 1),
    ConfigDef("segment.bytes", int, None, "Segment size (broker log.segment.bytes if unset).", 1024),
    ConfigDef("segment.ms", int, None, "Start a new segment when a batch's timestamp is this long after the active "
              "segment's first (broker log.roll.ms / log.roll.hours if unset).", 1),
    ConfigDef("retention.ms", int, None, "Delete closed segments below the high watermark whose newest record is "
              "older than this; -1: never (broker log.retention.* if unset).", -1),
    ConfigDef("retention.bytes", int, None, "Delete the oldest closed segments below the high watermark while the "
              "partition holds more than this without them; -1: no bound (broker log.retention.bytes if unset).", -1),
    ConfigDef("cleanup.policy", _cleanup_policy, None, "delete (retention deletes old segments), compact (the log "
              "cleaner keeps the last record per key) or compact,delete (broker log.cleanup.policy if unset)."),
    ConfigDef("delete.retention.ms", int, None, "How long tombstones stay in a compacted log, by their timestamp "
              "(broker log.cleaner.delete.retention.ms if unset).", 0),
    ConfigDef("min.cleanable.dirty.ratio", _ratio, None, "Share of a compacted log's cleanable bytes written since "
              "its last cleaning that makes it due (broker log.cleaner.min.cleanable.ratio if unset)."),
    ConfigDef("min.compaction.lag.ms", int, None, "Records younger than this are not compacted (broker "
              "log.cleaner.min.compaction.lag.ms if unset).", 0),
    ConfigDef("max.compaction.lag.ms", int, None, "A compacted log is cleaned once its oldest uncleaned record "
              "is older than this, even below min.cleanable.dirty.ratio (broker "
              "log.cleaner.max.compaction.lag.ms if unset).", 1),
    ConfigDef("compression.type", _choice(*TOPIC_COMPRESSION_TYPES), None, "Codec the leader stores batches "
              "with: producer (the producer's codec), uncompressed, gzip, snappy, lz4 or zstd; the leader "
              "recompresses batches in another codec (broker compression.type if unset)."),
    ConfigDef("compression.gzip.level", int, None, "Accepted and described; no effect here (broker compression.gzip.level if unset).", -1),
    ConfigDef("compression.lz4.level", int, None, "Accepted and described; no effect here (broker compression.lz4.level if unset).", 1),
    ConfigDef("compression.zstd.level", int, None, "Accepted and described; no effect here (broker compression.zstd.level if unset).", -131072),
    ConfigDef("message.timestamp.type", _choice("CreateTime", "LogAppendTime"), None, "CreateTime (the "
              "producer's timestamps) or LogAppendTime (the leader stamps each batch with its clock; produce "
              "answers carry it as log_append_time) (broker log.message.timestamp.type if unset)."),
    ConfigDef("message.timestamp.difference.max.ms", int, None, "Deprecated in Kafka: how far a CreateTime may be from "
              "the leader's clock, either way, where message.timestamp.before.max.ms or message.timestamp.after.max.ms "
              "is left at its default (broker log.message.timestamp.difference.max.ms if unset).", 0),
    ConfigDef("message.timestamp.before.max.ms", int, None, "With CreateTime: how far before the leader's clock a "
              "record's timestamp may be; a batch with an older one is refused with INVALID_TIMESTAMP naming those "
              "records (broker log.message.timestamp.before.max.ms if unset).", 0),
    ConfigDef("message.timestamp.after.max.ms", int, None, "With CreateTime: how far after the leader's clock a "
              "record's timestamp may be; a batch with a later one is refused with INVALID_TIMESTAMP naming those "
              "records (broker log.message.timestamp.after.max.ms if unset).", 0),
    ConfigDef("message.downconversion.enable", _bool, None, "Accepted and described; no effect here: only record batch v2 is "
              "served (broker log.message.downconversion.enable if unset).", None),
    ConfigDef("message.format.version", _text_value, None, "Deprecated in Kafka. Accepted and described; no effect here "
              "(broker log.message.format.version if unset)."),
    ConfigDef("flush.messages", int, None, "Accepted and described; no effect here: memory storage never flushes, disk "
              "storage writes through (broker log.flush.interval.messages if unset).", 1),
    ConfigDef("flush.ms", int, None, "Accepted and described; no effect here (broker log.flush.interval.ms if unset).", 0),
    ConfigDef("index.interval.bytes", int, None, "Accepted and described; no effect here: every batch is indexed in memory "
              "(broker log.index.interval.bytes if unset).", 0),
    ConfigDef("segment.index.bytes", int, None, "Accepted and described; no effect here: no index files (broker "
              "log.index.size.max.bytes if unset).", 4),
    ConfigDef("preallocate", _bool, None, "Accepted and described; no effect here (broker log.preallocate if unset).", None),
    ConfigDef("segment.jitter.ms", int, None, "Accepted and described; no effect here: segments roll at segment.ms exactly "
              "(broker log.roll.jitter.ms if unset).", 0),
    ConfigDef("file.delete.delay.ms", int, None, "Accepted and described; no effect here: deleted segments go at once (broker "
              "log.segment.delete.delay.ms if unset).", 0),
    ConfigDef("local.retention.ms", int, None, "Tiered storage. Accepted and described; no effect here (broker "
              "log.local.retention.ms if unset).", -2),
    ConfigDef("local.retention.bytes", int, None, "Tiered storage. Accepted and described; no effect here (broker "
              "log.local.retention.bytes if unset).", -2),
    ConfigDef("remote.storage.enable", _bool, False, "Tiered storage. Accepted and described; no effect here.", None),
    ConfigDef("leader.replication.throttled.replicas", _throttled_replicas, "", "Replicas whose leader side "
              "is throttled ('*' or PARTITION:BROKER pairs). Accepted and described; no effect here: no replication quotas.", None),
    ConfigDef("follower.replication.throttled.replicas", _throttled_replicas, "", "Replicas whose follower "
              "side is throttled ('*' or PARTITION:BROKER pairs). Accepted and described; no effect here: no replication quotas.", None),
)

_BROKER_BY_NAME = {c.name: c for c in BROKER_CONFIGS}
_TOPIC_BY_NAME = {c.name: c for c in TOPIC_CONFIGS}


WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # listen everywhere: never an address to advertise


@dataclass(frozen=True)
class BrokerConfig:
    """Everything a broker process needs to start.  Build it with :meth:`from_overrides`."""

    broker_id: int
    zookeeper_connect: str
    listen_host: str = "127.0.0.1"
    listen_port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    data_dir: str = ".minikafka/broker"
    storage: str = "memory"
    # the settings given (--config, --config-file); afterwards every setting in effect, read-only
    settings: Mapping[str, Any] = field(default_factory=dict)
    # Optional second listener for clients outside the broker's network (Docker's host),
    # see minikafka/broker/listeners.py; brokers and the controller use the one above.
    external_listen_host: str | None = None
    external_listen_port: int | None = None
    external_advertised_host: str | None = None
    external_advertised_port: int | None = None
    # Optional Kafka binary-protocol listeners (minikafka/broker/kafka/): one beside the
    # inter-broker HTTP listener and an external one for clients outside the broker's
    # network, registered in /brokers/ids/N as KAFKA:// and KAFKA_EXTERNAL:// endpoints.
    kafka_listen_host: str | None = None
    kafka_listen_port: int | None = None
    kafka_advertised_host: str | None = None
    kafka_advertised_port: int | None = None
    kafka_external_listen_host: str | None = None
    kafka_external_listen_port: int | None = None
    kafka_external_advertised_host: str | None = None
    kafka_external_advertised_port: int | None = None
    # The cluster credential: controller and replica requests between brokers carry it,
    # and a broker refuses them without it (docs/security.md).  None: not checked.
    cluster_secret: str | None = field(default=None, repr=False)
    # Set from the above, never given: every setting without dynamic changes; the names given
    # (--config, --config-file: Kafka's STATIC_BROKER_CONFIG, even at their default); each
    # dynamic setting's layer ("dynamic_default" or "dynamic_broker"); each layer's valid
    # settings, as stored.
    static: Mapping[str, Any] = field(init=False, repr=False, compare=False)
    explicit: frozenset[str] = field(init=False, repr=False, compare=False)
    dynamic_sources: Mapping[str, str] = field(init=False, repr=False, compare=False)
    dynamic_layers: Mapping[str, Mapping[str, str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        merged = {c.name: c.default for c in BROKER_CONFIGS}
        for k, v in self.settings.items():
            if k not in _BROKER_BY_NAME:
                raise InvalidConfigError(f"unknown broker config {k!r}")
            merged[k] = _BROKER_BY_NAME[k].convert(v)
        object.__setattr__(self, "explicit", frozenset(self.settings))
        object.__setattr__(self, "settings", MappingProxyType(merged))
        object.__setattr__(self, "static", self.settings)
        object.__setattr__(self, "dynamic_sources", MappingProxyType({}))
        object.__setattr__(self, "dynamic_layers", _layers({}, {}))
        if self.storage not in ("memory", "disk"):
            raise InvalidConfigError(f"invalid storage {self.storage!r}: expected memory or disk")
        if self.external_listen_port is None and (self.external_advertised_host or self.external_advertised_port):
            raise InvalidConfigError("an advertised external endpoint needs an external listener (--listen-external)")
        if self.external_listen_port is not None and self.external_listen_port == self.listen_port:
            raise InvalidConfigError(f"the external listener needs a port of its own, not {self.listen_port} "
                                     f"(the inter-broker listener's)")
        if self.kafka_listen_port is None and (self.kafka_advertised_host or self.kafka_advertised_port):
            raise InvalidConfigError("an advertised Kafka endpoint needs a Kafka listener (--kafka-listen)")
        if self.kafka_external_listen_port is None and (self.kafka_external_advertised_host
                                                        or self.kafka_external_advertised_port):
            raise InvalidConfigError("an advertised external Kafka endpoint needs an external Kafka listener "
                                     "(--kafka-listen-external)")
        if self.kafka_external_listen_port is not None and self.kafka_listen_port is None:
            raise InvalidConfigError("an external Kafka listener needs the Kafka listener too (--kafka-listen)")
        ports = [("--listen", self.listen_port), ("--listen-external", self.external_listen_port),
                 ("--kafka-listen", self.kafka_listen_port),
                 ("--kafka-listen-external", self.kafka_external_listen_port)]
        seen: dict[int, str] = {}
        for flag, port in ports:
            if port is None:
                continue
            if port in seen:
                raise InvalidConfigError(f"{flag} needs a port of its own, not {port} ({seen[port]}'s)")
            seen[port] = flag

    def __getattr__(self, attr: str) -> Any:
        # replica_lag_time_max_ms -> settings["replica.lag.time.max.ms"]
        settings = object.__getattribute__(self, "settings")
        for c in BROKER_CONFIGS:
            if c.attr == attr:
                return settings[c.name]
        raise AttributeError(attr)

    def get(self, name: str) -> Any:
        """A setting by its Kafka name."""
        return self.settings[name]

    def with_dynamic(self, default: Mapping[str, str], own: Mapping[str, str]) -> tuple[BrokerConfig, dict[str, Any]]:
        """This config with dynamic broker configs, as Kafka layers them: this broker's own
        (``/config/brokers/<id>``) over the cluster default (``/config/brokers/<default>``)
        over the static ``--config``.  Only :data:`DYNAMIC_BROKER_CONFIGS` count; invalid
        values are skipped.  Returns the new config and the settings whose value changed;
        ``self`` stays as it was."""
        new = dict(self.static)
        sources: dict[str, str] = {}
        layers: dict[str, dict[str, str]] = {"dynamic_default": {}, "dynamic_broker": {}}
        for layer, source in ((default, "dynamic_default"), (own, "dynamic_broker")):
            for k, v in layer.items():
                if k in DYNAMIC_BROKER_CONFIGS:
                    try:
                        new[k] = _BROKER_BY_NAME[k].convert(v)
                    except InvalidConfigError:
                        continue
                    sources[k] = source
                    layers[source][k] = str(v)
        changed = {k: v for k, v in new.items() if self.settings.get(k) != v}
        out = copy.copy(self)
        object.__setattr__(out, "settings", MappingProxyType(new))
        object.__setattr__(out, "dynamic_sources", MappingProxyType(sources))
        object.__setattr__(out, "dynamic_layers", _layers(layers["dynamic_default"], layers["dynamic_broker"]))
        return out, changed

    def listeners_text(self, advertised: bool = False) -> str:
        """``listeners`` (or ``advertised.listeners``) as in effect, NAME://HOST:PORT items
        however they were given (the setting or the --listen... flags)."""
        return ",".join(f"{name}://{_host_port(*(adv if advertised else listen))}"
                        for name, (listen, adv) in self.listener_endpoints().items())

    def listener_endpoints(self) -> dict[str, tuple[tuple[str, int], tuple[str, int]]]:
        """Each listener's (listen, advertised) endpoint, by Kafka listener name (what
        ``listeners`` and ``advertised.listeners`` say, whichever way they were given)."""
        out = {"INTERNAL": ((self.listen_host, self.listen_port), self.advertised)}
        others = (("EXTERNAL", self.external_listen_host or self.listen_host, self.external_listen_port,
                   self.advertised_external),
                  ("KAFKA", self.kafka_listen_host or self.listen_host, self.kafka_listen_port, self.advertised_kafka),
                  ("KAFKA_EXTERNAL", self.kafka_external_listen_host or self.kafka_listen_host or self.listen_host,
                   self.kafka_external_listen_port, self.advertised_kafka_external))
        for name, host, port, advertised in others:
            if port is not None and advertised is not None:
                out[name] = ((host, port), advertised)
        return out

    @property
    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.listen_host, self.advertised_port or self.listen_port)

    @property
    def advertised_external(self) -> tuple[str, int] | None:
        """The external listener's advertised endpoint, None without an external listener."""
        if self.external_listen_port is None:
            return None
        return (self.external_advertised_host or self.external_listen_host or self.listen_host,
                self.external_advertised_port or self.external_listen_port)

    @property
    def advertised_kafka(self) -> tuple[str, int] | None:
        """The Kafka listener's advertised endpoint, None without a Kafka listener."""
        if self.kafka_listen_port is None:
            return None
        host = self.kafka_listen_host
        if not host or host in WILDCARD_HOSTS:
            host = self.advertised[0]  # same host clients already reach the broker on
        return (self.kafka_advertised_host or host, self.kafka_advertised_port or self.kafka_listen_port)

    @property
    def advertised_kafka_external(self) -> tuple[str, int] | None:
        """The external Kafka listener's advertised endpoint, None without one."""
        if self.kafka_external_listen_port is None:
            return None
        return (self.kafka_external_advertised_host or self.kafka_external_listen_host
                or self.kafka_listen_host or self.listen_host,
                self.kafka_external_advertised_port or self.kafka_external_listen_port)


def _layers(default: dict[str, str], own: dict[str, str]) -> Mapping[str, Mapping[str, str]]:
    return MappingProxyType({"dynamic_default": MappingProxyType(default), "dynamic_broker": MappingProxyType(own)})


class SettingsView(Protocol):
    """A service's typed settings: a frozen value built from a :class:`BrokerConfig` by
    :meth:`of` (see :mod:`minikafka.broker.settings`)."""

    @classmethod
    def of(cls, config: BrokerConfig) -> Self:
        """The settings of ``config``."""
        ...


V = TypeVar("V", bound=SettingsView)
S = TypeVar("S")


def settings_of(kind: type[S], config: BrokerConfig, **given: Any) -> S:
    """A settings view ``kind`` (a dataclass whose field names are Kafka setting names with
    the dots turned into underscores) with each field read from ``config`` by that name,
    except those ``given`` (a value converted from its setting)."""
    return kind(**{f.name: given[f.name] if f.name in given else config.get(f.name.replace("_", "."))
                   for f in fields(kind)})  # type: ignore[arg-type]


class LiveConfig:
    """The broker's configuration in effect: a :class:`BrokerConfig` that a dynamic change
    replaces (:meth:`update`) and never alters.  Services that read dynamic settings hold
    this and read their :meth:`view` (or :attr:`current`) when they need a value."""

    def __init__(self, config: BrokerConfig) -> None:
        self.current = config
        # each view kind: the config it was built from and the view
        self._views: dict[type, tuple[BrokerConfig, Any]] = {}

    @staticmethod
    def of(config: BrokerConfig | LiveConfig) -> LiveConfig:
        """``config`` itself, or a holder of a config that never changes."""
        return config if isinstance(config, LiveConfig) else LiveConfig(config)

    def update(self, default: Mapping[str, str], own: Mapping[str, str]) -> dict[str, Any]:
        """Take new dynamic broker configs (:meth:`BrokerConfig.with_dynamic`); returns what changed."""
        self.current, changed = self.current.with_dynamic(default, own)
        return changed

    def get(self, name: str) -> Any:
        """A setting in effect, by its Kafka name."""
        return self.current.get(name)

    def view(self, kind: type[V]) -> V:
        """The ``kind`` settings of the config in effect: built once per value of
        :attr:`current` and kept until a dynamic change replaces it, so a service that
        reads its view on every use sees a change at once."""
        config = self.current
        got = self._views.get(kind)
        if got is not None and got[0] is config:
            view: V = got[1]
            return view
        view = kind.of(config)
        self._views[kind] = (config, view)
        return view


def broker_setting(name: str, text: str) -> Any:
    """One broker setting's value from its text (raises INVALID_CONFIG naming it)."""
    c = _BROKER_BY_NAME.get(name)
    if c is None:
        raise InvalidConfigError(f"unknown broker config {name!r}")
    return c.convert(text)


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    """``["k=v", ...]`` -> dict; raises INVALID_CONFIG on a pair without '='."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidConfigError(f"expected key=value, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def validate_topic_config(config: dict[str, Any]) -> dict[str, str]:
    """Check topic configs by Kafka name; return them as strings (as stored in ZooKeeper)."""
    out: dict[str, str] = {}
    for k, v in config.items():
        c = _TOPIC_BY_NAME.get(k)
        if c is None:
            raise InvalidConfigError(f"unknown topic config {k!r}; known: {', '.join(sorted(_TOPIC_BY_NAME))}")
        converted = c.convert(str(v))
        out[k] = str(converted).lower() if isinstance(converted, bool) else str(converted)
    return out


# Topic settings whose broker-wide default has another name, as in Kafka.
BROKER_NAME_OF_TOPIC_CONFIG = {"max.message.bytes": "message.max.bytes", "segment.bytes": "log.segment.bytes",
                               "segment.ms": "log.roll.ms", "retention.ms": "log.retention.ms",
                               "retention.bytes": "log.retention.bytes", "cleanup.policy": "log.cleanup.policy",
                               "delete.retention.ms": "log.cleaner.delete.retention.ms",
                               "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
                               "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
                               "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
                               "message.timestamp.type": "log.message.timestamp.type",
                               "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
                               "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
                               "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
                               "message.downconversion.enable": "log.message.downconversion.enable",
                               "message.format.version": "log.message.format.version",
                               "flush.messages": "log.flush.interval.messages", "flush.ms": "log.flush.interval.ms",
                               "index.interval.bytes": "log.index.interval.bytes",
                               "segment.index.bytes": "log.index.size.max.bytes", "preallocate": "log.preallocate",
                               "segment.jitter.ms": "log.roll.jitter.ms",
                               "file.delete.delay.ms": "log.segment.delete.delay.ms",
                               "local.retention.ms": "log.local.retention.ms",
                               "local.retention.bytes": "log.local.retention.bytes"}


def topic_only(name: str) -> bool:
    """A topic setting without a broker-wide default (Kafka's throttled replica lists,
    remote.storage.enable): its own default applies."""
    return BROKER_NAME_OF_TOPIC_CONFIG.get(name, name) not in _BROKER_BY_NAME

# Broker settings given in ms or, when unset, in coarser units (Kafka's log.retention.ms >
# log.retention.minutes > log.retention.hours, log.roll.ms > log.roll.hours).
MS_FALLBACKS = {"log.retention.ms": (("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)),
                 "log.roll.ms": (("log.roll.hours", 3_600_000),)}


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# Settings a broker takes from its command line (--id, --zookeeper, --data-dir), described
# by DescribeConfigs as Kafka describes them (STATIC_BROKER_CONFIG), not settable by --config.
COMMAND_LINE_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef("broker.id", int, -1, "This broker's id (--id).", None),
    ConfigDef("zookeeper.connect", str, None, "The ZooKeeper connect string (--zookeeper).", None),
    ConfigDef("log.dirs", str, None, "The broker's data folder (--data-dir): its logs with disk storage, its "
              "checkpoints.", None),
)


def broker_ms_setting(broker: "BrokerConfig", name: str) -> int:
    """log.retention.ms / log.roll.ms as Kafka derives them from the coarser settings;
    a negative value in any unit means "never"."""
    value = broker.get(name)
    if value is not None:
        return value
    for coarser, factor in MS_FALLBACKS[name]:
        v = broker.get(coarser)
        if v is not None:
            return -1 if v < 0 else v * factor
    return -1

# Broker settings that change while brokers run (Kafka's dynamic broker configs that
# minikafka has): the defaults of topic settings.  They live in /config/brokers/<default>
# (every broker) and /config/brokers/<id> (one broker), announced on /config/changes.
# Broker settings that change live besides the topic defaults: the replication throttles
# Kafka's reassignment tool sets and clears, the cleaner's threads, and producer.id.expiration.ms.
BROKER_ONLY_DYNAMIC_CONFIGS = frozenset({"log.cleaner.threads", "leader.replication.throttled.rate",
                                         "follower.replication.throttled.rate",
                                         "replica.alter.log.dirs.io.max.bytes.per.second",
                                         "producer.id.expiration.ms"})
DYNAMIC_BROKER_CONFIGS = frozenset(BROKER_NAME_OF_TOPIC_CONFIG.get(c.name, c.name) for c in TOPIC_CONFIGS
                                   if not topic_only(c.name)) | BROKER_ONLY_DYNAMIC_CONFIGS


def validate_dynamic_broker_config(config: dict[str, Any]) -> dict[str, str]:
    """Check dynamic broker configs by Kafka name; return them as strings.  A broker setting
    that cannot change live is INVALID_REQUEST (Kafka: "Cannot update these configs
    dynamically"), an unknown name or a bad value INVALID_CONFIG."""
    out: dict[str, str] = {}
    for k, v in config.items():
        c = _BROKER_BY_NAME.get(k)
        if c is None:
            raise InvalidConfigError(f"unknown broker config {k!r}")
        if k not in DYNAMIC_BROKER_CONFIGS:
            raise InvalidRequestError(f"cannot update {k} dynamically (restart the broker with --config {k}=...); "
                                      f"dynamic: {', '.join(sorted(DYNAMIC_BROKER_CONFIGS))}")
        converted = c.convert(str(v))
        out[k] = str(converted).lower() if isinstance(converted, bool) else str(converted)
    return out


def topic_setting(name: str, topic_config: dict[str, str], broker: BrokerConfig) -> Any:
    """A topic's effective setting: its own config if set, else the broker default."""
    if name in topic_config:
        return _TOPIC_BY_NAME[name].convert(topic_config[name])
    if topic_only(name):
        return _TOPIC_BY_NAME[name].default
    broker_name = BROKER_NAME_OF_TOPIC_CONFIG.get(name, name)
    if broker_name in MS_FALLBACKS:
        return broker_ms_setting(broker, broker_name)
    return broker.get(broker_name)


# Settings whose value is a comma-separated list (Kafka's Type.LIST): IncrementalAlterConfigs
# may APPEND items to them and SUBTRACT items from them.
LIST_CONFIGS = frozenset({"cleanup.policy", "log.cleanup.policy", "leader.replication.throttled.replicas",
                          "follower.replication.throttled.replicas"})


# Kafka's Type.PASSWORD settings: DescribeConfigs never tells their value (null, is_sensitive
# true), on either listener.
SENSITIVE_CONFIGS = frozenset({"ssl.key.password", "ssl.keystore.password", "ssl.truststore.password",
                               "sasl.jaas.config"})


def list_items(text: str | None) -> list[str]:
    """The items of a list setting's value ("" and None: none)."""
    return [p.strip() for p in (text or "").split(",") if p.strip()]


def topic_config_default_text(name: str) -> str:
    """A valid text for topic setting ``name`` (used to check a name is known); raises INVALID_CONFIG."""
    c = _TOPIC_BY_NAME.get(name)
    if c is None:
        raise InvalidConfigError(f"unknown topic config {name!r}; known: {', '.join(sorted(_TOPIC_BY_NAME))}")
    return sample_text(c)


def sample_text(c: ConfigDef) -> str:
    """A valid value text for config ``c`` (to check a name without a value)."""
    samples: dict[Callable[[str], Any], str] = {_bool: "true", _cleanup_policy: "delete", _ratio: "0.5",
                                                _throttled_replicas: "", _text_value: "x",
                                                parse_listeners: "", parse_advertised_listeners: "",
                                                parse_inter_broker_listener_name: "INTERNAL"}
    if c.parse in samples:
        return samples[c.parse]
    if c.parse is int:
        return str(c.minimum if c.minimum is not None else 1)
    return c.parse.__name__.split("|")[0] if c.parse.__name__.count("|") else "1"


def broker_config_sample_text(name: str) -> str:
    """A valid value text for broker setting ``name`` ("0" for unknown names)."""
    c = _BROKER_BY_NAME.get(name)
    return "0" if c is None else sample_text(c)


def broker_default(name: str) -> Any:
    """The built-in default of a broker setting (before any --config)."""
    return _BROKER_BY_NAME[name].default


def names_of(cfg_fields: tuple[ConfigDef, ...]) -> list[str]:
    return [c.name for c in cfg_fields]

