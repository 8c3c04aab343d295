"""``--watch`` without a cluster: the changed-cell diff, the views built from the
commands' answers, frames that fit 80 columns, errors of a round, Ctrl-C."""
from __future__ import annotations

import io
import json
import re

from rich.console import Console
from rich.cells import cell_len

from minikafka.cli import watch
from minikafka.cli.client_commands import topics_view
from minikafka.cli.group_commands import group_view
from minikafka.cli.main import main, status_view
from minikafka.client.types import PartitionDescription, TopicDescription
from minikafka.errors import ClientError

REVERSE = re.compile(r"\x1b\[[0-9;]*?\b7\b[0-9;]*m")


def test_changed_cells_marks_changed_values_and_new_rows_only():
    before = {("p", 0): {"LEADER": "1", "ISR": "1,2,3"}, ("p", 1): {"LEADER": "2", "ISR": "2,3"}}
    after = {("p", 0): {"LEADER": "2", "ISR": "2,3"}, ("p", 2): {"LEADER": "3", "ISR": "3"}}
    assert watch.changed_cells(None, after) == set()  # the first round marks nothing
    assert watch.changed_cells(before, before) == set()
    assert watch.changed_cells(before, after) == {
        (("p", 0), "LEADER"), (("p", 0), "ISR"),      # changed values
        (("p", 2), "LEADER"), (("p", 2), "ISR"),      # a new row: every cell
    }                                                  # the row that went away marks nothing


def _partition(p: int, leader: int, isr: list[int], hw: int, leos: dict[int, int], log_start: int = 0):
    return PartitionDescription(topic="orders-with-a-rather-long-name-for-the-billing-service", partition=p,
                                leader=leader, leader_epoch=3, replicas=[1, 2, 3], isr=isr, offline_replicas=[],
                                high_watermark=hw, log_start_offset=log_start, replica_leos=leos)


def _topic(leader: int = 1, isr=(1, 2, 3), hw: int = 1000, log_start: int = 0) -> TopicDescription:
    name = "orders-with-a-rather-long-name-for-the-billing-service"
    return TopicDescription(name, [_partition(0, leader, list(isr), hw, {1: 123456, 2: 123456}, log_start),
                                   _partition(1, 2, [2, 3, 1], 7, {1: 7, 2: 7, 3: 7})])


def test_topics_view_rows():
    view = topics_view([_topic()])
    (grid,) = view.grids
    assert [c.header for c in grid.columns] == ["TOPIC", "P", "LEADER", "REPLICAS", "ISR", "EPOCH", "HW", "LEO"]
    row_id, cells = grid.rows[0]
    assert row_id == ("orders-with-a-rather-long-name-for-the-billing-service", 0)
    assert cells[1:] == ("0", "1", "1,2,3", "1,2,3", "3", "1000", "1=123456 2=123456 3=-1")  # -1: not known
    assert grid.title == "1 topic, 2 partitions, 0 under-replicated"
    assert "START" in [c.header for c in topics_view([_topic(log_start=5)]).grids[0].columns]


def _text(console: Console) -> list[str]:
    return console.export_text(clear=False).splitlines()


def test_a_frame_fits_80_columns_and_highlights_the_changed_cells():
    before, after = topics_view([_topic()]), topics_view([_topic(leader=2, isr=(2, 3), hw=1001)])
    changed = watch.changed_cells(watch.cells_of(before), watch.cells_of(after))
    row = ("partitions", ("orders-with-a-rather-long-name-for-the-billing-service", 0))
    assert changed == {(row, "LEADER"), (row, "ISR"), (row, "HW")}
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system="standard", record=True)
    console.print(watch.render(after, changed, watch.frame_header("minikafka topics describe", 1, None)))
    lines = _text(console)
    assert lines[0].startswith("minikafka topics describe")
    assert all(cell_len(line) <= 80 for line in lines), lines
    assert any("orders-with" in line and "…" in line for line in lines)  # the long name is cut, not wrapped
    styled = console.export_text(styles=True)
    for value in ("2", "2,3", "1001"):  # leader, ISR, HW: reverse video
        assert re.search(REVERSE.pattern + r"\s*" + re.escape(value) + r"\s*\x1b\[0m", styled), value
    assert not re.search(REVERSE.pattern + r"1,2,3", styled)  # the replica list did not change


