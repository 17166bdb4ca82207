"""``dist/MANIFEST.json``: what was released, from what, and the checksum of every file.

Deterministic: keys sorted, paths sorted, no time and no machine in it — the same commit
and version give the same bytes, so two releases can be compared with ``cmp``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ...runner import seeding
from .context import ReleaseContext

NAME = "MANIFEST.json"


def checksums(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not (path.parent == root and path.name == NAME):
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return dict(sorted(out.items()))


def _size(root: Path, rel: str) -> int:
    path = root / rel
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write(ctx: ReleaseContext, artifacts: dict[str, str]) -> Path:
    """``artifacts``: {path under dist/: what it is}."""
    files = checksums(ctx.out)
    doc = {
        "format": "autograder-release/1",
        "course": ctx.config.course,
        "version": ctx.version,
        "source_commit": ctx.commit,
        "suite_hash": ctx.suite_hash,
        "visible_suite_hash": ctx.visible_suite_hash,
        "points": ctx.config.total_points,
        # which course key the bundles carry: its one-way id (runner/seeding.py key_id), never the key
        "seed_key_id": seeding.id_of(ctx.seed_key) if ctx.seed_key else "public-default",
        "artifacts": {rel: {"what": what, "bytes": _size(ctx.out, rel)} for rel, what in sorted(artifacts.items())},
        "files": files,
    }
    path = ctx.out / NAME
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
