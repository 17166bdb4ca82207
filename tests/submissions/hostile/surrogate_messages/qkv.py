"""Attack: exception messages and printed text holding lone surrogates, NULs and terminal
controls, one of them sent as a raw reply (JSON "\ud800" escape) so it reaches the grader
unchanged: every output writer must still write a valid results file."""
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


NASTY = "\ud800 \udfff nul:\x00 bell:\x07 esc:\x1b[2J"


def project_qkv(x, w_q, w_k, w_v):
    print(NASTY)
    raise ValueError(NASTY)


def attention_scores(q, k):
    error = {"type": "ValueError\ud800", "message": "\ud800\udfff\u0000 " * 100, "base": "Exception", "frames": [{"file": "qkv\ud800.py", "line": 1, "function": "f\u0000"}]}
    _send_raw(json.dumps({"ok": False, "error": error, "out": "\ud800\u0000" * 10, "out_dropped": 0, "ops": ["\ud800"], "autograd": []}).encode())


def scale_scores(scores, d_k):
    raise KeyError(NASTY)


def weighted_values(weights, v):
    raise NotImplementedError("TODO(qkv): \ud800\x00")
