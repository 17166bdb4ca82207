"""Gradescope's ``results.json`` (spec: gradescope-autograders.readthedocs.io/en/latest/specs/).

Every test carries its skill id and visibility class in ``tags``; hidden tests map to the
Gradescope visibility configured in ``[gradescope] hidden`` (default ``after_due_date``).
"""

from __future__ import annotations

from ..results import Results, dumps
from . import markdown
from .common import test_text


def to_dict(results: Results, visibility: dict[str, str]) -> dict:
    tests = []
    for s_index, skill in enumerate(results.skills, start=1):
        for t_index, test in enumerate(skill.tests, start=1):
            tests.append({
                "name": f"{skill.id}: {test.name}",
                "number": f"{s_index}.{t_index}",
                "score": test.score,
                "max_score": test.max_score,
                "status": "passed" if test.status == "passed" and test.score >= test.max_score else "failed",
                "output": test_text(test),
                "tags": [skill.id, test.visibility],
                "visibility": visibility.get(test.visibility, "visible"),
            })
    return {
        "score": results.score,
        "execution_time": results.duration,
        "output": markdown.render(results, details=False, upload=True),
        "output_format": "md",
        "test_output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "schema": results.schema,
            "status": results.status,
            "seed": results.seed,
            "seed_source": results.seed_source,
            "suite_hash": results.suite_hash,
            "visible_suite_hash": results.visible_suite_hash,
            "versions": results.versions,
        },
    }


def render(results: Results, visibility: dict[str, str]) -> str:
    return dumps(to_dict(results, visibility))
