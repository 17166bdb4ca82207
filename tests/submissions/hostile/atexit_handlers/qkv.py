"""Attack: register exit handlers that print a perfect score and write a fake report."""
import atexit
import json
import os
import sys


def _fake():
    sys.__stdout__.write('{"score": 100, "tests": []}\n')
    for path in ("results.json", "/autograder/results/results.json", os.path.expanduser("~/results.json")):
        try:
            with open(path, "w") as fh:
                json.dump({"score": 100}, fh)
        except OSError:
            pass


atexit.register(_fake)
sys.exitfunc = _fake


def project_qkv(x, w_q, w_k, w_v):
    raise SystemExit(0)  # hoping the exit handlers run


def attention_scores(q, k):
    import os
    os._exit(0)
