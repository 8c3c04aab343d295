"""Generate :mod:`minikafka.protocol.rpc.types` from the API declarations:
``python -m minikafka.protocol.rpc.gen_types`` (tests/unit/test_rpc_types.py checks it is current).

Every request and response :class:`~.schema.Struct` of :data:`~.messages.APIS` becomes a
slotted, keyword-only dataclass of the same name and fields, with a
``decode_<Name>(map)`` that builds it from a validated map and an ``encode_<Name>(obj)``
that turns it back into the map the wire carries.  Error fields are not data: the three
top-level fields (``error_code``, ``error``, ``message``) of a response become
an ``error: KafkaError | None`` of the response (most handlers raise instead: a raised
:class:`~minikafka.errors.KafkaError` is answered as the top-level error), and the three
per-entry fields become the entry's ``error``; both are expanded again when encoded.
"""
from __future__ import annotations

import sys
from typing import Any

from .messages import APIS, PARTITION_ERROR, TOP_LEVEL
from .schema import Field, Struct

_SCALAR = {"int": "int", "str": "str", "bytes": "bytes", "bool": "bool", "float": "float", "any": "Any"}
_ERROR_NAMES = tuple(f.name for f in PARTITION_ERROR)


def _error_set(s: Struct) -> tuple[Field, ...]:
    """The error fields ``s`` carries (a response's top-level ones or an entry's), or ()."""
    for group in (TOP_LEVEL, PARTITION_ERROR):
        if all(any(f is e for f in s.fields) for e in group):
            return group
    return ()


def _has_error(s: Struct) -> bool:
    return bool(_error_set(s))


def _data_fields(s: Struct) -> list[Field]:
    skip = _error_set(s)
    return [f for f in s.fields if not any(f is x for x in skip)]


def _annotation(typ: Any) -> str:
    if isinstance(typ, Struct):
        return typ.name
    if isinstance(typ, list):
        return f"list[{_annotation(typ[0])}]"
    if isinstance(typ, dict):
        (k, v), = typ.items()
        return f"dict[{_annotation(k)}, {_annotation(v)}]"
    return _SCALAR[typ]


def _default(f: Field) -> str:
    d = f.default
    if callable(d):
        return f"field(default_factory={d.__name__})"
    if isinstance(d, (list, dict)):
        if d:
            raise ValueError(f"{f.name}: only empty list/dict defaults are supported")
        return f"field(default_factory={type(d).__name__})"
    return repr(d)


def _needs_conversion(typ: Any) -> bool:
    if isinstance(typ, Struct):
        return True
    if isinstance(typ, list):
        return _needs_conversion(typ[0])
    if isinstance(typ, dict):
        return _needs_conversion(next(iter(typ.values())))
    return False


def _convert(expr: str, typ: Any, way: str, depth: int = 0) -> str:
    """Source that converts ``expr`` of type ``typ`` (``way`` is decode or encode)."""
    if isinstance(typ, Struct):
        return f"{way}_{typ.name}({expr})"
    if isinstance(typ, list) and _needs_conversion(typ[0]):
        v = f"x{depth}"
        return f"[{_convert(v, typ[0], way, depth + 1)} for {v} in {expr}]"
    if isinstance(typ, dict) and _needs_conversion(next(iter(typ.values()))):
        k, v = f"k{depth}", f"v{depth}"
        return f"{{{k}: {_convert(v, next(iter(typ.values())), way, depth + 1)} for {k}, {v} in {expr}.items()}}"
    return expr


def _field_value(f: Field, source: str, way: str) -> str:
    conv = _convert(source, f.type, way)
    if conv != source and f.nullable:
        return f"None if {source} is None else {conv}"
    return conv


def _structs() -> list[Struct]:
    """Every Struct reachable from the APIs, dependencies first, each name once."""
    seen: dict[str, Struct] = {}

    def visit(typ: Any) -> None:
        if isinstance(typ, Struct):
            for f in typ.fields:
                visit(f.type)
            known = seen.get(typ.name)
            if known is not None and known.fields != typ.fields:
                raise ValueError(f"two different structs named {typ.name}")
            seen.setdefault(typ.name, typ)
        elif isinstance(typ, list):
            visit(typ[0])
        elif isinstance(typ, dict):
            visit(next(iter(typ.values())))

    for api in APIS.values():
        visit(api.request)
        visit(api.response)
    return list(seen.values())


