"""The broker's metadata cache: what UpdateMetadata said about the cluster."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MetadataCache:
    """Live brokers, the controller and every partition's leader/ISR as last sent by the controller."""

    controller_id: int = -1
    controller_epoch: int = -1
    brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: dict[tuple[str, int], dict] = field(default_factory=dict)
    version: int = 0

    def update(self, msg: dict) -> None:
        self.controller_id = msg["controller_id"]
        self.controller_epoch = msg["controller_epoch"]
        self.brokers = {b["id"]: (b["host"], b["port"]) for b in msg["live_brokers"]}
        for st in msg["partition_states"]:
            self.partitions[(st["topic"], st["partition"])] = st
        for topic in msg.get("deleted_topics", ()):
            for tp in [tp for tp in self.partitions if tp[0] == topic]:
                del self.partitions[tp]
        self.version += 1

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.partitions})

    def partitions_of(self, topic: str) -> list[dict]:
        return [st for (t, _), st in sorted(self.partitions.items()) if t == topic]

    def topic_metadata(self, topic: str) -> dict:
        states = self.partitions_of(topic)
        if not states:
            return {"name": topic, "error_code": 3, "error": "UNKNOWN_TOPIC_OR_PARTITION",
                    "message": f"topic {topic!r} does not exist", "partitions": []}
        parts = []
        for st in states:
            offline = [r for r in st["replicas"] if r not in self.brokers]
            leader = st["leader"]
            err = (0, "NONE", "") if leader >= 0 and leader in self.brokers else (5, "LEADER_NOT_AVAILABLE", "partition is offline")
            parts.append({"partition": st["partition"], "leader": leader, "leader_epoch": st["leader_epoch"],
                          "replicas": list(st["replicas"]), "isr": list(st["isr"]), "offline_replicas": offline,
                          "error_code": err[0], "error": err[1], "message": err[2]})
        return {"name": topic, "error_code": 0, "error": "NONE", "message": "", "partitions": parts}
