"""Attention autograder: trustworthy, sandboxed grading of the course's attention exercises.

Layout: ``config`` (grading.toml), ``sandbox`` (where submission code runs), ``runner``
(the trusted pytest run and its plugin), ``testing`` (the API suites are written in),
``feedback`` (hint catalogue), ``results`` (scoring), ``renderers`` (outputs), ``cli``.
"""

__version__ = "0.1.0"
