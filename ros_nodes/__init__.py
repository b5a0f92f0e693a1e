"""sim2real.ros_nodes: rclpy nodes (sim bridge, policy, safety filter, recorder).

The ROS 2 deployment layer arrives with the deployment issue; this package is its home."""
