"""``minikafka acls --add|--remove|--list``: ACLs as kafka-acls manages them.

The flags are kafka-acls': ``--allow-principal`` / ``--deny-principal`` (repeatable),
``--allow-host`` / ``--deny-host`` (default ``*``), ``--operation`` (repeatable), one
resource of ``--topic``, ``--group`` or ``--cluster``, and ``--resource-pattern-type``
(literal by default; prefixed; for ``--list`` and ``--remove`` also any and match).
``--list`` may narrow by ``--principal``.  The rules land in ZooKeeper's ``/kafka-acl``
through the broker (docs/security.md); the caller needs Alter (Describe to list) on the
Cluster, so ``--command-config`` usually names a super user.
"""
from __future__ import annotations

import argparse
from typing import Any

from ..auth.acls import CLUSTER_NAME, AclBinding
from ..errors import ClientError
from .command_config import client_options
from .common import add_dir_and_bootstrap, resolve_bootstrap


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    """Register ``acls``."""
    p = subparsers.add_parser(
        "acls", help="add, list and remove ACLs (as kafka-acls)",
        description="Add, list and remove ACLs, as kafka-acls does. The cluster needs an authorizer "
                    "(authorizer.class.name=kafka.security.authorizer.AclAuthorizer).")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--add", action="store_true", help="add the ACLs described")
    action.add_argument("--remove", action="store_true", help="remove the ACLs that match")
    action.add_argument("--list", action="store_true", help="print the ACLs that match")
    p.add_argument("--allow-principal", dest="allow", action="append", default=[], metavar="User:NAME",
                   help="principal given Allow (repeatable; User:* for everyone)")
    p.add_argument("--deny-principal", dest="deny", action="append", default=[], metavar="User:NAME",
                   help="principal given Deny (repeatable)")
    p.add_argument("--allow-host", default="*", help="host of the Allow rules (default *)")
    p.add_argument("--deny-host", default="*", help="host of the Deny rules (default *)")
    p.add_argument("--operation", action="append", default=[], metavar="OP",
                   help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                        "AlterConfigs, IdempotentWrite or All (repeatable)")
    p.add_argument("--principal", default=None, metavar="User:NAME", help="--list: only this principal's ACLs")
    resource = p.add_mutually_exclusive_group()
    resource.add_argument("--topic", default=None, help="a topic (or * for every topic)")
    resource.add_argument("--group", default=None, help="a consumer group (or *)")
    resource.add_argument("--cluster", action="store_true", help="the cluster itself")
    p.add_argument("--resource-pattern-type", dest="pattern", default=None,
                   choices=["literal", "prefixed", "any", "match"], type=str.lower,
                   help="literal (default for --add), prefixed; any or match with --list and --remove")
    add_dir_and_bootstrap(p)
    p.set_defaults(func=cmd_acls)


def _resource(args: argparse.Namespace) -> tuple[str, str] | None:
    if args.topic is not None:
        return "Topic", args.topic
    if args.group is not None:
        return "Group", args.group
    if args.cluster:
        return "Cluster", CLUSTER_NAME
    return None


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    resource = _resource(args)
    if resource is None:
        raise ClientError("--add needs a resource: --topic, --group or --cluster")
    if not args.allow and not args.deny:
        raise ClientError("--add needs --allow-principal or --deny-principal")
    if not args.operation:
        raise ClientError("--add needs --operation (e.g. --operation Read)")
    pattern = args.pattern or "literal"
    if pattern not in ("literal", "prefixed"):
        raise ClientError(f"--add takes --resource-pattern-type literal or prefixed, not {pattern}")
    out = []
    for permission, principals, host in (("Allow", args.allow, args.allow_host), ("Deny", args.deny, args.deny_host)):
        for who in principals:
            for op in args.operation:
                out.append(AclBinding.make(*resource, who, op, permission, host, pattern))
    return out


def _filter(args: argparse.Namespace) -> dict[str, Any]:
    f: dict[str, Any] = {}
    resource = _resource(args)
    if resource is not None:
        f["resource_type"], f["resource_name"] = resource
        f["pattern_type"] = {"literal": "LITERAL", "prefixed": "PREFIXED", "any": None, "match": "Match",
                             None: None}[args.pattern]
    principals = args.allow + args.deny + ([args.principal] if args.principal else [])
    if len(principals) > 1:
        raise ClientError("give one principal to narrow --list or --remove")
    if principals:
        f["principal"] = principals[0]
    if len(args.operation) > 1:
        raise ClientError("give one --operation to narrow --list or --remove")
    if args.operation:
        f["operation"] = args.operation[0]
    return {k: v for k, v in f.items() if v is not None}


def _print(bindings: list[AclBinding]) -> None:
    by_resource: dict[tuple[str, str, str], list[AclBinding]] = {}
    for b in bindings:
        by_resource.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
    for (rtype, name, pattern), bs in sorted(by_resource.items()):
        print(f"Current ACLs for resource `ResourcePattern(resourceType={rtype.upper()}, name={name}, "
              f"patternType={pattern})`:")
        for b in bs:
            print(f" \t(principal={b.principal}, host={b.host}, operation={b.operation.upper()}, "
                  f"permissionType={b.permission.upper()})")
        print()


def cmd_acls(args: argparse.Namespace) -> int:
    from ..client.sync import Admin

    with Admin(resolve_bootstrap(args), **client_options(args)) as admin:
        if args.add:
            bindings = _bindings(args)
            admin.create_acls(bindings)
            print(f"Adding ACLs for resource: {len(bindings)} ACL{'s' if len(bindings) != 1 else ''} added")
            _print(admin.describe_acls(resource_type=bindings[0].resource_type, resource_name=bindings[0].resource_name,
                                       pattern_type=bindings[0].pattern_type))
        elif args.remove:
            f = _filter(args)
            if "resource_type" not in f:
                raise ClientError("--remove needs a resource: --topic, --group or --cluster")
            removed = admin.delete_acls(**f)
            print(f"Removed {len(removed)} ACL{'s' if len(removed) != 1 else ''}")
            _print(removed)
        else:
            _print(admin.describe_acls(**_filter(args)))
    return 0
