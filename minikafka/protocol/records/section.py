"""The records section of a batch v2 (the bytes after its 61-byte header, once
decompressed): written by :func:`encode_records`, read by one parser.

Each record (``varint``/``varlong`` are zigzag-encoded, :mod:`.varint`):

==========================  ==========================================================
 field                       meaning
==========================  ==========================================================
 length varint               bytes of the record after this field
 attributes int8             unused, 0
 timestampDelta varlong      timestamp - baseTimestamp (may be negative)
 offsetDelta varint          offset - baseOffset: 0, 1, ... recordsCount - 1 as
                             produced (a compacted batch keeps its records' deltas)
 keyLength varint, key       -1 for a null key
 valueLength varint, value   -1 for a null value
 headersCount varint         then per header: keyLength varint + key (UTF-8),
                             valueLength varint (-1 null) + value
==========================  ==========================================================

:func:`parse_section` is the one parser, and every reader goes through it: the
leader's check of a produced batch (:func:`check_section`, Kafka's LogValidator
checks), the consumer's records and columns (:func:`decode_section`), and the Spark
source's Arrow columns (which cuts same-shaped runs with numpy,
:mod:`.columns`).  It first tries the fast path, :func:`uniform_runs`: a section of
same-shaped records (same key and value sizes, no headers) is checked column by column
with strided slices, at C speed; any other section is walked record by record, field
by field, by :func:`_walk`.  Both accept exactly the same sections (the fast path may
decline a valid one, never accept an invalid one) and give the same columns: the
property tests in ``tests/unit/test_records.py`` tie them together.  Pure: no I/O.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from ...errors import CorruptMessageError
from .varint import put_varint, read_varint, unzigzag, varint_bytes, varint_tail

Header = tuple[str, "bytes | None"]


class Columns(NamedTuple):
    """A decoded records section, one list per field, in record order."""

    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    #: per record a list of ``(name, value)`` pairs; empty (no entry per record)
    #: when headers were not asked for
    headers: list[list[Header]]


# -- writing -------------------------------------------------------------------------

# The zigzag varint bytes of 0 <= n < 8192 (one or two bytes each): record lengths,
# offset and timestamp deltas and key/value lengths are nearly always in this range, and
# a table lookup is several times faster than encoding them bit by bit.
_SMALL_VARINT_LIMIT = 8192
_SMALL_VARINTS = [varint_bytes(n) for n in range(_SMALL_VARINT_LIMIT)]


def encode_records(records: Iterable[tuple[bytes | None, bytes | None, Sequence[Header] | None, int]],
                   base_ts: int, deltas: Sequence[int] | None = None) -> bytes:
    """The records section of ``(key, value, headers, timestamp_ms)`` tuples (read once, in
    order), with timestamp deltas from ``base_ts`` and offset deltas 0, 1, ... (or
    ``deltas``).

    The usual record (no key, no headers, small deltas and value) is written as four
    ready pieces (its length, the fields before the value, the value, the header count)
    joined once for the whole section; any other record field by field."""
    out: list[bytes] = []
    add = out.append
    small = _SMALL_VARINTS
    limit = _SMALL_VARINT_LIMIT
    for j, (key, value, headers, ts) in enumerate(records):
        i = j if deltas is None else deltas[j]
        d = ts - base_ts
        if key is None and not headers and value is not None and 0 <= d < limit and i < limit:
            n = len(value)
            if n < limit:
                head = b"\x00" + small[d] + small[i] + b"\x01" + small[n]  # attributes .. value length
                size = len(head) + n + 1
                add(small[size] if size < limit else varint_bytes(size))
                add(head)
                add(value)
                add(b"\x00")  # no headers
                continue
        body = bytearray(b"\x00")  # record attributes
        body += small[d] if 0 <= d < limit else varint_bytes(d)
        body += small[i] if i < limit else varint_bytes(i)
        if key is None:
            body.append(1)  # zigzag(-1)
        else:
            n = len(key)
            body += small[n] if n < limit else varint_bytes(n)
            body += key
        if value is None:
            body.append(1)
        else:
            n = len(value)
            body += small[n] if n < limit else varint_bytes(n)
            body += value
        if headers:
            put_varint(body, len(headers))
            for hk, hv in headers:
                name = hk.encode("utf-8") if isinstance(hk, str) else bytes(hk)
                put_varint(body, len(name))
                body += name
                if hv is None:
                    body.append(1)
                else:
                    put_varint(body, len(hv))
                    body += hv
        else:
            body.append(0)
        n = len(body)
        add(small[n] if n < limit else varint_bytes(n))
        add(bytes(body))
    return b"".join(out)


# -- the one parser --------------------------------------------------------------------

def parse_section(data: bytes, count: int, where: str, produced: bool = False, keep: bool = True,
                  include_headers: bool = True) -> list[UniformRun] | Columns | None:
    """Parse a records section that its batch header says holds ``count`` records.

    Returns the section's runs of same-shaped records (a list of :class:`UniformRun`,
    to be cut into columns by :func:`cut_runs`, or by numpy) when it is made of them;
    otherwise walks it record by record and returns its :class:`Columns` (None when
    not ``keep``: a check that builds nothing).  ``produced`` adds the rule of a batch
    as a producer writes it: offset deltas 0..count-1.  ``include_headers``: fill
    ``Columns.headers`` (they are checked either way).

    Raises CORRUPT_MESSAGE, with ``where`` in the message, when the section does not
    hold exactly ``count`` well-formed records: a length that overruns the section or
    disagrees with the record's fields, a negative length other than -1 (null), a
    negative header count, a null or non-UTF-8 header key, bytes after the last record.
    """
    if count >= _UNIFORM_MIN:
        runs = uniform_runs(data, count)
        if runs is not None:
            return runs
    return _walk(data, count, where, produced, keep, include_headers)


def check_section(data: bytes, count: int, where: str) -> None:
    """The leader's check of a produced records section (Kafka's LogValidator): exactly
    ``count`` well-formed records with offset deltas 0..count-1, nothing decoded or
    copied.  Raises CORRUPT_MESSAGE (see :func:`parse_section`)."""
    parse_section(data, count, where, True, False)


def decode_section(data: bytes, count: int, where: str, include_headers: bool = True) -> Columns:
    """The records of a section as :class:`Columns` (see :func:`parse_section`)."""
    parsed = parse_section(data, count, where, False, True, include_headers)
    if isinstance(parsed, list):
        return cut_runs(data, parsed, include_headers)
    assert parsed is not None  # kept: never None
    return parsed


def _walk(data: bytes, count: int, where: str, produced: bool, keep: bool, include_headers: bool) -> Columns | None:
    """:func:`parse_section` record by record, field by field.

    Varints are read in place in their one- and two-byte forms (nearly every length
    and delta of a record), and :func:`~.varint.varint_tail`, the decoder's own
    continuation, reads longer ones: a function call per field would cost a fifth of
    the leader's check.  Lengths are tested on the raw (still zigzag) value: even is
    ``raw >> 1`` >= 0, 1 is -1 (null), any other odd value is below -1.  With ``keep``
    false nothing is copied (no key, value or list per record): the leader's check."""
    n = len(data)
    pos = 0
    tail = varint_tail
    # lst.append(x) is a specialised instruction (CPython 3.11+), faster than a bound method
    deltas: list[int] = []
    ts_deltas: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[list[Header]] = []
    keep_headers = keep and include_headers
    i = 0
    try:
        for i in range(count):
            b = data[pos]  # length
            pos += 1
            if b >= 0x80:
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            length = b >> 1
            end = pos + length
            if b & 1 or end > n:
                raise CorruptMessageError(f"{where}: record {i} declares {unzigzag(b)} bytes, {n - pos} left")
            pos += 1  # record attributes (unused)
            t = data[pos]  # timestamp delta: any value
            pos += 1
            if t >= 0x80:
                c = data[pos]
                if c < 0x80:
                    t = (t & 0x7F) | (c << 7)
                    pos += 1
                else:
                    t, pos = tail(data, pos, t)
            d = data[pos]  # offset delta
            pos += 1
            if d >= 0x80:
                c = data[pos]
                if c < 0x80:
                    d = (d & 0x7F) | (c << 7)
                    pos += 1
                else:
                    d, pos = tail(data, pos, d)
            if produced and d != i << 1:
                raise CorruptMessageError(f"{where}: record {i} has offset delta {unzigzag(d)} (expected {i})")
            b = data[pos]  # key
            pos += 1
            if b >= 0x80:
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            if b & 1:
                if b != 1:
                    raise CorruptMessageError(f"{where}: record {i} has key length {unzigzag(b)}")
                if keep:
                    keys.append(None)
            else:
                b >>= 1
                if keep:
                    keys.append(data[pos:pos + b])
                pos += b
            b = data[pos]  # value
            pos += 1
            if b >= 0x80:
                c = data[pos]
                if c < 0x80:
                    b = (b & 0x7F) | (c << 7)
                    pos += 1
                else:
                    b, pos = tail(data, pos, b)
            if b & 1:
                if b != 1:
                    raise CorruptMessageError(f"{where}: record {i} has value length {unzigzag(b)}")
                if keep:
                    values.append(None)
            else:
                b >>= 1
                if keep:
                    values.append(data[pos:pos + b])
                pos += b
            b = data[pos]  # header count
            pos += 1
            if b == 0:
                if keep_headers:
                    headers.append([])
            else:
                if b >= 0x80:
                    b, pos = tail(data, pos, b)
                if b & 1:
                    raise CorruptMessageError(f"{where}: record {i} has header count {unzigzag(b)}")
                hs: list[Header] = []
                for _ in range(b >> 1):
                    hklen, pos = read_varint(data, pos)
                    if hklen < 0:
                        raise CorruptMessageError(f"{where}: record {i} has a header with a null key")
                    name = data[pos:pos + hklen].decode("utf-8")
                    pos += hklen
                    hvlen, pos = read_varint(data, pos)
                    if hvlen < 0:
                        if hvlen != -1:
                            raise CorruptMessageError(f"{where}: record {i} has header value length {hvlen}")
                        hs.append((name, None))
                    else:
                        hs.append((name, data[pos:pos + hvlen]))
                        pos += hvlen
                if keep_headers:
                    headers.append(hs)
            if pos != end:
                raise CorruptMessageError(f"{where}: record {i} declares {length} bytes but its fields "
                                          f"take {length + pos - end}")
            if keep:
                deltas.append((d >> 1) ^ -(d & 1))
                ts_deltas.append((t >> 1) ^ -(t & 1))
    except IndexError:
        raise CorruptMessageError(f"{where}: records section ends inside record {i}") from None
    except UnicodeDecodeError:
        raise CorruptMessageError(f"{where}: record {i} has a header key that is not UTF-8") from None
    if pos != n:
        raise CorruptMessageError(f"{where}: {n - pos} bytes remain after the {count} records the header declares")
    # NamedTuple's own __new__ is slower than tuple's
    return tuple.__new__(Columns, (deltas, ts_deltas, keys, values, headers)) if keep else None


