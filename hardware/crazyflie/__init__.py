"""The Crazyflie 2.x behind its own radio protocol (CRTP), spoken through Bitcraze's cflib.

* :mod:`~sim2real.hardware.crazyflie.crtp`: CRTP framing (header byte: port, channel),
  the port and channel numbers, and the log/parameter type codes. Shared by the host
  side and the emulator, so both agree on every byte.
* :mod:`~sim2real.hardware.crazyflie.thrust`: collective thrust in newtons <-> the
  firmware's 16-bit thrust command, and the sign conventions of the legacy setpoint.
* :mod:`~sim2real.hardware.crazyflie.landing`: the backend's safe state, the firmware's
  own landing (its high-level commander), handed over and watched.
* :mod:`~sim2real.hardware.crazyflie.backend`: :class:`CrazyflieBackend` (cflib's API).

The robot side (firmware behaviour over the simulated drone) is
:mod:`sim2real.hardware.emulator.crazyflie`.
"""
