"""Every metric is declared once in minikafka.metric_names: /metrics shows each declared
metric, the code counts only declared counters, and docs/metrics.md documents each one."""
from __future__ import annotations

import ast
import enum
import pathlib
import re
import types

import pytest

from minikafka import metric_names as M
from minikafka.broker.coordinator import COUNTED
from minikafka.broker.txn_coordinator import COUNTED as TXN_COUNTED
from minikafka.broker.metrics import Metrics, UndeclaredMetricError, gauges, render_prometheus
from minikafka.controller.controller import ClusterCounts
from metrics_text import parse, sources

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "minikafka"


def labels_for(metric: M.Metric) -> dict[str, object]:
    return {name: f"{name}-1" for name in metric.labels}


def busy_sources():
    """A broker that leads a partition with a lagging follower, coordinates a group and is
    the controller, so that every labelled gauge has samples."""
    ns = types.SimpleNamespace
    replica = ns(is_leader=True, isr=[1, 2], replicas=[1, 2, 3], log_end_offset=10, high_watermark=8, leader_epoch=2,
                 remotes={2: ns(leo=9), 3: ns(leo=-1)},
                 log=ns(log_start_offset=0, size_bytes=100, segments=[object()]))
    group = ns(group_id="g", generation=1, members={"m": 1}, offsets={("t", 0): ns(offset=5)},
               state=enum.Enum("S", {"Stable": "Stable"}).Stable)
    return sources(replicas=lambda: {("t", 0): replica}, groups=lambda: [group],
                   cluster_counts=lambda: ClusterCounts(1, 1, 0))


def test_names_are_unique_and_well_formed():
    assert len({m.name for m in M.REGISTRY}) == len(M.REGISTRY) == len(M.BY_NAME)
    for m in M.REGISTRY:
        assert re.fullmatch(r"minikafka_[a-z0-9_]+", m.name), m.name
        assert m.kind in (M.COUNTER, M.GAUGE, M.HISTOGRAM)
        assert m.help and "\n" not in m.help
        assert all(re.fullmatch(r"[a-z_]+", label) and label != "le" for label in m.labels), m
    exported = {getattr(M, n) for n in dir(M) if isinstance(getattr(M, n), M.Metric)}
    assert exported == set(M.REGISTRY), "every declared metric has a module-level name"


def test_every_declared_metric_appears_in_metrics_output():
    m = Metrics()
    for c in M.COUNTERS:
        m.count(c, 3, **labels_for(c))
    for h in M.HISTOGRAMS:
        m.observe(h, 0.01, **labels_for(h))
    for lv in M.LEVELS:
        m.set_level(lv, 2, **labels_for(lv))
    text = render_prometheus(m, busy_sources())
    got = parse(text)
    kinds = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert list(kinds) == [x.name for x in M.REGISTRY], "one family per declared metric, in declaration order"
    for x in M.REGISTRY:
        assert kinds[x.name] == x.kind
        names = {x.name + s for s in ("_bucket", "_sum", "_count")} if x.kind == M.HISTOGRAM else {x.name}
        samples = [k for k in got if k[0] in names]
        assert samples, f"{x.name} has no sample"
        for name, labels in samples:
            assert {k for k, _ in labels} - {"le"} == set(x.labels), (name, labels)
    for c in M.COUNTERS:
        assert got.value(c.name, **labels_for(c)) == 3, c.name


def test_an_idle_broker_exports_every_unlabelled_counter_at_zero():
    got = parse(render_prometheus(Metrics(), sources()))
    for c in M.COUNTERS:
        if not c.labels:
            assert got.value(c.name) == 0, c.name
    assert got.value("minikafka_stale_broker_epoch_requests_total") == 0


def test_gauges_read_exactly_the_declared_gauges():
    assert set(gauges(busy_sources())) == set(M.GAUGES)
    assert set(gauges(sources())) == set(M.GAUGES)


def test_counting_anything_undeclared_is_refused():
    m = Metrics()
    with pytest.raises(UndeclaredMetricError):
        m.count("stale_broker_epoch_requests")  # type: ignore[arg-type]
    with pytest.raises(UndeclaredMetricError):
        m.count(M.LEADER_COUNT)  # a gauge: read from the broker's state, never counted
    with pytest.raises(UndeclaredMetricError):
        m.count(M.REQUEST_ERRORS)  # a labelled counter needs its label
    with pytest.raises(UndeclaredMetricError):
        m.count(M.ISR_SHRINKS, topic="t")  # an unlabelled one takes none
    with pytest.raises(UndeclaredMetricError):
        m.observe(M.REQUESTS, 1.0, api="produce")  # a counter, not a histogram
    m.count(M.REQUEST_ERRORS, error="NOT_CONTROLLER")
    assert m.value(M.REQUEST_ERRORS, error="NOT_CONTROLLER") == 1


def test_consumer_fetch_counters_feed_the_dashboard_view():
    m = Metrics()
    assert m.consumer_fetched.get(("t", 0), (0, 0)) == (0, 0)
    m.count(M.CONSUMER_FETCH_RECORDS, 4, topic="t", partition=0)
    m.count(M.CONSUMER_FETCH_BYTES, 100, topic="t", partition=0)
    assert m.consumer_fetched.get(("t", 0), (0, 0)) == (4, 100)


# ---------------------------------------------------------------- call sites

