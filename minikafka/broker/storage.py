"""Where replicas live between restarts, and the checkpoint files.

* ``memory`` (default): logs live only in the process; a restarted broker comes
  back empty and re-replicates.  Checkpoint files are still written (so they can
  be looked at) but not trusted on start-up, since the data they describe is gone.
* ``disk``: one folder per partition (``<data-dir>/<topic>-<partition>/``) with
  append-only segment files of CRC-framed batches, one file per segment of the log
  (the log decides where segments start: segment.bytes, segment.ms), named by its
  base offset, and a ``leader-epoch-checkpoint``; start-up recovery cuts a torn tail.
  Retention deletes whole segment files; ``log-start-offset-checkpoint`` keeps each
  log start offset (DeleteRecords may put it inside the first segment), and each
  partition's ``<offset, 20 digits>.snapshot`` the idempotent producers' state as of its
  log start (Kafka's producer snapshot), so that producers whose batches are gone are
  still known after a restart.

Checkpoints are written like Kafka's CheckpointFile: temp file, fsync, rename,
fsync of the folder.

Every data dir gets a ``meta.properties`` in Kafka's style (``version=0``,
``broker.id=N``) plus ``minikafka.record.format=2``: the batches are Kafka's record
batch v2.  A data dir holding segments but no ``meta.properties`` (removed by hand, lost)
gets it written again, as Kafka does, when its segments start with record batches v2;
segments that do not were written by an older minikafka with its own batch format, and
disk storage refuses to start on them, naming the file.
"""
from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from typing import Iterable

from ..errors import ClientError, CorruptMessageError, KafkaStorageError
from ..log import checkpoint
from ..log.epoch_cache import LeaderEpochCache
from ..log.partition_log import PartitionLog
from ..log.recovery import check_recovered_batch, epoch_checkpoint_problem
from ..protocol.records.batch import HEADER_SIZE, read_header, validate_batch
from ..protocol.topic_ids import is_topic_id

log = logging.getLogger(__name__)

HW_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
# An empty file in a partition's folder: this log was once compacted (or fetched from a
# compacted leader), so gaps between its batches are the cleaner's, even after its topic
# went back to cleanup.policy=delete.
COMPACTED_MARKER = "compacted"
SEGMENT_SUFFIX = ".log"
PARTITION_METADATA = "partition.metadata"  # the topic id of the partition's log (KIP-516), as Kafka writes it
SNAPSHOT_SUFFIX = ".snapshot"
META_PROPERTIES = "meta.properties"
RECORD_FORMAT_KEY = "minikafka.record.format"
RECORD_FORMAT = "2"  # Kafka's record batch v2 (magic 2), see protocol/records/batch.py
MAX_OPEN_SEGMENTS = 256  # active segment files kept open for appends (least recently appended closed first)
_IOV_MAX = 512  # buffers per writev (the OS limit is 1024 on Linux)
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


def parse_partition_metadata(text: str, path: str = "partition.metadata") -> str:
    """The topic id of a ``partition.metadata`` file (Kafka's PartitionMetadataReadBuffer:
    ``version: 0`` then ``topic_id: <id>``); ValueError naming ``path`` otherwise."""
    lines = text.splitlines()
    fields = [line.partition(": ") for line in lines]
    if len(lines) != 2 or fields[0][0] != "version" or fields[1][0] != "topic_id":
        raise ValueError(f"{path}: expected 'version: 0' and 'topic_id: <id>' lines")
    if fields[0][2] != "0":
        raise ValueError(f"{path}: version {fields[0][2]!r}, only 0 is known")
    if not is_topic_id(fields[1][2]):
        raise ValueError(f"{path}: malformed topic id {fields[1][2]!r}")
    return fields[1][2]


