"""Kafka's compression codecs for the records section of a batch v2 (attribute bits 0-2).

As Kafka's Java client writes them: gzip (RFC 1952), snappy in xerial framing
(``\\x82SNAPPY\\x00``, version 1, compatible 1, then int32-length-prefixed raw snappy
blocks; raw snappy is accepted when reading), lz4 frame format with independent
blocks, and zstd frames.  A batch is compressed as a whole: its records section, never
its header.
"""
from __future__ import annotations

import struct
import zlib
from typing import Any

import cramjam

from ...errors import CorruptMessageError, KafkaError, MessageTooLargeError, UnsupportedCompressionTypeError

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


def _too_large(codec: int, max_size: int) -> KafkaError:
    return MessageTooLargeError(f"{COMPRESSION_NAMES[codec]} records section expands to more than {max_size} "
                               f"bytes (the broker's cap on a decompressed batch, socket.request.max.bytes)")


def _raw_snappy_length(data: bytes | memoryview) -> int:
    """The uncompressed length that a raw snappy block declares (its leading varint)."""
    result = shift = 0
    for i in range(min(5, len(data))):
        byte = data[i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result
        shift += 7
    raise CorruptMessageError("snappy block without a valid length preamble")


def _snappy_decompress(data: bytes, max_size: int | None) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        if max_size is not None and _raw_snappy_length(data) > max_size:
            raise _too_large(2, max_size)
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
        block = data[pos:pos + length]
        if max_size is not None and len(out) + _raw_snappy_length(block) > max_size:
            raise _too_large(2, max_size)
        out += bytes(cramjam.snappy.decompress_raw(block))
        pos += length
    return bytes(out)


_GZIP_CHUNK = 1 << 20  # bytes produced per step of a capped gzip decompression


def _gzip_decompress(data: bytes, max_size: int | None) -> bytes:
    """gzip, one member after another, producing at most ``max_size`` bytes (never more
    than that plus one step is held)."""
    if max_size is None:
        return bytes(cramjam.gzip.decompress(data))
    out = bytearray()
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        buf = rest
        while buf:
            out += d.decompress(buf, _GZIP_CHUNK)
            if len(out) > max_size:
                raise _too_large(1, max_size)
            buf = d.unconsumed_tail
        out += d.flush(_GZIP_CHUNK) if not d.eof else b""
        if len(out) > max_size:
            raise _too_large(1, max_size)
        if not d.eof:
            raise CorruptMessageError("cannot decompress gzip records: truncated gzip stream")
        rest = d.unused_data
    return bytes(out)


_FIRST_BUFFER = 1 << 16  # the smallest first guess of a capped lz4/zstd output buffer


def _bounded(codec: int, module: Any, data: bytes, max_size: int) -> bytes:
    """lz4 or zstd into a buffer never larger than ``max_size + 1`` bytes: a first guess
    of 8 times the input (at least 64 KiB), four times larger while the output fills it,
    and filling one of ``max_size + 1`` bytes means too large.  (A buffer of the whole cap
    for every batch would cost a 100 MiB allocation per batch.)"""
    size = min(max_size + 1, max(_FIRST_BUFFER, 8 * len(data)))
    while True:
        buf = bytearray(size)
        try:
            n = module.decompress_into(data, buf)
        except Exception as exc:  # noqa: BLE001 - cramjam's DecompressionError
            if "failed to write whole buffer" not in str(exc):
                raise
            n = size  # the output did not fit
        if n < size:
            return bytes(memoryview(buf)[:n])
        if size > max_size:
            raise _too_large(codec, max_size)
        size = min(max_size + 1, size * 4)


def decompress(codec: int, data: bytes | bytearray | memoryview, max_size: int | None = None) -> bytes:
    """The records section of a batch, decompressed with codec ``codec`` (0: as is).

    With ``max_size`` no more than that many bytes are ever produced: a section that
    expands further (a "compression bomb") is RECORD_TOO_LARGE, naming the cap, and is
    refused before it is held whole.  A section that does not decompress is
    CORRUPT_MESSAGE."""
    data = bytes(data)
    if codec == 0:
        return data
    if codec not in COMPRESSION_NAMES:
        raise _unsupported(codec)
    try:
        if codec == 1:
            return _gzip_decompress(data, max_size)
        if codec == 2:
            return _snappy_decompress(data, max_size)
        module = cramjam.lz4 if codec == 3 else cramjam.zstd
        if max_size is not None:
            return _bounded(codec, module, data, max_size)
        return bytes(module.decompress(data))
    except KafkaError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError and ValueErrors; zlib.error
        raise CorruptMessageError(f"cannot decompress {COMPRESSION_NAMES[codec]} records: "
                                  f"{exc.__class__.__name__}: {exc}") from None
