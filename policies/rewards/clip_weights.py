"""Where CLIP weights come from: our own small architectures and local open_clip weights.

Nothing is downloaded unless an open_clip pretrained tag is named explicitly; every
way of not finding usable weights is a :class:`ClipWeightsError` that says how to get them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# open_clip -> timm -> torchvision -> torch._dynamo imports triton, whose bundled LLVM
# segfaults when loaded after Mesa's (software GL) LLVM: import it before any frame
# is rendered in this process, which importing this module (or clip_reward) first guarantees.
import open_clip
import torch

from sim2real.errors import ConfigError, Sim2RealError

MODEL_CONFIG_DIR = Path(__file__).resolve().parent / "model_configs"
TINY_MODEL = "sim2real-tiny-vit-96"
"""Our own small open_clip architecture (96 px ViT with 12 px patches, 64-d embeddings),
the default of ``sim2real reward finetune-clip`` on simulator renders. ``sim2real-tiny-vit``
is the same at 64 px with 8 px patches (same cost, for single-view frames)."""
WEIGHT_FILE = "open_clip_model.safetensors"
"""Weight file name inside a local model folder (open_clip's ``local-dir:`` layout)."""


class ClipWeightsError(Sim2RealError):
    """No usable CLIP weights: missing, unreadable, or not matching the architecture."""


def how_to_get_weights(model_name: str) -> str:
    return (
        "Either train a small local model on simulator renders with `sim2real reward finetune-clip TASK --out "
        "models/clip-TASK` and pass `--clip-weights models/clip-TASK`, or, on a machine with internet, fetch real "
        "CLIP weights with `python -c \"import open_clip; open_clip.create_model_and_transforms('ViT-bigG-14', "
        "pretrained='laion2b_s39b_b160k')\"`, copy the downloaded open_clip_pytorch_model.bin (under "
        f"~/.cache/huggingface/hub) here and pass `--clip-model {model_name} --clip-weights PATH/TO/FILE`."
    )


def register_model_configs() -> None:
    """Make our own architectures (``model_configs/*.json``) known to open_clip."""
    if TINY_MODEL not in open_clip.list_models():
        open_clip.add_model_config(MODEL_CONFIG_DIR)


def select_device(device: str = "auto") -> torch.device:
    """``auto``: the GPU when one is present, else the CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ConfigError("reward.device", f"not a torch device: {device!r}") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError("reward.device", "cuda was asked for but no GPU is available")
    return dev


def load_open_clip(model_name: str | None, weights: str | Path | None, device: torch.device) -> tuple[Any, Any, str]:
    """``(model, tokenizer, resolved_name)`` in eval mode on ``device``.

    ``weights`` is a local folder (open_clip ``local-dir`` layout: ``open_clip_config.json``
    plus a weight file, as written by ``finetune-clip``), a local weight file for the
    architecture ``model_name``, or an open_clip pretrained tag (downloads; needs network).
    """
    register_model_configs()
    precision = "fp16" if device.type == "cuda" else "fp32"
    if weights is None:
        raise ClipWeightsError(
            f"no CLIP weights given for model {model_name or TINY_MODEL!r}. "
            + how_to_get_weights(model_name or "ViT-bigG-14")
        )
    path = Path(weights).expanduser()
    try:
        if path.is_dir():
            if not (path / "open_clip_config.json").is_file():
                raise ClipWeightsError(
                    f"{path} has no open_clip_config.json; pass the weight file itself with --clip-model NAME"
                )
            if not any(any(path.glob(pattern)) for pattern in ("*.safetensors", "*.bin", "*.pth", "*.pt")):
                raise ClipWeightsError(
                    f"{path} holds no weight file (*.safetensors, *.bin, *.pth). "
                    + how_to_get_weights(model_name or "ViT-bigG-14")
                )
            name = f"local-dir:{path}"
            model = open_clip.create_model(name, precision=precision, device=device)
        elif path.is_file():
            if not model_name:
                raise ClipWeightsError(
                    f"{path} is a weight file: name its architecture with --clip-model (e.g. ViT-B-32)"
                )
            if model_name not in open_clip.list_models():
                raise ClipWeightsError(f"unknown open_clip model {model_name!r}; see open_clip.list_models()")
            name = model_name
            model = open_clip.create_model(name, pretrained=str(path), precision=precision, device=device)
        elif model_name and str(weights) in open_clip.list_pretrained_tags_by_model(model_name):
            name = model_name
            try:
                model = open_clip.create_model(name, pretrained=str(weights), precision=precision, device=device)
            except Exception as exc:  # no network, hub errors: all mean "not here"
                raise ClipWeightsError(
                    f"could not download {model_name} weights {weights!r} ({type(exc).__name__}: {exc}). "
                    + how_to_get_weights(model_name)
                ) from exc
        else:
            raise ClipWeightsError(
                f"CLIP weights {str(weights)!r} not found (no such file or folder). "
                + how_to_get_weights(model_name or "ViT-bigG-14")
            )
    except ClipWeightsError:
        raise
    except (RuntimeError, ValueError, KeyError, OSError) as exc:
        raise ClipWeightsError(f"could not load CLIP weights from {path}: {type(exc).__name__}: {exc}") from exc
    model.eval()
    tokenizer = open_clip.get_tokenizer(name)
    return model, tokenizer, name
