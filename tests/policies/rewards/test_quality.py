"""The reward-model quality report: VOC, success detection, the hacking audit (on
hand-made sequences with known answers), and ``sim2real reward eval --json`` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim2real.policies.rewards.audit import (
    WRIST_TILTED,
    along_ray,
    audit_fooled,
    failure_kinds,
    reach_kinds,
    write_picture_sheet,
)
from sim2real.policies.rewards.dataset import FrameSet
from sim2real.policies.rewards.quality import (
    accuracy_at,
    auroc,
    best_threshold,
    spearman,
    subsample_negatives,
    success_detection,
    value_order_correlation,
)


def one_episode(reward: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One episode of ``reward`` in step order, ending in its only success frame."""
    n = len(reward)
    success = np.zeros(n, dtype=bool)
    success[-1] = True
    return np.array(reward), np.zeros(n, dtype=int), np.arange(n), success


def test_voc_is_one_for_a_rising_reward_minus_one_for_a_falling_one_and_zero_for_a_constant_one():
    assert value_order_correlation(*one_episode([0.1, 0.2, 0.5, 0.9])).mean == pytest.approx(1.0)
    assert value_order_correlation(*one_episode([0.9, 0.5, 0.2, 0.1])).mean == pytest.approx(-1.0)
    flat = value_order_correlation(*one_episode([0.4, 0.4, 0.4, 0.4]))
    assert flat.mean == 0.0 and flat.episodes == 1 and flat.constant_episodes == 1  # counted, as no order


def test_voc_averages_over_successful_episodes_only_in_step_order_and_skips_short_ones():
    reward = np.array([0.3, 0.1, 0.2, 0.9, 0.8, 0.7, 0.5, 0.6, 0.1, 0.2])
    episode = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3, 3])
    step = np.array([2, 0, 1, 0, 1, 2, 0, 1, 0, 1])  # episode 0 is stored out of order
    success = np.array([True, False, False, True, False, False, False, False, False, True])
    result = value_order_correlation(reward, episode, step, success)
    # Episode 0 rises in step order (+1), 1 falls (-1), 2 has no success, 3 is too short.
    assert result.per_episode == {0: pytest.approx(1.0), 1: pytest.approx(-1.0)}
    assert result.mean == pytest.approx(0.0) and result.episodes == 2
    assert value_order_correlation(reward, episode, step, np.zeros(10, dtype=bool)).mean is None
    with pytest.raises(ValueError, match="same length"):
        value_order_correlation(reward, episode[:3], step, success)


def test_spearman_uses_ranks_and_says_none_when_constant():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    assert spearman(a, a**3) == pytest.approx(1.0)  # monotone, not linear
    assert spearman(a, np.ones(4)) is None


def test_auroc_of_a_perfect_a_reversed_and_a_tied_separator():
    labels = np.array([False, False, True, True])
    assert auroc(np.array([0.1, 0.2, 0.8, 0.9]), labels) == 1.0
    assert auroc(np.array([0.9, 0.8, 0.2, 0.1]), labels) == 0.0
    assert auroc(np.full(4, 0.5), labels) == 0.5
    assert auroc(np.array([0.1, 0.5, 0.5, 0.9]), labels) == pytest.approx(0.875)  # one tied pair of four
    with pytest.raises(ValueError, match="positive and negative"):
        auroc(np.ones(3), np.ones(3, dtype=bool))


def test_threshold_is_chosen_for_accuracy_and_accuracy_counts_score_at_threshold_as_success():
    scores = np.array([0.1, 0.2, 0.3, 0.7, 0.6, 0.9])
    labels = np.array([False, False, False, True, True, True])
    t = best_threshold(scores, labels)
    assert 0.3 < t <= 0.6 and accuracy_at(scores, labels, t) == 1.0
    assert accuracy_at(scores, labels, 0.65) == pytest.approx(5 / 6)
    # With no separating threshold, calling everything a failure can be best.
    assert best_threshold(np.array([0.9, 0.1, 0.2]), np.array([False, True, False])) > 0.9


def test_negatives_are_subsampled_to_the_ratio_with_a_seed():
    labels = np.array([True] * 4 + [False] * 40)
    keep = subsample_negatives(labels, 3.0, np.random.default_rng(0))
    assert labels[keep].sum() == 4 and (~labels[keep]).sum() == 12
    np.testing.assert_array_equal(keep, subsample_negatives(labels, 3.0, np.random.default_rng(0)))
    assert len(subsample_negatives(labels[:8], 3.0, np.random.default_rng(0))) == 8  # only 4 negatives exist


def test_success_detection_of_a_perfect_score_on_split_episodes():
    episode = np.repeat(np.arange(10), 10)
    success = (np.arange(100) % 10) == 9  # the last frame of every episode
    scores = success.astype(float) + np.linspace(0, 0.5, 100)
    result = success_detection(scores, success, episode, negative_ratio=2.0, seed=1)
    assert result.auroc == 1.0 and result.positives == 10 and result.negatives == 20
    assert result.accuracy == 1.0 and result.balanced_accuracy == 1.0
    assert result.test_positives + result.test_negatives < 30  # the threshold came from the other half
    test_frames = result.test_positives + result.test_negatives
    assert result.majority_accuracy == pytest.approx(result.test_negatives / test_frames)
    with pytest.raises(ValueError, match="2 episodes"):
        success_detection(scores, success & (episode == 0), episode)


TARGET = np.array([0.5, 0.0, 0.3])
CAMERA = (1.1, -0.55, 0.8)


