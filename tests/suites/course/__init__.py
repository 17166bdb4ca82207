"""Course data shared by the grading suites: the lessons' worked examples and numbers
(``week07``), the one tolerance table (``tolerances``) and each skill's glue
(``<skill>_data``), shipped to students with the visible suites and holding nothing that is
not already printed in the lessons; and ``oracles`` (formulas that re-implement exercise
functions), which only hidden suites and snapshot cases import, so it never ships."""
