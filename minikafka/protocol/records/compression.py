"""Kafka's compression codecs for the records section of a batch v2 (attribute bits 0-2).

As Kafka's Java client writes them: gzip (RFC 1952), snappy in xerial framing
(``\\x82SNAPPY\\x00``, version 1, compatible 1, then int32-length-prefixed raw snappy
blocks; raw snappy is accepted when reading), lz4 frame format with independent
blocks, and zstd frames.  A batch is compressed as a whole: its records section, never
its header.
"""
from __future__ import annotations

import struct

import cramjam

from ...errors import CorruptMessageError, KafkaError, UnsupportedCompressionTypeError

#: Kafka's ``compression.type`` names and their attribute codes.
COMPRESSION_CODECS: dict[str, int] = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
COMPRESSION_NAMES: dict[int, str] = {v: k for k, v in COMPRESSION_CODECS.items()}
COMPRESSION_TYPES: tuple[str, ...] = tuple(COMPRESSION_CODECS)

_INT32 = struct.Struct(">i")
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # input bytes per snappy block, as snappy-java's default


def _unsupported(code: int) -> KafkaError:
    return UnsupportedCompressionTypeError(f"unknown compression codec {code} in batch attributes (known: "
                               + ", ".join(f"{c} {n}" for n, c in COMPRESSION_CODECS.items()) + ")")


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section with Kafka's codec ``codec`` (attribute bits 0-2)."""
    if codec == 0:
        return data
    if codec == 1:
        return bytes(cramjam.gzip.compress(data))
    if codec == 2:
        out = bytearray(_XERIAL_HEADER)
        view = memoryview(data)
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(bytes(view[start:start + _XERIAL_BLOCK])))
            out += _INT32.pack(len(block))
            out += block
        return bytes(out)
    if codec == 3:
        # Kafka's Java client (KafkaLZ4BlockInputStream) refuses dependent (linked) blocks.
        c = cramjam.lz4.Compressor(block_linked=False)
        c.compress(data)
        return bytes(c.finish())
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise _unsupported(codec)


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos, n = 16, len(data)
    if n < pos:
        raise CorruptMessageError("truncated xerial snappy header")
    while pos < n:
        if n - pos < 4:
            raise CorruptMessageError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > n:
            raise CorruptMessageError(f"xerial snappy block of {length} bytes overruns the {n - pos} bytes left")
        out += bytes(cramjam.snappy.decompress_raw(data[pos:pos + length]))
        pos += length
    return bytes(out)


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """The records section of a batch, decompressed with codec ``codec`` (0: as is)."""
    data = bytes(data)
    if codec == 0:
        return data
    if codec not in COMPRESSION_NAMES:
        raise _unsupported(codec)
    try:
        if codec == 1:
            return bytes(cramjam.gzip.decompress(data))
        if codec == 2:
            return _snappy_decompress(data)
        if codec == 3:
            return bytes(cramjam.lz4.decompress(data))
        return bytes(cramjam.zstd.decompress(data))
    except CorruptMessageError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError and ValueErrors
        raise CorruptMessageError(f"cannot decompress {COMPRESSION_NAMES[codec]} records: "
                                  f"{exc.__class__.__name__}: {exc}") from None
