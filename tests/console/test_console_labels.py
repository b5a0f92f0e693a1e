"""Labels from the console land in the reward classifier's dataset: episode files that
``sim2real hil train-classifier`` reads, positives at the end of a success."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from console_harness import open_console, start_hil_stack, stop_hil_stack

from sim2real.policies.hil.classifier import load_labelled_frames
from sim2real.policies.hil.demos import episode_files, read_episode


@pytest.mark.heavy
def test_labels_land_in_the_classifier_dataset(tmp_path: Path, browser) -> None:
    stack = start_hil_stack(tmp_path, obs_mode="pixels", labels=True)
    page = open_console(browser, stack.server.url)
    labels = tmp_path / "labels"
    try:
        assert page.is_visible("#labels")
        assert stack.wait(lambda: stack.target.episodes.steps >= 10, 20.0)
        page.keyboard.press("Digit1")  # success
        assert stack.wait(lambda: len(episode_files(labels)) == 1, 10.0)
        assert stack.wait(lambda: stack.target.episodes.steps >= 10, 20.0)
        page.click("#labels button[data-label=failure]")
        assert stack.wait(lambda: len(episode_files(labels)) == 2, 10.0)
        assert stack.wait(lambda: stack.target.episodes.steps >= 3, 20.0)
        page.keyboard.press("Digit3")  # re-record: this episode is dropped, not labelled
        time.sleep(1.0)
        assert len(episode_files(labels)) == 2
    finally:
        page.close()
        stop_hil_stack(stack)
    (_, success_steps, success_attrs), (_, failure_steps, failure_attrs) = (read_episode(p) for p in
                                                                           episode_files(labels))
    assert success_attrs["label"] == "success" and failure_attrs["label"] == "failure"
    assert success_steps["success"][-5:].all() and not success_steps["success"][:-5].any()
    assert not failure_steps["success"].any()
    frames = load_labelled_frames(labels)  # what train-classifier reads
    assert frames.labels.sum() == 5 and len(frames.labels) == len(success_steps["success"]) + len(
        failure_steps["success"])
    assert set(frames.frames) == {"front"} and frames.frames["front"].dtype == np.uint8
