"""The transactional invariants of a consume-transform-produce run (exactly-once).

The copiers of :mod:`minikafka.chaos.copier` read input records ``in-<i>`` with
read_committed and, for each, write two output records, one to the output partition of
the same number and one to the next, tagged with the copier's transactional id and its
transaction attempt (``in-<i>|<transactional id>|<attempt>``), and commit the input
offsets inside the same transaction.  After the run, with what read_committed returns
from the output topic and the group's committed input offsets:

* **Offsets commit exactly with their outputs.** Every input record below its
  partition's committed offset has its outputs; none at or above it has any.
* **All or nothing.** The outputs of one input come from one transaction, both of them,
  each once: a transaction is visible in every partition it touched or in none.
* **No aborted data.** No visible output carries an attempt that was aborted.

Pure: the caller gathers what it checks.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SHOWN = 10


def output_value(input_value: str, transactional_id: str, attempt: int) -> str:
    """The output record a copier writes for ``input_value`` in transaction ``attempt``."""
    return f"{input_value}|{transactional_id}|{attempt}"


def parse_output(value: str) -> tuple[str, str, int] | None:
    """``(input value, transactional id, attempt)`` of an output record, None when malformed."""
    parts = value.rsplit("|", 2)
    if len(parts) != 3 or not parts[2].isdigit():
        return None
    return parts[0], parts[1], int(parts[2])


@dataclass
class TxnVerdict:
    """What the transactional checks found (each list holds a description per violation)."""

    committed_inputs: int = 0
    outputs: int = 0
    missing: list[str] = field(default_factory=list)  # committed input without its outputs
    uncommitted_visible: list[str] = field(default_factory=list)  # output of an input above the committed offset
    partial: list[str] = field(default_factory=list)  # a transaction visible in only some partitions
    duplicated: list[str] = field(default_factory=list)  # an input's outputs from several transactions, or twice
    aborted_visible: list[str] = field(default_factory=list)  # an output of an aborted attempt
    malformed: list[str] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return (len(self.missing) + len(self.uncommitted_visible) + len(self.partial) + len(self.duplicated)
                + len(self.aborted_visible) + len(self.malformed))

    @property
    def ok(self) -> bool:
        return self.violations == 0

    def problems(self, shown: int = SHOWN) -> list[str]:
        out = []
        for name, items in (("committed input without its outputs", self.missing),
                            ("output of an uncommitted input", self.uncommitted_visible),
                            ("transaction visible in only some partitions", self.partial),
                            ("input copied more than once", self.duplicated),
                            ("output of an aborted transaction visible", self.aborted_visible),
                            ("malformed output record", self.malformed)):
            if items:
                out.append(f"{len(items)} × {name}: {'; '.join(items[:shown])}")
        return out


def check_transactions(inputs: dict[int, list[str]], committed: dict[int, int], outputs: dict[int, list[str]],
                       output_partitions: int, aborted: set[tuple[str, int]]) -> TxnVerdict:
    """Check a run: ``inputs`` partition -> input values by offset; ``committed`` the
    group's committed offset per input partition; ``outputs`` output partition -> the
    values read_committed returns; ``aborted`` the ``(transactional id, attempt)``
    pairs whose abort completed."""
    v = TxnVerdict()
    # input value -> [(output partition, transactional id, attempt)]
    seen: dict[str, list[tuple[int, str, int]]] = {}
    for p, values in sorted(outputs.items()):
        for value in values:
            v.outputs += 1
            parsed = parse_output(value)
            if parsed is None:
                v.malformed.append(f"partition {p}: {value!r}")
                continue
            source, tid, attempt = parsed
            if (tid, attempt) in aborted:
                v.aborted_visible.append(f"{value!r} in partition {p}")
            seen.setdefault(source, []).append((p, tid, attempt))
    for p, values in sorted(inputs.items()):
        upto = committed.get(p, 0)
        for offset, value in enumerate(values):
            got = seen.pop(value, [])
            if offset >= upto:
                if got:
                    v.uncommitted_visible.append(f"input {p}@{offset} {value!r} (committed offset {upto}) "
                                                 f"copied as {got}")
                continue
            v.committed_inputs += 1
            want = {p % output_partitions, (p + 1) % output_partitions}
            if not got:
                v.missing.append(f"input {p}@{offset} {value!r}")
                continue
            txns = {(tid, attempt) for _, tid, attempt in got}
            if len(txns) > 1 or len(got) > len(want):
                v.duplicated.append(f"input {p}@{offset} {value!r}: {sorted(got)}")
            elif {q for q, _, _ in got} != want:
                v.partial.append(f"input {p}@{offset} {value!r}: only in output partitions "
                                 f"{sorted(q for q, _, _ in got)} of {sorted(want)}")
    for value, got in sorted(seen.items()):
        v.malformed.append(f"output of an unknown input {value!r}: {got}")
    return v
