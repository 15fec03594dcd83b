"""Micro-batches as prefix trees (learner/samples.py: micro_batches, collate_tree): what rows share is computed
once (a group's one prompt; the prompts' common prefix), and the logprobs and the gradient are those of the same
rows left-padded one by one."""

from __future__ import annotations

import pytest
import torch

from learner.algos import policy_loss, token_logprobs
from learner.samples import (
    TREE_WORK_SHARE,
    Sample,
    batch_logits,
    collate,
    collate_tree,
    layout,
    micro_batches,
    tree_work,
)


def _row(prompt: list[int], completion: list[int], adv: float = 1.0) -> Sample:
    n = len(completion)
    return Sample(
        input_ids=prompt + completion,
        loss_mask=[0] * len(prompt) + [1] * n,
        advantage=adv,
        sampling_logprobs=[-0.25 * (k + 1) for k in range(n)],
    )


SYSTEM = [1, 17, 250, 3003, 42, 9, 77, 512] * 3  # 24 tokens every prompt below starts with
PROMPT = SYSTEM + [60, 61, 62, 63] * 6  # 48 tokens
ROWS = [_row(PROMPT, [11, 12, 13], 1.5), _row(PROMPT, [21, 22, 23, 24, 25], -0.5), _row(PROMPT, [31], -1.0)]
# other pages after the same system prompt: one shorter, one longer, one that is the system prompt plus one token
OTHERS = [
    _row(SYSTEM + [70, 71, 72], [41, 42], 0.5),
    _row(SYSTEM + [80] * 30, [51, 52, 53, 54], -1.5),
    _row(SYSTEM + [90], [61], 2.0),
]


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


def _same_as_padded_rows(model, rows: list[Sample]) -> None:
    g_tree, lp_tree = _grads_and_logprobs(model, collate_tree(rows, pad_id=0))
    g_plain, lp_plain = _grads_and_logprobs(model, collate(rows, pad_id=0))
    for a, b in zip(lp_tree, lp_plain, strict=True):
        assert len(a) == len(b) and a == pytest.approx(b, abs=1e-5)
    assert any(float(g.abs().sum()) > 0 for g in g_plain)
    for a, b in zip(g_tree, g_plain, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_rows_of_one_prompt_compute_it_once_with_the_logprobs_and_gradient_of_padded_rows(model):
    tree = collate_tree(ROWS, pad_id=0)
    # the root is the prompt but its last token, which starts every row's tail
    assert tree.tree.root.shape == (1, len(PROMPT) - 1) and tree.tree.mids.shape == (1, 0)
    assert tree.input_ids.shape == (3, 6) and tree.tree.owner.tolist() == [0, 0, 0]
    assert tree.mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]]
    assert tree.sampling_logprobs[1].tolist() == [-0.25, -0.5, -0.75, -1.0, -1.25]
    assert tree_work(ROWS) == len(PROMPT) - 1 + 3 * 6
    _same_as_padded_rows(model, ROWS)


def test_prompts_share_their_common_prefix_once_with_the_logprobs_and_gradient_of_padded_rows(model):
    rows = [ROWS[0], OTHERS[0], ROWS[1], OTHERS[1], OTHERS[2]]
    tree = collate_tree(rows, pad_id=0)
    # four prompts; their common prefix is SYSTEM, each one's middle the rest of it without its last token
    assert tree.tree.root.tolist() == [SYSTEM] and tree.tree.owner.tolist() == [0, 1, 0, 2, 3]
    assert tree.tree.mids.shape == (4, 30 - 1) and tree.tree.mid_attention[3].sum() == len(SYSTEM)
    assert tree_work(rows) == len(SYSTEM) + 4 * 29 + 5 * 6
    _same_as_padded_rows(model, rows)


def test_prompts_without_a_common_prefix_are_a_tree_without_root(model):
    rows = [_row([5, 6, 7, 8], [9, 10], 1.0), _row([2] * 30, [3, 4], -1.0), _row([2] * 30, [7], 0.5)]
    tree = collate_tree(rows, pad_id=0)
    assert tree.tree.root is None and tree.tree.mids.shape == (2, 29)
    _same_as_padded_rows(model, rows)
    single_token_prompts = [
        _row([5], [9, 10], 1.0),
        _row([6], [3], -1.0),
    ]  # no root, no middles: the tails alone
    assert collate_tree(single_token_prompts, pad_id=0).tree.mids.shape == (2, 0)
    _same_as_padded_rows(model, single_token_prompts)


def test_a_row_without_prompt_is_refused():
    with pytest.raises(ValueError, match="prompt before"):
        collate_tree([Sample(input_ids=[3, 4], loss_mask=[1, 1]), ROWS[0]], pad_id=0)


def test_micro_batches_pack_prefix_trees_within_the_budget():
    rows = [OTHERS[0], ROWS[0], OTHERS[1], ROWS[1], ROWS[2], OTHERS[2]]
    one = micro_batches(rows, token_budget=10**6, share_prompts=True)
    assert len(one) == 1 and sorted(one[0]) == list(range(6))
    # longest prompt first, the rows of one prompt together
    assert one[0] == [2, 1, 3, 4, 0, 5]
    for budget in (40, 70, 120, 160):
        parts = micro_batches(rows, token_budget=budget, share_prompts=True)
        assert sorted(i for p in parts for i in p) == list(range(6))  # every row once
        for p in parts:
            assert len(p) == 1 or tree_work([rows[i] for i in p]) <= budget
    # a prompt whose rows exceed the budget together is split; each part still holds the prompt once
    tight = micro_batches(ROWS, token_budget=len(PROMPT) + 12, share_prompts=True)
    assert tight == [[0, 1], [2]]
    # without sharing: left-padded rows, rows * longest <= budget, longest first
    assert micro_batches(rows, 64) == [[2], [3], [1], [4], [0, 5]]


def test_layout_picks_prefix_trees_only_where_they_save_their_cost():
    budget = 10**6
    # a group's first turns on one prompt: the trees compute it once, far under the padded rows' work
    parts, tree = layout(ROWS, budget, share_prompts=True)
    assert tree and parts == micro_batches(ROWS, budget, share_prompts=True)
    # distinct pages of the same length after a short common prefix (BC's rows): the trees would save less than
    # their extra forward calls cost, so the rows stay padded rows
    pages = [_row([1, 2] + [100 + 50 * k + j for j in range(48)], [7, 8]) for k in range(4)]
    rows_work = 4 * 52
    assert tree_work(pages) > TREE_WORK_SHARE * rows_work
    parts, tree = layout(pages, budget, share_prompts=True)
    assert not tree and parts == micro_batches(pages, budget)
    # off: always padded rows; a lone row is a padded row
    assert layout(ROWS, budget) == (micro_batches(ROWS, budget), False)
    assert layout(ROWS[:1], budget, share_prompts=True) == ([[0]], False)
