"""Generated tokenised training rows (the shape ``tokenize_token_task`` / ``tokenize_sentence_task`` give) for
tests of training, scoring and the bandit on tiny models."""

from __future__ import annotations

import torch


def token_rows(n: int = 48, seed: int = 0) -> list[dict]:
    """``n`` token-task rows of 4-9 tokens with labels 0-2 (the first token unlabelled, -100)."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        ids = torch.randint(5, 20, (int(torch.randint(4, 10, (1,), generator=g)),), generator=g).tolist()
        labels = [i % 3 for i in ids]
        labels[0] = -100
        rows.append({"input_ids": ids, "attention_mask": [1] * len(ids), "labels": labels})
    return rows


def sentence_rows(n: int = 48, seed: int = 1) -> list[dict]:
    """``n`` sentence-task rows of 6 tokens, labelled by whether the first id is at least 60."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for _ in range(n):
        ids = torch.randint(5, 120, (6,), generator=g).tolist()
        rows.append({"input_ids": ids, "attention_mask": [1] * 6, "labels": int(ids[0] >= 60)})
    return rows