# -- the fast path: runs of same-shaped records ----------------------------------------

# Offset deltas 0..count-1 as zigzag varints: 1 byte below 64, 2 below 8192, 3 below
# 2**20.  The uniform check covers batches of at most _UNIFORM_MAX records.
_DELTA_WIDTHS = ((64, 1), (8192, 2), (1 << 20, 3))
_UNIFORM_MIN = 16
_UNIFORM_MAX = 1 << 16
_delta_columns: dict[int, list[bytes]] = {}


def _delta_column(width: int) -> list[bytes]:
    """For offset deltas of ``width`` bytes: byte k of the zigzag varint of every delta
    i below :data:`_UNIFORM_MAX`, as one bytes object per k (indexed by i; deltas that
    take fewer bytes hold meaningless bytes there, never compared)."""
    cols = _delta_columns.get(width)
    if cols is None:
        zigzag = range(0, 2 * _UNIFORM_MAX, 2)
        cols = _delta_columns[width] = [
            bytes(((z >> (7 * k)) & 0x7F) | (0x80 if k < width - 1 else 0) for z in zigzag) for k in range(width)]
    return cols


class UniformRun(NamedTuple):
    """Records ``first .. first + count - 1`` of a records section, all of one shape:
    record ``first + j`` starts at byte ``pos + j * size``, and within each record the
    timestamp delta (a ``ts_width``-byte varint) sits at ``ts_at``, the key at
    ``key_at`` (``key_len`` bytes, -1: null), the value at ``value_at``."""

    pos: int
    first: int
    count: int  # type: ignore[assignment]  # shadows tuple.count; the batch header's word
    size: int
    ts_at: int
    ts_width: int
    key_at: int
    key_len: int
    value_at: int
    value_len: int


