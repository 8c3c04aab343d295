"""The type checker passes over the cores: `python -m mypy` from the repository root, with
the configuration and the list of checked files in pyproject.toml's [tool.mypy]."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORES = ["minikafka/protocol", "minikafka/log", "minikafka/replication", "minikafka/controller/core.py",
         "minikafka/groups", "minikafka/auth", "minikafka/zk/layout.py", "minikafka/errors.py", "minikafka/config.py"]
# the controller's shell too: its queue, its channels, its ZooKeeper store
CHECKED = [*CORES, "minikafka/controller/controller.py", "minikafka/controller/events.py",
           "minikafka/controller/channel.py", "minikafka/controller/store.py",
           # the clients and the simulation that runs them
           "minikafka/client", "minikafka/sim"]


def mypy_config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def covered(path: str, files: list[str]) -> bool:
    """Whether ``path`` is one of ``files`` or inside one of its folders."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in files)


def test_mypy_checks_the_cores():
    files = mypy_config()["files"]
    missing = [name for name in CHECKED if not covered(name, files)]
    assert missing == [], f"not type-checked: {missing}"
    for name in files:
        assert (REPO / name).exists(), f"[tool.mypy] files names {name}, which does not exist"


def test_the_controller_is_checked_with_every_function_typed():
    strict = [o for o in mypy_config()["overrides"] if o.get("disallow_untyped_defs")]
    assert any("minikafka.controller.*" in o["module"] for o in strict)


# An event type added to a union without a case in its dispatch: (file, union's first line, new first line).
UNIONS = {
    "the core's events": ("minikafka/controller/core.py", "Event = (Failover |", "Event = (Unhandled | Failover |"),
    "the shell's queue": ("minikafka/controller/events.py", "QueueEvent = (Startup |",
                          "QueueEvent = (Unhandled | Startup |"),
}


@pytest.mark.parametrize("name", sorted(UNIONS))
def test_mypy_fails_when_an_event_type_has_no_case(name, tmp_path):
    """The controller's dispatch is a ``match`` ending in ``assert_never``: a new event
    type without a case is a type error, not a failure at run time."""
    path, union, widened = UNIONS[name]
    shutil.copytree(REPO / "minikafka", tmp_path / "minikafka", ignore=shutil.ignore_patterns("__pycache__", "static"))
    source = (tmp_path / path).read_text(encoding="utf-8")
    assert source.count(union) == 1
    source = source.replace(union, widened).replace(
        "\n\n\n# -- ", "\n\n\n@dataclass(frozen=True)\nclass Unhandled:\n    pass\n\n\n# -- ", 1)
    (tmp_path / path).write_text(source, encoding="utf-8")
    files = [path, "minikafka/controller/controller.py"]
    run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
                          "--cache-dir", str(tmp_path / "cache"), *files],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr
    assert '"assert_never" has incompatible type "Unhandled"' in run.stdout, run.stdout


def test_mypy_passes():
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"mypy found errors:\n{run.stdout}{run.stderr}"
    assert "Success: no issues found" in run.stdout
