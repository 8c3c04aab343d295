"""Kafka's checkpoint text formats (CheckpointFile): version line, count line, entries.

* replication-offset-checkpoint: ``topic partition high_watermark`` per line.
* leader-epoch-checkpoint: ``epoch start_offset`` per line.

Only text in, text out; broker/storage.py writes the files atomically
(temp file, fsync, rename, fsync of the folder).
"""
from __future__ import annotations

from ..errors import KafkaStorageError

VERSION = 0


def format_offsets(entries: dict[tuple[str, int], int]) -> str:
    """Text of a replication-offset-checkpoint file."""
    lines = [str(VERSION), str(len(entries))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    return "\n".join(lines) + "\n"


def parse_offsets(text: str) -> dict[tuple[str, int], int]:
    """Parse a replication-offset-checkpoint file; KAFKA_STORAGE_ERROR if malformed."""
    rows = _rows(text, 3)
    return {(r[0], int(r[1])): int(r[2]) for r in rows}


def format_epochs(entries: list[tuple[int, int]]) -> str:
    """Text of a leader-epoch-checkpoint file."""
    lines = [str(VERSION), str(len(entries))] + [f"{e} {o}" for e, o in entries]
    return "\n".join(lines) + "\n"


def parse_epochs(text: str) -> list[tuple[int, int]]:
    """Parse a leader-epoch-checkpoint file; KAFKA_STORAGE_ERROR if malformed."""
    return [(int(r[0]), int(r[1])) for r in _rows(text, 2)]


def _rows(text: str, width: int) -> list[list[str]]:
    lines = text.splitlines()
    try:
        if int(lines[0]) != VERSION:
            raise KafkaStorageError(f"unsupported checkpoint version {lines[0]!r}")
        count = int(lines[1])
        rows = [line.split() for line in lines[2:] if line.strip()]
        if len(rows) != count or any(len(r) != width for r in rows):
            raise KafkaStorageError(f"checkpoint holds {len(rows)} entries, its header says {count}")
        for r in rows:
            for cell in r[-2:] if width == 3 else r:
                int(cell)
        return rows
    except (IndexError, ValueError) as exc:
        raise KafkaStorageError(f"malformed checkpoint file: {exc}") from None
