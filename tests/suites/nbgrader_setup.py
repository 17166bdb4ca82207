# Week 7 §1, §4, §16: the two prompts A = [我, 喜欢] and B = [猫, 喜欢], in float64
SQRT2 = math.sqrt(2.0)
W7_X = torch.tensor([[[1.0, 0, 0, 0], [0, 1, 0, 0]], [[0, 0, 1, 0], [0, 1, 0, 0]]], dtype=torch.float64)
W7_WQ = torch.tensor([[0.5, 0.5], [1.0, 1.0], [-0.5, 0.5], [0.0, 0.0]], dtype=torch.float64)
W7_WK = torch.tensor([[0.8 * SQRT2, 0.0], [0.2 * SQRT2, 0.2 * SQRT2], [0.0, 0.1 * SQRT2], [0.0, 0.0]], dtype=torch.float64)
W7_WV = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
W7_WVOCAB = torch.tensor([[0.0, 1, 2, -1, 0], [0.0, 0, 0, 1, 0]], dtype=torch.float64)  # vocabulary 我, 喜欢, AI, 学习, 猫
W7_TARGETS = torch.tensor([2, 0])  # A → AI, B → 我
