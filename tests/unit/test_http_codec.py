"""The broker protocol's HTTP framing (minikafka/protocol/http.py): answers decoded into
maps or into the registered errors, whatever bytes come back."""
from __future__ import annotations

import pytest

from minikafka import errors
from minikafka.protocol.rpc import codec
from minikafka.protocol.rpc.http import decode_answer, encode_request, url_for


def test_url_and_request():
    assert url_for("127.0.0.1", 9092, "fetch") == "http://127.0.0.1:9092/v1/fetch"
    assert url_for("::1", 9092, "metadata") == "http://[::1]:9092/v1/metadata"
    assert codec.unpack(encode_request({"topics": None})) == {"topics": None}


def test_an_answer_map_comes_back_as_is():
    raw = codec.pack({"error_code": 0, "brokers": [1]})
    assert decode_answer(raw, 200, "metadata") == {"error_code": 0, "brokers": [1]}
    assert decode_answer(b"", 200, "metadata") == {}


def test_a_top_level_error_code_raises_its_registered_error_unless_asked_not_to():
    raw = codec.pack({"error_code": 41, "error": "NOT_CONTROLLER", "message": "broker 2 is not the controller"})
    with pytest.raises(errors.NotControllerError, match="broker 2 is not the controller"):
        decode_answer(raw, 200, "elect_leaders")
    assert decode_answer(raw, 200, "elect_leaders", raise_error=False)["error_code"] == 41


@pytest.mark.parametrize("raw, status, message", [
    (b"<html>502 Bad Gateway</html>", 502, "HTTP 502, answer is not msgpack: '<html>502 Bad Gateway</html>'"),
    (b"\xc1\xc1", 200, "answer is not msgpack"),
    (codec.pack([1, 2]), 200, "answer is a list, expected a map"),
    (b"", 500, "HTTP 500 without body"),
    (codec.pack({"error_code": 0}), 503, "HTTP 503"),
])
def test_what_is_not_an_answer_is_an_unknown_server_error_naming_the_call(raw, status, message):
    with pytest.raises(errors.UnknownServerError, match="fetch request to b1") as got:
        decode_answer(raw, status, "fetch request to b1")
    assert message in str(got.value)


def test_requests_with_too_many_entries_are_refused_before_any_work():
    from minikafka.protocol.rpc.codec import decode_request
    from minikafka.protocol.rpc.schema import MAX_ENTRIES

    parts = [{"topic": "t", "partition": 0, "fetch_offset": 0}] * (MAX_ENTRIES + 1)
    with pytest.raises(errors.InvalidRequestError, match="more than the 100000 a request may hold"):
        decode_request("fetch", codec.pack({"partitions": parts}))
    assert len(decode_request("fetch", codec.pack({"partitions": parts[:3]}))["partitions"]) == 3
    with pytest.raises(errors.InvalidRequestError, match="more than"):
        decode_request("alter_configs", codec.pack({"topic": "t", "set": {f"k{i}": "v" for i in range(MAX_ENTRIES + 1)}}))


def test_a_map_or_array_over_the_cap_is_refused_wherever_it_is():
    """Also where no field is declared (unknown keys, the request map itself): msgpack's
    decoding limits refuse it before it is built."""
    from minikafka.protocol.rpc.codec import decode_request

    with pytest.raises(errors.InvalidRequestError, match="a map of 200000 entries, more than the 100000"):
        decode_request("metadata", codec.pack({f"k{i}": 1 for i in range(200_000)}))
    with pytest.raises(errors.InvalidRequestError, match="an array of 200000 entries, more than the 100000"):
        decode_request("metadata", codec.pack({"topics": None, "extra": [0] * 200_000}))


@pytest.mark.parametrize("value", [
    __import__("msgpack").ExtType(5, b"x"), __import__("msgpack").Timestamp(1, 0)])
def test_an_extension_type_is_refused_in_words(value):
    from minikafka.protocol.rpc.codec import decode_request

    with pytest.raises(errors.InvalidRequestError, match="msgpack extension types are not accepted"):
        decode_request("metadata", codec.pack({"topics": [value]}))