def reach_set() -> tuple[FrameSet, np.ndarray]:
    """Two successes (scores 0.9, 0.7: median 0.8) and four failures of known kinds."""
    ray = TARGET - np.array(CAMERA)
    ray /= np.linalg.norm(ray)
    across = np.cross(ray, [0.0, 0.0, 1.0])
    across /= np.linalg.norm(across)
    ee_offsets = [  # gripper minus target
        0.01 * across,  # success
        -0.015 * across,  # success
        -0.12 * ray,  # 12 cm in front of the target, on the camera's ray
        0.04 * across,  # 4 cm to the side (tilted wrist below)
        0.20 * across,  # 20 cm away
        0.08 * across,  # 8 cm away
    ]
    scores = np.array([0.9, 0.7, 0.85, 0.8, 0.5, 0.79])
    n = len(scores)
    state = {
        "target_rel_ee": -np.array(ee_offsets),
        "target_pos": np.tile(TARGET, (n, 1)),
        "ee_tilt_deg": np.array([2.0, 3.0, 5.0, 45.0, 1.0, 10.0]),
    }
    success = np.array([True, True, False, False, False, False])
    data = FrameSet(
        np.zeros((n, 8, 8, 3), dtype=np.uint8), ["c"] * n, success, -np.linalg.norm(ee_offsets, axis=1),
        np.arange(n), np.zeros(n, dtype=int), state, {"reach_view": CAMERA},
    )
    return data, scores


def test_the_audit_returns_exactly_the_fooled_frames_and_their_kinds():
    data, scores = reach_set()
    kinds, order = failure_kinds(data)
    assert kinds[2:] == [
        ("10-16 cm", along_ray("reach_view")),
        ("3-6 cm", WRIST_TILTED),
        (">16 cm",),
        ("6-10 cm",),
    ]
    result = audit_fooled(scores, data.success, kinds, order=order, worst=3)
    assert result.threshold == pytest.approx(0.8) and not result.threshold_given
    assert (result.failed_frames, result.fooled_frames, result.fooled_share) == (4, 2, 0.5)
    table = {k.kind: (k.failed, k.fooled, k.fooled_share, k.share_of_fooled) for k in result.kinds}
    assert list(table) == [">16 cm", "10-16 cm", "6-10 cm", "3-6 cm", along_ray("reach_view"), WRIST_TILTED]
    assert table["10-16 cm"] == (1, 1, 1.0, 0.5) and table["3-6 cm"] == (1, 1, 1.0, 0.5)
    assert table[">16 cm"] == (1, 0, 0.0, 0.0) and table[along_ray("reach_view")] == (1, 1, 1.0, 0.5)
    assert [(w.index, w.fooled) for w in result.worst] == [(2, True), (3, True), (5, False)]
    # A threshold from elsewhere (e.g. scripted frames, for a policy's states) replaces the median.
    given = audit_fooled(scores, data.success, kinds, threshold=0.95)
    assert given.fooled_frames == 0 and given.threshold_given


def test_frames_without_recorded_state_are_grouped_by_caption_and_the_ray_needs_the_camera():
    data, scores = reach_set()
    bare = FrameSet(data.frames, ["near", "near", "far", "near", "far", "far"], data.success, data.progress,
                    data.episode, data.step)
    kinds, order = failure_kinds(bare)
    assert kinds[2] == ("far",) and order == ["far", "near"]
    assert audit_fooled(scores, bare.success, kinds, order=order).kinds[0].fooled == 1
    no_camera = reach_kinds(data.state["target_rel_ee"], data.state["target_pos"], data.state["ee_tilt_deg"], {})
    assert no_camera[2] == ("10-16 cm",)
    with pytest.raises(ValueError, match="needs success frames"):
        audit_fooled(scores, np.zeros(6, dtype=bool), kinds)


def test_picture_sheet_is_a_png(tmp_path):
    from sim2real.policies.rewards.audit import SheetPicture

    pictures = [SheetPicture(np.full((8, 8, 3), 200, dtype=np.uint8), "12.0 cm\nscore 0.85")]
    path = write_picture_sheet({"model": pictures, "other": []}, tmp_path / "sheet.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.heavy
def test_reward_eval_json_has_the_quality_report(micro_checkpoint, tmp_path, capsys):
    from sim2real.cli import main

    sheet = tmp_path / "sheet.png"
    args = ["reward", "eval", "ArmReach", "--clip-weights", str(micro_checkpoint), "--frames", "600",
            "--camera", "reach_view+wrist", "--audit-sheet", str(sheet)]
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    res = report["models"][str(micro_checkpoint)]
    for row in res["alphas"]:
        assert -1.0 <= row["voc"] <= 1.0 and 0.0 <= row["auroc"] <= 1.0
    quality = res["quality"]
    assert quality["alpha"] == 0.5 and -1.0 <= quality["voc"]["mean"] <= 1.0 and quality["voc"]["episodes"] >= 2
    det = quality["success_detection"]
    assert 0.0 <= det["auroc"] <= 1.0 and 0.0 <= det["accuracy"] <= 1.0
    assert det["negatives"] == round(3 * det["positives"])
    audit = quality["audit"]
    assert 0.0 <= audit["fooled_share"] <= 1.0 and audit["failed_frames"] == res["frames"] - res["success_frames"]
    bands = [k for k in audit["kinds"] if k["kind"].endswith(" cm")]
    assert sum(k["failed"] for k in bands) == audit["failed_frames"]  # the bands partition the failures
    assert sum(k["fooled"] for k in bands) == audit["fooled_frames"]
    assert audit["worst"] and all(w["distance_cm"] >= 2.0 for w in audit["worst"])
    assert report["audit_sheet"] == str(sheet) and sheet.read_bytes()[:4] == b"\x89PNG"
    # For people: the table under each model.
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "VOC" in text and "AUROC" in text and "hacking audit" in text and "failure kind" in text
