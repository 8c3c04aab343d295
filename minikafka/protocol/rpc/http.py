"""The broker protocol's HTTP framing, without the I/O: ``POST /v1/<api>`` with a
msgpack map as the body, a msgpack map as the answer.

Every caller (clients, brokers calling each other, the fault harness, tests) builds
requests and reads answers here; :mod:`minikafka.rpc` moves the bytes.
"""
from __future__ import annotations

from ... import errors
from . import codec

CONTENT_TYPE = "application/msgpack"
# What a broker takes as a request body's Content-Type: msgpack's type, and the older
# x- name that brokers and clients of earlier releases send.  Neither is one a web page
# may send to another site without the browser asking first (a CORS preflight, which
# the brokers never allow), so a page cannot post to a broker (docs/security.md).
REQUEST_CONTENT_TYPES = frozenset({CONTENT_TYPE, "application/x-msgpack"})
HEADERS = {"Content-Type": CONTENT_TYPE, "Accept": CONTENT_TYPE}
# Brokers send the cluster credential in this header (minikafka/broker/cluster_auth.py).
CLUSTER_CREDENTIAL_HEADER = "X-Minikafka-Cluster-Credential"


def url_for(host: str, port: int, api: str, scheme: str = "http") -> str:
    """``http://host:port/v1/<api>`` (an IPv6 literal in brackets; ``scheme`` https for TLS)."""
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}/v1/{api}"


def encode_request(body: dict) -> bytes:
    """A request body: the msgpack map."""
    return codec.pack(body)


def decode_answer(raw: bytes, status: int, where: str, raise_error: bool = True) -> dict:
    """The answer map of one call.  With ``raise_error``, a non-zero top-level
    ``error_code`` raises its registered exception.  An answer that is not a msgpack map
    (an HTTP error page, say) raises UNKNOWN_SERVER_ERROR naming ``where``."""
    if not raw:
        if status >= 400:
            raise errors.UnknownServerError(f"{where}: HTTP {status} without body")
        return {}
    try:
        answer = codec.unpack(raw)
    except errors.KafkaError:
        text = raw[:200].decode("utf-8", "replace")
        raise errors.UnknownServerError(f"{where}: HTTP {status}, answer is not msgpack: {text!r}") from None
    if not isinstance(answer, dict):
        raise errors.UnknownServerError(f"{where}: answer is a {type(answer).__name__}, expected a map")
    code = answer.get("error_code", 0)
    if code and raise_error:
        raise errors.error_for(code, answer.get("message") or "")
    if status >= 400 and not code:
        raise errors.UnknownServerError(f"{where}: HTTP {status}")
    return answer
