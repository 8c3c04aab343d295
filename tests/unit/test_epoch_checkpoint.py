"""The leader-epoch checkpoint checked against the log at start-up (minikafka/log/recovery.py,
broker/storage.py): epochs and start offsets strictly grow, every batch lies in the entry of
the epoch stamped in it, and a checkpoint that disagrees is rebuilt from the batches."""
from __future__ import annotations

import pytest

from minikafka.errors import CorruptMessageError, KafkaStorageError
from minikafka.log import checkpoint
from minikafka.log.partition_log import PartitionLog
from minikafka.log.recovery import check_recovered_batch, epoch_checkpoint_problem
from minikafka.protocol.records.batch import encode_batch, read_header, stamp

# (base offset, last offset, leader epoch): epoch 0 on 0-99, epoch 1 on 100-199, ten records a batch
LOG = [(b, b + 9, 0) for b in range(0, 100, 10)] + [(b, b + 9, 1) for b in range(100, 200, 10)]


@pytest.mark.parametrize("entries", [
    [(0, 0), (1, 100)],
    [(0, 0), (1, 100), (4, 200)],          # a leadership that wrote nothing, at the log end
    [(0, 0), (1, 100), (4, 250)],          # past the log end (an unflushed tail lost): trimmed
])
def test_a_checkpoint_that_describes_the_log_passes(entries):
    assert epoch_checkpoint_problem(entries, LOG, 0, 200) is None


@pytest.mark.parametrize("entries, why", [
    ([(1, 0)], "carries leader epoch 0, but the checkpoint puts it in epoch 1"),  # the "0 0" edited to "1 0"
    ([(0, 0)], "carries leader epoch 1, but the checkpoint puts it in epoch 0"),  # epoch 1 lost
    ([(0, 0), (1, 50)], "carries leader epoch 0, but the checkpoint puts it in epoch 1"),
    ([(0, 0), (1, 105)], "inside the batch of offsets 100..109"),
    ([(0, 10), (1, 100)], "the batch at offset 0 (leader epoch 0) comes before the first entry"),
    ([], "comes before the first entry: there is none"),
    ([(1, 0), (0, 100)], "epochs must grow"),
    ([(0, 0), (1, 0)], "not after epoch 0's start 0"),
    ([(0, 0), (1, 100), (2, 100)], "not after epoch 1's start 100"),
    ([(-1, 0)], "negative"),
])
def test_a_checkpoint_that_disagrees_with_the_log_is_named(entries, why):
    problem = epoch_checkpoint_problem(entries, LOG, 0, 200)
    assert problem is not None and why in problem, problem


def test_the_log_start_and_the_cleaners_gaps():
    # retention moved the log start to 150 (inside no batch) and to 155 (inside one): the
    # entry below it stands for the log start
    assert epoch_checkpoint_problem([(0, 0), (1, 100)], LOG[15:], 150, 200) is None
    assert epoch_checkpoint_problem([(0, 0), (1, 155)], [(150, 159, 1)] + LOG[16:], 155, 200) is None
    # a compacted log: epoch 1's batches all cleaned away, epoch 2's left with gaps
    compacted = [(0, 9, 0), (40, 49, 0), (230, 239, 2)]
    assert epoch_checkpoint_problem([(0, 0), (1, 100), (2, 200)], compacted, 0, 240) is None
    assert epoch_checkpoint_problem([(0, 0), (2, 100)], compacted, 0, 240) is None
    assert epoch_checkpoint_problem([(0, 0), (1, 100)], compacted, 0, 240) is not None


def _batch(offset: int, epoch: int) -> bytes:
    return stamp(encode_batch([(None, b"v", None, offset)]), offset, epoch)


def test_a_batch_whose_leader_epoch_goes_down_is_damage():
    h = read_header(_batch(5, 2))
    check_recovered_batch(h, 5, 0, None, False, previous_epoch=2)
    check_recovered_batch(h, 5, 0, None, False, previous_epoch=1)
    with pytest.raises(CorruptMessageError, match="leader epoch 2, below the previous batch's 3"):
        check_recovered_batch(h, 5, 0, None, False, previous_epoch=3)


# -- on disk ------------------------------------------------------------------------------
def _stored(tmp_path, epochs_of_batches: list[int], checkpoint_entries: list[tuple[int, int]] | None):
    from minikafka.broker.storage import DiskStorage

    d = tmp_path / "broker-1"
    s = DiskStorage(str(d), broker_id=1)
    batches = [_batch(i, e) for i, e in enumerate(epochs_of_batches)]
    plog = PartitionLog()
    for data in batches:
        plog.append(read_header(data), data)
    s.append("t", 0, batches, plog)
    if checkpoint_entries is not None:
        s.write_epochs("t", 0, checkpoint_entries)
    return d


