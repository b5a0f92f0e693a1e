"""Fixtures of the console tests: a real Chromium (Debian's, driven by Playwright) and a
HIL-SERL stack behind the console (tests/console/console_harness.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_harness import CHROMIUM, CHROMIUM_ARGS, HilStack, start_hil_stack, stop_hil_stack


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("no chromium: `make deps` installs Debian's chromium package for the browser tests")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def hil(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HilStack]:
    stack = start_hil_stack(tmp_path_factory.mktemp("hil"))
    yield stack
    stop_hil_stack(stack)
