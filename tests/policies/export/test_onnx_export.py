"""Exported policies: ONNX parity with torch (<= 1e-5), normalization and
clipping inside the graph, the metadata schema, OnnxPolicy's checks, a torch-free
import chain, and TorchScript."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from policy_helpers import PUCK_ID, register_puck

from sim2real.policies.deploy import SCHEMA, OnnxPolicy
from sim2real.policies.errors import ObservationError, PolicyFileError


@pytest.fixture(scope="module")
def exported(trained_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    """The tiny PPO run's last checkpoint exported as ONNX, and the loaded run."""
    from sim2real.policies.export.exporter import export_policy
    from sim2real.policies.loading import load_run

    out = tmp_path_factory.mktemp("export")
    with pytest.MonkeyPatch.context() as mp:
        register_puck(mp)
        result = export_policy(trained_runs["ppo"], "onnx", out, which="last")
        loaded = load_run(trained_runs["ppo"], "last")
    return result, loaded


@pytest.mark.heavy
def test_onnx_matches_torch_and_sb3_within_1e5(exported) -> None:
    result, loaded = exported
    policy = OnnxPolicy(result.policy_path)
    rng = np.random.default_rng(0)
    rms = loaded.vecnorm.obs_rms
    # Around the training distribution, far outside it (exercising the clip), and plain noise.
    obs = np.concatenate(
        [
            rms.mean + np.sqrt(rms.var) * rng.normal(size=(100, 6)),
            rms.mean + np.sqrt(rms.var) * 50 * rng.normal(size=(100, 6)),
            rng.normal(size=(100, 6)),
        ]
    ).astype(np.float32)
    ours = policy(obs)
    assert np.max(np.abs(ours - loaded.policy()(obs))) <= 1e-5
    sb3, _ = loaded.model.predict(loaded.vecnorm.normalize_obs(obs), deterministic=True)
    assert np.max(np.abs(ours - sb3)) <= 1e-5  # normalization really is inside the graph
    assert np.all(np.abs(policy(np.full((4, 6), 1e6, np.float32))) <= 1.0)


def test_batch_and_single_observations(exported) -> None:
    policy = OnnxPolicy(exported[0].policy_path)
    obs = np.random.default_rng(1).normal(size=(33, 6)).astype(np.float32)
    batch = policy(obs)
    assert batch.shape == (33, 2) and batch.dtype == np.float32
    assert policy(obs[5]).shape == (2,)
    np.testing.assert_allclose(policy(obs[5]), batch[5], atol=1e-6)
    assert policy(obs[:1]).shape == (1, 2)


def test_metadata_schema(exported) -> None:
    result, loaded = exported
    m = json.loads(result.metadata_path.read_text())
    assert m["schema"] == SCHEMA and m["format"] == "onnx" and m["file"] == "policy.onnx"
    assert m["task"] == PUCK_ID and m["robot"] == "test" and m["action_mode"] == "force" and m["algo"] == "ppo"
    assert m["observation"]["layout"] == [
        {"name": "pos", "size": 2, "start": 0},
        {"name": "vel", "size": 2, "start": 2},
        {"name": "target", "size": 2, "start": 4},
    ]
    assert m["action"]["layout"] == [{"name": "force", "size": 2, "start": 0}]
    assert (m["action"]["low"], m["action"]["high"], m["action"]["clipped_in_graph"]) == (-1.0, 1.0, True)
    norm = m["observation"]["normalization"]
    np.testing.assert_array_equal(norm["mean"], loaded.vecnorm.obs_rms.mean)
    np.testing.assert_array_equal(norm["var"], loaded.vecnorm.obs_rms.var)
    assert norm["clip"] == 10.0 and norm["in_graph"] is True
    assert m["control"] == {"control_dt": 0.02, "control_hz": 50.0, "physics_dt": 0.005}
    assert m["training"]["config_hash"] == loaded.config.hash() and m["training"]["step"] == loaded.step
    assert m["io"] == {"input": "obs", "output": "action", "dtype": "float32", "batch": "dynamic"}
    from sim2real.policies.common.checkpoint import sha256_file
    from sim2real.policies.export.metadata import SCHEMA as WRITER_SCHEMA

    assert m["sha256"] == sha256_file(result.policy_path) and WRITER_SCHEMA == SCHEMA


