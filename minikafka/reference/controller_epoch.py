"""A controller request from an old controller epoch, sent to one broker of each cluster.

A controller that lost its place (a new one was elected, /controller_epoch went up) may
still send LeaderAndIsr, UpdateMetadata and StopReplica to the brokers; they must refuse
it with STALE_CONTROLLER_EPOCH and change nothing.  This module asks both clusters that
question, each on the listener its controller uses:

* Apache Kafka (ZooKeeper mode) receives controller requests on its inter-broker listener,
  here its only (PLAINTEXT) listener, in Kafka's binary protocol: :func:`ask_kafka` sends
  version 0 of each request (no broker epoch, so only the controller epoch is checked), with
  no partitions, and reads the top-level error code;
* minikafka receives them as msgpack over HTTP with the cluster credential
  (:func:`ask_minikafka`).

Both return request name -> Kafka's error name (``NONE``: accepted).
"""
from __future__ import annotations

import socket
import struct
import urllib.request

from ..errors import error_name

REQUESTS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
_API_KEYS = {"LeaderAndIsr": 4, "StopReplica": 5, "UpdateMetadata": 6}
_CONTROLLER_ID = 1  # the id the old controller claims; not checked before the epoch
_CLIENT_ID = b"fidelity-old-controller"


def _body(request: str, controller_epoch: int) -> bytes:
    head = struct.pack(">ii", _CONTROLLER_ID, controller_epoch)
    if request == "StopReplica":  # v0: delete_partitions, partitions[]
        return head + struct.pack(">bi", 0, 0)
    return head + struct.pack(">ii", 0, 0)  # v0: partition_states[], live_leaders[] / live_brokers[]


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        got = sock.recv(n - len(out))
        if not got:
            raise ConnectionError("the broker closed the connection before answering")
        out += got
    return out


def ask_kafka(port: int, controller_epoch: int, host: str = "127.0.0.1", timeout_s: float = 15.0) -> dict[str, str]:
    """Each controller request, version 0, from ``controller_epoch``, to the Kafka broker on ``port``."""
    out = {}
    for correlation, request in enumerate(REQUESTS, start=1):
        header = struct.pack(">hhih", _API_KEYS[request], 0, correlation, len(_CLIENT_ID)) + _CLIENT_ID
        frame = header + _body(request, controller_epoch)
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            size = struct.unpack(">i", _recv(sock, 4))[0]
            answer = _recv(sock, size)
        got_correlation, code = struct.unpack(">ih", answer[:6])
        if got_correlation != correlation:
            raise ConnectionError(f"{request}: answer for correlation id {got_correlation}, not {correlation}")
        out[request] = error_name(code)
    return out


def ask_minikafka(port: int, secret: str, controller_epoch: int, host: str = "127.0.0.1",
                  timeout_s: float = 15.0) -> dict[str, str]:
    """The same requests, as minikafka's controller sends them (msgpack, cluster credential),
    to the broker whose HTTP listener is ``port``."""
    from ..protocol.rpc import codec, http

    bodies = {
        "LeaderAndIsr": ("leader_and_isr", {"partition_states": [], "live_leaders": []}),
        "UpdateMetadata": ("update_metadata", {"partition_states": [], "live_brokers": [], "deleted_topics": []}),
        "StopReplica": ("stop_replica", {"delete_partitions": False, "partitions": []}),
    }
    out = {}
    for request in REQUESTS:
        api, body = bodies[request]
        headers = {**http.HEADERS, http.CLUSTER_CREDENTIAL_HEADER: secret}
        req = urllib.request.Request(http.url_for(host, port, api), method="POST", headers=headers,
                                     data=codec.pack({"controller_id": _CONTROLLER_ID,
                                                      "controller_epoch": controller_epoch, **body}))
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            answer = http.decode_answer(resp.read(), resp.status, api, raise_error=False)
        out[request] = answer.get("error") or error_name(answer.get("error_code", 0))
    return out
