"""Batch grading: ``python -m autograder batch SUBMISSIONS --out DIR`` grades a whole class,
each student exactly as ``python -m autograder grade`` would, from one preloaded process."""
