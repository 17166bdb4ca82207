# `make grade`, included by the instructors' Makefile and by the student repository's, so the
# two grade the same way. The first run creates $(VENV) with python3 and installs the pinned
# requirements.txt.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SUBMISSION ?= exercises
SKILL ?=
FORMAT ?= text
OUTPUT ?=
SEED ?=
# a path as one shell word, whatever it holds (spaces, quotes): 'my exercises', 'O'\''Brien'
shell_quote = '$(subst ','\'',$(1))'
GRADE_FLAGS := $(foreach s,$(SKILL),--skill $(s)) --format $(FORMAT) $(if $(OUTPUT),--output $(call shell_quote,$(OUTPUT))) $(if $(SEED),--seed $(SEED))

.PHONY: grade clean

$(VENV)/.requirements.stamp: requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "First run: installing the pinned requirements into $(VENV) (torch, pytest, rich; about 1 GB) — once, typically 1–3 minutes."
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@echo "Installed. Later runs start grading at once."
	@touch $@

grade: $(VENV)/.requirements.stamp ## grade [SUBMISSION=dir] [SKILL="qkv masks"] [FORMAT=text|json|gradescope|markdown|github] [OUTPUT=file] [SEED=n]
	@$(PY) -m autograder grade $(if $(SUBMISSION),$(call shell_quote,$(SUBMISSION))) $(GRADE_FLAGS)

clean: ## remove .venv and the caches
	rm -rf $(VENV) .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