COUNT_RECEIVER = re.compile(r"(^|\.)(metrics|host|h)$")  # Metrics, and ControllerHost.count
# calls whose metric is chosen at run time from declared objects, and where those come from
DYNAMIC = {
    ("controller/controller.py", "c"),  # for c in plan.counters (the core's appends are scanned below)
    ("broker/coordinator.py", "COUNTED[kind]"),  # checked in test_dynamic_call_sites_use_declared_counters
    ("broker/txn_coordinator.py", "COUNTED[kind]"),  # the same for the transaction coordinator
}


def _metric_refs(tree: ast.Module) -> tuple[dict[str, str], set[str]]:
    """Names imported from minikafka.metric_names (local name -> declared name) and the
    local names of the module itself."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if (node.module or "").endswith("metric_names"):
                for a in node.names:
                    names[a.asname or a.name] = a.name
            else:
                for a in node.names:
                    if a.name == "metric_names":
                        modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.endswith("metric_names"):
                    modules.add(a.asname or a.name)
    return names, modules


def _declared(expr: ast.expr, names: dict[str, str], modules: set[str]) -> list[object]:
    """The metric_names objects ``expr`` refers to."""
    found = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in names:
            found.append(getattr(M, names[node.id]))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            found.append(getattr(M, node.attr))
    return found


def _count_calls():
    """(file, line, kind, expression of the metric) of every counting call in minikafka/."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        names, modules = _metric_refs(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
                receiver = ast.unparse(node.func.value)
                attr = node.func.attr
                if attr == "count" and (COUNT_RECEIVER.search(receiver) or (rel == "broker/metrics.py" and receiver == "self")):
                    yield rel, node.lineno, M.COUNTER, node.args[0], names, modules
                elif attr == "observe" and (COUNT_RECEIVER.search(receiver) or receiver == "self"):
                    yield rel, node.lineno, M.HISTOGRAM, node.args[0], names, modules
                elif attr == "append" and receiver.endswith("counters"):
                    yield rel, node.lineno, M.COUNTER, node.args[0], names, modules
            elif isinstance(node, ast.AugAssign) and ast.unparse(node.target).endswith("counters"):
                yield rel, node.lineno, M.COUNTER, node.value, names, modules


def test_every_count_call_site_names_a_declared_metric():
    calls = list(_count_calls())
    assert len(calls) >= 30, "the scan finds the call sites"
    problems = []
    dynamic_seen = set()
    for rel, line, kind, expr, names, modules in calls:
        where = f"minikafka/{rel}:{line}: {ast.unparse(expr)}"
        if any(isinstance(n, (ast.Constant, ast.JoinedStr)) and isinstance(getattr(n, "value", ""), str)
               for n in ast.walk(expr)):
            problems.append(f"{where}: a metric named by a string; use a metric_names object")
            continue
        refs = _declared(expr, names, modules)
        if not refs:
            if (rel, ast.unparse(expr)) in DYNAMIC:
                dynamic_seen.add((rel, ast.unparse(expr)))
            else:
                problems.append(f"{where}: not a metric_names object")
            continue
        for ref in refs:
            if not (isinstance(ref, M.Metric) and ref in M.REGISTRY and ref.kind == kind):
                problems.append(f"{where}: {ref!r} is not a declared {kind}")
    assert not problems, "\n".join(problems)
    assert dynamic_seen == DYNAMIC


def test_dynamic_call_sites_use_declared_counters():
    assert all(v in M.COUNTERS for v in COUNTED.values())
    assert all(v in M.COUNTERS for v in TXN_COUNTED.values())


def test_no_counter_name_is_built_from_strings():
    """The old style (``count("isr_shrink")``, ``count(f"errors_{...}")``) is gone."""
    pattern = re.compile(r"""(metrics|host|\bh)\.count\(\s*f?["']""")
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in PACKAGE.rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


# ---------------------------------------------------------------- docs

def test_docs_list_every_declared_metric_and_nothing_else():
    text = (ROOT / "docs" / "metrics.md").read_text()
    for m in M.REGISTRY:
        shown = m.name + ("_bucket" if m.kind == M.HISTOGRAM else "")  # documented as name_bucket{...}, _sum, _count
        assert re.search(rf"`{shown}[`{{]", text), f"docs/metrics.md does not document {m.name}"
        # labels in braces; the per-partition section states topic and partition once for all
        row = re.search(rf"`{shown}\{{([a-z_,]+)\}}`", text)
        shown_labels = set(row.group(1).split(",")) - {"le"} if row else set()
        assert set(m.labels) - {"topic", "partition"} <= shown_labels <= set(m.labels), f"labels of {m.name} in the docs"
    for name in set(re.findall(r"`(minikafka_[a-z0-9_]+)", text)):
        assert name.removesuffix("_bucket") in M.BY_NAME, f"docs/metrics.md names {name}, which is not declared"


def test_observe_request_is_count_of_requests_and_observe_of_its_time():
    fast, plain = Metrics(), Metrics()
    for api, s in (("produce", 0.003), ("fetch", 0.7), ("produce", 99.0)):
        fast.observe_request(api, s)
        plain.count(M.REQUESTS, api=api)
        plain.observe(M.REQUEST_SECONDS, s, api=api)
    assert render_prometheus(fast, sources()) == render_prometheus(plain, sources())
