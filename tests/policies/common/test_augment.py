"""One DrQ random shift (issue 26, defect 5): the vectorised gather draws what the
per-image loop it replaced drew, for the same generator, and keeps content within the pad."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sim2real.policies.common.augment import random_shift


def _loop_reference(x: torch.Tensor, pad: int, generator: torch.Generator) -> torch.Tensor:
    """The CLIP fine-tuning's former per-image version."""
    n, _, h, w = x.shape
    padded = F.pad(x, (pad, pad, pad, pad), mode="replicate")
    ox = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    oy = torch.randint(0, 2 * pad + 1, (n,), generator=generator)
    return torch.stack([padded[i, :, oy[i] : oy[i] + h, ox[i] : ox[i] + w] for i in range(n)])


def test_the_vectorised_shift_equals_the_loop_for_the_same_generator() -> None:
    x = torch.rand(12, 3, 17, 23)
    a = random_shift(x, 4, torch.Generator().manual_seed(7))
    b = _loop_reference(x, 4, torch.Generator().manual_seed(7))
    assert torch.equal(a, b)


def test_shifts_stay_within_the_pad_and_differ_per_image() -> None:
    x = torch.zeros(32, 1, 20, 20)
    x[:, :, 10, 10] = 1.0
    out = random_shift(x, 3, torch.Generator().manual_seed(0))
    positions = set()
    for img in out:
        ys, xs = torch.nonzero(img[0], as_tuple=True)
        assert len(ys) == 1 and abs(int(ys[0]) - 10) <= 3 and abs(int(xs[0]) - 10) <= 3
        positions.add((int(ys[0]), int(xs[0])))
    assert len(positions) > 5
    assert random_shift(x, 0) is x
