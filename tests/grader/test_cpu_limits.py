"""CPU-time limits from the reference (autograder/runner/cpu_limits.py): the tables each
skill ships, the rule that turns them into a run's limits, and how the trusted side charges
and enforces them (autograder/testing/remote.py). The worker side — a loop stopped by its
CPU time, a wait never charged — is in test_sandbox.py; whole runs in test_red_team.py."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from conftest import ROOT

from autograder.config import Limits, load
from autograder.runner import cpu_limits
from autograder.testing.failures import SubmissionTimeout
from autograder.testing.remote import ModuleInfo, Runtime, Submission


@pytest.mark.parametrize(
    ("seconds", "rounded"), [(0.0, 0.01), (0.001, 0.01), (0.011, 0.011), (0.123, 0.13), (0.2, 0.2), (1.01, 1.1), (12.3, 13.0)]
)
def test_round_up_keeps_two_significant_digits_and_never_goes_down(seconds, rounded):
    assert cpu_limits.round_up(seconds) == pytest.approx(rounded)
    assert cpu_limits.round_up(seconds) >= seconds


def test_every_skill_ships_a_table_in_its_canonical_form():
    """make check's `reference-cpu --check` measures; this only reads: every skill of
    grading.toml has a table, and it is exactly what the generator writes for its figures
    (so a regenerated table differs only where a figure moved)."""
    config = load(ROOT / "grading.toml")
    for skill in config.skills.values():
        path = cpu_limits.table_path(config.suites_dir, skill.id)
        table = cpu_limits.load(path)
        assert table is not None, f"{path} is missing: run `python -m autograder reference-cpu`"
        assert path.read_text(encoding="utf-8") == cpu_limits.render(table, skill.id)


def test_a_broken_table_names_its_file_and_the_fix(tmp_path):
    path = tmp_path / "reference_cpu.toml"
    path.write_text("slowest_call_s = 0.1\nall_calls_s = -1\ncalibration_s = 0.01\n", encoding="utf-8")
    with pytest.raises(cpu_limits.TableError, match="reference_cpu.toml.*reference-cpu"):
        cpu_limits.load(path)
    path.write_text("slowest_call_s = 0.1\n", encoding="utf-8")
    with pytest.raises(cpu_limits.TableError, match="reference_cpu.toml.*KeyError"):
        cpu_limits.load(path)
    assert cpu_limits.load(tmp_path / "absent.toml") is None


def test_limits_are_a_generous_factor_of_the_reference_with_a_floor():
    limits = Limits(cpu_factor=10, call_cpu_floor_s=0.5, skill_cpu_factor=6, skill_cpu_floor_s=1.0)
    cheap = cpu_limits.ReferenceCpu(slowest_call_s=0.02, all_calls_s=0.1, calibration_s=0.01)
    costly = cpu_limits.ReferenceCpu(slowest_call_s=0.2, all_calls_s=0.5, calibration_s=0.01)
    assert cpu_limits.limits_for(cheap, limits, 1.0) == (0.5, 1.0)  # the floors
    assert cpu_limits.limits_for(costly, limits, 1.0) == (2.0, 3.0)  # the factors
    assert cpu_limits.limits_for(costly, limits, 2.0) == (4.0, 6.0)  # a machine twice as slow


def test_a_slower_machine_gets_more_time_and_a_faster_one_never_less():
    table = cpu_limits.ReferenceCpu(0.02, 0.1, calibration_s=0.01)
    assert cpu_limits.scale(table, 0.03) == pytest.approx(3.0)
    assert cpu_limits.scale(table, 0.001) == 1.0
    assert cpu_limits.scale(table, 10.0) == cpu_limits.MAX_SCALE


def test_cpu_factor_zero_turns_the_cpu_limits_off():
    config = load(ROOT / "grading.toml")
    assert set(cpu_limits.run_limits(config, calibration_s=0.001)) == {s.module_name for s in config.skills.values()}
    off = dataclasses.replace(config, limits=dataclasses.replace(config.limits, cpu_factor=0))
    assert cpu_limits.run_limits(off) == {}


def test_a_shipped_figure_survives_run_to_run_noise_but_not_a_real_change():
    assert cpu_limits.covers(0.2, 0.13) and cpu_limits.covers(0.1, 0.12) and cpu_limits.covers(0.01, 0.02)
    assert not cpu_limits.covers(0.1, 0.5) and not cpu_limits.covers(1.0, 0.1)


def _runtime(**cpu) -> Runtime:
    box = SimpleNamespace(spec=SimpleNamespace(output_bytes=0))
    return Runtime(
        sandbox=box,
        modules={"qkv": ModuleInfo("qkv", "exercises/qkv.py", None)},
        call_timeout=10,
        budget_deadline=float("inf"),
        skill_time=30,
        cpu_limits=cpu,
    )


def test_a_call_gets_its_cpu_limit_until_the_skills_cpu_budget_runs_low():
    rt = _runtime(qkv=(0.5, 1.2))
    assert rt.deadline_for("qkv") == (10, 0.5, False)
    rt.charge("qkv", seconds=6.0, cpu=0.9)  # a busy machine: 6 s of wall, 0.9 CPU s of the worker
    assert rt.deadline_for("qkv") == (10, pytest.approx(0.3), True)
    assert rt.spent["qkv"] == 6.0 and rt.cpu_spent["qkv"] == 0.9
    rt.charge("qkv", seconds=0.5, cpu=None)  # CPU time unreadable: the wall time counts
    assert rt.cpu_spent["qkv"] == pytest.approx(1.4) and rt.time_left("qkv") < 0


def test_a_used_up_cpu_budget_fails_later_calls_fast_and_says_why():
    rt = _runtime(qkv=(0.5, 1.2))
    rt.charge("qkv", seconds=20.0, cpu=1.25)
    with pytest.raises(SubmissionTimeout, match=r"time budget \(1.2 CPU s, from the reference's own time; 1.2 CPU s used\)"):
        Submission(rt)._check_usable("qkv", "qkv.project_qkv(…)", ("qkv", "project_qkv"))


def test_without_a_table_the_wall_clock_limits_alone_apply():
    rt = _runtime()
    assert rt.deadline_for("qkv") == (10, None, False)
    rt.charge("qkv", seconds=25.0, cpu=0.1)
    assert rt.deadline_for("qkv") == (pytest.approx(5.0), None, True)


def test_functions_that_timed_out_never_stop_the_skills_other_functions():
    # fair before clever: a loop costs its own function's share. Three looping functions of
    # qkv once made its other, correct functions fail fast ([limits] skill_timeouts = 3:
    # qkv scored 0/20 for 3 loops and 4 correct functions); a call stopped at its own limit
    # is not charged to the budget the skill's other functions need either
    rt = _runtime(qkv=(1.0, 6.0))
    for name in ("project_qkv", "attention_scores", "scale_scores", "weighted_values", "causal_uniform_mean", "AttentionHead"):
        rt.timed_out[("qkv", name)] = "timed out (did not finish within 1 CPU s)"
        rt.charge("qkv", seconds=1.2, cpu=1.01, timed_out=True)
    sub = Submission(rt)
    sub._check_usable("qkv", "qkv.single_head_attention(…)", ("qkv", "single_head_attention"))
    assert rt.deadline_for("qkv") == (10, 1.0, False)  # its own full call limit, from the full budget
    assert rt.cpu_spent["qkv"] == pytest.approx(6.06)  # the report still counts every CPU second
    with pytest.raises(SubmissionTimeout, match="did not finish within 1 CPU s"):  # the looping one itself
        sub._check_usable("qkv", "qkv.project_qkv(…)", ("qkv", "project_qkv"))


def test_calls_that_finish_or_hit_the_budget_are_charged_to_it():
    rt = _runtime(qkv=(1.0, 6.0))
    rt.charge("qkv", seconds=1.0, cpu=4.5)  # slow code that finished
    assert rt.deadline_for("qkv") == (10, pytest.approx(1.0), False)
    rt.charge("qkv", seconds=1.0, cpu=0.9, timed_out=False)  # stopped by the budget's remainder
    assert rt.deadline_for("qkv")[1:] == (pytest.approx(0.6), True)
    rt.charge("qkv", seconds=1.0, cpu=0.6)
    with pytest.raises(SubmissionTimeout, match=r"time budget \(6 CPU s, from the reference's own time; 6.0 CPU s used\)"):
        Submission(rt)._check_usable("qkv", "qkv.weighted_values(…)", ("qkv", "weighted_values"))
