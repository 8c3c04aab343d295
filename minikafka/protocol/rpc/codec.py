"""msgpack codec for the broker protocol: bytes in, validated message out, or an error.

No I/O here: aiohttp (broker/) and the clients only move the bytes this module makes.
"""
from __future__ import annotations

from typing import Any

import msgpack

from ...errors import NONE, InvalidRequestError, KafkaError, UnsupportedVersionError
from .messages import APIS
from .schema import MAX_ENTRIES

MAX_REQUEST_BYTES = 100 * 1024 * 1024


def pack(message: dict) -> bytes:
    """Encode a message map as msgpack (bytes stay binary, str stay str)."""
    return msgpack.packb(message, use_bin_type=True)


EXT_REFUSED = "msgpack extension types are not accepted"


class _ExtTypeRefused(Exception):
    pass


def _refuse_ext(code: int, data: bytes) -> Any:
    raise _ExtTypeRefused(f"{EXT_REFUSED} (ext type {code})")


def unpack(body: bytes | bytearray, max_entries: int | None = None) -> Any:
    """Decode msgpack bytes; raise INVALID_REQUEST when they are not valid msgpack.

    With ``max_entries`` (a request) an array or map holding more entries is refused while
    decoding, before it is built, and so is any extension type (the protocol has none)."""
    try:
        if max_entries is None:
            return msgpack.unpackb(body, raw=False, strict_map_key=False)
        return msgpack.unpackb(body, raw=False, strict_map_key=False, max_map_len=max_entries,
                               max_array_len=max_entries, ext_hook=_refuse_ext)
    except _ExtTypeRefused as exc:
        raise InvalidRequestError(str(exc)) from None
    except ValueError as exc:
        if max_entries is not None and "exceeds max_" in str(exc):
            kind = "a map" if "max_map_len" in str(exc) else "an array"
            raise InvalidRequestError(f"{kind} of {str(exc).split()[0]} entries, more than the {max_entries} "
                                      f"a request may hold") from None
        raise InvalidRequestError(f"body is not valid msgpack: {exc.__class__.__name__}: {exc}") from None
    except Exception as exc:  # msgpack raises several unrelated exception types
        raise InvalidRequestError(f"body is not valid msgpack: {exc.__class__.__name__}: {exc}") from None


def decode_request(api: str, body: bytes | bytearray, max_bytes: int = MAX_REQUEST_BYTES) -> dict:
    """Validate a request body for ``api`` and return it with defaults filled in."""
    spec = APIS.get(api)
    if spec is None:
        raise UnsupportedVersionError(f"unknown API {api!r}; known: {', '.join(sorted(APIS))}")
    if len(body) > max_bytes:
        raise InvalidRequestError(f"request body of {len(body)} bytes exceeds the limit of {max_bytes} bytes")
    return spec.request.validate(unpack(body, MAX_ENTRIES))


def ok(**fields: Any) -> dict:
    """A successful response map."""
    return {"error_code": 0, "error": NONE.name, "message": "", **fields}


def error_response(exc: KafkaError, **fields: Any) -> dict:
    """A failed response map carrying the error's code, name and message."""
    return {"error_code": exc.code.code, "error": exc.code.name, "message": exc.message, **fields}


def partition_error(exc: KafkaError | None) -> dict:
    """The error fields for one partition entry (NONE when ``exc`` is None)."""
    if exc is None:
        return {"error_code": 0, "error": "NONE", "message": ""}
    return {"error_code": exc.code.code, "error": exc.code.name, "message": exc.message}