def test_status_and_group_views_fit_80_columns():
    st = {"zookeeper": {"connect": "zookeeper.internal.example.com:2181", "pid": 4242, "process": "running",
                        "serving": True},
          "controller": 2, "controller_epoch": 7,
          "brokers": [{"id": i, "pid": 1000 + i, "process": "running", "registered": True, "controller": i == 2,
                       "endpoint": f"broker-{i}.internal.example.com:19092",
                       "kafka_endpoint": f"broker-{i}.internal.example.com:39092"} for i in (1, 2, 3)]}
    view = status_view(st)
    assert view.grids[1].rows[1] == (2, ("2", "1002", "running", "yes", "yes", "broker-2.internal.example.com:19092",
                                         "broker-2.internal.example.com:39092"))
    member = "minikafka-console-consumer-0f6c8e0a-6a5b-4a33-9d0e-2b1f5d9b3a77"
    d = {"group": "billing", "state": "Stable", "generation": 4, "protocol": "range", "leader": member,
         "coordinator": 1, "members": [{"member_id": member, "host": "/127.0.0.1", "client_id": "minikafka-console"}],
         "offsets": [{"topic": "orders", "partition": p, "current_offset": 10, "log_end_offset": 15, "lag": 5,
                      "member_id": member, "host": "/127.0.0.1", "client_id": "minikafka-console"} for p in (0, 1)]}
    gview = group_view(d)
    assert gview.grids[1].rows[0] == (("orders", 0), ("orders", "0", "10", "15", "5", member, "/127.0.0.1",
                                                       "minikafka-console"))
    for v in (view, gview):
        console = Console(file=io.StringIO(), width=80, force_terminal=True, record=True)
        console.print(watch.render(v, set(), "t"))
        lines = _text(console)
        assert all(cell_len(line) <= 80 for line in lines), lines
    dead = group_view({**d, "state": "Dead", "members": [], "offsets": []})
    assert dead.notes == ["Consumer group 'billing' does not exist."]


def test_status_view_has_a_row_per_zookeeper_server_of_an_ensemble():
    st = {"zookeeper": {"connect": "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183", "pid": None,
                        "process": "running", "serving": True},
          "zookeeper_servers": [{"id": 1, "client_port": 2181, "pid": 11, "mode": "follower"},
                                {"id": 2, "client_port": 2182, "pid": None, "mode": "down"},
                                {"id": 3, "client_port": 2183, "pid": 13, "mode": "leader"}],
          "controller": 1, "controller_epoch": 1, "brokers": []}
    rows = dict(status_view(st).grids[0].rows)
    assert rows["zookeeper-2"] == ("  server 2 127.0.0.1:2182", "-", "dead", "down", "", "")
    assert rows["zookeeper-3"][3] == "leader"
    single = {**st, "zookeeper_servers": [{"id": 1, "client_port": 2181, "pid": 11, "mode": "standalone"}]}
    assert [key for key, _ in status_view(single).grids[0].rows] == ["zookeeper"]


def test_run_watch_shows_an_error_of_one_round_and_keeps_the_last_answer():
    answers = [topics_view([_topic()]), ClientError("no broker answered"), topics_view([_topic(hw=1001)])]

    def fetch():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False)  # not a terminal: frames one after another
    assert watch.run_watch(fetch, 0.1, "minikafka topics describe", console=console, rounds=3) == 0
    frames = out.getvalue().split("minikafka topics describe  every 0.1s")[1:]
    assert len(frames) == 3
    assert "error" not in frames[0] and "*" not in frames[0]
    assert "error: no broker answered (retrying)" in frames[1] and "1000" in frames[1]  # the last answer stays
    assert re.search(r"\b1001\*", frames[2]), frames[2]  # changed since the last answer: marked
    assert all(len(line) <= 80 for line in out.getvalue().splitlines())


