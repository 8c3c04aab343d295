"""The replica state machine of one partition on one broker (Kafka's Partition.scala).

Pure: it holds the log, the epoch cache, the HW and (as leader) what it knows of
each follower; it takes events with the time as an argument and returns
:class:`Effects` for the broker shell to carry out in order.  It never awaits.

Roles and transitions (driven by LeaderAndIsr and StopReplica)::

    NONE ----become_leader----> LEADER <---become_leader--+
      |                           |                        |
      +--become_follower--> FOLLOWER(truncating) -> FOLLOWER(fetching)
                                  ^                        |
                                  +---become_follower------+

A follower that becomes follower (or restarts) first truncates: by leader epoch
(KIP-101/279, the default) after asking the leader with OffsetsForLeaderEpoch, or
to its own HW (``replication.truncation=high_watermark``, before KIP-101).

ISR changes made by the leader are *proposals* (``Effects.isr_update``): the shell
writes them to ZooKeeper conditionally and reports back with
:meth:`PartitionReplica.isr_update_done`; until then no other change is proposed
(Kafka's pending ISR state), and the HW counts the members of both the current and
the proposed ISR (the maximal ISR).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Sequence

from ..errors import (
    FencedLeaderEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaError,
    MessageTooLargeError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownLeaderEpochError,
)
from ..log.epoch_cache import UNDEFINED_EPOCH, LeaderEpochCache
from .fetch_session import QuietMark
from ..log import cleaner, retention
from ..log.partition_log import PartitionLog
from ..protocol.batch_convert import convert as convert_batch, stamp_log_append_time
from ..protocol.records.batch import (
    HEADER_SIZE,
    MAX_DECOMPRESSED_BYTES,
    BatchHeader,
    iter_records,
    read_header,
    split_batches,
    stamp,
)
from ..protocol.records.control import encode_marker, read_marker
from . import rules
from .producer_state import AbortedTxn, ProducerStateManager

UNKNOWN_OFFSET = -1


class Role(Enum):
    NONE = "none"
    LEADER = "leader"
    FOLLOWER = "follower"


class TruncationMode(Enum):
    LEADER_EPOCH = "leader_epoch"
    HIGH_WATERMARK = "high_watermark"


@dataclass
class RemoteReplica:
    """What the leader knows of a follower (Kafka's Replica on the leader side)."""

    broker_id: int
    leo: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    last_fetch_leader_leo: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET  # as the follower's last fetch said
    # while the partition is quiet in the follower's fetch session: the session's mark,
    # whose time is this follower's last fetch (and catch-up) here too
    quiet: QuietMark | None = None

    def caught_up_ms(self) -> int:
        """When the follower was last caught up (a quiet partition: at its session's last fetch)."""
        return self.last_caught_up_ms if self.quiet is None else max(self.last_caught_up_ms, self.quiet.last_fetch_ms)

    def end_quiet(self) -> None:
        """The partition stops being quiet for this follower: its fetch and catch-up times
        become those of the session's last fetch."""
        if self.quiet is not None:
            t = self.quiet.last_fetch_ms
            self.last_caught_up_ms = max(self.last_caught_up_ms, t)
            self.last_fetch_ms = max(self.last_fetch_ms, t)
            self.quiet = None


@dataclass
class Effects:
    """What the shell must do after an event, in this order.

    * ``epoch_cache_changed``: persist leader-epoch-checkpoint before records of the
      new epoch become visible;
    * ``truncated_to``: the log was cut (mirror it to storage);
    * ``appended``: new batches to mirror to storage;
    * ``log_start_changed``: the log start moved (retention, DeleteRecords): delete the
      dropped segments from storage, checkpoint the start offset;
    * ``producer_snapshot_changed``: the producer state as of the log start changed
      (``producers.encode_base()``): rewrite the partition's producer snapshot, before
      deleting segments;
    * ``cleaned``: the log cleaner rewrote the first N segments, which were the segments
      of these base offsets: rewrite their files;
    * ``isr_update``: an ISR to write conditionally to the partition state znode;
    * ``hw_changed``/``leo_changed``: wake waiting produce and fetch requests;
    * ``events``: human-readable lines for logs and the event timeline.
    """

    epoch_cache_changed: bool = False
    truncated_to: int | None = None
    appended: list[bytes] = field(default_factory=list)
    isr_update: tuple[int, ...] | None = None
    hw_changed: bool = False
    leo_changed: bool = False
    log_start_changed: bool = False
    producer_snapshot_changed: bool = False
    cleaned: tuple[int, list[int]] | None = None
    cleaned_records: int = 0
    events: list[tuple[str, str]] = field(default_factory=list)

    def merge(self, other: "Effects") -> "Effects":
        self.epoch_cache_changed |= other.epoch_cache_changed
        if other.truncated_to is not None:
            self.truncated_to = other.truncated_to if self.truncated_to is None else min(self.truncated_to, other.truncated_to)
        self.appended.extend(other.appended)
        if other.isr_update is not None:
            self.isr_update = other.isr_update
        self.hw_changed |= other.hw_changed
        self.leo_changed |= other.leo_changed
        self.log_start_changed |= other.log_start_changed
        self.producer_snapshot_changed |= other.producer_snapshot_changed
        self.cleaned = other.cleaned or self.cleaned
        self.cleaned_records += other.cleaned_records
        self.events.extend(other.events)
        return self


@dataclass(frozen=True)
class LeaderState:
    """A partition state as carried by LeaderAndIsr."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int

    @classmethod
    def from_message(cls, m: dict) -> "LeaderState":
        return cls(m["leader"], m["leader_epoch"], tuple(m["isr"]), tuple(m["replicas"]), m["zk_version"], m["controller_epoch"])


def refused_records(kind: type[KafkaError], errors: list[tuple[int, str]]) -> KafkaError:
    """A batch refused because of some of its records (Kafka's RecordValidationException):
    the error carries them as ``record_errors`` (index in the batch, why; KIP-467) and
    says, as Kafka's does, how many there are and the first three (INVALID_TIMESTAMP: that
    some timestamp is invalid)."""
    if kind is InvalidTimestampError:
        exc = kind("One or more records have been rejected due to invalid timestamp")
    else:
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        exc = kind(f"One or more records have been rejected due to {len(errors)} record errors in total, and "
                   f"only showing the first three errors at most: [{shown}]")
    exc.record_errors = tuple(errors)
    return exc


def check_records(h: BatchHeader, raw: bytes | bytearray | memoryview, where: str, compacted: bool,
                  log_append_time: bool, create_time_range: tuple[int, int] | None) -> None:
    """The per-record checks of Kafka's LogValidator on one producer batch; a batch with
    failing records is refused whole, naming them (:func:`refused_records`): on a compacted
    topic a record without a key is INVALID_RECORD; else, on a CreateTime topic, a record
    timestamp outside ``create_time_range`` (``now - message.timestamp.before.max.ms`` to
    ``now + message.timestamp.after.max.ms``; None: not bounded) is INVALID_TIMESTAMP, and
    so is a batch the producer marked LogAppendTime (unless its records carry a
    CreateTime the topic keeps).  INVALID_TIMESTAMP wins when both kinds occur."""
    stamped_by_producer = h.log_append_time
    if not compacted and not stamped_by_producer and (log_append_time or create_time_range is None):
        return  # nothing to check: no record is read
    errors: list[tuple[int, str]] = []
    bad_time = False
    for i, r in enumerate(iter_records(raw, validate=False)):
        if compacted and r.key is None:
            errors.append((i, f"Compacted topic cannot accept message without key in topic partition {where}"))
        elif not log_append_time and r.timestamp != -1:
            if create_time_range is not None and not create_time_range[0] <= r.timestamp <= create_time_range[1]:
                bad_time = True
                errors.append((i, f"Timestamp {r.timestamp} of message with offset {r.offset} is out of range. The "
                                  f"timestamp should be within [{create_time_range[0]}, {create_time_range[1]}]"))
        elif stamped_by_producer:
            bad_time = True
            errors.append((i, f"Invalid timestamp type in message with offset {r.offset}. Producer should not set "
                              "timestamp type to LogAppendTime."))
    if errors:
        raise refused_records(InvalidTimestampError if bad_time else InvalidRecordError, errors)


@dataclass(frozen=True)
class AppendResult:
    base_offset: int
    last_offset: int
    log_append_time: int = -1  # the leader's stamp under LogAppendTime, else -1


class PartitionReplica:
    """One replica of a partition, leader or follower, with all of Kafka's HW/ISR rules."""

    def __init__(self, topic: str, partition: int, broker_id: int, log: PartitionLog | None = None,
                 epochs: LeaderEpochCache | None = None, high_watermark: int = 0,
                 truncation: TruncationMode = TruncationMode.LEADER_EPOCH) -> None:
        self.topic = topic
        self.partition = partition
        self.broker_id = broker_id
        # ``is None``, not ``or``: an empty PartitionLog is falsy (it has __len__), and the
        # replica must keep the very log object it is given (its start offset included).
        self.log = log if log is not None else PartitionLog()
        self.epochs = epochs if epochs is not None else LeaderEpochCache()
        # a checkpointed HW is clamped into [log start, LEO], as Kafka's Log does
        self.high_watermark = max(self.log.log_start_offset, min(high_watermark, self.log.log_end_offset))
        self.truncation = truncation
        # cleanup.policy includes compact: produced records must have keys
        self.compacted = False
        self.role = Role.NONE
        self.leader_id = rules.NO_LEADER
        self.leader_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.replicas: tuple[int, ...] = ()
        self.zk_version = -1
        self.controller_epoch = -1
        self.remotes: dict[int, RemoteReplica] = {}
        self.pending_isr: tuple[int, ...] | None = None
        self.needs_truncation = False
        # Counts leaderships: a waiting acks=all produce fails if the term changed, even
        # if this replica leads again (its log may have been truncated in between).
        self.leader_term = 0
        # Idempotent producers' last batches: their state as of the log start (kept when
        # the log start moves, see producer_state) and what the log adds to it.
        self.producers = ProducerStateManager()
        self.producers.base_offset = self.log.log_start_offset
        self._rebuild_producers()

    def _rebuild_producers(self) -> None:
        start = max(self.producers.base_offset, self.log.log_start_offset)
        self.producers.rebuild(_with_marker(read_header(b.data), b.data) for b in self.log.batches_from(start))
        self.producers.forget_aborted_below(self.log.log_start_offset)

    def load_producer_snapshot(self, text: str) -> bool:
        """Take the producer state as of the log start from a stored snapshot
        (:meth:`ProducerStateManager.encode_base`), and replay the log on it: how a broker
        restarted with disk storage keeps the producers whose batches retention or
        DeleteRecords removed.  False (nothing changed) when the snapshot does not fit the
        log; KAFKA_STORAGE_ERROR when it cannot be read."""
        if not self.producers.load_base(text, self.log.log_start_offset, self.log_end_offset):
            return False
        self._rebuild_producers()
        return True

    def expire_producers(self, now_ms: int, expiration_ms: int) -> Effects:
        """Forget the producers whose last batch or marker is ``producer.id.expiration.ms``
        old and that have no open transaction here (Kafka's removeExpiredProducers)."""
        eff = Effects()
        in_base = set(self.producers.base)
        gone = self.producers.remove_expired(now_ms, expiration_ms)
        if gone:
            eff.producer_snapshot_changed = bool(in_base.intersection(gone))
            eff.events.append(("producers_expired", f"broker {self.broker_id} expired producer(s) "
                                                    f"{', '.join(map(str, gone))} of {self.topic}-{self.partition} "
                                                    f"(no batch for producer.id.expiration.ms {expiration_ms})"))
        return eff

    # -- common -----------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first offset of the oldest open transaction, or the HW when none
        is open or all open ones start at or above it.  read_committed consumers read
        below it."""
        first = self.producers.first_unstable_offset
        if first is None:
            return self.high_watermark
        # a transaction that began below the log start is unstable from the log start on
        # (Kafka's maybeIncrementFirstUnstableOffset)
        return min(max(first, self.log.log_start_offset), self.high_watermark)

    @property
    def is_hosted(self) -> bool:
        """Leader or follower: not stopped (StopReplica) or never told its role."""
        return self.role is not Role.NONE

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320 fencing: an older epoch is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(
                f"{self.topic}-{self.partition}: request epoch {current_leader_epoch} is older than the leader epoch {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpochError(
                f"{self.topic}-{self.partition}: request epoch {current_leader_epoch} is newer than the leader epoch {self.leader_epoch} known here")

    def _require_leader(self) -> None:
        if self.role is not Role.LEADER:
            raise NotLeaderOrFollowerError(
                f"broker {self.broker_id} is not the leader of {self.topic}-{self.partition} (leader is {self.leader_id})")

    def _set_hw(self, hw: int, eff: Effects) -> None:
        if hw != self.high_watermark:
            self.high_watermark = hw
            eff.hw_changed = True

    # -- transitions --------------------------------------------------------------
    def is_stale(self, st: LeaderState) -> bool:
        """A LeaderAndIsr state older than what this replica already has is ignored."""
        return st.leader_epoch < self.leader_epoch

    def become_leader(self, st: LeaderState, now_ms: int) -> Effects:
        """Take leadership at ``st.leader_epoch``: record (epoch, LEO) in the epoch cache
        before any write, reset what is known of followers, try to advance the HW."""
        eff = Effects()
        was = self.role
        # A new term is a role change; an epoch bump while leading (the controller changed
        # the ISR) keeps what is known of the followers, as Kafka's makeLeader does.
        new_term = was is not Role.LEADER
        self._apply_state(st)
        self.role = Role.LEADER
        self.needs_truncation = False
        if self.epochs.assign(st.leader_epoch, self.log_end_offset):
            eff.epoch_cache_changed = True
        if new_term:
            self.leader_term += 1
            old = self.remotes
            self.remotes = {}
            for r in st.replicas:
                if r == self.broker_id:
                    continue
                prev = old.get(r)
                # Kafka resets followers' LEO to unknown on a new leadership; an ISR
                # member counts as caught up now so it is not shrunk at once.
                self.remotes[r] = RemoteReplica(r, UNKNOWN_OFFSET, now_ms if r in st.isr else (prev.caught_up_ms() if prev else 0))
            eff.events.append(("leader", f"broker {self.broker_id} became leader of {self.topic}-{self.partition} "
                                         f"at epoch {st.leader_epoch} with LEO {self.log_end_offset}, ISR {list(st.isr)}"))
        else:
            for r in st.replicas:
                if r != self.broker_id and r not in self.remotes:
                    self.remotes[r] = RemoteReplica(r)
            for r in list(self.remotes):
                if r not in st.replicas:
                    del self.remotes[r]
        self._maybe_increment_hw(eff)
        return eff

    def become_follower(self, st: LeaderState, now_ms: int) -> Effects:
        """Follow ``st.leader``.  With HW truncation the log is cut to the HW now; with
        leader-epoch truncation the fetcher must first ask the leader
        (:meth:`truncation_epoch`, then :meth:`on_leader_epoch_end_offset`)."""
        eff = Effects()
        changed = st.leader != self.leader_id or st.leader_epoch != self.leader_epoch or self.role is not Role.FOLLOWER
        self._apply_state(st)
        self.role = Role.FOLLOWER
        self.remotes = {}
        self.pending_isr = None
        if changed:
            eff.events.append(("follower", f"broker {self.broker_id} follows broker {st.leader} for "
                                           f"{self.topic}-{self.partition} at epoch {st.leader_epoch}"))
            if self.truncation is TruncationMode.HIGH_WATERMARK:
                eff.merge(self.truncate_to(self.high_watermark, reason="to its high watermark (high_watermark truncation)"))
                self.needs_truncation = False
            else:
                self.needs_truncation = self.log_end_offset > self.log.log_start_offset
        return eff

    def refresh_state(self, st: LeaderState) -> Effects:
        """A LeaderAndIsr at the leader epoch this replica already has (a new controller
        re-sending state): take its ISR, replicas and znode version when its znode version
        is newer; role, leader and log stay as they are."""
        if st.zk_version > self.zk_version:
            self.isr, self.zk_version = st.isr, st.zk_version
            self.replicas = st.replicas
        return Effects()

    def become_none(self) -> Effects:
        """StopReplica: no longer leader or follower (the log stays unless deleted)."""
        self.role = Role.NONE
        self.remotes = {}
        self.pending_isr = None
        return Effects()

    def _apply_state(self, st: LeaderState) -> None:
        self.leader_id = st.leader
        self.leader_epoch = st.leader_epoch
        self.isr = tuple(st.isr)
        self.replicas = tuple(st.replicas)
        self.zk_version = st.zk_version
        self.controller_epoch = st.controller_epoch
        self.pending_isr = None

    # -- leader side ----------------------------------------------------------------
    def append_as_leader(self, records: bytes, required_acks: int, min_insync_replicas: int,
                         max_batch_bytes: int | None = None, compression_type: str = "producer",
                         log_append_time_ms: int | None = None,
                         max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES,
                         create_time_range: tuple[int, int] | None = None) -> tuple[AppendResult, Effects]:
        """Validate, stamp (offset, leader epoch) and append producer batches.

        acks=all with ISR smaller than min.insync.replicas is refused with
        NOT_ENOUGH_REPLICAS before anything is written.  As Kafka's LogValidator, a batch
        is recompressed to the topic's ``compression_type`` (``producer``: as sent) and,
        with ``log_append_time_ms`` (the topic's message.timestamp.type is
        LogAppendTime; the caller's clock), stamped with that time.  A batch with records
        Kafka refuses one by one (:func:`check_records`: a record without a key on a
        compacted topic, a CreateTime outside ``create_time_range``) is refused whole,
        naming them.
        """
        self._require_leader()
        if required_acks == -1 and len(self.isr) < min_insync_replicas:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.partition}: ISR {list(self.isr)} has {len(self.isr)} replicas, "
                f"min.insync.replicas is {min_insync_replicas}")
        if max_batch_bytes is not None:  # from the headers alone: nothing copied or decompressed first
            _check_batch_sizes(records, max_batch_bytes)
        # The leader decodes every record (decompressing) before accepting a batch;
        # followers only check the CRC of what the leader already validated.
        batches = split_batches(records, validate=True, deep=True, max_decompressed=max_decompressed_bytes)
        if not batches:
            raise InvalidRecordError("produce request carries no record batch")
        if any(h.is_control for h, _ in batches):
            raise InvalidRecordError(f"{self.topic}-{self.partition}: a producer cannot write control batches "
                                     "(transaction markers come from the transaction coordinator)")
        for h, raw in batches:
            check_records(h, raw, f"{self.topic}-{self.partition}", self.compacted, log_append_time_ms is not None,
                          create_time_range)
        eff = Effects()
        # Idempotent producers: a retried batch (same producer, epoch and sequences as
        # one of its last 5) is answered with its original offsets and not written
        # again; a gap or a fenced epoch is refused before anything of the request is
        # written (a producer this partition has no state for starts at any sequence).
        where = f"{self.topic}-{self.partition}"
        if len(batches) == 1:
            duplicate = self.producers.check(batches[0][0], where)
            if duplicate is not None:
                eff.events.append(("duplicate", f"{where}: producer {batches[0][0].producer_id} retried the batch "
                                                f"at offsets {duplicate.first_offset}-{duplicate.last_offset}"))
                return AppendResult(duplicate.first_offset, duplicate.last_offset), eff
        elif any(h.producer_id >= 0 for h, _ in batches):
            raise InvalidRecordError(f"{where}: an idempotent producer sends exactly one batch per partition "
                                     f"and request, not {len(batches)}")
        base = self.log_end_offset
        for h, raw in batches:
            if compression_type != "producer" or log_append_time_ms is not None:
                h, raw = convert_batch(raw, compression_type, log_append_time_ms)
            offset = self.log_end_offset
            data = stamp(raw, offset, self.leader_epoch)
            header = replace(h, base_offset=offset, leader_epoch=self.leader_epoch)
            self.log.append(header, data)
            self.producers.update(header)
            eff.appended.append(data)
        eff.leo_changed = True
        self._maybe_increment_hw(eff)
        return AppendResult(base, self.log_end_offset - 1,
                            -1 if log_append_time_ms is None else log_append_time_ms), eff

    def append_marker(self, producer_id: int, producer_epoch: int, committed: bool, coordinator_epoch: int,
                      now_ms: int, log_append_time: bool = False) -> tuple[AppendResult, Effects]:
        """WriteTxnMarkers on the leader: append the COMMIT or ABORT control batch that ends
        ``producer_id``'s transaction here (stamped with ``now_ms``).  The LSO passes the
        transaction; an abort enters the aborted-transaction index.  A marker of an older
        producer epoch or from an older coordinator than this partition saw is refused.
        With ``log_append_time`` (the topic's message.timestamp.type is LogAppendTime) the
        control batch carries the LogAppendTime attribute and ``now_ms`` as its max
        timestamp, as Kafka's leader stamps every batch it appends to such a topic."""
        self._require_leader()
        where = f"{self.topic}-{self.partition}"
        self.producers.check_marker(producer_id, producer_epoch, coordinator_epoch, where)
        raw = encode_marker(producer_id, producer_epoch, committed, coordinator_epoch, now_ms)
        if log_append_time:
            raw = stamp_log_append_time(raw, now_ms)
        offset = self.log_end_offset
        data = stamp(raw, offset, self.leader_epoch)
        header = replace(read_header(data), base_offset=offset, leader_epoch=self.leader_epoch)
        eff = Effects()
        first = self.producers.ongoing.get(producer_id)
        self.log.append(header, data)
        self.producers.update(header, read_marker(header, data))
        eff.appended.append(data)
        eff.leo_changed = True
        kind = "txn_commit_marker" if committed else "txn_abort_marker"
        eff.events.append((kind, f"{where}: {'COMMIT' if committed else 'ABORT'} marker of producer {producer_id} "
                                 f"epoch {producer_epoch} at offset {offset}"
                                 + (f" (its transaction began at offset {first})" if first is not None else
                                    " (no records of it here)")))
        self._maybe_increment_hw(eff)
        return AppendResult(offset, offset), eff

    def read(self, fetch_offset: int, max_bytes: int, for_follower: bool) -> bytes:
        """Batches from ``fetch_offset``: followers may read up to the LEO, consumers only
        below the HW.  OFFSET_OUT_OF_RANGE outside [log start, LEO]."""
        return self.log.read(fetch_offset, max_bytes, None if for_follower else self.high_watermark)

    def read_committed(self, fetch_offset: int, max_bytes: int) -> tuple[bytes, list[AbortedTxn]]:
        """A read_committed consumer's read: batches below the LSO, and the aborted
        transactions that have records among them (the consumer drops those records)."""
        lso = self.last_stable_offset
        data = self.log.read(fetch_offset, max_bytes, lso)
        if not data:
            return data, []
        end = max(h.next_offset for h, _ in split_batches(data, validate=False))
        return data, self.producers.aborted_between(fetch_offset, end)

    def note_caught_up_fetch(self, replica_id: int, fetch_offset: int, now_ms: int,
                             log_start_offset: int = UNKNOWN_OFFSET, quiet: QuietMark | None = None) -> bool:
        """The quick form of :meth:`update_follower_fetch` for the common case of a fetch
        session's idle partition: an in-sync follower fetching again at the leader's LEO,
        which it had already reported, with the HW there too and the same log start.
        Only its fetch times change (no ISR or HW rule can fire), and True says so; False
        (nothing changed) means the full :meth:`update_follower_fetch` must run.  With
        ``quiet`` (its session's mark) the partition is quiet from now on for that follower
        (:class:`~.fetch_session.QuietMark`), until :meth:`end_quiet`."""
        if self.role is not Role.LEADER:
            return False
        remote = self.remotes.get(replica_id)
        leo = self.log.log_end_offset
        if (remote is None or fetch_offset != leo or remote.leo != leo or self.high_watermark != leo
                or remote.log_start_offset != log_start_offset or replica_id not in self.isr):
            return False
        remote.last_caught_up_ms = now_ms
        remote.last_fetch_leader_leo = leo
        remote.last_fetch_ms = now_ms
        remote.quiet = quiet
        return True

    def end_quiet(self) -> None:
        """Something of the partition changed: no follower's catch-up time follows its
        session's fetches any more (:meth:`RemoteReplica.end_quiet`)."""
        for remote in self.remotes.values():
            if remote.quiet is not None:
                remote.end_quiet()

    def update_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int,
                              lag_max_messages: int = 0, log_start_offset: int = UNKNOWN_OFFSET) -> Effects:
        """The leader handles a follower fetch at ``fetch_offset`` (= the follower's LEO):
        record the remote LEO and caught-up time, maybe expand the ISR, maybe advance the HW.
        Called after the log read and before answering."""
        self._require_leader()
        remote = self.remotes.get(replica_id)
        if remote is None:
            raise NotLeaderOrFollowerError(f"broker {replica_id} is not a replica of {self.topic}-{self.partition}")
        if fetch_offset > self.log_end_offset:
            raise OffsetOutOfRangeError(f"follower {replica_id} fetch offset {fetch_offset} is past the leader LEO {self.log_end_offset}")
        eff = Effects()
        remote.end_quiet()
        leo = self.log_end_offset
        if fetch_offset >= leo:
            remote.last_caught_up_ms = now_ms
        elif fetch_offset >= remote.last_fetch_leader_leo >= 0:
            # Kafka's rule: caught up to where the leader was at the previous fetch.
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, remote.last_fetch_ms)
        remote.leo = fetch_offset
        remote.log_start_offset = log_start_offset
        remote.last_fetch_leader_leo = leo
        remote.last_fetch_ms = now_ms
        self._maybe_shrink_below_hw(remote, eff)
        self._maybe_expand_isr(remote, eff)
        self._maybe_increment_hw(eff)
        return eff

    def _maybe_shrink_below_hw(self, remote: RemoteReplica, eff: Effects) -> None:
        """An ISR follower that fetches below the HW lacks committed records (its log was
        cut: a restart with damaged or lost files): out of the ISR at once, not after the
        lag time, so that no election can pick it meanwhile.  With leader-epoch truncation
        an in-sync follower never truncates below the HW; the pre-KIP-101 mode truncates to
        its own, older HW by design and keeps the historic behaviour."""
        if (self.truncation is not TruncationMode.LEADER_EPOCH or self.pending_isr is not None
                or remote.broker_id not in self.isr or remote.leo >= self.high_watermark):
            return
        new_isr = tuple(b for b in self.isr if b != remote.broker_id)
        self.pending_isr = new_isr
        eff.isr_update = new_isr
        eff.events.append(("isr_shrink", f"{self.topic}-{self.partition}: shrinking ISR {list(self.isr)} -> {list(new_isr)} "
                                         f"(broker {remote.broker_id} fetches at {remote.leo}, below the HW "
                                         f"{self.high_watermark}: it lacks committed records)"))

    def _current_epoch_start(self) -> int:
        start = self.epochs.start_offset_of(self.leader_epoch)
        return start if start >= 0 else 0

    def _maybe_expand_isr(self, remote: RemoteReplica, eff: Effects) -> None:
        if self.pending_isr is not None or remote.broker_id in self.isr:
            return
        if rules.can_join_isr(remote.leo, self.high_watermark, self._current_epoch_start()):
            new_isr = self.isr + (remote.broker_id,)  # appended, as Kafka's leader does
            self.pending_isr = new_isr
            eff.isr_update = new_isr
            eff.events.append(("isr_expand", f"{self.topic}-{self.partition}: expanding ISR {list(self.isr)} -> {list(new_isr)} "
                                             f"(broker {remote.broker_id} reached HW {self.high_watermark})"))

    def out_of_sync_replicas(self, now_ms: int, lag_time_max_ms: int, lag_max_messages: int = 0,
                             idle_followers_lag: bool = False) -> list[int]:
        """ISR followers that have not caught up within the lag time and whose LEO (as their
        last fetch reported it) is not the leader's LEO: a follower of an idle partition stays
        however long it has not fetched, as in Kafka.  With ``idle_followers_lag`` (the
        ``minikafka.replica.lag.idle.followers`` switch) the lag time alone decides, so a
        stopped follower leaves every ISR it is in.  With the legacy rule on, a follower more
        than ``lag_max_messages`` behind is out too."""
        out = []
        leader_leo = None if idle_followers_lag else self.log_end_offset
        for r in self.isr:
            if r == self.broker_id:
                continue
            remote = self.remotes.get(r)
            if remote is None:
                continue
            lagging = not rules.is_caught_up(remote.caught_up_ms(), now_ms, lag_time_max_ms, remote.leo, leader_leo)
            if lag_max_messages > 0 and remote.leo >= 0 and self.log_end_offset - remote.leo > lag_max_messages:
                lagging = True
            if lagging:
                out.append(r)
        return out

    def maybe_shrink_isr(self, now_ms: int, lag_time_max_ms: int, lag_max_messages: int = 0,
                         idle_followers_lag: bool = False) -> Effects:
        """Periodic check (every replica.lag.time.max.ms / 2): propose removing lagging
        followers (:meth:`out_of_sync_replicas`)."""
        eff = Effects()
        if self.role is not Role.LEADER or self.pending_isr is not None:
            return eff
        lagging = self.out_of_sync_replicas(now_ms, lag_time_max_ms, lag_max_messages, idle_followers_lag)
        if lagging:
            new_isr = tuple(b for b in self.isr if b not in lagging)
            self.pending_isr = new_isr
            eff.isr_update = new_isr
            eff.events.append(("isr_shrink", f"{self.topic}-{self.partition}: shrinking ISR {list(self.isr)} -> {list(new_isr)} "
                                             f"(lagging: {lagging})"))
        return eff

    def isr_update_done(self, isr: tuple[int, ...] | None, zk_version: int | None) -> Effects:
        """The shell's answer to an ``isr_update``: the written ISR and new znode version,
        or None when the conditional write failed (the controller will send fresh state)."""
        eff = Effects()
        self.pending_isr = None
        if isr is not None and zk_version is not None:
            self.isr = tuple(isr)
            self.zk_version = zk_version
            if self.role is Role.LEADER:
                self._maybe_increment_hw(eff)
        return eff

    def _maybe_increment_hw(self, eff: Effects) -> None:
        if self.role is not Role.LEADER:
            return
        # the maximal ISR (KIP-497): a proposed expansion counts at once, because ZooKeeper
        # may hold it (and a controller elect from it) before its answer comes back; a
        # proposed shrink counts only once written
        members = self.isr if self.pending_isr is None else set(self.isr) | set(self.pending_isr)
        leos = [self.remotes[r].leo for r in members if r != self.broker_id and r in self.remotes]
        new_hw = rules.compute_hw(self.high_watermark, self.log_end_offset, leos)
        if new_hw > self.high_watermark:
            self._set_hw(new_hw, eff)

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch on the leader: ``(epoch, end offset)``."""
        return self.epochs.end_offset_for(requested_epoch, self.log_end_offset)

    # -- follower side --------------------------------------------------------------
    def truncation_epoch(self) -> int:
        """The epoch a truncating follower asks the leader about: its latest cached epoch."""
        return self.epochs.latest_epoch

    def on_leader_epoch_end_offset(self, leader_epoch: int, leader_end_offset: int) -> tuple[bool, Effects]:
        """Apply the leader's OffsetsForLeaderEpoch answer (KIP-101 with KIP-279).

        Returns ``(done, effects)``; when not done the follower asks again with its
        (now lower) latest epoch.  A follower never truncates without this answer.
        """
        eff = Effects()
        if leader_epoch == UNDEFINED_EPOCH or leader_end_offset < 0:
            # The leader has no epoch to offer (we asked with no epoch, or it has none):
            # fall back to the HW, as Kafka does.
            eff.merge(self.truncate_to(self.high_watermark, reason="the leader has no epoch this old; truncating to HW"))
            self.needs_truncation = False
            return True, eff
        own_epoch, own_end = self.epochs.end_offset_for(leader_epoch, self.log_end_offset)
        if own_epoch == leader_epoch:
            target = rules.truncation_offset(leader_epoch, leader_end_offset, own_end, self.log_end_offset)
            eff.merge(self._truncate_with_epochs(target, f"leader's end offset for epoch {leader_epoch} is {leader_end_offset}"))
            self.needs_truncation = False
            return True, eff
        if own_epoch == UNDEFINED_EPOCH:
            # No local epoch to compare with (an empty cache): trust the leader's end
            # offset, as Kafka does for a follower that did not track epochs.
            target = min(leader_end_offset, self.log_end_offset)
            eff.merge(self._truncate_with_epochs(target, f"no local epoch at or below the leader's epoch {leader_epoch}"))
            self.needs_truncation = False
            return True, eff
        # We do not have the leader's epoch: cut to where our largest older epoch ends and
        # ask again with it (KIP-279 steps back epoch by epoch).
        eff.merge(self._truncate_with_epochs(min(own_end, self.log_end_offset), f"epoch {leader_epoch} unknown locally"))
        return False, eff

    def _truncate_with_epochs(self, offset: int, reason: str) -> Effects:
        """Truncate the log at ``offset`` and drop every epoch entry starting at or after it,
        even when no record goes: an epoch entry at the LEO holds no record (a leadership
        that never wrote), and leaving it would make the next OffsetsForLeaderEpoch round
        ask about the same epoch forever, or mislabel the records fetched next."""
        eff = self.truncate_to(offset, reason=reason)
        if self.epochs.truncate_from_end(min(offset, self.log_end_offset)):
            eff.epoch_cache_changed = True
        return eff

    def truncate_to(self, offset: int, reason: str = "") -> Effects:
        """Cut the log at ``offset`` (records >= offset go), with the epoch cache and HW."""
        eff = Effects()
        if offset >= self.log_end_offset:
            return eff
        before = self.log_end_offset
        leo = self.log.truncate_to(offset)
        if self.producers.forget_base_from(leo):
            eff.producer_snapshot_changed = True
        self._rebuild_producers()
        if self.epochs.truncate_from_end(leo):
            eff.epoch_cache_changed = True
        eff.truncated_to = leo
        eff.leo_changed = True
        if self.high_watermark > leo:
            self._set_hw(leo, eff)
        eff.events.append(("truncate", f"broker {self.broker_id} truncated {self.topic}-{self.partition} from LEO {before} "
                                       f"to {leo}" + (f" ({reason})" if reason else "")))
        return eff

    def append_as_follower(self, records: bytes, leader_hw: int, leader_log_start: int = 0) -> Effects:
        """Append fetched batches (already stamped by the leader), record new epochs in the
        epoch cache, then set HW = min(own LEO, leader HW)."""
        eff = Effects()
        if self.role is not Role.FOLLOWER:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} does not follow {self.topic}-{self.partition}")
        for h, raw in split_batches(records, validate=True):
            if h.last_offset < self.log_end_offset:
                continue  # already have it
            if h.base_offset < self.log_end_offset:
                # Our LEO falls inside one of the leader's batches: our tail is not the
                # leader's (possible after high_watermark truncation).  The leader's batch
                # wins, as in Kafka's handling of UnexpectedAppendOffsetException.
                eff.merge(self.truncate_to(h.base_offset, reason="our log end falls inside a leader batch"))
            if h.leader_epoch > self.epochs.latest_epoch:
                if self.epochs.assign(h.leader_epoch, h.base_offset):
                    eff.epoch_cache_changed = True
            self.log.append(h, raw, allow_gap=True)  # a compacted leader log has gaps
            self.producers.update(h, _with_marker(h, raw)[1])
            eff.appended.append(raw)
            eff.leo_changed = True
        self._set_hw(rules.follower_hw(self.log_end_offset, leader_hw), eff)
        if leader_log_start > self.log.log_start_offset:
            # Kafka's follower follows the leader's log start (retention, DeleteRecords),
            # never past its own HW
            eff.merge(self.advance_log_start(min(leader_log_start, self.high_watermark), "the leader's log start"))
        return eff

    # -- log start (retention, DeleteRecords) ---------------------------------------
    def advance_log_start(self, offset: int, reason: str) -> Effects:
        """Move the log start offset up to ``offset``: drop the segments wholly below it and
        trim the epoch cache.  The producers stay (Kafka 2.5+): the batches now below the
        start are folded into their state as of the log start, which the shell stores as
        the producer snapshot."""
        eff = Effects()
        before = self.log.log_start_offset
        new_start = min(offset, self.log_end_offset)
        if new_start <= before:
            return eff
        below = []
        for b in self.log.batches_from(self.producers.base_offset):
            if b.last_offset >= new_start:
                break
            below.append(_with_marker(read_header(b.data), b.data))
        dropped = self.log.advance_log_start(offset)
        eff.log_start_changed = True
        if self.producers.base_offset < self.log.log_start_offset:
            self.producers.advance_start(self.log.log_start_offset, below)
            eff.producer_snapshot_changed = True
        if self.epochs.truncate_from_start(self.log.log_start_offset):
            eff.epoch_cache_changed = True
        self.producers.forget_aborted_below(self.log.log_start_offset)
        if self.high_watermark < self.log.log_start_offset:
            self._set_hw(self.log.log_start_offset, eff)
        eff.events.append(("log_start", f"broker {self.broker_id} moved the log start of {self.topic}-{self.partition} "
                                        f"from {before} to {self.log.log_start_offset} ({reason}; "
                                        f"{len(dropped)} segment(s), {sum(s.size_bytes for s in dropped)} bytes deleted)"))
        return eff

    def apply_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> Effects:
        """Delete the old segments that retention.ms / retention.bytes let go (below the HW)."""
        verdict = retention.deletable(self.log, self.high_watermark, now_ms, retention_ms, retention_bytes)
        if verdict is None:
            return Effects()
        return self.advance_log_start(verdict.log_start_offset, verdict.reason)

    def clean_input(self, now_ms: int, min_cleanable_ratio: float, min_compaction_lag_ms: int = 0,
                    max_compaction_lag_ms: int | None = None) -> cleaner.CleanInput | None:
        """The log cleaner's next pass over this compacted log, when one is due: a snapshot
        that :func:`minikafka.log.cleaner.compute` may work on away from the log."""
        # never past the LSO: an open transaction may still abort
        return cleaner.select(self.log, self.last_stable_offset, now_ms, clean_upto=self.log.cleaned_upto,
                              min_cleanable_ratio=min_cleanable_ratio, min_compaction_lag_ms=min_compaction_lag_ms,
                              max_compaction_lag_ms=max_compaction_lag_ms,
                              aborted=tuple((a.producer_id, a.first_offset, a.last_offset)
                                            for a in self.producers.aborted),
                              last_batches=frozenset((pid, e.last_offset) for pid, e in self.producers.producers.items()
                                                     if e.batches))

    def apply_clean(self, inp: cleaner.CleanInput, plan: cleaner.CleanPlan) -> Effects:
        """Put the cleaned segments in place of the ones ``inp`` snapshotted, unless the
        log's head changed meanwhile (retention, a truncation, another pass): then nothing
        happens and the next pass starts over.  Offsets and the LEO never move."""
        eff = Effects()
        if not inp.still_matches(self.log):
            return eff
        old_bases = list(inp.bases)
        self.log.replace_head(plan.replaced, [(g.base_offset, list(g.batches)) for g in plan.segments])
        # producer state is left as it is: what producers sent did not change (Kafka keeps
        # the state of a producer whose batches the cleaner removed, too)
        self.log.cleaned_upto = plan.clean_upto
        eff.cleaned = (len(plan.segments), old_bases)
        eff.cleaned_records = plan.records_removed
        eff.events.append(("cleaned", f"broker {self.broker_id} compacted {self.topic}-{self.partition} below offset "
                                      f"{plan.clean_upto}: {plan.records_removed} record(s) removed "
                                      f"({plan.tombstones_removed} tombstone(s)), {plan.bytes_before} -> "
                                      f"{plan.bytes_after} bytes, {len(old_bases)} -> {len(plan.segments)} segment(s)"))
        return eff

    def clean(self, now_ms: int, delete_retention_ms: int, min_cleanable_ratio: float,
              min_compaction_lag_ms: int = 0) -> Effects:
        """Compact the log (cleanup.policy=compact) when the cleaner's rules say it is due:
        keep the last record per key below the HW (see :mod:`minikafka.log.cleaner`).
        :meth:`clean_input` and :meth:`apply_clean` in one step."""
        inp = self.clean_input(now_ms, min_cleanable_ratio, min_compaction_lag_ms)
        if inp is None:
            return Effects()
        return self.apply_clean(inp, cleaner.compute(inp, now_ms, delete_retention_ms))

    def delete_records(self, offset: int) -> Effects:
        """DeleteRecords on the leader: the log start becomes ``offset`` (-1: the HW).
        OFFSET_OUT_OF_RANGE when ``offset`` is above the HW or negative."""
        self._require_leader()
        if offset == -1:
            offset = self.high_watermark
        if offset < 0 or offset > self.high_watermark:
            raise OffsetOutOfRangeError(f"{self.topic}-{self.partition}: cannot delete records below offset {offset}: "
                                        f"it is outside [0, high watermark {self.high_watermark}]")
        return self.advance_log_start(offset, "DeleteRecords")

    @property
    def low_watermark(self) -> int:
        """The smallest log start offset of the leader and its in-sync followers (as their
        fetches said): DeleteRecords is done everywhere once this reaches its offset."""
        starts = [self.log.log_start_offset]
        starts += [r.log_start_offset for b, r in self.remotes.items() if b in self.isr]
        return min(starts)

    def handle_out_of_range(self, leader_leo: int, leader_log_start: int) -> Effects:
        """Our fetch offset is outside the leader's log: behind its start, restart the log
        there; past its end (possible with HW truncation), cut to the leader's LEO."""
        if self.log_end_offset > leader_leo:
            return self.truncate_to(leader_leo, reason=f"fetch offset past the leader's LEO {leader_leo}")
        eff = Effects()
        if self.log_end_offset < leader_log_start:
            self.log.truncate_fully_and_start_at(leader_log_start)
            self.producers.reset(leader_log_start)  # as Kafka's truncateFullyAndStartAt
            eff.producer_snapshot_changed = True
            self.epochs.clear()
            self._set_hw(leader_log_start, eff)
            eff.truncated_to = leader_log_start
            eff.epoch_cache_changed = True
            eff.leo_changed = True
        return eff

    # -- introspection --------------------------------------------------------------
    def describe(self, checksum_upto: int | None = None) -> dict:
        """A snapshot for the replica_state API and the dashboard."""
        upto = self.high_watermark if checksum_upto is None or checksum_upto < 0 else checksum_upto
        return {
            "topic": self.topic, "partition": self.partition, "role": self.role.value,
            "leader": self.leader_id, "leader_epoch": self.leader_epoch,
            "log_start_offset": self.log.log_start_offset, "log_end_offset": self.log_end_offset,
            "size_bytes": self.log.size_bytes, "segments": len(self.log.segments),
            "high_watermark": self.high_watermark, "last_stable_offset": self.last_stable_offset,
            "isr": list(self.isr), "replicas": list(self.replicas),
            "remote_leos": {r.broker_id: r.leo for r in self.remotes.values()},
            "epochs": [list(e) for e in self.epochs.entries],
            "producers": self.producers.describe(),
            "ongoing_transactions": [{"producer_id": pid, "first_offset": first}
                                     for pid, first in sorted(self.producers.ongoing.items(), key=lambda x: x[1])],
            "aborted_transactions": len(self.producers.aborted),
            "checksum": self.log.checksum(upto) if checksum_upto is not None else None,
            "checksum_upto": upto if checksum_upto is not None else None,
        }


def _check_batch_sizes(records: bytes, max_batch_bytes: int) -> None:
    """MESSAGE_TOO_LARGE for the first batch of ``records`` larger than ``max_batch_bytes``
    (max.message.bytes), read from the batch headers only, as Kafka checks the size before
    the CRC (a batch longer than the bytes left is left to the full check: CORRUPT_MESSAGE)."""
    pos, n = 0, len(records)
    while n - pos >= HEADER_SIZE:
        size = read_header(records, pos).size
        if size <= 0 or pos + size > n:
            return
        if size > max_batch_bytes:
            raise MessageTooLargeError(f"batch of {size} bytes exceeds max.message.bytes {max_batch_bytes}")
        pos += size


def _with_marker(h: BatchHeader, raw: bytes) -> tuple[BatchHeader, tuple[int, int] | None]:
    """A batch header with its transaction marker (None unless a control batch holds one)."""
    return h, (read_marker(h, raw) if h.is_control else None)


def leos_of(replicas: Sequence[PartitionReplica]) -> list[int]:
    """The LEOs of several replicas (test helper)."""
    return [r.log_end_offset for r in replicas]
