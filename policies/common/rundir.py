"""The run folder: one training run's config, logs and checkpoints.

::

    runs/NAME/
      config.yaml        every resolved value + provenance (git commit, versions, seed)
      eval.jsonl         one JSON object per evaluation (read by `sim2real plot`)
      tb/                TensorBoard event files
      checkpoints/       see sim2real.policies.common.checkpoint
      export/            default output of `sim2real export`
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from sim2real.policies.common import atomic
from sim2real.policies.config import TrainConfig
from sim2real.policies.config_loading import read_yaml
from sim2real.policies.errors import RunFolderError

VERSIONED_PACKAGES = (
    "sim2real",
    "torch",
    "stable-baselines3",
    "gymnasium",
    "mujoco",
    "numpy",
    "onnx",
    "onnxruntime",
)


class RunDir:
    """Paths and small files of a run folder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    config_path = property(lambda self: self.path / "config.yaml")
    eval_log = property(lambda self: self.path / "eval.jsonl")
    tb_dir = property(lambda self: self.path / "tb")
    checkpoints = property(lambda self: self.path / "checkpoints")
    export_dir = property(lambda self: self.path / "export")

    @property
    def name(self) -> str:
        return self.path.name

    def is_run(self) -> bool:
        return self.config_path.is_file()

    def require_run(self) -> None:
        if not self.path.is_dir():
            raise RunFolderError(f"{self.path} does not exist")
        if not self.is_run():
            raise RunFolderError(f"{self.path} is not a run folder (no config.yaml); train one with `sim2real train`")

    # -- config -----------------------------------------------------------------
    def write_config(self, config: TrainConfig, provenance: dict[str, Any]) -> None:
        header = (
            "# Resolved training configuration. Repeat this run with:\n"
            f"#   sim2real train --config {self.config_path}\n"
            "# `provenance` is a record, ignored when this file is read as a config.\n"
        )
        body = yaml.safe_dump({**config.to_dict(), "provenance": provenance}, sort_keys=False)
        atomic.write_text(self.config_path, header + body)

    def read_config(self) -> TrainConfig:
        self.require_run()
        return TrainConfig.from_dict(read_yaml(self.config_path))

    def read_provenance(self) -> dict[str, Any]:
        data = yaml.safe_load(self.config_path.read_text()) or {}
        return dict(data.get("provenance") or {})

    # -- evaluation log -----------------------------------------------------------
    def read_eval_log(self) -> list[dict[str, Any]]:
        """Rows in step order; a malformed line (hand-edited file) is skipped."""
        if not self.eval_log.exists():
            return []
        rows = []
        for line in self.eval_log.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "step" in row:
                rows.append(row)
        return sorted(rows, key=lambda r: r["step"])

    def append_eval(self, row: dict[str, Any]) -> None:
        # The whole file is rewritten atomically: a kill never leaves half a line.
        rows = [*self.read_eval_log(), row]
        self._write_eval_log(rows)

    def truncate_eval_log(self, max_step: int) -> None:
        """Drop evaluations after ``max_step`` (made after the checkpoint a resume starts from)."""
        rows = self.read_eval_log()
        kept = [r for r in rows if r["step"] <= max_step]
        if len(kept) != len(rows):
            self._write_eval_log(kept)

    def replace_eval_log(self, rows: list[dict[str, Any]]) -> None:
        """Rewrite the log with ``rows`` (a PBT exploit: the run continues another run's line)."""
        self._write_eval_log(sorted(rows, key=lambda r: r["step"]))

    def _write_eval_log(self, rows: list[dict[str, Any]]) -> None:
        atomic.write_text(self.eval_log, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def default_run_name(task_id: str, algo: str) -> str:
    short = task_id.split("/")[-1].removesuffix("-v0")
    return f"{short}-{algo}-{_dt.datetime.now().strftime('%Y%m%d-%H%M%S')}"


def provenance(config: TrainConfig, command: list[str] | None = None) -> dict[str, Any]:
    """What produced a run besides its config: code version, packages, command line."""
    commit, dirty = _git_state()
    versions = {}
    for pkg in VERSIONED_PACKAGES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            versions[pkg] = None
    return {
        "config_hash": config.hash(),
        "seed": config.seed,
        "git_commit": commit,
        "git_dirty": dirty,
        "versions": {"python": platform.python_version(), **versions},
        "command": " ".join(command) if command is not None else " ".join(sys.argv),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _git_state() -> tuple[str | None, bool | None]:
    """Commit and dirty flag of the source checkout (read-only git calls); None outside git."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit or None, bool(status.strip())
