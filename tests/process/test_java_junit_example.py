"""examples/java-junit: a JUnit 5 test (Maven) that starts a cluster with `minikafka fault
serve`, kills the leader of its partition through the HTTP endpoint while a Java
KafkaProducer writes, and checks with a Java KafkaConsumer that every acknowledged
record is in the log once, at its offset.  Run here as a user runs it: `mvn test`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "java-junit"


def test_the_junit_example_passes_through_a_leader_kill():
    mvn = shutil.which("mvn")
    assert mvn, "Maven (mvn) is needed to build examples/java-junit; .ci/run installs it"
    minikafka = str(Path(sys.executable).parent / "minikafka")
    assert os.access(minikafka, os.X_OK), f"{minikafka} is not installed"
    for offline in (["-o"], []):  # a warm ~/.m2 needs no network
        out = subprocess.run([mvn, "-B", *offline, "test", f"-Dminikafka={minikafka}"], cwd=EXAMPLE,
                             capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        if out.returncode == 0 or "Tests run:" in out.stdout:
            break
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "Tests run: 1, Failures: 0, Errors: 0, Skipped: 0" in out.stdout
