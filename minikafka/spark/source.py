"""The ``minikafka`` data source on PySpark's Python Data Source API (PySpark 4.x).

* :class:`MiniKafkaDataSource`: options and schema (Spark's Kafka source schema).
* :class:`MiniKafkaBatchReader`: ``spark.read``: one input partition per
  topic-partition range ``[starting, ending)``, the ending offset at most the high
  watermark when the query is planned.
* :class:`MiniKafkaStreamReader`: ``spark.readStream``: JSON offsets
  ``{"topic": {"0": 12}}``, admission control with ``maxOffsetsPerTrigger``,
  ``Trigger.AvailableNow``.
* ``df.write`` / ``df.writeStream``: the sink of :mod:`minikafka.spark.sink`.

Readers run in Spark's Python workers and yield ``pyarrow.RecordBatch`` objects,
one per fetch answer.  Reader objects are pickled to those workers, so the cluster
client is created lazily and never pickled.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Iterator

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from .arrow import arrow_schema, decode, spark_schema
from .sink import MiniKafkaBatchWriter, MiniKafkaStreamWriter, check_sink_schema, parse_sink_options
from .cluster import SourceClient
from .offsets import (
    OffsetRange,
    offset_changed,
    plan_ranges,
    rate_limit,
    report_data_loss,
    split_ranges,
)
from .options import (
    BATCH,
    EARLIEST,
    LATEST,
    STREAM,
    OffsetSpec,
    OptionError,
    SourceOptions,
    TopicPartitionKey,
    check_specific_partitions,
    offsets_from_json,
    offsets_to_json,
    parse_options,
)

log = logging.getLogger("minikafka.spark")

NAME = "minikafka"


class RangePartition(InputPartition):
    """One Spark input partition: offsets ``[start, end)`` of one topic-partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((topic, partition, start, end))
        self.topic = topic
        self.partition = partition
        self.start = start
        self.end = end

    @property
    def range(self) -> OffsetRange:
        return OffsetRange(self.topic, self.partition, self.start, self.end)

    def __repr__(self) -> str:
        return f"RangePartition({self.topic}-{self.partition} [{self.start}, {self.end}))"


def _check_schema(schema: StructType, opts: SourceOptions) -> None:
    expected = spark_schema(opts.include_headers)
    if [(f.name, f.dataType) for f in schema.fields] != [(f.name, f.dataType) for f in expected.fields]:
        raise OptionError("the minikafka source has a fixed schema and cannot be set with a custom one "
                          f"(expected {expected.simpleString()}, got {schema.simpleString()})")


def read_range(opts: SourceOptions, schema: StructType, partition: InputPartition) -> Iterator[Any]:
    """Yield the committed records of one input partition as ``pyarrow.RecordBatch`` objects."""
    if not isinstance(partition, RangePartition) or partition.end <= partition.start:
        return
    aschema = arrow_schema(schema)
    topic, part = partition.topic, partition.partition
    client = SourceClient(opts.bootstrap_servers, opts.poll_timeout_ms, security=opts.security,
                          isolation_level=opts.isolation_level)
    try:
        for data, lo, hi in client.read(partition.range, opts.fail_on_data_loss):
            batch = decode(data, lo, hi, topic, part, aschema, opts.include_headers)
            if batch is not None:
                yield batch
    finally:
        client.close()


def offsets_by_timestamp(client: SourceClient, spec: OffsetSpec,
                         tps: list[TopicPartitionKey]) -> dict[TopicPartitionKey, tuple[int, int]]:
    """``(timestamp, offset)`` per partition for a "timestamp" spec: the earliest offset
    whose record timestamp is at least the timestamp (Kafka's ListOffsets by time, below
    the high watermark); offset -1 where no record matches."""
    stamps = {tp: spec.timestamp for tp in tps} if spec.timestamp is not None else dict(spec.offsets)
    out: dict[TopicPartitionKey, tuple[int, int]] = {}
    by_time: dict[int, list[TopicPartitionKey]] = {}
    for tp, ts in stamps.items():
        by_time.setdefault(int(ts), []).append(tp)  # type: ignore[arg-type]
    for ts, group in sorted(by_time.items()):
        for tp, off in client.list_offsets(group, ts).items():
            out[tp] = (ts, off)
    return out


