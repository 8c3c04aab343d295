"""Kafka's record batch v2, byte for byte: the format the producer writes, the leader
checks and stores, and followers, consumers and the Spark source read.

* :mod:`.batch`: the 61-byte batch header; encode, check, stamp, split and decode batches.
* :mod:`.columns`: the batches of a fetch answer by header, for column-wise decoding.

The public names of :mod:`.batch` are re-exported here.
"""
from .batch import (
    COMPRESSION_CODECS,
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    COMPRESSION_TYPES,
    CONTROL_MASK,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LENGTH_OVERHEAD,
    MAGIC,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    Record,
    batch_records,
    compress,
    decompress,
    encode_batch,
    iter_records,
    read_header,
    rewrite_batch,
    split_batches,
    stamp,
    validate_batch,
    validate_records,
)

__all__ = [
    "COMPRESSION_CODECS", "COMPRESSION_MASK", "COMPRESSION_NAMES", "COMPRESSION_TYPES", "CONTROL_MASK",
    "CRC_START", "HEADER", "HEADER_SIZE", "LENGTH_OVERHEAD", "MAGIC", "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK", "BatchHeader", "Record", "batch_records", "compress", "decompress", "encode_batch",
    "iter_records", "read_header", "rewrite_batch", "split_batches", "stamp", "validate_batch",
    "validate_records",
]
