"""Training rows built token-exactly from Turns, grouped into micro-batches by a token budget.

One Sample = one Turn: its exact prompt ids then its exact completion ids (never re-tokenized), with the loss mask of
`Turn.loss_mask` (1 only on generated tokens). Micro-batches are left-padded so that every row's completion sits at
the right edge: the model then only has to project the last K hidden states to the vocabulary (`logits_to_keep`),
which on a 49k vocabulary is most of the saving on long prompts with short actions. With `learner.share_prompts`
a micro-batch is a prefix tree instead (`collate_tree`): what its rows share (a group's one first page, every
prompt's system prompt) is computed once and its KV passed on, so the learner's work is the tree's, not the rows'.
`layout` picks the trees only for a batch where they save more work than their extra forward calls cost.

RL rows carry their advantage (the trajectory's, or with `rl.advantage: step` the turn's, see
learner.algos.step_advantages), their M-GRPO weight and whether they are off-policy (expert-played).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from common.records import Observation, Trajectory, TrajectoryGroup, Turn
from learner.algos import AdvantageStats, grpo_advantages, mgrpo_sample_weights, step_advantages


@dataclass
class Sample:
    """One training row."""

    input_ids: list[int]  # [L] prompt ids + completion ids, exactly as the engine saw / produced them
    loss_mask: list[int]  # [L] 1 on generated tokens
    advantage: float = 0.0  # RL: the trajectory's advantage (+ omega * the turn's step one); unused in BC
    weight: float = 1.0  # M-GRPO weight (see algos.mgrpo_sample_weights)
    # [C] engine logprobs, for the mismatch report and the importance weights of lagged turns
    sampling_logprobs: list[float] = field(default_factory=list)
    where: str = ""  # "task#sample/turn", for error messages
    version: int = 0  # the weight version that sampled the turn
    lag: int = 0  # weight versions between the sampler's and the learner's (scheduling.overlap_with_learner)
    # RL: an expert-played turn (Trajectory.source == "expert"), sampled by no engine: no clip, no importance
    # weight, lag 0, left out of the mismatch statistic (see learner/algos.py)
    off_policy: bool = False

    @classmethod
    def from_turn(cls, turn: Turn, where: str = "", **kw: Any) -> Sample:
        return cls(
            input_ids=list(turn.prompt_ids) + list(turn.completion_ids),
            loss_mask=turn.loss_mask,
            sampling_logprobs=list(turn.logprobs),
            where=where,
            version=int(turn.weight_version),
            **kw,
        )

    @property
    def trained_tokens(self) -> int:
        return sum(self.loss_mask[1:])  # the first token has no predictor

    @property
    def prompt_len(self) -> int:
        """P: the tokens before the first trained one (the turn's prompt; the completion follows)."""
        return next((i for i, m in enumerate(self.loss_mask) if m), len(self.loss_mask))


def _turn_samples(
    traj: Trajectory,
    max_len: int,
    skipped: dict[str, int],
    advantages: Sequence[float] | None = None,
    **kw: Any,
) -> list[Sample]:
    """The trainable rows of `traj`'s turns (`advantages`: [T] one per turn, when given); empty completions and
    over-long turns are counted in `skipped`."""
    out = []
    for j, turn in enumerate(traj.turns):
        where = f"{traj.id}/turn{turn.index}"
        if not turn.completion_ids:
            skipped["empty_completion"] += 1
            continue
        if not turn.prompt_ids:
            raise ValueError(
                f"{where}: the turn has no prompt_ids; trajectories must carry the exact prompt ids "
                "(build them with common.prompts) before training"
            )
        if len(turn.prompt_ids) + len(turn.completion_ids) > max_len:
            skipped["too_long"] += 1
            continue
        extra = {"advantage": advantages[j]} if advantages is not None else {}
        out.append(Sample.from_turn(turn, where=where, **extra, **kw))
    return out


def anchor_key(obs: Observation) -> str:
    """A stable key of the page a turn saw (its anchor state): sha1 of its URL, title and full text. The prompt
    shows that page cut to the token budget, a function of the text, so equal keys mean equal page text in the
    prompt. The header fold (`prompt.fold_header`) also depends on the previous page; the key leaves it out on
    purpose: the state is the page, not the path to it."""
    blob = json.dumps([obs.url, obs.title, obs.text], ensure_ascii=False)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()


def _turn_advantages(
    trajs: Sequence[Trajectory],
    gids: Sequence[Hashable],
    traj_adv: Sequence[float | None],
    eps: float,
    omega: float,
    stats: AdvantageStats,
) -> list[list[float] | None]:
    """[N][T_i] per-turn advantages A_traj + omega * A_step (None for an unscorable trajectory); the anchor
    counts go into `stats.anchors`."""
    keys = [[anchor_key(turn.observation) for turn in t.turns] for t in trajs]
    step, stats.anchors = step_advantages([t.reward for t in trajs], gids, keys, eps=eps)
    out: list[list[float] | None] = []
    for a, s in zip(traj_adv, step, strict=True):
        # a step advantage is None only where the trajectory's reward is, and then `a` is None too
        out.append(None if a is None else [a + omega * (x if x is not None else 0.0) for x in s])
    return out


def demo_samples(trajs: Sequence[Trajectory], max_len: int) -> tuple[list[Sample], dict[str, int]]:
    """BC rows: every turn of every demonstration with a completion; over-long turns are skipped and counted."""
    skipped = {"empty_completion": 0, "too_long": 0}
    samples = [s for t in trajs for s in _turn_samples(t, max_len, skipped)]
    return samples, skipped


def rl_samples(
    groups: Sequence[TrajectoryGroup],
    max_len: int,
    eps: float,
    keep_zero_advantage: bool,
    learner_version: int | None = None,
    advantage: str = "trajectory",
    step_weight: float = 1.0,
    credit_no_ops: bool = True,
    baseline: str = "task",
    negative_scale: float = 1.0,
) -> tuple[list[Sample], AdvantageStats, dict[str, int]]:
    """RL rows with their advantage, M-GRPO weight and off-policy flag; with `learner_version`, each row's lag
    (versions between the weights that sampled the turn and the learner's; 0 for expert turns).

    `advantage`: "trajectory" gives every turn its trajectory's group-relative advantage; "step" adds
    `step_weight` (omega) times the turn's step advantage over anchor states (learner.algos.step_advantages).
    Trajectories whose reward is None get no advantage and no rows. Rows with advantage 0 carry no policy gradient;
    they are dropped unless `keep_zero_advantage` (needed when a KL penalty acts on them) but their groups still
    count in the weights, as in the paper's batch average.
    `baseline`: "task" compares each trajectory with its group (GRPO); "template" with every trajectory of the
    batch whose group's task has the same template (`meta["template"]`; a group without one is its own template),
    so the advantage statistics then count templates, not groups. Step credit and the M-GRPO weights stay per group.
    `credit_no_ops=False`: a positive advantage of a turn that did nothing (`no_op_turns`) becomes 0 (counted in
    the third return value as `no_op_credit`).
    `negative_scale`: every negative per-turn advantage is multiplied by it (1 = GRPO, 0 = positive only).
    """
    if not 0.0 <= negative_scale <= 1.0:
        raise ValueError(f"negative_scale {negative_scale} is outside [0, 1]")
    if advantage not in ("trajectory", "step"):
        raise ValueError(f"unknown advantage {advantage!r} (trajectory | step)")
    if baseline not in ("task", "template"):
        raise ValueError(f"unknown baseline {baseline!r} (task | template)")
    for g in groups:
        if g.failed:
            raise ValueError(
                f"group of task {g.task_id} holds an infrastructure failure; re-run it, never train it"
            )
    trajs = [t for g in groups for t in g.trajectories]
    gids = [gi for gi, g in enumerate(groups) for _ in g.trajectories]
    bids = [template_of(g) for g in groups for _ in g.trajectories] if baseline == "template" else gids
    adv, stats = grpo_advantages([t.reward for t in trajs], bids, eps=eps)
    per_turn = (
        _turn_advantages(trajs, gids, adv, eps, step_weight, stats)
        if advantage == "step"
        else [None if a is None else [a] * len(t.turns) for t, a in zip(trajs, adv, strict=True)]
    )
    skipped = {"empty_completion": 0, "too_long": 0, "zero_advantage": 0, "no_op_credit": 0}
    if not credit_no_ops:
        for traj, a in zip(trajs, per_turn, strict=True):
            for t in no_op_turns(traj) if a is not None else ():
                if a[t] > 0:
                    a[t] = 0.0
                    skipped["no_op_credit"] += 1
    if negative_scale != 1.0:
        for a in per_turn:
            if a is not None:
                a[:] = [x * negative_scale if x < 0 else x for x in a]
    rows: list[tuple[Sample, Hashable, Hashable]] = []
    for ti, (traj, a, gi) in enumerate(zip(trajs, per_turn, gids, strict=True)):
        if a is None:
            continue
        expert = traj.source == "expert"
        rows += [(s, gi, ti) for s in _turn_samples(traj, max_len, skipped, a, off_policy=expert)]
    weights = mgrpo_sample_weights([r[1] for r in rows], [r[2] for r in rows])
    samples = []
    for (s, _, _), w in zip(rows, weights, strict=True):
        s.weight = w
        if learner_version is not None and not s.off_policy:  # no weights sampled an expert turn
            s.lag = max(0, learner_version - s.version)
        if s.advantage == 0.0 and not keep_zero_advantage:
            skipped["zero_advantage"] += 1
            continue
        samples.append(s)
    return samples, stats, skipped


def template_of(group: TrajectoryGroup) -> Hashable:
    """The template a group's task belongs to, as the rollout recorded it; a group without one stands alone."""
    for t in group.trajectories:
        if t.meta.get("template") is not None:
            return ("template", t.meta["template"])
    return ("task", group.task_id)


def no_op_turns(traj: Trajectory) -> list[int]:
    """Indices of the turns whose action did nothing: the next observation reports an action error, or shows the
    same page (`anchor_key`: URL, title, text) and the same tabs as the one the action was taken on. The last turn
    is never listed (its effect is the episode's end, which the reward judges)."""
    out = []
    for t, (now, nxt) in enumerate(itertools.pairwise(traj.turns)):
        a, b = now.observation, nxt.observation
        same = anchor_key(a) == anchor_key(b) and (a.tabs, a.active_tab) == (b.tabs, b.active_tab)
        if b.last_action_error or same:
            out.append(t)
    return out


def micro_batches(
    samples: Sequence[Sample], token_budget: int, *, share_prompts: bool = False
) -> list[list[int]]:
    """Indices of samples per micro-batch, each within `token_budget` tokens of work (a longer row goes alone).

    Plain (`share_prompts` off): left-padded rows, rows * longest row <= token_budget; longest first, greedy, so
    padding stays small because neighbours have similar lengths. With `share_prompts` the micro-batches are laid
    out as prefix trees (`collate_tree`): rows of one prompt (a group's first turns) hold it once, and the prompts
    of a micro-batch share their common prefix (the system prompt) once, so the work counted against the budget
    is `tree_work`: the prefix once, each prompt's rest once, each row's completion. Prompts are packed longest
    first; a prompt whose rows exceed the budget on their own is split over several micro-batches.
    """
    if share_prompts:
        return _tree_batches(samples, token_budget)
    batches: list[list[int]] = []
    for i in sorted(range(len(samples)), key=lambda i: len(samples[i].input_ids), reverse=True):
        if batches:
            cur = batches[-1]
            if (len(cur) + 1) * len(samples[cur[0]].input_ids) <= token_budget:
                cur.append(i)
                continue
        batches.append([i])
    return batches


# A prefix tree runs up to three forward calls a micro-batch and hands each row the root's KV. On rows that share
# little that costs more than it saves: LearnerActor BC steps on real demonstrations, the two layouts alternating
# (6 steps each, 2-core AMD EPYC, 2026-12-07): the shop's pages (one system prompt shared, 764-token prompts) gave
# trees 0.94 of the padded rows' work and took 1.10x their time; MiniWoB++ pages (370-token prompts) 0.81 of the
# work and 0.89x the time. A batch is laid out as trees only when their work is at most this share of the rows'.
TREE_WORK_SHARE = 0.85


def layout(
    samples: Sequence[Sample], token_budget: int, *, share_prompts: bool = False
) -> tuple[list[list[int]], bool]:
    """The micro-batches of `samples` (`micro_batches`) and whether they are prefix trees (`collate_tree`): with
    `share_prompts`, trees when their work (`tree_work`, padding included) is at most `TREE_WORK_SHARE` of the
    left-padded rows' (RL batches, where a group's first turns share one prompt), else padded rows (BC on distinct
    pages)."""
    plain = micro_batches(samples, token_budget)
    if not share_prompts or len(samples) < 2:
        return plain, False
    trees = micro_batches(samples, token_budget, share_prompts=True)
    tree_cost = sum(tree_work([samples[i] for i in part]) for part in trees)
    plain_cost = sum(len(part) * max(len(samples[i].input_ids) for i in part) for part in plain)
    if tree_cost <= TREE_WORK_SHARE * plain_cost:
        return trees, True
    return plain, False


def _tree_batches(samples: Sequence[Sample], token_budget: int) -> list[list[int]]:
    by_prompt: dict[tuple[int, ...], list[int]] = {}
    for i, s in enumerate(samples):
        by_prompt.setdefault(_prompt(s), []).append(i)
    batches: list[list[int]] = []
    cur: _TreeSize | None = None
    for _, idx in sorted(by_prompt.items(), key=lambda kv: len(kv[0]), reverse=True):
        for i in idx:
            grown = cur.adding(samples[i]) if cur is not None else None
            if grown is not None and grown.work <= token_budget:
                cur = grown
                batches[-1].append(i)
            else:
                cur = _TreeSize.of(samples[i])
                batches.append([i])
    return batches


def _prompt(s: Sample) -> tuple[int, ...]:
    return tuple(s.input_ids[: s.prompt_len])


def _tail(s: Sample) -> int:
    """A row's tail in a tree: its prompt's last token and its completion."""
    return len(s.input_ids) - s.prompt_len + 1


@dataclass(frozen=True)
class _TreeSize:
    """The shape of a `collate_tree` micro-batch, grown one row at a time: its distinct prompts, the root's length
    S (their common prefix, short of the shortest prompt's last token), its rows and their longest tail."""

    first: tuple[int, ...]  # the first prompt: the root is a prefix of it
    prompts: frozenset[tuple[int, ...]]
    longest: int  # the longest prompt's length
    root: int
    rows: int
    tail: int

    @classmethod
    def of(cls, s: Sample) -> _TreeSize:
        p = _prompt(s)
        return cls(p, frozenset([p]), len(p), len(p) - 1, 1, _tail(s))

    @property
    def middle(self) -> int:
        """M: the longest prompt after the root, without its last token."""
        return self.longest - 1 - self.root

    @property
    def work(self) -> int:
        """Positions computed, padding included: the root once, N padded middles, B padded tails."""
        return self.root + len(self.prompts) * self.middle + self.rows * self.tail

    def adding(self, s: Sample) -> _TreeSize:
        grown = replace(self, rows=self.rows + 1, tail=max(self.tail, _tail(s)))
        p = _prompt(s)
        if p in self.prompts:
            return grown
        return replace(
            grown,
            prompts=self.prompts | {p},
            longest=max(self.longest, len(p)),
            root=min(self.root, len(p) - 1, _common_prefix(self.first, p)),
        )


def _tree_size(samples: Sequence[Sample]) -> _TreeSize:
    size = _TreeSize.of(samples[0])
    for s in samples[1:]:
        size = size.adding(s)
    return size


def tree_work(samples: Sequence[Sample]) -> int:
    """Positions a `collate_tree` micro-batch of these rows computes, padding included (`_TreeSize.work`)."""
    return _tree_size(samples).work


@dataclass
class PrefixTree:
    """How a `collate_tree` micro-batch computes its N prompts before the B rows' completions: `root` ([1, S], the
    prefix all N prompts share, None when S = 0) once, then each prompt's middle (`mids`, [N, M] left-padded: the
    prompt after the root without its last token) on the root's KV, then each row's tail on its own prompt's KV
    (`owner`: [B] the prompt index of each row)."""

    root: torch.Tensor | None  # [1, S]
    mids: torch.Tensor  # [N, M]
    mid_attention: torch.Tensor  # [N, S + M]
    mid_positions: torch.Tensor  # [N, M]
    owner: torch.Tensor  # [B]

    def to(self, device: torch.device | str) -> PrefixTree:
        return PrefixTree(**{k: (None if v is None else v.to(device)) for k, v in self.__dict__.items()})


@dataclass
class Batch:
    """Tensors of one left-padded micro-batch (B rows, L positions, K = positions whose logits are needed)."""

    input_ids: torch.Tensor  # [B, L]
    attention_mask: torch.Tensor  # [B, L]
    position_ids: torch.Tensor  # [B, L]
    logits_to_keep: (
        int  # K + 1: the model returns logits for the last K + 1 positions, the last one is unused
    )
    targets: torch.Tensor  # [B, K] the token ids predicted by those logits
    mask: torch.Tensor  # [B, K] float, 1 on trained tokens
    advantages: torch.Tensor  # [B]
    weights: torch.Tensor  # [B]
    sampling_logprobs: torch.Tensor  # [B, K] engine logprobs on trained tokens (NaN where unknown)
    lags: torch.Tensor  # [B] weight versions the row's sampler was behind the learner
    off_policy: torch.Tensor  # [B] bool: expert-played rows (Sample.off_policy)
    # a `collate_tree` micro-batch: input_ids are then the rows' tails ([B, T] right-padded: the prompt's last
    # token and the completion), position_ids continue their prompts, attention_mask covers [B, S + M + T], K = T - 1
    tree: PrefixTree | None = None

    def to(self, device: torch.device | str) -> Batch:
        moved = {
            k: (v.to(device) if isinstance(v, (torch.Tensor, PrefixTree)) else v)
            for k, v in self.__dict__.items()
        }
        return Batch(**moved)


def batch_logits(model: Any, batch: Batch) -> torch.Tensor:
    """[B, K, V] float32 next-token logits of `model` at the positions that predict `batch.targets` (the forward
    the learner trains with; callers choose the autocast around it)."""
    if batch.tree is not None:
        return _tree_logits(model, batch)
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        logits_to_keep=batch.logits_to_keep,
        use_cache=False,
    )
    return out.logits[:, :-1].float()


