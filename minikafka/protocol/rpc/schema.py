"""A tiny schema language for msgpack messages: validation and documentation in one.

A message is a msgpack map.  Each API declares its request and response as a
:class:`Struct` of :class:`Field` entries; :func:`Struct.validate` returns a plain
dict with defaults filled in, or raises INVALID_REQUEST naming the first bad field
by its path (``partitions[2].fetch_offset``).  docs/protocol.md is generated from
these same declarations, so the reference cannot drift from the code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgpack

from ...errors import InvalidRequestError

_MISSING = object()

# Scalar type names and the Python types they accept.
_SCALARS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "str": (str,),
    "bytes": (bytes,),
    "bool": (bool,),
    "float": (int, float),
    "any": (object,),
}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Most entries an array or map of a request may hold (partitions, topics, members...):
# beyond it a request is INVALID_REQUEST before any work is done for it.
MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class Field:
    """One field: ``type`` is a scalar name, a Struct, or a one-element list ``[T]`` for arrays.

    ``nullable`` allows nil.  ``default`` makes the field optional.  ``minimum``
    bounds integers.
    """

    name: str
    type: Any
    doc: str = ""
    default: Any = _MISSING
    nullable: bool = False
    minimum: int | None = None
    maximum: int | None = None

    @property
    def required(self) -> bool:
        return self.default is _MISSING


@dataclass(frozen=True)
class Struct:
    """A map with declared fields; unknown keys are ignored (forward compatibility)."""

    name: str
    fields: tuple[Field, ...] = field(default_factory=tuple)
    doc: str = ""

    def validate(self, value: Any, path: str = "") -> dict:
        """``value`` checked against the fields, defaults filled in; INVALID_REQUEST naming
        the first bad field's path otherwise.  A compiled check runs first and keeps no
        path; only a value it refuses is walked again here to name what is wrong."""
        try:
            return _compiled(self)(value)
        except _Refused:
            pass  # walked again below, outside the handler: the error does not chain the refusal
        return self._validate(value, path)

    def _validate(self, value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            raise InvalidRequestError(f"{path or self.name}: expected a map, got {type(value).__name__}")
        out: dict = {}
        for f in self.fields:
            where = f"{path}.{f.name}" if path else f.name
            if f.name not in value:
                if f.required:
                    raise InvalidRequestError(f"missing field {where}")
                default = f.default
                out[f.name] = default() if callable(default) else default
                continue
            out[f.name] = _check(f, value[f.name], where)
        return out


def _check(f: Field, v: Any, where: str, typ: Any = None) -> Any:
    typ = f.type if typ is None else typ
    if v is None:
        if f.nullable:
            return None
        raise InvalidRequestError(f"{where}: must not be nil")
    if isinstance(typ, Struct):
        return typ._validate(v, where)
    if isinstance(typ, list):
        if not isinstance(v, (list, tuple)):
            raise InvalidRequestError(f"{where}: expected an array, got {type(v).__name__}")
        if len(v) > MAX_ENTRIES:
            raise InvalidRequestError(f"{where}: {len(v)} entries, more than the {MAX_ENTRIES} a request may hold")
        inner = Field(f.name, typ[0], minimum=f.minimum, maximum=f.maximum)
        return [_check(inner, x, f"{where}[{i}]") for i, x in enumerate(v)]
    if isinstance(typ, dict):  # {"str": "str"} map
        if not isinstance(v, dict):
            raise InvalidRequestError(f"{where}: expected a map, got {type(v).__name__}")
        if len(v) > MAX_ENTRIES:
            raise InvalidRequestError(f"{where}: {len(v)} entries, more than the {MAX_ENTRIES} a request may hold")
        (kt, vt), = typ.items()
        return {_check(Field(f.name, kt), k, f"{where} key"): _check(Field(f.name, vt), x, f"{where}[{k!r}]") for k, x in v.items()}
    allowed = _SCALARS[typ]
    if isinstance(v, msgpack.Timestamp):  # the one extension type msgpack decodes itself
        raise InvalidRequestError(f"{where}: msgpack extension types are not accepted (a timestamp)")
    if typ == "int" and isinstance(v, bool) or not isinstance(v, allowed):
        raise InvalidRequestError(f"{where}: expected {typ}, got {type(v).__name__}")
    if typ == "bytes" and isinstance(v, bytearray):
        v = bytes(v)
    if typ == "int":
        lo = INT64_MIN if f.minimum is None else f.minimum
        hi = INT64_MAX if f.maximum is None else f.maximum
        if not lo <= v <= hi:
            raise InvalidRequestError(f"{where}: {v} is out of range [{lo}, {hi}]")
    return v


class _Refused(Exception):
    """A compiled check's refusal: :meth:`Struct._validate` then names the bad field.  A new
    one each time: a raised exception keeps the frames it passed through (and the request
    in them) in its traceback, and one instance raised again keeps adding to it."""
_COMPILED: dict[int, Any] = {}  # id(Struct) -> its compiled check (Structs are module constants)


def _compiled(struct: Struct) -> Any:
    check = _COMPILED.get(id(struct))
    if check is None:
        check = _COMPILED[id(struct)] = _compile_struct(struct)
    return check


def _compile_struct(struct: Struct) -> Any:
    """One function checking a map against ``struct`` as :meth:`Struct._validate` does,
    without building a path per field: it accepts exactly the values that one accepts
    with the same result, and raises :class:`_Refused` where that one would raise (or,
    for a value of an unusual Python type, where it might)."""
    specs = tuple((f.name, f.required, f.default, callable(f.default), _compile_field(f, f.type))
                  for f in struct.fields)

    def check(value: Any) -> dict:
        if type(value) is not dict:
            raise _Refused
        out = {}
        for name, required, default, make, inner in specs:
            v = value.get(name, _MISSING)
            if v is _MISSING:
                if required:
                    raise _Refused
                out[name] = default() if make else default
            else:
                out[name] = inner(v)
        return out

    return check


def _compile_field(f: Field, typ: Any) -> Any:
    nullable = f.nullable
    if isinstance(typ, Struct):
        body = _compiled(typ)
    elif isinstance(typ, list):
        item = _compile_field(Field(f.name, typ[0], minimum=f.minimum, maximum=f.maximum), typ[0])

        def body(v: Any) -> Any:
            if type(v) is not list and type(v) is not tuple or len(v) > MAX_ENTRIES:
                raise _Refused
            return [item(x) for x in v]
    elif isinstance(typ, dict):
        (kt, vt), = typ.items()
        key, val = _compile_field(Field(f.name, kt), kt), _compile_field(Field(f.name, vt), vt)

        def body(v: Any) -> Any:
            if type(v) is not dict or len(v) > MAX_ENTRIES:
                raise _Refused
            return {key(k): val(x) for k, x in v.items()}
    elif typ == "int":
        lo = INT64_MIN if f.minimum is None else f.minimum
        hi = INT64_MAX if f.maximum is None else f.maximum

        def body(v: Any) -> Any:
            if type(v) is not int or not lo <= v <= hi:
                raise _Refused
            return v
    elif typ == "float":
        def body(v: Any) -> Any:
            if type(v) is not float and type(v) is not int:
                raise _Refused
            return v
    elif typ == "any":
        def body(v: Any) -> Any:
            if v is None or isinstance(v, msgpack.Timestamp):  # nil only where nullable (below)
                raise _Refused
            return v
    else:
        exact = _SCALARS[typ][0]  # str, bytes, bool

        def body(v: Any) -> Any:
            if type(v) is not exact:
                raise _Refused
            return v
    if not nullable:
        return body

    def maybe(v: Any) -> Any:
        return None if v is None else body(v)
    return maybe


def describe_type(typ: Any) -> str:
    """Human text for a field type, used by the generated protocol reference."""
    if isinstance(typ, Struct):
        return typ.name
    if isinstance(typ, list):
        return f"array of {describe_type(typ[0])}"
    if isinstance(typ, dict):
        (k, v), = typ.items()
        return f"map {k} -> {v}"
    return typ
