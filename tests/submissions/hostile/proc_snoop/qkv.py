"""Attack: learn where the repository, the hidden suites and the report are from the
worker's own /proc entries (inherited command line and environment), its parents', and
Python's own records of them, then `stat` the solutions and hidden suites (Landlock stops
reads, not stat) and list the repository. Everything that would help is raised."""
import glob
import os
import sys

CLUES = ("tests/suites", "solutions", "hidden", "json-report", "ag-run", "PYTEST", "PYTHONPATH", "grading.toml")


def _snoop() -> tuple[list[str], list[str]]:
    texts = {}
    parent = os.getppid()
    for pid in ("self", str(os.getpid()), str(parent), *(str(parent - n) for n in range(1, 4)), "1"):
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{name}", "rb") as fh:
                    texts[f"/proc/{pid}/{name}"] = fh.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                pass
    texts["orig_argv"] = " ".join(sys.orig_argv)
    texts["argv"] = " ".join(sys.argv)
    texts["environ"] = " ".join(f"{k}={v}" for k, v in os.environ.items())
    seen = [f"{where}: {text[:300]}" for where, text in texts.items() if any(c in text for c in CLUES)]
    leaked = []
    roots = {os.path.dirname(sys.prefix), "/autograder/source", "/autograder", os.path.dirname(os.path.dirname(sys.prefix))}
    for root in sorted(roots):
        for rel in ("solutions/qkv.py", "tests/suites/qkv/test_qkv_hidden.py", "grading.toml", "solutions", "tests/suites"):
            path = os.path.join(root, rel)
            try:
                os.stat(path)
                leaked.append(f"stat {path}")
            except OSError:
                pass
        leaked += [f"glob {p}" for p in glob.glob(os.path.join(root, "tests", "suites", "*", "*hidden*"))]
        try:
            names = os.listdir(root)
            leaked += [f"listdir {root}: {names}"] if any(n in names for n in ("solutions", "tests", "grading.toml")) else []
        except OSError:
            pass
    return seen, leaked


def project_qkv(x, w_q, w_k, w_v):
    seen, found = _snoop()
    raise RuntimeError(f"seen: {seen} found: {found}")
