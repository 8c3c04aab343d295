"""ZooKeeper's twin: an in-memory ensemble and a session client with ZkSession's face.

:class:`ZkServer` keeps znodes with ZooKeeper's semantics: data versions, ``czxid`` /
``mzxid``, child versions, ephemeral nodes owned by a session, sequential nodes, multi
ops that apply all or nothing (the adapter's result list: the failed op's error, and
``RolledBackError`` for every other op), sessions that expire when not heard
from for their timeout (their ephemeral nodes go with them) and watches.

:class:`SimZkSession` is what a broker gets from the coordinator port instead of
:class:`~minikafka.zk.session.ZkSession`, with the same methods and errors (:mod:`minikafka.zk.errors`).
Every request, answer, ping and watch notification is a message on the simulated
network between the broker's node and ``zk`` (in order, like the session's one TCP
connection), so link faults reach ZooKeeper too.  The client behaves as kazoo does:
pings every third of the session timeout; no answer for two thirds of it means
SUSPENDED (requests in flight fail with ZooKeeperUnavailableError, new ones wait); reconnecting
within the timeout means CONNECTED again; after expiry it reports LOST, opens a new
session and reports CONNECTED.  Watches behave like kazoo's DataWatch and
ChildrenWatch: the callback runs with the current value at once and after every change,
and again after a reconnection when the value changed meanwhile.  What a session needs
of the world is :class:`SessionHost` (the world provides it).
"""
from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from ..zk.errors import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    ZooKeeperError,
    ZooKeeperUnavailableError,
)
from ..zk.session import Watch, ZnodeStat
from .network import Network

ZK = "zk"  # the ensemble's node name on the simulated network


class _ConnectionLoss(ZooKeeperUnavailableError):
    """A request in flight when the session's connection dropped (kazoo's ConnectionLoss)."""


@dataclass
class Znode:
    data: bytes
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int = 0
    cversion: int = 0
    ephemeral_owner: int = 0
    pzxid: int = 0
    children: dict[str, None] = field(default_factory=dict)

    def stat(self) -> ZnodeStat:
        return ZnodeStat(self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, 0,
                         self.ephemeral_owner, len(self.data), len(self.children), self.pzxid)


@dataclass
class Session:
    sid: int
    timeout_s: float
    node: str
    last_heard: float
    notify: Callable[[str, str], None]  # (kind "data"|"children", path)
    watched: set[tuple[str, str]] = field(default_factory=set)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


