"""Unitree Go2, low level over DDS: the host side (:mod:`.backend`) and what both sides share.

* :mod:`.types`: the message types from Unitree's IDL (``unitree_go``, ``unitree_api``).
* :mod:`.codec`, :mod:`.crc`, :mod:`.protocol`: 500 Hz frames with numpy, the firmware's CRC32.
* :mod:`.dds`: the one place the network is configured (loopback unless told otherwise).
* :mod:`.motion_switcher`: releasing sport mode (and answering it, for the emulator).
* :mod:`.state_machine`: damping -> stand up -> policy -> damping, the robot's only watchdog.
* :mod:`.estimator`: base velocity from leg kinematics (low-level state has none).

The robot side is :mod:`sim2real.hardware.emulator.go2`. Needs ``cyclonedds`` (Python binding).
"""
