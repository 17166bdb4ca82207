"""Attack (issue 17): shared anonymous mappings (MAP_SHARED | MAP_ANONYMOUS) are shmem
pages, not the heap: map 256 MiB regions, keep them all, until refused (the first 4 MiB of
each touched, so its pages exist: touching all of them takes ~15 s on a loaded machine and
proves nothing more). They count in RLIMIT_AS while mapped, so the worker's limit refuses
them, and they die with it."""
import mmap

import torch

HELD = []


def _hoard():
    touched, why = 0, "the cap of this attack"
    try:
        while len(HELD) < 64:
            region = mmap.mmap(-1, 256 << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
            HELD.append(region)
            for offset in range(0, 4 << 20, 4096):
                region[offset] = 1
            touched += 4
    except OSError as exc:
        why = f"{type(exc).__name__} ({exc.strerror})"
    return f"shared mapping hoard: {len(HELD)} regions of 256 MiB, {touched} MiB touched, stopped by {why}"


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
