"""The visible suites of masks, row_softmax, custom_backward and sdpa_masks catch the common
single mistakes locally (issue 19 §1): their control inputs (snapshots) hold the structure each
mistake needs to show — a finite fill, scores far above the others, a row of −∞ scores, a
float64 control, HF marks other than 1, d_v ≠ d_k — and every skill has a visible property test
(dtype and inputs unchanged) listed among its properties. The hint_precision benchmark
(``--local``) measures the result on the variants; this checks the data directly, in
milliseconds. Also: ``hint_precision.local_view`` counts only visible tests."""

from __future__ import annotations

import math
import sys

import torch
from conftest import CONFIG, ROOT

from autograder.testing.snapshots import Snapshots

SUITES = ROOT / "tests" / "suites"
VISIBLE_PROPERTY = {
    "masks": "test_masks_functions_keep_dtype_and_leave_control_inputs_unchanged",
    "row_softmax": "test_row_softmax_functions_keep_dtype_and_leave_control_inputs_unchanged",
    "custom_backward": "test_custom_backward_keeps_dtype_and_leaves_control_inputs_unchanged",
    "sdpa_masks": "test_sdpa_masks_functions_keep_dtype_and_leave_control_inputs_unchanged",
}


def _snap(skill: str) -> Snapshots:
    return Snapshots(SUITES / skill)


def test_each_skill_has_a_visible_property_test_listed_among_its_properties():
    for skill, name in VISIBLE_PROPERTY.items():
        s = CONFIG["skills"][skill]
        visible = [suite for suite in s["suites"] if suite.get("visibility") == "visible"]
        assert any(name in suite["weights"] for suite in visible), (skill, name)
        assert name in s["properties"], (skill, name)
    sdpa = CONFIG["skills"]["sdpa_masks"]["properties"]
    for name in (
        "test_sdpa_never_passes_both_attn_mask_and_is_causal",
        "test_mha_self_attention_calls_module_with_need_weights_false",
        "test_sdpa_and_mha_self_attention_make_the_documented_calls_on_control_inputs",
    ):
        assert name in sdpa, name  # call tests: they check only the calls, so they are property tests


def test_masks_controls_expose_fill_max_shift_global_max_and_nan_gradient():
    snap = _snap("masks")
    a = snap["apply_mask"]
    assert a["fill"] != float("-inf") and math.isfinite(a["fill"])  # ignoring `fill` shows
    assert a["scores64"].dtype == torch.float64 and "masks/fill-ignored" in a["mistakes"]
    m = snap["masked_softmax"]
    assert m["scores"].shape[0] == 2 and float(m["scores"][0].min()) > 150 > float(m["scores"][1].max())  # overflow / underflow
    assert {"masks/no-max-shift", "masks/global-max"} <= set(m["mistakes"])
    assert m["scores64"].dtype == torch.float64 and not bool(m["allowed64"][:, -1].any())  # a fully blocked row in float64 too
    lp = snap["left_padded_softmax"]
    row, allowed = lp["scores"][1, -1], lp["allowed"][1, -1]
    assert (
        bool(allowed.any()) and not bool(allowed.all()) and bool((row[allowed] == float("-inf")).all())
    )  # allowed scores all −∞
    assert lp["grad_out"].shape == lp["scores"].shape


def test_row_softmax_controls_have_float64_signatures():
    snap = _snap("row_softmax")
    for case in ("softmax_rows", "log_softmax_rows", "cross_entropy", "vocab_probs"):
        assert all(t.dtype == torch.float64 for t in snap[case]["mistakes64"].values()), case


def test_custom_backward_controls_expose_value_width_and_unweighted_d():
    snap = _snap("custom_backward")
    f = snap["attention_forward"]
    assert f["v"].shape[-1] != f["q"].shape[-1] and "custom_backward/forward-scale-width" in f["mistakes"]
    assert "custom_backward/d-unweighted" in snap["softmax_backward"]["mistakes"]
    assert "custom_backward/d-unweighted" in snap["softmax_backward"]["rand_mistakes"]


def test_sdpa_masks_controls_expose_hf_marks_and_float64():
    snap = _snap("sdpa_masks")
    hf = snap["hf"]["attention_mask"]
    assert bool((hf == 2).any()) and "sdpa_masks/hf-nonzero" in snap["hf"]["mistakes"]
    c = snap["sdpa"]
    assert c["q"].shape[-2] < c["k"].shape[-2]  # L < S
    assert c["want64"].dtype == torch.float64


def test_local_view_counts_only_visible_tests():
    sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
    try:
        import hint_precision
    finally:
        sys.path.remove(str(ROOT / "tests" / "benchmarks"))
    visible = "test_apply_mask_puts_minus_inf_on_week7_future_scores"
    hidden = "test_apply_mask_matches_reference_with_broadcasting_and_fills"
    row = {
        "skill": "masks",
        "id": "x",
        "hint": "masks/fill-ignored",
        "lost": 1.5,
        "gated_by": None,
        "off_function": [hidden],
        "failed": [
            {"test": visible, "lost": 0.5, "names": [], "hints": []},
            {"test": hidden, "lost": 1.0, "names": ["apply_mask"], "hints": ["masks/fill-ignored"]},
        ],
        "hints": ["masks/fill-ignored"],
        "right_shown": True,
        "wrong_hints": [],
    }
    (local,) = hint_precision.local_view([row])
    assert [f["test"] for f in local["failed"]] == [visible]
    assert local["lost"] == 0.5 and local["hints"] == [] and not local["right_shown"] and local["off_function"] == []


def test_the_module_probe_records_mha_called_directly_through_forward_and_through_a_deep_copy(tmp_path):
    """Blind test D: `mha.forward(…, need_weights=False)` ran the module but was recorded as
    "the module was never called" (a forward pre-hook sees only mha(…)). The probe, run here
    with its own source, records both spellings and a deep copy's call."""
    import copy
    import importlib.util
    import types

    sys.path.insert(0, str(SUITES))
    from course import sdpa_masks_data as sd

    spellings = {
        "call": lambda mha, x: mha(x, x, x, need_weights=False)[0],
        "forward": lambda mha, x: mha.forward(query=x, key=x, value=x, need_weights=False)[0],
        "deepcopy": lambda mha, x: copy.deepcopy(mha).to(torch.float64)(x, x, x, need_weights=False)[0],
    }
    probe_file = tmp_path / "probe.py"  # the probe's own source (what is sent to the worker), loaded here
    probe_file.write_text(sd.mha_recorded.source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("probe", probe_file)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    config = {"embed_dim": 4, "num_heads": 2, "bias": True, "batch_first": True}
    state = sd.mha_state(torch.Generator().manual_seed(0), 4, True, torch.float64)
    x = torch.randn(2, 3, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    for name, run in spellings.items():
        module = types.SimpleNamespace(mha_self_attention=lambda mha, x, allowed, key_allowed, run=run: run(mha, x))
        ctx = types.SimpleNamespace(module=lambda _name, module=module: module)
        r = loaded.mha_recorded(ctx, config, state, x, None, None)
        assert r["calls"] == [{"need_weights": False, "is_causal": False}], name
        assert r["value"].shape == (2, 3, 4), name
