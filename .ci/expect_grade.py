"""CI: check a `make grade FORMAT=json` result — its score and the sandbox tier it ran with.

    python3 .ci/expect_grade.py RESULTS.json full|zero portable|full

Exit 0 when the results are complete, score full marks (``full``) or 0 (``zero``), and name
that sandbox tier (autograder/runner/policy.tier_note); otherwise 1, saying what differs.
"""

import json
import sys


def main(path: str, score: str, tier: str) -> int:
    with open(path, encoding="utf-8") as fh:
        results = json.load(fh)
    problems = []
    if results.get("status") != "complete":
        problems.append(f"status {results.get('status')!r}: {results.get('message')}")
    want = results.get("max_score") if score == "full" else 0
    if results.get("score") != want:
        problems.append(f"score {results.get('score')} of {results.get('max_score')}, expected {want}")
    notes = [n for n in results.get("sandbox", []) if n.startswith("sandbox tier: ")]
    if not any(n.startswith(f"sandbox tier: {tier}") for n in notes):
        problems.append(f"expected the {tier} sandbox tier, the results say {notes}")
    print(f"{path}: {results.get('score')} / {results.get('max_score')}; {notes[0] if notes else 'no tier named'}")
    for problem in problems:
        print(f"  {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
