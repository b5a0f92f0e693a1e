"""Which optional extra provides which import, so a missing one is one clear line.

The core install runs the deployment graph (``pip install "sim2real[ros]"`` on a
robot's computer): MuJoCo, ONNX Runtime, numpy, PyYAML. Everything else is an extra:

* ``train``: torch, Stable-Baselines3, ONNX export, TensorBoard, plots and videos;
* ``vlm``: CLIP reward models (open_clip, safetensors), on top of ``train``;
* ``hil``: HIL-SERL (ZeroMQ transport, HDF5 demos, pygame devices), on top of ``train``;
* ``spacemouse``: the SpaceMouse device (needs the hidapi system library);
* ``ros``: the ROS 2 client libraries, the MCAP recorder and OpenCV (camera images);
* ``console``: the correction console's web server (FastAPI, uvicorn) and JPEG (OpenCV);
* ``hardware``: real robots' own protocols (cyclonedds for the Go2, cflib for the Crazyflie,
  pymavlink for PX4);
* ``scale``: Ray and Ray Tune (sweeps, multi-seed studies and evaluation over workers);
* ``all``: train, vlm, hil, ros, console, hardware and scale (what ``make demo`` and ``make test`` install).
"""

from __future__ import annotations

EXTRA_OF: dict[str, str] = {
    **dict.fromkeys(["torch", "torchvision", "stable_baselines3", "tensorboard", "onnx", "onnxscript",
                     "matplotlib", "imageio", "imageio_ffmpeg", "cma"], "train"),
    **dict.fromkeys(["open_clip", "safetensors", "timm"], "vlm"),
    **dict.fromkeys(["zmq", "h5py", "pygame"], "hil"),
    "pyspacemouse": "spacemouse",
    "ray": "scale",
    **dict.fromkeys(["cyclonedds", "cflib", "pymavlink"], "hardware"),
    **dict.fromkeys(["mujoco_warp", "warp"], "warp"),
    **dict.fromkeys(["fastapi", "uvicorn", "starlette", "websockets", "playwright"], "console"),
    **dict.fromkeys(["rclpy", "rosbags", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "std_srvs",
                     "lifecycle_msgs", "diagnostic_msgs", "rcl_interfaces", "rosgraph_msgs", "trajectory_msgs",
                     "builtin_interfaces", "ament_index_python", "lz4", "backports", "cv2"],
                    "ros"),
}
"""Top-level import name -> the extra that installs it."""


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """The line to print for an import an extra would provide (``None``: not ours to explain)."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    if extra is None:
        return None
    return f"this needs {top}, which the '{extra}' extra installs: pip install \"sim2real[{extra}]\""


def describe_error(exc: BaseException) -> str:
    """``exc`` as one line for a person: for an import an extra provides (``exc`` itself or
    what caused it), which extra to install; else the exception's own message (its type
    name when it has none). What a node keeps as the reason it could not start."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ModuleNotFoundError):
            message = missing_extra_message(cause)
            if message is not None:
                return message
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__
