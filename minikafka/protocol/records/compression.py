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

import cramjam
import zstandard

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
                               f"bytes (max.message.bytes, the cap on a decompressed batch)")


def _corrupt(codec: int, what: str) -> KafkaError:
    return CorruptMessageError(f"cannot decompress {COMPRESSION_NAMES[codec]} records: {what}")


class _Output:
    """Decompressed bytes as they are produced, refused as soon as they pass the cap."""

    __slots__ = ("codec", "max_size", "buf")

    def __init__(self, codec: int, max_size: int) -> None:
        self.codec = codec
        self.max_size = max_size
        self.buf = bytearray()

    def add(self, chunk: bytes | bytearray | memoryview) -> None:
        if len(self.buf) + len(chunk) > self.max_size:
            self.buf = bytearray()  # given back now, not when the exception is collected
            raise _too_large(self.codec, self.max_size)
        self.buf += chunk

    def declared(self, size: int) -> None:
        """A size the stream declares before its bytes are produced: refused past the cap."""
        if size > self.max_size:
            raise _too_large(self.codec, self.max_size)

    def result(self) -> bytes:
        out, self.buf = bytes(self.buf), bytearray()
        return out


# -- snappy ------------------------------------------------------------------------------

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


def _xerial_blocks(data: memoryview) -> list[memoryview]:
    """The raw snappy blocks of a xerial-framed stream (structure checked, nothing decompressed)."""
    blocks = []
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
        blocks.append(data[pos:pos + length])
        pos += length
    return blocks


def _snappy_decompress(data: memoryview, max_size: int) -> bytes:
    """Every block's declared length is read, and their sum checked against the cap,
    before any block is decompressed."""
    if bytes(data[:8]) != _XERIAL_MAGIC:
        if _raw_snappy_length(data) > max_size:
            raise _too_large(2, max_size)
        return bytes(cramjam.snappy.decompress_raw(data))
    blocks = _xerial_blocks(data)
    out = _Output(2, max_size)
    out.declared(sum(_raw_snappy_length(b) for b in blocks))
    for block in blocks:
        out.add(bytes(cramjam.snappy.decompress_raw(block)))
    return out.result()


# -- gzip --------------------------------------------------------------------------------

_STEP = 256 * 1024  # bytes produced per step of a capped gzip or zstd decompression


def _gzip_decompress(data: memoryview, max_size: int) -> bytes:
    """gzip, one member after another, ``_STEP`` output bytes at a time."""
    out = _Output(1, max_size)
    rest: bytes | memoryview = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        buf = rest
        while buf:
            out.add(d.decompress(buf, _STEP))
            buf = d.unconsumed_tail
        while not d.eof:
            chunk = d.flush(_STEP)
            if not chunk:
                break
            out.add(chunk)
        if not d.eof:
            raise CorruptMessageError("cannot decompress gzip records: truncated gzip stream")
        rest = d.unused_data
    return out.result()


# -- lz4 ---------------------------------------------------------------------------------

_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_UINT32 = struct.Struct("<I")
_UINT64 = struct.Struct("<Q")


_SKIPPABLE_MAGIC = 0x184D2A50  # LZ4 and zstd alike: a frame of user data, its magic's low 4 bits free


def _past_skippable_frame(data: memoryview, pos: int, codec: int) -> int:
    """Where the skippable frame at ``pos`` ends (its 4-byte size follows the magic)."""
    if len(data) - pos < 8:
        raise _corrupt(codec, "truncated skippable frame")
    return pos + 8 + _UINT32.unpack_from(data, pos + 4)[0]


def _lz4_decompress(data: memoryview, max_size: int) -> bytes:
    """LZ4 frames walked block by block: the sizes the frames declare (content size,
    stored blocks) are checked against the cap first, then each block is decompressed
    into one scratch buffer of the frame's block size and added.  Blocks are decoded
    independently, as Kafka reads them (KIP-57: Kafka's clients write independent blocks)."""
    frames: list[tuple[int, list[tuple[bool, memoryview]]]] = []
    declared = 0
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < 7:
            raise _corrupt(3, "truncated frame header")
        (magic,) = _UINT32.unpack_from(data, pos)
        if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
            pos = _past_skippable_frame(data, pos, 3)
            continue
        if magic != _LZ4_MAGIC:
            raise _corrupt(3, f"not an LZ4 frame (magic {magic:#010x})")
        flg, bd = data[pos + 4], data[pos + 5]
        if flg >> 6 != 1:
            raise _corrupt(3, f"LZ4 frame version {flg >> 6}")
        block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
        if block_max is None:
            raise _corrupt(3, f"LZ4 block size code {(bd >> 4) & 7}")
        if flg & 0x01:
            raise _corrupt(3, "LZ4 frame with a dictionary")
        pos += 6
        if flg & 0x08:  # content size
            if n - pos < 8:
                raise _corrupt(3, "truncated frame header")
            declared += _UINT64.unpack_from(data, pos)[0]
            pos += 8
        pos += 1  # header checksum
        blocks = []
        while True:
            if n - pos < 4:
                raise _corrupt(3, "truncated frame: no end mark")
            (size,) = _UINT32.unpack_from(data, pos)
            pos += 4
            if size == 0:
                break
            stored, size = bool(size & 0x80000000), size & 0x7FFFFFFF
            if size > block_max or pos + size > n:
                raise _corrupt(3, f"block of {size} bytes (frame block size {block_max}, {n - pos} bytes left)")
            if stored:
                declared += size
            blocks.append((stored, data[pos:pos + size]))
            pos += size + (4 if flg & 0x10 else 0)  # block checksum
        pos += 4 if flg & 0x04 else 0  # content checksum
        if pos > n:
            raise _corrupt(3, "truncated frame checksum")
        frames.append((block_max, blocks))
    out = _Output(3, max_size)
    out.declared(declared)
    for block_max, blocks in frames:
        scratch = bytearray(min(block_max, max_size + 1)) if any(not s for s, _ in blocks) else bytearray()
        for stored, block in blocks:
            if stored:
                out.add(block)
                continue
            try:
                got = cramjam.lz4.decompress_block_into(block, scratch)
            except Exception as exc:  # noqa: BLE001 - cramjam's DecompressionError: corrupt, or longer than the scratch
                if len(scratch) <= max_size:
                    raise _corrupt(3, f"{exc.__class__.__name__}: {exc}") from None
                raise _too_large(3, max_size) from None
            out.add(memoryview(scratch)[:got])
    return out.result()


