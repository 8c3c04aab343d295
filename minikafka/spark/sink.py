"""The ``minikafka`` sink: ``df.write`` and ``df.writeStream`` with Spark's Kafka sink contract.

Rows carry the columns of Spark's Kafka sink (all but ``value`` optional):

==========  ==========================================  ==============================
column      type                                        meaning
==========  ==========================================  ==============================
value       string or binary (required)                 the record value (null allowed)
key         string or binary                            the record key
topic       string                                      the topic, unless the ``topic``
                                                        option is set (the option wins)
partition   int                                         the partition; else by key, or
                                                        sticky round robin
headers     array<struct<key: string, value: binary>>   record headers
==========  ==========================================  ==============================

Options: ``kafka.bootstrap.servers`` (required), ``topic``, and producer settings under
``kafka.`` with minikafka's Producer meaning: ``kafka.acks`` (default ``all``),
``kafka.linger.ms``, ``kafka.batch.size``, ``kafka.enable.idempotence`` (default: on
with acks=all), ``kafka.compression.type``, ``kafka.retries``,
``kafka.delivery.timeout.ms``, ``kafka.request.timeout.ms``, ``kafka.max.block.ms``; and
the security settings as the source takes them (``kafka.security.protocol``,
``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location``...).

Each Spark task writes its rows through one producer, flushes, and fails with the
broker's error if any record failed; only then does it send its commit message.  The
guarantee is at-least-once, as with Spark's own Kafka sink: a producer retry never
writes a record twice when idempotence is on, but a Spark task that is retried (or a
micro-batch that is replayed after a driver failure) writes its rows again.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, DataType, IntegerType, StringType, StructType

from ..client.properties import SECURITY_PROPERTIES
from .options import OptionError, _bootstrap, client_security

# kafka.<setting> -> (Producer keyword, parser)
PRODUCER_SETTINGS: dict[str, tuple[str, Any]] = {
    "kafka.acks": ("acks", str),
    "kafka.linger.ms": ("linger_ms", int),
    "kafka.batch.size": ("batch_size", int),
    "kafka.enable.idempotence": ("enable_idempotence", None),
    "kafka.compression.type": ("compression_type", str),
    "kafka.retries": ("retries", int),
    "kafka.delivery.timeout.ms": ("delivery_timeout_ms", int),
    "kafka.request.timeout.ms": ("request_timeout_ms", int),
    "kafka.max.block.ms": ("max_block_ms", int),
}


@dataclass(frozen=True)
class SinkOptions:
    """The checked options of a write."""

    bootstrap_servers: str
    topic: str | None = None
    producer: dict[str, Any] = field(default_factory=dict)


def _bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise OptionError(f"option '{key}' must be true or false, got '{value}'")


def parse_sink_options(options: Mapping[str, Any]) -> SinkOptions:
    """Validate the options of ``df.write`` / ``df.writeStream`` (OptionError on a mistake)."""
    params = {str(k).strip().lower(): ("" if v is None else str(v)) for k, v in options.items()}
    params.pop("checkpointlocation", None)  # Spark's own (the streaming query's state)
    if params.pop("path", ""):
        raise OptionError("the minikafka sink takes no path: name the topic with the 'topic' option or a 'topic' column")
    servers = params.pop("kafka.bootstrap.servers", None)
    if servers is None:
        raise OptionError("Option 'kafka.bootstrap.servers' must be specified for configuring the minikafka sink "
                          "(HOST:PORT[,HOST:PORT...])")
    bootstrap = _bootstrap("kafka.bootstrap.servers", servers)
    topic = params.pop("topic", None)
    if topic is not None and not topic.strip():
        raise OptionError("option 'topic' is empty: name a topic, or leave the option out and give a 'topic' column")
    producer: dict[str, Any] = {}
    security = {k[6:]: params.pop(k) for k in list(params) if k.startswith("kafka.") and k[6:] in SECURITY_PROPERTIES}
    producer.update(client_security(security))
    for key, value in params.items():
        if key not in PRODUCER_SETTINGS:
            if key.startswith("kafka."):
                raise OptionError(f"option '{key}' is not supported by the minikafka sink (supported producer "
                                  f"settings: {', '.join(PRODUCER_SETTINGS)})")
            raise OptionError(f"unknown option '{key}' for the minikafka sink (known options: "
                              f"kafka.bootstrap.servers, topic, {', '.join(PRODUCER_SETTINGS)})")
        name, parse = PRODUCER_SETTINGS[key]
        if parse is None:
            producer[name] = _bool(key, value)
        else:
            try:
                producer[name] = parse(value.strip())
            except ValueError:
                raise OptionError(f"option '{key}' must be a whole number, got '{value}'") from None
    return SinkOptions(bootstrap, topic.strip() if topic else None, producer)


def _is(dt: DataType, *types: type) -> bool:
    return isinstance(dt, types)


HEADERS_TYPE = "array<struct<key: string, value: binary>>"


def check_sink_schema(schema: StructType, opts: SinkOptions) -> None:
    """Spark's Kafka sink rules for the written columns, with Spark's messages."""
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if opts.topic is None:
        if "topic" not in fields:
            raise OptionError("topic option required when no 'topic' attribute is present. "
                              "Use the topic option for setting a topic.")
    if "topic" in fields and not _is(fields["topic"], StringType):
        raise OptionError(f"Topic type must be a StringType, not {fields['topic'].simpleString()}")
    if "value" not in fields:
        raise OptionError("Required attribute 'value' not found")
    if not _is(fields["value"], StringType, BinaryType):
        raise OptionError(f"value attribute type must be a StringType or BinaryType, not {fields['value'].simpleString()}")
    if "key" in fields and not _is(fields["key"], StringType, BinaryType):
        raise OptionError(f"key attribute type must be a StringType or BinaryType, not {fields['key'].simpleString()}")
    if "partition" in fields and not _is(fields["partition"], IntegerType):
        raise OptionError(f"partition attribute type must be an IntegerType, not {fields['partition'].simpleString()}")
    if "headers" in fields:
        h = fields["headers"]
        ok = (_is(h, ArrayType) and _is(h.elementType, StructType)
              and [(f.name, type(f.dataType)) for f in h.elementType.fields] == [("key", StringType), ("value", BinaryType)])
        if not ok:
            raise OptionError(f"headers attribute type must be {HEADERS_TYPE}, not {h.simpleString()}")


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task wrote: the number of records acknowledged."""

    records: int


