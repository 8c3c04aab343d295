"""Node.js Kafka clients for the tests, installed with npm into a cache outside the
repository (``~/.cache/minikafka/node/<package>-<version>``), never into the work tree.

``kafkajs_path()`` installs the pinned kafkajs once (npm needs the registry only the first
time) and returns its ``node_modules`` folder, for ``NODE_PATH``. ``run_node(script, *args)``
runs a script with it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

KAFKAJS_VERSION = "2.2.4"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "minikafka" / "node"


def kafkajs_path() -> Path:
    """The ``node_modules`` folder holding kafkajs ``KAFKAJS_VERSION`` (installed if missing)."""
    npm = shutil.which("npm")
    assert npm and shutil.which("node"), "node and npm are needed for the kafkajs tests; .ci/run installs them"
    target = CACHE / f"kafkajs-{KAFKAJS_VERSION}"
    modules = target / "node_modules"
    if (modules / "kafkajs" / "package.json").exists():
        return modules
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="kafkajs-", dir=CACHE))
    try:
        r = subprocess.run([npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save",
                            "--loglevel=error", f"kafkajs@{KAFKAJS_VERSION}"],
                           capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, f"npm install kafkajs failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
        try:
            staging.rename(target)  # atomic: a concurrent install that won leaves its copy in place
        except OSError:
            if not (modules / "kafkajs" / "package.json").exists():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return modules


def run_node(script: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    """``node script args`` with kafkajs on ``NODE_PATH``; text stdout and stderr."""
    env = {**os.environ, "NODE_PATH": str(kafkajs_path()), "KAFKAJS_NO_PARTITIONER_WARNING": "1"}
    return subprocess.run(["node", str(script), *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=env)
