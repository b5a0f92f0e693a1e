"""Screenshots of the correction console for docs/console.md: each robot's deployed graph
with the console (the person taking over), and a HIL-SERL run on the arm.

    python tools/console_screenshots.py --out docs/images
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "console"), str(ROOT / "tests" / "ros_nodes")]

KEYS = {"arm": "KeyW", "quadruped": "KeyW", "drone": "KeyR"}
"""A key the person holds in each picture (forward; the drone climbs)."""


def shoot(browser: Any, url: str, path: Path, key: str | None, wait: float = 4.0) -> None:
    page = browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(url)
    page.wait_for_function("window.consoleStats && Object.values(window.consoleStats.fps).every(f => f > 5)",
                           timeout=60000)
    time.sleep(wait)
    if key:
        page.keyboard.down("Space")
        page.keyboard.down(key)
        time.sleep(2.0)
    page.screenshot(path=str(path))
    if key:
        page.keyboard.up(key)
        page.keyboard.up("Space")
    page.close()


def robots(browser: Any, out: Path) -> None:
    from test_console_ros import Graph

    from sim2real.ros_nodes.deployment import default_policy

    for robot, key in KEYS.items():
        graph = Graph(robot, policy=default_policy(robot))
        try:
            shoot(browser, graph.console.server.url, out / f"console_{robot}.png", key)
        finally:
            graph.close()


def hil(browser: Any, out: Path, tmp: Path) -> None:
    from console_harness import start_hil_stack, stop_hil_stack

    stack = start_hil_stack(tmp, obs_mode="pixels", labels=True)
    try:
        shoot(browser, stack.server.url, out / "console_hil_arm.png", "KeyW", wait=8.0)
    finally:
        stop_hil_stack(stack)


def main() -> int:
    import tempfile

    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args()
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        robots(browser, args.out)
        hil(browser, args.out, Path(tmp))
        browser.close()
    print("\n".join(str(p) for p in sorted(args.out.glob("console_*.png"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
