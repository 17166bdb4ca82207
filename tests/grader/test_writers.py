"""Every output writer survives any string: lone surrogates, NULs, control characters and
huge texts in every field a submission can influence, in every format. Whatever goes wrong
(a renderer failing, the output folder vanishing), a results file is written."""

from __future__ import annotations

import argparse
import json
import re

import pytest
from conftest import ROOT

from autograder import cli
from autograder.config import load
from autograder.core import results as results_mod
from autograder.renderers import FORMATS
from autograder.runner import scoring
from autograder.runner.manifest import RunManifest

# Longer than every cut the renderers make (the longest: 4 000 characters, after a first cut at
# twice that), so every cut is taken; test_every_cut_is_taken_... proves it. (1 MiB proved no more
# and cost half a minute: the json format carries each field whole, 160 MB.)
HUGE = 1 << 14
NASTY = ["\ud800", "a\udfffb", "nul\x00nul", "\x1b[2J\x07\r", "\U0010ffff", "x" * HUGE]


@pytest.fixture(scope="module")
def config():
    return load(ROOT / "grading.toml").select(["qkv"])


def _results(config, text: str):
    feedback = {
        "check": text,
        "problem": "raised",
        "detail": text,
        "hints": [],
        "frames": [{"file": "qkv.py", "line": 3, "function": text}],
        "error": {"type": text, "message": text, "frames": []},
    }
    report = {
        "tests": [
            {
                "nodeid": t.node_id,
                "outcome": "failed",
                "metadata": {
                    "result": {"kind": "submission", "feedback": feedback},
                    "printed": [{"call": text, "text": text, "dropped": 1}],
                    "targets": [text],
                },
            }
            for t in config.tests
        ]
    }
    return scoring.build(RunManifest.plan(config), report, {"path": text, "modules": {}, "ignored": [text]}, message=text)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("text", NASTY, ids=["surrogate", "surrogate-inside", "nul", "controls", "max-codepoint", "huge"])
@pytest.mark.parametrize("reveal", [True, False], ids=["revealed", "public"])
def test_every_format_writes_a_file_for_any_string(tmp_path, config, fmt, text, reveal):
    results = _results(config, text)
    out = tmp_path / f"results.{fmt}"
    assert cli._write(cli._render_safely(results if reveal else results.public(), fmt, config), str(out))
    written = out.read_bytes().decode("utf-8")  # valid UTF-8, whatever the input held
    if fmt in ("json", "gradescope"):
        data = json.loads(written)
        assert "score" in data
    assert "Traceback" not in written


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "json"])  # json carries the results whole, by design
def test_every_cut_is_taken_so_twice_the_huge_text_shows_the_same(config, fmt):
    """What a format shows of a submission's text is bounded: doubling a text that is already
    HUGE changes only the counts of what was not shown (so HUGE is over every limit)."""

    def shown(n: int) -> str:
        out = cli._render_safely(_results(config, "x" * n), fmt, config)
        return re.sub(r"\d+", "N", re.sub(r" +", " ", out))

    assert shown(HUGE) == shown(2 * HUGE)
    assert len(shown(HUGE)) < 200_000


def test_the_command_line_offers_exactly_the_renderers_formats():
    """cli.FORMATS is spelt out (importing the renderers would delay the grading process's start)."""
    assert cli.FORMATS == FORMATS


def test_a_failing_renderer_still_leaves_a_results_file(tmp_path, config, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("renderer bug")

    monkeypatch.setattr(cli, "render", broken)
    out = tmp_path / "r.json"
    assert cli._write(cli._render_safely(_results(config, "x"), "json", config), str(out))
    data = json.loads(out.read_text())
    assert data["status"] == "error" and "could not be rendered" in data["message"]


def test_an_unwritable_output_falls_back_to_a_temporary_file(tmp_path, config, monkeypatch, capsys):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    real = results_mod.write_atomic

    def refuse(path, text):
        if str(path).endswith("wanted.json"):
            raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")
        real(path, text)

    monkeypatch.setattr(results_mod, "write_atomic", refuse)
    assert not cli._write(cli._render_safely(_results(config, "\ud800"), "json", config), str(tmp_path / "wanted.json"))
    fallback = list(tmp_path.glob("autograder-results-*.json"))
    assert len(fallback) == 1 and json.loads(fallback[0].read_text())["skills"]
    assert "written to" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_error_path_writes_a_results_file_in_every_format(tmp_path, config, fmt, capsys):
    out = tmp_path / f"r.{fmt}"
    args = argparse.Namespace(output=str(out), format=fmt)
    assert cli._fail(args, config, "boom \ud800", cli.EXIT_BROKEN, submission="sub\x00") == cli.EXIT_BROKEN
    written = out.read_text(encoding="utf-8")
    assert "boom" in written
    assert capsys.readouterr().err.count("\n") == 1
