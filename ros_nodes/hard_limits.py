"""A safety filter's hard limits: fixed at its first configure, only tightened after.

The values the filter is first configured with (the parameter file, itself capped by
the robot's published ceilings) are the run's hard limits. While it runs, a limit may
move only towards stricter, within them (:mod:`sim2real.policies.safety.tightening`);
the parameter descriptors are narrowed to them, so ``ros2 param describe`` shows what a
change may reach and rclpy itself refuses a loosening value.
"""

from __future__ import annotations

from typing import Any

from sim2real.policies.safety.tightening import Direction, check_change


class HardLimits:
    """Args:
        directions: Which way each tightenable limit tightens (``tightening.directions``)."""

    def __init__(self, directions: dict[str, Direction]) -> None:
        self.directions = directions
        self.values: dict[str, Any] | None = None
        """The hard limits (``None`` before the first configure)."""

    def configure(self, node: Any, values: dict[str, Any]) -> None:
        """At each configure: the first fixes the hard limits (and the descriptors); a later
        one (cleanup -> configure) must keep the values set meanwhile within them.

        Raises:
            ValueError: a value is beyond its hard limit.
        """
        current = {n: values[n] for n in self.directions}
        if self.values is None:
            self.values = current
            self._describe(node)
            return
        reason = check_change(self.values, current, self.directions)
        if reason:
            raise ValueError(reason)

    def refuse(self, changes: dict[str, Any]) -> str:
        """``""`` when ``changes`` keep every limit within its hard limit, else why not."""
        return check_change(self.values or {}, changes, self.directions)

    def _describe(self, node: Any) -> None:
        from rcl_interfaces.msg import FloatingPointRange, IntegerRange

        assert self.values is not None
        for name, direction in self.directions.items():
            hard = self.values[name]
            d = node.describe_parameter(name)
            d.additional_constraints = (f"hard limit {hard} (set at the first configure); while the node runs it may "
                                        f"only be {'lowered' if direction == 'lower' else 'raised'}")
            if isinstance(hard, float) and d.floating_point_range:
                r = d.floating_point_range[0]
                lo, hi = (r.from_value, hard) if direction == "lower" else (hard, r.to_value)
                d.floating_point_range = [FloatingPointRange(from_value=lo, to_value=hi, step=0.0)]
            elif isinstance(hard, int) and not isinstance(hard, bool) and d.integer_range:
                r = d.integer_range[0]
                lo, hi = (r.from_value, hard) if direction == "lower" else (hard, r.to_value)
                d.integer_range = [IntegerRange(from_value=lo, to_value=hi, step=1)]
            node.set_descriptor(name, d)
