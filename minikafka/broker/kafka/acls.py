"""DescribeAcls, CreateAcls and DeleteAcls on the Kafka listener.

Kafka's numeric enums (ResourceType, PatternType, AclOperation, AclPermissionType) are
turned into the words of :mod:`minikafka.auth.acls` and the work is done by
:class:`~minikafka.broker.apis.acls.AclApis`, as for the msgpack API.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...auth import acls
from ...auth.acls import AclBinding, AclFilter
from ...errors import InvalidRequestError, KafkaError
from ..apis.acls import AclApis

if TYPE_CHECKING:
    from .connection import Connection

_NAMES = {
    "resource_type": {v: k for k, v in acls.RESOURCE_TYPE_CODES.items()},
    "pattern_type": {v: k for k, v in acls.PATTERN_TYPE_CODES.items()},
    "operation": {v: k for k, v in acls.OPERATION_CODES.items()},
    "permission": {v: k for k, v in acls.PERMISSION_CODES.items()},
}


def _word(kind: str, code: int, any_ok: bool) -> str | None:
    """A Kafka enum code as a word; None for ANY (and MATCH's caller handles it)."""
    name = _NAMES[kind].get(code)
    if name is None or (name == "Any" and not any_ok):
        raise InvalidRequestError(f"unknown or unusable {kind.replace('_', ' ')} code {code}")
    return None if name == "Any" else name


def _required(kind: str, code: int) -> str:
    """A Kafka enum code as a word, where ANY is not allowed (a binding to create)."""
    word = _word(kind, code, False)
    assert word is not None
    return word


def _error(exc: KafkaError | None) -> dict:
    return {"error_code": exc.code.code if exc else 0, "error_message": exc.message if exc else None}


def _filter(f: dict) -> AclFilter:
    return AclFilter(
        resource_type=_word("resource_type", f["resource_type_filter"], True),
        resource_name=f["resource_name_filter"],
        pattern_type=_word("pattern_type", f["pattern_type_filter"], True),
        principal=f["principal_filter"], host=f["host_filter"],
        operation=_word("operation", f["operation"], True),
        permission=_word("permission", f["permission_type"], True))


def _codes(b: AclBinding) -> dict:
    return {"resource_type": acls.RESOURCE_TYPE_CODES[b.resource_type], "resource_name": b.resource_name,
            "pattern_type": acls.PATTERN_TYPE_CODES[b.pattern_type], "principal": b.principal, "host": b.host,
            "operation": acls.OPERATION_CODES[b.operation], "permission_type": acls.PERMISSION_CODES[b.permission]}


class KafkaAcls:
    """The ACL APIs of the Kafka listener."""

    def __init__(self, api: AclApis) -> None:
        self.api = api

    async def describe_acls(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            found = await self.api.describe(_filter(req), conn.context())
        except KafkaError as exc:
            return {**_error(exc), "resources": []}
        groups: dict[tuple[str, str, str], list[AclBinding]] = {}
        for b in found:
            groups.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
        return {**_error(None), "resources": [
            {"resource_type": acls.RESOURCE_TYPE_CODES[t], "resource_name": n, "pattern_type": acls.PATTERN_TYPE_CODES[p],
             "acls": [{k: v for k, v in _codes(b).items() if k in ("principal", "host", "operation", "permission_type")}
                      for b in bs]}
            for (t, n, p), bs in sorted(groups.items())]}

    async def create_acls(self, version: int, req: dict, conn: "Connection") -> dict:
        results: list[dict] = []
        good: list[AclBinding] = []
        for c in req["creations"]:
            try:
                good.append(AclBinding.make(
                    _required("resource_type", c["resource_type"]), c["resource_name"], c["principal"],
                    _required("operation", c["operation"]), _required("permission", c["permission_type"]),
                    c["host"], _required("pattern_type", c["resource_pattern_type"])))
                results.append(_error(None))
            except KafkaError as exc:
                results.append(_error(exc))
        if good:
            try:
                await self.api.create(good, conn.context())
            except KafkaError as exc:
                results = [r if r["error_code"] else _error(exc) for r in results]
        return {"results": results}

    async def delete_acls(self, version: int, req: dict, conn: "Connection") -> dict:
        try:
            filters = [_filter(f) for f in req["filters"]]
            removed = await self.api.delete(filters, conn.context())
        except KafkaError as exc:
            return {"filter_results": [{**_error(exc), "matching_acls": []} for _ in req["filters"]]}
        return {"filter_results": [{**_error(None), "matching_acls": [{**_error(None), **_codes(b)} for b in bs]}
                                   for bs in removed]}
