"""Teleoperation: a person's commands as a safe command source (the correction console's
core, shared by its HIL-SERL and ROS 2 attachments)."""
