# Attention exercises — grader
#   make grade [SUBMISSION=dir] [SKILL="qkv masks"] [FORMAT=text|json|gradescope|markdown|github]
#   make lint      ruff check + ruff format --check (part of make test)
#   make test      lint, then the grader's own tests, fast set: all but those marked slow (a few minutes)
#   make test-slow the slow ones only (round trips, time limits, whole classes); CI runs test, then test-slow
#   make test-all  every test of the grader (= make test + make test-slow in one run)
#   make check     instructors: prove the suites right (config, solutions = full marks, stubs = 0,
#                  snapshots fresh, every single-mistake variant loses the same points on 3 seeds)
#   make snapshots instructors: rerun the reference on the visible suites' control inputs
#   make stubs     instructors: write exercises/ from solutions/ (nbgrader's ClearSolutions)
#   make new-test SKILL=qkv NAME=test_… WEIGHT=0.25 FROM=test_… [HIDDEN=1] [HINT=key FUNCTION=f TEXT=… SECTION=…]
#                  instructors: a new test's skeleton, its weight and its hint, consistently
#   make release VERSION=1.0.0   instructors: dist/student, dist/autograder.zip, dist/nbgrader, dist/MANIFEST.json
# The first run creates .venv with python3 and installs the pinned requirements.

include autograder/grade.mk

.PHONY: grade test lint test-slow test-all check snapshots reference-cpu stubs release nbgrader-course benchmark tolerances batch new-test clean help
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

test: lint ## lint, then the grader's own tests but those marked slow (and actionlint on every workflow)
	$(PY) -m pytest -m "not slow"

lint: $(TEST_STAMPS) ## ruff check and ruff format --check (rules: pyproject.toml; ruff pinned in requirements-lint.txt)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test-slow: $(TEST_STAMPS) ## only the tests marked slow (full round trips, time limits, whole classes)
	$(PY) -m pytest -m slow

test-all: $(TEST_STAMPS) ## every test of the grader, slow ones included
	$(PY) -m pytest

check: $(VENV)/.dev.stamp $(VENV)/.instructor.stamp ## instructors: solutions score full marks, stubs score 0, config valid
	$(PY) -m autograder stubs --check
	$(PY) -m autograder snapshots --check
	$(PY) -m autograder reference-cpu --check
	$(PY) -m autograder audit
	$(PY) -m pytest -rs tests/grader/test_suites_are_right.py
	$(PY) tests/benchmarks/hint_precision.py --seeds 1,2,3 --jobs 2 --no-styles --check-stable

snapshots: $(VENV)/.requirements.stamp ## instructors: rewrite tests/suites/*/snapshots/ from the reference
	$(PY) -m autograder snapshots

reference-cpu: $(VENV)/.requirements.stamp ## instructors: remeasure the reference's CPU time per skill (the CPU limits' source)
	$(PY) -m autograder reference-cpu

new-test: $(VENV)/.requirements.stamp ## instructors: add a test in one go (SKILL= NAME= WEIGHT= FROM=test_…|ADD_POINTS=1 [HIDDEN=1] [HINT= FUNCTION= TEXT= SECTION=])
	@test -n "$(SKILL)" -a -n "$(NAME)" -a -n "$(WEIGHT)" || { echo "make new-test: e.g. make new-test SKILL=qkv NAME=test_scale_scores_... HIDDEN=1 WEIGHT=0.25 FROM=test_... (autograder/testing/README.md)" >&2; exit 2; }
	$(PY) -m autograder.instructor.new_test --skill "$(SKILL)" --name "$(NAME)" --weight "$(WEIGHT)" $(if $(HIDDEN),--hidden) \
		$(if $(FROM),--take-from "$(FROM)") $(if $(ADD_POINTS),--add-points) $(if $(HINT),--hint "$(HINT)") \
		$(if $(FUNCTION),--function "$(FUNCTION)") $(if $(TEXT),--text "$(TEXT)") $(if $(SECTION),--section "$(SECTION)")

stubs: $(VENV)/.instructor.stamp ## instructors: rewrite exercises/ from solutions/
	$(PY) -m autograder stubs

DIST ?= dist
release: $(VENV)/.instructor.stamp ## instructors: build $(DIST)/ for VERSION
	@test -n "$(VERSION)" || { echo "make release: say which version, e.g. make release VERSION=1.0.0" >&2; exit 2; }
	$(PY) -m autograder release --out $(DIST) --version $(VERSION)

nbgrader-course: $(VENV)/.instructor.stamp ## instructors: create or update the live nbgrader course in DIR from dist/nbgrader (state kept)
	@test -n "$(DIR)" || { echo "make nbgrader-course: say where the course lives, e.g. make nbgrader-course DIR=../attention-course" >&2; exit 2; }
	$(PY) -m autograder nbgrader-course "$(DIR)" --from $(DIST)/nbgrader

batch: $(VENV)/.requirements.stamp ## instructors: grade a class (SUBMISSIONS=folder or Gradescope export, OUT=dir, [JOBS=n] [FORCE=1])
	@test -n "$(SUBMISSIONS)" -a -n "$(OUT)" || { echo "make batch: say what to grade and where, e.g. make batch SUBMISSIONS=submissions/ OUT=graded/" >&2; exit 2; }
	$(PY) -m autograder batch "$(SUBMISSIONS)" --out "$(OUT)" $(if $(JOBS),--jobs $(JOBS)) $(if $(FORCE),--force)

benchmark: $(VENV)/.requirements.stamp ## each speed figure against its target (issue 32); exits non-zero when one is missed
	@status=0; \
	$(PY) tests/benchmarks/grade_time.py || status=1; \
	$(PY) tests/benchmarks/gradescope_run.py --case reference --case loop_forever || status=1; \
	test $$status = 0 || echo "make benchmark: a figure missed its target (above)" >&2; \
	exit $$status

tolerances: $(VENV)/.requirements.stamp ## re-measure tests/suites/course/tolerances.toml
	$(PY) tests/benchmarks/measure_tolerances.py

help:
	@echo "make grade [SUBMISSION=dir] [SKILL=name] [FORMAT=...]   grade exercises (first run sets up .venv)"
	@echo "make test                                                the grader's own tests, fast set (all but those marked slow)"
	@echo "make test-slow                                           only the slow tests (round trips, time limits, whole classes)"
	@echo "make test-all                                            every grader test (CI: .ci/run runs make test, then make test-slow)"
	@echo "make check                                               instructors: prove the suites right"
	@echo "make snapshots                                           instructors: rewrite the visible suites' reference snapshots"
	@echo "make reference-cpu                                       instructors: remeasure the reference's CPU time (the CPU limits' source)"
	@echo "make stubs                                               instructors: rewrite exercises/ from solutions/"
	@echo "make new-test SKILL=x NAME=test_y WEIGHT=w FROM=test_z   instructors: add a test (+ HIDDEN=1, HINT=… FUNCTION=… TEXT=… SECTION=…)"
	@echo "make release VERSION=1.0.0                               instructors: build dist/ (student repo, Gradescope zip, nbgrader course)"
	@echo "make nbgrader-course DIR=../course                       instructors: create/update the live nbgrader course from dist/ (state kept)"
	@echo "make batch SUBMISSIONS=dir OUT=dir [JOBS=n] [FORCE=1]    instructors: grade a whole class (gradebook.csv, summary.md)"
	@echo "make benchmark | make tolerances                         measure speed / re-derive tolerances"
