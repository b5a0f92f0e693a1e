"""sim2real.hardware: robots' wire protocols, host-side clients and protocol-level emulators.

* :mod:`~sim2real.hardware.arm_protocol`: the arm's UDP packets (encode, decode, checks).
* :mod:`~sim2real.hardware.arm_client`: the host side (what ``ros_nodes/hardware_bridge`` uses).
* :mod:`~sim2real.hardware.emulator`: the robot side, backed by ``sim2real.sim``.

Imports ``sim2real.sim`` only (tests/test_layering.py)."""
