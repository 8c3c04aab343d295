"""Separate "hosts" on one Linux machine: network namespaces on a private bridge.

:class:`Hosts` makes one network namespace per host and a switch namespace holding a
bridge; each host gets a veth pair whose one end (``eth0``, with the host's IP) is in
the host's namespace and whose other end is a port of the bridge.  Nothing is added
to the machine's own namespace, so the hosts' subnet cannot clash with its networks
and the bridge's traffic passes no firewall of the machine's; names carry a random
suffix, so runs side by side do not collide, and the pid of the run that made them, so
a later run removes what a killed one left.

:meth:`Hosts.link_down` sets a host's bridge port down (the cable pulled: the host's
``eth0`` loses its carrier and nothing reaches it either way); :meth:`Hosts.link_up`
plugs it back.  :meth:`Hosts.spawn` starts a process in a host's namespace with
``ip netns exec`` (which execs, so the pid is the process's own); :meth:`Hosts.run`
runs a command there and waits.  :meth:`Hosts.close` kills what it started (by pid)
and deletes the namespaces, which removes their links and the bridge.

Where :mod:`minikafka.chaos.links` cuts chosen links between processes that all share
127.0.0.1 (iptables rules per cgroup), these hosts have addresses of their own and a
fault is a whole host's link, as when a machine drops off the network.

Needs root and ``ip`` (iproute2).
"""
from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
from pathlib import Path
from typing import Any

IP_TIMEOUT_S = 20.0
PREFIX = "mkh-"  # namespaces are mkh-<pid of the test run>-<random>-<host>


def remove_stale() -> None:
    """Delete the namespaces of runs whose process is gone."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=IP_TIMEOUT_S).stdout
    for line in listed.splitlines():
        m = re.match(rf"{PREFIX}(\d+)-[0-9a-f]+-\S+", line)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            subprocess.run(["ip", "netns", "del", line.split()[0]], capture_output=True, timeout=IP_TIMEOUT_S)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=IP_TIMEOUT_S)


class Hosts:
    """Hosts by name, each with an IP of ``subnet``.0/24 (``subnet`` like ``10.254.213``)."""

    def __init__(self, subnet: str) -> None:
        self.subnet = subnet
        self.prefix = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}-"
        self.switch = f"{self.prefix}sw"
        self.namespaces: dict[str, str] = {}  # host -> namespace
        self.ips: dict[str, str] = {}
        self.ports: dict[str, str] = {}  # host -> its bridge port in the switch namespace
        self.procs: list[subprocess.Popen] = []
        self._made: list[str] = []  # namespaces to delete, in order made

    def open(self) -> None:
        """Make the switch namespace and its bridge (call :meth:`close` also when this fails).
        Namespaces left by a run that was killed before it could clean up (named after a
        pid that is gone) are deleted first."""
        remove_stale()
        _ip("netns", "add", self.switch)
        self._made.append(self.switch)
        _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.switch, "link", "set", "br0", "up")

    def add(self, host: str, last_octet: int) -> str:
        """A new host with IP ``subnet``.``last_octet`` on the bridge; returns the IP."""
        ns = f"{self.prefix}{host}"
        port = f"p{len(self.namespaces)}"
        ip = f"{self.subnet}.{last_octet}"
        _ip("netns", "add", ns)
        self._made.append(ns)
        _ip("link", "add", "name", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", self.switch)
        _ip("-n", ns, "addr", "add", f"{ip}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", self.switch, "link", "set", port, "master", "br0")
        _ip("-n", self.switch, "link", "set", port, "up")
        self.namespaces[host], self.ips[host], self.ports[host] = ns, ip, port
        return ip

    def link_down(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self.ports[host], "down")

    def link_up(self, host: str) -> None:
        _ip("-n", self.switch, "link", "set", self.ports[host], "up")

    def spawn(self, host: str, argv: list[str], log: Path, **kwargs: Any) -> subprocess.Popen:
        """Start ``argv`` in ``host``'s namespace, its output in ``log``."""
        with open(log, "wb") as out:
            proc = subprocess.Popen(["ip", "netns", "exec", self.namespaces[host], *argv], stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
        self.procs.append(proc)
        return proc

    def run(self, host: str, argv: list[str], input: str | None = None,
            timeout_s: float = 60) -> subprocess.CompletedProcess:
        """Run ``argv`` in ``host``'s namespace; its output as text."""
        return subprocess.run(["ip", "netns", "exec", self.namespaces[host], *argv], input=input,
                              capture_output=True, text=True, timeout=timeout_s,
                              stdin=None if input is not None else subprocess.DEVNULL)

    def close(self) -> None:
        """Kill the processes started here (by pid), then delete every namespace made."""
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for ns in reversed(self._made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=IP_TIMEOUT_S)
        self._made.clear()
