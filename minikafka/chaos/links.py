"""Link faults between local processes: iptables rules on loopback, each broker in its
own cgroup v2.

Every process of a local cluster talks over 127.0.0.1, so a port alone says where a
packet goes but not which process sent it (the sender uses an ephemeral port).  So each
broker runs in a cgroup of its own under the unified (v2) hierarchy: ``launcher.up``
starts it through the prefix of :meth:`Links.wrap`, which writes the shell's pid to
the cgroup's ``cgroup.procs`` and then ``exec``\\ s the broker (a restart joins the same
cgroup again, children inherit it, and every socket the broker opens belongs to it).
``iptables -m cgroup --path`` then matches the packets a broker sends.

What a cut drops, for a cut from ``src`` to ``dst``:

* **requests**: the packets ``src`` sends on connections it opened to ``dst``'s
  listening ports (its fetches, the controller's LeaderAndIsr, a broker's ZooKeeper
  requests): ``-m cgroup --path SRC -p tcp -m multiport --dports DST_PORTS``;
* **answers**: the packets ``src`` sends on connections ``dst`` opened to ``src``'s
  ports (the answers to ``dst``'s fetches, ZooKeeper's answers to a broker).  Those
  carry no trace of ``dst`` but the connection: a rule that is always on marks every
  connection a cgroup opens (``CONNMARK``, 8 bits of the connection mark), and the cut
  matches ``--sports SRC_PORTS -m conntrack --ctdir REPLY -m connmark --mark DST``.

A cut drops (``DROP``: the sender retransmits, its requests time out) or, with
``reject``, refuses (``REJECT --reject-with tcp-reset``: the connection is reset at
once).  All rules live in one chain of their own, hooked first into ``OUTPUT``
(loopback packets pass ``OUTPUT`` once, so a rule there sees each of them).
:meth:`Links.heal` removes the cuts; :meth:`Links.close` (the context manager's
exit) also removes the marks, the chain and its hook, moves the processes still in
the cgroups back to this process's own cgroup and removes the cgroups.  A run that was
killed before it could clean up leaves rules and cgroups named after its pid; the next
:class:`Links` removes those of dead pids.

Needs root, ``iptables`` (with the ``cgroup``, ``conntrack`` and ``connmark``
matches) and a mounted cgroup v2 hierarchy; :func:`check_available` says in one line
what is missing.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

CHAIN_PREFIX = "MKL-"
CGROUP_PREFIX = "minikafka-links-"
MARK_SHIFT = 20
MARK_MASK = 0xFF << MARK_SHIFT
IPTABLES_TIMEOUT_S = 20.0


class LinkFaultError(Exception):
    """Link faults cannot be set up here (the message says why, in one line)."""


def iptables_path() -> str | None:
    """The iptables binary (PATH, then /usr/sbin and /sbin), or None."""
    found = shutil.which("iptables")
    if found:
        return found
    for p in ("/usr/sbin/iptables", "/sbin/iptables"):
        if os.access(p, os.X_OK):
            return p
    return None


def cgroup2_root() -> str | None:
    """Where the cgroup v2 (unified) hierarchy is mounted: ``/sys/fs/cgroup`` on a pure v2
    system, ``/sys/fs/cgroup/unified`` on a hybrid one; None when it is not mounted."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return None
    found = [line.split()[1] for line in mounts if len(line.split()) > 2 and line.split()[2] == "cgroup2"]
    for preferred in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if preferred in found:
            return preferred
    return found[0] if found else None


def own_cgroup() -> str:
    """This process's cgroup in the v2 hierarchy, relative to its root ("" for the root)."""
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:].strip().strip("/")
    except OSError:
        pass
    return ""


def unavailable() -> str | None:
    """Why link faults cannot run here (one line), or None when they can."""
    if os.geteuid() != 0:
        return "link faults need root (they add iptables rules and cgroups): run as root"
    if iptables_path() is None:
        return "link faults need iptables, which is not installed (apt-get install iptables)"
    root = cgroup2_root()
    if root is None:
        return "link faults need the cgroup v2 hierarchy, which is not mounted (no cgroup2 in /proc/mounts)"
    if not os.access(root, os.W_OK):
        return f"link faults need a writable cgroup v2 hierarchy, and {root} is read-only"
    return None


def check_available() -> None:
    """Raise :class:`LinkFaultError` saying what is missing (root, iptables, cgroup v2)."""
    reason = unavailable()
    if reason:
        raise LinkFaultError(reason)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Endpoint:
    """A process as the rules see it: a name for messages, the ports it listens on, and
    the cgroup its own connections come from (relative to the cgroup v2 root; None for a
    process that is not placed, such as ZooKeeper, which opens no connection to brokers)."""

    name: str
    ports: tuple[int, ...]
    cgroup: str | None = None
    mark: int = 0


