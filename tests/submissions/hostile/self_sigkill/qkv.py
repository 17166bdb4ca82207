"""Fault: the worker is killed (SIGKILL) in the middle of a test, by itself."""
import os
import signal

import torch


def project_qkv(x, w_q, w_k, w_v):
    os.kill(os.getpid(), signal.SIGKILL)


def attention_scores(q, k):
    os.kill(os.getpid(), signal.SIGSEGV)


def scale_scores(scores, d_k):
    import ctypes
    ctypes.string_at(0)  # a real segmentation fault
