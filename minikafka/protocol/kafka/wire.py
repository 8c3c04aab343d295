"""Kafka's primitive wire types: fixed-width integers, varints, strings, bytes, UUIDs.

:class:`Reader` decodes from a bytes-like buffer and raises
:class:`MalformedFrame` on anything short or out of range; :class:`Writer` collects
chunks (large ``bytes`` values such as record batches are kept as they are, not
copied) and joins them once.  "Compact" forms are those of flexible versions
(KIP-482): lengths as unsigned varints holding length + 1, 0 meaning null.
"""
from __future__ import annotations

import builtins
import struct
import uuid

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


class MalformedFrame(ValueError):
    """The bytes do not decode as the declared schema (short, negative length, bad UTF-8...)."""


class Reader:
    """Sequential decoder over one request frame."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self.buf = memoryview(buf)
        self.pos = pos
        self.end = len(self.buf)

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > self.end:
            raise MalformedFrame(f"needs {n} bytes at byte {self.pos}, {self.end - self.pos} left")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def _fixed(self, s: struct.Struct) -> int:
        if self.pos + s.size > self.end:
            raise MalformedFrame(f"needs {s.size} bytes at byte {self.pos}, {self.end - self.pos} left")
        v = s.unpack_from(self.buf, self.pos)[0]
        self.pos += s.size
        return v

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def uint16(self) -> int:
        return self._fixed(_U16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def uint32(self) -> int:
        return self._fixed(_U32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def float64(self) -> float:
        return self._fixed(_F64)

    def bool(self) -> bool:
        return self._fixed(_I8) != 0

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= self.end:
                raise MalformedFrame(f"truncated varint at byte {self.pos}")
            b = self.buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise MalformedFrame(f"varint longer than 10 bytes at byte {self.pos}")

    def varint(self) -> int:
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self._take(16)))

    def _text(self, n: int) -> str:
        try:
            return str(self._take(n), "utf-8")
        except UnicodeDecodeError:
            raise MalformedFrame(f"string at byte {self.pos - n} is not UTF-8") from None

    def string(self, nullable: builtins.bool) -> str | None:
        n = self.int16()
        if n < 0:
            if nullable and n == -1:
                return None
            raise MalformedFrame(f"null or negative string length {n} at byte {self.pos - 2}")
        return self._text(n)

    def compact_string(self, nullable: builtins.bool) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            if nullable:
                return None
            raise MalformedFrame(f"null string at byte {self.pos - 1} where one is required")
        return self._text(n)

    def bytes_(self, nullable: builtins.bool) -> bytes | None:
        n = self.int32()
        if n < 0:
            if nullable and n == -1:
                return None
            raise MalformedFrame(f"null or negative bytes length {n} at byte {self.pos - 4}")
        return bytes(self._take(n))

    def compact_bytes(self, nullable: builtins.bool) -> bytes | None:
        n = self.uvarint() - 1
        if n < 0:
            if nullable:
                return None
            raise MalformedFrame(f"null bytes at byte {self.pos - 1} where a value is required")
        return bytes(self._take(n))

    def array_length(self, compact: builtins.bool) -> int:
        """Element count, or -1 for a null array."""
        n = self.uvarint() - 1 if compact else self.int32()
        if n < -1:
            raise MalformedFrame(f"negative array length {n} at byte {self.pos}")
        if n > self.remaining():  # every element takes at least one byte
            raise MalformedFrame(f"array of {n} elements cannot fit in the {self.remaining()} bytes left")
        return n

    def skip_tagged_fields(self) -> None:
        """Read (and ignore) a tagged-field section: count, then tag, size, bytes each."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self._take(self.uvarint())


def uvarint_bytes(v: int) -> bytes:
    """Encode a non-negative integer as an unsigned varint."""
    if v < 0:
        raise ValueError(f"unsigned varint of negative {v}")
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


class Writer:
    """Collects encoded chunks; :meth:`getvalue` joins them once."""

    __slots__ = ("chunks", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0

    def raw(self, b: bytes) -> None:
        self.chunks.append(b)
        self.size += len(b)

    def int8(self, v: int) -> None:
        self.raw(_I8.pack(v))

    def int16(self, v: int) -> None:
        self.raw(_I16.pack(v))

    def uint16(self, v: int) -> None:
        self.raw(_U16.pack(v))

    def int32(self, v: int) -> None:
        self.raw(_I32.pack(v))

    def uint32(self, v: int) -> None:
        self.raw(_U32.pack(v))

    def int64(self, v: int) -> None:
        self.raw(_I64.pack(v))

    def float64(self, v: float) -> None:
        self.raw(_F64.pack(v))

    def bool(self, v: bool) -> None:
        self.raw(b"\x01" if v else b"\x00")

    def uvarint(self, v: int) -> None:
        self.raw(uvarint_bytes(v))

    def uuid(self, v: uuid.UUID | None) -> None:
        self.raw((v or ZERO_UUID).bytes)

    def string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
            return
        b = v.encode()
        self.int16(len(b))
        self.raw(b)

    def compact_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        b = v.encode()
        self.uvarint(len(b) + 1)
        self.raw(b)

    def bytes_(self, v: bytes | None) -> None:
        if v is None:
            self.int32(-1)
            return
        self.int32(len(v))
        self.raw(v)

    def compact_bytes(self, v: bytes | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        self.uvarint(len(v) + 1)
        self.raw(v)

    def array_length(self, n: int | None, compact: builtins.bool) -> None:
        if compact:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.int32(-1 if n is None else n)

    def empty_tagged_fields(self) -> None:
        self.raw(b"\x00")

    def getvalue(self) -> bytes:
        return b"".join(self.chunks)