@dataclass
class Cut:
    """One link fault: the iptables rules (each a list of arguments after the chain) and
    a description for traces."""

    description: str
    rules: list[list[str]] = field(default_factory=list)
    active: bool = True


class Links:
    """Cuts and heals links between local processes (see the module doc).  Use it as a
    context manager: everything it created is removed on exit, also after an error."""

    def __init__(self) -> None:
        check_available()
        self.iptables = iptables_path() or "iptables"
        self.root = Path(cgroup2_root() or "/sys/fs/cgroup")
        token = secrets.token_hex(3)
        self.chain = f"{CHAIN_PREFIX}{os.getpid()}-{token}"
        self.group = f"{CGROUP_PREFIX}{os.getpid()}-{token}"
        self.cuts: list[Cut] = []
        self.marks: dict[str, int] = {}  # cgroup path -> mark number
        self.cgroups: list[str] = []
        self.opened = False

    # -- set-up and clean-up ----------------------------------------------------------
    def open(self) -> "Links":
        """Remove leftovers of dead runs, create the parent cgroup and the chain, hook it."""
        if self.opened:
            return self
        cleanup_stale(self.iptables, self.root)
        (self.root / self.group).mkdir(exist_ok=True)
        self._ipt("-N", self.chain)
        self.opened = True
        self._ipt("-I", "OUTPUT", "1", "-j", self.chain)
        return self

    def close(self) -> None:
        """Heal every cut, remove the marks, the chain and its hook, and the cgroups
        (their processes go back to this process's cgroup)."""
        if not self.opened:
            return
        self.opened = False
        errors = []
        for args in (["-D", "OUTPUT", "-j", self.chain], ["-F", self.chain], ["-X", self.chain]):
            try:
                self._ipt(*args)
            except LinkFaultError as exc:
                errors.append(str(exc))
        for c in self.cuts:
            c.active = False
        errors += _remove_cgroup_tree(self.root, self.root / self.group, self.root / own_cgroup())
        if errors:
            raise LinkFaultError("; ".join(errors))

    def __enter__(self) -> "Links":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- iptables ---------------------------------------------------------------------
    def _ipt(self, *args: str) -> str:
        out = subprocess.run([self.iptables, "-w", "5", *args], capture_output=True, text=True,
                             timeout=IPTABLES_TIMEOUT_S)
        if out.returncode != 0:
            msg = (out.stderr or out.stdout).strip().splitlines()
            raise LinkFaultError(f"iptables {' '.join(args)}: {msg[-1] if msg else 'status ' + str(out.returncode)}")
        return out.stdout

    def rules(self) -> list[str]:
        """The rules in this run's chain, as ``iptables -S`` prints them."""
        if not self.opened:
            return []
        return [line for line in self._ipt("-S", self.chain).splitlines() if not line.startswith("-N ")]

    # -- placing processes --------------------------------------------------------------
    def cgroup(self, name: str) -> str:
        """The cgroup ``name`` of this run (created when missing), relative to the v2 root."""
        rel = f"{self.group}/{name}"
        path = self.root / rel
        if not path.is_dir():
            path.mkdir()
            self.cgroups.append(rel)
        return rel

    def wrap(self, name: str) -> list[str]:
        """A command prefix that runs a command in cgroup ``name``: ``sh -c`` writes its own
        pid to ``cgroup.procs``, then ``exec``\\ s the command (still started when the
        cgroup is gone, so that a broker restarted after :meth:`close` runs anyway)."""
        procs = self.root / self.cgroup(name) / "cgroup.procs"
        return ["/bin/sh", "-c", '{ echo $$ > "$0"; } 2>/dev/null; exec "$@"', str(procs)]

    def place(self, pid: int, name: str) -> None:
        """Move a running process into cgroup ``name``.  Only the sockets it opens from now
        on are matched: start processes through :meth:`wrap` where possible."""
        (self.root / self.cgroup(name) / "cgroup.procs").write_text(f"{pid}\n")

    def members(self, name: str) -> list[int]:
        """The pids in cgroup ``name``."""
        try:
            text = (self.root / self.group / name / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(x) for x in text.split()]

    def endpoint(self, name: str, ports: Iterable[int | None], cgroup: str | None = None) -> Endpoint:
        """An endpoint for :meth:`cut`; one with a cgroup gets its connections marked from
        now on (the rule stays until :meth:`close`)."""
        mark = 0
        if cgroup is not None:
            if cgroup not in self.marks:
                if len(self.marks) >= 255:
                    raise LinkFaultError("at most 255 endpoints with a cgroup per run")
                self.marks[cgroup] = len(self.marks) + 1
                self._ipt("-I", self.chain, "1", "-o", "lo", "-p", "tcp", "-m", "cgroup", "--path", cgroup,
                          "-m", "conntrack", "--ctdir", "ORIGINAL",
                          "-j", "CONNMARK", "--set-xmark", f"{self.marks[cgroup] << MARK_SHIFT:#x}/{MARK_MASK:#x}")
            mark = self.marks[cgroup]
        return Endpoint(name, tuple(p for p in ports if p), cgroup, mark)

    # -- cuts ---------------------------------------------------------------------------
    def cut(self, src: Endpoint, dst: Endpoint, *, only: str | None = None, both_ways: bool = False,
            reject: bool = False, loss: float | None = None) -> Cut:
        """Drop what ``src`` sends to ``dst``: its requests on the connections it opened to
        ``dst`` and its answers on the connections ``dst`` opened to it (``only``:
        ``"requests"`` or ``"answers"``).  ``both_ways`` cuts ``dst`` to ``src`` as well;
        ``reject`` resets connections instead of dropping packets silently; ``loss``
        (between 0 and 1) drops only that share of the packets, at random
        (``-m statistic --mode random``): TCP retransmits them, so the link is slow
        rather than cut."""
        if only not in (None, "requests", "answers"):
            raise ValueError("only must be None, 'requests' or 'answers'")
        if loss is not None and not 0 < loss < 1:
            raise ValueError(f"loss must be between 0 and 1, got {loss}")
        target = ["REJECT", "--reject-with", "tcp-reset"] if reject else ["DROP"]
        if loss is not None:
            target = ["-m", "statistic", "--mode", "random", "--probability", f"{loss:.4f}", "-j", *target]
        else:
            target = ["-j", *target]
        rules: list[list[str]] = []
        pairs = [(src, dst), (dst, src)] if both_ways else [(src, dst)]
        for a, b in pairs:
            if only in (None, "requests") and a.cgroup is not None and b.ports:
                rules.append(["-o", "lo", "-p", "tcp", "-m", "cgroup", "--path", a.cgroup,
                              "-m", "multiport", "--dports", ",".join(map(str, b.ports)), *target])
            if only in (None, "answers") and b.mark and a.ports:
                rules.append(["-o", "lo", "-p", "tcp", "-m", "multiport", "--sports", ",".join(map(str, a.ports)),
                              "-m", "conntrack", "--ctdir", "REPLY",
                              "-m", "connmark", "--mark", f"{b.mark << MARK_SHIFT:#x}/{MARK_MASK:#x}", *target])
        if not rules:
            raise LinkFaultError(f"nothing to cut from {src.name} to {dst.name}: neither opens connections "
                                 f"to the other from a cgroup of this run")
        what = {None: "everything", "requests": "the requests", "answers": "the answers"}[only]
        arrow = "<->" if both_ways else "->"
        share = f" ({loss:.0%} of the packets)" if loss is not None else ""
        desc = f"{'reject' if reject else 'drop'} {what}{share} {src.name} {arrow} {dst.name}"
        return self._add(Cut(desc, rules))

    def block_port(self, port: int, reject: bool = True) -> Cut:
        """Every TCP packet to local ``port``, from any process, refused (reset) or dropped."""
        target = ["REJECT", "--reject-with", "tcp-reset"] if reject else ["DROP"]
        rule = ["-o", "lo", "-p", "tcp", "-d", "127.0.0.1", "--dport", str(port), "-j", *target]
        return self._add(Cut(f"{'reject' if reject else 'drop'} every connection to port {port}", [rule]))

    def _add(self, cut: Cut) -> Cut:
        if not self.opened:
            raise LinkFaultError("Links is not open (use it as a context manager)")
        added: list[list[str]] = []
        try:
            for rule in cut.rules:
                self._ipt("-A", self.chain, *rule)
                added.append(rule)
        except LinkFaultError:
            for rule in added:
                self._ipt("-D", self.chain, *rule)
            raise
        self.cuts.append(cut)
        return cut

    def heal(self, cut: Cut | None = None) -> None:
        """Remove one cut's rules, or every cut's (the connection marks stay)."""
        for c in ([cut] if cut is not None else list(self.cuts)):
            if c.active and self.opened:
                for rule in c.rules:
                    try:
                        self._ipt("-D", self.chain, *rule)
                    except LinkFaultError:
                        pass
            c.active = False
            if c in self.cuts:
                self.cuts.remove(c)

    def active(self) -> list[Cut]:
        """The cuts in force."""
        return [c for c in self.cuts if c.active]


