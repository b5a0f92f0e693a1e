"""sim2real.ros_nodes: the ROS 2 (rclpy) deployment layer (docs/deployment.md).

Nodes (managed/lifecycle, one module each, ``python -m sim2real.ros_nodes.<node>``):
``sim_bridge`` (a simulated robot speaking a real driver's topics), ``policy`` (an
exported ONNX policy or a classical controller at the control rate), ``safety_filter``
(the chain of :mod:`sim2real.policies.safety` between policy and robot) and
``recorder`` (MCAP rosbag2). ``graph`` runs them in one process or one process per
node; ``deployment`` is ``sim2real deploy``'s run and summary."""
