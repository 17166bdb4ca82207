"""The instructors' tools, in one folder that no copy of the grader outside the instructors'
repository carries (the student tree and the Gradescope bundle leave out ``autograder/instructor/``
whole: :mod:`.release.files`):

- :mod:`.release`: ``python -m autograder release|stubs|snapshots|audit|nbgrader-course``
- :mod:`.batch`: ``python -m autograder batch`` (a whole class)
- :mod:`.new_test`: ``make new-test`` (add a test to a suite in one go)
- :mod:`.new_skill`: ``make new-skill`` (scaffold a skill in one go)

Nothing outside this package imports it; ``autograder.cli`` finds its commands by module name
when the package is there.
"""
