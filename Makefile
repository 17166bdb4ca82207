# Attention exercises — grader. `make help` lists every target with its `##` comment below
# (one description per target, here only). The first run creates .venv with python3 and
# installs the pinned requirements (autograder/grade.mk).

include autograder/grade.mk

.PHONY: grade test lint test-slow test-all check check-skill snapshots reference-cpu stubs release nbgrader-course benchmark tolerances batch new-test new-skill clean help
.DEFAULT_GOAL := help

$(VENV)/.dev.stamp: $(VENV)/.requirements.stamp requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

$(VENV)/.lint.stamp: $(VENV)/.dev.stamp requirements-lint.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-lint.txt
	@touch $@

# instructors only: nbgrader (stubs, the nbgrader course of a release); never in students' requirements
$(VENV)/.instructor.stamp: $(VENV)/.requirements.stamp requirements-instructor.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-instructor.txt
	@touch $@

TEST_STAMPS := $(VENV)/.dev.stamp $(VENV)/.instructor.stamp $(VENV)/.lint.stamp

# The grader's own tests write bytecode, as CI's runners do: with PYTHONDONTWRITEBYTECODE set
# machine-wide (some images do), each of the ~60 gradings the tests run would recompile the
# suites and pytest's assertion rewrites of them (~9 % of the fast set's time, measured).
# Gradescope's run_autograder keeps it set; the bundle is precompiled instead (setup.sh).
test test-slow test-all check: export PYTHONDONTWRITEBYTECODE :=

test: lint ## lint, then the grader's own tests but those marked slow (a few minutes; actionlint on every workflow)
	$(PY) -m pytest -m "not slow"

lint: $(TEST_STAMPS) ## ruff check, ruff format --check and mypy (rules: pyproject.toml; pinned in requirements-lint.txt)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

# SPLIT=K/N: the K-th of N parts of the slow set, of about the same time by the durations in
# tests/grader/slow_durations.json (pytest-split; contiguous parts, so a module's shared
# fixture is built in one part; a test missing from the file counts as the average). CI runs
# the N parts on N runners at once; together they are the whole set, each test once.
SLOW_SPLIT = $(if $(SPLIT),--splits $(word 2,$(subst /, ,$(SPLIT))) --group $(word 1,$(subst /, ,$(SPLIT))) --durations-path tests/grader/slow_durations.json)

test-slow: $(TEST_STAMPS) ## only the tests marked slow (full round trips, time limits, whole classes) [SPLIT=K/N: one part of N]; CI runs test, then this
	$(PY) -m pytest -m slow $(SLOW_SPLIT)

test-all: $(TEST_STAMPS) ## every test of the grader, slow ones included
	$(PY) -m pytest

check: $(VENV)/.dev.stamp $(VENV)/.instructor.stamp ## instructors: prove the suites right (stubs and snapshots fresh, leak audit, solutions full marks, stubs 0, ≥ 4 mistakes and 3 styles per skill, a release builds, every mistake the same price on 3 seeds, no odd return value a grader error)
	$(PY) -m autograder stubs --check
	$(PY) -m autograder snapshots --check
	$(PY) -m autograder reference-cpu --check
	$(PY) -m autograder audit
	$(PY) -m pytest -rs tests/grader/test_suites_are_right.py tests/grader/test_sample_submissions.py::test_every_skill_has_at_least_four_mistakes \
		tests/grader/test_sample_submissions.py::test_every_skill_has_correct_submissions_in_other_styles
	@# what `make release` needs besides the above: a whole release, built beside dist/ and thrown away (a throwaway seed key)
	@tmp=$$(mktemp -d) && AUTOGRADER_SEED_KEY_FILE=$$tmp/seed.key $(PY) -m autograder release --out $$tmp/dist --version 0.0.0-check > $$tmp/log 2>&1; \
		status=$$?; test $$status = 0 && echo "make check: a release builds" || cat $$tmp/log >&2; rm -rf $$tmp; exit $$status
	$(PY) tests/benchmarks/hint_precision.py --seeds 1,2,3 --jobs 2 --no-styles --check-stable
	$(PY) tests/submissions/odd_returns.py --jobs 2

