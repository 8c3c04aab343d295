"""The suite's rows measured on Kafka too (``bench suite --against kafka``): the ``vs Kafka`` cell
says which way is better, each goal is judged on both figures of the run, and the table shows
Kafka's own figure and the goals below it."""
from __future__ import annotations

from minikafka.bench import versus
from minikafka.bench.figures import Figure
from minikafka.bench.suite import FULL, Row, table


def _row(key: str, ours: float, kafka: float | None) -> Row:
    c = {x.key: x for x in versus.compared(FULL)}[key]
    return Row(c.scenario, c.client, Figure(c.figure, c.unit, (ours,)), compared=c,
               kafka=Figure(c.figure, c.unit, () if kafka is None else (kafka,)))


def test_every_compared_row_has_a_direction_and_the_four_goals():
    rows = versus.compared(FULL)
    assert {c.key for c in rows} == {"produce_acks1", "produce_acksall", "consume", "e2e", "catchup", "failover"}
    assert {c.key for c in rows if c.goal} == {"produce_acksall", "consume", "e2e", "failover"}
    assert all(c.higher_is_better == (c.unit == "records/s") for c in rows)
    (e2e,) = [c for c in rows if c.key == "e2e"]
    assert "at 10,000/s" in e2e.scenario and e2e.figure == "e2e_p99_ms"


def test_the_vs_kafka_cell_says_ours_over_kafkas_and_which_way_is_better():
    assert _row("produce_acksall", 31_000, 50_000).versus_kafka() == "0.62x Kafka's throughput (higher is better)"
    assert _row("e2e", 90, 50).versus_kafka() == "1.80x Kafka's p99 (lower is better)"
    assert _row("catchup", 3, 6).versus_kafka() == "0.50x Kafka's time (lower is better)"
    assert _row("consume", 1, None).versus_kafka() == ""


def test_goals_are_met_or_not_on_both_figures():
    assert _row("produce_acksall", 25_000, 50_000).goal_met() is True  # 0.5x: at the bound
    assert _row("produce_acksall", 24_999, 50_000).goal_met() is False
    assert _row("consume", 60_000, 100_000).goal_met() is True
    assert _row("e2e", 100, 50).goal_met() is True and _row("e2e", 101, 50).goal_met() is False
    assert _row("failover", 7_000, 6_000).goal_met() is True and _row("failover", 7_001, 6_000).goal_met() is False
    assert _row("failover", 1_000, 6_000).goal_met() is True  # faster than Kafka
    assert _row("catchup", 9, 3).goal_met() is None  # no goal
    assert _row("consume", 60_000, None).goal_met() is None
    assert _row("consume", 60_000, None).goal_cell() == ">= 0.5x Kafka's throughput: no figure"


def test_the_table_shows_kafkas_figure_the_ratio_the_goal_and_a_footer():
    rows = [Row("produce RF1 acks=1", "python", Figure("records_per_s", "records/s", (100_000.0,))),
            _row("produce_acksall", 20_000, 50_000), _row("failover", 6_500, 6_000)]
    text = table(rows, 1, ["the two never ran at once"])
    head, first, acksall, failover = text.splitlines()[:4]
    assert "Kafka 3.9" in head and "vs Kafka (ours / Kafka)" in head and "goal" in head
    assert "Kafka" not in first  # a row of ours alone leaves the Kafka columns empty
    assert "50,000" in acksall and "0.40x Kafka's throughput (higher is better)" in acksall and "not met" in acksall
    assert "6,000" in failover and "within 1 s of Kafka's: met" in failover
    footer = text.split("goals against Kafka", 1)[1]
    assert "NOT met (ours 20,000 records/s, Kafka 50,000)" in footer and "met (ours 6,500 ms, Kafka 6,000)" in footer
    assert text.rstrip().endswith("note: the two never ran at once")
    assert "Kafka 3.9" not in table(rows[:1], 1)  # without compared rows the table is as before
