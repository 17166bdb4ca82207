"""Attack: find the reference solutions or the hidden tests (or their bytecode) on disk and
import them. Whatever is found is also printed and raised, so a leak would show."""
import importlib.util
import os
import sys

STOLEN = []
ROOTS = ["/", "/autograder", "/autograder/source", os.path.expanduser("~"), "/work", "/tmp", "..", "../..", "../../.."]
for start in ROOTS:
    for dirpath, dirnames, filenames in os.walk(start):
        if dirpath.count(os.sep) > 6:
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d not in ("proc", "sys", "dev", "usr", "lib", "lib64", "bin", "sbin", "site-packages")]
        for name in filenames:
            if name.startswith(("qkv", "test_qkv")) and (name.endswith(".py") or name.endswith(".pyc")):
                path = os.path.join(dirpath, name)
                if path == os.path.abspath(__file__):
                    continue
                try:
                    with open(path, "rb") as fh:
                        STOLEN.append((path, fh.read()))
                except OSError:
                    pass
print("STOLEN:", [p for p, _ in STOLEN])
for path, data in STOLEN:
    print(data[:2000].decode(errors="replace"))

_reference = None
for path, data in STOLEN:
    if b"BEGIN SOLUTION" in data:
        spec = importlib.util.spec_from_file_location("stolen", path)
        _reference = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_reference)
        break


def __getattr__(name):
    if _reference is not None:
        return getattr(_reference, name)
    raise AttributeError(f"nothing stolen: {[p for p, _ in STOLEN]}")


def project_qkv(*args, **kwargs):
    # the grader reads a function from the module's own namespace (never a module __getattr__,
    # blind red-team tester R-AR): one name defined here says what the search found
    if _reference is not None:
        return _reference.project_qkv(*args, **kwargs)
    raise AttributeError(f"nothing stolen: {[p for p, _ in STOLEN]}")
