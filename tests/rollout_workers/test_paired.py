"""Paired comparison of two evaluations: hand-computed McNemar p-values, the bootstrap interval's edges and width,
None and unmatched episodes."""

from __future__ import annotations

import math

import pytest

from common.records import Trajectory
from rollout_workers.paired import align, bootstrap_ci, mcnemar_exact, paired_difference


def _pairs(both_fail: int, both_win: int, gained: int, lost: int) -> tuple[list[float], list[float]]:
    before = [0.0] * both_fail + [1.0] * both_win + [0.0] * gained + [1.0] * lost
    after = [0.0] * both_fail + [1.0] * both_win + [1.0] * gained + [0.0] * lost
    return before, after


def test_hand_computed_case():
    # 10 pairs: 3 both fail, 2 both win, 4 gained, 1 lost; p = 2 * (C(5,0) + C(5,1)) / 2^5 = 0.375
    before, after = _pairs(3, 2, 4, 1)
    d = paired_difference(before, after)
    assert (d.n, d.left_out, d.gained, d.lost) == (10, 0, 4, 1)
    assert d.success_before == pytest.approx(0.3)
    assert d.success_after == pytest.approx(0.6)
    assert d.difference == pytest.approx(0.3)
    assert d.mcnemar_p == pytest.approx(0.375)
    assert d.ci95[0] <= 0.3 <= d.ci95[1]
    assert "bootstrap" in d.method and "McNemar" in d.method
    assert d.to_json()["mcnemar_p"] == d.mcnemar_p


@pytest.mark.parametrize(
    ("gained", "lost", "p"),
    [
        (0, 0, 1.0),  # no discordant pair: no evidence of change
        (6, 0, 2 / 64),  # 2 * C(6,0) / 2^6
        (8, 2, 2 * (1 + 10 + 45) / 1024),
        (3, 3, 1.0),  # 2 * P(X <= 3 | 6) = 2 * 42/64 > 1: capped
        (2, 8, 2 * (1 + 10 + 45) / 1024),  # symmetric in the direction of change
    ],
)
def test_mcnemar_exact_values(gained, lost, p):
    assert mcnemar_exact(gained, lost) == pytest.approx(p, rel=1e-12)


def test_mcnemar_is_exact_for_many_discordant_pairs():
    # m = 2000 would overflow a float 2^m; the integer tail stays exact and below 1
    p = mcnemar_exact(1060, 940)
    assert 0.0 < p < 1.0
    # normal approximation of the same test (continuity-corrected) agrees to a few percent at this size
    z = (abs(1060 - 940) - 1) / math.sqrt(2000)
    assert p == pytest.approx(math.erfc(z / math.sqrt(2)), rel=0.05)


def test_interval_is_degenerate_when_every_pair_moves_the_same_way():
    before, after = _pairs(0, 0, 7, 0)
    d = paired_difference(before, after)
    assert d.difference == 1.0 and d.ci95 == [1.0, 1.0]
    before, after = _pairs(4, 3, 0, 0)  # nothing moves
    d = paired_difference(before, after)
    assert d.difference == 0.0 and d.ci95 == [0.0, 0.0] and d.mcnemar_p == 1.0


def test_interval_matches_the_normal_width_for_many_pairs():
    # 400 pairs, 60 gained, 20 lost: d = 0.1, per-pair var = (0.15 + 0.05) - 0.1^2 = 0.19
    before, after = _pairs(200, 120, 60, 20)
    d = paired_difference(before, after, resamples=20000)
    half = 1.96 * math.sqrt(0.19 / 400)
    assert d.difference == pytest.approx(0.1)
    assert d.ci95[0] == pytest.approx(0.1 - half, abs=0.006)
    assert d.ci95[1] == pytest.approx(0.1 + half, abs=0.006)
    # the same seed gives the same interval; the McNemar test sees the gain the interval sees
    assert paired_difference(before, after, resamples=20000).ci95 == d.ci95
    assert d.mcnemar_p < 0.001 and d.ci95[0] > 0


def test_bootstrap_is_seeded():
    diffs = [1, 0, 0, -1, 1, 1, 0, 0, 0, 1]
    assert bootstrap_ci(diffs, seed=3) == bootstrap_ci(diffs, seed=3)
    assert bootstrap_ci(diffs, seed=3) != bootstrap_ci(diffs, seed=4, resamples=50)


def test_unscorable_pairs_are_left_out_and_counted():
    before = [1.0, None, 0.0, 0.0, 1.0]
    after = [1.0, 1.0, None, 1.0, None]
    d = paired_difference(before, after)
    assert (d.n, d.left_out, d.gained, d.lost) == (2, 3, 1, 0)
    assert d.success_before == 0.5 and d.success_after == 1.0
    empty = paired_difference([None, 1.0], [0.0, None])
    assert (empty.n, empty.left_out, empty.difference, empty.ci95, empty.mcnemar_p) == (
        0,
        2,
        None,
        None,
        None,
    )


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="differ in length"):
        paired_difference([1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="pair 1: after reward 0.5"):
        paired_difference([1.0, 0.0], [1.0, 0.5])


def _traj(task_id, sample_idx, reward, failure=None):
    return Trajectory(task_id=task_id, sample_idx=sample_idx, reward=reward, failure=failure)


def test_align_matches_by_task_and_sample():
    before = [_traj(1, 0, 0.0), _traj(1, 1, 1.0), _traj(2, 0, 0.0), _traj("x", 0, 1.0)]
    after = [
        _traj(2, 0, 1.0),
        _traj(1, 1, 1.0),
        _traj(1, 0, 0.0, failure="browser crashed"),
        _traj(3, 0, 1.0),
    ]
    got = align(before, after)
    # before's order; task "x" and task 3 have no partner; the crashed episode counts as unscorable
    assert got.before == [0.0, 1.0, 0.0]
    assert got.after == [None, 1.0, 1.0]
    assert got.unmatched == 2
    d = paired_difference(got.before, got.after)
    assert (d.n, d.left_out, d.gained) == (2, 1, 1)


def test_align_refuses_duplicate_episodes():
    with pytest.raises(ValueError, match="after: episode 1#0 appears twice"):
        align([_traj(1, 0, 1.0)], [_traj(1, 0, 1.0), _traj(1, 0, 0.0)])
