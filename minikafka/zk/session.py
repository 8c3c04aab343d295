"""An asyncio face for a kazoo ZooKeeper session.

kazoo runs its own threads.  Every call here uses kazoo's ``*_async`` methods and
hands the result back to the event loop with ``loop.call_soon_threadsafe``; watch
callbacks cross into the loop the same way and only ever run loop-side callables.
kazoo's watch recipes read their znode once, blocking, when they are made: they are
made on a few threads of this session's own, never on the loop (a new controller
watches every topic's znode, a thousand blocking round trips at 10,000 partitions).

kazoo's exceptions stop here: every method raises the adapter's own errors
(:mod:`minikafka.zk.errors`), and a multi-op's result list carries them in place of
kazoo's, so no module above ``minikafka/zk/`` imports kazoo.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any, Awaitable, Callable

from kazoo import exceptions as kz
from kazoo.client import KazooClient, KazooState, _prefix_root
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import ZnodeStat
from kazoo.security import make_acl, make_digest_acl

from .errors import (BadVersionError, NoNodeError, NodeExistsError, NotEmptyError, RolledBackError, ZooKeeperError,
                     ZooKeeperUnavailableError, ZooKeeperUnsupportedError)
from .multi_read import MultiRead

log = logging.getLogger(__name__)

__all__ = ["Watch", "ZkSession", "ZnodeStat", "translate"]

# kazoo's exception -> the adapter's (the first class in this order that the exception is)
_TRANSLATED: tuple[tuple[type[BaseException], type[ZooKeeperError]], ...] = (
    (kz.NoNodeError, NoNodeError),
    (kz.NodeExistsError, NodeExistsError),
    (kz.BadVersionError, BadVersionError),
    (kz.NotEmptyError, NotEmptyError),
    (kz.RolledBackError, RolledBackError),
    (kz.RuntimeInconsistency, RolledBackError),  # kazoo's word for the ops after the failed one
    (kz.ConnectionLoss, ZooKeeperUnavailableError),
    (kz.SessionExpiredError, ZooKeeperUnavailableError),  # ConnectionClosedError too
    (kz.OperationTimeoutError, ZooKeeperUnavailableError),
    (kz.SessionMovedError, ZooKeeperUnavailableError),
    (kz.ZookeeperStoppedError, ZooKeeperUnavailableError),
    (kz.ConnectionDropped, ZooKeeperUnavailableError),
    (KazooTimeoutError, ZooKeeperUnavailableError),
    (kz.UnimplementedError, ZooKeeperUnsupportedError),
    (kz.MarshallingError, ZooKeeperUnsupportedError),
)


def translate(exc: BaseException) -> BaseException:
    """The adapter's error for one of kazoo's exceptions (any other exception unchanged):
    its message names kazoo's reason, so that a log line still tells what happened."""
    if not isinstance(exc, (kz.KazooException, KazooTimeoutError)):
        return exc
    reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    for theirs, ours in _TRANSLATED:
        if isinstance(exc, theirs):
            return ours(reason)
    return ZooKeeperError(reason)


def _raised(result: Any) -> Any:
    """One read's result of a multiRead; its error raised as the adapter's."""
    if isinstance(result, BaseException):
        raise translate(result)
    return result


def _results(results: list[Any]) -> list[Any]:
    """A multi-op's result list with the adapter's errors in place of kazoo's."""
    return [translate(r) if isinstance(r, BaseException) else r for r in results]


def secure_acl(user: str, password: str) -> list:
    """Kafka's secure znode ACL for the digest ``user``: that user may do everything,
    everyone may read."""
    return [make_digest_acl(user, password, all=True), make_acl("world", "anyone", read=True)]


# How a disconnected session looks for a server again: every server of the connect string
# in turn, at most RECONNECT_MAX_DELAY_S apart, forever, as ZooKeeper's Java client (and so
# Kafka) does.  kazoo's default backs off to 60 s: a broker disconnected for longer than a
# few session timeouts (an ensemble without its quorum) would come back after the
# ensemble had given its session a fresh timeout and expired it.
RECONNECT_MAX_DELAY_S = 1.0
# threads that make kazoo's watch recipes (each reads its znode once, blocking): a few
# at once, so that a thousand new watches take a fraction of a thousand round trips
WATCH_SETUP_THREADS = 4
CONNECTION_RETRY = {"max_tries": -1, "delay": 0.1, "backoff": 2, "max_jitter": 0.2,
                    "max_delay": RECONNECT_MAX_DELAY_S}


