"""Attack: never return. The worker is killed from outside at the call timeout."""


def project_qkv(x, w_q, w_k, w_v):
    while True:
        pass


def attention_scores(q, k):
    while True:
        pass
