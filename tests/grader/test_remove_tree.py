"""The grader's one folder remover (autograder/sandbox/tree.py): any depth without recursion,
folders of any mode, links removed and never followed, and nothing left behind."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from autograder.sandbox.tree import remove_tree


def _chain(top: Path, depth: int) -> None:
    """``depth`` nested folders under ``top``, made by descriptors (the path is far longer
    than PATH_MAX), with a file at every hundredth level."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            os.mkdir("d", dir_fd=fd)
            if level % 100 == 0:
                os.close(os.open(f"f{level}", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


@pytest.fixture
def scratch(tmp_path):
    """A folder on a tmpfs where there is one (the walk is what is tested; an ext4 disk makes
    each rmdir cost milliseconds), else ``tmp_path``."""
    import tempfile

    memory = Path("/dev/shm")
    if memory.is_dir() and os.access(memory, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="autograder-tree-test-", dir=memory))
        yield folder
        remove_tree(folder)
    else:
        yield tmp_path


def test_a_5000_deep_tree_is_removed_without_recursion(scratch):
    """Deeper than the interpreter's recursion limit: shutil.rmtree (Python ≤ 3.12) raised
    RecursionError here, which ``ignore_errors`` does not catch (issue 28 E)."""
    top = scratch / "deep"
    top.mkdir()
    _chain(top, 5000)
    assert 5000 > sys.getrecursionlimit()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # the remover needs no depth of its own
    try:
        assert remove_tree(top) is True
    finally:
        sys.setrecursionlimit(limit)
    assert not top.exists() and list(scratch.iterdir()) == []


def test_links_are_removed_never_followed(scratch):
    outside = scratch / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("the grader's")
    top = scratch / "tree"
    (top / "a" / "b").mkdir(parents=True)
    (top / "a" / "b" / "to-outside").symlink_to(outside)
    (top / "a" / "to-file").symlink_to(outside / "keep.txt")
    (top / "dangling").symlink_to(scratch / "nowhere")
    assert remove_tree(top) and not top.exists()
    assert (outside / "keep.txt").read_text() == "the grader's"
    assert remove_tree(outside / "keep.txt") and not (outside / "keep.txt").exists()  # a file: itself
    link = scratch / "link-to-outside"
    link.symlink_to(outside)
    assert remove_tree(link) and not os.path.lexists(link) and outside.is_dir()  # a link: itself, not its target


def test_folders_without_permissions_are_removed(scratch):
    """A worker can make folders of mode 0 (mkdir's mode) or leave them read-only."""
    top = scratch / "modes"
    (top / "locked" / "inner").mkdir(parents=True)
    (top / "locked" / "inner" / "file").write_text("x")
    (top / "readonly").mkdir()
    (top / "readonly" / "file").write_text("x")
    (top / "locked" / "inner").chmod(0)
    (top / "locked").chmod(0)
    (top / "readonly").chmod(0o500)
    assert remove_tree(top) and not top.exists()


def test_a_missing_path_is_already_removed_and_nothing_raises(tmp_path):
    assert remove_tree(tmp_path / "never-made") is True
    assert remove_tree(str(tmp_path / "never-made" / "below")) is True
