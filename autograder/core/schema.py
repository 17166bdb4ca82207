"""The results file's vocabulary: its schema id (autograder/schemas/results.schema.json),
the statuses a test can have, and the ``seed_source`` values every report records."""

SCHEMA = "attention-autograder/results@1"
STATUS_PASSED, STATUS_FAILED, STATUS_ERROR, STATUS_NOT_RUN = "passed", "failed", "error", "not_run"

#: seed_source values recorded in every report (chosen by runner/seeding.py), and what they mean
SEED_SOURCES = {
    "content": "derived from your files and the course key",
    "content-default-key": "derived from your files (public local key)",
    "option": "given with --seed",
    "config": "fixed in grading.toml",
    "fresh": "fresh for this run",
}
