"""docs/fidelity.md ends with the differential fuzzer's section, rendered from the code
(minikafka.reference.fuzz.render_section: what is run and the allow-list), so that the page
cannot drift from the allow-list without running both clusters (tests/process/test_fidelity.py
checks the whole page against a run)."""
from __future__ import annotations

from minikafka.reference import fidelity, fuzz


def test_the_fuzz_section_of_docs_fidelity_is_the_allow_list_in_the_code():
    page = fidelity.PAGE.read_text()
    assert page.endswith("\n\n" + fuzz.render_section()), \
        "docs/fidelity.md's fuzzing section is stale: run `python -m minikafka.reference.fidelity --write`"


def test_every_allowed_difference_is_on_the_page_with_its_reason():
    page = fidelity.PAGE.read_text()
    for entry in fuzz.fuzz_compare.ALLOWED:
        assert f"| {entry.name} |" in page and entry.reason in page
