"""Attack (issue 17): fill the scratch folder (cwd, HOME, TMPDIR) — where it is a tmpfs,
that is memory no limit of the worker counts. RLIMIT_FSIZE bounds one file only, so: many
16 MiB files, then unlinked ones held open (O_TMPFILE: no name anyone could clean up).
Capped at 4 files of each kind, so a machine whose scratch is not bounded is not flooded."""
import os

import torch


def _fill():
    written, files, why = 0, 0, "the cap of this attack"
    block = b"\x3c" * (1 << 20)
    held = []
    try:
        for n in range(4):
            with open(f"fill-{os.getpid()}-{n}.bin", "wb") as fh:
                files += 1
                for _ in range(16):
                    fh.write(block)
                    fh.flush()
                    written += 1
        for n in range(4):
            fd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o600)
            held.append(fd)
            files += 1
            for _ in range(16):
                os.write(fd, block)
                written += 1
    except OSError as exc:
        why = f"{type(exc).__name__} ({exc.strerror})"
    return f"scratch fill: {files} files, {written} MiB written, stopped by {why}"


def project_qkv(x, w_q, w_k, w_v):
    raise RuntimeError(_fill())


def attention_scores(q, k):
    raise RuntimeError(_fill())


def scale_scores(scores, d_k):
    raise RuntimeError(_fill())


def weighted_values(weights, v):
    raise RuntimeError(_fill())


def causal_uniform_mean(x):
    raise RuntimeError(_fill())
