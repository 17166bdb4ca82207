"""The bottom layer: torch-free pieces every other layer may use — the results data model
and its JSON writing (``results``), what students may see of hidden tests (``redact``), text
and escaping helpers (``text``, ``escape``), the exercise modules' API read from source
(``exercise_api``) and the hint catalogue (``feedback``). It imports nothing of the grader
above it (tests/grader/test_layering.py)."""
