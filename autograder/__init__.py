"""Attention autograder: trustworthy, sandboxed grading of the course's attention exercises.

Layers, bottom to top (each imports only the layers below it; tests/grader/test_layering.py):
``core`` + ``config`` (results model, redaction, escaping, exercise API, hints; grading.toml),
``sandbox`` (where submission code runs), ``testing`` (the API suites are written in),
``runner`` (the trusted pytest run and its plugin, scoring), ``renderers`` (outputs),
``cli``/``ci``/``app`` (entry points), ``release``/``batch`` (instructors).
"""

__version__ = "0.5.0"  # the grader's own version (CHANGELOG.md), not a course release's (make release VERSION=)
