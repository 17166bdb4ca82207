"""What the nbgrader notebooks test, skill by skill (instructors only).

nbgrader runs test cells in the student's own kernel, so our sandbox and suites cannot run
there: each notebook gets compact value checks instead. A check is a call (and the
statements that build its inputs) that runs as written in the notebook; its expected value
is computed at release time by running the same code against the reference solution and
is embedded as a literal (the snapshot approach), so no test cell re-implements an
exercise. Visible checks use the lessons' worked examples; hidden checks (other shapes,
leading dimensions, masks, dtypes, errors) go in ``### BEGIN HIDDEN TESTS`` blocks.

Names available to every check come from the locked setup cell
(``templates/nbgrader_setup.py``): ``W7_*`` (Week 7's example), ``rand``, ``rand_bool``,
``grads``, ``raises``, ``load_weights`` (parameters by name; buffers keep their own), ``torch``, ``math``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    call: str  # an expression: what the student's code returns
    setup: str = ""  # statements that build the inputs
    rtol: float = 1e-6
    atol: float = 1e-8


@dataclass(frozen=True)
class Target:
    name: str  # the exercise function or class the cell tests
    cite: str  # the lesson section, shown in the cell
    visible: tuple[Check, ...]
    hidden: tuple[Check, ...]


def C(call: str, setup: str = "", **tol: float) -> Check:
    return Check(call, setup, **tol)


#: (citation, the lesson's heading and a short passage): quoted in each notebook's first cell
LESSON: dict[str, list[tuple[str, str]]] = {
    "qkv": [
        ("Week 7 §4", "从 XW 得到 Q、K、V，再计算 Raw Scores — 这里的 W 仍是全局共享矩阵，并不是为每个 Token 单独写一套规则。"),
        ("Week 7 §8", "为什么除以 √d_k，而不是 d_k — 除以 √d_k 可以把典型 Score Scale 拉回较稳定的范围。"),
        ("Week 7 §13", "可复用的 Causal Attention Head"),
    ],
    "masks": [
        ("Week 7 §10", "为什么 GPT 需要 Causal Mask — 位置 t=0 应只根据“我”预测“喜欢”。"),
        ("Week 7 §11", "为什么 Mask 在 Softmax 前使用 −∞ — 0 是合法 Score，不等于“移除候选”；−∞ 的指数才是 0。"),
        ("Day 1 §3.4", "整行被掩的陷阱：左补齐 + 因果掩码 — 某一行被整行屏蔽时，softmax 算出 0/0 = NaN。"),
    ],
    "row_softmax": [
        ("Week 7 §5", "从 Scores 到 Attention Weights — Prompt A 从 [1.131, 0.566] 得到 [0.8, 0.4]。"),
        ("Week 7 §16", "Attention Output 怎样影响最终 Logits"),
    ],
    "custom_backward": [
        ("Day 1 §2.3", "反向传播：索引级推导 — S = s·QKᵀ (s = 1/√d_k)，A = softmax_row(S)，Y = AV。"),
        ("Day 1 §B", "参考实现：先自己写，再对照。"),
    ],
    "mha_reshape": [
        ("Week 7 §15", "Multi-Head Attention 与 Output Projection — C=4, n_head=2, d_head=C/n_head=2。"),
        ("Day 1 §4.3", "形式化与形状 — MHA(X) = Concat(head_1, …, head_h) W_O。"),
        ("Week 7 §17", "Attention 的计算成本 — 所有 Batch Examples 和 Heads 合计拥有 B×n_head×T² 个 Score Elements。"),
        ("Day 1 §5.1", "FLOPs"),
    ],
    "sdpa_masks": [
        ("Day 1 §A.1", "F.scaled_dot_product_attention（SDPA）— bool（True = 参与注意力！）或 float（加到分数上）。"),
        ("Day 1 §A.3", "掩码约定对照表 ★ — nn.MultiheadAttention(attn_mask=) 的 True 表示不允许参与。"),
    ],
}

_W7_SCALED = "(W7_X @ W7_WQ) @ (W7_X @ W7_WK).transpose(-2, -1) / SQRT2"
_TRIL2 = "torch.ones(2, 2, dtype=torch.bool).tril()"

TARGETS: dict[str, list[Target]] = {
    "qkv": [
        Target(
            "project_qkv",
            "Week 7 §2–§4",
            (C("project_qkv(W7_X, W7_WQ, W7_WK, W7_WV)"),),
            (C("project_qkv(rand(3, 5, 6, seed=1), rand(6, 4, seed=2), rand(6, 4, seed=3), rand(6, 3, seed=4))"),),
        ),
        Target(
            "attention_scores",
            "Week 7 §4, §9",
            (C("attention_scores(W7_X @ W7_WQ, W7_X @ W7_WK)"),),
            (C("attention_scores(rand(2, 3, 4, 5, seed=5), rand(2, 3, 6, 5, seed=6))"),),
        ),
        Target(
            "scale_scores",
            "Week 7 §8",
            (C("scale_scores((W7_X @ W7_WQ) @ (W7_X @ W7_WK).transpose(-2, -1), 2)"),),
            (C("scale_scores(rand(2, 4, 5, seed=7), 64)"), C("scale_scores(rand(3, 3, seed=8), 3)")),
        ),
        Target(
            "weighted_values",
            "Week 7 §6",
            (C("weighted_values(torch.tensor([[0.6, 0.4], [0.25, 0.75]], dtype=torch.float64), W7_X[0] @ W7_WV)"),),
            (C("weighted_values(torch.softmax(rand(2, 3, 6, seed=9), -1), rand(2, 6, 4, seed=10))"),),
        ),
        Target(
            "causal_uniform_mean",
            "Week 7 §1",
            (C("causal_uniform_mean(W7_X)"),),
            (C("causal_uniform_mean(rand(2, 3, 5, 4, seed=11))"),),
        ),
        Target(
            "single_head_attention",
            "Week 7 §7, §12",
            (C("single_head_attention(W7_X, W7_WQ, W7_WK, W7_WV)"),),
            (
                C("single_head_attention(rand(2, 5, 6, seed=12), rand(6, 3, seed=13), rand(6, 3, seed=14), rand(6, 4, seed=15))"),
                C(
                    "single_head_attention(rand(2, 5, 6, seed=16), rand(6, 3, seed=17), rand(6, 3, seed=18), "
                    "rand(6, 4, seed=19), causal=False)"
                ),
            ),
        ),
        Target(
            "AttentionHead",
            "Week 7 §13",
            (
                C(
                    "head(W7_X)",
                    "head = load_weights(AttentionHead(4, 2, 3).double(), "
                    '{"query.weight": W7_WQ.T, "key.weight": W7_WK.T, "value.weight": W7_WV.T})',
                ),
            ),
            (
                C(
                    "head(rand(3, 5, 6, seed=20))",
                    "head = load_weights(AttentionHead(6, 4, 8).double(), "
                    '{"query.weight": rand(4, 6, seed=21), "key.weight": rand(4, 6, seed=22), '
                    '"value.weight": rand(4, 6, seed=23)})',
                ),
                C("raises(AttentionHead(4, 2, 3).double(), rand(1, 4, 4, seed=24))"),
            ),
        ),
    ],
    "masks": [
        Target(
            "causal_mask", "Week 7 §10", (C("causal_mask(2)"), C("causal_mask(4)")), (C("causal_mask(7)"), C("causal_mask(1)"))
        ),
        Target(
            "apply_mask",
            "Week 7 §11",
            (C(f"apply_mask({_W7_SCALED}, {_TRIL2})"),),
            (
                C("apply_mask(rand(2, 3, 4, seed=30), rand_bool(3, 4, seed=31), fill=-1e9)"),
                C("apply_mask(rand(2, 2, 3, 3, seed=32), rand_bool(2, 1, 1, 3, seed=33))"),
            ),
        ),
        Target(
            "padding_allowed",
            "Day 1 §3.2",
            (C("padding_allowed([2, 1], 3)"), C("padding_allowed(torch.tensor([2, 1]), 3, left_padded=True)")),
            (C("padding_allowed([0, 5, 3], 5)"), C("padding_allowed(torch.tensor([0, 5, 3]), 5, left_padded=True)")),
        ),
        Target(
            "combine_masks",
            "Day 1 §3.4",
            (
                C(
                    "combine_masks(torch.ones(3, 3, dtype=torch.bool).tril(), torch.tensor([[True, True, False], "
                    "[False, True, True]]))"
                ),
            ),
            (C("combine_masks(rand_bool(4, 6, seed=34), rand_bool(3, 6, seed=35))"),),
        ),
        Target(
            "masked_softmax",
            "Week 7 §11, Day 1 §3.4",
            (
                C(f"masked_softmax({_W7_SCALED}, {_TRIL2})"),
                C(
                    "masked_softmax(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64), "
                    "torch.tensor([[False, False], [True, False]]))"
                ),
            ),
            (
                C("masked_softmax(rand(2, 3, 5, seed=36) * 10, rand_bool(3, 5, seed=37))"),
                C(
                    "grads(lambda s: masked_softmax(s, torch.tensor([[True, False, True], [False, False, False]])), "
                    "rand(2, 3, seed=38))"
                ),
            ),
        ),
        Target(
            "prefix_lm_mask",
            "Day 1 §3.5",
            (C("prefix_lm_mask(4, 2)"),),
            (C("prefix_lm_mask(6, 0)"), C("prefix_lm_mask(6, 6)"), C("prefix_lm_mask(7, 3)")),
        ),
        Target(
            "document_mask",
            "Day 1 §3.5",
            (C("document_mask(torch.tensor([0, 0, 1, 1, 1]))"),),
            (C("document_mask(torch.tensor([[0, 0, 1, 2], [3, 3, 3, 4]]))"),),
        ),
    ],
    "row_softmax": [
        Target(
            "softmax_rows",
            "Week 7 §5",
            (
                C("softmax_rows(torch.tensor([[0.8, 0.4], [0.1, 0.4]], dtype=torch.float64))"),
                C("softmax_rows(torch.tensor([[1e4, 0.0, -1e4], [0.2, -math.inf, 0.0]], dtype=torch.float64))"),
            ),
            (
                C("softmax_rows(rand(3, 4, 5, seed=40) * 50, dim=1)"),
                C("softmax_rows(rand(2, 6, seed=41).float())", rtol=1e-5, atol=1e-6),
            ),
        ),
        Target(
            "log_softmax_rows",
            "Week 7 §16",
            (C("log_softmax_rows(torch.tensor([[0.0, 0.598688, 1.197375, -0.197375, 0.0]], dtype=torch.float64))"),),
            (C("log_softmax_rows(rand(2, 3, 4, seed=42) * 1000, dim=0)"),),
        ),
        Target(
            "cross_entropy",
            "Week 7 §16",
            (
                C(
                    "cross_entropy(torch.tensor([[0.0, 0.598688, 1.197375, -0.197375, 0.0], [0.0, -0.425557, "
                    "-0.851115, 1.0, 0.0]], dtype=torch.float64), W7_TARGETS)"
                ),
            ),
            (C("cross_entropy(rand(6, 9, seed=43) * 20, torch.tensor([0, 8, 3, 3, 1, 5]))"),),
        ),
        Target(
            "vocab_probs",
            "Week 7 §16",
            (C("vocab_probs(torch.tensor([[0.598688, 0.401312], [-0.425557, 0.574443]], dtype=torch.float64), W7_WVOCAB)"),),
            (C("vocab_probs(rand(2, 3, 4, seed=44), rand(4, 7, seed=45))"),),
        ),
    ],
    "custom_backward": [
        Target(
            "softmax_backward",
            "Day 1 §2.3",
            (
                C(
                    "softmax_backward(torch.tensor([[1.0, -1.0], [0.5, 0.25]], dtype=torch.float64), "
                    "torch.tensor([[0.6, 0.4], [0.25, 0.75]], dtype=torch.float64))"
                ),
            ),
            (C("softmax_backward(rand(2, 3, 4, seed=50), torch.softmax(rand(2, 3, 4, seed=51), -1))"),),
        ),
        Target(
            "attention_backward",
            "Day 1 §2.3",
            (
                C(
                    "attention_backward(torch.ones(2, 2, 2, dtype=torch.float64), q, k, v, torch.softmax(q @ "
                    "k.transpose(-2, -1) / SQRT2, -1), 1 / SQRT2)",
                    "q, k, v = W7_X @ W7_WQ, W7_X @ W7_WK, W7_X @ W7_WV",
                ),
            ),
            (
                C(
                    "attention_backward(rand(2, 5, 3, seed=52), q, k, v, torch.softmax(0.5 * q @ k.transpose(-2, -1), -1), 0.5)",
                    "q, k, v = rand(2, 5, 4, seed=53), rand(2, 6, 4, seed=54), rand(2, 6, 3, seed=55)",
                ),
            ),
        ),
        Target(
            "AttentionFunction",
            "Day 1 §B",
            (C("AttentionFunction.apply(W7_X @ W7_WQ, W7_X @ W7_WK, W7_X @ W7_WV, None)"),),
            (
                C(
                    "grads(lambda q, k, v: AttentionFunction.apply(q, k, v, rand_bool(5, 6, seed=56) | "
                    "(torch.arange(6) == 0)), rand(2, 5, 4, seed=57), rand(2, 6, 4, seed=58), rand(2, 6, 3, "
                    "seed=59))"
                ),
            ),
        ),
        Target(
            "attention",
            "Day 1 §B",
            (C("grads(attention, W7_X @ W7_WQ, W7_X @ W7_WK, W7_X @ W7_WV)"),),
            (
                C(
                    "grads(lambda q, k, v: attention(q, k, v, torch.ones(4, 4, dtype=torch.bool).tril()), rand(3, "
                    "4, 5, seed=60), rand(3, 4, 5, seed=61), rand(3, 4, 2, seed=62))"
                ),
            ),
        ),
    ],
    "mha_reshape": [
        Target(
            "split_heads",
            "Week 7 §15, Day 1 §A.5",
            (C("split_heads(W7_X, 2)"),),
            (C("split_heads(rand(2, 3, 12, seed=70), 4)"), C("raises(split_heads, rand(1, 2, 6, seed=71), 4)")),
        ),
        Target(
            "merge_heads",
            "Week 7 §15, Day 1 §A.5",
            (C("merge_heads(W7_X.reshape(2, 1, 2, 4))"),),
            (C("merge_heads(rand(2, 4, 3, 5, seed=72))"),),
        ),
        Target(
            "MultiHeadAttention",
            "Week 7 §15, Day 1 §4.3",
            (
                C(
                    "mha(W7_X, return_weights=True)",
                    "mha = MultiHeadAttention(4, 2, 2).double()\n"
                    "load_weights(mha, "
                    "{name: torch.eye(4, dtype=torch.float64) for name, _ in mha.named_parameters()})",
                ),
            ),
            (
                C(
                    "mha(rand(2, 5, 6, seed=73), key_allowed=torch.tensor([[True] * 5, [True, True, True, False, "
                    "False]]), return_weights=True)",
                    "mha = MultiHeadAttention(6, 3, 8).double()\n"
                    "load_weights(mha, "
                    "{name: rand(*p.shape, seed=74 + i) for i, (name, p) in enumerate(sorted(mha.named_parameters()))})",
                ),
                C("raises(MultiHeadAttention, 6, 4, 8)"),
            ),
        ),
        Target("score_elements", "Week 7 §17", (C("score_elements(2, 2, 2)"),), (C("score_elements(8, 12, 1024)"),)),
        Target("mha_flops", "Day 1 §5.1", (C("mha_flops(2, 4)"),), (C("mha_flops(4096, 768)"),)),
        Target(
            "attention_flop_fraction",
            "Day 1 §5.1",
            (C("attention_flop_fraction(2, 4)"),),
            (C("attention_flop_fraction(32768, 4096)"),),
        ),
        Target(
            "attention_matrix_gib",
            "Day 1 §5.2",
            (C("attention_matrix_gib(1, 32, 4096)"),),
            (C("attention_matrix_gib(4, 16, 8192, bytes_per_element=4, layers=24)"),),
        ),
        Target(
            "mha_param_count",
            "Week 7 §15",
            (C("mha_param_count(4)"), C("mha_param_count(4, bias=False)")),
            (C("mha_param_count(768)"),),
        ),
    ],
    "sdpa_masks": [
        Target(
            "blocked_to_sdpa",
            "Day 1 §A.3",
            (C("blocked_to_sdpa(torch.ones(3, 3, dtype=torch.bool).triu(1))"),),
            (C("blocked_to_sdpa(rand_bool(2, 4, 5, seed=80))"),),
        ),
        Target(
            "to_additive_mask",
            "Day 1 §A.3",
            (C("to_additive_mask(torch.ones(3, 3, dtype=torch.bool).tril())"),),
            (C("to_additive_mask(rand_bool(2, 4, 5, seed=81), dtype=torch.float64)"),),
        ),
        Target(
            "to_mha_attn_mask",
            "Day 1 §A.3",
            (C("to_mha_attn_mask(torch.ones(3, 3, dtype=torch.bool).tril())"),),
            (C("to_mha_attn_mask(rand_bool(4, 6, seed=82))"),),
        ),
        Target(
            "hf_to_sdpa_mask",
            "Day 1 §A.1",
            (C("hf_to_sdpa_mask(torch.tensor([[0, 1, 1], [1, 1, 1]]))"),),
            (C("hf_to_sdpa_mask(torch.tensor([[1, 1, 0, 0], [0, 2, 1, 1]]), causal=False)"),),
        ),
        Target("kv_cache_mask", "Day 1 §A.4", (C("kv_cache_mask(2, 4)"),), (C("kv_cache_mask(1, 5)"), C("kv_cache_mask(4, 4)"))),
        Target(
            "sdpa",
            "Day 1 §A.1",
            (C("sdpa(W7_X @ W7_WQ, W7_X @ W7_WK, W7_X @ W7_WV, causal=True)"),),
            (
                C("sdpa(rand(2, 3, 4, seed=83), rand(2, 6, 4, seed=84), rand(2, 6, 5, seed=85), causal=True)"),
                C(
                    "sdpa(rand(2, 3, 4, seed=86), rand(2, 6, 4, seed=87), rand(2, 6, 5, seed=88), "
                    "allowed=rand_bool(3, 6, seed=89) | (torch.arange(6) == 0), causal=True, dropout_p=0.5, "
                    "training=False)"
                ),
            ),
        ),
        Target(
            "mha_self_attention",
            "Day 1 §A.2",
            (
                C(
                    "mha_self_attention(module, W7_X, allowed=torch.ones(2, 2, dtype=torch.bool).tril())",
                    "torch.manual_seed(0)\nmodule = torch.nn.MultiheadAttention(4, 2, batch_first=True).double()",
                ),
            ),
            (
                C(
                    "mha_self_attention(module, rand(2, 5, 6, seed=90), key_allowed=torch.tensor([[True] * 5, "
                    "[False, True, True, True, True]]))",
                    "torch.manual_seed(1)\nmodule = torch.nn.MultiheadAttention(6, 3).double()",
                ),
            ),
        ),
    ],
}
