"""CreateAcls, DescribeAcls and DeleteAcls on both listeners (msgpack and Kafka).

The rules themselves are kept by :class:`~minikafka.broker.acl_store.AclStore` in
ZooKeeper; these handlers check the caller's right to see or change them (Describe or
Alter on the Cluster, as Kafka) and translate filters.  A broker without an authorizer
answers SECURITY_DISABLED, as Kafka does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable

from ..auth import acls
from ..auth.acls import CLUSTER_NAME, AclBinding, AclFilter
from ..errors import InvalidRequestError, SecurityDisabledError
from ..protocol.rpc import codec

if TYPE_CHECKING:
    from .server import Broker


def binding_of(m: dict) -> AclBinding:
    """A binding from a request map (INVALID_REQUEST for unknown words)."""
    return AclBinding.make(m["resource_type"], m["resource_name"], m["principal"], m["operation"],
                           m.get("permission") or "Allow", m.get("host") or "*", m.get("pattern_type") or "LITERAL")


def filter_of(m: dict | None) -> AclFilter:
    """A filter from a request map; nil fields (and "Any") match anything."""
    if m is None:
        return AclFilter()

    def word(name: str, choices: tuple[str, ...], what: str, extra: tuple[str, ...] = ()) -> str | None:
        value = m.get(name)
        if value is None or str(value).lower() == "any":
            return None
        return acls.canonical(value, choices + extra, what)

    principal = m.get("principal")
    return AclFilter(
        resource_type=word("resource_type", acls.RESOURCE_TYPES, "resource type"),
        resource_name=m.get("resource_name"),
        pattern_type=word("pattern_type", acls.PATTERN_TYPES, "pattern type", ("Match",)),
        principal=acls.principal(principal) if principal is not None else None,
        host=m.get("host"),
        operation=word("operation", acls.OPERATIONS, "operation"),
        permission=word("permission", acls.PERMISSIONS, "permission"),
    )


class AclHandlers:
    """The ACL APIs of one broker."""

    def __init__(self, broker: "Broker") -> None:
        self.broker = broker

    def handlers(self) -> dict[str, Callable[[dict], Awaitable[dict]]]:
        return {"create_acls": self.create_acls, "describe_acls": self.describe_acls, "delete_acls": self.delete_acls}

    def _check(self, operation: str) -> None:
        security = self.broker.security
        if not security.enabled:
            raise SecurityDisabledError("this cluster has no authorizer (set authorizer.class.name="
                                        "kafka.security.authorizer.AclAuthorizer on every broker)")
        security.require(operation, "Cluster", CLUSTER_NAME)

    async def create(self, bindings: list[AclBinding]) -> None:
        self._check("Alter")
        await self.broker.acls.create(bindings)

    async def describe(self, f: AclFilter) -> list[AclBinding]:
        self._check("Describe")
        return [b for b in await self.broker.acls.read_all() if f.matches(b)]

    async def delete(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        self._check("Alter")
        return await self.broker.acls.delete(filters)

    # -- msgpack API --------------------------------------------------------------------
    async def create_acls(self, req: dict) -> dict:
        bindings = [binding_of(m) for m in req["acls"]]  # every one checked before any is written
        if not bindings:
            raise InvalidRequestError("no ACLs given")
        await self.create(bindings)
        return codec.ok()

    async def describe_acls(self, req: dict) -> dict:
        return codec.ok(acls=[b.as_dict() for b in await self.describe(filter_of(req["filter"]))])

    async def delete_acls(self, req: dict) -> dict:
        removed = await self.delete([filter_of(f) for f in req["filters"]])
        return codec.ok(results=[{"acls": [b.as_dict() for b in bs]} for bs in removed])
