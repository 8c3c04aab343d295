"""The pure parts of ``minikafka bench ab``: the alternating order, medians and the change
of B against A, the table, the row names, the checkout check, and bad input (one line,
exit 2)."""
from __future__ import annotations

import math

import pytest

from minikafka.bench import ab
from minikafka.cli.main import main
from minikafka.errors import ClientError


def test_each_round_alternates_so_neither_side_is_always_first():
    assert ab.order(1) == [0, 1, 1, 0]
    assert ab.order(2) == [0, 1, 1, 0, 0, 1, 1, 0]
    sides = ab.order(3)
    assert sides.count(0) == sides.count(1) == 6


def _result(kind: str = "cluster") -> ab.RowResult:
    row = ab.ROWS["kcat-acks1-rf1" if kind == "cluster" else "send"]
    res = ab.RowResult(row)
    res.samples[0].extend({"records_per_s": r, "cpu_us_per_record": c} for r, c in ((100, 2.0), (300, 1.0), (200, 3.0)))
    res.samples[1].extend({"records_per_s": r, "cpu_us_per_record": c} for r, c in ((220, 1.5), (210, 2.5)))
    return res


def test_the_change_is_b_s_median_against_a_s():
    res = _result()
    assert res.median(0, "records_per_s") == 200 and res.median(1, "records_per_s") == 215
    assert res.change() == pytest.approx(0.075)
    d = res.as_dict()
    assert d["row"] == "kcat-acks1-rf1" and d["samples"] == [3, 2]
    assert d["records_per_s"] == [200, 215] and d["cpu_us_per_record"] == [2.0, 2.0]


def test_a_side_without_samples_has_no_median_and_no_change():
    res = ab.RowResult(ab.ROWS["send"])
    assert math.isnan(res.median(0, "records_per_s")) and math.isnan(res.change())


def test_the_table_has_a_line_per_row_and_names_whose_cpu_it_is():
    text = ab.table([_result("cluster"), _result("client")], ("before", "after"))
    lines = text.splitlines()
    assert lines[0].startswith("| row | samples a side | before, records/s | after, records/s | change |")
    assert len(lines) == 4
    assert lines[2] == "| kcat, acks=1, RF 1 | 2 | 200 | 215 | +7.5% | brokers 2.000 / 2.000 µs |"
    assert lines[3].startswith("| our Producer, send, acks=all, RF 3 | 2 |") and "client 2.000" in lines[3]


def test_rows_are_named_as_listed_and_an_unknown_one_names_them_all():
    assert [r.name for r in ab.parse_rows("send, kcat-acks1-rf3")] == ["send", "kcat-acks1-rf3"]
    with pytest.raises(ClientError, match="unknown row nope: the rows are kcat-acks1-rf1, "):
        ab.parse_rows("send,nope")
    with pytest.raises(ClientError, match="unknown row"):
        ab.parse_rows(" , ")


def test_every_client_row_runs_a_mode_the_sample_knows():
    for row in ab.ROWS.values():
        assert row.kind in ("cluster", "client")
        if row.kind == "client":
            assert f'"{row.mode}"' in ab.CLIENT_SAMPLE or row.mode.startswith("consume_"), row


def test_a_checkout_is_a_folder_holding_the_package(tmp_path):
    with pytest.raises(ClientError, match="holds no minikafka package"):
        ab.checkout(str(tmp_path))
    (tmp_path / "minikafka").mkdir()
    (tmp_path / "minikafka" / "__init__.py").write_text("")
    assert ab.checkout(str(tmp_path)) == str(tmp_path)


@pytest.mark.parametrize("argv", [
    ["/nonexistent-checkout", "."],
    [".", ".", "--rows", "kcat"],
    [".", ".", "--clusters", "0"],
    [".", ".", "--records", "10"],
    [".", ".", "--productions", "1"],
])
def test_bad_input_prints_one_line_and_exits_2(argv, capsys):
    assert main(["bench", "ab", *argv]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert len(out.err.strip().splitlines()) == 1, out.err
