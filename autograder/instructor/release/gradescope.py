"""``dist/autograder.zip``: the Gradescope autograder bundle.

At the zip's root, per Gradescope's spec: ``setup.sh`` (image build: Python 3.11 through
uv, the pinned requirements with CPU torch, a smoke test that the reference scores full
marks) and ``run_autograder`` (per submission: ``python -m autograder.app.gradescope_run``
under a hard time limit, and a results.json written by the shell alone if even that
fails). Beside them the grader, the visible and hidden suites, the reference solutions
(hidden tests compare against them on the trusted side), ``requirements.txt``,
``release.json`` (version, commit, suite hash), ``seed.key`` and a ``grading.toml`` whose
``[limits]`` are the repository's overridden by ``[release.gradescope.limits]``.

``seed.key`` keys the grader's per-submission seed (``AUTOGRADER_SEED_KEY_FILE``; run_autograder
makes it 0600 before any submission code runs). It is the course's random key
(:mod:`.seedkey`), the same for every release of the course: same commit, version and key →
a byte-identical zip, and the same seeds as a regrade with that key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ...config import Config, GradescopeRelease, Limits, loads
from ...runner.seeding import MIN_KEY_BYTES
from .. import grading_toml
from . import files as release_files
from .context import ReleaseContext
from .files import assignment_grading_toml, grader_files, write_zip_deterministic

TEMPLATES = Path(__file__).with_name("templates")
PREFIX = "/opt/attention-autograder"  # where setup.sh puts Python and the venv inside the image
PYTHON_VERSION = "3.11.18"  # pyproject's requires-python; the exact patch, so next month's image is this one (uv 0.13.8 lists it)
UV_VERSION = "0.13.8"  # the uv that installs that Python (a pinned wheel from PyPI)
TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
ZIP_NAME = "autograder.zip"
SAFE = {
    "version": r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}",
    "commit": r"[0-9a-f]{7,64}(\+dirty)?|unknown",
    "suite_hash": r"[0-9a-f]{16,128}",
}


def build(ctx: ReleaseContext) -> list[Path]:
    """``dist/autograder.zip`` (the whole course) and, per ``[release.assignments]`` entry,
    ``dist/assignments/<name>/autograder.zip``: that assignment's skills only, its own points."""
    files = bundle_files(ctx)
    target = Path(ctx.out) / ZIP_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    write_zip_deterministic(target, files)  # the two scripts are 0755 (they start with #!)
    written = [target]
    for name in ctx.config.assignments:
        path = Path(ctx.out) / ASSIGNMENTS_DIR / name / ZIP_NAME
        write_zip_deterministic(path, bundle_files(assignment_context(ctx, name), assignment=name))
        written.append(path)
    return written


ASSIGNMENTS_DIR = "assignments"


def assignment_context(ctx: ReleaseContext, name: str) -> ReleaseContext:
    """The release as one assignment sees it: its skills only, and their suites' identity."""
    from dataclasses import replace

    from ...runner.identity import identify

    config = ctx.config.for_assignment(name)
    ident = identify(config)
    return replace(ctx, config=config, suite_hash=ident.suite, visible_suite_hash=ident.visible)


def bundle_files(ctx: ReleaseContext, assignment: str | None = None) -> dict[str, bytes]:
    config: Config = ctx.config
    for key, pattern in SAFE.items():  # they are pasted into shell and JSON text
        value = getattr(ctx, key)
        if not re.fullmatch(pattern, value or ""):
            raise ValueError(f"release {key} {value!r} is not usable in the Gradescope bundle (expected {pattern})")
    files = grader_files(ctx, include_hidden=True)  # the grader, all suites, solutions/ (for the `ref` fixture)
    text = bundle_grading_toml(config)
    if assignment is not None:
        text = assignment_grading_toml(text, tuple(config.skills))
    files["grading.toml"] = text.encode()
    release = {
        **ctx.release_record(),
        "assignment": assignment,
        "points": config.total_points,
        "python": PYTHON_VERSION,
        "torch": torch_version(ctx.repo),
        "time_budget_s": config.gradescope_release.time_budget_s,
    }
    files["release.json"] = (json.dumps(release, indent=2, sort_keys=True) + "\n").encode()
    if not ctx.seed_key or len(ctx.seed_key) < MIN_KEY_BYTES:
        raise ValueError(
            "the Gradescope bundle needs the course's seed key (at least "
            f"{MIN_KEY_BYTES} bytes; `make release` creates it once, see autograder/instructor/release/seedkey.py)"
        )
    files["seed.key"] = ctx.seed_key + b"\n"
    values = _template_values(ctx, config.gradescope_release)
    files["setup.sh"] = _fill(TEMPLATES / "gradescope_setup.sh", values)
    files["run_autograder"] = _fill(TEMPLATES / "gradescope_run_autograder.sh", values)
    return files


def torch_version(repo: Path) -> str:
    for line in release_files.course_or_grader(repo, "requirements.txt").read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"\s*torch==([0-9][0-9A-Za-z.]*)\s*(#.*)?", line)
        if match:
            return match.group(1)
    raise ValueError("requirements.txt pins no torch==X — the Gradescope bundle installs exactly that version")


def _template_values(ctx: ReleaseContext, gs: GradescopeRelease) -> dict[str, str]:
    return {
        "VERSION": ctx.version,
        "COMMIT": ctx.commit,
        "SUITE_HASH": ctx.suite_hash,
        "SUITE_HASH_SHORT": ctx.suite_hash[:12],
        "PREFIX": PREFIX,
        "PYTHON_VERSION": PYTHON_VERSION,
        "UV_VERSION": UV_VERSION,
        "TORCH_INDEX": TORCH_INDEX,
        "TORCH_VERSION": torch_version(ctx.repo),
        "TIME_BUDGET_S": str(int(gs.time_budget_s)),
    }


def _fill(template: Path, values: dict[str, str]) -> bytes:
    text = template.read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise ValueError(f"{template.name}: no value for {', '.join(sorted(set(left)))}")
    return text.encode()


# --------------------------------------------------------------------------- grading.toml
def with_limits(text: str, limits: Limits) -> str:
    """grading.toml's text with its ``[limits]`` table set to ``limits`` (comments kept)."""
    return grading_toml.with_values(text, "limits", {name: getattr(limits, name) for name in Limits.__dataclass_fields__})


def bundle_grading_toml(config: Config) -> str:
    """The repository's grading.toml with ``[release.gradescope.limits]`` applied, checked by
    loading it again."""
    wanted = config.gradescope_release.limits
    text = "# In dist/autograder.zip: [limits] are the repository's with [release.gradescope.limits] applied.\n"
    text += with_limits(config.path.read_text(encoding="utf-8"), wanted)
    got = loads(text, config.path, check_files=False).limits
    if got != wanted:
        raise ValueError(f"could not apply [release.gradescope.limits] to grading.toml: got {got}, wanted {wanted}")
    return text