def test_a_damaged_checkpoint_is_rebuilt_from_the_batches_and_written_back(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _stored(tmp_path, [0, 0, 0, 1, 1], [(0, 0), (1, 3)])
    (d / "t-0" / "leader-epoch-checkpoint").write_text("0\n1\n1 0\n")  # "0 0" edited to "1 0"
    log, epochs = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == 5
    assert epochs.entries == [(0, 0), (1, 3)]
    assert "leader-epoch-checkpoint disagrees with the log" in caplog.text and "rebuilt from the log's batches" in caplog.text
    assert checkpoint.parse_epochs((d / "t-0" / "leader-epoch-checkpoint").read_text()) == [(0, 0), (1, 3)]


def test_a_missing_checkpoint_under_a_log_is_rebuilt(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _stored(tmp_path, [0, 2, 2], None)
    _, epochs = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert epochs.entries == [(0, 0), (2, 1)]
    assert "leader-epoch-checkpoint is missing" in caplog.text


def test_a_sound_checkpoint_is_kept_as_it_is(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _stored(tmp_path, [0, 0, 3], [(0, 0), (3, 2), (4, 3)])  # epoch 4: a leadership at the log end
    _, epochs = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert epochs.entries == [(0, 0), (3, 2)]  # an entry at the log end is dropped, as Kafka's truncateFromEnd does
    assert "leader-epoch-checkpoint" not in caplog.text


def test_a_batch_stamped_with_a_lower_epoch_is_cut_or_refused_as_the_only_copy(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    d = _stored(tmp_path, [0, 2, 1, 2], [(0, 0), (2, 1)])  # the third batch's epoch byte damaged: 2 -> 1
    with pytest.raises(KafkaStorageError, match="below the previous batch's 2"):
        DiskStorage(str(d), broker_id=1).load("t", 0, keep_damage=True)
    log, epochs = DiskStorage(str(d), broker_id=1).load("t", 0)
    assert log.log_end_offset == 2  # cut at the damaged batch: fetched again from the leader
    assert epochs.entries == [(0, 0), (2, 1)]


# -- above the partition's current leader epoch: written by no leader ------------------------
def test_a_batch_or_an_entry_above_the_current_leader_epoch_is_damage():
    h = read_header(_batch(5, 9))
    check_recovered_batch(h, 5, 0, None, False, previous_epoch=2, max_epoch=9)
    with pytest.raises(CorruptMessageError, match="leader epoch 9, above the partition's current leader epoch 3"):
        check_recovered_batch(h, 5, 0, None, False, previous_epoch=2, max_epoch=3)
    problem = epoch_checkpoint_problem([(0, 0), (1, 100), (7, 200)], LOG, 0, 200, max_epoch=2)
    assert problem is not None and "epoch 7 is above the partition's current leader epoch 2" in problem


def test_a_leader_whose_epochs_cannot_be_rebuilt_from_its_batches_is_refused(tmp_path, caplog):
    from minikafka.broker.storage import DiskStorage

    # the last batch's leader epoch byte damaged 1 -> 129: the checkpoint disagrees, and the
    # batches cannot stand for it either, since no leader of this partition ever had epoch 129
    d = _stored(tmp_path, [0, 0, 1, 129], [(0, 0), (1, 2)])
    with pytest.raises(KafkaStorageError, match="above the partition's current leader epoch 2.*holds the only copy"):
        DiskStorage(str(d), broker_id=1).load("t", 0, keep_damage=True, max_epoch=2)
    # a follower cuts it and fetches it again from the leader
    log, epochs = DiskStorage(str(d), broker_id=1).load("t", 0, max_epoch=2)
    assert log.log_end_offset == 3 and epochs.entries == [(0, 0), (1, 2)]
    # an entry above it, without a batch (the checkpoint alone damaged): rebuilt from the batches
    d = _stored(tmp_path / "b", [0, 0, 1], [(0, 0), (1, 2), (40, 3)])
    (d / "t-0" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n40 2\n")
    _, epochs = DiskStorage(str(d), broker_id=1).load("t", 0, max_epoch=2)
    assert epochs.entries == [(0, 0), (1, 2)]


def test_memory_storage_writes_its_checkpoint_to_be_read_disk_storage_also_syncs_it(tmp_path, monkeypatch):
    # a failover makes one of these writes per partition led anew, on the event loop: on
    # memory storage nothing the file describes outlives the process, so no fsync
    import os

    from minikafka.broker.storage import DiskStorage, Storage
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    memory, disk = Storage(str(tmp_path / "memory")), DiskStorage(str(tmp_path / "disk"))
    synced.clear()  # what making them wrote (meta.properties)
    memory.write_epochs("t", 0, [(0, 0), (3, 40)])
    assert synced == []
    assert (tmp_path / "memory" / "t-0" / "leader-epoch-checkpoint").read_text() == checkpoint.format_epochs([(0, 0), (3, 40)])
    disk.write_epochs("t", 0, [(0, 0)])
    assert len(synced) == 2  # the file, then its folder
