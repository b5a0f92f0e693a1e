"""CLIP preprocessing through torchvision (issue 26, defect 5): the same numbers as the
hand-written resize + centre crop it replaced, for square and non-square frames and each
interpolation open_clip configs name."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sim2real.policies.rewards.clip_reward import ClipRewardModel

MEAN = torch.tensor((0.48145466, 0.4578275, 0.40821073)).view(1, 3, 1, 1)
STD = torch.tensor((0.26862954, 0.26130258, 0.27577711)).view(1, 3, 1, 1)


def _former(frames: np.ndarray, size: tuple[int, int], interpolation: str) -> torch.Tensor:
    """The implementation torchvision replaced, kept as the reference."""
    x = torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255.0
    th, tw = size
    h, w = x.shape[-2:]
    short = max(th, tw)
    nh, nw = (short, int(short * w / h)) if h <= w else (int(short * h / w), short)
    if (nh, nw) != (h, w):
        mode = interpolation
        x = F.interpolate(x, size=(nh, nw), mode=mode, antialias=mode != "nearest",
                          align_corners=False if mode != "nearest" else None).clamp(0.0, 1.0)
    top, left = int(round((nh - th) / 2.0)), int(round((nw - tw) / 2.0))
    x = x[:, :, top : top + th, left : left + tw]
    return (x - MEAN) / STD


@pytest.mark.parametrize("shape", [(64, 64), (96, 96), (60, 80), (120, 90), (33, 47)])
@pytest.mark.parametrize("interpolation", ["bicubic", "bilinear"])
def test_torchvision_preprocessing_matches_the_former_code(shape: tuple[int, int], interpolation: str) -> None:
    frames = np.random.default_rng(0).integers(0, 256, size=(3, *shape, 3), dtype=np.uint8)
    model = SimpleNamespace(device=torch.device("cpu"), image_size=(64, 64), interpolation=interpolation,
                            mean=MEAN, std=STD, dtype=torch.float32)
    got = ClipRewardModel.preprocess(model, frames)
    want = _former(frames, (64, 64), interpolation)
    assert got.shape == want.shape == (3, 3, 64, 64)
    assert torch.allclose(got, want, atol=1e-5)
