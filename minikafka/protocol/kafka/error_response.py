"""Kafka's answer to a whole request that failed with one error (no I/O).

Kafka answers a request it could not handle with the request's own response shape,
every error field set to the error (``AbstractRequest.getErrorResponse``): the
top-level ``error_code`` where the response has one, and each entry the request named
(a topic, a partition, a resource, an ACL creation) answered with it, so that the client
sees a per-entry error it knows how to retry rather than a closed connection.

:func:`error_response` builds that answer from the schemas of :mod:`.apis`: the
response's fields at the request's version, entries mirrored from the request's array
at the same place (by name, else the one array there), their key fields copied by name
(``name``/``topic``, ``partition_index``/``partition``/``index``, ``resource_type``,
``resource_name``, ``topic_id``, ``group_id``...), everything else at its default.
"""
from __future__ import annotations

from typing import Any

from .apis import KafkaApi
from .schema import Field, Struct

# the key fields of a response entry, and the names the same value has in requests
_KEY_ALIASES: dict[str, tuple[str, ...]] = {
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "partition_index": ("partition_index", "partition", "index"),
    "partition": ("partition", "partition_index", "index"),
    "index": ("index", "partition_index", "partition"),
    "partition_id": ("partition_id", "partition", "partition_index"),
    "topic_id": ("topic_id",),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
    "group_id": ("group_id",),
    "key": ("key",),
    "member_id": ("member_id",),
    "group_instance_id": ("group_instance_id",),
    "transactional_id": ("transactional_id",),
}


def _is_error_code(name: str) -> bool:
    return name == "error_code" or name.endswith("_error_code")  # partition_error_code (AddPartitionsToTxn)


def error_response(api: KafkaApi, version: int, request: dict, code: int, message: str | None) -> dict | None:
    """The response to ``request`` (decoded at ``version``) that failed as a whole with error
    ``code``; None when the response has no place for an error at that version (the
    connection is then closed, as Kafka does when it cannot answer)."""
    if not _carries_error(api.response, version):
        return None
    return _entry(api.response, api.request, request, version, code, message, top=True)


def _present(struct: Struct, version: int) -> list[Field]:
    return [f for f in struct.fields if version in f.versions]


def _element_struct(f: Field) -> Struct | None:
    t = f.type
    if isinstance(t, list) and isinstance(t[0], Struct):
        return t[0]
    return None


def _carries_error(struct: Struct, version: int) -> bool:
    """Whether ``struct`` or an array of entries in it has an ``error_code`` at ``version``."""
    for f in _present(struct, version):
        if _is_error_code(f.name):
            return True
        elem = _element_struct(f)
        if elem is not None and _carries_error(elem, version):
            return True
    return False


def _source(request_struct: Struct | None, value: Any, name: str, version: int) -> list | None:
    """The request's array that the response's array ``name`` answers entry by entry: the
    one of the same name, else the only array of the request struct; None when there is none."""
    if request_struct is None or not isinstance(value, dict):
        return None
    arrays = [f for f in _present(request_struct, version) if isinstance(f.type, list)]
    chosen = next((f for f in arrays if f.name == name), arrays[0] if len(arrays) == 1 else None)
    if chosen is None:
        return None
    items = value.get(chosen.name)
    return items if isinstance(items, list) else []


def _request_element(request_struct: Struct | None, name: str, version: int) -> Struct | None:
    if request_struct is None:
        return None
    arrays = [f for f in _present(request_struct, version) if isinstance(f.type, list)]
    chosen = next((f for f in arrays if f.name == name), arrays[0] if len(arrays) == 1 else None)
    return _element_struct(chosen) if chosen is not None else None


def _entry(struct: Struct, request_struct: Struct | None, value: Any, version: int, code: int,
           message: str | None, top: bool = False) -> dict:
    """One struct of the answer, mirroring ``value`` (the request's matching struct, a bare
    name or number for an array of them, or None).  Key fields are copied into entries, not
    into the response itself (its other fields keep their defaults, as Kafka's do)."""
    out: dict[str, Any] = {}
    scalar_done = False
    for f in _present(struct, version):
        if _is_error_code(f.name):
            out[f.name] = code
        elif f.name == "error_message":
            out[f.name] = message
        elif isinstance(f.type, list):
            elem = _element_struct(f)
            if elem is not None and _carries_error(elem, version):
                items = _source(request_struct, value, f.name, version) or []
                inner = _request_element(request_struct, f.name, version)
                out[f.name] = [_entry(elem, inner, item, version, code, message) for item in items]
        elif top or f.name not in _KEY_ALIASES:
            continue
        elif isinstance(value, dict):
            for alias in _KEY_ALIASES[f.name]:
                if alias in value and _same_kind(f, value[alias]):
                    out[f.name] = value[alias]
                    break
        elif not scalar_done and value is not None and _same_kind(f, value):
            # an array of names or numbers in the request (DeleteTopics v0-5, DescribeGroups,
            # AddPartitionsToTxn's partitions): the entry's first key of that kind
            out[f.name] = value
            scalar_done = True
    return out


def _same_kind(f: Field, v: Any) -> bool:
    """Whether a request's value may stand in a response field of ``f``'s type."""
    if f.type == "string":
        return isinstance(v, str)
    if f.type in ("int8", "int16", "int32", "int64", "uint16"):
        return isinstance(v, int) and not isinstance(v, bool)
    if f.type == "bool":
        return isinstance(v, bool)
    if f.type == "uuid":
        return v is not None
    return False
