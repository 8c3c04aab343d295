"""The pure core (protocol/, log/, replication/, groups/, transactions/, auth/, controller/core.py, zk/layout.py),
the fault-testing vocabulary (faults/) and the single-partition model of the KIP scenarios
(sim/partition_model.py, sim/scenarios.py) do no I/O: no network, clock, randomness,
processes, threads, environment or files.

This file checks each pure module's own source; tests/unit/test_imports.py checks, with the same
lists, every module the pure core reaches through its imports."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import minikafka

PURE_PACKAGES = ("protocol", "log", "replication", "groups", "auth", "faults", "transactions")
FORBIDDEN_MODULES = {"asyncio", "aiohttp", "kazoo", "time", "random", "socket", "os", "threading", "subprocess",
                     "importlib"}
# file I/O (builtin open, io.open, Path.open and friends), console I/O and dynamic code
FORBIDDEN_CALLS = {"open", "read_text", "write_text", "read_bytes", "write_bytes", "input", "print",
                   "breakpoint", "exec", "eval", "__import__"}

ROOT = Path(minikafka.__file__).resolve().parent
PURE_MODULES = ("controller/core.py", "zk/layout.py",  # the controller's decision core, the znode layout
                "sim/partition_model.py", "sim/scenarios.py",  # the KIP scenarios' model of one partition
                "listener_spec.py",  # listeners / advertised.listeners rules
                "broker/connection_policy.py",  # the rules of every client connection
                "zk/errors.py")  # the ZooKeeper adapter's errors
FILES = sorted([p for pkg in PURE_PACKAGES for p in (ROOT / pkg).rglob("*.py")] + [ROOT / m for m in PURE_MODULES])


def violations(source: str, filename: str = "<string>") -> list[str]:
    """Forbidden imports and calls in ``source``, as readable lines."""
    tree = ast.parse(source, filename)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    found.append(f"{filename}:{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.split(".")[0] in FORBIDDEN_MODULES:
                found.append(f"{filename}:{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in FORBIDDEN_CALLS:
                found.append(f"{filename}:{node.lineno}: call {name}()")
    return found


def test_the_pure_packages_exist():
    names = {p.relative_to(ROOT).as_posix() for p in FILES}
    for expected in ("protocol/records/batch.py", "log/partition_log.py", "log/epoch_cache.py", "log/checkpoint.py",
                     "replication/rules.py", "replication/partition.py", "controller/core.py",
                     "groups/group.py", "groups/records.py", "auth/acls.py", "auth/users.py", "zk/layout.py"):
        assert expected in names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_io_in_pure_core(path):
    assert violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT))) == []


@pytest.mark.parametrize("source", [
    "import time",
    "import os.path",
    "import asyncio as aio",
    "from random import randint",
    "from kazoo.client import KazooClient",
    "import socket, json",
    "from threading import Lock",
    "import subprocess",
    "import aiohttp.web",
    "def f():\n    import time\n    return time.time()",
    "data = open('x').read()",
    "import io\nio.open('x')",
    "with open('f', 'w') as fh:\n    pass",
    "Path('x').open()",
    "Path('x').write_text('y')",
    "import importlib\nimportlib.import_module('time')",
    "__import__('time')",
])
def test_checker_catches(source):
    assert violations(source) != []


@pytest.mark.parametrize("source", [
    "import zlib, struct, bisect",
    "from ..errors import KafkaError",
    "from . import rules",
    "from .time_utils import x",  # a relative module named like a forbidden one is local
    "timestamp = 5\nopen_count = 1",
    "def opened(x):\n    return x.is_open",
])
def test_checker_allows(source):
    assert violations(source) == []
