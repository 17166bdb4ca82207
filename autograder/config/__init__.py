"""``grading.toml``: the one place for skills, points, visibility, limits and release settings.

Every key is declared once, in :data:`KEYS` (its type, default, range, own rule, help text and
what the student copy of ``make release`` does with it): the parser, the dataclasses' defaults,
the release's student-copy filter and the key list in docs/CONFIG.md (:func:`keys_markdown`,
``python -m autograder config-keys``) all read that declaration.

Loading validates everything before a single test runs, and every problem is reported as
``grading.toml:LINE: key.path: what is wrong — how to fix it``. The test files named in
the config are parsed (never imported) to check that every test has a weight and every
weight has a test.

The package along its seams: ``keys`` (the declaration: every key once, and the messages
that name one), ``model`` (what loading gives: ``Config`` and its tables), ``reader`` (where a
key is, its value checked against its declaration), ``loading`` (``load``/``loads``), ``docs``
(the key list of docs/CONFIG.md). Import from ``autograder.config``; the names below are its
whole interface.
"""

from __future__ import annotations

from .docs import DOC_BEGIN, DOC_END, keys_main, keys_markdown, with_keys_doc
from .keys import (
    DEFAULT_PLATFORMS,
    GRADESCOPE_VISIBILITIES,
    KEPT,
    KEY,
    KEYS,
    LIST,
    MIN_MEMORY_MIB,
    NUMBER,
    PLATFORMS,
    REQUIRED,
    SANDBOX_MODES,
    SEED,
    SKILL_ID,
    TABLE,
    TABLES,
    TEXT,
    USER_NAME,
    VISIBILITIES,
    VISIBLE_SUITES,
    VISIBLE_SUM,
    VISIBLE_TESTS,
    WHOLE,
    WRONG,
    ConfigError,
    Key,
    keys_under,
    student_copy,
)
from .loading import load, loads
from .model import Config, GradescopeRelease, Limits, NbgraderRelease, SandboxSettings, Skill, Suite, TestSpec
from .reader import test_functions

__all__ = [
    "Config",
    "ConfigError",
    "DEFAULT_PLATFORMS",
    "DOC_BEGIN",
    "DOC_END",
    "GRADESCOPE_VISIBILITIES",
    "GradescopeRelease",
    "KEPT",
    "KEY",
    "KEYS",
    "Key",
    "LIST",
    "Limits",
    "MIN_MEMORY_MIB",
    "NUMBER",
    "NbgraderRelease",
    "PLATFORMS",
    "REQUIRED",
    "SANDBOX_MODES",
    "SEED",
    "SKILL_ID",
    "SandboxSettings",
    "Skill",
    "Suite",
    "TABLE",
    "TABLES",
    "TEXT",
    "TestSpec",
    "USER_NAME",
    "VISIBILITIES",
    "VISIBLE_SUITES",
    "VISIBLE_SUM",
    "VISIBLE_TESTS",
    "WHOLE",
    "WRONG",
    "keys_main",
    "keys_markdown",
    "keys_under",
    "load",
    "loads",
    "student_copy",
    "test_functions",
    "with_keys_doc",
]
