"""sim2real.hardware: real robots' own protocols, and their simulator-backed emulators.

* :mod:`~sim2real.hardware.backend`: the one interface every robot's backend implements
  (connect, enable, command, safe, estop, state, health) and their registry;
* :mod:`~sim2real.hardware.ros2_control`: a Franka-class arm through ros2_control's topics;
* :mod:`~sim2real.hardware.go2`: a Unitree Go2 through its low-level DDS topics;
* :mod:`~sim2real.hardware.crazyflie`: a Crazyflie through cflib (CRTP);
* :mod:`~sim2real.hardware.preflight`: the pre-flight check of a robot's live data;
* :mod:`~sim2real.hardware.emulator`: the robot side of each protocol, backed by ``sim2real.sim``.

Imports ``sim2real.sim`` only (tests/test_layering.py); the ros2_control backend and
emulator also speak rclpy, which is that robot's protocol."""