def resolve_start(client: SourceClient, opts: SourceOptions, tps: list[TopicPartitionKey],
                  latest: dict[TopicPartitionKey, int] | None = None) -> dict[TopicPartitionKey, int]:
    """Starting offsets of ``tps`` from ``startingOffsets`` (earliest, latest or JSON), or
    from ``startingTimestamp`` / ``startingOffsetsByTimestamp``.

    A JSON offset below the log start is data loss (reported, then the log start is
    used); one above the high watermark is an error: nothing there is committed.  A
    timestamp that no record reaches is an error, or the latest offset with
    ``startingOffsetsByTimestampStrategy=latest``, as in Spark.
    """
    spec: OffsetSpec = opts.starting
    if spec.kind == "timestamp":
        check_specific_partitions("startingOffsetsByTimestamp", spec, set(tps))
        found = offsets_by_timestamp(client, spec, tps)
        hw = latest if latest is not None else client.latest(tps)
        out = {}
        for tp in tps:
            ts, off = found[tp]
            if off < 0:
                if opts.timestamp_strategy != "latest":
                    raise OptionError(f"No offset matched from request of topic-partition {tp[0]}-{tp[1]} and "
                                      f"timestamp {ts}.")
                off = hw[tp]
            out[tp] = off
        return out
    if spec.kind == "earliest":
        return client.earliest(tps)
    if spec.kind == "latest":
        return dict(latest) if latest is not None else client.latest(tps)
    check_specific_partitions("startingOffsets", spec, set(tps))
    earliest = client.earliest(tps)
    hw = latest if latest is not None else client.latest(tps)
    out: dict[TopicPartitionKey, int] = {}
    for tp in tps:
        off = spec.offsets[tp]
        if off == EARLIEST:
            out[tp] = earliest[tp]
        elif off == LATEST:
            out[tp] = hw[tp]
        elif off < earliest[tp]:
            report_data_loss(f"startingOffsets for {tp[0]}-{tp[1]} was {off} but the log starts at {earliest[tp]}",
                             opts.fail_on_data_loss)
            out[tp] = earliest[tp]
        elif off > hw[tp]:
            raise OptionError(f"option 'startingOffsets': offset {off} of {tp[0]}-{tp[1]} is beyond its high "
                              f"watermark {hw[tp]} (only committed records can be read)")
        else:
            out[tp] = off
    return out


