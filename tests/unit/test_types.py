"""The type checker passes over the cores: `python -m mypy` from the repository root, with
the configuration and the list of checked files in pyproject.toml's [tool.mypy]."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORES = ["minikafka/protocol", "minikafka/log", "minikafka/replication", "minikafka/controller/core.py",
         "minikafka/groups", "minikafka/auth", "minikafka/zk/layout.py", "minikafka/errors.py", "minikafka/config.py"]


def mypy_config() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]


def test_mypy_checks_the_cores():
    files = mypy_config()["files"]
    assert set(CORES) <= set(files), f"not type-checked: {sorted(set(CORES) - set(files))}"
    for name in files:
        assert (REPO / name).exists(), f"[tool.mypy] files names {name}, which does not exist"


def test_mypy_passes():
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"mypy found errors:\n{run.stdout}{run.stderr}"
    assert "Success: no issues found" in run.stdout
