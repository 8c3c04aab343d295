"""Record batches read column-wise, for the Spark source's Arrow columns.

:func:`scan` walks the headers of concatenated record batches (a fetch answer);
each batch's records section then goes through the one parser
(:func:`~.section.parse_section`).  A section of same-shaped records comes back as
runs, which :func:`run_arrays` cuts into numpy columns; any other comes back as
per-column lists.  Pure: no I/O.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from ...errors import CorruptMessageError
from .batch import HEADER, HEADER_SIZE, LENGTH_OVERHEAD, MAGIC
from .section import UniformRun

try:  # only the Spark source (an extra, which brings numpy) cuts runs into numpy columns
    import numpy as np
except ImportError:  # pragma: no cover - without the spark extra
    np = None  # type: ignore[assignment]


@dataclass(frozen=True)
class BatchRef:
    """Where one batch sits in a fetch answer, and its header fields."""

    pos: int
    size: int
    base_offset: int
    last_offset: int
    base_timestamp: int
    crc: int
    attributes: int = 0
    max_timestamp: int = 0
    record_count: int = 0


def scan(data: bytes | memoryview) -> list[BatchRef]:
    """The batches of ``data`` (headers only, no CRC check); CORRUPT_MESSAGE for a torn batch."""
    out: list[BatchRef] = []
    n = len(data)
    pos = 0
    unpack = HEADER.unpack_from
    while pos < n:
        if n - pos < HEADER_SIZE:
            raise CorruptMessageError(f"truncated batch header at byte {pos}")
        (base, length, _epoch, magic, crc, attrs, lod, base_ts, max_ts,
         _pid, _pepoch, _seq, count) = unpack(data, pos)
        size = length + LENGTH_OVERHEAD
        if magic != MAGIC or length < HEADER_SIZE - LENGTH_OVERHEAD or pos + size > n or not 1 <= count <= lod + 1:
            raise CorruptMessageError(f"malformed batch at byte {pos} (magic {magic}, length {length}, "
                                      f"{n - pos} bytes left)")
        out.append(BatchRef(pos, size, base, base + lod, base_ts, crc, attrs, max_ts, count))
        pos += size
    return out


class RunArrays(NamedTuple):
    """The columns of a section of same-shaped records as numpy arrays (see
    :func:`run_arrays`)."""

    offset_deltas: Any  # np.ndarray of int64
    timestamp_deltas: Any  # np.ndarray of int64
    #: per run, the keys as a 2-D uint8 array (one row per record), or None for null keys
    keys: list[Any]
    #: per run, the values likewise
    values: list[Any]


def run_arrays(section: bytes, runs: list[UniformRun]) -> RunArrays:
    """Cut a section that :func:`~.section.uniform_runs` found made of ``runs`` into
    numpy columns, seeing each run as a 2-D array of records (one row per record): no
    Python per record.  A timestamp delta of one or two bytes is decoded as whole
    columns."""
    whole = np.frombuffer(section, dtype=np.uint8)
    ts_parts, keys, values = [], [], []
    for r in runs:
        rows = whole[r.pos:r.pos + r.count * r.size].reshape(r.count, r.size)
        raw = rows[:, r.ts_at].astype(np.int64)
        if r.ts_width == 2:
            raw = (raw & 0x7F) | (rows[:, r.ts_at + 1].astype(np.int64) << 7)
        ts_parts.append((raw >> 1) ^ -(raw & 1))
        keys.append(None if r.key_len < 0 else rows[:, r.key_at:r.key_at + r.key_len])
        values.append(None if r.value_len < 0 else rows[:, r.value_at:r.value_at + r.value_len])
    count = runs[-1].first + runs[-1].count
    ts = ts_parts[0] if len(ts_parts) == 1 else np.concatenate(ts_parts)
    return tuple.__new__(RunArrays, (np.arange(count, dtype=np.int64), ts, keys, values))
