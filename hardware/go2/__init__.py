"""Unitree Go2, low level over DDS: the host side (:mod:`.backend`) and what both sides share.

* :mod:`.types`: the message types from Unitree's IDL (``unitree_go``, ``unitree_api``).
* :mod:`.codec`, :mod:`.crc`, :mod:`.protocol`: 500 Hz frames with numpy, the firmware's CRC32.
* :mod:`.dds`: the one place the network is configured (loopback unless told otherwise).
* :mod:`.rpc`: Unitree's request/response services over DDS, both sides.
* :mod:`.motion_switcher`, :mod:`.sport`: releasing and selecting sport mode; the sport
  service's StandDown (and answering both, for the emulator).
* :mod:`.handover`: sport mode -> lying -> low level, and back (Unitree's sequence).
* :mod:`.state_machine`: damping -> stand up -> policy -> lie down / damping, the robot's
  only watchdog.
* the leg odometry (low-level state has no base velocity) is robot kinematics:
  :mod:`sim2real.sim.quadruped.estimator`.

The robot side is :mod:`sim2real.hardware.emulator.go2` (its sport mode:
:mod:`sim2real.hardware.emulator.go2_sport`). Needs ``cyclonedds`` (Python binding).
"""
