"""Offset ranges of the minikafka Spark source: planning rules, pure (no Spark, no network).

* :func:`split_ranges`: Spark's ``KafkaOffsetRangeCalculator``: one range per
  topic-partition, split into several when ``minPartitions`` asks for more.
* :func:`rate_limit`: Spark's ``maxOffsetsPerTrigger`` rule, the limit spread over
  partitions in proportion to their backlog.
* :func:`data_loss_message` and :class:`DataLossError`: Spark's wording when offsets
  are no longer in the log.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Mapping

from .options import TopicPartitionKey

log = logging.getLogger("minikafka.spark")

INSTRUCTION_FAIL = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was "
    "truncated away (an unclean leader election, a replica that lost its log) or the topic may have been "
    "deleted before all the data in the topic was processed. If you don't want your query to fail on such "
    "cases, set the source option \"failOnDataLoss\" to \"false\"."
)
INSTRUCTION_WARN = (
    "Some data may have been lost because they are not available in Kafka any more; either the data was "
    "truncated away (an unclean leader election, a replica that lost its log) or the topic may have been "
    "deleted before all the data in the topic was processed. If you want your query to fail on such cases, "
    "set the source option \"failOnDataLoss\" to \"true\"."
)


class DataLossError(RuntimeError):
    """Offsets a query needs are no longer in the log (raised when failOnDataLoss is true)."""


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def tp(self) -> TopicPartitionKey:
        return (self.topic, self.partition)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}[{self.start}, {self.end})"


def offset_changed(topic: str, partition: int, old: int, new: int) -> str:
    """Spark's phrase for offsets that went away: the offset moved from ``old`` to ``new``."""
    return f"Partition {topic}-{partition}'s offset was changed from {old} to {new}, some data may have been missed"


def data_loss_message(message: str, fail: bool) -> str:
    return f"{message}. {INSTRUCTION_FAIL if fail else INSTRUCTION_WARN}"


def report_data_loss(message: str, fail: bool) -> None:
    """Raise :class:`DataLossError` (failOnDataLoss true) or log a warning (false)."""
    if fail:
        raise DataLossError(data_loss_message(message, True))
    log.warning("%s", data_loss_message(message, False))


def _part_count(size: int, total: int, min_parts: int) -> int:
    return max(math.ceil(size / total * min_parts), 1)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """Non-empty ranges, split like Spark's ``KafkaOffsetRangeCalculator.getRanges``.

    Without ``minPartitions``, or when there are already that many ranges, one range per
    topic-partition.  Otherwise large ranges are cut into parts in proportion to their
    size so that there are at least ``minPartitions`` ranges; small ones stay whole.
    With ``maxRecordsPerPartition`` every range is then cut into equal parts of at most
    that many offsets.
    """
    ranges = _split_min(ranges, min_partitions)
    if not max_records:
        return ranges
    out: list[OffsetRange] = []
    for r in ranges:
        parts = -(-r.size // max_records)
        start = r.start
        for part in range(parts):
            end = r.start + (r.size * (part + 1)) // parts
            out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out


def _split_min(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    ranges = [r for r in ranges if r.size > 0]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    unsplit = [r for r in ranges if _part_count(r.size, total, min_partitions) == 1]
    split_total = total - sum(r.size for r in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = 1 if r in unsplit else _part_count(r.size, split_total, split_min)
        remaining = r.size
        start = r.start
        for part in range(parts):
            this = remaining // (parts - part)
            remaining -= this
            end = min(start + this, r.end)
            if end > start:
                out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out


def rate_limit(limit: int, start: Mapping[TopicPartitionKey, int], until: Mapping[TopicPartitionKey, int],
               new_start: Mapping[TopicPartitionKey, int] | None = None) -> dict[TopicPartitionKey, int]:
    """Spark's ``rateLimit``: cap a micro-batch at about ``limit`` records.

    ``until`` holds the latest offsets, ``start`` where the batch begins and
    ``new_start`` the start of partitions not in ``start`` (new ones begin at earliest).
    Each partition with a backlog gets ``limit * backlog / total`` records, rounded
    down, but at least one when its share is below one (so small partitions are never
    starved; the total may then exceed ``limit`` by a few records, as in Spark).
    """
    new_start = new_start or {}
    sizes: dict[TopicPartitionKey, int] = {}
    for tp, end in until.items():
        begin = start.get(tp, new_start.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(until)
    out: dict[TopicPartitionKey, int] = {}
    for tp, end in until.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        begin = start.get(tp, new_start.get(tp, end))
        prorate = limit * (size / total)
        amount = int(math.ceil(prorate) if prorate < 1 else math.floor(prorate))
        out[tp] = min(end, begin + amount)
    return out


def plan_ranges(start: Mapping[TopicPartitionKey, int], end: Mapping[TopicPartitionKey, int],
                new_start: Mapping[TopicPartitionKey, int], fail_on_data_loss: bool) -> list[OffsetRange]:
    """The ranges of a micro-batch from ``start`` to ``end`` (Spark's ``planInputPartitions``).

    Partitions in ``start`` but not in ``end`` are gone; a partition whose end is below
    its start was truncated: both are reported as data loss and skipped.  Partitions
    only in ``end`` start at ``new_start`` (their earliest offset).
    """
    gone = sorted(set(start) - set(end))
    if gone:
        report_data_loss("{" + ", ".join(f"{t}-{p}" for t, p in gone) + "} are gone. Some data may have been missed",
                         fail_on_data_loss)
    out: list[OffsetRange] = []
    for tp in sorted(end):
        until = end[tp]
        if tp in start:
            begin = start[tp]
        elif tp in new_start:
            begin = new_start[tp]
            if begin != 0:
                report_data_loss(f"Added partition {tp[0]}-{tp[1]} starts from {begin} instead of 0. "
                                 "Some data may have been missed", fail_on_data_loss)
        else:
            report_data_loss(f"Cannot find earliest offsets of {{{tp[0]}-{tp[1]}}}. Some data may have been missed",
                             fail_on_data_loss)
            continue
        if until < begin:
            report_data_loss(offset_changed(tp[0], tp[1], begin, until), fail_on_data_loss)
            continue
        out.append(OffsetRange(tp[0], tp[1], begin, until))
    return out
