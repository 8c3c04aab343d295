"""Options of the ``minikafka`` Spark source, named and checked like spark-sql-kafka's.

Pure: no Spark, no network.  :func:`parse_options` turns the option map Spark hands
to the data source (keys are case-insensitive) into a frozen :class:`SourceOptions`
or raises :class:`OptionError` with a message naming the option, as Spark's own
``KafkaSourceProvider`` does at planning time.

Offsets inside ``startingOffsets`` / ``endingOffsets`` JSON use Kafka's sentinels:
``-2`` earliest (the log start offset), ``-1`` latest (the high watermark).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..client.connection import ClientSecurity
from ..client.properties import SECURITY_PROPERTIES, security_options
from ..errors import ClientError

EARLIEST = -2
LATEST = -1

BATCH = "batch"
STREAM = "stream"

# Spark's names for the subscription strategies, in Spark's order.
STRATEGIES = ("assign", "subscribe", "subscribePattern")

DEFAULT_POLL_TIMEOUT_MS = 120_000

# lower-case key -> the name documents and messages use
KNOWN = {
    "kafka.bootstrap.servers": "kafka.bootstrap.servers",
    "bootstrap.servers": "bootstrap.servers",
    "assign": "assign",
    "subscribe": "subscribe",
    "subscribepattern": "subscribePattern",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "failondataloss": "failOnDataLoss",
    "includeheaders": "includeHeaders",
    "minpartitions": "minPartitions",
    "kafkaconsumer.polltimeoutms": "kafkaConsumer.pollTimeoutMs",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "startingtimestamp": "startingTimestamp",
    "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "kafka.isolation.level": "kafka.isolation.level",
}

# Options of Spark's Kafka source this source does not implement: named in the error.
SPARK_ONLY = {
    k.lower(): k
    for k in (
        "groupIdPrefix", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
        "kafka.group.id", "includeTimestamp",
    )
}

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'


class OptionError(ClientError, ValueError):
    """An unknown, missing, conflicting or malformed option of the minikafka source."""


TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class OffsetSpec:
    """``startingOffsets`` / ``endingOffsets``: "earliest", "latest" or specific offsets;
    or, from the timestamp options, "timestamp".

    ``offsets`` maps ``(topic, partition)`` to an offset, or to EARLIEST (-2) / LATEST (-1),
    when ``kind == "specific"``, and to a timestamp (ms) for ``startingOffsetsByTimestamp``
    / ``endingOffsetsByTimestamp`` (``kind == "timestamp"``); ``timestamp`` is the one
    timestamp of ``startingTimestamp`` / ``endingTimestamp`` for every partition.
    """

    kind: str  # "earliest", "latest", "specific", "timestamp"
    offsets: dict[TopicPartitionKey, int] = field(default_factory=dict, hash=False, compare=True)
    timestamp: int | None = None

    def __str__(self) -> str:
        if self.kind == "timestamp" and self.timestamp is not None:
            return f"timestamp {self.timestamp}"
        if self.kind not in ("specific", "timestamp"):
            return self.kind
        return json.dumps(offsets_to_json(self.offsets), sort_keys=True)


@dataclass(frozen=True)
class SourceOptions:
    """The validated options of one ``spark.read`` / ``spark.readStream`` of minikafka."""

    bootstrap_servers: str
    strategy: str  # one of STRATEGIES
    topics: tuple[str, ...] = ()  # subscribe
    pattern: str | None = None  # subscribePattern
    assignment: tuple[TopicPartitionKey, ...] = ()  # assign, in the order given
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    timestamp_strategy: str = "error"  # startingOffsetsByTimestampStrategy: "error" or "latest"
    max_records_per_partition: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    # kafka.isolation.level: read_committed plans up to the last stable offset and drops
    # the records of aborted transactions
    isolation_level: str = "read_uncommitted"
    # security options of the client (ClientSecurity's keyword arguments), from the
    # kafka.security.protocol, kafka.sasl.jaas.config, kafka.ssl.truststore.location... options
    security: dict[str, Any] = field(default_factory=dict, hash=False)

    def describe_subscription(self) -> str:
        if self.strategy == "subscribe":
            return f"subscribe={','.join(self.topics)}"
        if self.strategy == "subscribePattern":
            return f"subscribePattern={self.pattern}"
        return f"assign={json.dumps(assignment_to_json(self.assignment))}"


# ----- JSON helpers (also used for streaming offsets) ---------------------------------
def offsets_to_json(offsets: Mapping[TopicPartitionKey, int]) -> dict[str, dict[str, int]]:
    """``{(t, p): o}`` -> ``{"t": {"p": o}}`` with topics and partitions in order."""
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def offsets_from_json(value: Any, what: str = "offsets") -> dict[TopicPartitionKey, int]:
    """``{"t": {"p": o}}`` (a dict or its JSON text) -> ``{(t, p): o}``; ValueError if malformed."""
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError(f"{what}: expected a JSON object, got {value!r}")
    out: dict[TopicPartitionKey, int] = {}
    for topic, parts in value.items():
        if not isinstance(topic, str) or not topic or not isinstance(parts, dict):
            raise ValueError(f"{what}: expected {{topic: {{partition: offset}}}}, got {value!r}")
        for p, o in parts.items():
            partition = _int_key(p)
            if partition is None or isinstance(o, bool) or not isinstance(o, int):
                raise ValueError(f"{what}: expected {{topic: {{partition: offset}}}}, got {value!r}")
            out[(topic, partition)] = o
    return out


def assignment_to_json(assignment: tuple[TopicPartitionKey, ...]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in assignment:
        out.setdefault(topic, []).append(partition)
    return out


def _int_key(p: Any) -> int | None:
    if isinstance(p, bool):
        return None
    if isinstance(p, int):
        return p if p >= 0 else None
    if isinstance(p, str) and p.strip().isdigit():
        return int(p.strip())
    return None


# ----- parsing -----------------------------------------------------------------------
def _bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v == "true":
        return True
    if v == "false":
        return False
    raise OptionError(f"option '{name}' must be 'true' or 'false', got {value!r}")


def _positive_int(name: str, value: str) -> int:
    try:
        n = int(value.strip())
    except (TypeError, ValueError):
        raise OptionError(f"option '{name}' must be a positive integer, got {value!r}") from None
    if n <= 0:
        raise OptionError(f"option '{name}' must be positive, got {value!r}")
    return n


def _bootstrap(name: str, value: str) -> str:
    items = [s.strip() for s in value.split(",") if s.strip()]
    if not items:
        raise OptionError(f"option '{name}' must list brokers as HOST:PORT[,HOST:PORT...], got {value!r}")
    for item in items:
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise OptionError(f"option '{name}': {item!r} is not HOST:PORT (in {value!r})")
    return ",".join(items)


def _assign(value: str) -> tuple[TopicPartitionKey, ...]:
    if not value.strip().startswith("{"):
        raise OptionError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    try:
        data = json.loads(value)
    except ValueError:
        data = None
    bad = OptionError(f"option 'assign': expected e.g. {_ASSIGN_EXAMPLE}, got {value}")
    if not isinstance(data, dict):
        raise bad
    out: list[TopicPartitionKey] = []
    for topic, parts in data.items():
        if not topic or not isinstance(parts, list):
            raise bad
        for p in parts:
            if isinstance(p, bool) or not isinstance(p, int) or p < 0:
                raise bad
            if (topic, p) not in out:
                out.append((topic, p))
    if not out:
        raise OptionError(f"No topicpartitions to assign as specified value for option 'assign' is '{value}'")
    return tuple(out)


def _offset_spec(name: str, value: str, allowed: tuple[str, ...]) -> OffsetSpec:
    v = value.strip()
    if v.lower() in ("earliest", "latest"):
        kind = v.lower()
        if kind not in allowed:
            raise OptionError(f"option '{name}' can't be {kind} here (expected {' or '.join(allowed)} or JSON offsets)")
        return OffsetSpec(kind)
    if not v.startswith("{"):
        raise OptionError(f"option '{name}' must be {', '.join(allowed)} or JSON like {_OFFSETS_EXAMPLE}, got {value!r}")
    try:
        offsets = offsets_from_json(v, name)
    except ValueError:
        raise OptionError(f"option '{name}': expected e.g. {_OFFSETS_EXAMPLE}, got {value}") from None
    if not offsets:
        raise OptionError(f"option '{name}': no partitions in {value}")
    for (topic, partition), off in offsets.items():
        if off < EARLIEST:
            raise OptionError(f"option '{name}': offset {off} of {topic}-{partition} is invalid "
                              "(use an offset >= 0, -2 for earliest or -1 for latest)")
    return OffsetSpec("specific", offsets)


def _timestamp(name: str, value: str) -> int:
    try:
        ts = int(value.strip())
    except (TypeError, ValueError):
        raise OptionError(f"option '{name}' must be a timestamp in milliseconds since the epoch, got {value!r}") from None
    if ts < 0:
        raise OptionError(f"option '{name}' must be a timestamp >= 0, got {value!r}")
    return ts


def _timestamp_spec(name: str, value: str) -> OffsetSpec:
    v = value.strip()
    example = '{"topicA":{"0":1700000000000,"1":1700000000000}}'
    try:
        stamps = offsets_from_json(v, name) if v.startswith("{") else None
    except ValueError:
        stamps = None
    if not stamps:
        raise OptionError(f"option '{name}': expected JSON like {example}, got {value}")
    for (topic, partition), ts in stamps.items():
        if ts < 0:
            raise OptionError(f"option '{name}': timestamp {ts} of {topic}-{partition} is invalid (use ms >= 0)")
    return OffsetSpec("timestamp", stamps)


def _duration_ms(name: str, value: str) -> int:
    """Spark's time strings: ``500ms``, ``30s``, ``15m``, ``1h``, ``2d``, or plain milliseconds."""
    m = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h|d)?\s*", value.lower())
    if not m:
        raise OptionError(f"option '{name}' must be a duration like 30s, 15m or 1h, got {value!r}")
    unit = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1}[m.group(2)]
    return int(m.group(1)) * unit


