"""Zigzag varints (varint and varlong alike), as the records of a batch v2 use them.

Protobuf's encoding: a signed ``n`` becomes ``(n << 1) ^ (n >> 63)`` (0, -1, 1, -2,
... become 0, 1, 2, 3, ...), written 7 bits a byte, low bits first, the top bit set on
every byte but the last.  There is one decoder, :func:`read_varint`, and its
continuation past the first byte, :func:`varint_tail`.  The record walk of
:mod:`.section` (the hot loop of the leader's check and of every consumer) reads the
one- and two-byte forms in place, nearly every length and delta of a record, and calls
:func:`varint_tail` for longer ones.
"""
from __future__ import annotations

from ...errors import CorruptMessageError

MAX_VARINT_BYTES = 10  # a 64-bit value takes at most 10 bytes of 7 bits


def put_varint(out: bytearray, n: int) -> None:
    """Append ``n`` zigzag-encoded."""
    v = (n << 1) ^ (n >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def varint_bytes(n: int) -> bytes:
    """The zigzag varint bytes of ``n``."""
    out = bytearray()
    put_varint(out, n)
    return bytes(out)


def unzigzag(raw: int) -> int:
    """The signed value of the raw (still zigzag-encoded) varint ``raw``."""
    return (raw >> 1) ^ -(raw & 1)


def varint_tail(buf: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of a multi-byte varint whose first byte ``first`` was at ``pos - 1``:
    ``(raw value, next pos)``, the raw value still zigzag-encoded.  IndexError when
    ``buf`` ends inside it; CORRUPT_MESSAGE when it runs past 10 bytes."""
    v = first & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, pos
        shift += 7
        if shift >= 7 * MAX_VARINT_BYTES:
            raise CorruptMessageError(f"varint longer than {MAX_VARINT_BYTES} bytes at record byte {pos}")


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The zigzag varint at ``pos``: ``(value, next pos)``.  IndexError when ``buf``
    ends inside it; CORRUPT_MESSAGE when it runs past 10 bytes."""
    b = buf[pos]
    pos += 1
    if b >= 0x80:
        b, pos = varint_tail(buf, pos, b)
    return (b >> 1) ^ -(b & 1), pos
