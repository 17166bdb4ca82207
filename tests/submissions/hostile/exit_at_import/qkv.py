"""Attack: leave at import time, hoping the grader reads an early exit as success."""
import sys

sys.exit(0)
