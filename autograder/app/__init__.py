"""Entry points that grade and write for a platform: the Gradescope run
(``python -m autograder.app.gradescope_run``) and how it finds the exercise modules in an
upload (``upload``). Beside ``autograder/cli.py`` and ``autograder/ci.py`` in the app layer
(tests/grader/test_layering.py)."""
