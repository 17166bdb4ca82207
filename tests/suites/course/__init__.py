"""Course data shared by the grading suites: the lessons' worked examples and numbers
(``week07``), and the one tolerance table (``tolerances``). Shipped to students with the
visible suites; holds nothing that is not already printed in the lessons."""
