"""Versioned message schemas for Kafka's binary protocol: declare once, encode and decode.

A schema is a :class:`Struct` of :class:`Field` entries.  Each field says in which
API versions it exists (``"0+"``, ``"3-7"``), in which versions it may be null, and
its type: ``int8``, ``int16``, ``int32``, ``int64``, ``uint16``, ``float64``,
``bool``, ``string``, ``bytes``, ``records`` (a blob of record batches: read as None
when null, never written null, see below),
``uuid``, a nested :class:`Struct`, or a one-element list ``[T]`` for an array.
That is the notation of Kafka's own JSON message definitions, so a field can be
checked against them by eye.

Decoding returns plain dicts keyed by snake_case field names; a field absent from
the request's version takes its default, so handlers read every field the same way
whatever the version.  Encoding takes such dicts (missing keys take defaults) and
skips fields absent from the version.  In flexible versions (KIP-482) strings,
bytes and arrays use compact lengths and every struct ends with a tagged-field
section; unknown tagged fields are skipped on decode and none are written.

A ``records`` field is written as an empty blob when its value is None or missing,
whatever its schema's nullable versions say: Kafka's brokers answer a partition with
an error with ``MemoryRecords.EMPTY`` (a zero length), and librdkafka refuses a null
records field as a parse failure ("invalid MessageSetSize -1") and fetches again at
once, so a consumer of an offline partition would never see the partition's error.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .wire import MalformedFrame, Reader, Writer

MAX_VERSION = 0x7FFF


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``Versions.parse("3+")``, ``"0-4"``, ``"none"``."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, spec: str) -> "Versions":
        spec = spec.strip()
        if spec == "none":
            return cls(1, 0)
        if spec.endswith("+"):
            return cls(int(spec[:-1]), MAX_VERSION)
        if "-" in spec:
            lo, hi = spec.split("-")
            return cls(int(lo), int(hi))
        return cls(int(spec), int(spec))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def __str__(self) -> str:
        if self.lo > self.hi:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


SCALAR_DEFAULTS: dict[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "float64": 0.0,
    "bool": False, "string": "", "bytes": b"", "records": None, "uuid": None,
}


@dataclass(frozen=True)
class Field:
    """One field of a schema (see the module docstring for the type names)."""

    name: str
    type: Any
    versions: Versions
    nullable: Versions
    default: Any
    doc: str = ""

    def default_value(self) -> Any:
        if self.default is not _UNSET:
            return self.default
        if isinstance(self.type, list):
            return []
        if isinstance(self.type, Struct):
            return None
        return SCALAR_DEFAULTS[self.type]


_UNSET = object()


def F(name: str, type: Any, versions: str = "0+", nullable: str = "none", default: Any = _UNSET, doc: str = "") -> Field:
    """Declare a field: ``F("leader_epoch", "int32", "7+", default=-1)``."""
    if isinstance(type, list) and len(type) != 1:
        raise ValueError(f"array field {name} needs exactly one element type")
    return Field(name, type, Versions.parse(versions), Versions.parse(nullable), default, doc)


@dataclass(frozen=True)
class Struct:
    """A sequence of fields, encoded in order."""

    name: str
    fields: tuple[Field, ...]
    _plans: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def _plan(self, version: int) -> tuple[tuple[Field, bool, bool], ...]:
        """``(field, present, nullable)`` for every field at ``version`` (cached)."""
        plan = self._plans.get(version)
        if plan is None:
            plan = tuple((f, version in f.versions, version in f.nullable) for f in self.fields)
            self._plans[version] = plan
        return plan

    # -- decode -----------------------------------------------------------------
    def decode(self, r: Reader, version: int, flexible: bool) -> dict:
        """Read this struct at ``version``; absent fields get their defaults."""
        out: dict[str, Any] = {}
        for f, present, nullable in self._plan(version):
            if present:
                out[f.name] = _decode_value(r, f.type, version, flexible, nullable, f.name)
            else:
                out[f.name] = f.default_value()
        if flexible:
            r.skip_tagged_fields()
        return out

    # -- encode -----------------------------------------------------------------
    def encode(self, w: Writer, value: dict, version: int, flexible: bool) -> None:
        """Write ``value`` at ``version``; missing keys take the field's default."""
        for f, present, nullable in self._plan(version):
            if not present:
                continue
            v = value.get(f.name, _UNSET)
            if v is _UNSET:
                v = f.default_value()
            _encode_value(w, f.type, v, version, flexible, nullable, f.name)
        if flexible:
            w.empty_tagged_fields()


def _decode_value(r: Reader, t: Any, version: int, flexible: bool, nullable: bool, name: str) -> Any:
    if isinstance(t, str):
        dec = _SCALAR_DECODERS.get(t)
        if dec is not None:
            return dec(r)
        if t == "string":
            return r.compact_string(nullable) if flexible else r.string(nullable)
        if t in ("bytes", "records"):
            return r.compact_bytes(nullable or t == "records") if flexible else r.bytes_(nullable or t == "records")
        raise ValueError(f"unknown type {t!r} of field {name}")
    if isinstance(t, Struct):
        return t.decode(r, version, flexible)
    n = r.array_length(flexible)
    if n < 0:
        if not nullable:
            raise MalformedFrame(f"null array {name} where one is required")
        return None
    elem = t[0]
    return [_decode_value(r, elem, version, flexible, False, name) for _ in range(n)]


def _encode_value(w: Writer, t: Any, v: Any, version: int, flexible: bool, nullable: bool, name: str) -> None:
    if isinstance(t, str):
        enc = _SCALAR_ENCODERS.get(t)
        if enc is not None:
            enc(w, v)
        elif t == "string":
            (w.compact_string if flexible else w.string)(v)
        elif t == "bytes":
            (w.compact_bytes if flexible else w.bytes_)(v)
        elif t == "records":  # never null on the wire (module docstring)
            (w.compact_bytes if flexible else w.bytes_)(b"" if v is None else v)
        else:
            raise ValueError(f"unknown type {t!r} of field {name}")
        return
    if isinstance(t, Struct):
        t.encode(w, v, version, flexible)
        return
    if v is None:
        w.array_length(None if nullable else 0, flexible)
        return
    w.array_length(len(v), flexible)
    elem = t[0]
    for item in v:
        _encode_value(w, elem, item, version, flexible, False, name)


_SCALAR_DECODERS: dict[str, Callable[[Reader], Any]] = {
    "int8": Reader.int8, "int16": Reader.int16, "int32": Reader.int32, "int64": Reader.int64,
    "uint16": Reader.uint16, "float64": Reader.float64, "bool": Reader.bool, "uuid": Reader.uuid,
}
_SCALAR_ENCODERS: dict[str, Callable[[Writer, Any], None]] = {
    "int8": Writer.int8, "int16": Writer.int16, "int32": Writer.int32, "int64": Writer.int64,
    "uint16": Writer.uint16, "float64": Writer.float64, "bool": Writer.bool, "uuid": Writer.uuid,
}


def S(name: str, *fields: Field) -> Struct:
    """Declare a struct."""
    return Struct(name, tuple(fields))
