"""pyproject.toml installs without setuptools' deprecation warnings: the licence is an SPDX
expression (PEP 639), which needs setuptools 77 or newer in [build-system]; the older TOML
table form printed a deprecation notice several times per `pip install -e .`."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_expression():
    assert pyproject()["project"]["license"] == "Apache-2.0"


def test_build_requires_a_setuptools_that_reads_spdx_licenses():
    (setuptools,) = [r for r in pyproject()["build-system"]["requires"] if r.startswith("setuptools")]
    m = re.fullmatch(r"setuptools>=(\d+)(\.\d+)*", setuptools.replace(" ", ""))
    assert m and int(m.group(1)) >= 77, setuptools
