"""Attack: leave threads running after returning — one spins, one rewrites its own
results in place after they were returned, one tries to keep the process alive."""
import threading
import time

import torch

_KEEP = []


def _spin():
    while True:
        pass


def _tamper(tensors):
    while True:
        for t in tensors:
            t.fill_(0.12345)
        time.sleep(0.001)


def project_qkv(x, w_q, w_k, w_v):
    out = (torch.zeros(1), torch.zeros(1), torch.zeros(1))
    threading.Thread(target=_spin, daemon=False).start()
    threading.Thread(target=_tamper, args=(out,), daemon=True).start()
    return out


def attention_scores(q, k):
    threading.Thread(target=_spin, daemon=False).start()
    return torch.zeros(q.shape[:-1] + (k.shape[-2],))
