"""The control server: the fault API of one local cluster over HTTP and JSON, for tests
written in Java, Node or anything else that can POST (``minikafka fault serve``).

Why a server of its own rather than the brokers' HTTP listener: a fault acts on
processes (it kills, pauses and restarts brokers and ZooKeeper, adds iptables rules
for link faults), which only the process that knows the cluster's pids and owns its
link rules can do; a broker cannot restart itself once killed, and the fault API must
answer while every broker is down.  So the server runs beside the cluster (usually
having started it), on 127.0.0.1 only.

Requests (a JSON body; answers are JSON)::

    GET  /v1/cluster                     bootstrap strings, brokers, what is broken
    GET  /v1/faults                      every fault so far (id, kind, text, broker, epoch, healed)
    POST /v1/find            {"target": "leader:orders:0"}         -> the broker playing it now
    POST /v1/faults/kill     {"target": "leader:orders:0"}         (also pause, stop, expire_session, and
                                                                     restart, with "graceful": true for SIGTERM)
    POST /v1/faults/cut      {"a": "controller", "b": "zookeeper", "both_ways": true, "reject": false}
    POST /v1/faults/slow     {"a": "broker:1", "b": "broker:2", "loss": 0.3}
    POST /v1/faults/zookeeper_outage {"servers": [1]}              (none: every server)
    POST /v1/faults/heal     {"id": 3}                              (none: every fault, then wait for full ISRs)
    POST /v1/wait/leader     {"topic": "orders", "partition": 0, "not_broker": 2, "timeout_s": 30}
    POST /v1/wait/isr_full   {"topic": "orders"}                    (also group_stable {"group", "members"},
                                                                     caught_up {"group", "topic"})

A fault answers ``{"id", "kind", "text", "broker", "role", "epoch", "epoch_name", "pid",
"healed", "heal_text"}``.  A mistake (unknown target, no such partition, a missing
field) is status 400 with ``{"error": "INVALID_REQUEST", "message": "..."}`` and
changes nothing; a wait that runs out of time is 408 ``REQUEST_TIMED_OUT``.  POSTs must
be ``application/json`` (a web page of another site cannot send that without the
browser asking first), and a request carrying a foreign ``Origin`` is refused (403).
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

from ..errors import ClientError
from .waits import WaitTimeout

FAULTS = ("kill", "pause", "stop", "restart", "expire_session")


class BadRequest(Exception):
    """A request the server refuses (status 400)."""


def _field(body: dict, name: str, kind: type = str, default: Any = ...) -> Any:
    if name not in body or body[name] is None:
        if default is ...:
            raise BadRequest(f"missing field {name!r}")
        return default
    value = body[name]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise BadRequest(f"field {name!r} must be a whole number, got {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise BadRequest(f"field {name!r} must be a number, got {value!r}")
    if kind is str and (isinstance(value, bool) or not isinstance(value, (str, int))):
        raise BadRequest(f"field {name!r} must be a string, got {value!r}")
    if kind is bool and not isinstance(value, bool):
        raise BadRequest(f"field {name!r} must be true or false, got {value!r}")
    return str(value) if kind is str else value


def _target(body: dict, name: str = "target") -> Any:
    """A role's text form (``leader:orders:0``) or a broker id."""
    return _field(body, name)