def client_security(props: Mapping[str, str]) -> dict[str, Any]:
    """ClientSecurity's keyword arguments from the ``kafka.``-prefixed security options (the
    prefix removed), as Spark's Kafka source passes them to its consumer; OptionError on a
    mistake."""
    try:
        opts = security_options(props)
        ClientSecurity(**opts)  # checked now, at planning time
    except ClientError as exc:
        raise OptionError(f"Kafka security options: {exc}") from None
    return opts


def parse_options(options: Mapping[str, Any], mode: str | None = None) -> SourceOptions:
    """Validate the source options; ``mode`` BATCH or STREAM adds that mode's rules.

    Without ``mode`` only what both modes share is checked (the data source does that
    when it is created, before Spark says whether it reads a batch or a stream).
    Each step checks its options in turn, so the first mistake in this order is the one
    named: the keys, the bootstrap servers, the subscription, the starting and ending
    offsets, the limits and flags, the security options.
    """
    params, security_props = _split_keys(options)
    bootstrap = _bootstrap_servers(params)
    subscription = _subscription(params)
    starting = _starting(params, mode)
    ending = _ending(params, mode)
    if subscription.strategy == "assign":
        assigned = set(subscription.assignment)
        for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
            if spec.kind in ("specific", "timestamp") and spec.offsets and set(spec.offsets) != assigned:
                raise OptionError(_partitions_mismatch(name, set(spec.offsets), assigned))
    limits = _limits(params, mode)
    return SourceOptions(
        bootstrap_servers=bootstrap,
        security=client_security(security_props),
        strategy=subscription.strategy,
        topics=subscription.topics,
        pattern=subscription.pattern,
        assignment=subscription.assignment,
        starting=starting,
        ending=ending,
        **limits,
    )


