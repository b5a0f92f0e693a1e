"""Image augmentation shared by the learners that read pixels (HIL-SERL's encoders and
classifier, the CLIP reward fine-tuning)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def random_shift(images: torch.Tensor, pad: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """DrQ augmentation: replicate-pad ``[N, C, H, W]`` images by ``pad`` and crop back at
    a random offset per image (one gather, no loop over the batch). ``generator``: for a
    reproducible draw (on the images' device)."""
    if pad <= 0:
        return images
    n, c, h, w = images.shape
    device = images.device
    padded = F.pad(images, (pad, pad, pad, pad), mode="replicate")
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=device)
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=generator, device=device)
    rows = (dy[:, None] + torch.arange(h, device=device)[None]).view(n, 1, h, 1)
    cols = (dx[:, None] + torch.arange(w, device=device)[None]).view(n, 1, 1, w)
    batch = torch.arange(n, device=device).view(n, 1, 1, 1)
    chan = torch.arange(c, device=device).view(1, -1, 1, 1)
    return padded[batch, chan, rows, cols]