def test_run_watch_in_a_terminal_redraws_in_place():
    out = io.StringIO()
    console = Console(file=out, width=80, height=30, force_terminal=True, color_system="standard")
    answers = [topics_view([_topic()]), topics_view([_topic(leader=3)])]
    assert watch.run_watch(lambda: answers.pop(0), 0.1, "t", console=console, rounds=2) == 0
    raw = out.getvalue()
    assert "\x1b[1A" in raw and "\x1b[2K" in raw  # cursor up, erase line: the same place
    assert re.search(REVERSE.pattern + r"\s*3\s*\x1b\[0m", raw)


def test_run_watch_returns_0_on_ctrl_c():
    def fetch():
        raise KeyboardInterrupt

    assert watch.run_watch(fetch, 0.1, "t", console=Console(file=io.StringIO())) == 0


def test_json_lines_one_document_per_round(capsys):
    docs = [{"a": 1}, OSError("connection refused"), {"a": 2}]

    def fetch():
        doc = docs.pop(0)
        if isinstance(doc, Exception):
            raise doc
        return doc

    out = io.StringIO()
    assert watch.run_json_lines(fetch, 0.1, out=out, rounds=3) == 0
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [{"a": 1}, {"a": 2}]
    assert capsys.readouterr().err == "minikafka: error: connection refused (retrying)\n"


def test_watch_rejects_a_tiny_interval(capsys):
    assert main(["cluster", "status", "--watch", "--interval", "0"]) == 2
    assert "must be at least 0.1 seconds" in capsys.readouterr().err


def test_fit_widths_gives_short_columns_what_they_need_and_shares_the_rest():
    cols = [watch.Column("ID"), watch.Column("NAME", ratio=1), watch.Column("ADDR", ratio=1), watch.Column("N")]
    # fixed 2 + 3, separators 3 * 2: 69 of 80 left; NAME needs 4, ADDR gets the other 65 (needs only 20)
    assert watch.fit_widths([2, 4, 20, 3], cols, 80) == [None, 4, 20, None]
    # too wide: NAME fits its share (and keeps 10), ADDR gets what is left
    assert watch.fit_widths([2, 10, 90, 3], cols, 80) == [None, 10, 59, None]
    assert watch.fit_widths([2, 50, 90, 3], cols, 80) == [None, 34, 34, None]  # both long: halves


def test_shorten_middle_keeps_the_start_and_the_end():
    member = "minikafka-console-consumer-0f6c8e0a-6a5b-4a33-9d0e-2b1f5d9b3a77"
    assert watch.shorten_middle(member, len(member)) == member
    short = watch.shorten_middle(member, 21)
    assert short == "minikafka-…1f5d9b3a77" and len(short) == 21
    assert watch.shorten_middle("abc", 1) == "…"


def test_two_members_stay_distinguishable_at_100_columns():
    """CONSUMER-ID and GROUP LEADER lose their middle, not their end: two members of one
    client id differ only in the end of their UUIDs."""
    a = "minikafka-console-consumer-0f6c8e0a-6a5b-4a33-9d0e-2b1f5d9b3a77"
    b = "minikafka-console-consumer-0f6c8e0a-6a5b-4a33-9d0e-77aa00cc11ee"
    member = {"host": "/127.0.0.1", "client_id": "minikafka-console-consumer"}
    d = {"group": "billing", "state": "Stable", "generation": 4, "protocol": "range", "leader": b, "coordinator": 1,
         "members": [{"member_id": m, **member} for m in (a, b)],
         "offsets": [{"topic": "orders", "partition": p, "current_offset": 10, "log_end_offset": 15, "lag": 5,
                      "member_id": (a, b)[p], **member} for p in (0, 1)]}
    for width in (100, 80):
        console = Console(file=io.StringIO(), width=width, force_terminal=True, record=True)
        console.print(watch.render(group_view(d), set(), "t"))
        lines = _text(console)
        assert all(cell_len(line) <= width for line in lines), lines
        owners = [line.split()[5] for line in lines if line.startswith("orders ")]
        assert len(owners) == 2 and owners[0] != owners[1], lines
        assert owners[0].endswith("5d9b3a77") and owners[1].endswith("00cc11ee"), owners
        assert all("…" in o and o.startswith("minikaf") for o in owners)
        leader_line = next(line for line in lines if line.startswith("billing "))
        assert leader_line.rstrip().endswith("00cc11ee")
    # not a terminal: a changed id keeps its '*' mark after the shortening
    console = Console(file=io.StringIO(), width=100, force_terminal=False, record=True)
    row = ("offsets", ("orders", 1))
    console.print(watch.render(group_view(d), {(row, "CONSUMER-ID")}, "t", marks=True))
    assert any(line.split()[5].endswith("11ee*") for line in _text(console) if line.startswith("orders  ") and " 1 " in line)


