"""Attack (decode bomb): a reply nested 100 000 levels deep (the JSON parser recurses). Replies are signed now
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


def _bomb():
    depth = 100_000
    _send_raw(b'{"ok":true,"out":"","out_dropped":0,"ops":[],"autograd":[],"value":' + b"[" * depth + b"]" * depth + b"}")


def project_qkv(x, w_q, w_k, w_v):
    _bomb()


def attention_scores(q, k):
    _bomb()


def scale_scores(scores, d_k):
    _bomb()