class ZkServer:
    """The ensemble's state and rules (no I/O: requests come as messages)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.zxid = 0
        self.nodes: dict[str, Znode] = {"/": Znode(b"", 0, 0, 0, 0)}
        self.sessions: dict[int, Session] = {}
        self.expired: set[int] = set()
        self._next_sid = 0x100
        self.expirations = 0
        self.has_quorum = True  # False while the nemesis holds the ensemble without a quorum
        # while a multi applies its ops: the watch notifications it holds until it commits
        self._held: list[tuple[str, str]] | None = None

    # -- sessions ---------------------------------------------------------------------------
    def open(self, node: str, timeout_s: float, notify: Callable[[str, str], None]) -> int:
        self._next_sid += 1
        self.sessions[self._next_sid] = Session(self._next_sid, timeout_s, node, self.now(), notify)
        return self._next_sid

    def touch(self, sid: int) -> bool:
        s = self.sessions.get(sid)
        if s is None:
            return False
        s.last_heard = self.now()
        return True

    def close(self, sid: int) -> None:
        s = self.sessions.pop(sid, None)
        if s is not None:
            self.expired.add(sid)
            self._drop_ephemerals(sid)

    def expire_idle(self) -> list[int]:
        """Expire every session not heard from for its timeout; returns their ids.

        Without a quorum there is no leader to expire sessions: none expires."""
        if not self.has_quorum:
            return []
        now = self.now()
        gone = [sid for sid, s in self.sessions.items() if now - s.last_heard > s.timeout_s]
        for sid in gone:
            self.expirations += 1
            self.close(sid)
        return gone

    def lose_quorum(self) -> None:
        """The nemesis: a majority of the servers is down (the brokers are cut off by the
        network at the same time): no session expires while it lasts."""
        self.has_quorum = False

    def regain_quorum(self) -> None:
        """The quorum is back: the newly elected leader gives every session a fresh
        timeout, as ZooKeeper's does, so a session outlives an outage longer than it."""
        self.has_quorum = True
        now = self.now()
        for s in self.sessions.values():
            s.last_heard = now

    def expire(self, sid: int) -> None:
        """The nemesis: expire a session now."""
        if sid in self.sessions:
            self.expirations += 1
            self.close(sid)

    def _drop_ephemerals(self, sid: int) -> None:
        owned = [p for p, n in self.nodes.items() if n.ephemeral_owner == sid]
        if owned:
            self.zxid += 1
            for p in owned:
                self._remove(p)

    # -- watches --------------------------------------------------------------------------------
    def _fire(self, kind: str, path: str) -> None:
        if self._held is not None:
            self._held.append((kind, path))
            return
        for s in list(self.sessions.values()):
            if (kind, path) in s.watched:
                s.notify(kind, path)

    # -- requests ---------------------------------------------------------------------------------
    def request(self, sid: int, op: tuple) -> Any:
        """Apply one request; returns its result or an exception instance."""
        if sid not in self.sessions:
            return ZooKeeperUnavailableError("SessionExpiredError: the session expired")
        self.touch(sid)
        kind = op[0]
        try:
            if kind == "ping" or kind == "sync":
                return None
            if kind == "get":
                _, path, watch = op
                if watch:
                    self.sessions[sid].watched.add(("data", path))
                n = self.nodes.get(path)
                if n is None:
                    return NoNodeError()
                return n.data, n.stat()
            if kind == "get_many":  # ZooKeeper's multiRead: each read's own outcome, None where missing
                return [(n.data, n.stat()) if (n := self.nodes.get(path)) is not None else None for path in op[1]]
            if kind == "exists":
                n = self.nodes.get(op[1])
                return n.stat() if n is not None else None
            if kind in ("children", "children_stat"):
                _, path, watch = op
                if watch:
                    self.sessions[sid].watched.add(("children", path))
                n = self.nodes.get(path)
                if n is None:
                    return NoNodeError()
                # children_stat: with the parent's pzxid, which moves on every child created
                # or deleted, even when the names come out the same (a broker's registration
                # gone and back); a reconnecting client compares it, as ZooKeeper's
                # setWatches compares the zxid the client last saw
                return sorted(n.children) if kind == "children" else (sorted(n.children), n.pzxid)
            if kind == "multi":
                return self._multi(sid, op[1])
            if kind == "ensure_path":
                self.zxid += 1
                self._ensure(op[1], self.zxid)
                return True
            if kind == "delete_recursive":
                if op[1] in self.nodes:
                    self.zxid += 1
                    for p in sorted((p for p in self.nodes if p == op[1] or p.startswith(op[1] + "/")),
                                    key=lambda p: -p.count("/")):
                        self._remove(p)
                return True
            # a single write is a multi of one
            return self._multi(sid, [op])[0]
        except KeyError:  # pragma: no cover - a request the twin does not know
            return ZooKeeperError("BadArgumentsError")

    def _ensure(self, path: str, zxid: int) -> None:
        parts = [p for p in path.split("/") if p]
        cur = ""
        for part in parts:
            cur += "/" + part
            if cur not in self.nodes:
                self._add(cur, b"", zxid, 0)

    def _add(self, path: str, data: bytes, zxid: int, owner: int) -> None:
        parent = self.nodes[_parent(path)]
        now = int(self.now() * 1000)
        self.nodes[path] = Znode(data, zxid, zxid, now, now, ephemeral_owner=owner, pzxid=zxid)
        parent.children[path.rsplit("/", 1)[1]] = None
        parent.cversion += 1
        parent.pzxid = zxid
        self._fire("data", path)
        self._fire("children", _parent(path))

    def _remove(self, path: str) -> None:
        self.nodes.pop(path)
        parent = self.nodes.get(_parent(path))
        if parent is not None:
            parent.children.pop(path.rsplit("/", 1)[1], None)
            parent.cversion += 1
        self._fire("data", path)
        self._fire("children", _parent(path))
        self._fire("children", path)

    def _check(self, op: tuple) -> Exception | None:
        """Why ``op`` cannot apply to the current state (None: it can)."""
        kind, path = op[0], op[1]
        n = self.nodes.get(path)
        if kind == "create":
            _, _, _, _, sequence, makepath = op
            if n is not None and not sequence:
                return NodeExistsError()
            if _parent(path) not in self.nodes and not makepath:
                return NoNodeError()
            parent = self.nodes.get(_parent(path))
            if parent is not None and parent.ephemeral_owner:
                return ZooKeeperError("BadArgumentsError")
            return None
        if n is None:
            return NoNodeError()
        version = op[3] if kind == "set" else op[2]
        if version != -1 and n.version != version:
            return BadVersionError()
        if kind == "delete" and n.children:
            return NotEmptyError(path)
        return None

    def _apply(self, sid: int, op: tuple, zxid: int) -> Any:
        kind, path = op[0], op[1]
        if kind == "create":
            _, _, value, ephemeral, sequence, makepath = op
            if makepath:
                self._ensure(_parent(path), zxid)
            if sequence:
                path = f"{path}{self.nodes[_parent(path)].cversion:010d}"
            self._add(path, value, zxid, sid if ephemeral else 0)
            return path
        if kind == "set":
            n = self.nodes[path]
            n.data, n.version, n.mzxid, n.mtime = op[2], n.version + 1, zxid, int(self.now() * 1000)
            self._fire("data", path)
            return n.stat()
        if kind == "delete":
            self._remove(path)
            return True
        return True  # check

    def _multi(self, sid: int, ops: list[tuple]) -> list[Any]:
        """All or nothing: check each op against the state the ops before it leave."""
        snapshot = {p: _copy(n) for p, n in self.nodes.items()}
        zxid = self.zxid + 1
        results: list[Any] = []
        failed = None
        held: list[tuple[str, str]] = []
        self._held = held  # notifications wait for the commit (none if it fails)
        try:
            for op in ops:
                why = self._check(op)
                if why is not None:
                    failed = len(results)
                    results.append(why)
                    break
                results.append(self._apply(sid, op, zxid))
        finally:
            self._held = None
        if failed is not None:
            self.nodes = snapshot
            return [RolledBackError() for _ in range(failed)] + [results[failed]] + \
                [RolledBackError() for _ in range(len(ops) - failed - 1)]
        self.zxid = zxid
        for kind, path in dict.fromkeys(held):  # each once, in order
            self._fire(kind, path)
        return results


