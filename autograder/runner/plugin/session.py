"""The grading session: the state of one grading run inside the trusted pytest process.

Built once, at ``pytest_configure``, from the run manifest, and kept in ``config.stash``
(runner/plugin/keys.py): the fixtures find it there, the report hooks are methods of the
plugin object registered with it (runner/plugin/report.py).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from ...core.feedback import hints as hint_catalogue
from ...sandbox.client import Sandbox
from ...testing.runtime import ModuleInfo, Runtime
from ..manifest import RunManifest


class GradingSession:
    def __init__(self, manifest: RunManifest, server: tuple[int, object] | None) -> None:
        self.manifest = manifest
        self.seed: int = manifest.seed
        self.hints = hint_catalogue.load_catalogue(
            Path(manifest.suites_dir), docs=Path(manifest.root) / "docs", texts=manifest.texts
        )
        self.solutions_dir = Path(manifest.solutions_dir)
        self.progress: Any = None  # the progress pipe, a text file, while a run reports progress
        self.run_dir: str | None = None  # the run folder (os_spawn.new_run_dir), removed if the command line is gone
        self.profiler: Any = None  # a cProfile.Profile when AUTOGRADER_PROFILE asks for one
        self.trusted_processes = 1  # 2 once runner/process/split.py forked a second one
        limits = manifest.limits
        modules = {
            name: ModuleInfo(
                name=name,
                display_path=info.display_path,
                copy_path=Path(info.copy_path) if info.copy_path else None,
                problem=info.problem,
                problem_line=info.problem_line,
            )
            for name, info in manifest.modules.items()
        }
        self.sandbox = Sandbox(
            manifest.worker,
            start_timeout=limits.worker_start_timeout_s,
            max_reply_bytes=limits.max_result_mib << 20,
            server=server,
        )
        self.sandbox.preload(manifest.preload)
        self.runtime = Runtime(
            sandbox=self.sandbox,
            modules=modules,
            call_timeout=limits.call_timeout_s,
            budget_deadline=time.monotonic() + limits.run_timeout_s,
            importable={name: Path(path) for name, path in manifest.helpers.items()},
            skill_time=limits.skill_time_s,
            cpu_limits={module: (float(call), float(skill)) for module, (call, skill) in limits.cpu.items()},
            cpu_call_limits={
                module: {str(target): float(seconds) for target, seconds in targets.items()}
                for module, targets in limits.cpu_calls.items()
            },
        )
        self.reference_cache: dict[str, Any] = {}
        self._fresh_after: dict[str, int] = {}
        self._bans: dict[str, set[str]] = {}  # skill → WORKER_BANS of its suites (plan)
        self._scanned: dict[str, set[str]] = {}  # skill → WORKER_SCANNED of its suites (plan)

    def emit(self, event: dict) -> None:
        """A progress event for the live display in the parent process."""
        if self.progress is not None:
            try:
                self.progress.write(json.dumps(event) + "\n")
            except BrokenPipeError:
                self.progress = None
                self._orphaned()
            except OSError:
                self.progress = None

    def _orphaned(self) -> None:
        """The command line that started this run is gone (killed: the progress pipe broke),
        and nobody will read what the run finds. Stop now — the workers, then the run folder
        (a copy of the submission), then this process — rather than grade on for nobody: a
        folder another grade swept meanwhile would otherwise be made again by the report."""
        import os

        try:
            self.sandbox.close(wait=False)
        except Exception:  # leaving anyway; the workers die with their parent
            pass
        if self.run_dir:
            from ..process import os_spawn

            os_spawn.remove_tree(self.run_dir)
        os._exit(1)

    def group(self, nodeid: str) -> tuple[str | None, int]:
        """The tests whose worker a test may take over, and its stage among them: its skill,
        0 for a visible suite and 1 for a hidden one (see sandbox.client.Sandbox.begin_test:
        a worker serves one skill's tests of one stage)."""
        spec = self.manifest.test(nodeid)
        return (spec.skill, int(spec.visibility == "hidden")) if spec else (None, 0)

    def plan(self, items: list) -> None:
        """The tests this process runs, in order: after each, how many fresh workers the
        rest will still need (a new group or stage, or a test without a group starts on a
        fresh worker; tests that do not use ``sub`` need none),
        so no spare is forked only to be thrown away."""
        wanted = [item.nodeid for item in items if "sub" in getattr(item, "fixturenames", ())]
        # a skill's kernels replaced for good in its workers: the union of its suites' WORKER_BANS
        # and the modules whose rule scan its workers enforce: the union of its suites' WORKER_SCANNED
        self._bans, self._scanned = {}, {}
        for item in items:
            module = getattr(item, "module", None)
            skill = self.group(item.nodeid)[0]
            if skill is None:
                continue
            for declared, into in (
                (getattr(module, "WORKER_BANS", ()), self._bans),
                (getattr(module, "WORKER_SCANNED", ()), self._scanned),
            ):
                if declared:
                    into.setdefault(skill, set()).update(str(p) for p in declared)
        keys = [self.group(nodeid) for nodeid in wanted]
        self._fresh_after = {}
        ahead = 0
        for k in range(len(wanted) - 1, -1, -1):
            self._fresh_after[wanted[k]] = ahead
            (group, stage), (before, stage_before) = keys[k], keys[k - 1] if k else (None, 0)
            if k == 0 or group is None or group != before or stage != stage_before:
                ahead += 1

    def worker_bans(self, nodeid: str) -> tuple[str, ...]:
        """The ATen name patterns whose kernels this test's workers replace for good, before
        any submission code (a suite's module-level ``WORKER_BANS``, for its whole skill)."""
        return tuple(sorted(self._bans.get(self.group(nodeid)[0] or "", ())))

    def worker_scanned(self, nodeid: str) -> tuple[str, ...]:
        """The exercise modules under a rule scan whose files alone run in this test's workers
        (a suite's module-level ``WORKER_SCANNED``, for its whole skill: sandbox/codegate.py)."""
        return tuple(sorted(self._scanned.get(self.group(nodeid)[0] or "", ())))

    def spares_at_start(self) -> int:
        """Spare workers worth forking before the first test (``plan``)."""
        return min(Sandbox.SPARES, max(self._fresh_after.values(), default=-1) + 1)

    def spares_after(self, nodeid: str) -> int:
        """Spare workers worth having forked once this test is done (``plan``)."""
        ahead = self._fresh_after.get(nodeid)
        return Sandbox.SPARES if ahead is None else min(Sandbox.SPARES, ahead)

    def test_seed(self, nodeid: str) -> int:
        digest = hashlib.sha256(f"{self.seed}:{nodeid}".encode()).digest()
        return int.from_bytes(digest[:8], "little") >> 1

    def close(self, exiting: bool = False) -> None:
        """Stop the sandbox, then close the progress pipe (the parent reads that as the end of
        the run). ``exiting``: this process exits next, so the fork server's own exit is not waited for."""
        self.sandbox.close(wait=not exiting)
        if self.progress is not None:
            self.progress.close()
            self.progress = None
