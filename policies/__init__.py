"""sim2real.policies: learning algorithms, trained policies, classical controllers.

Uses ``sim2real.sim``; never imports ROS."""