def _request_apis() -> dict[str, tuple[str, str]]:
    """Request struct name -> (its API's name, its response struct's name)."""
    out: dict[str, tuple[str, str]] = {}
    for name, api in APIS.items():
        if api.request.name in out:
            raise ValueError(f"{api.request.name} is the request of two APIs")
        out[api.request.name] = (name, api.response.name)
    return out


def _class(s: Struct) -> str:
    fields = _data_fields(s)
    error = _has_error(s)
    api = _request_apis().get(s.name)
    base = f"(Request[{api[1]!r}])" if api else ""
    lines = ["", "", "", "@dataclass(slots=True, kw_only=True)", f"class {s.name}{base}:"]
    doc = s.doc or f"The msgpack API's {s.name}."
    lines.append(f'    """{doc}"""')
    if api:
        lines.append(f"    API: ClassVar[str] = {api[0]!r}")
    if not fields and not error and not api:
        lines.append("")
    for f in fields:
        ann = _annotation(f.type) + (" | None" if f.nullable else "")
        lines.append(f"    {f.name}: {ann}" + ("" if f.required else f" = {_default(f)}"))
    if error:
        lines.append("    error: KafkaError | None = None")
    return "\n".join(lines)


def _decoder(s: Struct) -> str:
    fields = _data_fields(s)
    lines = ["", "", "", f"def decode_{s.name}(m: dict) -> {s.name}:"]
    args = [f"{f.name}={_field_value(f, repr(f.name).join(('m[', ']')), 'decode')}" for f in fields]
    if _has_error(s):
        args.append("error=_error_of(m)")
    lines.append(f"    return {s.name}(" + ", ".join(args) + ")")
    return "\n".join(lines)


def _encoder(s: Struct) -> str:
    fields = _data_fields(s)
    lines = ["", "", "", f"def encode_{s.name}(o: {s.name}) -> dict:"]
    items = [f"{f.name!r}: {_field_value(f, 'o.' + f.name, 'encode')}" for f in fields]
    if _has_error(s):
        items.append("**_error_fields(o.error)")
    lines.append("    return {" + ", ".join(items) + "}")
    return "\n".join(lines)


HEADER = '''"""The request layer's typed messages: one dataclass per request and response of the
msgpack API, with the functions that build them from validated maps and turn them back.

Generated from :mod:`minikafka.protocol.rpc.messages` by
``python -m minikafka.protocol.rpc.gen_types``; do not edit by hand.
"""
# fmt: off
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Generic, TypeVar

from ...errors import KafkaError, error_class

R = TypeVar("R")


class Request(Generic[R]):
    """A request of the msgpack API whose answer decodes to an ``R`` (its response
    dataclass); ``API`` is its name in ``POST /v1/<api>``.  ``minikafka.rpc.request``
    sends one and returns the typed answer."""
    __slots__ = ()
    API: ClassVar[str]


def _error_of(m: dict) -> KafkaError | None:
    code = m.get("error_code", 0)
    return None if not code else error_class(m["error"])(m.get("message", ""))


def _error_fields(exc: KafkaError | None) -> dict:
    if exc is None:
        return {"error_code": 0, "error": "NONE", "message": ""}
    return {"error_code": exc.code.code, "error": exc.code.name, "message": exc.message}
'''


def render() -> str:
    """The source of minikafka/protocol/rpc/types.py."""
    parts = [HEADER]
    for s in _structs():
        parts.append(_class(s))
        parts.append(_decoder(s))
        parts.append(_encoder(s))
    parts.append("\n\n\n# Each API's request decoder and response encoder, by its name in ``POST /v1/<api>``.\n")
    parts.append("DECODE_REQUEST: dict[str, Callable[[dict], Any]] = {\n" + "".join(f"    {n!r}: decode_{a.request.name},\n" for n, a in APIS.items()) + "}\n")
    parts.append("ENCODE_RESPONSE: dict[str, Callable[[Any], dict]] = {\n" + "".join(f"    {n!r}: encode_{a.response.name},\n" for n, a in APIS.items()) + "}\n")
    parts.append("\n# The caller's side: each API's request encoder and response decoder, by name.\n")
    parts.append("ENCODE_REQUEST: dict[str, Callable[[Any], dict]] = {\n" + "".join(f"    {n!r}: encode_{a.request.name},\n" for n, a in APIS.items()) + "}\n")
    parts.append("DECODE_RESPONSE: dict[str, Callable[[dict], Any]] = {\n" + "".join(f"    {n!r}: decode_{a.response.name},\n" for n, a in APIS.items()) + "}\n")
    return "".join(parts)


if __name__ == "__main__":
    sys.stdout.write(render())
