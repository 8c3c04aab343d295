"""Kafka's record batch v2, byte for byte: the format the producer writes, the leader
checks and stores, and followers, consumers and the Spark source read.

* :mod:`.batch`: the 61-byte batch header; encode, check, stamp, split and decode batches.
* :mod:`.section`: the records section after the header: its encoder and the one
  parser that the leader's check, the consumer and the Spark source all go through.
* :mod:`.varint`: the zigzag varints of the records.
* :mod:`.compression`: Kafka's codecs (gzip, snappy, lz4, zstd) for a records section.
* :mod:`.columns`: the batches of a fetch answer by header, and same-shaped records
  cut into numpy columns (the Spark source).

The names a batch's users need are re-exported here.
"""
from .batch import (
    COMPRESSION_MASK,
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
    encode_batch,
    iter_records,
    read_header,
    rewrite_batch,
    split_batches,
    stamp,
    validate_batch,
    validate_records,
)
from .compression import COMPRESSION_CODECS, COMPRESSION_NAMES, COMPRESSION_TYPES, compress, decompress

__all__ = [
    "COMPRESSION_CODECS", "COMPRESSION_MASK", "COMPRESSION_NAMES", "COMPRESSION_TYPES", "CONTROL_MASK",
    "CRC_START", "HEADER", "HEADER_SIZE", "LENGTH_OVERHEAD", "MAGIC", "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_MASK", "BatchHeader", "Record", "batch_records", "compress", "decompress", "encode_batch",
    "iter_records", "read_header", "rewrite_batch", "split_batches", "stamp", "validate_batch",
    "validate_records",
]
