"""ACLs and the decision whether a principal may do something (Kafka's AclAuthorizer).

Pure: no I/O.  :class:`AclBinding` is one rule ("User:alice may Read Topic orders
from any host"); :class:`Authorizer` holds the rules and answers
:meth:`Authorizer.authorize` as Kafka's AclAuthorizer does:

* super users (``super.users``) may do everything;
* a matching Deny wins over any Allow;
* an Allow of the operation, or of an operation that implies it, allows: Read, Write,
  Delete and Alter imply Describe, AlterConfigs implies DescribeConfigs, All implies
  everything;
* a resource no rule names at all is allowed only with
  ``allow.everyone.if.no.acl.found=true``.

Rules match a resource by its exact name (LITERAL), by ``*`` (every resource of the
type) or by a name prefix (PREFIXED); a principal by name or ``User:*``; a host by
address or ``*``.  How the rules are kept in ZooKeeper (Kafka 2.x's ``/kafka-acl``
layout) is :func:`acls_to_znode` / :func:`acls_from_znode`; the broker side that
watches them is :mod:`minikafka.broker.acl_store`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from ..errors import InvalidRequestError

RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId")
OPERATIONS = ("All", "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction",
              "DescribeConfigs", "AlterConfigs", "IdempotentWrite")
PERMISSIONS = ("Allow", "Deny")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name, as in Kafka
WILDCARD = "*"
ANONYMOUS = "User:ANONYMOUS"

# Kafka's implied operations: an Allow of the key also allows these.
_IMPLIES = {"Read": ("Describe",), "Write": ("Describe",), "Delete": ("Describe",), "Alter": ("Describe",),
            "AlterConfigs": ("DescribeConfigs",)}

# The numeric codes of Kafka's CreateAcls / DescribeAcls / DeleteAcls (AclOperation,
# ResourceType, AclPermissionType, PatternType).
OPERATION_CODES = {"Any": 1, "All": 2, "Read": 3, "Write": 4, "Create": 5, "Delete": 6, "Alter": 7, "Describe": 8,
                   "ClusterAction": 9, "DescribeConfigs": 10, "AlterConfigs": 11, "IdempotentWrite": 12}
RESOURCE_TYPE_CODES = {"Any": 1, "Topic": 2, "Group": 3, "Cluster": 4, "TransactionalId": 5}
PERMISSION_CODES = {"Any": 1, "Deny": 2, "Allow": 3}
PATTERN_TYPE_CODES = {"Any": 1, "Match": 2, "LITERAL": 3, "PREFIXED": 4}


def canonical(value: str, choices: Iterable[str], what: str) -> str:
    """``value`` spelled as in ``choices`` (case and ``_``/``-`` ignored); INVALID_REQUEST otherwise."""
    key = str(value).replace("_", "").replace("-", "").lower()
    for c in choices:
        if c.replace("_", "").lower() == key:
            return c
    raise InvalidRequestError(f"unknown {what} {value!r}: expected one of {', '.join(choices)}")


def principal(text: str) -> str:
    """A principal as Kafka writes it, ``User:NAME``; INVALID_REQUEST for anything else."""
    kind, sep, name = str(text).partition(":")
    if not sep or kind != "User" or not name:
        raise InvalidRequestError(f"invalid principal {text!r}: expected User:NAME (or User:*)")
    return text


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL: ``principal`` may (Allow) or may not (Deny) do ``operation`` on a resource from ``host``."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str

    @classmethod
    def make(cls, resource_type: str, resource_name: str, principal_: str, operation: str,
             permission: str = "Allow", host: str = WILDCARD, pattern_type: str = "LITERAL") -> "AclBinding":
        """Build a binding from user words, checking each part (INVALID_REQUEST)."""
        rtype = canonical(resource_type, RESOURCE_TYPES, "resource type")
        name = str(resource_name)
        if not name:
            raise InvalidRequestError("an ACL needs a resource name")
        if rtype == "Cluster" and name != CLUSTER_NAME:
            raise InvalidRequestError(f"the Cluster resource is named {CLUSTER_NAME!r}, not {name!r}")
        pattern = canonical(pattern_type, PATTERN_TYPES, "pattern type")
        if pattern == "PREFIXED" and name == WILDCARD:
            raise InvalidRequestError("a PREFIXED ACL cannot use the name '*'")
        return cls(rtype, name, pattern, principal(principal_), str(host or WILDCARD),
                   canonical(operation, OPERATIONS, "operation"), canonical(permission, PERMISSIONS, "permission"))

    def matches_resource(self, resource_type: str, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == "PREFIXED":
            return name.startswith(self.resource_name)
        return self.resource_name in (name, WILDCARD)

    def as_dict(self) -> dict:
        return {"resource_type": self.resource_type, "resource_name": self.resource_name,
                "pattern_type": self.pattern_type, "principal": self.principal, "host": self.host,
                "operation": self.operation, "permission": self.permission}

    def describe(self) -> str:
        """One line, as kafka-acls prints an ACL."""
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.upper()}, "
                f"permissionType={self.permission.upper()}) on {self.resource_type}:{self.pattern_type}:"
                f"{self.resource_name}")


@dataclass(frozen=True)
class AclFilter:
    """Which bindings a DescribeAcls or DeleteAcls names; ``None`` in a field matches anything.

    ``pattern_type`` "Match" (Kafka's MATCH) matches every binding that applies to the
    named resource: its literal, wildcard and prefix rules."""

    resource_type: str | None = None
    resource_name: str | None = None
    pattern_type: str | None = None
    principal: str | None = None
    host: str | None = None
    operation: str | None = None
    permission: str | None = None

    def matches(self, b: AclBinding) -> bool:
        if self.resource_type is not None and b.resource_type != self.resource_type:
            return False
        if self.pattern_type == "Match":
            if self.resource_name is not None and not b.matches_resource(b.resource_type, self.resource_name):
                return False
        else:
            if self.pattern_type is not None and b.pattern_type != self.pattern_type:
                return False
            if self.resource_name is not None and b.resource_name != self.resource_name:
                return False
        return all(want is None or got == want for want, got in (
            (self.principal, b.principal), (self.host, b.host), (self.operation, b.operation),
            (self.permission, b.permission)))


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users``: principals separated by ';' (``User:admin;User:ops``)."""
    return frozenset(principal(p.strip()) for p in (text or "").split(";") if p.strip())


class Authorizer:
    """The ACL decision for one broker: rules in, allow or deny out."""

    def __init__(self, super_users: Iterable[str] = (), allow_if_no_acl: bool = False) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        self._by_type: dict[str, list[AclBinding]] = {}

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Use exactly ``bindings`` from now on."""
        by_type: dict[str, list[AclBinding]] = {}
        for b in sorted(set(bindings)):
            by_type.setdefault(b.resource_type, []).append(b)
        self._by_type = by_type

    @property
    def bindings(self) -> list[AclBinding]:
        return [b for bs in self._by_type.values() for b in bs]

    def authorize(self, principal_: str, host: str, operation: str, resource_type: str, name: str) -> bool:
        """Whether ``principal_`` connecting from ``host`` may do ``operation`` on the resource."""
        if principal_ in self.super_users:
            return True
        rules = [b for b in self._by_type.get(resource_type, ()) if b.matches_resource(resource_type, name)]
        if not rules:
            return self.allow_if_no_acl
        mine = [b for b in rules if b.principal in (principal_, "User:*") and b.host in (host, WILDCARD)]
        if any(b.permission == "Deny" and b.operation in (operation, "All") for b in mine):
            return False
        return any(b.permission == "Allow" and (b.operation in (operation, "All") or operation in _IMPLIES.get(b.operation, ()))
                   for b in mine)


# -- ZooKeeper: Kafka 2.x's layout ----------------------------------------------------------
ACL_ROOT = "/kafka-acl"  # LITERAL rules: /kafka-acl/<ResourceType>/<name>
ACL_CHANGES = "/kafka-acl-changes"  # notifications: acl_changes_<seq>, data "<ResourceType>:<name>"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"  # PREFIXED rules
EXTENDED_CHANGES = "/kafka-acl-extended-changes"  # notifications for PREFIXED rules (JSON)
CHANGE_PREFIX = "acl_changes_"


def znode_path(resource_type: str, name: str, pattern_type: str) -> str:
    """Where the rules of one resource pattern live."""
    root = PREFIXED_ROOT if pattern_type == "PREFIXED" else ACL_ROOT
    return f"{root}/{resource_type}/{name}"


def change_notification(resource_type: str, name: str, pattern_type: str) -> bytes:
    """The data of a change notification, as Kafka writes it."""
    if pattern_type == "PREFIXED":
        return json.dumps({"version": 1, "resourceType": resource_type, "name": name,
                           "patternType": "PREFIXED"}).encode()
    return f"{resource_type}:{name}".encode()


def acls_to_znode(bindings: Iterable[AclBinding]) -> bytes:
    """The znode data of one resource's rules: ``{"version":1,"acls":[...]}``."""
    return json.dumps({"version": 1, "acls": [
        {"principal": b.principal, "permissionType": b.permission, "operation": b.operation, "host": b.host}
        for b in sorted(bindings)]}, separators=(",", ":")).encode()


def acls_from_znode(resource_type: str, name: str, pattern_type: str, data: bytes) -> list[AclBinding]:
    """The rules in one resource's znode; an entry that does not parse is left out."""
    try:
        doc = json.loads(data.decode() or "{}")
    except (UnicodeDecodeError, ValueError):
        return []
    out = []
    for a in doc.get("acls", []) if isinstance(doc, dict) else []:
        try:
            out.append(AclBinding.make(resource_type, name, a["principal"], a["operation"], a["permissionType"],
                                       a.get("host", WILDCARD), pattern_type))
        except (InvalidRequestError, KeyError, TypeError):
            continue
    return out