class Control:
    """The requests of the module doc on one :class:`~minikafka.testing.cluster.LocalCluster`
    (or anything with ``faults``, ``wait``, ``heal``, ``broken`` and the bootstrap strings)."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.lock = threading.Lock()  # one fault at a time

    def handle(self, method: str, path: str, body: dict) -> tuple[int, dict]:
        try:
            return 200, self._route(method, path, body)
        except BadRequest as exc:
            return 400, {"error": "INVALID_REQUEST", "message": str(exc)}
        except ClientError as exc:
            return 400, {"error": "INVALID_REQUEST", "message": str(exc)}
        except WaitTimeout as exc:
            return 408, {"error": "REQUEST_TIMED_OUT", "message": str(exc)}

    def _route(self, method: str, path: str, body: dict) -> dict:
        c = self.cluster
        f = c.faults
        if method == "GET" and path == "/v1/cluster":
            return {"dir": c.dir, "bootstrap": c.bootstrap, "kafka_bootstrap": c.kafka_bootstrap,
                    "zk_connect": c.zk_connect, "brokers": {str(k): v for k, v in c.brokers.items()},
                    "kafka_ports": {str(k): v for k, v in c.kafka_ports.items()}, "broken": c.broken(),
                    "link_faults": c.links is not None}
        if method == "GET" and path == "/v1/faults":
            return {"faults": [a.to_dict() for a in f.actions]}
        if method != "POST":
            raise BadRequest(f"no {method} {path}: see GET /v1/cluster, GET /v1/faults and POST /v1/faults/<kind>")
        if path == "/v1/find":
            found = f.find(_target(body))
            return {"broker": found.broker, "role": str(found.role), "epoch": found.epoch,
                    "epoch_name": found.epoch_name, "text": found.describe()}
        kind = path.removeprefix("/v1/faults/")
        with self.lock:
            if kind == "restart":
                return f.restart(_target(body), graceful=_field(body, "graceful", bool, False)).to_dict()
            if kind in FAULTS:
                return getattr(f, kind)(_target(body)).to_dict()
            if kind == "cut":
                return f.cut(_target(body, "a"), _target(body, "b"), both_ways=_field(body, "both_ways", bool, True),
                             reject=_field(body, "reject", bool, False)).to_dict()
            if kind == "slow":
                return f.slow(_target(body, "a"), _target(body, "b"), loss=float(_field(body, "loss", float, 0.3)),
                              both_ways=_field(body, "both_ways", bool, True)).to_dict()
            if kind == "zookeeper_outage":
                servers = body.get("servers")
                if servers is not None and (not isinstance(servers, list) or
                                            not all(isinstance(s, int) and not isinstance(s, bool) for s in servers)):
                    raise BadRequest(f"field 'servers' must be a list of server ids, got {servers!r}")
                return f.zookeeper_outage(servers).to_dict()
            if kind == "heal":
                if body.get("id") is not None:
                    return {"done": f.heal(_field(body, "id", int))}
                return {"done": c.heal(timeout_s=float(_field(body, "timeout_s", float, 90.0)))}
        if path.startswith("/v1/wait/"):
            return self._wait(path.removeprefix("/v1/wait/"), body)
        raise BadRequest(f"no POST {path}: faults are /v1/faults/{{{','.join(FAULTS)},cut,slow,zookeeper_outage,heal}}"
                         f", waits /v1/wait/{{leader,isr_full,group_stable,caught_up}}")

    def _wait(self, what: str, body: dict) -> dict:
        w = self.cluster.wait
        timeout = float(_field(body, "timeout_s", float, 30.0))
        if what == "leader":
            leader, epoch = w.leader(_field(body, "topic"), _field(body, "partition", int, 0),
                                     _field(body, "not_broker", int, None), timeout_s=timeout)
            return {"leader": leader, "leader_epoch": epoch}
        if what == "isr_full":
            w.isr_full(_field(body, "topic", str, None), timeout_s=timeout)
            return {"isr_full": True}
        if what == "group_stable":
            d = w.group_stable(_field(body, "group"), _field(body, "members", int, None), timeout_s=timeout)
            return {"state": d.state, "generation": d.generation, "members": len(d.members)}
        if what == "caught_up":
            got = w.caught_up(_field(body, "group"), _field(body, "topic"), timeout_s=timeout)
            return {"committed": {f"{tp.topic}-{tp.partition}": o for tp, o in got.items()}}
        raise BadRequest(f"no wait {what!r}: leader, isr_full, group_stable or caught_up")


def _handler(control: Control, port: Callable[[], int]) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "minikafka-control"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _answer(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _origin_ok(self) -> bool:
            origin = self.headers.get("Origin")
            if origin is None:
                return True
            host = urlsplit(origin).netloc
            return host in (f"127.0.0.1:{port()}", f"localhost:{port()}")

        def do_GET(self) -> None:
            if not self._origin_ok():
                self._answer(403, {"error": "CLUSTER_AUTHORIZATION_FAILED", "message": "a foreign Origin"})
                return
            self._answer(*control.handle("GET", urlsplit(self.path).path, {}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not self._origin_ok():
                self._answer(403, {"error": "CLUSTER_AUTHORIZATION_FAILED", "message": "a foreign Origin"})
                return
            if (self.headers.get("Content-Type") or "").split(";")[0].strip() != "application/json":
                self._answer(415, {"error": "INVALID_REQUEST", "message": "the body must be application/json"})
                return
            try:
                body = json.loads(raw or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                self._answer(400, {"error": "INVALID_REQUEST", "message": f"the body is not a JSON object: {exc}"})
                return
            self._answer(*control.handle("POST", urlsplit(self.path).path, body))
    return Handler


class ControlServer:
    """A :class:`Control` served on ``127.0.0.1:port`` (0: a free port) in a thread of
    its own; ``url`` once started; :meth:`close` stops it."""

    def __init__(self, cluster: Any, port: int = 0) -> None:
        self.control = Control(cluster)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self.control, lambda: self.port))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="minikafka-control", daemon=True)

    def start(self) -> "ControlServer":
        self.thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread (the command line's)."""
        self.httpd.serve_forever()

    def close(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.thread.join(10)
        self.httpd.server_close()

    def __enter__(self) -> "ControlServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
