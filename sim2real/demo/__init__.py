"""The demo: classical controllers on every robot, and its report."""
