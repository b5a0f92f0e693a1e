"""Protocol-level robot emulators backed by the simulator (the robot side of the wire)."""
