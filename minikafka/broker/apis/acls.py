"""CreateAcls, DescribeAcls and DeleteAcls on both listeners (msgpack and Kafka).

The rules themselves are kept by :class:`~minikafka.broker.acl_store.AclStore` in
ZooKeeper; these handlers check the caller's right to see or change them (Describe or
Alter on the Cluster, as Kafka) and translate filters.  A broker without an authorizer
answers SECURITY_DISABLED, as Kafka does.
"""
from __future__ import annotations

from ...auth import acls
from ...auth.acls import CLUSTER_NAME, AclBinding, AclFilter
from ...errors import InvalidRequestError, SecurityDisabledError
from ...protocol.rpc.types import (
    AclBinding as AclBindingMessage,
    AclFilter as AclFilterMessage,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteAclsResult,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from ..acl_store import AclStore
from ..security import Security
from .context import RequestContext


def binding_of(m: AclBindingMessage) -> AclBinding:
    """A binding from a request's (INVALID_REQUEST for unknown words)."""
    return AclBinding.make(m.resource_type, m.resource_name, m.principal, m.operation,
                           m.permission or "Allow", m.host or "*", m.pattern_type or "LITERAL")


def message_of(b: AclBinding) -> AclBindingMessage:
    """A binding as the msgpack API answers it."""
    return AclBindingMessage(**b.as_dict())


def filter_of(m: AclFilterMessage | None) -> AclFilter:
    """A filter from a request's; nil fields (and "Any") match anything."""
    if m is None:
        return AclFilter()

    def word(value: str | None, choices: tuple[str, ...], what: str, extra: tuple[str, ...] = ()) -> str | None:
        if value is None or str(value).lower() == "any":
            return None
        return acls.canonical(value, choices + extra, what)

    return AclFilter(
        resource_type=word(m.resource_type, acls.RESOURCE_TYPES, "resource type"),
        resource_name=m.resource_name,
        pattern_type=word(m.pattern_type, acls.PATTERN_TYPES, "pattern type", ("Match",)),
        principal=acls.principal(m.principal) if m.principal is not None else None,
        host=m.host,
        operation=word(m.operation, acls.OPERATIONS, "operation"),
        permission=word(m.permission, acls.PERMISSIONS, "permission"),
    )


class AclApis:
    """The ACL APIs of one broker: :meth:`create`, :meth:`describe` and :meth:`delete` are
    what both listeners run (the Kafka listener through its own enum codes)."""

    def __init__(self, security: Security, store: AclStore) -> None:
        self.security = security
        self.store = store

    def _check(self, operation: str, ctx: RequestContext) -> None:
        security = self.security
        if not security.enabled:
            raise SecurityDisabledError("this cluster has no authorizer (set authorizer.class.name="
                                        "kafka.security.authorizer.AclAuthorizer on every broker)")
        security.require(ctx, operation, "Cluster", CLUSTER_NAME)

    async def create(self, bindings: list[AclBinding], ctx: RequestContext) -> None:
        self._check("Alter", ctx)
        await self.store.create(bindings)

    async def describe(self, f: AclFilter, ctx: RequestContext) -> list[AclBinding]:
        self._check("Describe", ctx)
        return [b for b in await self.store.read_all() if f.matches(b)]

    async def delete(self, filters: list[AclFilter], ctx: RequestContext) -> list[list[AclBinding]]:
        self._check("Alter", ctx)
        return await self.store.delete(filters)

    # -- msgpack API --------------------------------------------------------------------
    async def create_acls(self, req: CreateAclsRequest, ctx: RequestContext) -> CreateAclsResponse:
        bindings = [binding_of(m) for m in req.acls]  # every one checked before any is written
        if not bindings:
            raise InvalidRequestError("no ACLs given")
        await self.create(bindings, ctx)
        return CreateAclsResponse()

    async def describe_acls(self, req: DescribeAclsRequest, ctx: RequestContext) -> DescribeAclsResponse:
        return DescribeAclsResponse(acls=[message_of(b) for b in await self.describe(filter_of(req.filter), ctx)])

    async def delete_acls(self, req: DeleteAclsRequest, ctx: RequestContext) -> DeleteAclsResponse:
        removed = await self.delete([filter_of(f) for f in req.filters], ctx)
        return DeleteAclsResponse(results=[DeleteAclsResult(acls=[message_of(b) for b in bs]) for bs in removed])
