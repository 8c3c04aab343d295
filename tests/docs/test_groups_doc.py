"""Runs docs/groups.md like docs/tutorial.md: every `$ minikafka ...` command in its
console blocks, in order, checking the output the page promises."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_tutorial import run_console_doc

pytestmark = pytest.mark.process

GROUPS = Path(__file__).resolve().parents[2] / "docs" / "groups.md"


def test_groups_page_commands_print_what_it_promises(tmp_path):
    run_console_doc(GROUPS, tmp_path)
