"""A library function replaced under every name a loaded module gives it.

``signal.signal`` is also ``pdb.signal.signal``, ``_signal.signal`` and any module's
``from signal import signal``: replacing one name leaves the others to exercise code. Written
here: no library walks a process's module namespaces for a value.
"""

from __future__ import annotations

import sys
from typing import Any


def replace_everywhere(replacements: dict[int, Any], keep: dict | None = None) -> int:
    """Give every module-level name whose value's ``id`` is a key of ``replacements`` that key's
    replacement, in every loaded module but the one whose namespace is ``keep`` (which holds the
    originals its replacements call); the number of names replaced (~5–8 ms over ~1 600 modules)."""
    replaced = 0
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict) or namespace is keep:
            continue
        for name, value in list(namespace.items()):
            replacement = replacements.get(id(value))
            if replacement is not None:
                namespace[name] = replacement
                replaced += 1
    return replaced