# -- zstd --------------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528
_FCS_BYTES = (0, 2, 4, 8)
_DICT_ID_BYTES = (0, 1, 2, 4)


def _zstd_declared(data: memoryview) -> int:
    """The bytes zstd frames declare before decoding: their content sizes where given,
    else their raw and RLE blocks' sizes; the structure of every frame and block is
    checked (a truncated frame is CORRUPT_MESSAGE here, not a short answer later)."""
    declared = 0
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < 5:
            raise _corrupt(4, "truncated frame header")
        (magic,) = _UINT32.unpack_from(data, pos)
        if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
            pos = _past_skippable_frame(data, pos, 4)
            continue
        if magic != _ZSTD_MAGIC:
            raise _corrupt(4, f"not a zstd frame (magic {magic:#010x})")
        fhd = data[pos + 4]
        single = bool(fhd & 0x20)
        fcs_bytes = _FCS_BYTES[fhd >> 6] if (fhd >> 6 or not single) else 1
        pos += 5 + (0 if single else 1) + _DICT_ID_BYTES[fhd & 3]
        if n - pos < fcs_bytes:
            raise _corrupt(4, "truncated frame header")
        content_size = None
        if fcs_bytes:
            content_size = int.from_bytes(data[pos:pos + fcs_bytes], "little") + (256 if fcs_bytes == 2 else 0)
        pos += fcs_bytes
        blocks = 0
        while True:
            if n - pos < 3:
                raise _corrupt(4, "truncated frame: no last block")
            header = int.from_bytes(data[pos:pos + 3], "little")
            last, kind, size = header & 1, (header >> 1) & 3, header >> 3
            pos += 3
            if kind == 3:
                raise _corrupt(4, "reserved block type")
            body = 1 if kind == 1 else size
            if pos + body > n:
                raise _corrupt(4, f"block of {body} bytes overruns the {n - pos} bytes left")
            if kind != 2:  # raw and RLE blocks say what they produce
                blocks += size
            pos += body
            if last:
                break
        pos += 4 if fhd & 0x04 else 0  # content checksum
        if pos > n:
            raise _corrupt(4, "truncated frame checksum")
        declared += content_size if content_size is not None else blocks
    return declared


def _zstd_decompress(data: memoryview, max_size: int) -> bytes:
    out = _Output(4, max_size)
    out.declared(_zstd_declared(data))
    # the decoder's window is allocated, but only the output's share of it is ever written
    try:
        with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True, closefd=False) as reader:
            while chunk := reader.read(_STEP):
                out.add(chunk)
    except zstandard.ZstdError as exc:
        raise _corrupt(4, str(exc)) from None
    return out.result()


def decompress(codec: int, data: bytes | bytearray | memoryview, max_size: int | None = None) -> bytes:
    """The records section of a batch, decompressed with codec ``codec`` (0: as is).

    With ``max_size`` (the leader's check: ``max.message.bytes``) the output is produced
    step by step and refused as MESSAGE_TOO_LARGE, naming the cap, as soon as it passes
    ``max_size``: a "compression bomb" never costs more than the cap and one step (no
    buffer of the cap's size is made up front).  The sizes a stream declares (snappy's
    block lengths, LZ4's content size and stored blocks, zstd's content size and raw
    blocks) are checked before anything is decompressed.  A section that does not
    decompress is CORRUPT_MESSAGE."""
    if codec == 0:
        return data if isinstance(data, bytes) else bytes(data)
    if codec not in COMPRESSION_NAMES:
        raise _unsupported(codec)
    try:
        if max_size is None:
            if codec == 1:
                return bytes(cramjam.gzip.decompress(data))
            if codec == 2:
                return _snappy_decompress(memoryview(data), 1 << 62)
            return bytes((cramjam.lz4 if codec == 3 else cramjam.zstd).decompress(data))
        view = memoryview(data)
        if codec == 1:
            return _gzip_decompress(view, max_size)
        if codec == 2:
            return _snappy_decompress(view, max_size)
        if codec == 3:
            return _lz4_decompress(view, max_size)
        return _zstd_decompress(view, max_size)
    except KafkaError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError and ValueErrors; zlib.error
        raise _corrupt(codec, f"{exc.__class__.__name__}: {exc}") from None
