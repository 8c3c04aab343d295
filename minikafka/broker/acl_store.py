"""ACLs in ZooKeeper, in Kafka 2.x's layout, loaded and changed by every broker.

Rules live in ``/kafka-acl/<ResourceType>/<name>`` (LITERAL, ``*`` included) and
``/kafka-acl-extended/prefixed/<ResourceType>/<prefix>`` (PREFIXED), each znode holding
``{"version":1,"acls":[{"principal":..,"permissionType":..,"operation":..,"host":..}]}``.
A change is announced by a sequential ``acl_changes_N`` under ``/kafka-acl-changes``
(``/kafka-acl-extended-changes`` for PREFIXED rules).  That is what Kafka's own
``kafka-acls --authorizer-properties zookeeper.connect=...`` writes, so rules written
by it (or by any tool that writes these znodes) take effect on every broker.

Every broker watches both change paths and reloads all rules into its
:class:`~minikafka.auth.acls.Authorizer` on any change (a small cluster has few rules).
Writes read, change and conditionally write one resource's znode, retried on a version
conflict, then announce the change.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ..auth import acls
from ..auth.acls import AclBinding, AclFilter, Authorizer
from ..zk.errors import BadVersionError, NodeExistsError, NoNodeError
from .change_follower import ChangeFollower

if TYPE_CHECKING:
    from ..zk.session import ZkSession


PATHS = (acls.ACL_ROOT, acls.ACL_CHANGES, acls.PREFIXED_ROOT, acls.EXTENDED_CHANGES)


class AclStore:
    """One broker's view of the cluster's ACLs (and the writer of changes to them)."""

    def __init__(self, zk: "ZkSession", authorizer: Authorizer, on_reload=lambda n: None) -> None:
        self.zk = zk
        self.authorizer = authorizer
        self._on_reload = on_reload
        self._follower = ChangeFollower(zk, "acl-changes", (acls.ACL_CHANGES, acls.EXTENDED_CHANGES), self.reload)

    async def start(self) -> None:
        """Create Kafka's ACL paths, load every rule, then follow the change notifications."""
        for path in PATHS:
            await self.zk.ensure_path(path)
        await self.reload()
        self._follower.start()

    async def stop(self) -> None:
        await self._follower.stop()

    async def read_all(self) -> list[AclBinding]:
        """Every rule stored in ZooKeeper."""
        out: list[AclBinding] = []
        for root, pattern in ((acls.ACL_ROOT, "LITERAL"), (acls.PREFIXED_ROOT, "PREFIXED")):
            for rtype in await self.zk.children(root):
                if rtype not in acls.RESOURCE_TYPES:
                    continue
                for name in await self.zk.children(f"{root}/{rtype}"):
                    got = await self.zk.get(f"{root}/{rtype}/{name}")
                    if got is not None:
                        out.extend(acls.acls_from_znode(rtype, name, pattern, got[0]))
        return out

    async def reload(self) -> None:
        bindings = await self.read_all()
        self.authorizer.replace(bindings)
        self._on_reload(len(bindings))

    async def create(self, bindings: Iterable[AclBinding]) -> None:
        """Add rules (already present ones are kept once)."""
        by_resource: dict[tuple[str, str, str], set[AclBinding]] = {}
        for b in bindings:
            by_resource.setdefault((b.resource_type, b.resource_name, b.pattern_type), set()).add(b)
        for key, new in by_resource.items():
            await self._update(key, lambda current, new=new: current | new)
        await self.reload()

    async def delete(self, filters: Iterable[AclFilter]) -> list[list[AclBinding]]:
        """Remove the rules each filter matches; for each filter, the rules it removed."""
        filters = list(filters)
        current = await self.read_all()
        removed = [[b for b in current if f.matches(b)] for f in filters]
        gone = {b for bs in removed for b in bs}
        for key in sorted({(b.resource_type, b.resource_name, b.pattern_type) for b in gone}):
            await self._update(key, lambda cur: {b for b in cur if b not in gone})
        await self.reload()
        return removed

    async def _update(self, key: tuple[str, str, str], change) -> None:
        rtype, name, pattern = key
        path = acls.znode_path(rtype, name, pattern)
        while True:
            got = await self.zk.get(path)
            current = set(acls.acls_from_znode(rtype, name, pattern, got[0])) if got else set()
            wanted = change(current)
            if wanted == current:
                return
            try:
                if got is None:
                    await self.zk.create(path, acls.acls_to_znode(wanted), makepath=True)
                elif wanted:
                    await self.zk.set(path, acls.acls_to_znode(wanted), version=got[1].version)
                else:
                    await self.zk.delete(path, version=got[1].version)
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another writer got there first: read again
            break
        changes = acls.EXTENDED_CHANGES if pattern == "PREFIXED" else acls.ACL_CHANGES
        await self.zk.create(f"{changes}/{acls.CHANGE_PREFIX}", acls.change_notification(rtype, name, pattern),
                             sequence=True)
