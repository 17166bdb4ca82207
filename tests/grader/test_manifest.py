"""The run manifest is the one thing that crosses to the pytest child, and — with the report —
all scoring reads; the CLI's error path writes every file a complete run writes."""

from __future__ import annotations

import base64
import json

from conftest import ROOT

from autograder import cli
from autograder.config import load
from autograder.runner import scoring
from autograder.runner.manifest import ModuleEntry, RunManifest
from autograder.runner.policy import build_worker_spec

SOURCE = (
    b"import torch\n\n\nclass Head:\n    def forward(self, x):\n        return x\n\n\n"
    b"def project_qkv(x, w_q, w_k, w_v):\n    raise ValueError('no')\n"
)


def test_the_manifest_survives_the_pipe_as_it_was(tmp_path):
    config = load(ROOT / "grading.toml")
    manifest = RunManifest.plan(config)
    (tmp_path / "copy").mkdir()
    manifest.worker, _ = build_worker_spec(config, tmp_path / "copy", tmp_path, protected=[ROOT])
    manifest.modules = {
        "qkv": ModuleEntry.of({"display_path": "exercises/qkv.py", "copy_path": str(tmp_path / "copy" / "qkv.py")}, SOURCE)
    }
    manifest.helpers, manifest.preload = {"helper": str(tmp_path / "copy" / "helper.py")}, ["torch.fx"]
    manifest.seed, manifest.seed_source, manifest.suite_hash = 7, "fixed", "abc"
    again = RunManifest.from_dict(json.loads(json.dumps(manifest.to_dict())))
    assert again == manifest
    assert again.tests == config.tests and [s.id for s in again.skills] == list(config.skills)


def test_module_facts_are_captured_from_the_copied_bytes():
    entry = ModuleEntry.of({"display_path": "exercises/qkv.py", "copy_path": "/gone/qkv.py"}, SOURCE)
    assert entry.definitions == {"Head": [4, 6], "Head.forward": [5, 6], "project_qkv": [9, 10]}
    assert entry.lines[9] == "raise ValueError('no')"
    missing = ModuleEntry.of({"display_path": "exercises/qkv.py", "problem": "is missing"}, None)
    assert missing.definitions == {} and missing.lines == [] and missing.copy_path is None


def test_the_error_path_writes_every_file_a_run_writes(tmp_path, capsys, monkeypatch):
    """A broken config in CI: one line on stderr, exit 2, and still --output, --results, the
    annotation on stdout, the job summary and the Classroom result — all from one error result."""
    bad = tmp_path / "grading.toml"
    bad.write_text((ROOT / "grading.toml").read_text().replace("memory_mib = 4096", "memory_mib = -1", 1))
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    out, public = tmp_path / "out.txt", tmp_path / "results.json"
    rc = cli.main(
        ["grade", str(ROOT / "solutions"), "--config", str(bad), "--format", "github", "--results", str(public), "--no-progress"]
    )
    captured = capsys.readouterr()
    assert rc == cli.EXIT_USAGE and captured.err.count("\n") == 1 and "memory_mib" in captured.err
    assert captured.out.startswith("::error title=Grading did not complete::configuration error")
    data = json.loads(public.read_text())
    assert data["status"] == "error" and data["score"] == 0 and "memory_mib" in data["message"]
    assert "Grading did not complete" in summary.read_text()
    result = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert json.loads(base64.b64decode(result["result"]))["status"] == "error" and result["status"] == "error"
    assert not out.exists()


def test_every_error_result_is_built_one_way():
    config = load(ROOT / "grading.toml").select(["qkv"])
    broken = scoring.error_result(config, "why", submission="sub")
    assert broken.status == "error" and broken.message == "why" and broken.submission == {"path": "sub"}
    assert [t.id for t in broken.tests] == [t.node_id for t in config.tests] and all(
        t.status == "not_run" and t.summary == "why" for t in broken.tests
    )
    bare = scoring.error_result(None, "no config")
    assert bare.skills == [] and bare.max_score == 0 and bare.status == "error"
