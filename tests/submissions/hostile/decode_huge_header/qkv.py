"""Attack (decode bomb): a tensor header claiming 2**62 x 2**62 elements over 8 bytes (zero
strides), and one whose shape overflows 64-bit arithmetic. Replies are signed now
(protocol.FrameAuth): this crafted frame has none, so it is never decoded; the grader
waits for the signature until the call's time limit."""
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


def _bomb(shape, stride):
    node = {"t": "tensor", "dtype": "float64", "shape": shape, "stride": stride, "o": 0, "n": 8}
    value = {"t": "dict", "k": ["value"], "v": [node]}
    _send_raw(json.dumps({"ok": True, "value": value, "out": "", "out_dropped": 0, "ops": [], "autograd": []}).encode(), bytes(8))


def project_qkv(x, w_q, w_k, w_v):
    _bomb([2**62, 2**62], [0, 0])


def attention_scores(q, k):
    _bomb([2**63, 2**63, 2**63], [0, 0, 0])


def scale_scores(scores, d_k):
    _bomb([2**62, 2**62], None)
