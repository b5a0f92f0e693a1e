"""PX4 vehicles over MAVLink (offboard control), spoken through pymavlink.

* :mod:`~sim2real.hardware.px4.frames`: our frames (world ENU, body FLU) <-> PX4's
  (local NED, body FRD), one place for every sign flip.
* :mod:`~sim2real.hardware.px4.modes`: PX4's flight modes as ``custom_mode`` in HEARTBEAT
  and ``MAV_CMD_DO_SET_MODE``.
* :mod:`~sim2real.hardware.px4.link`: the host's ``mavutil`` connection, its reader
  thread (state in our frames, acks, STATUSTEXT) and MAVLink's command protocol.
* :mod:`~sim2real.hardware.px4.backend`: :class:`Px4Backend` (offboard body rates + thrust).

The vehicle side (PX4's commander over the simulated drone) is
:mod:`sim2real.hardware.emulator.px4`.
"""
