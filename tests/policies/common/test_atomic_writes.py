"""Atomic writes: the target holds the old or the new content, never a mix, and
no temporary file survives."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sim2real.policies.common import atomic


def test_write_replaces_content_and_leaves_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "f.json"
    atomic.write_json(target, {"a": 1})
    atomic.write_json(target, {"a": 2})
    assert target.read_text().strip().endswith("}") and '"a": 2' in target.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_failure_while_writing_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "model.bin"
    atomic.write_bytes(target, b"old")
    with pytest.raises(RuntimeError), atomic.atomic_writer(target) as f:
        f.write(b"half of the new")
        raise RuntimeError("killed mid-write")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.bin"]


def test_files_get_normal_permissions_not_mkstemps_0600(tmp_path: Path) -> None:
    atomic.write_text(tmp_path / "x.txt", "x")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "x.txt").stat().st_mode) == 0o666 & ~mask


def test_stale_temporaries_are_removed(tmp_path: Path) -> None:
    (tmp_path / (atomic.TMP_PREFIX + "model.zip.abc")).write_bytes(b"partial")
    (tmp_path / "keep.txt").write_text("k")
    atomic.remove_stale_temporaries(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
