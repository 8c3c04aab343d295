"""The pages agree with each other and with the code where a reader compares them: the
Kafka listener's security, Spark's format("kafka"), the dashboard picture, the waits
and the describe header of the tutorial, the console consumer's full output in
groups.md, and the ports of `cluster up`.  (The console blocks themselves are run by
test_tutorial.py, test_groups_doc.py and test_retention_doc.py.)"""
from __future__ import annotations

import re
from pathlib import Path

from test_tutorial import parse

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def read(name: str) -> str:
    return (ROOT / name).read_text()


def paragraphs(text: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]


def test_the_kafka_listener_is_described_with_its_security():
    """kafka-clients.md does not call the Kafka listener plaintext without saying that TLS
    and SASL are configured as in security.md, which documents them on it."""
    clients = re.sub(r"```.*?```", "", read("docs/kafka-clients.md"), flags=re.S)  # prose only
    for p in paragraphs(clients):
        if re.search(r"\bplaintext\b|PLAINTEXT://", p, flags=re.I):
            assert "security.md" in p or "SASL_PLAINTEXT" in p, p
    security = read("docs/security.md")
    assert "KAFKA" in security and "SASL_SSL" in security
    assert "SASL" in read("docs/kafka-protocol.md")


def test_spark_kafka_format_is_tested_says_every_page():
    readme, spark = read("README.md"), read("docs/spark.md")
    assert (ROOT / "tests/process/test_spark_kafka_format.py").exists()
    assert "tests/process/test_spark_kafka_format.py" in spark
    for text in (readme, spark):
        for sentence in (s for p in paragraphs(text) for s in re.split(r"(?<=[.;])\s", p)):
            if 'format("kafka")' in sentence:
                assert not re.search(r"not (yet )?tested|untested|not checked", sentence), sentence
    assert any('format("kafka")' in p and "test suite" in p for p in paragraphs(readme))


def test_the_dashboard_picture_is_taken_by_the_browser_tests():
    for page in ("README.md", "docs/metrics.md"):
        assert "images/dashboard.png" in read(page), page
    browser_tests = read("tests/process/test_dashboard_browser.py")
    assert 'REPO / "docs" / "images" / "dashboard.png"' in browser_tests
    assert "MINIKAFKA_SCREENSHOT" not in browser_tests  # always, not on request
    assert (DOCS / "images" / "dashboard.png").stat().st_size > 10_000


def test_the_tutorial_shows_its_waits_and_describes_header():
    steps = parse(read("docs/tutorial.md"))
    commands = [c for c, _ in steps]
    # where the prose says the state changes after a while, the block waits before looking
    for kill, at_least in (("cluster kill 3 --signal STOP", 9), ("cluster kill 1", 30),
                           ("cluster kill controller", 30)):
        i = next(i for i, c in enumerate(commands) if c.endswith(kill))
        # the first command after it that waits or looks (a produce may come between)
        wait = next(c for c in commands[i + 1:] if c.startswith("sleep ") or "describe" in c or "status" in c)
        assert wait.startswith("sleep "), (kill, wait)
        assert int(wait.split()[1]) >= at_least, (kill, wait)
    # every describe output starts with kafka-topics' topic line
    for command, expected in steps:
        if "topics describe" in command and expected:
            assert re.fullmatch(r"Topic: \S+ TopicId: \.\.\. PartitionCount: \d+ ReplicationFactor: \d+", expected[0]), \
                (command, expected)


def test_groups_page_shows_the_whole_console_output():
    """Every `consume ... --max-messages N` of groups.md shows its N records, then the
    "Processed a total of N messages" line, as the command prints them."""
    steps = parse(read("docs/groups.md"))
    checked = 0
    for command, expected in steps:
        m = re.search(r"minikafka consume .*--max-messages (\d+)", command)
        if not m or ">" in command:
            continue
        n = int(m.group(1))
        assert expected[-1] == f"Processed a total of {n} messages", (command, expected)
        assert len(expected) == n + 1, (command, expected)
        checked += 1
    assert checked >= 3
    assert "sleep" in " ".join(c for c, _ in steps)  # the session timeout of the killed member


def test_readme_says_which_ports_cluster_up_avoids():
    readme = " ".join(read("README.md").split())
    assert "32768-60999" in readme and "--base-port - 20000" in readme and "--kafka-base-port" in readme
