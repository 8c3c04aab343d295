"""The compiled request check accepts exactly what the path-naming walk accepts, with the
same result, and a refused value still gets the walk's error naming the bad field."""
from __future__ import annotations

import random

import msgpack
import pytest

from minikafka.errors import InvalidRequestError
from minikafka.protocol.rpc import messages
from minikafka.protocol.rpc.schema import Field, Struct

ODD_VALUES = (None, True, False, 0, -1, 2**63, 1.5, "", "x", b"", b"y", bytearray(b"z"), [], (), {}, {"k": 1},
              [1, 2], ("a",), msgpack.Timestamp(1, 0))


def _sample(typ, rnd: random.Random, depth: int = 0):
    if isinstance(typ, Struct):
        return {f.name: _sample(f.type, rnd, depth + 1) for f in typ.fields if f.required or rnd.random() < 0.5}
    if isinstance(typ, list):
        return [_sample(typ[0], rnd, depth + 1) for _ in range(rnd.randint(0, 2 if depth < 3 else 0))]
    if isinstance(typ, dict):
        (kt, vt), = typ.items()
        return {_sample(kt, rnd, depth + 1): _sample(vt, rnd, depth + 1) for _ in range(rnd.randint(0, 2))}
    return {"int": rnd.randint(0, 5), "str": "s", "bytes": b"b", "bool": True, "float": 0.5, "any": 1}[typ]


def _mutate(value, rnd: random.Random):
    """``value`` with one node somewhere replaced by an odd value, or a key dropped."""
    if isinstance(value, dict) and value and rnd.random() < 0.7:
        key = rnd.choice(list(value))
        out = dict(value)
        if rnd.random() < 0.2:
            del out[key]
        else:
            out[key] = _mutate(value[key], rnd)
        return out
    if isinstance(value, list) and value and rnd.random() < 0.7:
        i = rnd.randrange(len(value))
        return value[:i] + [_mutate(value[i], rnd)] + value[i + 1:]
    return rnd.choice(ODD_VALUES)


def _outcome(check):
    try:
        return "ok", check()
    except InvalidRequestError as exc:
        return "error", exc.message


@pytest.mark.parametrize("api", sorted(messages.APIS))
def test_compiled_and_walked_checks_agree_on_valid_and_mutated_requests(api):
    struct = messages.APIS[api].request
    rnd = random.Random(api)
    for _ in range(150):
        value = _sample(struct, rnd)
        if rnd.random() < 0.8:
            value = _mutate(value, rnd)
        assert _outcome(lambda: struct.validate(value)) == _outcome(lambda: struct._validate(value, "")), value


def test_a_bad_field_deep_in_an_array_is_named_by_its_path():
    inner = Struct("P", (Field("fetch_offset", "int", minimum=0),))
    outer = Struct("R", (Field("partitions", [inner]),))
    assert outer.validate({"partitions": [{"fetch_offset": 1}, {"fetch_offset": 2}]}) == \
        {"partitions": [{"fetch_offset": 1}, {"fetch_offset": 2}]}
    with pytest.raises(InvalidRequestError, match=r"partitions\[1\]\.fetch_offset: -1 is out of range"):
        outer.validate({"partitions": [{"fetch_offset": 1}, {"fetch_offset": -1}]})
    with pytest.raises(InvalidRequestError, match=r"partitions\[0\]\.fetch_offset: must not be nil"):
        outer.validate({"partitions": [{"fetch_offset": None}]})


def test_refused_requests_are_not_kept_alive_by_the_refusal():
    """A refused value must be freed with its request: an exception instance raised again and
    again would keep every frame it passed through, and every request in them."""
    import gc
    import weakref

    struct = messages.APIS["fetch"].request

    class Marker(list):
        pass

    kept = []
    for _ in range(3):
        bad = Marker([{"topic": 1}])  # partitions of the wrong shape: refused, then walked
        kept.append(weakref.ref(bad))
        with pytest.raises(InvalidRequestError):
            struct.validate({"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "partitions": bad})
        del bad
    gc.collect()
    assert [r() for r in kept] == [None, None, None]
