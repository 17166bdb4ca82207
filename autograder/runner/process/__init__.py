"""The processes of a grading run, and how they start. Two kinds, one name each:

- the **trusted process**: the grading run's pytest process (``-p autograder.runner.plugin``),
  which collects the suites, computes inputs and references and compares; student code never
  runs in it. It is launched by ``runner/engine.py`` (``popen``: a fresh ``python -m
  pytest``; ``boot``: started before the command line has read grading.toml, runner/boot.py),
  by the batch's preloaded process (autograder/instructor/batch/server.py: forked, one per student), and
  a grading run with two cores forks a second one for half of the skills (runner/split.py).
  Whatever started it, it imports ``preimport.pytest_side`` before its run is known — so does
  the batch's preloaded process, which adds ``preimport.torch_side``;
- the **sandbox fork server** (``sandbox_fork_server``, sandbox/zygote.py): forked once by
  each trusted process, from its plugin's first hook, with torch imported and nothing
  computed; it forks a sandboxed worker per test.

Nothing here starts a process or imports torch when imported.
"""