def _record_layout(data: bytes, pos: int) -> tuple | None:
    """Where the fields of the record at ``pos`` lie, relative to ``pos``: ``(size,
    fixed, ts_at, ts_width, delta_at, delta_width, key_at, key_len, value_at,
    value_len)``, ``fixed`` being the ``(at, width)`` of the varints every record of a
    uniform run must repeat byte for byte (its length, key length, value length and
    header count).  None when the record is not one a uniform run can be made of
    (headers, an invalid field)."""
    length, p = read_varint(data, pos)
    end = p + length
    fixed = [(0, p - pos)]
    p += 1  # attributes: any value
    ts_at = p
    _, p = read_varint(data, p)
    ts_width = p - ts_at
    delta_at = p
    _, p = read_varint(data, p)
    delta_width = p - delta_at
    fields = []
    for _ in range(2):  # key, then value
        at = p
        ln, p = read_varint(data, p)
        if ln < -1:
            return None
        fixed.append((at - pos, p - at))
        fields += [p - pos, ln]
        p += max(ln, 0)
    at = p
    nh, p = read_varint(data, p)
    if nh != 0 or p != end or length < 0:
        return None
    fixed.append((at - pos, p - at))
    return (end - pos, fixed, ts_at - pos, ts_width, delta_at - pos, delta_width, *fields)


