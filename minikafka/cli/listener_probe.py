"""Why the CLI reached no broker: the addresses it was given answer Kafka's binary protocol.

minikafka's commands speak the brokers' msgpack/HTTP protocol; each broker also serves
Kafka's binary protocol on another port (``cluster up`` prints it for "Kafka clients").
A Kafka listener closes a connection that sends it an HTTP request, which the client
reports as NETWORK_EXCEPTION.  When that happens at bootstrap, :func:`explain` sends
each bootstrap address a Kafka ApiVersions v0 request; if one answers, the error names
it as a Kafka-protocol listener and, when the cluster recorded in ``--dir`` has a broker
with that Kafka port, the HTTP address to use instead.
"""
from __future__ import annotations

import argparse
import socket
from typing import Sequence

from ..cluster.state import ClusterState, exists, load
from ..protocol.kafka.apis import API_VERSIONS
from ..protocol.kafka.frames import decode_response, encode_request

CORRELATION_ID = 0x6D6B  # any number: the answer must carry it back
MAX_ANSWER = 1 << 20


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def speaks_kafka(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """True when ``host:port`` answers a Kafka ApiVersions v0 request with a well-formed response."""
    request = encode_request(API_VERSIONS, 0, CORRELATION_ID, "minikafka-cli", {})
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(request)
            size = int.from_bytes(_read_exactly(sock, 4), "big", signed=True)
            if not 4 <= size <= MAX_ANSWER:
                return False
            correlation_id, body = decode_response(API_VERSIONS, 0, _read_exactly(sock, size))
    except (OSError, ValueError, ConnectionError):
        return False
    return correlation_id == CORRELATION_ID and isinstance(body.get("api_keys"), list)


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        host, sep, port = item.strip().rpartition(":")
        if sep and host and port.isdigit():
            out.append((host.strip("[]"), int(port)))
    return out


def _http_address(state: ClusterState | None, host: str, port: int) -> tuple[int, str] | None:
    """(broker id, HTTP endpoint) of the recorded broker whose Kafka listener is ``host:port``."""
    if state is None:
        return None
    for bid, b in sorted(state.brokers.items()):
        if b.kafka_port == port and host in (b.host, "localhost", "127.0.0.1", "::1"):
            return bid, b.endpoint
    return None


def explain(bootstrap: str, dir: str | None, probe=speaks_kafka) -> str | None:
    """One line naming the bootstrap addresses that answered Kafka's protocol and the HTTP
    addresses to use instead; None when none of them speaks Kafka (the failure is another)."""
    kafka = [(h, p) for h, p in _addresses(bootstrap) if probe(h, p)]
    if not kafka:
        return None
    state = None
    if dir is not None and exists(dir):
        try:
            state = load(dir)
        except Exception:  # an unreadable record: say what we know without it
            state = None
    found = [_http_address(state, h, p) for h, p in kafka]
    names = ", ".join(f"{h}:{p}" for h, p in kafka)
    what = "is a Kafka-protocol listener" if len(kafka) == 1 else "are Kafka-protocol listeners"
    line = (f"{names} {what} (for kcat and Kafka clients: it answers Kafka's ApiVersions), but minikafka's "
            f"commands speak to a broker's HTTP listener")
    if all(found):
        brokers = ", ".join(f"broker {bid}" for bid, _ in found)  # type: ignore[misc]
        return f"{line}: use --bootstrap-server {','.join(e for _, e in found)} ({brokers})"  # type: ignore[misc]
    return (f"{line}, the address `cluster up` prints under 'bootstrap servers' (the ENDPOINT column of "
            f"`minikafka cluster status`)")


def explain_args(args: argparse.Namespace, probe=speaks_kafka) -> str | None:
    """:func:`explain` for a parsed command line (its ``--bootstrap-server`` and ``--dir``)."""
    bootstrap = getattr(args, "bootstrap_server", None)
    if not bootstrap:
        return None
    return explain(bootstrap, getattr(args, "dir", None), probe)


__all__: Sequence[str] = ("explain", "explain_args", "speaks_kafka")
