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
if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 python3-pip ca-certificates
fi
mkdir -p "$PREFIX"
python3 -m pip install --quiet --target "$PREFIX/uv-bin" "uv==@UV_VERSION@"
UV=("$PREFIX/uv-bin/bin/uv")

"${UV[@]}" python install "@PYTHON_VERSION@"
"${UV[@]}" venv --python "@PYTHON_VERSION@" "$PREFIX/venv"
PY="$PREFIX/venv/bin/python"
# torch alone from PyTorch's CPU index (the PyPI wheel would pull CUDA libraries), then the rest
# from PyPI; `torch==X` is satisfied by the installed `X+cpu`.
"${UV[@]}" pip install --python "$PY" --index-url @TORCH_INDEX@ "torch==@TORCH_VERSION@"
"${UV[@]}" pip install --python "$PY" -r "$SOURCE/requirements.txt"
rm -rf "$UV_CACHE_DIR"
chmod -R a+rX "$PREFIX"   # submission code runs as an unprivileged user and imports torch from here

# Smoke test at build time: the reference solutions must score full marks in this image.
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
