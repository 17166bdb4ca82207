"""Attack: exhaust memory."""
import torch


def project_qkv(x, w_q, w_k, w_v):
    hog = torch.empty(50 * 2**30 // 4)  # 50 GiB of float32
    return hog, hog, hog


def attention_scores(q, k):
    blocks = []
    while True:
        blocks.append(bytearray(256 * 2**20))
