"""Runs docs/retention.md like docs/tutorial.md: every `$ minikafka ...` command in its
console blocks, in order, checking the output the page promises (retention by size, the
log start offset, DeleteRecords, a consumer reset to the log start)."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_tutorial import run_console_doc

pytestmark = pytest.mark.process

RETENTION = Path(__file__).resolve().parents[2] / "docs" / "retention.md"


def test_retention_page_commands_print_what_it_promises(tmp_path):
    run_console_doc(RETENTION, tmp_path, min_steps=10)
