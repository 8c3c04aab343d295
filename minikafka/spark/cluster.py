"""How the Spark source talks to the cluster: metadata, committed offsets, range reads.

:class:`SourceClient` is blocking: it runs the asyncio client core (``Connection``
and ``Metadata`` from ``minikafka.client``) on a private loop thread, so that Spark's
planner and its Python readers, which are plain synchronous code, can use it.

Everything is asked as a consumer (``replica_id`` -1): ``list_offsets`` with
timestamp -1 answers the high watermark, never the LEO, and a consumer fetch never
returns a record at or above the high watermark.  Requests that meet a leader change
(NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, no leader, a broker that refuses the
connection) refresh the metadata and are retried on the new leader until
``kafkaConsumer.pollTimeoutMs`` passes without progress.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
import time
from typing import Any, Iterable, Iterator

from .. import errors
from ..client.aborted import AbortedFilter
from ..client.connection import ClientSecurity, Connection, TRANSPORT_ERRORS
from ..client.metadata import Metadata, needs_refresh
from ..client.sync import LoopThread
from ..protocol.records.batch import split_batches
from ..protocol.records.columns import scan
from ..protocol.rpc.messages import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from ..protocol.rpc.types import (FetchPartition, FetchPartitionResponse, FetchRequest, ListOffsetsPartition,
                                  ListOffsetsRequest, ListOffsetsResponse)
from ..rpc import request
from .offsets import OffsetRange, offset_changed, report_data_loss
from .options import SourceOptions, TopicPartitionKey

log = logging.getLogger("minikafka.spark")

FETCH_MAX_BYTES = 4 * 1024 * 1024  # per fetch request: about 35,000 records of 100 bytes
FETCH_MAX_WAIT_MS = 500
REQUEST_TIMEOUT_MS = 30_000
MISSING_TOPIC_WAIT_S = 2.0  # how long a just-created topic may take to appear in metadata
BOOTSTRAP_WAIT_S = 10.0  # how long to retry bootstrap servers that never answered

_RETRY = object()


class SourceTimeoutError(errors.RequestTimedOutError):
    """A partition could not be read or its offsets not looked up within kafkaConsumer.pollTimeoutMs."""


class SourceClient:
    """Blocking metadata, offset and fetch requests for the Spark source."""

    def __init__(self, bootstrap_servers: str, poll_timeout_ms: int = 120_000,
                 request_timeout_ms: int = REQUEST_TIMEOUT_MS, retry_backoff_ms: int = 100,
                 security: dict[str, Any] | None = None, isolation_level: str = "read_uncommitted") -> None:
        self.poll_timeout_ms = poll_timeout_ms
        # 1: read_committed (latest is the last stable offset; aborted records are dropped)
        self.isolation = 1 if isolation_level == "read_committed" else 0
        self.request_timeout_ms = request_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self._lt = LoopThread("minikafka-spark")
        try:
            self._conn = Connection("minikafka-spark", ClientSecurity(**(security or {})))
            self._meta = Metadata(self._conn, bootstrap_servers, request_timeout_ms)
        except BaseException:
            self._lt.close()
            raise
        self._refreshed = False

    # ----- plumbing -----------------------------------------------------------------
    def _run(self, coro: Any) -> Any:
        return self._lt.run(coro)

    def _submit(self, coro: Any) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self._lt.loop)

    def close(self) -> None:
        try:
            self._run(self._conn.close())
        except Exception:  # already closed, loop gone
            pass
        self._lt.close()

    def __enter__(self) -> "SourceClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def refresh(self) -> None:
        """Fresh metadata from any broker, retried until ``poll_timeout_ms`` if none answers
        (at most BOOTSTRAP_WAIT_S before any broker ever answered: a wrong address fails fast)."""
        wait_s = self.poll_timeout_ms / 1000 if self._meta.brokers else min(self.poll_timeout_ms / 1000, BOOTSTRAP_WAIT_S)
        deadline = time.monotonic() + wait_s
        attempt = 0
        while True:
            try:
                self._run(self._meta.refresh())
                self._refreshed = True
                return
            except errors.KafkaError as exc:
                if not (exc.retriable or needs_refresh(exc)) or time.monotonic() >= deadline:
                    raise
                log.info("minikafka source: no broker answered the metadata request, retrying: %s", exc)
            self._backoff(attempt)
            attempt += 1

    def _try_refresh(self) -> None:
        """One metadata request (each broker tried once); failures are left to the caller's retry."""
        try:
            self._run(self._meta.refresh())
            self._refreshed = True
        except errors.KafkaError as exc:
            log.debug("metadata refresh failed: %s", exc)

    def _backoff(self, attempt: int) -> None:
        time.sleep(min(self.retry_backoff_ms * (2 ** min(attempt, 4)), 1000) / 1000)

    # ----- subscription -------------------------------------------------------------
    def partitions(self, options: SourceOptions) -> list[TopicPartitionKey]:
        """The topic-partitions the subscription names now, sorted.

        ``subscribe`` and ``subscribePattern`` take every partition of the matching
        topics (a subscribed topic that does not exist gives none, as in Spark; it is
        logged); ``assign`` takes the named ones and fails if one does not exist.
        """
        if not self._refreshed:
            self.refresh()
        meta = self._meta
        named = options.topics if options.strategy == "subscribe" else tuple({t for t, _ in options.assignment})
        hidden = [t for t in named if meta.topic(t) is None]
        if hidden:  # not listed: it does not exist, or an ACL hides it (Spark's consumer fails then)
            fatal = self._run(meta.ask_for_topics(hidden, auto_create=False))
            if fatal:
                raise next(iter(fatal.values()))
        if options.strategy == "subscribe":
            deadline = time.monotonic() + MISSING_TOPIC_WAIT_S
            while any(meta.topic(t) is None for t in options.topics) and time.monotonic() < deadline:
                time.sleep(0.2)
                self._try_refresh()
            out = []
            for t in options.topics:
                info = meta.topic(t)
                if info is None:
                    log.warning("minikafka source: subscribed topic %r does not exist; it has no partitions to read", t)
                    continue
                out.extend((t, p) for p in info.partition_ids)
            return sorted(out)
        if options.strategy == "subscribePattern":
            rx = re.compile(options.pattern or "")
            return sorted((name, p) for name in list(meta.topics) if rx.fullmatch(name) and meta.topic(name)
                          for p in meta.topic(name).partition_ids)
        missing = [tp for tp in options.assignment if meta.partition(*tp) is None]
        if missing:
            self._try_refresh()
            missing = [tp for tp in options.assignment if meta.partition(*tp) is None]
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise errors.UnknownTopicOrPartitionError(f"option 'assign': partition(s) {names} do not exist")
        return sorted(options.assignment)

    # ----- offsets ------------------------------------------------------------------
    def earliest(self, tps: Iterable[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """Log start offsets."""
        return self.list_offsets(tps, EARLIEST_TIMESTAMP)

    def latest(self, tps: Iterable[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        """High watermarks (asked as a consumer: never the LEO)."""
        return self.list_offsets(tps, LATEST_TIMESTAMP)

    def list_offsets(self, tps: Iterable[TopicPartitionKey], timestamp: int) -> dict[TopicPartitionKey, int]:
        """``list_offsets`` from each partition's leader, retried across leader changes."""
        todo = sorted(set(tps))
        out: dict[TopicPartitionKey, int] = {}
        deadline = time.monotonic() + self.poll_timeout_ms / 1000
        attempt = 0
        last: BaseException | None = None
        while todo:
            answers, retry, last_err = self._run(self._list_offsets_once(todo, timestamp))
            out.update(answers)
            last = last_err or last
            todo = retry
            if not todo:
                break
            if time.monotonic() >= deadline:
                names = ", ".join(f"{t}-{p}" for t, p in todo)
                raise SourceTimeoutError(f"offsets of {names} could not be looked up within "
                                         f"{self.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs): {last}")
            self._backoff(attempt)
            attempt += 1
            self._try_refresh()
        return out

    async def _list_offsets_once(self, tps: list[TopicPartitionKey], timestamp: int) -> tuple[dict, list, Any]:
        meta = self._meta
        groups: dict[int, list[TopicPartitionKey]] = {}
        retry: list[TopicPartitionKey] = []
        for tp in tps:
            la = meta.leader_address(*tp)
            if la is None:
                retry.append(tp)
            else:
                groups.setdefault(la[0], []).append(tp)
        last: Any = errors.LeaderNotAvailableError("no leader in metadata") if retry else None

        async def ask(leader: int, group: list[TopicPartitionKey]) -> ListOffsetsResponse:
            host, port = meta.brokers[leader]
            req = ListOffsetsRequest(isolation_level=self.isolation, partitions=[
                ListOffsetsPartition(topic=t, partition=p, timestamp=timestamp,
                                     current_leader_epoch=meta.partition(t, p).leader_epoch) for t, p in group])
            return await request(self._conn.call, host, port, req, self.request_timeout_ms / 1000)

        leaders = list(groups)
        answers = await asyncio.gather(*(ask(b, groups[b]) for b in leaders), return_exceptions=True)
        out: dict[TopicPartitionKey, int] = {}
        for leader, answer in zip(leaders, answers):
            if isinstance(answer, BaseException):
                if not isinstance(answer, errors.KafkaError) or not (answer.retriable or needs_refresh(answer)):
                    raise answer
                retry.extend(groups[leader])
                last = answer
                continue
            seen = set()
            for p in answer.partitions:
                tp = (p.topic, p.partition)
                seen.add(tp)
                if p.error is not None:
                    if not (p.error.retriable or needs_refresh(p.error)):
                        raise p.error
                    retry.append(tp)
                    last = p.error
                else:
                    out[tp] = p.offset
            retry.extend(tp for tp in groups[leader] if tp not in seen)
        return out, retry, last

    def probe(self, tp: TopicPartitionKey, offset: int) -> FetchPartitionResponse:
        """The leader's view of a partition at ``offset``: a consumer fetch without waiting.

        Returns the answer entry: its ``error`` (None or OFFSET_OUT_OF_RANGE),
        ``high_watermark``, ``log_end_offset`` and ``log_start_offset`` (the latter two are
        set even with OFFSET_OUT_OF_RANGE).
        """
        deadline = time.monotonic() + self.poll_timeout_ms / 1000
        attempt = 0
        while True:
            res = self._fetch_result(self._submit(self._fetch(tp, offset, 1, 0)))
            if res is not _RETRY:
                if res.error is None or isinstance(res.error, errors.OffsetOutOfRangeError):
                    return res
                if not (res.error.retriable or needs_refresh(res.error)):
                    raise res.error
            if time.monotonic() >= deadline:
                raise SourceTimeoutError(f"{tp[0]}-{tp[1]}: no leader answered within {self.poll_timeout_ms} ms")
            self._backoff(attempt)
            attempt += 1
            self._try_refresh()

    # ----- reading ------------------------------------------------------------------
    async def _fetch(self, tp: TopicPartitionKey, offset: int, max_bytes: int, max_wait_ms: int) -> FetchPartitionResponse:
        meta = self._meta
        la = meta.leader_address(*tp)
        if la is None:
            raise errors.LeaderNotAvailableError(f"{tp[0]}-{tp[1]} has no leader in the metadata")
        _, host, port = la
        info = meta.partition(*tp)
        req = FetchRequest(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=max_bytes, isolation_level=self.isolation,
                           partitions=[FetchPartition(topic=tp[0], partition=tp[1], fetch_offset=offset,
                                                      current_leader_epoch=info.leader_epoch if info else -1,
                                                      partition_max_bytes=max_bytes)])
        answer = await request(self._conn.call, host, port, req, (self.request_timeout_ms + max_wait_ms) / 1000)
        for p in answer.partitions:
            if p.topic == tp[0] and p.partition == tp[1]:
                return p
        raise errors.UnknownServerError(f"fetch answer without {tp[0]}-{tp[1]}")

    def _fetch_result(self, fut: concurrent.futures.Future) -> Any:
        """The fetch answer entry, or _RETRY after a failure worth retrying elsewhere."""
        try:
            return fut.result()
        except errors.KafkaError as exc:
            if isinstance(exc, TRANSPORT_ERRORS) or exc.retriable or needs_refresh(exc):
                log.info("minikafka source: fetch failed, refreshing metadata: %s", exc)
                return _RETRY
            raise

    def read(self, rng: OffsetRange, fail_on_data_loss: bool = True,
             max_bytes: int = FETCH_MAX_BYTES) -> Iterator[tuple[bytes, int, int]]:
        """Fetch the committed records of ``rng``: yields ``(batches, lo, hi)``.

        ``batches`` are the bytes of one fetch answer; only their records with offsets in
        ``[lo, hi)`` belong to the range (the first batch may start before ``lo``, the
        last may end after ``hi``).  The next fetch is already in flight while the caller
        decodes.  Offsets that are gone (before the log start, or truncated away: the
        leader's LEO below the range end) are data loss: :class:`DataLossError` with
        ``fail_on_data_loss``, else a warning and the range is cut.
        """
        tp = rng.tp
        topic, partition = tp
        pos, end = rng.start, rng.end
        poll_s = self.poll_timeout_ms / 1000
        deadline = time.monotonic() + poll_s
        attempt = 0
        pending: tuple[int, concurrent.futures.Future] | None = None
        last_problem = "no answer yet"
        try:
            while pos < end:
                if pending is not None and pending[0] == pos:
                    fut = pending[1]
                else:
                    fut = self._submit(self._fetch(tp, pos, max_bytes, FETCH_MAX_WAIT_MS))
                pending = None
                res = self._fetch_result(fut)
                retry = res is _RETRY
                if not retry:
                    if isinstance(res.error, errors.OffsetOutOfRangeError):
                        lso, leo = res.log_start_offset, res.log_end_offset
                        if 0 <= leo < pos:
                            report_data_loss(offset_changed(topic, partition, end, leo), fail_on_data_loss)
                            return
                        if pos < lso:
                            report_data_loss(offset_changed(topic, partition, pos, lso), fail_on_data_loss)
                            pos = lso
                            continue
                        retry = True  # a leader that is not there yet (fetch raced an election)
                        last_problem = f"OFFSET_OUT_OF_RANGE at {pos} (log [{lso}, {leo}])"
                    elif res.error is not None:
                        if not (res.error.retriable or needs_refresh(res.error)):
                            raise res.error
                        retry = True
                        last_problem = str(res.error)
                else:
                    last_problem = "leader unreachable or changed"
                if retry:
                    if time.monotonic() >= deadline:
                        raise SourceTimeoutError(
                            f"Cannot fetch offset {pos} of {topic}-{partition} (range {rng}) within "
                            f"{self.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs): {last_problem}")
                    self._backoff(attempt)
                    attempt += 1
                    self._try_refresh()
                    continue
                attempt = 0
                leo = res.log_end_offset
                if 0 <= leo < end:
                    # A clean leader holds every committed record; a log that ends below the
                    # range end lost records that were committed when the range was planned.
                    report_data_loss(offset_changed(topic, partition, end, leo), fail_on_data_loss)
                    end = max(pos, leo)
                    if pos >= end:
                        return
                data = res.records or b""
                if not data:
                    # Nothing committed at pos yet: a new leader whose HW is still catching up.
                    last_problem = f"high watermark {res.high_watermark} below {end}"
                    if time.monotonic() >= deadline:
                        raise SourceTimeoutError(
                            f"Cannot fetch offset {pos} of {topic}-{partition} (range {rng}) within "
                            f"{self.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs): {last_problem}")
                    continue
                next_pos = _next_offset(data)
                if res.aborted_transactions:
                    data = _without_aborted(data, res.aborted_transactions)
                if next_pos <= pos:
                    raise errors.CorruptMessageError(f"{topic}-{partition}: fetch at {pos} returned batches ending at {next_pos}")
                if next_pos < end:
                    pending = (next_pos, self._submit(self._fetch(tp, next_pos, max_bytes, FETCH_MAX_WAIT_MS)))
                yield data, pos, end
                pos = next_pos
                deadline = time.monotonic() + poll_s
        finally:
            if pending is not None:
                pending[1].cancel()


def _without_aborted(data: bytes, aborted: list) -> bytes:
    """The batches of ``data`` minus those of aborted transactions (read_committed)."""
    keep = AbortedFilter(aborted)
    return b"".join(bytes(raw) for h, raw in split_batches(data, validate=False) if not keep.skips(h, raw))


def _next_offset(data: bytes) -> int:
    """The offset after the last batch in ``data`` (header walk only)."""
    refs = scan(memoryview(data))
    return refs[-1].last_offset + 1