def _copy(n: Znode) -> Znode:
    return Znode(n.data, n.czxid, n.mzxid, n.ctime, n.mtime, n.version, n.cversion, n.ephemeral_owner, n.pzxid,
                 dict(n.children))


class _Tx:
    """A transaction builder with kazoo's face (what ``commit``'s ``build`` is given): check, create,
    set_data, delete."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []

    def check(self, path: str, version: int) -> None:
        self.ops.append(("check", path, version))

    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False) -> None:
        self.ops.append(("create", path, value, ephemeral, sequence, False))

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        self.ops.append(("set", path, value, version))

    def delete(self, path: str, version: int = -1) -> None:
        self.ops.append(("delete", path, version))


CONNECTING, CONNECTED, SUSPENDED, CLOSED = "CONNECTING", "CONNECTED", "SUSPENDED", "CLOSED"


class SessionHost(Protocol):
    """What a session uses of the world (:class:`~minikafka.sim.world.World`)."""

    network: Network
    zk: ZkServer
    contexts: dict[str, contextvars.Context]  # node -> its current process's context


class SimZkSession:
    """A broker's ZooKeeper session in the simulation (ZkSession's methods and errors)."""

    def __init__(self, world: SessionHost, node: str, session_timeout_ms: int = 6000) -> None:
        self.world = world
        self.node = node
        # the process that made this session: a restarted broker's new session must not
        # receive what is meant for its previous process's session
        self.context = world.contexts[node]
        self.timeout_s = session_timeout_ms / 1000.0
        self.request_timeout_s = max(10.0, 2 * self.timeout_s)
        self.state = CONNECTING
        self.sid: int | None = None
        self.watches: set[Watch] = set()
        self._callbacks: list[Callable[[str], Any]] = []
        self._inflight: list[asyncio.Future] = []
        self._state_changed = asyncio.Event()
        self._handles: dict[tuple[str, str], list[tuple[Watch, Callable]]] = {}
        self._last: dict[tuple[str, str], Any] = {}
        # watched values whose notification was lost on a cut link, or whose read after a
        # notification failed, while the session lived on: read again once a ping goes
        # through.  ZooKeeper loses neither: TCP delivers the notification late, or the
        # client's reconnection re-arms its watches with the last zxid it saw and the server
        # fires the missed ones then
        self._unread: set[tuple[str, str]] = set()
        self._pinger: asyncio.Task | None = None

    # -- the connection ---------------------------------------------------------------------------
    def _send(self, deliver: Callable[[], Any]) -> None:
        self.world.network.send(self.node, ZK, deliver, fifo=True)

    def _reply(self, fut: asyncio.Future, result: Any) -> None:
        def land() -> None:
            if fut.done():
                return
            if isinstance(result, BaseException):
                fut.set_exception(result)
            else:
                fut.set_result(result)
        self.world.network.send(ZK, self.node, land, context=self.context, fifo=True)

    def _notify(self, kind: str, path: str) -> None:
        """The server's watch notification, sent to this session's node (one lost on a cut
        link is read again once the session is reached: :attr:`_unread`)."""
        if not self.world.network.send(ZK, self.node, lambda: self._notified(kind, path),
                                       context=self.context, fifo=True):
            self._unread.add((kind, path))

    async def _roundtrip(self, make: Callable[[ZkServer], Any], timeout_s: float) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._inflight.append(fut)
        server = self.world.zk

        def arrive() -> None:
            self._reply(fut, make(server))
        self._send(arrive)
        try:
            return await asyncio.wait_for(fut, timeout_s)
        finally:
            if fut in self._inflight:
                self._inflight.remove(fut)

    async def _open(self) -> None:
        sid = await self._roundtrip(lambda s: s.open(self.node, self.timeout_s, self._notify), self.timeout_s)
        self.sid = sid
        self._set_state(CONNECTED)

    def _set_state(self, state: str) -> None:
        if state == self.state:
            return
        self.state = state
        self._state_changed.set()
        self._state_changed = asyncio.Event()
        if state == SUSPENDED:
            for fut in self._inflight:
                if not fut.done():
                    fut.set_exception(_ConnectionLoss("ConnectionLoss: the connection to ZooKeeper was lost"))
        if state in (CONNECTED, SUSPENDED):
            for cb in list(self._callbacks):
                cb(state)

    async def start(self, timeout_s: float = 15.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                await self._open()
                break
            except asyncio.TimeoutError:
                if loop.time() > deadline:
                    raise ZooKeeperUnavailableError("ZooKeeper did not answer the connection") from None
        self._pinger = loop.create_task(self._keep_alive())
        for key in list(self._handles):
            loop.create_task(self._refresh(key, always=True))

    async def stop(self) -> None:
        if self._pinger is not None:
            self._pinger.cancel()
        sid, self.sid = self.sid, None
        self.state = CLOSED
        if sid is not None:
            self._send(lambda: self.world.zk.close(sid))

    async def _keep_alive(self) -> None:
        """Ping every third of the timeout; on silence SUSPENDED, then reconnect or, after
        expiry, LOST and a new session."""
        while True:
            await asyncio.sleep(self.timeout_s / 3)
            sid = self.sid
            assert sid is not None  # a session is open from start() on; stop() cancels this task first
            try:
                alive = await self._roundtrip(lambda s: s.touch(sid), self.timeout_s * 2 / 3)
            except (asyncio.TimeoutError, _ConnectionLoss):
                self._set_state(SUSPENDED)
                continue
            if alive:
                if self.state != CONNECTED:
                    self._set_state(CONNECTED)
                    for key in list(self._handles):
                        asyncio.get_running_loop().create_task(self._refresh(key, always=key in self._unread))
                else:
                    for key in sorted(k for k in self._unread if k in self._handles):
                        asyncio.get_running_loop().create_task(self._refresh(key, always=True))
                self._unread.clear()
                continue
            # the session expired while we were away: LOST, then a new session
            self._set_state(SUSPENDED)
            for cb in list(self._callbacks):
                cb("LOST")
            try:
                await self._open()
            except (asyncio.TimeoutError, _ConnectionLoss):
                continue
            for key in list(self._handles):
                asyncio.get_running_loop().create_task(self._refresh(key, always=True))

    def drop_connection(self) -> None:
        """The server this session is connected to went away (killed, or it lost its
        quorum and closed its clients): the client sees the connection close at once.
        SUSPENDED, requests in flight fail with ZooKeeperUnavailableError, and the keep-alive
        reconnects (to another server) and reads every watched value again, so no
        notification is lost the way a silently dropped message would lose it."""
        if self.state == CONNECTED:
            self._set_state(SUSPENDED)

    def on_state_change(self, callback: Callable[[str], Any]) -> None:
        self._callbacks.append(callback)

    @property
    def connected(self) -> bool:
        return self.state == CONNECTED

    @property
    def session_id(self) -> int | None:
        return self.sid

    # -- requests ---------------------------------------------------------------------------------
    async def _request(self, op: tuple) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.request_timeout_s
        while self.state != CONNECTED:
            if self.state == CLOSED:
                raise ZooKeeperUnavailableError("ConnectionClosedError: the session is closed")
            left = deadline - loop.time()
            if left <= 0:
                raise ZooKeeperUnavailableError(f"ZooKeeper did not answer within {self.request_timeout_s:g} s")
            try:
                await asyncio.wait_for(self._state_changed.wait(), left)
            except asyncio.TimeoutError:
                pass
        sid = self.sid
        assert sid is not None  # CONNECTED: a session is open
        try:
            result = await self._roundtrip(lambda s: s.request(sid, op), max(0.0, deadline - loop.time()))
        except asyncio.TimeoutError:
            raise ZooKeeperUnavailableError(f"ZooKeeper did not answer within {self.request_timeout_s:g} s") from None
        if isinstance(result, BaseException):
            raise result
        return result

    async def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            return await self._request(("get", path, False))
        except NoNodeError:
            return None

    async def get_many(self, paths: list[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """:meth:`ZkSession.get_many`: many reads in one request (ZooKeeper's multiRead)."""
        return await self._request(("get_many", list(paths)))

    async def exists(self, path: str) -> ZnodeStat | None:
        return await self._request(("exists", path))

    async def children(self, path: str) -> list[str]:
        try:
            return await self._request(("children", path, False))
        except NoNodeError:
            return []

    async def create(self, path: str, value: bytes = b"", ephemeral: bool = False, sequence: bool = False,
                     makepath: bool = False) -> str:
        return await self._request(("create", path, value, ephemeral, sequence, makepath))

    async def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        return await self._request(("set", path, value, version))

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        if recursive:
            await self._request(("delete_recursive", path))
            return
        try:
            await self._request(("delete", path, version))
        except NoNodeError:
            pass

    async def sync(self, path: str) -> None:
        await self._request(("sync",))

    async def ensure_path(self, path: str) -> None:
        await self._request(("ensure_path", path))

    async def commit(self, build: Callable[[Any], None]) -> list[Any]:
        tx = _Tx()
        build(tx)
        return await self._request(("multi", tx.ops))

    async def transaction(self, build: Callable[[Any], None]) -> list[Any]:
        results = await self.commit(build)
        for r in results:
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                raise r
        return results

    # -- watches ----------------------------------------------------------------------------------
    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> Watch:
        return self._watch(("children", path), callback)

    def watch_data(self, path: str, callback: Callable[[bytes | None, Any], Any]) -> Watch:
        return self._watch(("data", path), callback)

    def _watch(self, key: tuple[str, str], callback: Callable) -> Watch:
        handle = Watch(key[1], self._forget)
        self.watches.add(handle)
        self._handles.setdefault(key, []).append((handle, callback))
        asyncio.get_running_loop().create_task(self._refresh(key, always=True, only=handle))
        return handle

    def _forget(self, handle: Watch) -> None:
        self.watches.discard(handle)
        for key, hs in list(self._handles.items()):
            hs[:] = [(h, cb) for h, cb in hs if h is not handle]
            if not hs:
                self._handles.pop(key)

    def _notified(self, kind: str, path: str) -> None:
        if (kind, path) in self._handles:
            asyncio.get_running_loop().create_task(self._refresh((kind, path), always=True))

    async def _refresh(self, key: tuple[str, str], always: bool, only: Watch | None = None) -> None:
        """Read the watched value (setting the watch) and hand it to the callbacks."""
        kind, path = key
        pzxid = -1
        try:
            if kind == "data":
                got = await self._request(("get", path, True))
                value: Any = (got[0], got[1]) if got is not None else (None, None)
            else:
                names, pzxid = await self._request(("children_stat", path, True))
                value = (names,)
        except NoNodeError:  # the watch is set all the same (ZooKeeper's exists watch)
            value = (None, None) if kind == "data" else ([],)
        except ZooKeeperUnavailableError:
            self._unread.add(key)  # read again once the session is reached (see _keep_alive)
            return
        marker = (value[1].mzxid if value[1] is not None else value) if kind == "data" else (value, pzxid)
        if not always and self._last.get(key) == marker:
            return
        self._last[key] = marker
        for handle, cb in list(self._handles.get(key, [])):
            if only is not None and handle is not only:
                continue
            handle.deliver(cb, *value)