def write_atomically(path: str, text: str | bytes, durable: bool = True) -> None:
    """Write ``text`` to ``path`` so that a crash leaves the old or the new file, never half;
    ``durable`` False leaves out the two fsyncs (a reader sees the old or the new file, but
    a machine's crash may lose the new one)."""
    tmp = path + ".tmp"
    with open(tmp, "wb" if isinstance(text, bytes) else "w") as f:
        f.write(text)
        f.flush()
        if durable:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if not durable:
        return
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _first_batch_below(buf: bytes, offset: int) -> bool:
    """True when ``buf`` starts with a valid batch that ends below ``offset``."""
    try:
        return validate_batch(buf, 0).last_offset < offset if len(buf) >= HEADER_SIZE else False
    except CorruptMessageError:
        return False


class Storage:
    """Memory storage: nothing survives the process but the checkpoint files."""

    persistent = False

    def __init__(self, data_dir: str, broker_id: int | None = None) -> None:
        self.data_dir = data_dir
        self.broker_id = broker_id
        # checkpoints may be written from a worker thread (off the event loop) and, at
        # stop, from the loop's thread: one writer at a time per file's temp name
        self._checkpoint_lock = threading.Lock()
        os.makedirs(data_dir, exist_ok=True)
        self._check_record_format()

    # -- format marker -------------------------------------------------------------
    def read_meta_properties(self) -> dict[str, str] | None:
        """The ``key=value`` lines of ``meta.properties`` (None when there is none)."""
        path = os.path.join(self.data_dir, META_PROPERTIES)
        if not os.path.exists(path):
            return None
        out: dict[str, str] = {}
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", "!")):
                    k, _, v = line.partition("=")
                    out[k.strip()] = v.strip()
        return out

    def _segment_files(self) -> list[str]:
        out = []
        for name in sorted(os.listdir(self.data_dir)):
            d = os.path.join(self.data_dir, name)
            if os.path.isdir(d):
                out += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(SEGMENT_SUFFIX)]
        return out

    @staticmethod
    def _not_batch_v2(path: str) -> str | None:
        """Why the segment file at ``path`` does not start with a record batch v2 (None when
        it does, or is empty)."""
        with open(path, "rb") as f:
            head = f.read(HEADER_SIZE)
        if not head:
            return None
        if len(head) < HEADER_SIZE:
            return f"it is {len(head)} bytes long, less than a batch header"
        magic = read_header(head).magic
        return None if magic == 2 else f"its first batch has magic {magic}, not 2"

    def _check_record_format(self) -> None:
        """Refuse a data dir of another record format; write ``meta.properties`` if missing.

        Memory storage never reads segments, so it refuses nothing, but it does not mark
        a dir holding old segments either (a later disk start must still refuse it).
        """
        meta = self.read_meta_properties()
        if meta is not None:
            fmt = meta.get(RECORD_FORMAT_KEY)
            if fmt != RECORD_FORMAT and self.persistent:
                raise ClientError(f"data dir {self.data_dir} has {META_PROPERTIES} with {RECORD_FORMAT_KEY}="
                                  f"{fmt if fmt is not None else '(missing)'}; this minikafka reads format "
                                  f"{RECORD_FORMAT} only: remove it or point --data-dir elsewhere")
            return
        segments = self._segment_files()
        foreign = next(((p, why) for p in segments if (why := self._not_batch_v2(p)) is not None), None)
        if foreign is not None:
            # memory storage reads no segment, but leaves the dir unmarked for a later disk start
            if self.persistent:
                raise ClientError(f"data dir {self.data_dir} has no {META_PROPERTIES} and {foreign[0]} is not "
                                  f"in Kafka's record batch v2 format ({foreign[1]}): it was written by an older "
                                  f"minikafka; remove it or point --data-dir elsewhere")
            return
        if segments:
            log.warning("data dir %s holds segments in Kafka's record batch v2 format but no %s: written again",
                        self.data_dir, META_PROPERTIES)
        lines = ["#minikafka broker data dir", "version=0"]
        if self.broker_id is not None:
            lines.append(f"broker.id={self.broker_id}")
        lines.append(f"{RECORD_FORMAT_KEY}={RECORD_FORMAT}")
        write_atomically(os.path.join(self.data_dir, META_PROPERTIES), "\n".join(lines) + "\n")

    def partition_dir(self, topic: str, partition: int) -> str:
        return os.path.join(self.data_dir, f"{topic}-{partition}")

    # -- checkpoints -------------------------------------------------------------
    def write_hw_checkpoint(self, hws: dict[tuple[str, int], int]) -> None:
        """Write ``replication-offset-checkpoint`` (safe from any thread)."""
        with self._checkpoint_lock:
            write_atomically(os.path.join(self.data_dir, HW_CHECKPOINT), checkpoint.format_offsets(hws))

    def read_hw_checkpoint(self) -> dict[tuple[str, int], int]:
        """The checkpointed high watermarks.  An unreadable file is moved aside (``.corrupt``)
        and every HW starts unknown (0): the leaders' HWs come back from their followers'
        fetches, so consumers briefly see less, never something wrong."""
        return self._read_offsets(HW_CHECKPOINT, "high watermarks start at 0 and are recomputed by the leaders")

    def write_log_start_checkpoint(self, starts: dict[tuple[str, int], int]) -> None:
        """Write ``log-start-offset-checkpoint`` (safe from any thread)."""
        with self._checkpoint_lock:
            write_atomically(os.path.join(self.data_dir, LOG_START_CHECKPOINT), checkpoint.format_offsets(starts))

    def read_log_start_checkpoint(self) -> dict[tuple[str, int], int]:
        """The checkpointed log start offsets (Kafka's log-start-offset-checkpoint).  An
        unreadable file is moved aside: each log then starts at its first segment, so
        records that DeleteRecords removed inside that segment may show again until the
        leader's log start reaches the followers."""
        return self._read_offsets(LOG_START_CHECKPOINT, "log start offsets fall back to each log's first segment")

    def _read_offsets(self, name: str, consequence: str) -> dict[tuple[str, int], int]:
        path = os.path.join(self.data_dir, name)
        if not self.persistent or not os.path.exists(path):
            return {}
        with open(path, errors="replace") as f:
            text = f.read()
        try:
            return checkpoint.parse_offsets(text)
        except KafkaStorageError as exc:
            os.replace(path, path + ".corrupt")
            log.warning("%s is unreadable (%s): moved to %s.corrupt; %s", path, exc, name, consequence)
            return {}

    def write_epochs(self, topic: str, partition: int, entries: list[tuple[int, int]]) -> None:
        d = self.partition_dir(topic, partition)
        os.makedirs(d, exist_ok=True)
        # on memory storage the file is there to be read, and nothing it describes outlives
        # the process: no fsync (a failover makes thousands of these writes on the event loop)
        write_atomically(os.path.join(d, EPOCH_CHECKPOINT), checkpoint.format_epochs(entries), durable=self.persistent)

    def read_topic_id(self, topic: str, partition: int) -> str | None:
        """The topic id (KIP-516) the partition's log was written for; None when unknown
        (memory storage: a log never outlives its process)."""
        return None

    def write_topic_id(self, topic: str, partition: int, topic_id: str) -> None:
        """Record the topic id the partition's log belongs to (memory storage: nothing)."""

    # -- logs ----------------------------------------------------------------------
    def load(self, topic: str, partition: int, log_start_offset: int = 0, compacted: bool = False,
             keep_damage: bool = False, max_epoch: int | None = None) -> tuple[PartitionLog, LeaderEpochCache]:
        """The stored log and epoch cache of a partition (empty for memory storage)."""
        return PartitionLog(), LeaderEpochCache()

    def local_partitions(self) -> list[tuple[str, int]]:
        return []

    def mark_compacted(self, topic: str, partition: int) -> None:
        """Remember that this log may have gaps (memory storage: nothing outlives the process)."""

    def append(self, topic: str, partition: int, batches: Iterable[bytes], log_: PartitionLog) -> None:
        """Mirror batches just appended to ``log_`` (memory storage: nothing to do)."""

    def truncate(self, topic: str, partition: int, log_: PartitionLog) -> None:
        """Mirror a truncation of ``log_`` (memory storage: nothing to do)."""

    def replace_segments(self, topic: str, partition: int, log_: PartitionLog, count: int,
                         old_bases: list[int]) -> None:
        """Mirror the log cleaner's rewrite of the first ``count`` segments of ``log_``
        (memory storage: nothing to do)."""

    def delete_segments(self, topic: str, partition: int, log_: PartitionLog) -> None:
        """Mirror the segments retention or a new log start removed from ``log_``."""

    def write_producer_snapshot(self, topic: str, partition: int, offset: int, text: str) -> None:
        """Store the producer state as of ``offset`` (the log start), replacing the last one
        (memory storage: nothing outlives the process)."""

    def read_producer_snapshot(self, topic: str, partition: int) -> str | None:
        """The stored producer snapshot's text, or None."""
        return None

    def set_aside_producer_snapshot(self, topic: str, partition: int) -> None:
        """Move an unreadable producer snapshot aside (``.corrupt``)."""

    def delete(self, topic: str, partition: int) -> None:
        d = self.partition_dir(topic, partition)
        if os.path.isdir(d):
            for name in os.listdir(d):
                os.remove(os.path.join(d, name))
            os.rmdir(d)

    def close(self) -> None:
        pass


