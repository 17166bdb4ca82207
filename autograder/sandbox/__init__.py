"""Where submission code runs: a confined worker process, forked per test from a fork
server, talking to the trusted grader over a data-only protocol.

- ``protocol``: the wire format (tagged JSON + raw tensor bytes; never pickle)
- ``confine``: rlimits, identity drop, Landlock and seccomp (Linux)
- ``zygote``: the fork server (torch imported, nothing computed)
- ``worker``: the worker's main loop; ``probes``: trusted procedures run inside it
- ``client``: the trusted side's handles

What a run's workers may do (a ``spec.WorkerSpec``) is decided by ``autograder.runner.policy``
from grading.toml: nothing in this package reads the config.
"""
