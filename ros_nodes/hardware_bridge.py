"""``hardware_bridge``: the ROS 2 driver of a real robot, through the robot's own backend
(:mod:`sim2real.hardware.backend`: ros2_control for the arm, Unitree's low-level DDS for
the Go2, CRTP through cflib for the Crazyflie).

It exposes exactly what ``sim_bridge`` exposes for the same robot, with the same QoS:
the robot's state streams (:mod:`.state_output`, published the moment the backend
decodes a state), the ``command`` subscription (std_msgs/Float64MultiArray in the
robot's command space, checked for size, labels and finite values, and accepted from
the safety filter only: :mod:`.command_gate`), and ``diagnostics`` with the backend's
health (phase, frames per reason, the pre-flight table).

Life cycle. Configure connects (the robot stays in its safe state: the arm holds, the
Go2 damps, the Crazyflie's thrust stays locked). Activate starts the pre-flight check
(:mod:`sim2real.hardware.preflight`) on the live streams; the robot is enabled only
after it passes, by ``auto_enable`` or by the ``~/enable`` service (std_srvs/Trigger),
a person's explicit go. ``~/estop`` latches the robot's own emergency stop.

The bridge is an e-stop source of the safety filter (``estop``, :func:`~.qos.estop_qos`):
it says ``true`` while its robot is e-stopped (the robot's own stop as the backend reads
it: a UR protective stop, the driver's program stopped, a Go2 or Crazyflie e-stop, or
``~/estop``), and ``false`` from the moment it connects. The filter latches on it, so a
robot that stopped on its own never resumes the policy's stream where it left off: the
operator's reset (refused while the robot is still stopped) drops every old command.

The bridge is the deadman the vendors' interfaces lack: ros2_control's forward
controllers and the Go2's firmware apply the last command forever, so with no fresh
filtered command for ``command_timeout_periods`` control periods the robot is put in
its safe state (the backends also check on their own loops, so a dead bridge ends the
same way).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from rclpy.event_handler import SubscriptionEventCallbacks
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from sim2real.hardware.backend import HardwareError, Phase, RobotBackend, backend_class
from sim2real.hardware.preflight import Preflight, format_table
from sim2real.hardware.realtime import EXECUTOR_PRIORITY
from sim2real.policies.safety.spaces import command_space
from sim2real.ros_nodes import messages as M
from sim2real.ros_nodes.base import ManagedNode, run_node
from sim2real.ros_nodes.command_gate import CommandGate
from sim2real.ros_nodes.qos import command_qos, estop_qos
from sim2real.ros_nodes.settings import HardwareBridgeSettings
from sim2real.ros_nodes.state_output import MissingMeasurement, StatePublishers
from sim2real.sim import robot_deployment
from sim2real.sim.core.deployment import Measurements
from sim2real.sim.core.errors import ConfigError


class HardwareBridge(ManagedNode):
    """ROS 2 <-> one real robot's backend. Counters: see :meth:`summary`."""

    executor_priority = EXECUTOR_PRIORITY

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("hardware_bridge", HardwareBridgeSettings, **kwargs)
        self.backend: RobotBackend | None = None
        self.preflight: Preflight | None = None
        self.preflight_verdict = ""
        """The latest finished pre-flight check's failures (empty: it passed)."""
        self.preflight_runs = 0
        self.preflight_checks: list[str] = []
        """Each finished check's verdict, ``PASS`` or its failures (the latest 10): a pass
        after failed checks keeps what failed before."""
        self.commands_received = self.commands_rejected = self.commands_refused = 0
        self.commands_sent = self.commands_while_disabled = self.deadline_misses = 0
        self.deadman_trips = self.states_published = self.publish_errors = 0
        self.first_enable_requested_at: float | None = None
        """When the first enable that took effect was asked for (``time.monotonic()``)."""
        self._last_command = 0.0
        self._last_phase: Phase | None = None
        """The backend's phase at the previous tick (a change the bridge did not make is logged)."""
        self._enabling: threading.Thread | None = None
        self._auto_enable_pending = False
        self._estop_said: bool | None = None
        """What the bridge last said on ``estop`` (None: nothing yet)."""
        # One estop writer for the node's life: a second one, created at a reconfigure,
        # would keep its own last state (an old true locks the reset out).
        self.estop_pub = self.create_publisher(Bool, "estop", estop_qos())
        self._judging = threading.Lock()
        self._timers: list[Any] = []

    # -- lifecycle -------------------------------------------------------------------
    def load(self) -> None:
        p = self.params()
        self.info = robot_deployment(p["robot"])
        # The filter's commands are in the driver's mode (reference modes arrive with the
        # reference added), whatever mode the policy was trained in.
        mode = self.info.driver_mode(p["action_mode"] or self.info.action_mode, {})[0]
        self.space = command_space(p["robot"], mode)
        try:
            options = json.loads(p["backend_options"] or "{}")
        except json.JSONDecodeError as exc:
            raise ConfigError("backend_options", f"not a JSON object: {exc}") from None
        if not isinstance(options, dict):
            raise ConfigError("backend_options", "must be a JSON object")
        cls = backend_class(self.info.backend(p["backend"]))
        self.state_out = StatePublishers(self, self.info)
        events = SubscriptionEventCallbacks(deadline=self._on_deadline)
        self.command_sub = self.create_subscription(Float64MultiArray, "command", self._on_command,
                                                    command_qos(p["command_deadline"]), event_callbacks=events,
                                                    message_info=True)
        self.gate = CommandGate.for_node(self, "command", p["command_publisher"])
        self.create_service(Trigger, "~/enable", self._on_enable)
        self.create_service(Trigger, "~/estop", self._on_estop)
        self.timeout = float(p["command_timeout_periods"]) * self.space.control_dt
        self.publish_period = 1.0 / p["state_publish_rate"] if p["state_publish_rate"] > 0 else 0.0
        self._last_publish = -1.0
        self.backend = backend = cls(mode, options)
        backend.on_state(self._on_state)
        try:
            backend.connect(float(p["connect_timeout"]))
        except HardwareError as exc:
            backend.close()
            self.backend = None
            raise ConfigError("backend", f"{cls.protocol}: {exc}") from None
        self._estop_said = None  # a (re)configured bridge says its state on its new writer
        self._say_estop(backend.phase)
        self.get_logger().info(f"{p['robot']} through {cls.protocol} ({mode}; command elements: "
                               f"{list(self.space.names)}); safe until the pre-flight check passes and it is enabled")

    def unload(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None

    def start(self) -> None:
        p = self.params()
        self.preflight = Preflight(self.info, self.configured_backend(), float(p["preflight_seconds"]))
        self.preflight_verdict, self.preflight_runs = "", 0
        self._timers = [self.create_control_timer(self.space.control_dt, self._tick)]

    def stop(self) -> None:
        for timer in self._timers:
            self.destroy_timer(timer)
        self._timers = []
        if self.backend is not None and self.backend.phase is Phase.ENABLED:
            self.backend.safe("the bridge was deactivated")

    def destroy_node(self) -> None:
        self.unload()
        super().destroy_node()

    def configured_backend(self) -> RobotBackend:
        if self.backend is None:
            raise RuntimeError("hardware_bridge: not configured")
        return self.backend

    # -- robot -> ROS ----------------------------------------------------------------
    def _on_state(self, m: Measurements) -> None:
        """From the backend's thread: publish at once (rclpy publishers are thread-safe)."""
        if self.preflight is not None:
            self.preflight.add(m)
        now = time.monotonic()
        if now - self._last_publish < self.publish_period:
            return
        self._last_publish = now
        try:
            self.state_out.publish(m, self.get_clock().now().to_msg(), m.specific_force)
        except MissingMeasurement as exc:
            self.publish_errors += 1
            self.log_throttled("missing", f"state not published: {exc}", level="error")
            return
        except Exception as exc:  # shutting down under the backend's thread
            if self.context.ok():
                self.log_throttled("publish", f"state not published: {exc!r}", level="error")
            return
        self.states_published += 1

    # -- ROS -> robot ----------------------------------------------------------------
    def _on_command(self, msg: Float64MultiArray, info: Any) -> None:
        refused = self.gate.admit(info, time.monotonic())  # also notes who is sending, for enable
        backend = self.backend
        if not self.active or backend is None or backend.phase is not Phase.ENABLED or self.gate.bound is None:
            self.commands_while_disabled += 1  # nothing is sent; enabling binds the filter
            return
        if refused:  # deadman: nothing fresh from the filter -> safe state on the next tick
            self.commands_refused += 1
            self.log_throttled("foreign", refused, level="error")
            return
        values, key, reason = M.driver_command(msg, self.space.names)
        if values is None:
            self.commands_rejected += 1
            self.log_throttled(key, reason, level="error")
            return
        self.commands_received += 1
        try:
            backend.command(values)
        except (ValueError, HardwareError) as exc:
            self.commands_rejected += 1
            self.log_throttled("command", f"command not sent: {exc}", level="error")
            return
        self._last_command = time.monotonic()
        self.commands_sent += 1

    def _tick(self) -> None:
        backend = self.backend
        if backend is None:
            return
        self._after_preflight()
        if self._auto_enable_pending:
            self._auto_enable()
        lost = self.gate.watch(time.monotonic())
        if lost and backend.phase is Phase.ENABLED:
            backend.safe(lost)
        if lost:
            self.get_logger().error(f"{lost}: the robot is in its safe state until a safety filter runs "
                                    "and it is enabled again (~/enable)")
        phase = backend.phase
        if self._last_phase is Phase.ENABLED and phase is not Phase.ENABLED:
            # The backend's own watchdog (stale state, a lost link) put the robot in its
            # safe state: the operator must know, as they must enable it again.
            self.get_logger().error(f"robot {phase.value}: {backend.health().reason or 'no reason given'}; "
                                    "enable again (~/enable) once the cause is cleared")
        self._last_phase = phase
        self._say_estop(phase)
        if phase is not Phase.ENABLED or self._enabling is not None:
            return
        if time.monotonic() - self._last_command > self.timeout:
            self.drain(self.command_sub)  # a command already waiting is not a stale one
        if time.monotonic() - self._last_command > self.timeout:
            self.deadman_trips += 1
            backend.safe(f"no fresh filtered command for {self.timeout * 1000:.0f} ms")
            self._last_phase = backend.phase
            self.get_logger().error(f"no fresh filtered command for {self.timeout * 1000:.0f} ms: "
                                    "robot in its safe state; enable again when the graph is healthy")

    def _after_preflight(self) -> None:
        """Once the pre-flight check has read enough: its table in the log (when its verdict
        changed), and the robot enabled if it passed and ``auto_enable`` is set. A failed
        check starts again on fresh data: a mismatch fails every time, a stream that
        stalled while the machine was busy starting the graph passes once it holds for a
        whole window."""
        # The executor's tick and a caller of enable() may both get here: the one that
        # judges holds the lock until the verdict is recorded, so the other never sees a
        # finished check with no verdict yet.
        with self._judging:
            p = self.preflight
            if p is None or p.reported or not p.finished():
                return
            p.reported = True
            verdict = p.verdict()
            if verdict != self.preflight_verdict or self.preflight_runs == 0:
                log = self.get_logger().error if verdict else self.get_logger().info
                log("pre-flight check:\n" + format_table(p.items()))
            self.preflight_verdict, self.preflight_runs = verdict, self.preflight_runs + 1
            self.preflight_checks = [*self.preflight_checks[-9:], verdict or "PASS"]
            if verdict:
                self.preflight = Preflight(self.info, self.configured_backend(), p.seconds)
                return
        if self.params(["auto_enable"])["auto_enable"]:
            self._auto_enable_pending = True
            self._auto_enable()

    def _auto_enable(self) -> None:
        """``auto_enable`` once the check passed: retried on each tick while the safety
        filter is not there yet to bind (the launch order is not the discovery order)."""
        self.gate.filter_missing = False
        reason = self.enable()
        if not reason or not self.gate.filter_missing:
            self._auto_enable_pending = False
            if reason:
                self.get_logger().error(f"auto_enable: {reason}")
        else:
            self.log_throttled("auto_enable", f"auto_enable waits: {reason}", period=5.0, level="warning")

    def _on_deadline(self, event: Any) -> None:
        self.deadline_misses += 1

    # -- enable and e-stop ---------------------------------------------------------------
    def enable(self) -> str:
        """Start enabling the robot; ``""`` once started, else why not."""
        backend, preflight = self.backend, self.preflight
        if backend is None or preflight is None or not self.active:
            return "the bridge is not active"
        if self._enabling is not None:
            return "already enabling"
        if backend.phase is Phase.ENABLED:
            return "already enabled"
        if backend.phase is Phase.ESTOPPED:
            return f"e-stopped ({backend.health().reason}): clear the cause and restart the bridge"
        self._after_preflight()  # a check that has just finished is judged now, not on the next tick
        if self.preflight_runs == 0:
            return preflight.verdict() or "the pre-flight check is being judged"
        if self.preflight_verdict:
            return self.preflight_verdict
        unbound = self.gate.bind(time.monotonic())  # the filter running now is the one the robot obeys
        if unbound:
            return unbound
        self._enabling = threading.Thread(target=self._enable, args=(backend, time.monotonic()), daemon=True)
        self._enabling.start()
        return ""

    def _enable(self, backend: RobotBackend, requested_at: float) -> None:
        try:
            backend.enable()
            self._last_command = time.monotonic()  # the policy's first command has one timeout to arrive
            if self.first_enable_requested_at is None:  # enable -> first motion starts here
                self.first_enable_requested_at = requested_at
            self.get_logger().info("robot enabled: filtered commands reach it")
        except HardwareError as exc:
            self.get_logger().error(f"enable refused: {exc}")
        finally:
            self._enabling = None

    def _say_estop(self, phase: Phase) -> None:
        """Tell the safety filter when the robot's own e-stop engages or clears."""
        stopped = phase is Phase.ESTOPPED
        if stopped != self._estop_said:
            self.estop_pub.publish(Bool(data=stopped))
            self._estop_said = stopped

    def _on_enable(self, request: Any, response: Any) -> Any:
        reason = self.enable()
        response.success, response.message = not reason, reason or "enabling"
        return response

    def _on_estop(self, request: Any, response: Any) -> Any:
        backend = self.backend
        if backend is None:
            response.success, response.message = False, "not connected"
            return response
        backend.estop("e-stop requested on ~/estop")
        response.success, response.message = True, "e-stop latched"
        return response

    # -- reporting ---------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        health = self.backend.health() if self.backend is not None else None
        out: dict[str, Any] = {
            "commands_received": self.commands_received, "commands_rejected": self.commands_rejected,
            "commands_refused": self.commands_refused, "commands_sent": self.commands_sent,
            "commands_while_disabled": self.commands_while_disabled, "command_deadline_misses": self.deadline_misses,
            "deadman_trips": self.deadman_trips, "states_published": self.states_published,
            "publish_errors": self.publish_errors, **self.scheduling(),
        }
        if health is not None:
            out.update(phase=health.phase.value, reason=health.reason, state_age_ms=round(health.state_age * 1e3, 1),
                       **{f"link_{k}": v for k, v in health.counters.items()})
        out["preflight"] = ("reading" if self.preflight_runs == 0 else "FAIL" if self.preflight_verdict else "PASS")
        out["preflight_runs"] = self.preflight_runs
        if self.first_enable_requested_at is not None:  # time.monotonic(): the machine's, every process's
            out["first_enable_requested_at"] = round(self.first_enable_requested_at, 4)
        if self.preflight_checks:
            out["preflight_checks"] = " | ".join(self.preflight_checks)
        if self.preflight_verdict:
            out["preflight_failed"] = self.preflight_verdict
        return out

    def report(self) -> None:
        s = self.summary()
        phase = s.get("phase", "disconnected")
        level = 2 if phase in ("estopped", "disconnected") else (1 if phase != "enabled" else 0)
        self.publish_status(level, f"robot {phase}{': ' + s['reason'] if s.get('reason') else ''}", s)


def main(args: list[str] | None = None) -> int:
    return run_node(HardwareBridge, args)


if __name__ == "__main__":
    raise SystemExit(main())
