"""Attack: kill the process with status 0 from inside a graded function."""
import os


def project_qkv(x, w_q, w_k, w_v):
    os._exit(0)


def scale_scores(scores, d_k):
    os._exit(0)
