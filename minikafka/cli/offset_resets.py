"""``groups reset-offsets``: which partitions move and where, by kafka-consumer-groups' rules.

Pure: the caller reads committed, earliest, latest and by-timestamp offsets from the
brokers and the clock; these functions parse the options and compute the new offsets.

* ``--to-earliest`` / ``--to-latest``: the log start offset / the high watermark.
* ``--to-offset N``, ``--shift-by N`` (the committed offset plus N; a partition without a
  committed offset cannot be shifted): kept within [earliest, latest], as Kafka clamps.
* ``--to-datetime T`` / ``--by-duration D`` (T = now - D): the first offset whose record
  timestamp is at or after T (ListOffsets by timestamp); the high watermark where no
  record is that recent.
* ``--to-current``: the committed offset (the log end where there is none).
"""
from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Callable, Iterable

from ..errors import ClientError

STRATEGIES = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime", "by_duration")


def parse_topic(text: str) -> tuple[str, list[int] | None]:
    """kafka-consumer-groups' ``--topic T`` or ``--topic T:0,1`` -> (T, [0, 1] or None for every partition)."""
    topic, sep, parts = text.partition(":")
    if not sep:
        return topic, None
    try:
        partitions = sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise ClientError(f"--topic expects TOPIC or TOPIC:P,P..., got {text!r}") from None
    if not partitions or partitions[0] < 0:
        raise ClientError(f"--topic expects TOPIC or TOPIC:P,P... with partitions 0 or more, got {text!r}")
    return topic, partitions


def parse_datetime(text: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS.sss`` (kafka-consumer-groups' format; seconds and milliseconds may
    be left out, a zone such as ``Z`` or ``+02:00`` may follow; without one, local time) ->
    epoch milliseconds."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ClientError(f"--to-datetime expects YYYY-MM-DDTHH:mm:SS.sss (optionally with a zone such as Z "
                          f"or +01:00), got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as Kafka's tool reads a date without a zone
    return int(moment.timestamp() * 1000)


_DURATION = re.compile(r"(?i)P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d{1,3})?)S)?)?")


def parse_duration(text: str) -> int:
    """An ISO-8601 duration as Java's Duration.parse reads it, ``PnDTnHnMn.nS`` (e.g. ``PT1H``,
    ``P1DT30M``) -> milliseconds."""
    m = _DURATION.fullmatch(text)
    if m is None or not any(m.groups()) or text.upper().endswith("T"):
        raise ClientError(f"--by-duration expects an ISO-8601 duration PnDTnHnMnS (e.g. PT1H, P1DT30M), "
                          f"got {text!r}")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
    return int(round((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000))


def strategy(args: Any) -> tuple[str, Any]:
    """(the chosen strategy, its value) of parsed ``reset-offsets`` arguments."""
    for name in STRATEGIES:
        value = getattr(args, name, None)
        if value is not None and value is not False:  # --shift-by 0 and --to-offset 0 count
            return name, value
    raise ClientError("give one of --to-earliest, --to-latest, --to-current, --to-offset N, --shift-by N, "
                      "--to-datetime T, --by-duration D")


def new_offsets(kind: str, value: Any, tps: Iterable[Any], committed: dict, earliest: dict, latest: dict,
                by_time: Callable[[], dict] | None = None) -> dict:
    """The new committed offset of each partition in ``tps`` (see the module's rules).
    ``by_time()`` gives the first offset at or after the strategy's timestamp per partition
    (None where there is none); it is called only for --to-datetime / --by-duration."""
    tps = list(tps)

    def clamp(tp: Any, offset: int) -> int:
        return min(max(offset, earliest[tp]), latest[tp])

    if kind == "to_earliest":
        return {tp: earliest[tp] for tp in tps}
    if kind == "to_latest":
        return {tp: latest[tp] for tp in tps}
    if kind == "to_current":
        return {tp: committed.get(tp, latest[tp]) for tp in tps}
    if kind == "to_offset":
        return {tp: clamp(tp, value) for tp in tps}
    if kind == "shift_by":
        missing = [tp for tp in tps if committed.get(tp) is None]
        if missing:
            raise ClientError(f"Cannot shift offset for partition {missing[0]} since there is no current "
                              f"committed offset")
        return {tp: clamp(tp, committed[tp] + value) for tp in tps}
    if kind in ("to_datetime", "by_duration"):
        assert by_time is not None
        found = by_time()
        return {tp: latest[tp] if found.get(tp) is None else clamp(tp, found[tp]) for tp in tps}
    raise ClientError(f"unknown reset strategy {kind}")