def uniform_runs(data: bytes, count: int) -> list[UniformRun] | None:
    """The records section as runs of same-shaped records (:class:`UniformRun`, one per
    offset-delta varint width), every record checked valid, or None when it is not
    made of such runs (which says nothing about its validity).

    Checked column by column with strided slices (C speed) instead of record by
    record: in a run every record has the first one's size and repeats its length, key
    length, value length and header count (0) byte for byte, its timestamp delta has the
    same varint width, and its offset delta is its index.  Each record then parses
    exactly like the run's first, which is checked field by field."""
    if not _UNIFORM_MIN <= count <= _UNIFORM_MAX:
        return None
    n = len(data)
    pos = i = 0
    runs = []
    try:
        for limit, width in _DELTA_WIDTHS:
            if i >= count:
                break
            stop = min(count, limit)
            layout = _record_layout(data, pos)
            if layout is None:
                return None
            size, fixed, ts_at, ts_width, delta_at, delta_width, key_at, key_len, value_at, value_len = layout
            m = stop - i
            end = pos + m * size
            if delta_width != width or ts_width > 2 or end > n:
                return None
            for at, w in fixed:
                for k in range(pos + at, pos + at + w):
                    if data[k:end:size] != data[k:k + 1] * m:
                        return None
            if ts_width == 2 and min(data[pos + ts_at:end:size]) < 0x80:
                return None
            if max(data[pos + ts_at + ts_width - 1:end:size]) >= 0x80:
                return None
            cols = _delta_column(width)
            for k in range(width):
                if data[pos + delta_at + k:end:size] != cols[k][i:stop]:
                    return None
            runs.append(UniformRun(pos, i, m, size, ts_at, ts_width, key_at, key_len, value_at, value_len))
            pos, i = end, stop
    except (IndexError, CorruptMessageError):
        return None
    return runs if i == count and pos == n else None


def cut_runs(data: bytes, runs: list[UniformRun], include_headers: bool = True) -> Columns:
    """The :class:`Columns` of a section that :func:`uniform_runs` found made of
    ``runs``, cut by strided slices: one slice per field and run, not per record
    (``headers``: an empty list per record when ``include_headers``).  A timestamp
    delta of one or two bytes is decoded column-wise: its first bytes are one strided
    slice, its second bytes another."""
    ts_deltas: list[int] = []
    keys: list = []
    values: list = []
    for r in runs:
        end = r.pos + r.count * r.size
        first = data[r.pos + r.ts_at:end:r.size]
        if r.ts_width == 1:
            ts_deltas += [(b >> 1) ^ -(b & 1) for b in first]
        else:
            ts_deltas += [(((a & 0x7F) | (b << 7)) >> 1) ^ -(a & 1)
                          for a, b in zip(first, data[r.pos + r.ts_at + 1:end:r.size])]
        for out, at, length in ((keys, r.key_at, r.key_len), (values, r.value_at, r.value_len)):
            if length < 0:
                out += [None] * r.count
            else:
                out += [data[p:p + length] for p in range(r.pos + at, end, r.size)]
    count = runs[-1].first + runs[-1].count
    return Columns(list(range(count)), ts_deltas, keys, values, [[] for _ in range(count)] if include_headers else [])
