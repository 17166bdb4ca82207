"""The processes of a grading run, and how they start. Two kinds, one name each:

- the **trusted process** (trusted.py: ``TrustedProcess``, its command line, environment,
  pipes and end): the grading run's pytest process (``-p autograder.runner.plugin``), which
  collects the suites, computes inputs and references and compares; student code never runs
  in it. One way to start it: a ``Launcher`` (launch.py) turns a ``Plan`` (root, suites,
  test files) into a ``TrustedProcess``. Three launchers, differing only in what the
  interpreter had imported when the plan arrived: ``Fresh`` (a new ``python -m pytest``),
  ``Early`` (started before the command line read grading.toml; early.py) and
  ``Preloaded`` (forked from a process that imported torch once: a batch's, or a warm
  server a user's earlier grade left, warm.py; preloaded_launcher.py, preloaded.py).
  Whatever started it, it imports
  ``preimport.pytest_side`` before its run is known — the preloaded process adds
  ``preimport.torch_side``. With two cores, a trusted process divides itself after
  collection (split.py): a fork of the same run, not a second start;
- the **sandbox fork server** (``sandbox_fork_server``, sandbox/zygote.py): forked once by
  each trusted process, with torch imported and nothing computed — from its plugin's first
  hook, or, in the Early launcher's process, the moment torch is in (early.py); it forks the
  sandboxed workers (one per skill, sandbox/client.Sandbox).

Nothing here starts a process or imports torch when imported.
"""
