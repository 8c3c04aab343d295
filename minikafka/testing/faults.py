"""Faults by role on a local cluster: one Python API, which ``minikafka fault ...`` and
the control server's HTTP endpoint (:mod:`.control`) expose as well.

Every fault names its victim by role (:mod:`.roles`: ``leader_of("orders", 0)``,
``controller()``, ``group_coordinator("billing")``...) or by broker id, finds the broker
playing it at that moment in ZooKeeper, acts on its recorded pid (never by name) and
returns a :class:`FaultAction` that says what it did (``str(action)``: ``killed broker 2
(the leader of orders-0, leader epoch 0), pid 4242``) and undoes it: ``action.heal()``,
or on leaving a ``with`` block::

    with cluster.faults.kill(leader_of("orders", 0)) as fault:
        ...                       # broker fault.broker is down; heal restarts it
    cluster.faults.cut("broker:1", "zookeeper")   # a link fault (root only)

* process faults: :meth:`Faults.kill` (SIGKILL; healed by a restart), :meth:`Faults.pause`
  (SIGSTOP; SIGCONT), :meth:`Faults.stop` (SIGTERM, a controlled shutdown; restart),
  :meth:`Faults.restart` (kill or stop, then start again: already healed when it returns);
* link faults (iptables on loopback, each broker in a cgroup of its own, see
  :mod:`minikafka.chaos.links`; root only): :meth:`Faults.cut` drops what one side sends
  to the other (both ways by default), :meth:`Faults.slow` drops a share of it, which
  TCP retransmits after 200 ms or more;
* ZooKeeper: :meth:`Faults.expire_session` makes ZooKeeper expire a broker's session
  (its registration vanishes, the controller reacts as to a dead broker, the broker
  registers again), :meth:`Faults.zookeeper_outage` kills ZooKeeper (every server, or
  the ones named).

:meth:`Faults.heal_all` undoes whatever is still in force.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..cluster import launcher
from ..cluster.state import load
from ..errors import ClientError
from ..zk import layout
from .roles import Resolved, Role, Target, as_role, parse_role, resolve

ZOOKEEPER = "zookeeper"


@dataclass
class FaultAction:
    """One fault: what was done, to which broker (and in which epoch), and how to undo it.

    A context manager: leaving the block heals it.  ``to_dict()`` is what the command
    line prints with ``--json`` and the HTTP endpoint answers."""

    kind: str  # kill, pause, stop, restart, cut, slow, expire_session, zookeeper_outage
    text: str
    broker: int | None = None
    role: str = ""
    epoch: int | None = None
    epoch_name: str = ""
    pid: int | None = None
    id: int = 0
    healed: bool = False
    heal_text: str = ""
    _heal: Callable[[], str] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __str__(self) -> str:
        return self.text

    def heal(self) -> str:
        """Undo the fault (restart, resume, remove the link rules, restart ZooKeeper);
        returns what was done; nothing the second time."""
        with self._lock:
            if self.healed:
                return self.heal_text
            self.heal_text = self._heal() if self._heal is not None else "nothing to heal"
            self.healed = True
            return self.heal_text

    def __enter__(self) -> "FaultAction":
        return self

    def __exit__(self, *exc: object) -> None:
        self.heal()

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "text": self.text, "broker": self.broker, "role": self.role,
                "epoch": self.epoch, "epoch_name": self.epoch_name, "pid": self.pid, "healed": self.healed,
                "heal_text": self.heal_text}


def _target(target: Target | str) -> Role:
    return parse_role(target) if isinstance(target, str) else as_role(target)


class Faults:
    """The faults of one local cluster (the folder ``launcher.up`` recorded it in).

    ``zk`` reads ZooKeeper (:class:`minikafka.chaos.cluster.ZkReader`); ``links`` is a
    :class:`minikafka.chaos.links.ClusterLinks` when the brokers run in cgroups of their
    own (link faults need it); ``session_timeout_s`` bounds the waits of
    :meth:`expire_session`."""

    def __init__(self, dir: str, zk: Any, links: Any = None, session_timeout_s: float = 6.0,
                 restart_timeout_s: float = 120.0) -> None:
        self.dir = dir
        self.zk = zk
        self.links = links
        self.session_timeout_s = session_timeout_s
        self.restart_timeout_s = restart_timeout_s
        self.actions: list[FaultAction] = []
        self._lock = threading.Lock()

    # -- lookups ----------------------------------------------------------------------------
    def find(self, target: Target | str) -> Resolved:
        """The broker playing ``target`` now (see :func:`minikafka.testing.roles.resolve`)."""
        role = _target(target)
        found = resolve(self.zk, role)
        if found.broker not in load(self.dir).brokers:
            raise ClientError(f"no broker {found.broker} in cluster {self.dir}")
        return found

    def active(self) -> list[FaultAction]:
        """The faults not healed yet."""
        return [a for a in self.actions if not a.healed]

    def _record(self, action: FaultAction) -> FaultAction:
        with self._lock:
            action.id = len(self.actions) + 1
            self.actions.append(action)
        return action

    # -- process faults -------------------------------------------------------------------
    def kill(self, target: Target | str) -> FaultAction:
        """SIGKILL the broker playing ``target``; healing restarts it (and waits until it
        registered again)."""
        found = self.find(target)
        pid = launcher.kill(self.dir, found.broker, "KILL")
        return self._record(FaultAction("kill", f"killed {found.describe()}, pid {pid}", found.broker,
                                        str(found.role), found.epoch, found.epoch_name, pid,
                                        _heal=lambda: self._start(found.broker)))

    def pause(self, target: Target | str) -> FaultAction:
        """SIGSTOP the broker playing ``target`` (it keeps its sockets and its ZooKeeper
        session until the session times out); healing resumes it (SIGCONT)."""
        found = self.find(target)
        pid = launcher.kill(self.dir, found.broker, "STOP")
        self._until(lambda: launcher.proc_state(pid) == "stopped", 10, f"broker {found.broker} (pid {pid}) to stop")
        return self._record(FaultAction("pause", f"paused {found.describe()}, pid {pid}", found.broker,
                                        str(found.role), found.epoch, found.epoch_name, pid,
                                        _heal=lambda: self._resume(found.broker)))

    def stop(self, target: Target | str) -> FaultAction:
        """Stop the broker playing ``target`` with SIGTERM (a controlled shutdown: it
        hands its leaderships over first) and wait until it exited; healing restarts it."""
        found = self.find(target)
        pid = load(self.dir).broker(found.broker).pid
        outcome = launcher.stop(self.dir, found.broker)
        if outcome == "not running":
            raise ClientError(f"broker {found.broker} is not running: nothing to stop")
        return self._record(FaultAction("stop", f"stopped {found.describe()}, pid {pid} ({outcome})", found.broker,
                                        str(found.role), found.epoch, found.epoch_name, pid,
                                        _heal=lambda: self._start(found.broker)))

    def restart(self, target: Target | str, graceful: bool = False) -> FaultAction:
        """Kill (or, ``graceful``, stop) the broker playing ``target`` and start it again;
        returns once it registered again (the action is healed already)."""
        action = self.stop(target) if graceful else self.kill(target)
        restarted = action.heal()
        action.kind = "restart"
        action.text = f"restarted {action.text.split(' ', 1)[1]}: {restarted}"
        return action

    def _start(self, broker_id: int) -> str:
        state = launcher.proc_state(load(self.dir).broker(broker_id).pid)
        if state == "stopped":  # paused meanwhile by something else
            launcher.resume(self.dir, broker_id)
        elif state == "dead":
            b = launcher.start(self.dir, broker_id, wait=True, timeout_s=self.restart_timeout_s)
            return f"started broker {broker_id} again, pid {b.pid}"
        return f"broker {broker_id} is running"

    def _resume(self, broker_id: int) -> str:
        pid = load(self.dir).broker(broker_id).pid
        if launcher.proc_state(pid) == "stopped":
            launcher.resume(self.dir, broker_id)
            return f"resumed broker {broker_id}, pid {pid}"
        return self._start(broker_id)

    # -- link faults --------------------------------------------------------------------
    def _endpoint(self, target: Target | str) -> tuple[Any, str, Resolved | None]:
        if self.links is None:
            from ..chaos.links import unavailable
            why = unavailable() or "the cluster's brokers were not started in cgroups of their own"
            raise ClientError(f"link faults are not available on this cluster: {why}")
        if isinstance(target, str) and target.strip().lower() == ZOOKEEPER:
            return self.links.zookeeper, "ZooKeeper", None
        found = self.find(target)
        return self.links.brokers[found.broker], found.describe(), found

    def cut(self, a: Target | str, b: Target | str, both_ways: bool = True, reject: bool = False,
            loss: float | None = None) -> FaultAction:
        """Drop what ``a`` sends to ``b`` (and, ``both_ways``, what ``b`` sends to ``a``):
        brokers by role or id, or ``"zookeeper"``.  ``reject`` resets connections instead
        of dropping packets silently; ``loss`` (0 < loss < 1) drops only that share of the
        packets (see :meth:`slow`).  Healing removes the rules."""
        src, src_text, found = self._endpoint(a)
        dst, dst_text, other = self._endpoint(b)
        if src is dst:
            raise ClientError(f"{src_text} and {dst_text} are the same process: name two different ones")
        if loss is not None and not 0 < loss < 1:
            raise ClientError(f"loss must be between 0 and 1 (a share of the packets), got {loss}")
        cut = self.links.links.cut(src, dst, both_ways=both_ways, reject=reject, loss=loss)
        who = found or other
        kind = "slow" if loss is not None else "cut"
        arrow = "<->" if both_ways else "->"
        what = (f"dropping {loss:.0%} of the packets" if loss is not None
                else ("resetting connections" if reject else "dropping every packet"))
        text = f"{'slowed' if loss is not None else 'cut'} the link {src_text} {arrow} {dst_text} ({what})"

        def heal() -> str:
            self.links.links.heal(cut)
            return f"healed the link {src_text} {arrow} {dst_text}"
        return self._record(FaultAction(kind, text, who.broker if who else None, str(who.role) if who else "",
                                        who.epoch if who else None, who.epoch_name if who else "", _heal=heal))

    def slow(self, a: Target | str, b: Target | str, loss: float = 0.3, both_ways: bool = True) -> FaultAction:
        """Slow the link between ``a`` and ``b`` down by dropping ``loss`` of its packets at
        random: TCP retransmits each after 200 ms or more, so requests take longer and
        some time out, without the link being cut.  Healing removes the rules."""
        return self.cut(a, b, both_ways=both_ways, loss=loss)

    # -- ZooKeeper -----------------------------------------------------------------------
    def _owner(self, broker_id: int) -> int | None:
        got = self.zk.get(layout.broker_path(broker_id))
        return got[1].ephemeralOwner if got else None

    def _until(self, cond: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                if cond():
                    return
            except Exception:  # ZooKeeper not reachable for a moment: ask again
                pass
            if time.monotonic() >= deadline:
                raise ClientError(f"timed out after {timeout_s:g} s waiting for {what}")
            time.sleep(0.1)

    def expire_session(self, target: Target | str, timeout_s: float | None = None) -> FaultAction:
        """Make ZooKeeper expire the session of the broker playing ``target``: its link to
        ZooKeeper is cut (when link faults are available; else the broker is paused) until
        ZooKeeper has removed its registration, then restored.  Returns then, with the
        expired session's id in the text; healing waits until the broker registered again
        under a new session."""
        found = self.find(target)
        owner = self._owner(found.broker)
        if owner is None:
            raise ClientError(f"broker {found.broker} is not registered in ZooKeeper: it has no session to expire")
        wait_s = timeout_s if timeout_s is not None else self.session_timeout_s * 3 + 10
        if self.links is not None:
            how = "its link to ZooKeeper cut"
            cut = self.links.links.cut(self.links.brokers[found.broker], self.links.zookeeper, both_ways=True)
            undo: Callable[[], None] = lambda: self.links.links.heal(cut)
        else:
            how = "paused"
            launcher.kill(self.dir, found.broker, "STOP")
            undo = lambda: launcher.resume(self.dir, found.broker)
        try:
            self._until(lambda: self._owner(found.broker) != owner, wait_s,
                        f"ZooKeeper to expire broker {found.broker}'s session {owner:#x}")
        finally:
            undo()

        def heal() -> str:
            self._until(lambda: self._owner(found.broker) not in (None, owner), self.restart_timeout_s,
                        f"broker {found.broker} to register again")
            return f"broker {found.broker} registered again under session {self._owner(found.broker):#x}"
        text = f"expired the ZooKeeper session {owner:#x} of {found.describe()} ({how} until it expired)"
        return self._record(FaultAction("expire_session", text, found.broker, str(found.role), found.epoch,
                                        found.epoch_name, _heal=heal))

    def zookeeper_outage(self, servers: list[int] | None = None) -> FaultAction:
        """Kill ZooKeeper (SIGKILL): every server, or the servers ``servers`` names (ids
        1..N of an ensemble; a single ZooKeeper is server 1).  Healing starts them again
        and waits until they serve."""
        state = load(self.dir)
        zk = state.zookeeper
        if zk.external:
            raise ClientError(f"cluster {self.dir} uses an external ZooKeeper ({zk.connect}): it runs no server "
                              "of its own to stop")
        ids = list(servers) if servers else ([s.id for s in zk.servers] or [1])
        pids = [launcher.zookeeper_kill(self.dir, sid) for sid in ids]
        names = ", ".join(f"{sid} (pid {pid})" for sid, pid in zip(ids, pids))

        def heal() -> str:
            for sid in ids:
                launcher.zookeeper_start(self.dir, sid, wait=True, timeout_s=self.restart_timeout_s)
            return f"ZooKeeper server{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} serving again"
        return self._record(FaultAction("zookeeper_outage", f"killed ZooKeeper server{'s' if len(ids) > 1 else ''} "
                                        f"{names}", _heal=heal))

    # -- healing --------------------------------------------------------------------------
    def heal(self, action_id: int | None = None) -> list[str]:
        """Heal one recorded fault by its id, or every fault still in force (newest first)."""
        if action_id is not None:
            matching = [a for a in self.actions if a.id == action_id]
            if not matching:
                raise ClientError(f"no fault {action_id} (faults so far: {len(self.actions)})")
            return [matching[0].heal()]
        return [a.heal() for a in reversed(self.active())]

    def heal_all(self) -> list[str]:
        """Heal every recorded fault, then whatever else is down in the cluster: resume
        paused brokers, restart dead ones and dead ZooKeeper servers, remove every link
        rule.  Returns what was done, one line each."""
        done = []
        for a in reversed(self.active()):
            try:
                done.append(a.heal())
            except Exception as exc:
                done.append(f"healing {a.kind} failed: {exc}")
        if self.links is not None and self.links.links.active():
            self.links.links.heal()
            done.append("removed every link fault")
        state = load(self.dir)
        zk = state.zookeeper
        if not zk.external:
            for s in (zk.servers or [None]):
                pid = s.pid if s is not None else zk.pid
                sid = s.id if s is not None else 1
                if launcher.proc_state(pid) == "dead":
                    launcher.zookeeper_start(self.dir, sid, wait=True, timeout_s=self.restart_timeout_s)
                    done.append(f"started ZooKeeper server {sid} again")
        for bid, b in sorted(state.brokers.items()):
            st = launcher.proc_state(b.pid)
            if st == "stopped":
                launcher.resume(self.dir, bid)
                done.append(f"resumed broker {bid}")
            elif st == "dead":
                launcher.start(self.dir, bid, wait=True, timeout_s=self.restart_timeout_s)
                done.append(f"started broker {bid} again")
        return done
