"""A Python interpreter on this Linux machine without the Linux features the full sandbox
uses (tests/fixtures/portable_host/sitecustomize.py): no prctl, mount, unshare, Landlock or
/proc, and fork-after-threads treated as unsafe — in every process the grader starts.

Why an interpreter and not an environment variable: the grader scrubs the environment of
the processes it starts (runner/process/os_spawn.ENV_KEEP) and sets their PYTHONPATH, but
every one of them is ``sys.executable`` (the trusted pytest process, the fork server and
workers forked from it). This interpreter is a virtual environment whose site-packages holds
the sitecustomize and links to everything installed in the project's .venv, so it imports
the same torch and pytest, and ``site`` runs the sitecustomize in each process it starts.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "portable_host" / "sitecustomize.py"


def build(where: Path) -> Path:
    """Make the interpreter under ``where``; returns its ``bin/python``."""
    base = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    (where / "bin").mkdir(parents=True, exist_ok=True)
    site_dir = where / "lib" / version / "site-packages"
    site_dir.mkdir(parents=True, exist_ok=True)
    (where / "pyvenv.cfg").write_text(
        f"home = {base.parent}\ninclude-system-site-packages = false\nversion = {sys.version.split()[0]}\n"
    )
    python = where / "bin" / "python"
    if not python.exists():
        python.symlink_to(base)
    ours = Path(sysconfig.get_paths()["purelib"])  # the project's .venv site-packages
    for entry in ours.iterdir():
        if entry.name in ("sitecustomize.py", "__pycache__"):
            continue
        link = site_dir / entry.name
        if not link.exists() and not link.is_symlink():
            link.symlink_to(entry)
    (site_dir / "sitecustomize.py").write_bytes(FIXTURE.read_bytes())
    return python


def environment() -> dict[str, str]:
    """The environment to start the simulated interpreter with (nothing of ours leaks in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
    env["PYTHONHASHSEED"] = "0"
    return env
