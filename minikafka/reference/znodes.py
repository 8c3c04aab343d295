"""The znode layout of a cluster as a comparable value: every path and its JSON, masked.

:func:`snapshot` reads a ZooKeeper tree (Kafka's or minikafka's; ZooKeeper's own
``/zookeeper`` left out).  :func:`mask` keeps what Kafka's tools and operators depend on
(paths, JSON keys, constant values such as ``version`` and ``leader_epoch``, list
lengths) and replaces what differs from run to run (ids, timestamps, ports, epochs of
the moment) with a placeholder.  :func:`compare` gives the differences between two
masked layouts.  The part after reading is pure, so it is tested on its own.
"""
from __future__ import annotations

import json
import re
from typing import Any

# JSON keys whose values change from run to run, masked wherever they appear
MASKED_KEYS = {
    "timestamp": "<time>", "id": "<id>", "topic_id": "<id>", "brokerid": "<broker>", "leader": "<broker>",
    "host": "<host>", "port": "<port>", "endpoints": "<endpoints>", "jmx_port": "<port>",
    "block_start": "<offset>", "block_end": "<offset>", "broker": "<broker>",
    "log_since": "<epoch>",  # minikafka's registration: the broker epoch its in-memory log dates from
}
BROKER_LISTS = {"isr", "replicas", "adding_replicas", "removing_replicas"}
_SEQUENTIAL = re.compile(r"(\d{10})$")  # ZooKeeper's sequence suffix
_BROKER_ID = re.compile(r"^/brokers/ids/\d+$")


def normalize_path(path: str) -> str:
    """ZooKeeper's sequential suffixes (``config_change_0000000003``) become ``N``, and a
    broker's registration ``/brokers/ids/<id>`` (the brokers' data is masked alike)."""
    return _BROKER_ID.sub("/brokers/ids/<id>", _SEQUENTIAL.sub("N", path))


def _mask_value(key: str | None, value: Any) -> Any:
    if key in MASKED_KEYS and value is not None:
        return MASKED_KEYS[key]
    if key in BROKER_LISTS and isinstance(value, list):
        return [f"<{len(value)} brokers>"]
    if isinstance(value, dict):
        if key == "partitions" and all(isinstance(v, list) for v in value.values()):
            return {p: [f"<{len(v)} brokers>"] for p, v in value.items()}  # an assignment: broker ids
        return {k: _mask_value(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(None, v) for v in value]
    return value


def mask(path: str, data: bytes | None) -> Any:
    """One znode's data as compared: JSON with run-dependent values masked, an integer for
    the counters (``/controller_epoch``), ``None`` for no data, else ``"<bytes>"``."""
    if not data:
        return None
    text = data.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except ValueError:
        return "<bytes>"
    if path.endswith("/controller_epoch") and isinstance(value, int):
        return "<epoch>"
    return _mask_value(None, value)


def snapshot(zk, root: str = "/") -> dict[str, Any]:  # noqa: ANN001 (a started KazooClient)
    """Every znode under ``root`` (``/zookeeper`` excluded), path -> masked data."""
    out: dict[str, Any] = {}

    def walk(path: str) -> None:
        if path == "/zookeeper":
            return
        try:
            data, _ = zk.get(path)
            children = zk.get_children(path)
        except Exception:  # noqa: BLE001 (an ephemeral or notification znode went away meanwhile)
            return
        if path != "/":
            out[normalize_path(path)] = mask(path, data)
        for child in sorted(children):
            walk(("" if path == "/" else path) + "/" + child)
    walk(root)
    return out


def compare(kafka: dict[str, Any], ours: dict[str, Any]) -> list[dict]:
    """The differences: ``{"path", "kind", "kafka", "ours"}`` with kind ``only in Kafka``,
    ``only in minikafka`` or ``value``, sorted by path."""
    diffs = []
    for path in sorted(set(kafka) | set(ours)):
        if path not in ours:
            diffs.append({"path": path, "kind": "only in Kafka", "kafka": kafka[path], "ours": None})
        elif path not in kafka:
            diffs.append({"path": path, "kind": "only in minikafka", "kafka": None, "ours": ours[path]})
        elif kafka[path] != ours[path]:
            diffs.append({"path": path, "kind": "value", "kafka": kafka[path], "ours": ours[path]})
    return diffs