def _tree_logits(model: Any, batch: Batch) -> torch.Tensor:
    """The forward of a `collate_tree` batch, in up to three calls that pass the KV on (with its graph): the root
    once, the N middles on it, the B tails each on its prompt's KV. In backward the gradients of every row meet
    in the KV they share, which is what the same rows padded one by one would sum to."""
    t = batch.tree
    cache = _on_cache(model, None, t.root).past_key_values if t.root is not None else None
    if t.mids.shape[1]:
        if cache is not None:
            cache.batch_select_indices(torch.zeros(t.mids.shape[0], dtype=torch.long, device=t.mids.device))
        cache = _on_cache(model, cache, t.mids, t.mid_attention, t.mid_positions).past_key_values
        cache.batch_select_indices(t.owner)
    elif cache is not None:  # every prompt is the root plus one token: the root's KV serves every row
        cache.batch_select_indices(torch.zeros_like(t.owner))
    out = _on_cache(
        model, cache, batch.input_ids, batch.attention_mask, batch.position_ids, batch.logits_to_keep
    )
    return out.logits[:, :-1].float()


def _on_cache(
    model: Any,
    cache: Any,
    ids: torch.Tensor,
    attention: torch.Tensor | None = None,
    positions: torch.Tensor | None = None,
    keep: int = 1,
) -> Any:
    """`ids` on top of `cache` (None: from the start); the output keeps the extended KV and the last `keep` logits."""
    return model(
        input_ids=ids,
        attention_mask=attention,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=keep,
    )


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def collate_tree(samples: Sequence[Sample], pad_id: int) -> Batch:
    """Rows laid out as a prefix tree (`PrefixTree`): the prompts' common prefix once, each distinct prompt's rest
    once, each row's tail (its prompt's last token and its completion, right-padded) on its own prompt's KV;
    targets, mask and sampling logprobs in the tails' positions. Rows of one prompt (a group's first turns) cost
    one prompt and B completions; rows of different pages still share the system prompt."""
    if any(s.prompt_len < 1 for s in samples):
        raise ValueError("collate_tree needs a prompt before every row's first trained token")
    size = _tree_size(samples)
    where: dict[tuple[int, ...], int] = {}  # prompt -> its index, in first-seen order
    owner = [where.setdefault(_prompt(s), len(where)) for s in samples]
    prompts = list(where)
    root, m, t = size.root, size.middle, size.tail
    n, b = len(prompts), len(samples)
    mids = torch.full((n, m), pad_id, dtype=torch.long)
    mid_attention = torch.zeros((n, root + m), dtype=torch.long)
    mid_attention[:, :root] = 1
    mid_positions = torch.full((n, m), root, dtype=torch.long)
    for r, p in enumerate(prompts):
        rest = p[root:-1]
        if rest:
            mids[r, m - len(rest) :] = torch.tensor(rest, dtype=torch.long)
            mid_attention[r, root + m - len(rest) :] = 1
            mid_positions[r, m - len(rest) :] = torch.arange(root, len(p) - 1)
    ids = torch.full((b, t), pad_id, dtype=torch.long)
    attn = torch.zeros((b, root + m + t), dtype=torch.long)
    positions = torch.zeros((b, t), dtype=torch.long)
    mask = torch.zeros((b, t - 1), dtype=torch.float32)
    samp = torch.full((b, t - 1), float("nan"), dtype=torch.float32)
    for r, s in enumerate(samples):
        p = s.prompt_len
        tail = s.input_ids[p - 1 :]
        ids[r, : len(tail)] = torch.tensor(tail, dtype=torch.long)
        attn[r, : root + m] = mid_attention[owner[r]]
        attn[r, root + m : root + m + len(tail)] = 1
        positions[r] = torch.arange(p - 1, p - 1 + t)
        mask[r, : len(tail) - 1] = torch.tensor(s.loss_mask[p:], dtype=torch.float32)
        ones = [i for i, x in enumerate(s.loss_mask[p:]) if x]
        if len(s.sampling_logprobs) == len(ones):
            samp[r, ones] = torch.tensor(s.sampling_logprobs, dtype=torch.float32)
    return Batch(
        input_ids=ids,
        attention_mask=attn,
        position_ids=positions,
        logits_to_keep=t,
        targets=ids[:, 1:],
        mask=mask,
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        weights=torch.tensor([s.weight for s in samples], dtype=torch.float32),
        sampling_logprobs=samp,
        lags=torch.tensor([s.lag for s in samples], dtype=torch.long),
        off_policy=torch.tensor([s.off_policy for s in samples], dtype=torch.bool),
        tree=PrefixTree(
            root=torch.tensor([prompts[0][:root]], dtype=torch.long) if root else None,
            mids=mids,
            mid_attention=mid_attention,
            mid_positions=mid_positions,
            owner=torch.tensor(owner, dtype=torch.long),
        ),
    )


