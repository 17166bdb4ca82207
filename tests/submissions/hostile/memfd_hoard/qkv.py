"""Attack (issue 17): hold memory the worker's address-space limit does not count.

Anonymous memfd files of 16 MiB (RLIMIT_FSIZE) each, written so their pages exist, kept
open up to the open-file limit: before memfd_create was denied, ~250 × 16 MiB of shmem per
worker (a Gradescope bundle run held +2 946 MiB) while RLIMIT_AS saw none of it."""
import os

import torch

HELD = []


def _hoard():
    written, why = 0, "the cap of this attack"
    block = b"\xa5" * (1 << 20)
    try:
        while len(HELD) < 1024:
            fd = os.memfd_create(f"hoard{len(HELD)}", os.MFD_CLOEXEC)
            HELD.append(fd)
            for _ in range(16):
                os.write(fd, block)
                written += 1
    except OSError as exc:
        why = f"{type(exc).__name__} ({exc.strerror})"
    return f"memfd hoard: {len(HELD)} files, {written} MiB held, stopped by {why}"


def project_qkv(x, w_q, w_k, w_v):
    raise RuntimeError(_hoard())


def attention_scores(q, k):
    raise RuntimeError(_hoard())


def scale_scores(scores, d_k):
    raise RuntimeError(_hoard())


def weighted_values(weights, v):
    raise RuntimeError(_hoard())


def causal_uniform_mean(x):
    raise RuntimeError(_hoard())
