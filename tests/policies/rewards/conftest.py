"""Fixtures of the CLIP reward tests: a micro open_clip architecture built here
(registered with open_clip from a JSON written in a temp folder), random-initialised,
and saved as a local checkpoint folder."""

from __future__ import annotations

import json
from pathlib import Path

# open_clip pulls in triton, which segfaults if loaded after a software-GL context
# exists; importing it at collection time puts it before any rendering test.
import open_clip
import pytest
import torch

import sim2real  # noqa: F401  (first: picks MUJOCO_GL before mujoco is imported)

MICRO = "test-micro-clip"
MICRO_CFG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "mlp_ratio": 2.0, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1, "mlp_ratio": 2.0},
}


@pytest.fixture(scope="session")
def micro_model_name(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("clip_configs")
    (folder / f"{MICRO}.json").write_text(json.dumps(MICRO_CFG))
    if MICRO not in open_clip.list_models():
        open_clip.add_model_config(folder)
    return MICRO


@pytest.fixture(scope="session")
def micro_checkpoint(micro_model_name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random-initialised micro model saved as a local-dir folder (arm wrist camera, 32 px)."""
    from sim2real.policies.rewards.finetune import save_model

    torch.manual_seed(0)
    model = open_clip.create_model(micro_model_name, pretrained=None).eval()
    out = tmp_path_factory.mktemp("clip") / "micro"
    meta = {"tasks": ["sim2real/ArmReach-v0"], "cameras": {"sim2real/ArmReach-v0": "wrist"}, "image_size": 32}
    save_model(model, out, MICRO_CFG, meta)
    return out


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Small models on a shared 2-core machine: one intra-op thread is fastest (docs/training.md)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
