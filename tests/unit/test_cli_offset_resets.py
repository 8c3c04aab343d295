"""kafka-consumer-groups' reset rules: shift clamps to [earliest, latest], a partition without
a committed offset cannot be shifted, by-time falls back to the high watermark."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from minikafka.cli.offset_resets import new_offsets, parse_datetime, parse_duration, parse_topic
from minikafka.errors import ClientError

TPS = ["t-0", "t-1"]
EARLIEST = {"t-0": 2, "t-1": 0}
LATEST = {"t-0": 10, "t-1": 4}
COMMITTED = {"t-0": 5, "t-1": 3}


@pytest.mark.parametrize("kind, value, expected", [
    ("to_earliest", True, {"t-0": 2, "t-1": 0}),
    ("to_latest", True, {"t-0": 10, "t-1": 4}),
    ("to_current", True, {"t-0": 5, "t-1": 3}),
    ("to_offset", 3, {"t-0": 3, "t-1": 3}),
    ("to_offset", 0, {"t-0": 2, "t-1": 0}),
    ("shift_by", 2, {"t-0": 7, "t-1": 4}),       # t-1: 5 is past its end 4
    ("shift_by", -4, {"t-0": 2, "t-1": 0}),      # below the log start: the log start
    ("shift_by", 0, {"t-0": 5, "t-1": 3}),
])
def test_strategies(kind, value, expected):
    assert new_offsets(kind, value, TPS, COMMITTED, EARLIEST, LATEST) == expected


def test_by_time_takes_the_first_offset_at_or_after_else_the_end():
    found = {"t-0": 6, "t-1": None}
    assert new_offsets("to_datetime", "x", TPS, COMMITTED, EARLIEST, LATEST, lambda: found) == {"t-0": 6, "t-1": 4}
    assert new_offsets("by_duration", "PT1H", TPS, {}, EARLIEST, LATEST, lambda: found) == {"t-0": 6, "t-1": 4}


def test_shift_needs_a_committed_offset():
    with pytest.raises(ClientError, match="Cannot shift offset for partition t-1 since there is no current committed"):
        new_offsets("shift_by", 1, TPS, {"t-0": 5}, EARLIEST, LATEST)


def test_option_values():
    assert parse_topic("orders") == ("orders", None)
    assert parse_topic("orders:1,0,1") == ("orders", [0, 1])
    for bad in ("orders:", "orders:x", "orders:-1"):
        with pytest.raises(ClientError):
            parse_topic(bad)
    assert parse_duration("PT1H") == 3_600_000
    assert parse_duration("P1DT2H3M4.5S") == ((26 * 60 + 3) * 60 + 4.5) * 1000
    assert parse_duration("pt30m") == 1_800_000
    for bad in ("P", "PT", "1H", "P1", "PT1H2", "-PT1H"):
        with pytest.raises(ClientError, match="ISO-8601 duration"):
            parse_duration(bad)
    utc = int(datetime(2024, 3, 1, 12, 30, tzinfo=timezone.utc).timestamp() * 1000)
    assert parse_datetime("2024-03-01T12:30:00.000Z") == utc
    assert parse_datetime("2024-03-01T13:30:00+01:00") == utc
    assert parse_datetime("2024-03-01T12:30:00") == int(datetime(2024, 3, 1, 12, 30).timestamp() * 1000)  # local
    with pytest.raises(ClientError, match="YYYY-MM-DDTHH:mm:SS.sss"):
        parse_datetime("yesterday")
