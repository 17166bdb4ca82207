"""Import a helper module that sits beside a suite: ``tests/suites/<skill>/<name>.py``.

    from autograder.testing.siblings import sibling
    signatures = sibling(__file__, "mistakes")       # tests/suites/<skill>/mistakes.py

pytest runs the suites with ``--import-mode=importlib`` (a suite's folder is not on
``sys.path``), and ``tests/suites/<skill>`` has the name of the exercise module
(``qkv``…): importing it as a package would shadow that name. So the helper is imported by
path, once, under the unique name ``suites_<skill>_<name>``. The release decides what ships
by the files themselves: a skill's helper modules go with the hidden suites (Gradescope),
never to students (``autograder.instructor.release.files``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def sibling(suite_file: str | Path, name: str) -> ModuleType:
    folder = Path(suite_file).resolve().parent
    path = folder / f"{name}.py"
    module_name = f"suites_{folder.name}_{name}"
    module = sys.modules.get(module_name)
    if module is not None and Path(getattr(module, "__file__", "")) == path:
        return module
    if not path.is_file():
        raise ModuleNotFoundError(f"{path}: no such suite helper (expected beside {Path(suite_file).name})", name=module_name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module