class MiniKafkaDataSource(DataSource):
    """``spark.read`` / ``spark.readStream`` and ``df.write`` / ``df.writeStream`` with
    ``format("minikafka")``.

    Read options are those of Spark's Kafka source, write options those of its Kafka
    sink (docs/spark.md); they are checked when Spark asks for the schema (reads) or a
    writer, and again for the batch or streaming rules when the query is planned.
    """

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return spark_schema(parse_options(dict(self.options)).include_headers)

    def writer(self, schema: StructType, overwrite: bool) -> "MiniKafkaBatchWriter":
        opts = parse_sink_options(dict(self.options))
        check_sink_schema(schema, opts)
        return MiniKafkaBatchWriter(opts, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> "MiniKafkaStreamWriter":
        opts = parse_sink_options(dict(self.options))
        check_sink_schema(schema, opts)
        return MiniKafkaStreamWriter(opts, schema)

    def reader(self, schema: StructType) -> "MiniKafkaBatchReader":
        opts = parse_options(dict(self.options), BATCH)
        _check_schema(schema, opts)
        return MiniKafkaBatchReader(opts, schema)

    def streamReader(self, schema: StructType) -> "MiniKafkaStreamReader":
        opts = parse_options(dict(self.options), STREAM)
        _check_schema(schema, opts)
        return MiniKafkaStreamReader(opts, schema)


class MiniKafkaBatchReader(DataSourceReader):
    """Reads ``[startingOffsets, endingOffsets)`` of every subscribed partition once."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def plan(self) -> list[OffsetRange]:
        """The offset ranges of this read (one per topic-partition, before minPartitions)."""
        opts = self.opts
        with SourceClient(opts.bootstrap_servers, opts.poll_timeout_ms, security=opts.security,
                          isolation_level=opts.isolation_level) as client:
            tps = client.partitions(opts)
            if not tps:
                return []
            check_specific_partitions("endingOffsets", opts.ending, set(tps))
            hw = client.latest(tps)
            start = resolve_start(client, opts, tps, hw)
            # endingTimestamp / endingOffsetsByTimestamp: no matching record means latest
            by_time = offsets_by_timestamp(client, opts.ending, tps) if opts.ending.kind == "timestamp" else {}
        ranges = []
        for tp in tps:
            end = hw[tp]
            if tp in by_time and by_time[tp][1] >= 0:
                end = min(by_time[tp][1], hw[tp])
            if opts.ending.kind == "specific":
                wanted = opts.ending.offsets[tp]
                if wanted != LATEST:
                    if wanted > hw[tp]:
                        log.warning("minikafka source: endingOffsets for %s-%s is %s, above the high watermark %s: "
                                    "reading up to %s (only committed records are read)",
                                    tp[0], tp[1], wanted, hw[tp], hw[tp])
                    else:
                        end = wanted
            if start[tp] > end:
                raise OptionError(f"Beginning offset {start[tp]} is after the ending offset {end} for topic {tp[0]} "
                                  f"partition {tp[1]}. You either provided an invalid fromOffset, or the Kafka topic "
                                  "has been damaged")
            ranges.append(OffsetRange(tp[0], tp[1], start[tp], end))
        return ranges

    def partitions(self) -> list[InputPartition]:
        ranges = split_ranges(self.plan(), self.opts.min_partitions, self.opts.max_records_per_partition)
        return [RangePartition(r.topic, r.partition, r.start, r.end) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_range(self.opts, self.schema, partition)


class MiniKafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over committed offsets; offsets are ``{"topic": {"partition": offset}}``."""

    def __init__(self, opts: SourceOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self._client: SourceClient | None = None
        self._latest: dict[TopicPartitionKey, int] | None = None
        self._target: dict[TopicPartitionKey, int] | None = None  # Trigger.AvailableNow
        self._last_batch_at: float | None = None  # monotonic time of the last micro-batch planned

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_client"] = None
        return state

    @property
    def client(self) -> SourceClient:
        if self._client is None:
            self._client = SourceClient(self.opts.bootstrap_servers, self.opts.poll_timeout_ms,
                                        security=self.opts.security, isolation_level=self.opts.isolation_level)
        return self._client

    def _subscribed(self) -> list[TopicPartitionKey]:
        self.client.refresh()  # every trigger: new partitions and topics are picked up
        return self.client.partitions(self.opts)

    def initialOffset(self) -> dict:
        tps = self._subscribed()
        return offsets_to_json(resolve_start(self.client, self.opts, tps) if tps else {})

    def _committed_latest(self, start: dict[TopicPartitionKey, int]) -> dict[TopicPartitionKey, int]:
        """High watermarks of the subscribed partitions, never below ``start`` while the
        records at ``start`` are still in the log (a new leader's HW catches up lazily)."""
        tps = self._subscribed()
        latest = self.client.latest(tps) if tps else {}
        for tp, hw in latest.items():
            begin = start.get(tp)
            if begin is not None and hw < begin:
                probe = self.client.probe(tp, begin)
                leo = probe.log_end_offset
                if leo >= begin:
                    latest[tp] = begin  # committed data not visible yet on this leader: wait
                else:
                    log.info("minikafka source: %s", offset_changed(tp[0], tp[1], begin, hw))
        return latest

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_json(start or {})
        latest = self._committed_latest(begin)
        self._latest = dict(latest)
        if self._target is not None:
            latest = {tp: (min(off, self._target[tp]) if tp in self._target else begin.get(tp, off))
                      for tp, off in latest.items() if tp in self._target or tp in begin}
        new = [tp for tp in latest if tp not in begin]
        new_start = self.client.earliest(new) if new else {}
        if self._delays_trigger(begin, latest, new_start):
            return offsets_to_json(begin)  # no new micro-batch yet
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(limit.max_rows, begin, latest, new_start)
        if latest != begin:
            self._last_batch_at = time.monotonic()
        return offsets_to_json(latest)

    def _delays_trigger(self, begin: dict, latest: dict, new_start: dict) -> bool:
        """Spark's minOffsetsPerTrigger / maxTriggerDelay: skip this trigger while fewer
        records than the minimum are available, unless maxTriggerDelay passed since the
        last micro-batch (or Trigger.AvailableNow asks for everything)."""
        minimum = self.opts.min_offsets_per_trigger
        if not minimum or self._target is not None or not begin:
            return False
        available = sum(max(0, end - begin.get(tp, new_start.get(tp, end))) for tp, end in latest.items())
        if available >= minimum:
            return False
        if self._last_batch_at is None:
            self._last_batch_at = time.monotonic()
        return (time.monotonic() - self._last_batch_at) * 1000 < self.opts.max_trigger_delay_ms

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def reportLatestOffset(self) -> dict | None:
        return None if self._latest is None else offsets_to_json(self._latest)

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self._subscribed()
        self._target = self.client.latest(tps) if tps else {}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = offsets_from_json(start or {})
        until = offsets_from_json(end or {})
        new = [tp for tp in until if tp not in begin]
        new_start = self.client.earliest(new) if new else {}
        ranges = plan_ranges(begin, until, new_start, self.opts.fail_on_data_loss)
        ranges = split_ranges(ranges, self.opts.min_partitions, self.opts.max_records_per_partition)
        return [RangePartition(r.topic, r.partition, r.start, r.end) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_range(self.opts, self.schema, partition)

    def commit(self, end: dict) -> None:
        log.debug("minikafka source: committed %s", end)

    def stop(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            client.close()
