#!/usr/bin/env bash
# Gradescope image build (runs once, as root, with network): a Python @PYTHON_VERSION@ interpreter
# and the grader's pinned requirements with CPU-only torch, in @PREFIX@.
#
# Why uv: Gradescope's base images are Ubuntu with whatever python3 that release ships
# (3.10 on 22.04), and deadsnakes is not guaranteed to have a build for every base. uv
# (a pinned wheel from PyPI) installs a relocatable CPython build (python-build-standalone)
# into a fixed folder, independent of the image's own Python.
set -euo pipefail

PREFIX="${AUTOGRADER_PREFIX:-@PREFIX@}"
SOURCE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export UV_PYTHON_INSTALL_DIR="$PREFIX/python" UV_CACHE_DIR="$PREFIX/uv-cache" UV_NO_CONFIG=1
export PIP_BREAK_SYSTEM_PACKAGES=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

echo "== attention autograder @VERSION@ (suite @SUITE_HASH_SHORT@): setup"

# Downloads (apt, PyPI, uv's Python build from GitHub, PyTorch's CPU index) are retried: an image
# build fails only when a source stays unreachable, and then it says which one.
retry() {
    local what="$1"; shift
    local attempt
    for attempt in 1 2 3 4; do
        if "$@"; then return 0; fi
        echo "== $what failed (attempt $attempt of 4); retrying in $((attempt * 10)) s" >&2
        sleep $((attempt * 10))
    done
    echo "== setup failed: $what did not succeed after 4 attempts — check the network of the image build and rebuild" >&2
    return 1
}
if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
    retry "apt-get update" apt-get update -qq
    retry "apt-get install python3" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip ca-certificates
fi
mkdir -p "$PREFIX"
retry "installing uv from PyPI" python3 -m pip install --quiet --target "$PREFIX/uv-bin" "uv==@UV_VERSION@"
UV=("$PREFIX/uv-bin/bin/uv")

retry "downloading Python @PYTHON_VERSION@ (uv, from GitHub)" "${UV[@]}" python install "@PYTHON_VERSION@"
"${UV[@]}" venv --python "@PYTHON_VERSION@" "$PREFIX/venv"
# run_autograder runs with PYTHONDONTWRITEBYTECODE=1 (nothing written next to the grader per
# submission), so every .pyc it uses must exist in the image: uv compiles what it installs
# (it does not by default), and the grader is compiled below.
export UV_COMPILE_BYTECODE=1
PY="$PREFIX/venv/bin/python"
# torch alone from PyTorch's CPU index (the PyPI wheel would pull CUDA libraries), then the rest
# from PyPI; `torch==X` is satisfied by the installed `X+cpu`.
retry "installing torch @TORCH_VERSION@ from PyTorch's CPU index" "${UV[@]}" pip install --python "$PY" --index-url @TORCH_INDEX@ "torch==@TORCH_VERSION@"
retry "installing the pinned requirements from PyPI" "${UV[@]}" pip install --python "$PY" -r "$SOURCE/requirements.txt"
rm -rf "$UV_CACHE_DIR"
chmod -R a+rX "$PREFIX"   # submission code runs as an unprivileged user and imports torch from here

"$PY" -m compileall -q "$SOURCE/autograder"
# Smoke test at build time: the reference solutions must score full marks in this image. It
# also leaves pytest's rewritten suites (tests/suites/**/__pycache__/*-pytest-*.pyc), which
# plain compileall cannot write, so no submission's run recompiles them.
echo "== smoke test: grading the reference solutions"
cd "$SOURCE"
"$PY" -m autograder grade solutions --format json --output /tmp/autograder-smoke.json --no-progress --seed 1
"$PY" - <<'PY'
import json
data = json.load(open("/tmp/autograder-smoke.json"))
assert data["score"] == data["max_score"] > 0, f"reference solutions scored {data['score']} / {data['max_score']}: {data['message']}"
print(f"reference solutions: {data['score']:g} / {data['max_score']:g}")
PY
rm -f /tmp/autograder-smoke.json
echo "== setup done: $("$PY" --version), torch $("$PY" -c 'import torch; print(torch.__version__)')"