# ---------------------------------------------------------------- clean-up

def _remove_cgroup_tree(root: Path, top: Path, home: Path) -> list[str]:
    """Move every process of ``top`` and its children to ``home``, then remove them."""
    errors: list[str] = []
    if not top.is_dir():
        return errors
    dirs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True) + [top]
    for d in dirs:
        for _ in range(50):
            try:
                pids = (d / "cgroup.procs").read_text().split()
            except OSError:
                pids = []
            for pid in pids:
                try:
                    (home / "cgroup.procs").write_text(f"{pid}\n")
                except OSError:
                    pass  # it exited meanwhile
            try:
                d.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)  # a process was forking into it, or is exiting
        else:
            errors.append(f"could not remove cgroup {d.relative_to(root)}")
    return errors


def cleanup_stale(iptables: str | None = None, root: Any = None) -> list[str]:
    """Remove chains and cgroups left by runs whose process is gone (killed before they
    could clean up); returns what was removed."""
    iptables = iptables or iptables_path() or "iptables"
    root = Path(root or cgroup2_root() or "/sys/fs/cgroup")
    removed: list[str] = []
    try:
        listing = subprocess.run([iptables, "-w", "5", "-S"], capture_output=True, text=True,
                                 timeout=IPTABLES_TIMEOUT_S).stdout
    except (OSError, subprocess.TimeoutExpired):
        listing = ""
    for chain in sorted(set(re.findall(rf"^-N ({CHAIN_PREFIX}(\d+)-[0-9a-f]+)$", listing, re.M))):
        name, pid = chain
        if _pid_alive(int(pid)):
            continue
        for args in (["-D", "OUTPUT", "-j", name], ["-F", name], ["-X", name]):
            subprocess.run([iptables, "-w", "5", *args], capture_output=True, timeout=IPTABLES_TIMEOUT_S)
        removed.append(f"chain {name}")
    try:
        groups = [p for p in root.iterdir() if p.is_dir() and p.name.startswith(CGROUP_PREFIX)]
    except OSError:
        groups = []
    for g in groups:
        m = re.match(rf"{CGROUP_PREFIX}(\d+)-", g.name)
        if m and not _pid_alive(int(m.group(1))):
            if not _remove_cgroup_tree(root, g, root / own_cgroup()):
                removed.append(f"cgroup {g.name}")
    return removed


