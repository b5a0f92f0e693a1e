"""The Go2's low-level frames as both ends build and check them (on top of :mod:`.codec`).

A LowCmd_ carries head 0xFE 0xEF, level flag 0xFF (low level), per motor mode 0x01
(servo), q, dq, kp, kd, tau, and the CRC32 filled last. The firmware drops a frame whose
CRC, head or level flag is wrong; both ends here also refuse non-finite values (a NaN
target must never reach a motor, whatever a given firmware would do with it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim2real.hardware.go2.codec import Codec, FrameError
from sim2real.hardware.go2.state_machine import MotorTargets
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.quadruped import constants as C

HEAD = (0xFE, 0xEF)
LEVEL_FLAG_LOW = 0xFF
SERVO_MODE = 0x01
MOTOR_FIELDS = ("q", "dq", "tau", "kp", "kd")


def check_command(codec: Codec, msg: np.ndarray) -> None:
    """Refuse a LowCmd_ the firmware would drop (or that carries non-finite values).

    Raises:
        FrameError: ``head``, ``level_flag``, ``crc`` or ``non_finite``.
    """
    if tuple(msg["head"]) != HEAD:
        raise FrameError("head", f"head {bytes(msg['head']).hex()}")
    if int(msg["level_flag"]) != LEVEL_FLAG_LOW:
        raise FrameError("level_flag", f"level flag {int(msg['level_flag']):#x}")
    if codec.crc(msg) != int(msg["crc"]):
        raise FrameError("crc", "CRC mismatch")
    motors = msg["motor_cmd"][: C.NUM_JOINTS]
    if not all(np.isfinite(motors[k]).all() for k in MOTOR_FIELDS):
        raise FrameError("non_finite", "non-finite motor command")


def fill_command(codec: Codec, msg: np.ndarray, targets: MotorTargets) -> None:
    """Write ``targets`` into the LowCmd_ ``msg`` (the 12 leg motors; the 8 spare slots off),
    set head and level flag, and fill the CRC last."""
    msg["head"] = HEAD
    msg["level_flag"] = LEVEL_FLAG_LOW
    motors = msg["motor_cmd"]
    motors["mode"][: C.NUM_JOINTS] = SERVO_MODE
    motors["mode"][C.NUM_JOINTS:] = 0
    for name in MOTOR_FIELDS:
        motors[name][: C.NUM_JOINTS] = getattr(targets, name)
        motors[name][C.NUM_JOINTS:] = 0.0
    msg["crc"] = codec.crc(msg)


def lowstate_frame(codec: Codec, m: Measurements, accel: np.ndarray, feet: np.ndarray, tick: int) -> bytes:
    """The robot's LowState_ frame for measurements ``m`` (IMU from the base's quaternion
    and body rates), the accelerometer, foot forces and millisecond tick."""
    msg = codec.new()
    msg["head"] = HEAD
    msg["level_flag"] = LEVEL_FLAG_LOW
    motors = msg["motor_state"]
    n = C.NUM_JOINTS
    motors["mode"][:n] = SERVO_MODE
    motors["q"][:n] = m.joint_pos if m.joint_pos is not None else 0.0
    motors["dq"][:n] = m.joint_vel if m.joint_vel is not None else 0.0
    motors["tau_est"][:n] = m.joint_effort if m.joint_effort is not None else 0.0
    motors["temperature"][:n] = 40
    imu = msg["imu_state"]
    quat = np.asarray(m.base_quat if m.base_quat is not None else (1.0, 0.0, 0.0, 0.0), dtype=np.float64)
    imu["quaternion"] = quat
    imu["gyroscope"] = m.base_ang_vel if m.base_ang_vel is not None else 0.0
    imu["accelerometer"] = accel
    imu["rpy"] = quat_to_rpy(quat)
    imu["temperature"] = 40
    msg["foot_force"] = np.clip(np.round(feet), -32768, 32767)
    msg["tick"] = tick
    msg["power_v"] = 28.0
    msg["crc"] = codec.crc(msg)
    return codec.encode(msg)


def quat_to_rpy(quat: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw (rad) of a (w, x, y, z) quaternion, as the Go2's IMU reports them."""
    w, x, y, z = quat / max(float(np.linalg.norm(quat)), 1e-9)
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.array([roll, pitch, yaw])


@dataclass
class LowState:
    """What the host reads from one LowState_ frame (the 12 leg motors)."""

    q: np.ndarray
    dq: np.ndarray
    tau: np.ndarray
    quat: np.ndarray
    """(w, x, y, z)."""
    gyro: np.ndarray
    accel: np.ndarray
    foot_force: np.ndarray
    tick: int


def parse_state(codec: Codec, frame: bytes) -> LowState:
    """Decode and check one lowstate frame.

    Raises:
        FrameError: wrong size or encoding, ``crc``, ``non_finite`` or ``quaternion`` (not unit length).
    """
    msg = codec.decode(frame)
    if codec.crc(msg) != int(msg["crc"]):
        raise FrameError("crc", "CRC mismatch")
    motors, imu = msg["motor_state"][: C.NUM_JOINTS], msg["imu_state"]
    out = LowState(motors["q"].astype(np.float64), motors["dq"].astype(np.float64),
                   motors["tau_est"].astype(np.float64), imu["quaternion"].astype(np.float64),
                   imu["gyroscope"].astype(np.float64), imu["accelerometer"].astype(np.float64),
                   msg["foot_force"].astype(np.float64), int(msg["tick"]))
    # one sum: finite exactly when every term is (float32 values cannot overflow a float64 sum)
    if not math.isfinite(sum(float(v.sum()) for v in (out.q, out.dq, out.tau, out.quat, out.gyro, out.accel))):
        raise FrameError("non_finite", "non-finite state")
    norm = math.sqrt(float(out.quat @ out.quat))
    if abs(norm - 1.0) > 0.05:
        raise FrameError("quaternion", f"quaternion norm {norm:.3f}")
    return out



def newest_state(codec: Codec, frames: Sequence[bytes], counts: Counter[str]) -> LowState | None:
    """The newest valid state of a batch of lowstate frames (oldest first), or None.

    A batch of more than one means the reader fell behind: only the newest frame that
    passes :func:`parse_state` is used, the ones after it are counted as
    ``state_rejected_<reason>`` and the older ones as ``states_superseded``, never decoded.
    """
    for age, frame in enumerate(reversed(frames)):
        try:
            state = parse_state(codec, frame)
        except FrameError as exc:
            counts[f"state_rejected_{exc.reason}"] += 1
            continue
        counts["states_superseded"] += len(frames) - 1 - age
        return state
    return None
