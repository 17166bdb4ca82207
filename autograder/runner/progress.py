"""The live progress display (``rich``), fed by events the trusted pytest process writes
to a pipe: one line per finished test."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import Config


class LiveProgress:
    def __init__(self, console: Console, config: Config, *, enabled: bool, warm: bool = False) -> None:
        """``warm``: the run is forked from a warm server (torch already imported)."""
        self.enabled = enabled
        self.starting = "starting…" if warm else "starting (importing torch)…"
        self.total = len(config.tests)
        self.failed = 0
        self.progress = Progress(
            TextColumn("[bold]grading[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task: Any = None  # rich's TaskID once started

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            self._guarded(self._start)
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._guarded(self.progress.stop)

    def update(self, event: dict) -> None:
        if not self.enabled or self.task is None:
            return
        if event.get("event") == "collected":
            self._guarded(self.progress.update, self.task, description="running tests")
        elif event.get("event") == "test":
            if event.get("outcome") != "passed":
                self.failed += 1
            name = str(event.get("nodeid", "")).split("::")[-1][:50]
            note = f"[red]{self.failed} failed[/] · " if self.failed else ""
            self._guarded(self.progress.update, self.task, advance=1, description=f"{note}{name}")

    def _start(self) -> None:
        self.progress.start()
        self.task = self.progress.add_task(self.starting, total=self.total)

    def _guarded(self, action, *args, **kwargs) -> None:
        """A terminal that went away (closed window, lost SSH session: EIO, EPIPE) ends the
        display, never the grade: its results are still written (``--output``)."""
        try:
            action(*args, **kwargs)
        except (OSError, ValueError):
            self.enabled = False
            try:
                self.progress.stop()  # its refresh thread too
            except (OSError, ValueError):
                pass
