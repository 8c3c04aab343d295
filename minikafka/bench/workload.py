"""The records the scenarios send: ``records`` values of ``value_size`` printable bytes.

Values are text without newlines so that kcat, which reads one record per line, sends
exactly the same records as our Python producer.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass

from ..protocol.records.batch import encode_batch

# The producer's default batch.size: the yardsticks send batches of this size too.
BATCH_SIZE = 65536
# Per-record overhead in a v2 batch for a small record without key (length, attributes,
# deltas, key and value lengths, header count).
RECORD_OVERHEAD = 8


@dataclass
class Workload:
    """``records`` values of ``value_size`` bytes; ``value`` is the one value all records carry."""

    records: int
    value_size: int

    def __post_init__(self) -> None:
        self.value = os.urandom(self.value_size // 2 + 1).hex()[: self.value_size].encode()
        self._file: str | None = None

    @property
    def mb(self) -> float:
        return self.records * self.value_size / 1e6

    def lines_file(self) -> str:
        """A file of ``records`` lines, one value each (kcat -P -l)."""
        if self._file is None:
            fd, path = tempfile.mkstemp(prefix="minikafka-bench-", suffix=".txt")
            with os.fdopen(fd, "wb") as f:
                line = self.value + b"\n"
                chunk = 10_000
                for start in range(0, self.records, chunk):
                    f.write(line * min(chunk, self.records - start))
            self._file = path
        return self._file

    def batches(self) -> list[bytes]:
        """The records as ~``BATCH_SIZE`` record batches, as a producer would send them."""
        per_batch = max(1, BATCH_SIZE // (self.value_size + RECORD_OVERHEAD))
        full = encode_batch([(None, self.value, (), 0)] * per_batch)
        out = [full] * (self.records // per_batch)
        rest = self.records % per_batch
        if rest:
            out.append(encode_batch([(None, self.value, (), 0)] * rest))
        return out

    def close(self) -> None:
        if self._file is not None:
            try:
                os.unlink(self._file)
            except OSError:
                pass
            self._file = None


def kcat_path() -> str | None:
    """kcat (or its older name kafkacat) when installed."""
    return shutil.which("kcat") or shutil.which("kafkacat")
