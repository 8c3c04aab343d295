"""Reading the Prometheus text format of /metrics in tests: ``parse`` checks every line
(one TYPE per family, no duplicate sample) and keys samples by name and labels;
``sources`` is a broker's metric sources with nothing in them, for rendering tests."""
from __future__ import annotations

import re

from minikafka.broker.metrics import MetricSources

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Scrape(dict):
    """(name, frozenset of label pairs) -> value, parsed from the Prometheus text format."""

    def value(self, name: str, **labels: object) -> float:
        key = (name, frozenset((k, str(v)) for k, v in labels.items()))
        return self[key]

    def get_value(self, name: str, default: float = 0.0, **labels: object) -> float:
        try:
            return self.value(name, **labels)
        except KeyError:
            return default


def parse(text: str) -> Scrape:
    out = Scrape()
    types_seen: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert name not in types_seen, f"family {name} declared twice"
            types_seen[name] = kind
            continue
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name, labels, value = m.groups()
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in types_seen or base in types_seen, f"{name} has no TYPE line"
        key = (name, frozenset(LABEL.findall(labels or "")))
        assert key not in out, f"duplicate sample {line!r}"
        out[key] = float(value)
    return out


def sources(**over: object) -> MetricSources:
    """A broker with no replicas, groups or controller; ``over`` replaces any callable."""
    base = dict(info=lambda: {"broker_id": 7, "storage": "memory", "cluster_id": "c"}, replicas=dict,
                min_insync_replicas=lambda topic: 1, controller_epoch=lambda: -1, live_brokers=lambda: 0,
                cluster_counts=lambda: None, controller_queue_size=lambda: 0, zookeeper_watches=lambda: 0,
                acls=lambda: 0, groups=list)
    base.update(over)
    return MetricSources(**base)
