"""Rows that share one prompt (a group's first turns) are computed with the prompt once: the same logprobs and the
same gradient as the same rows left-padded one by one (learner/samples.py: micro_batches, collate_shared)."""

from __future__ import annotations

import pytest
import torch

from learner.algos import policy_loss, token_logprobs
from learner.samples import Sample, batch_logits, collate, collate_shared, micro_batches, shared_prompt


def _row(prompt: list[int], completion: list[int], adv: float = 1.0) -> Sample:
    n = len(completion)
    return Sample(
        input_ids=prompt + completion,
        loss_mask=[0] * len(prompt) + [1] * n,
        advantage=adv,
        sampling_logprobs=[-0.25 * (k + 1) for k in range(n)],
    )


PROMPT = [1, 17, 250, 3003, 42, 9, 77, 512] * 6  # 48 tokens
ROWS = [_row(PROMPT, [11, 12, 13], 1.5), _row(PROMPT, [21, 22, 23, 24, 25], -0.5), _row(PROMPT, [31], -1.0)]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from common.models import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "m")
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)


def _grads_and_logprobs(model, batch) -> tuple[list[torch.Tensor], list[list[float]]]:
    model.zero_grad(set_to_none=True)
    lp = token_logprobs(batch_logits(model, batch), batch.targets)
    loss, _ = policy_loss(lp, lp.detach(), batch.advantages, batch.mask, 0.2)
    loss.backward()
    rows = [lp[r][batch.mask[r] > 0].tolist() for r in range(lp.shape[0])]
    return [p.grad.clone() for p in model.parameters()], rows


def test_a_shared_prompt_batch_gives_the_same_logprobs_and_gradient_as_padded_rows(model):
    assert shared_prompt(ROWS) and not shared_prompt(ROWS[:1])
    shared = collate_shared(ROWS, pad_id=0)
    assert shared.prompt_ids.shape == (1, len(PROMPT)) and shared.input_ids.shape == (3, 5)
    assert shared.mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]]
    assert shared.sampling_logprobs[1].tolist() == [-0.25, -0.5, -0.75, -1.0, -1.25]
    g_shared, lp_shared = _grads_and_logprobs(model, shared)
    g_plain, lp_plain = _grads_and_logprobs(model, collate(ROWS, pad_id=0))
    for a, b in zip(lp_shared, lp_plain, strict=True):
        assert a == pytest.approx(b, abs=1e-5)
    assert any(float(g.abs().sum()) > 0 for g in g_plain)
    for a, b in zip(g_shared, g_plain, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_micro_batches_put_rows_of_one_prompt_together_and_pack_the_rest():
    other = [_row([5, 6, 7, 8], [9, 10]), _row([5, 6, 7], [9]), _row([2] * 30, [3, 4])]
    rows = [other[0], ROWS[0], other[1], ROWS[1], ROWS[2], other[2]]
    parts = micro_batches(rows, token_budget=64, share_prompts=True)
    assert sorted(i for p in parts for i in p) == list(range(6))  # every row once
    assert parts[0] == [1, 3, 4] and shared_prompt([rows[i] for i in parts[0]])
    assert all(not shared_prompt([rows[i] for i in p]) for p in parts[1:])
    # a prompt group over the budget splits into shared parts; a lone leftover row joins the packing
    tight = micro_batches(ROWS, token_budget=len(PROMPT) + 10, share_prompts=True)
    assert sorted(i for p in tight for i in p) == [0, 1, 2] and [0, 1] in tight
    assert micro_batches(rows, 64) == micro_batches(rows, 64, share_prompts=False)
