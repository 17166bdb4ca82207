#!/usr/bin/env bash
# Gradescope runs this once per submission. It grades $ROOT/submission with the visible and
# hidden suites and ALWAYS leaves $ROOT/results/results.json: when Python is missing, when
# the run passes its time budget or when anything else breaks, the file says why (score 0).
#   GRADESCOPE_AUTOGRADER_ROOT  default /autograder (source/ = this zip, submission/, results/)
#   GRADESCOPE_PYTHON           default the interpreter setup.sh installed
# Release @VERSION@, commit @COMMIT@, suite @SUITE_HASH@.
set -u

ROOT="${GRADESCOPE_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
RESULTS="$ROOT/results/results.json"
PY="${GRADESCOPE_PYTHON:-@PREFIX@/venv/bin/python}"
BUDGET=@TIME_BUDGET_S@          # [release.gradescope] time_budget_s
HARD_STOP=$((BUDGET + 20))      # the Python side stops the run at BUDGET; this is the last resort

# Score 0 and the reason, written by the shell alone. $1 is one of the fixed sentences below.
fallback() {
    cat > "$RESULTS.tmp" <<JSON
{"score": 0, "execution_time": $SECONDS, "output": "The autograder could not grade this submission: $1. Please resubmit; if it happens again, tell your instructor.\n\n_Autograder release @VERSION@ (commit @COMMIT@)._", "output_format": "md", "stdout_visibility": "hidden", "tests": [], "extra_data": {"status": "error", "message": "$1", "release": {"version": "@VERSION@", "commit": "@COMMIT@", "suite_hash": "@SUITE_HASH@"}}}
JSON
    mv -f "$RESULTS.tmp" "$RESULTS"
    echo "[run_autograder] $1"
}

mkdir -p "$ROOT/results"
rm -f "$RESULTS"   # a file left from before must never count for this submission
if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
    fallback "the autograder's Python 3.11 is missing from this image (setup.sh did not finish)"
    exit 0
fi

# The grader derives each submission's default seed with this key; it is not in the student release.
export AUTOGRADER_SEED_KEY_FILE="$SOURCE/seed.key"
chmod 600 "$SOURCE/seed.key" 2>/dev/null || true
export PYTHONDONTWRITEBYTECODE=1

cd "$SOURCE" || { fallback "the autograder source folder is missing"; exit 0; }
timeout --signal=TERM --kill-after=10 "$HARD_STOP" "$PY" -m autograder.app.gradescope_run --root "$ROOT" --budget "$BUDGET"
status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    fallback "grading took longer than $HARD_STOP seconds and was stopped"
elif ! "$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); assert isinstance(d.get("score"), (int, float)) and isinstance(d.get("tests"), list)' "$RESULTS" 2>/dev/null; then
    fallback "the grading run stopped (status $status) without leaving valid results"
fi
exit 0