check-skill: $(VENV)/.dev.stamp $(VENV)/.instructor.stamp ## instructors: SKILL=name — make check's part for one skill while you work on it (about 15 minutes on 2 cores): stubs, its snapshots and CPU table fresh, leak audit, the suites' own checks (every skill's reference full marks, stubs 0), its mistakes' hints and prices on 3 seeds, its styles at full marks
	@test -n "$(SKILL)" || { echo "make check-skill: e.g. make check-skill SKILL=masks (make check: every skill)" >&2; exit 2; }
	$(PY) -m autograder stubs --check
	$(PY) -m autograder snapshots --check $(foreach s,$(SKILL),--skill $(s))
	$(PY) -m autograder reference-cpu --check $(foreach s,$(SKILL),--skill $(s))
	$(PY) -m autograder audit
	$(PY) -m pytest -rs tests/grader/test_suites_are_right.py
	$(PY) tests/benchmarks/hint_precision.py --seeds 1,2,3 --jobs 2 --check-stable $(foreach s,$(SKILL),--skill $(s))

snapshots: $(VENV)/.requirements.stamp ## instructors: [SKILL=name] rewrite the stale files of tests/suites/<skill>/snapshots/ from the reference (rerun: no byte changes)
	$(PY) -m autograder snapshots $(foreach s,$(SKILL),--skill $(s))

reference-cpu: $(VENV)/.requirements.stamp ## instructors: [SKILL=name] remeasure the reference's CPU time per skill (the CPU limits' source)
	$(PY) -m autograder reference-cpu $(foreach s,$(SKILL),--skill $(s))

new-test: $(VENV)/.instructor.stamp ## instructors: add a test in one go (SKILL= NAME= WEIGHT= FROM=test_…|ADD_POINTS=1 [HIDDEN=1] [HINT= FUNCTION= TEXT= SECTION=])
	@test -n "$(SKILL)" -a -n "$(NAME)" -a -n "$(WEIGHT)" || { echo "make new-test: e.g. make new-test SKILL=qkv NAME=test_scale_scores_... HIDDEN=1 WEIGHT=0.25 FROM=test_... (autograder/testing/README.md)" >&2; exit 2; }
	$(PY) -m autograder.instructor.new_test --skill "$(SKILL)" --name "$(NAME)" --weight "$(WEIGHT)" $(if $(HIDDEN),--hidden) \
		$(if $(FROM),--take-from "$(FROM)") $(if $(ADD_POINTS),--add-points) $(if $(HINT),--hint "$(HINT)") \
		$(if $(FUNCTION),--function "$(FUNCTION)") $(if $(TEXT),--text "$(TEXT)") $(if $(SECTION),--section "$(SECTION)")

new-skill: $(VENV)/.instructor.stamp ## instructors: scaffold a skill in one go (NAME= [POINTS=10] [ASSIGNMENT=name]); CONTRIBUTING.md "A new skill" is the checklist
	@test -n "$(NAME)" || { echo "make new-skill: e.g. make new-skill NAME=rope POINTS=10 ASSIGNMENT=day2 (CONTRIBUTING.md, 'A new skill')" >&2; exit 2; }
	$(PY) -m autograder.instructor.new_skill --name "$(NAME)" $(if $(POINTS),--points "$(POINTS)") $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)")

stubs: $(VENV)/.instructor.stamp ## instructors: rewrite exercises/ from solutions/
	$(PY) -m autograder stubs

DIST ?= dist
release: $(VENV)/.instructor.stamp ## instructors: VERSION=1.0.0 [DIST=folder] → dist/ or DIST (student tree, Gradescope bundles, nbgrader, Classroom 50, MANIFEST.json)
	@test -n "$(VERSION)" || { echo "make release: say which version, e.g. make release VERSION=1.0.0" >&2; exit 2; }
	$(PY) -m autograder release --out $(DIST) --version $(VERSION)

