"""Attack: raise KeyboardInterrupt (a BaseException) to abort the test run."""


def project_qkv(x, w_q, w_k, w_v):
    raise KeyboardInterrupt


def attention_scores(q, k):
    raise SystemExit(0)


class Escape(BaseException):
    pass


def scale_scores(scores, d_k):
    raise Escape("bye")
