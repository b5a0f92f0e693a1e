"""Subcommands of the sim2real CLI (one module each)."""