def _split_keys(options: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """The source's own options (lower-case keys) and the ``kafka.`` security ones (the
    prefix removed), values as strings; OptionError on a path, on an option only Spark's
    Kafka source has and on an unknown one."""
    params: dict[str, str] = {}
    security_props: dict[str, str] = {}
    for key, value in options.items():
        k = str(key).strip().lower()
        if k == "path":
            raise OptionError("the minikafka source takes no path: name the topics with the 'subscribe', "
                              "'subscribePattern' or 'assign' option")
        if k in SPARK_ONLY:
            raise OptionError(f"option '{SPARK_ONLY[k]}' of Spark's Kafka source is not supported by the minikafka source")
        if k.startswith("kafka.") and k[6:] in SECURITY_PROPERTIES:
            security_props[k[6:]] = "" if value is None else str(value)
            continue
        if k not in KNOWN:
            if k.startswith("kafka."):
                raise OptionError(f"option '{key}' is not supported: the Kafka client settings the minikafka "
                                  f"source takes are 'kafka.bootstrap.servers', 'kafka.isolation.level' and the "
                                  f"security ones "
                                  f"({', '.join('kafka.' + p for p in sorted(SECURITY_PROPERTIES))})")
            raise OptionError(f"unknown option '{key}' for the minikafka source (known options: "
                              f"{', '.join(sorted(set(KNOWN.values()), key=str.lower))})")
        params[k] = "" if value is None else str(value)
    return params, security_props


def _bootstrap_servers(params: Mapping[str, str]) -> str:
    """``kafka.bootstrap.servers`` or ``bootstrap.servers`` (both: they must agree)."""
    servers = [k for k in ("kafka.bootstrap.servers", "bootstrap.servers") if k in params]
    if not servers:
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for configuring the minikafka source "
                          "(HOST:PORT[,HOST:PORT...])")
    bootstrap = _bootstrap(KNOWN[servers[0]], params[servers[0]])
    if len(servers) == 2 and _bootstrap("bootstrap.servers", params["bootstrap.servers"]) != bootstrap:
        raise OptionError("options 'kafka.bootstrap.servers' and 'bootstrap.servers' disagree: give only one")
    return bootstrap