nbgrader-course: $(VENV)/.instructor.stamp ## instructors: DIR=../course — create or update the live nbgrader course from dist/nbgrader (state kept)
	@test -n "$(DIR)" || { echo "make nbgrader-course: say where the course lives, e.g. make nbgrader-course DIR=../attention-course" >&2; exit 2; }
	$(PY) -m autograder nbgrader-course "$(DIR)" --from $(DIST)/nbgrader

# make batch passes each of these to `autograder batch` and refuses any other NAME=value given on the
# command line (a misspelt ROSTER= would otherwise grade without a roster and say nothing)
BATCH_VARS := SUBMISSIONS OUT JOBS FORCE ROSTER ASSIGNMENT ASSIGNMENT_NAME SHARD MERGE SEED_KEY_FILE ACCEPT_UNMATCHED SKILL SEED
MAKE_VARS := PYTHON VENV DIST
ifneq ($(filter batch,$(MAKECMDGOALS)),)
BATCH_UNKNOWN := $(filter-out $(BATCH_VARS) $(MAKE_VARS),$(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $(v))),$(v))))
ifneq ($(BATCH_UNKNOWN),)
$(error make batch: unknown variable(s) $(BATCH_UNKNOWN) — known: $(BATCH_VARS))
endif
endif
batch: $(VENV)/.instructor.stamp ## instructors: grade a class (SUBMISSIONS= OUT= [ROSTER=csv] [ASSIGNMENT=name] [SHARD=K/N|slurm] [MERGE="dirs"] [JOBS=n] [FORCE=1] [SEED_KEY_FILE=f] [ACCEPT_UNMATCHED=1])
	@test -n "$(SUBMISSIONS)" -a -n "$(OUT)" || { echo "make batch: say what to grade and where, e.g. make batch SUBMISSIONS=submissions/ OUT=graded/" >&2; exit 2; }
	$(PY) -m autograder batch "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(FORCE),--force) \
		$(if $(ROSTER),--roster "$(ROSTER)") $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") \
		$(if $(ASSIGNMENT_NAME),--assignment-name "$(ASSIGNMENT_NAME)") $(if $(SHARD),--shard "$(SHARD)") \
		$(if $(MERGE),--merge $(MERGE)) $(if $(SEED_KEY_FILE),--seed-key-file "$(SEED_KEY_FILE)") \
		$(if $(ACCEPT_UNMATCHED),--accept-unmatched) $(foreach s,$(SKILL),--skill $(s)) $(if $(SEED),--seed $(SEED))

benchmark: $(VENV)/.requirements.stamp ## each speed figure against its target (issue 32); exits non-zero when one is missed
	@status=0; \
	$(PY) tests/benchmarks/grade_time.py || status=1; \
	$(PY) tests/benchmarks/gradescope_run.py --case reference --case loop_forever || status=1; \
	$(PY) tests/benchmarks/batch_throughput.py --count 40 --sample 0 || status=1; \
	test $$status = 0 || echo "make benchmark: a figure missed its target (above)" >&2; \
	exit $$status

tolerances: $(VENV)/.requirements.stamp ## [SKILL=name] re-measure tests/suites/course/tolerances.toml (only that skill's rows; an unchanged tolerance keeps its bytes)
	$(PY) tests/benchmarks/measure_tolerances.py $(foreach s,$(SKILL),--skill $(s))

help: ## this list: every target's `##` comment (from this Makefile and autograder/grade.mk)
	@awk 'BEGIN {FS = ":[^#]*## "} /^[a-z][a-z0-9-]*:.*## / {printf "  make %-16s %s\n", $$1, $$2}' autograder/grade.mk $(firstword $(MAKEFILE_LIST))