def leftovers() -> list[str]:
    """Chains and cgroups of this module that exist right now (any run's): for tests."""
    out = []
    path = iptables_path()
    if path:
        listing = subprocess.run([path, "-w", "5", "-S"], capture_output=True, text=True,
                                 timeout=IPTABLES_TIMEOUT_S).stdout
        out += [f"chain {c}" for c in re.findall(rf"^-N ({CHAIN_PREFIX}\S+)$", listing, re.M)]
        out += [f"rule {line}" for line in listing.splitlines() if f"-j {CHAIN_PREFIX}" in line]
    root = cgroup2_root()
    if root:
        out += [f"cgroup {p.name}" for p in Path(root).iterdir() if p.is_dir() and p.name.startswith(CGROUP_PREFIX)]
    return out


class ClusterLinks:
    """The processes of a local cluster as :class:`Endpoint`\\ s of one :class:`Links`:
    brokers by id (their cgroups are ``broker-N``, as :meth:`Links.wrap` placed them) and
    ZooKeeper (its client port only; every server's of an ensemble)."""

    def __init__(self, links: Links, state: Any) -> None:
        self.links = links
        self.brokers: dict[int, Endpoint] = {}
        for bid, b in sorted(state.brokers.items()):
            self.brokers[bid] = links.endpoint(f"broker {bid}", (b.port, b.kafka_port), cgroup=links.cgroup(f"broker-{bid}"))
        zk = state.zookeeper
        port = zk.port if zk.port else int(zk.connect.split(",")[0].split("/")[0].rsplit(":", 1)[1])
        ports = tuple(s.client_port for s in getattr(zk, "servers", ())) or (port,)
        self.zookeeper = links.endpoint("ZooKeeper", ports)

    @staticmethod
    def wrap_for(links: Links):
        """The ``wrap`` argument of ``launcher.up`` that starts broker N in cgroup ``broker-N``."""
        return lambda broker_id: links.wrap(f"broker-{broker_id}")