def collate(samples: Sequence[Sample], pad_id: int) -> Batch:
    """Left-pad the rows; keep only the right-edge window that holds every trained token."""
    length = max(len(s.input_ids) for s in samples)
    b = len(samples)
    ids = torch.full((b, length), pad_id, dtype=torch.long)
    attn = torch.zeros((b, length), dtype=torch.long)
    mask = torch.zeros((b, length), dtype=torch.float32)
    samp = torch.full((b, length), float("nan"), dtype=torch.float32)
    for r, s in enumerate(samples):
        n = len(s.input_ids)
        if len(s.loss_mask) != n:
            raise ValueError(f"{s.where}: loss mask has {len(s.loss_mask)} entries for {n} tokens")
        ids[r, length - n :] = torch.tensor(s.input_ids, dtype=torch.long)
        attn[r, length - n :] = 1
        row_mask = torch.tensor(s.loss_mask, dtype=torch.float32)
        row_mask[0] = 0.0  # nothing predicts a sequence's first token
        mask[r, length - n :] = row_mask
        ones = [i for i, m in enumerate(s.loss_mask) if m]
        # engine logprobs are known for exactly the generated tokens
        if len(s.sampling_logprobs) == len(ones):
            for i, lp in zip(ones, s.sampling_logprobs, strict=True):
                if i > 0:
                    samp[r, length - n + i] = lp
    nonzero = mask.sum(0).nonzero()
    first = int(nonzero.min()) if len(nonzero) else length - 1
    first = max(first, 1)
    position_ids = (attn.cumsum(-1) - 1).clamp(min=0)
    return Batch(
        input_ids=ids,
        attention_mask=attn,
        position_ids=position_ids,
        logits_to_keep=length - first + 1,
        targets=ids[:, first:],
        mask=mask[:, first:],
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        weights=torch.tensor([s.weight for s in samples], dtype=torch.float32),
        sampling_logprobs=samp[:, first:],
        lags=torch.tensor([s.lag for s in samples], dtype=torch.long),
        off_policy=torch.tensor([s.off_policy for s in samples], dtype=torch.bool),
    )