class ZkSession:
    """One ZooKeeper session used from one asyncio loop."""

    def __init__(self, connect: str, session_timeout_ms: int = 6000, digest: tuple[str, str] | None = None) -> None:
        """With ``digest`` (user, password) the session authenticates with it, every znode
        it creates is writable by that user only and readable by everyone (Kafka's secure
        ACL: creator all, world read), and :meth:`start` gives the root of the namespace
        (the chroot, if any) the same ACL, so that no one else can create or delete
        top-level znodes such as ``/controller`` and ``/controller_epoch``."""
        self.connect = connect
        self.request_timeout_s = max(10.0, 2 * session_timeout_ms / 1000.0)
        auth, acl = None, None
        if digest is not None:
            user, password = digest
            auth = [("digest", f"{user}:{password}")]
            acl = secure_acl(user, password)
        self.secure_acl = acl
        self.client = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0, auth_data=auth, default_acl=acl,
                                  connection_retry=dict(CONNECTION_RETRY))
        self.loop: asyncio.AbstractEventLoop | None = None
        self._state_callbacks: list[Callable[[str], Any]] = []
        # kazoo's last word on the session, for the dashboard: connecting, connected,
        # suspended (disconnected: ZooKeeper may still keep the session) or lost (expired)
        self.session_state = "connecting"
        self.watches: set[Watch] = set()  # live (not cancelled) watches of this session
        self._multi_read = True  # until the server refuses one (ZooKeeper before 3.6)
        self._watch_setup = concurrent.futures.ThreadPoolExecutor(WATCH_SETUP_THREADS, "zk-watch-setup")

    async def start(self, timeout_s: float = 15.0) -> None:
        self.loop = asyncio.get_running_loop()
        self.client.add_listener(self._on_state)
        try:
            await asyncio.to_thread(self.client.start, timeout_s)
            if self.secure_acl is not None:
                await asyncio.to_thread(self._secure_root)
        except (kz.KazooException, KazooTimeoutError) as exc:
            raise translate(exc) from None

    def _secure_root(self) -> None:
        """Give ``/`` (the chroot) the secure ACL unless it has it: deleting or creating a
        child needs DELETE or CREATE on the parent, and ZooKeeper's root is open."""
        acl = self.secure_acl or []
        try:
            current, _ = self.client.get_acls("/")
            if set(current) != set(acl):
                self.client.set_acls("/", acl)
        except kz.NoAuthError:
            log.warning("cannot set the secure ACL on the root of %s: it is protected by another credential",
                        self.connect)
        except kz.NoNodeError:
            log.warning("cannot set the secure ACL on the root of %s: the chroot does not exist", self.connect)

    async def stop(self) -> None:
        self._watch_setup.shutdown(wait=False, cancel_futures=True)
        try:
            await asyncio.to_thread(self.client.stop)
        finally:
            await asyncio.to_thread(self.client.close)  # a watch still being made ends here

    def _set_up(self, make: Callable[[], Any], path: str) -> None:
        """Make a kazoo watch recipe on this session's watch threads (its first read blocks
        for a round trip, and for as long as ZooKeeper is unreachable); a failure is logged."""
        def made(fut: concurrent.futures.Future) -> None:
            exc = None if fut.cancelled() else fut.exception()
            if exc is not None:
                log.warning("watch on %s not set: %s", path, translate(exc))
        try:
            self._watch_setup.submit(make).add_done_callback(made)
        except RuntimeError:  # the session is stopping
            pass

    def on_state_change(self, callback: Callable[[str], Any]) -> None:
        """``callback(state)`` runs on the loop for LOST, SUSPENDED and CONNECTED."""
        self._state_callbacks.append(callback)

    def _on_state(self, state: str) -> None:
        self.session_state = {"CONNECTED": "connected", "SUSPENDED": "suspended", "LOST": "lost"}.get(
            str(state), str(state).lower())
        if self.loop is None:
            return
        for cb in self._state_callbacks:
            self.loop.call_soon_threadsafe(cb, state)

    @property
    def connected(self) -> bool:
        return self.client.state == KazooState.CONNECTED

    @property
    def session_id(self) -> int | None:
        sid = self.client.client_id
        return sid[0] if sid else None

    def _await(self, async_result: Any) -> Awaitable[Any]:
        """The kazoo result as an awaitable, bounded by :attr:`request_timeout_s`: while
        ZooKeeper is unreachable kazoo keeps requests queued until it reconnects, and a
        caller must not hang that long (it gets ZooKeeperUnavailableError, a retriable error;
        the request may still be carried out later, as any timed-out request may).  kazoo's
        exceptions come out as the adapter's (:func:`translate`)."""
        return self._bounded(self._future(async_result))

    async def _bounded(self, fut: asyncio.Future) -> Any:
        try:
            return await asyncio.wait_for(fut, self.request_timeout_s)
        except asyncio.TimeoutError:
            raise ZooKeeperUnavailableError(
                f"ZooKeeper did not answer within {self.request_timeout_s:g} s") from None
        except (kz.KazooException, KazooTimeoutError) as exc:
            raise translate(exc) from None

    def _future(self, async_result: Any) -> asyncio.Future:
        loop = self.loop or asyncio.get_running_loop()
        fut: asyncio.Future = loop.create_future()

        def done(res: Any) -> None:
            try:
                value = res.get_nowait()
            except BaseException as exc:  # kazoo exceptions travel to the awaiting task
                loop.call_soon_threadsafe(_set_exc, fut, exc)
            else:
                loop.call_soon_threadsafe(_set_result, fut, value)

        async_result.rawlink(done)
        return fut

    async def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        """Data and stat of ``path``, or None if it does not exist."""
        try:
            return await self._await(self.client.get_async(path))
        except NoNodeError:
            return None

    async def get_many(self, paths: list[str]) -> list[tuple[bytes, ZnodeStat] | None]:
        """:meth:`get` of each path (None where it does not exist), in one multiRead request
        (:mod:`.multi_read`); a server older than ZooKeeper 3.6 refuses it, and the reads
        are then sent one by one, on this session from then on.  Give at most a few hundred
        paths: the answer must stay under ZooKeeper's 1 MB."""
        if self._multi_read and paths:
            async_result = self.client.handler.async_result()
            self.client._call(MultiRead([_prefix_root(self.client.chroot, p) for p in paths]), async_result)
            try:
                results = await self._bounded(self._future(async_result))
            except ZooKeeperUnsupportedError:
                log.info("ZooKeeper refused a multiRead (a server before 3.6): reads go one by one")
                self._multi_read = False
            else:
                return [None if isinstance(r, kz.NoNodeError) else _raised(r) for r in results]
        return list(await asyncio.gather(*(self.get(p) for p in paths)))

    async def exists(self, path: str) -> ZnodeStat | None:
        return await self._await(self.client.exists_async(path))

    async def children(self, path: str) -> list[str]:
        try:
            return await self._await(self.client.get_children_async(path))
        except NoNodeError:
            return []

    async def create(self, path: str, value: bytes = b"", ephemeral: bool = False, sequence: bool = False,
                     makepath: bool = False) -> str:
        return await self._await(self.client.create_async(path, value, ephemeral=ephemeral, sequence=sequence, makepath=makepath))

    async def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        return await self._await(self.client.set_async(path, value, version))

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        if recursive:
            try:
                await asyncio.to_thread(self.client.delete, path, version, True)
            except (kz.KazooException, KazooTimeoutError) as exc:
                raise translate(exc) from None
            return
        try:
            await self._await(self.client.delete_async(path, version))
        except NoNodeError:
            pass

    async def sync(self, path: str) -> None:
        """Bring this session's view of ``path`` up to date with the ZooKeeper leader."""
        await self._await(self.client.sync_async(path))

    async def ensure_path(self, path: str) -> None:
        await self._await(self.client.ensure_path_async(path))

    async def transaction(self, build: Callable[[Any], None]) -> list[Any]:
        """Run a multi-op transaction; ``build(tx)`` adds check/create/set_data ops.

        Returns the result list; raises the failed op's error (not a RolledBackError)."""
        results = await self.commit(build)
        for r in results:
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                raise r
        for r in results:
            if isinstance(r, Exception):
                raise r
        return results

    async def commit(self, build: Callable[[Any], None]) -> list[Any]:
        """Run a multi-op transaction and return its result list: each op's result, or the
        adapter's error in the place of the failed op and RolledBackError for the others."""
        tx = self.client.transaction()
        build(tx)
        return _results(await self._await(tx.commit_async()))

    def watch_children(self, path: str, callback: Callable[[list[str]], Any]) -> "Watch":
        """``callback(children)`` runs on the loop once the watch is set (soon: it is set on
        the session's watch threads) and at every change of ``path``'s children, until the
        returned :class:`Watch` is cancelled."""
        loop = self.loop
        assert loop is not None
        handle = Watch(path, self.watches.discard)
        self.watches.add(handle)

        def fire(children: list[str] | None) -> bool | None:
            if handle.cancelled:
                return False  # kazoo drops the watch
            loop.call_soon_threadsafe(handle.deliver, callback, list(children or []))
            return None

        self._set_up(lambda: self.client.ChildrenWatch(path, fire, send_event=False), path)
        return handle

    def watch_data(self, path: str, callback: Callable[[bytes | None, Any], Any]) -> "Watch":
        """``callback(data_or_None, stat)`` runs on the loop once the watch is set (soon: it
        is set on the session's watch threads) and at every change of ``path``, until the
        returned :class:`Watch` is cancelled."""
        loop = self.loop
        assert loop is not None
        handle = Watch(path, self.watches.discard)
        self.watches.add(handle)

        def fire(data: bytes | None, stat: Any) -> bool | None:
            if handle.cancelled:
                return False
            loop.call_soon_threadsafe(handle.deliver, callback, data, stat)
            return None

        self._set_up(lambda: self.client.DataWatch(path, fire), path)
        return handle


class Watch:
    """A watch's handle: after :meth:`cancel` its callback never runs again, and kazoo
    forgets the watch the next time ZooKeeper fires it."""

    def __init__(self, path: str, forget: Callable[["Watch"], Any] = lambda w: None) -> None:
        self.path = path
        self.cancelled = False
        self._forget = forget

    def cancel(self) -> None:
        self.cancelled = True
        self._forget(self)

    def deliver(self, callback: Callable[..., Any], *args: Any) -> None:
        if not self.cancelled:
            callback(*args)


def _set_result(fut: asyncio.Future, value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _set_exc(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