def write_rows(opts: SinkOptions, schema: StructType, rows: Iterator[Any]) -> SinkCommitMessage:
    """Send every row through one producer; flush; raise the first record's error."""
    from ..client.sync import Producer

    names = {f.name.lower(): f.name for f in schema.fields}
    col = {k: names.get(k) for k in ("value", "key", "topic", "partition", "headers")}
    futures = []
    producer = Producer(opts.bootstrap_servers, **opts.producer)
    try:
        for row in rows:
            topic = opts.topic or row[col["topic"]]
            if not topic:
                raise OptionError("a row has a null 'topic' and no 'topic' option is set")
            headers = None
            if col["headers"] is not None and row[col["headers"]]:
                headers = [(h["key"], _as_bytes(h["value"])) for h in row[col["headers"]]]
            futures.append(producer.send(
                topic, _as_bytes(row[col["value"]]),
                key=_as_bytes(row[col["key"]]) if col["key"] else None,
                partition=row[col["partition"]] if col["partition"] else None,
                headers=headers))
        producer.flush()
        for f in futures:
            exc = f.exception()
            if exc is not None:
                raise exc
    finally:
        producer.close()
    return SinkCommitMessage(len(futures))


class MiniKafkaBatchWriter(DataSourceWriter):
    """``df.write.format("minikafka")``: each task sends its rows and flushes."""

    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_rows(self.opts, self.schema, iterator)

    def commit(self, messages: list) -> None:
        """The records are already acknowledged by the brokers: nothing left to do."""

    def abort(self, messages: list) -> None:
        """Records written by tasks that succeeded stay written (Kafka has no rollback)."""


class MiniKafkaStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("minikafka")``: every micro-batch as :class:`MiniKafkaBatchWriter`."""

    def __init__(self, opts: SinkOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_rows(self.opts, self.schema, iterator)

    def commit(self, messages: list, batchId: int) -> None:
        """Nothing to do: the micro-batch's records are acknowledged."""

    def abort(self, messages: list, batchId: int) -> None:
        """Records written before the failure stay written; Spark replays the micro-batch."""