def test_onnx_policy_rejects_bad_observations(exported) -> None:
    policy = OnnxPolicy(exported[0].policy_path.parent)  # the export folder works too
    with pytest.raises(ObservationError, match=r"expected \(6,\)"):
        policy(np.zeros(7))
    with pytest.raises(ObservationError, match="non-finite"):
        policy(np.array([0, 0, np.nan, 0, 0, 0]))
    policy.check_observation_layout([("pos", 2), ("vel", 2), ("target", 2)])
    with pytest.raises(PolicyFileError, match="differs"):
        policy.check_observation_layout([("pos", 2), ("target", 2), ("vel", 2)])


def test_onnx_policy_rejects_bad_files(exported, tmp_path: Path) -> None:
    src = exported[0]
    onnx_file, meta = tmp_path / "policy.onnx", tmp_path / "policy.onnx.json"
    onnx_file.write_bytes(src.policy_path.read_bytes())
    meta.write_text(src.metadata_path.read_text())
    assert OnnxPolicy(meta).obs_size == 6  # via the metadata file
    onnx_file.write_bytes(src.policy_path.read_bytes()[:-10])
    with pytest.raises(PolicyFileError, match="SHA-256"):
        OnnxPolicy(onnx_file)
    onnx_file.write_bytes(src.policy_path.read_bytes())
    bad = json.loads(src.metadata_path.read_text())
    bad["schema"] = "something/else"
    meta.write_text(json.dumps(bad))
    with pytest.raises(PolicyFileError, match="metadata"):
        OnnxPolicy(onnx_file)
    bad = json.loads(src.metadata_path.read_text())
    bad["observation"]["size"] = 7
    meta.write_text(json.dumps(bad))
    with pytest.raises(PolicyFileError, match="graph input has size 6"):
        OnnxPolicy(onnx_file)
    meta.unlink()
    with pytest.raises(PolicyFileError, match="does not exist"):
        OnnxPolicy(onnx_file)


def test_deploy_import_chain_has_no_torch(exported) -> None:
    code = (
        "import sys, numpy as np\n"
        "from sim2real.policies.deploy import OnnxPolicy\n"
        f"p = OnnxPolicy({str(exported[0].policy_path)!r})\n"
        "p(np.zeros(6, np.float32))\n"
        "bad = [m for m in ('torch', 'stable_baselines3') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


@pytest.mark.filterwarnings("ignore:.*torch.jit.load.*:FutureWarning")
def test_torchscript_export(trained_runs: dict[str, Path], puck, tmp_path: Path) -> None:
    import torch

    from sim2real.policies.export.exporter import export_policy
    from sim2real.policies.loading import load_run

    result = export_policy(trained_runs["td3"], "torchscript", tmp_path, which="last")
    assert result.policy_path.name == "policy.pt" and result.metadata["format"] == "torchscript"
    assert result.metadata_path.name == "policy.pt.json"
    module = torch.jit.load(str(result.policy_path))
    obs = np.random.default_rng(3).normal(size=(16, 6)).astype(np.float32)
    with torch.no_grad():
        ours = module(torch.from_numpy(obs)).numpy()
    assert np.max(np.abs(ours - load_run(trained_runs["td3"], "last").policy()(obs))) <= 1e-5
    with pytest.raises(PolicyFileError, match="not ONNX"):
        OnnxPolicy(result.metadata_path)


def test_export_without_observation_normalization(puck, tmp_path: Path) -> None:
    """normalize.obs: false -> an identity normalization in the graph and the metadata."""
    from policy_helpers import tiny_config

    from sim2real.policies.export.exporter import export_policy
    from sim2real.policies.loading import load_run
    from sim2real.policies.trainer import train

    cfg = tiny_config("td3", {"normalize.obs": False, "total_steps": 256, "eval.every_steps": 0})
    train(cfg, tmp_path / "run", progress=False)
    result = export_policy(tmp_path / "run", "onnx")
    norm = result.metadata["observation"]["normalization"]
    assert norm["enabled"] is False and norm["mean"] == [0.0] * 6 and norm["var"] == [1.0] * 6
    loaded = load_run(tmp_path / "run")
    obs = np.random.default_rng(4).normal(0, 3, (32, 6)).astype(np.float32)
    sb3, _ = loaded.model.predict(obs, deterministic=True)  # raw observations, no statistics
    assert np.max(np.abs(OnnxPolicy(result.policy_path)(obs) - sb3)) <= 1e-5


def test_onnx_policy_import_chain_loads_neither_mujoco_nor_torch() -> None:
    """A robot computer running exported policies needs onnxruntime only."""
    import subprocess
    import sys

    code = (
        "import sys, sim2real.policies.deploy\n"
        "print(sorted(m for m in ('torch', 'mujoco', 'gymnasium', 'stable_baselines3') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
