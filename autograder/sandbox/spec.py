"""What a worker is allowed to do: decided on the trusted side, sent to the fork server."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class WorkerSpec:
    #: read-only copy of the exercise modules; first entry of the worker's sys.path
    copy_dir: str
    #: a fresh scratch directory is made below this for every worker (cwd, HOME, TMPDIR)
    scratch_root: str
    #: exercise module names the worker may import (e.g. "qkv")
    modules: list[str]
    memory_bytes: int = 4 << 30
    cpu_seconds: int = 120
    file_bytes: int = 16 << 20
    output_bytes: int = 64 << 10
    #: "keep" (not root: nothing to drop), "user" (setuid to uid/gid), "nocaps" (root without capabilities)
    identity: str = "keep"
    uid: int = -1
    gid: int = -1
    #: trees the worker may read; everything else is invisible once Landlock is on
    read_paths: list[str] = field(default_factory=list)
    #: trees never readable from the worker even below a read path (tests, solutions, repo)
    protected_paths: list[str] = field(default_factory=list)
    landlock: str = "auto"  # "auto" | "require" | "off"
    seccomp: str = "auto"  # "auto" | "require" | "off"
    #: "host" (root creates them), "user" (inside an unprivileged user namespace) or "" (none
    #: available here): the worker's own network, IPC, UTS and mount namespaces
    namespaces: str = ""
    num_threads: int = 1

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> WorkerSpec:
        return cls(**data)
