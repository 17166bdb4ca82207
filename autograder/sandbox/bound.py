"""The worker encodes, signs and sends its replies, and reads its requests, in its own process,
after exercise code has run there; every library function this module calls is bound here,
before any exercise code runs, to C code that looks nothing up when called. A module-level
lookup (``json.dumps``, ``hmac.new``, ``sock.sendall`` through ``socket.socket``) would run
whatever the exercise had put in its place: blind red-team tester R-BU set ``json.dumps``
to a function of its own, which was handed every reply before it was signed and deleted
what the rule recorders wrote (custom_backward and row_softmax at full marks with autograd
and a softmax kernel). Written by hand, not with ``json.dumps``: no library offers an
encoder that cannot be replaced from inside the process."""

from __future__ import annotations

import _socket
import bisect
import hashlib
import hmac
import json
import math
import os
import re
import time
from typing import Any

try:
    import _json
except ImportError:  # a Python without the _json accelerator: the library's own functions
    _json = None  # type: ignore[assignment]
_make_encoder: Any = getattr(_json, "make_encoder", None)
_encode_ascii: Any = getattr(_json, "encode_basestring_ascii", None)
_make_scanner: Any = getattr(_json, "make_scanner", None)
_scan: Any = _make_scanner(json.JSONDecoder()) if _make_scanner is not None else None
_whitespace = re.compile(r"[ \t\n\r]*").match
sha256 = hashlib.sha256
compare_digest = hmac.compare_digest
hmac_new: Any
try:
    from _hashlib import hmac_new
except ImportError:  # a Python without OpenSSL's hashlib
    hmac_new = hmac.new
sendall, recv_into, settimeout = _socket.socket.sendall, _socket.socket.recv_into, _socket.socket.settimeout
monotonic = time.monotonic
isfinite, prod = math.isfinite, math.prod
bisect_right = bisect.bisect_right
urandom = os.urandom


def _not_json(value: Any) -> None:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """``json.dumps(value, allow_nan=False, separators=(",", ":"))`` (ASCII), from the bound C encoder."""
    if _make_encoder is None:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    return "".join(_make_encoder({}, _not_json, _encode_ascii, None, ":", ",", False, False, False)(value, 0))


def loads(text: str) -> Any:
    """``json.loads(text)``, from the bound C scanner; a ``ValueError`` for what is not one JSON value."""
    if _scan is None:
        return json.loads(text)
    try:
        value, end = _scan(text, _skip(text, 0))
    except StopIteration as exc:
        raise ValueError(f"Expecting value: char {exc.value}") from None
    end = _skip(text, end)
    if end != len(text):
        raise ValueError(f"Extra data: char {end}")
    return value


def _skip(text: str, at: int) -> int:
    """The index after the JSON whitespace at ``at``."""
    found = _whitespace(text, at)
    return found.end() if found is not None else at
