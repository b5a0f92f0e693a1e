"""The correction console: a web page to watch a policy, take over, correct, label and
stop, for HIL-SERL runs and deployed ROS 2 graphs (docs/console.md)."""
