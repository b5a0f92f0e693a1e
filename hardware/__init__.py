"""sim2real.hardware: robots' wire protocols and protocol-level emulators.

The first drivers arrive with the deployment issue; this package is its home."""