class DiskStorage(Storage):
    """Segment files of CRC-framed batches (the batch format carries its own CRC).

    Appends go to the partition's active segment file through a descriptor kept open
    (``O_APPEND``, unbuffered: a batch is in the page cache once ``append`` returns, so
    a killed process loses nothing; as in Kafka, nothing is fsynced per append, the
    guarantee comes from replication).  At most :data:`MAX_OPEN_SEGMENTS` descriptors
    stay open, the least recently appended is closed first, so a broker with many
    partitions neither opens a file per append nor runs out of descriptors.
    """

    persistent = True

    def __init__(self, data_dir: str, broker_id: int | None = None,
                 max_open_segments: int = MAX_OPEN_SEGMENTS) -> None:
        super().__init__(data_dir, broker_id)
        self.max_open_segments = max(1, max_open_segments)
        # tp -> (path of the active segment file, its open descriptor), least recent first
        self._open: OrderedDict[tuple[str, int], tuple[str, int]] = OrderedDict()

    def open_segment_files(self) -> int:
        """How many segment files are open for appends now."""
        return len(self._open)

    def _close_segment(self, tp: tuple[str, int]) -> None:
        entry = self._open.pop(tp, None)
        if entry is not None:
            os.close(entry[1])

    def _segment_fd(self, tp: tuple[str, int], path: str) -> int:
        """An open append descriptor on ``path``, the active segment file of ``tp``."""
        entry = self._open.get(tp)
        if entry is not None and entry[0] == path:
            self._open.move_to_end(tp)
            return entry[1]
        self._close_segment(tp)
        os.makedirs(os.path.dirname(path), exist_ok=True)  # once per segment file, not per append
        fd = os.open(path, _APPEND_FLAGS, 0o644)
        self._open[tp] = (path, fd)
        while len(self._open) > self.max_open_segments:
            _, (_, old) = self._open.popitem(last=False)
            os.close(old)
        return fd

    @staticmethod
    def _segment_name(base_offset: int) -> str:
        return f"{base_offset:020d}{SEGMENT_SUFFIX}"

    def _segments(self, topic: str, partition: int) -> list[str]:
        d = self.partition_dir(topic, partition)
        if not os.path.isdir(d):
            return []
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(SEGMENT_SUFFIX))

    def read_topic_id(self, topic: str, partition: int) -> str | None:
        """The id in the partition folder's ``partition.metadata`` (None without one);
        ValueError when the file is not Kafka's ``version: 0`` / ``topic_id: <id>``."""
        path = os.path.join(self.partition_dir(topic, partition), PARTITION_METADATA)
        if not os.path.exists(path):
            return None
        with open(path, errors="replace") as f:
            return parse_partition_metadata(f.read(), path)

    def write_topic_id(self, topic: str, partition: int, topic_id: str) -> None:
        """Write ``partition.metadata`` as Kafka's PartitionMetadataFile: temp file, fsync,
        rename."""
        d = self.partition_dir(topic, partition)
        os.makedirs(d, exist_ok=True)
        write_atomically(os.path.join(d, PARTITION_METADATA), f"version: 0\ntopic_id: {topic_id}")

    def local_partitions(self) -> list[tuple[str, int]]:
        out = []
        if not os.path.isdir(self.data_dir):
            return out
        for name in os.listdir(self.data_dir):
            topic, sep, part = name.rpartition("-")
            if sep and part.isdigit() and os.path.isdir(os.path.join(self.data_dir, name)):
                out.append((topic, int(part)))
        return sorted(out)

    def load(self, topic: str, partition: int, log_start_offset: int = 0, compacted: bool = False,
             keep_damage: bool = False, max_epoch: int | None = None) -> tuple[PartitionLog, LeaderEpochCache]:
        """Read every segment (each file is one segment of the log); the first invalid batch
        (torn write, a CRC mismatch, or offsets that do not fit where the batch lies:
        :func:`~minikafka.log.recovery.check_recovered_batch`) and everything after it are
        cut off the files.  ``log_start_offset`` (checkpointed) moves the log start inside
        the first segment.  ``compacted`` (the topic's cleanup.policy includes compact):
        gaps between batches are the log cleaner's, not damage.  ``keep_damage``: no other
        replica holds these records (the only copy), so an invalid batch is not cut away:
        KAFKA_STORAGE_ERROR is raised, naming it, and the files stay as they are.
        ``max_epoch``: the partition's current leader epoch (LeaderAndIsr's): a batch or an
        epoch entry above it was written by no leader, so it is damage too.  A log
        marked by :meth:`mark_compacted` counts as compacted whatever its topic's policy
        is now."""
        compacted = compacted or os.path.exists(os.path.join(self.partition_dir(topic, partition), COMPACTED_MARKER))
        self._close_segment((topic, partition))
        plog = PartitionLog()
        segments = self._segments(topic, partition)
        torn = False
        last_epoch = -1  # the leader epoch of the last batch read
        for i, path in enumerate(segments):
            if torn:
                os.remove(path)
                continue
            with open(path, "rb") as f:
                buf = f.read()
            pos = 0
            base = int(os.path.basename(path)[:-len(SEGMENT_SUFFIX)])
            # a compacted log's file may hold batches of a merged-away file left by a crash (below)
            next_base = (int(os.path.basename(segments[i + 1])[:-len(SEGMENT_SUFFIX)])
                         if i + 1 < len(segments) and not compacted else None)
            if i == 0 and base > 0:
                plog.truncate_fully_and_start_at(base)
            if i > 0 and _first_batch_below(buf, plog.log_end_offset):
                # a segment the log cleaner merged into the previous file, left by a crash
                # before its removal: the previous file holds its (cleaned) records
                log.warning("%s-%d: %s is a leftover of an interrupted log cleaning (its records are in the "
                            "previous segment): removed", topic, partition, path)
                os.remove(path)
                continue
            while pos < len(buf):
                try:
                    h = validate_batch(buf, pos)
                    check_recovered_batch(h, plog.log_end_offset, base, next_base, compacted, last_epoch, max_epoch)
                    # a compacted segment may start after its file's base offset
                    plog.append(h, bytes(buf[pos:pos + h.size]), new_segment=pos == 0, allow_gap=True,
                                segment_base=base)
                    last_epoch = h.leader_epoch
                except CorruptMessageError as exc:
                    if keep_damage:
                        raise KafkaStorageError(
                            f"{topic}-{partition}: invalid batch in {path} at byte {pos} ({exc}); this replica "
                            f"holds the only copy of offsets {plog.log_end_offset} on, so the log is not cut: the "
                            f"partition stays offline (KAFKA_STORAGE_ERROR) until the file is repaired, or removed "
                            f"by hand to accept the loss") from None
                    log.warning("%s-%d: invalid batch in %s at byte %d (%s): the log is cut there, with every later "
                                "batch and segment, from offset %d on; the replica fetches them again from the leader",
                                topic, partition, path, pos, exc, plog.log_end_offset)
                    with open(path, "r+b") as f:
                        f.truncate(pos)
                        os.fsync(f.fileno())
                    torn = True
                    break
                pos += h.size
        if log_start_offset > plog.log_start_offset:
            plog.advance_log_start(log_start_offset)
        return plog, self._load_epochs(topic, partition, plog, max_epoch)

    def _load_epochs(self, topic: str, partition: int, plog: PartitionLog,
                     max_epoch: int | None = None) -> LeaderEpochCache:
        """The leader-epoch checkpoint of a loaded log, checked against the log's batches
        (:func:`~minikafka.log.recovery.epoch_checkpoint_problem`).  One that is unreadable,
        missing under a log with batches, or that disagrees with the batches is rebuilt from
        the leader epochs stamped in them, said in the log and written back."""
        epath = os.path.join(self.partition_dir(topic, partition), EPOCH_CHECKPOINT)
        batches = [(b.base_offset, b.last_offset, b.leader_epoch) for b in plog.batches_from(plog.log_start_offset)]
        entries: list[tuple[int, int]] = []
        why: str | None = None
        if os.path.exists(epath):
            with open(epath, errors="replace") as f:
                text = f.read()
            try:
                entries = checkpoint.parse_epochs(text)
            except KafkaStorageError as exc:
                why = f"is unreadable ({exc})"
        elif batches:
            why = "is missing"
        if why is None:
            problem = epoch_checkpoint_problem(entries, batches, plog.log_start_offset, plog.log_end_offset, max_epoch)
            if problem is not None:
                why = f"disagrees with the log ({problem})"
        if why is None:
            epochs = LeaderEpochCache(entries)
        else:
            epochs = LeaderEpochCache.from_batches((epoch, base) for base, _, epoch in batches)
        epochs.truncate_from_end(plog.log_end_offset)
        epochs.truncate_from_start(plog.log_start_offset)
        if why is not None:
            log.warning("%s-%d: %s %s: rebuilt from the log's batches, by the leader epoch stamped in each: %s", topic, partition,
                        epath, why, epochs.entries)
            write_atomically(epath, checkpoint.format_epochs(epochs.entries))
        return epochs

    def append(self, topic: str, partition: int, batches: Iterable[bytes], log_: PartitionLog) -> None:
        """Append batches to the active segment file; a batch that starts a segment of
        ``log_`` starts a new file."""
        tp = (topic, partition)
        d = self.partition_dir(topic, partition)
        path: str | None = None
        run: list[bytes] = []  # consecutive batches of one segment file, written at once
        for data in batches:
            # the file of the batch's segment (a compacted segment may start before its first batch)
            want = os.path.join(d, self._segment_name(log_.segment_base_of(read_header(data).base_offset)))
            if want != path and run:
                self._write(tp, path, run)
                run = []
            path = want
            run.append(data)
        if run:
            self._write(tp, path, run)

    def _write(self, tp: tuple[str, int], path: str, chunks: list[bytes]) -> None:
        fd = self._segment_fd(tp, path)
        for i in range(0, len(chunks), _IOV_MAX):
            part = chunks[i:i + _IOV_MAX]
            written = os.writev(fd, part)
            total = sum(len(c) for c in part)
            if written < total:  # a short write (a full disk raises OSError): write the rest
                rest = memoryview(b"".join(part))[written:]
                while rest:
                    rest = rest[os.write(fd, rest):]

    def truncate(self, topic: str, partition: int, log_: PartitionLog) -> None:
        """Rewrite the segment files so they hold exactly the batches and segments of ``log_``."""
        self._close_segment((topic, partition))
        for path in self._segments(topic, partition):
            os.remove(path)
        first = log_.segments[0].base_offset
        self.append(topic, partition, [b.data for b in log_.batches_from(first) if b.base_offset >= first], log_)

    def replace_segments(self, topic: str, partition: int, log_: PartitionLog, count: int,
                         old_bases: list[int]) -> None:
        """The log cleaner rewrote the first ``count`` segments of ``log_``, which were the
        files of ``old_bases``: write each new segment to a temporary file and rename it
        over its old file (atomic), then remove the files of segments merged away.  A
        crash at any point leaves valid files: at worst a merged-away file whose batches the
        merged file also holds, which :meth:`load` recognises and removes."""
        self._close_segment((topic, partition))  # the active file may be renamed over
        d = self.partition_dir(topic, partition)
        os.makedirs(d, exist_ok=True)
        kept = set()
        for seg, end in zip(log_.segments[:count], log_.segment_ends()[:count]):
            path = os.path.join(d, self._segment_name(seg.base_offset))
            write_atomically(path, b"".join(b.data for b in log_.batches_from(seg.base_offset)
                                            if seg.base_offset <= b.base_offset < end))
            kept.add(seg.base_offset)
        for base in old_bases:
            if base not in kept:
                path = os.path.join(d, self._segment_name(base))
                if os.path.exists(path):
                    os.remove(path)

    def delete_segments(self, topic: str, partition: int, log_: PartitionLog) -> None:
        """Delete the segment files below the log's first segment (retention, log start).
        A log left without records keeps an empty file for its (empty) active segment, as
        Kafka rolls one at the new log start, so that a restart finds the log start there
        even before log-start-offset-checkpoint is written."""
        first = log_.segments[0].base_offset
        tp = (topic, partition)
        for path in self._segments(topic, partition):
            base = int(os.path.basename(path)[:-len(SEGMENT_SUFFIX)])
            if base < first:
                if self._open.get(tp, (None, 0))[0] == path:
                    self._close_segment(tp)
                os.remove(path)
        if not len(log_):
            self._segment_fd(tp, os.path.join(self.partition_dir(topic, partition), self._segment_name(first)))

    def _snapshots(self, topic: str, partition: int) -> list[str]:
        d = self.partition_dir(topic, partition)
        if not os.path.isdir(d):
            return []
        return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(SNAPSHOT_SUFFIX))

    def write_producer_snapshot(self, topic: str, partition: int, offset: int, text: str) -> None:
        """Write ``<offset>.snapshot`` atomically, then remove the older snapshot files."""
        d = self.partition_dir(topic, partition)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, f"{offset:020d}{SNAPSHOT_SUFFIX}")
        write_atomically(path, text)
        for old in self._snapshots(topic, partition):
            if old != path:
                os.remove(old)

    def read_producer_snapshot(self, topic: str, partition: int) -> str | None:
        """The newest ``<offset>.snapshot`` of the partition, or None."""
        paths = self._snapshots(topic, partition)
        if not paths:
            return None
        with open(paths[-1], errors="replace") as f:
            return f.read()

    def set_aside_producer_snapshot(self, topic: str, partition: int) -> None:
        for path in self._snapshots(topic, partition):
            os.replace(path, path + ".corrupt")

    def mark_compacted(self, topic: str, partition: int) -> None:
        d = self.partition_dir(topic, partition)
        marker = os.path.join(d, COMPACTED_MARKER)
        if not os.path.exists(marker):
            os.makedirs(d, exist_ok=True)
            with open(marker, "wb"):
                pass

    def delete(self, topic: str, partition: int) -> None:
        self._close_segment((topic, partition))
        super().delete(topic, partition)

    def close(self) -> None:
        """Close every open segment file."""
        while self._open:
            _, (_, fd) = self._open.popitem()
            os.close(fd)
