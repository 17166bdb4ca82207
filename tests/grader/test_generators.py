"""The instructors' generators are per skill and byte-stable: `make snapshots SKILL=…` and
`make tolerances SKILL=…` touch only that skill's data, and running either again — or on
another CPU, whose kernels round differently — rewrites no byte of what still holds."""

from __future__ import annotations

import importlib.util
import json
import shutil
import tomllib
from pathlib import Path

import torch
from conftest import ROOT

from autograder.config import load
from autograder.instructor.release import snapshots
from autograder.testing import snapshots as fmt


def _course_copy(tmp_path: Path) -> Path:
    for part in ("solutions", "exercises", "tests/suites", "docs"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(ROOT / "grading.toml", tmp_path / "grading.toml")
    return tmp_path


def _nudged(value, scale: float):
    """``value`` with every float tensor moved by ``scale`` of itself (another CPU's noise
    at 1e-9; a changed reference at 1e-2)."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return torch.where(value.isfinite(), value + value.abs() * scale, value)
    if isinstance(value, dict):
        return {k: _nudged(v, scale) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_nudged(v, scale) for v in value)
    return value


def _rewrite(path: Path, skill: str, scale: float) -> bytes:
    note = json.loads(path.read_text(encoding="utf-8"))["note"]  # kept as it was written
    data = fmt.encode(skill, _nudged(fmt.decode(path.read_bytes()), scale), note)
    path.write_bytes(data)
    return data


def test_snapshots_rewrite_no_byte_of_a_file_that_still_holds_and_only_the_skill_asked(tmp_path):
    root = _course_copy(tmp_path)
    config = load(root / "grading.toml")
    qkv = root / "tests/suites/qkv/snapshots/qkv.json"
    masks = root / "tests/suites/masks/snapshots/masks.json"
    noisy = _rewrite(qkv, "qkv", 1e-9)
    before_masks = masks.read_bytes()

    assert snapshots.write(config, ["qkv"]) == []  # float noise: the file stays as it is
    assert qkv.read_bytes() == noisy
    assert snapshots.stale(config, root, ["qkv"]) == []

    _rewrite(qkv, "qkv", 1e-2)  # a reference that changed: stale, and only qkv is rewritten
    assert snapshots.stale(config, root, ["qkv"]) and snapshots.stale(config, root, ["masks"]) == []
    assert snapshots.write(config, ["masks"]) == []
    assert snapshots.write(config, ["qkv"]) == [qkv]
    assert masks.read_bytes() == before_masks
    assert snapshots.write(config, ["qkv"]) == []  # the second run writes nothing


def _measure_tolerances():
    path = ROOT / "tests/benchmarks/measure_tolerances.py"
    spec = importlib.util.spec_from_file_location("_measure_tolerances", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tolerances_for_one_skill_keep_every_other_row_and_a_rerun_rewrites_nothing(tmp_path):
    table = tmp_path / "tolerances.toml"
    shipped = (ROOT / "tests/suites/course/tolerances.toml").read_text(encoding="utf-8")
    table.write_text(shipped, encoding="utf-8")
    measure = _measure_tolerances()
    measure.main(["--skill", "qkv", "--seeds", "3", "--out", str(table)])
    first = table.read_text(encoding="utf-8")
    old, new = measure._blocks(shipped), measure._blocks(first)
    assert list(new) == list(old)  # same rows, same order
    assert all(new[op] == old[op] for op in old if not op.startswith("qkv.")), "another skill's rows changed"
    assert tomllib.loads(first)["op"].keys() == tomllib.loads(shipped)["op"].keys()

    measure.main(["--skill", "qkv", "--seeds", "3", "--out", str(table)])
    assert table.read_text(encoding="utf-8") == first  # byte-stable
