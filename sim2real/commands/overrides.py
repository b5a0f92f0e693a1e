"""``--set KEY=VALUE``: one override flag for every command that takes a config.

The value is read as a YAML scalar or flow collection (``32``, ``3e-4``, ``true``,
``[64, 64]``, ``null``), then goes through the same strict loader as the files
(:mod:`sim2real.sim.core.schema`), so a bad value fails the same way a bad file does.
"""

from __future__ import annotations

import argparse
from typing import Any

import yaml

from sim2real.errors import ConfigError


def add_set_flag(parser: argparse.ArgumentParser, example: str) -> None:
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help=f"override one config value (repeatable; dotted keys), e.g. --set {example}")


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """``["ppo.n_steps=32"]`` -> ``{"ppo.n_steps": 32}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", f"expected KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            raise ConfigError(f"--set {key.strip()}", f"cannot read {text!r} as a value") from None
    return out