@dataclass(frozen=True)
class _Subscription:
    strategy: str  # one of STRATEGIES
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assignment: tuple[TopicPartitionKey, ...] = ()


def _subscription(params: Mapping[str, str]) -> _Subscription:
    """The one subscription strategy given, with its topics, pattern or partitions."""
    given = [s for s in STRATEGIES if s.lower() in params]
    if not given:
        raise OptionError("One of the following options must be specified for Kafka source: "
                          f"{', '.join(STRATEGIES)}. See docs/spark.md for more details.")
    if len(given) > 1:
        raise OptionError("Only one of the following options can be specified for Kafka source: "
                          f"{', '.join(STRATEGIES)} (got {', '.join(given)}). See docs/spark.md for more details.")
    strategy = given[0]
    raw = params[strategy.lower()]
    if strategy == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
        if not topics:
            raise OptionError(f"No topics to subscribe to as specified value for option 'subscribe' is '{raw}'")
        return _Subscription(strategy, topics=topics)
    if strategy == "subscribePattern":
        pattern = raw.strip()
        if not pattern:
            raise OptionError(f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{raw}'")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"option 'subscribePattern': {pattern!r} is not a valid regular expression: {exc}") from None
        return _Subscription(strategy, pattern=pattern)
    return _Subscription(strategy, assignment=_assign(raw))


def _starting(params: Mapping[str, str], mode: str | None) -> OffsetSpec:
    """Where reading starts: ``startingTimestamp`` before ``startingOffsetsByTimestamp``
    before ``startingOffsets`` (as in Spark); by default earliest, latest for a stream."""
    if mode == BATCH:
        starting_allowed: tuple[str, ...] = ("earliest",)
        default_start = "earliest"
    else:
        starting_allowed = ("earliest", "latest")
        default_start = "latest" if mode == STREAM else "earliest"
    if "startingtimestamp" in params:  # Spark: startingTimestamp > ...ByTimestamp > startingOffsets
        return OffsetSpec("timestamp", timestamp=_timestamp("startingTimestamp", params["startingtimestamp"]))
    if "startingoffsetsbytimestamp" in params:
        return _timestamp_spec("startingOffsetsByTimestamp", params["startingoffsetsbytimestamp"])
    if "startingoffsets" in params:
        value = params["startingoffsets"]
        if mode == BATCH and value.strip().lower() == "latest":
            raise OptionError("option 'startingOffsets': starting offset can't be latest for batch queries on Kafka")
        starting = _offset_spec("startingOffsets", value, starting_allowed)
        if mode == BATCH:
            for (topic, partition), off in starting.offsets.items():
                if off == LATEST:
                    raise OptionError(f"option 'startingOffsets': startingOffsets for {topic}-{partition} can't be "
                                      "latest for batch queries on Kafka")
        return starting
    return OffsetSpec(default_start)


def _ending(params: Mapping[str, str], mode: str | None) -> OffsetSpec:
    """Where a batch read ends (latest by default); no ending option in a stream."""
    for key in ("endingoffsets", "endingoffsetsbytimestamp", "endingtimestamp"):
        if key in params and mode == STREAM:
            raise OptionError(f"option '{KNOWN[key]}': ending offset not valid in streaming queries")
    if "endingtimestamp" in params:
        return OffsetSpec("timestamp", timestamp=_timestamp("endingTimestamp", params["endingtimestamp"]))
    if "endingoffsetsbytimestamp" in params:
        return _timestamp_spec("endingOffsetsByTimestamp", params["endingoffsetsbytimestamp"])
    if "endingoffsets" in params:
        value = params["endingoffsets"]
        if value.strip().lower() == "earliest":
            raise OptionError("option 'endingOffsets': ending offset can't be earliest for batch queries on Kafka")
        ending = _offset_spec("endingOffsets", value, ("latest",))
        for (topic, partition), off in ending.offsets.items():
            if off == EARLIEST:
                raise OptionError(f"option 'endingOffsets': endingOffsets for {topic}-{partition} can't be "
                                  "earliest for batch queries on Kafka")
        return ending
    return OffsetSpec("latest")


def _limits(params: Mapping[str, str], mode: str | None) -> dict[str, Any]:
    """The :class:`SourceOptions` fields of the limits, the flags and the isolation
    level, each its default unless given."""
    max_offsets = None
    if "maxoffsetspertrigger" in params:
        max_offsets = _positive_int("maxOffsetsPerTrigger", params["maxoffsetspertrigger"])
    min_partitions = None
    if "minpartitions" in params:
        min_partitions = _positive_int("minPartitions", params["minpartitions"])
    poll_timeout_ms = DEFAULT_POLL_TIMEOUT_MS
    if "kafkaconsumer.polltimeoutms" in params:
        poll_timeout_ms = _positive_int("kafkaConsumer.pollTimeoutMs", params["kafkaconsumer.polltimeoutms"])
    strategy_name = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_name not in ("error", "latest"):
        raise OptionError("option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                          f"got {params['startingoffsetsbytimestampstrategy']!r}")
    max_records = None
    if "maxrecordsperpartition" in params:
        max_records = _positive_int("maxRecordsPerPartition", params["maxrecordsperpartition"])
    min_offsets = None
    max_delay_ms = 15 * 60 * 1000
    if "minoffsetspertrigger" in params or "maxtriggerdelay" in params:
        if mode == BATCH:
            key = "minoffsetspertrigger" if "minoffsetspertrigger" in params else "maxtriggerdelay"
            raise OptionError(f"option '{KNOWN[key]}' is for streaming queries only")
        if "minoffsetspertrigger" in params:
            min_offsets = _positive_int("minOffsetsPerTrigger", params["minoffsetspertrigger"])
        if "maxtriggerdelay" in params:
            max_delay_ms = _duration_ms("maxTriggerDelay", params["maxtriggerdelay"])
    fail = _bool("failOnDataLoss", params["failondataloss"]) if "failondataloss" in params else True
    headers = _bool("includeHeaders", params["includeheaders"]) if "includeheaders" in params else False
    isolation = params.get("kafka.isolation.level", "read_uncommitted").strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise OptionError("option 'kafka.isolation.level' must be 'read_uncommitted' or 'read_committed', "
                          f"got {params['kafka.isolation.level']!r}")
    return dict(max_offsets_per_trigger=max_offsets, fail_on_data_loss=fail, include_headers=headers,
                min_partitions=min_partitions, poll_timeout_ms=poll_timeout_ms, timestamp_strategy=strategy_name,
                max_records_per_partition=max_records, min_offsets_per_trigger=min_offsets,
                max_trigger_delay_ms=max_delay_ms, isolation_level=isolation)


def _tp_set(tps: set[TopicPartitionKey]) -> str:
    return "{" + ", ".join(f"{t}-{p}" for t, p in sorted(tps)) + "}"


def _partitions_mismatch(name: str, specified: set[TopicPartitionKey], assigned: set[TopicPartitionKey]) -> str:
    return (f"option '{name}': if {name} contains specific offsets, you must specify all TopicPartitions. "
            f"Use -1 for latest, -2 for earliest. Specified: {_tp_set(specified)} Assigned: {_tp_set(assigned)}")


def check_specific_partitions(name: str, spec: OffsetSpec, partitions: set[TopicPartitionKey]) -> None:
    """Raise OptionError unless the JSON offsets (or timestamps) of ``spec`` name exactly ``partitions``."""
    if spec.kind in ("specific", "timestamp") and spec.offsets and set(spec.offsets) != set(partitions):
        raise OptionError(_partitions_mismatch(name, set(spec.offsets), set(partitions)))


def matches(options: SourceOptions, topic: str) -> bool:
    """Whether ``topic`` belongs to a subscribe / subscribePattern subscription."""
    if options.strategy == "subscribe":
        return topic in options.topics
    if options.strategy == "subscribePattern":
        return re.fullmatch(options.pattern or "", topic) is not None
    return any(t == topic for t, _ in options.assignment)
