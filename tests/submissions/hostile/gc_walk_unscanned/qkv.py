"""A skill with no rule scan (qkv) walks gc's list of live objects at import, which reaches the
worker's own modules however well they are hidden (blind red-team tester H did it from four
rule-checked skills, through code the scan could not read). The worker refuses the walk (an
audit hook), so the import fails and the skill scores what a stub does."""

import gc

WORKER = [o for o in gc.get_objects() if getattr(o, "__name__", "") == "autograder.sandbox.worker"]
