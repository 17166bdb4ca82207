"""Attack: reach into pytest and the JSON-report plugin (they are in the worker's memory
too, as a copy) and make them report everything as passed."""
import sys

for name in list(sys.modules):
    module = sys.modules[name]
    if name.startswith(("_pytest", "pytest", "pluggy", "autograder")):
        for attr in ("fail", "skip", "xfail", "exit"):
            if hasattr(module, attr):
                try:
                    setattr(module, attr, lambda *a, **k: None)
                except Exception:
                    pass
try:
    import pytest_jsonreport.plugin as plugin

    plugin.JSONReport.pytest_runtest_logreport = lambda self, report: None
    plugin.JSONReport.pytest_sessionfinish = lambda self, session: open("/tmp/.report.json", "w").write('{"tests": []}')
except Exception:
    pass
try:
    import autograder.testing.expect as expect

    expect.close = lambda got, want, **k: want
    expect._fail = lambda *a, **k: None
    import autograder.sandbox.protocol as protocol

    _encode = protocol.encode
    protocol.encode = lambda value: _encode({"value": "PASSED"})
except Exception:
    pass


def project_qkv(x, w_q, w_k, w_v):
    return "PASSED"


def attention_scores(q, k):
    return {"passed": True}