def test_topics_describe_watch_lists_internal_topics_last(monkeypatch):
    """``topics describe --watch`` (and its plain form): __consumer_offsets after the others,
    left out with --exclude-internal."""
    import argparse

    import minikafka.client.sync as sync
    from minikafka.cli import client_commands

    def desc(name: str) -> TopicDescription:
        return TopicDescription(name, [PartitionDescription(topic=name, partition=0, leader=1, leader_epoch=0,
                                                            replicas=[1], isr=[1], offline_replicas=[],
                                                            high_watermark=0, log_start_offset=0,
                                                            replica_leos={1: 0})])

    class FakeAdmin:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def describe_topics(self, names=None, checksums=False):
            return [desc(n) for n in ("__consumer_offsets", "audit", "orders")]

    monkeypatch.setattr(sync, "Admin", FakeAdmin)
    args = argparse.Namespace(name=None, json=False, exclude_internal=False, bootstrap_server="127.0.0.1:1",
                              dir=".minikafka", command_config=None)
    view, doc = client_commands._topics_describe_view(args)
    assert [row_id[0] for row_id, _ in view.grids[0].rows] == ["audit", "orders", "__consumer_offsets"]
    assert [t["name"] for t in doc["topics"]] == ["audit", "orders", "__consumer_offsets"]
    args.exclude_internal = True
    view, _ = client_commands._topics_describe_view(args)
    assert [row_id[0] for row_id, _ in view.grids[0].rows] == ["audit", "orders"]


def test_topics_describe_shows_the_lso_only_where_an_open_transaction_holds_it_below_the_hw():
    """Kafka's last stable offset: an LSO column (and ``LastStableOffset`` in the plain
    lines) while a transaction is open on some partition; nothing otherwise."""
    from minikafka.cli.client_commands import format_topic

    def topic(lso0: int) -> TopicDescription:
        parts = [PartitionDescription(topic="payments", partition=p, leader=1, leader_epoch=0, replicas=[1, 2],
                                      isr=[1, 2], offline_replicas=[], high_watermark=hw, last_stable_offset=lso,
                                      log_start_offset=0, replica_leos={1: hw, 2: hw})
                 for p, hw, lso in ((0, 120, lso0), (1, 40, 40))]
        return TopicDescription("payments", parts)

    settled = topics_view([topic(120)]).grids[0]
    assert "LSO" not in [c.header for c in settled.columns]
    assert not any("LastStableOffset" in line for line in format_topic(topic(120)))
    # an unknown LSO (-1: leader offline, an older broker) is not shown either
    assert "LSO" not in [c.header for c in topics_view([topic(-1)]).grids[0].columns]

    grid = topics_view([topic(100)]).grids[0]
    headers = [c.header for c in grid.columns]
    assert headers[headers.index("HW") + 1] == "LSO"
    cells = {row_id[1]: dict(zip(headers, values)) for row_id, values in grid.rows}
    assert (cells[0]["HW"], cells[0]["LSO"]) == ("120", "100")
    assert (cells[1]["HW"], cells[1]["LSO"]) == ("40", "40")
    assert grid.title.endswith("1 with an open transaction (LSO below HW)")
    lines = format_topic(topic(100))
    assert "\tHighWatermark: 120\tLastStableOffset: 100\tLEO: " in lines[1]
    assert "LastStableOffset" not in lines[2]
    # the commit: the column goes away, the highlight of the next round marks nothing new
    changed = watch.changed_cells(watch.cells_of(topics_view([topic(100)])), watch.cells_of(topics_view([topic(120)])))
    assert not any(column == "LSO" for _, column in changed)
