"""Screenshots of the correction console for docs/console.md, through the user's own
commands: `sim2real deploy --robot R --console` for each robot (the person holding a key)
and `sim2real hil run --console` on the arm.

    python tools/console_screenshots.py --out docs/images
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KEYS = {"arm": "KeyW", "quadruped": "KeyW", "drone": "KeyR"}
"""A key the person holds in each picture (forward; the drone climbs)."""


def console_url(proc: subprocess.Popen, timeout: float = 120.0) -> str:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        match = re.search(r"console: (http\S+)", proc.stderr.readline())
        if match:
            return match.group(1)
    raise RuntimeError("the command did not print its console URL")


def shoot(browser: Any, url: str, path: Path, key: str, wait: float) -> None:
    page = browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(url)
    page.wait_for_function("window.consoleStats && Object.values(window.consoleStats.fps).every(f => f > 3)",
                           timeout=120000)
    time.sleep(wait)
    page.keyboard.down("Space")
    page.keyboard.down(key)
    time.sleep(2.0)
    page.screenshot(path=str(path))
    page.keyboard.up(key)
    page.keyboard.up("Space")
    page.close()


def run(cmd: list[str], browser: Any, path: Path, key: str, wait: float) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "sim2real", *cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        shoot(browser, console_url(proc), path, key, wait)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


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
        for robot, key in KEYS.items():
            run(["deploy", "--robot", robot, "--console", "--console-port", "0", "--duration", "120"], browser,
                args.out / f"console_{robot}.png", key, wait=4.0)
        run(["hil", "run", "--console", "--console-port", "0", "--obs-mode", "state", "--steps", "2000",
             "--run-dir", str(Path(tmp) / "hil")], browser, args.out / "console_hil_arm.png", "KeyW", wait=8.0)
        browser.close()
    print("\n".join(str(p) for p in sorted(args.out.glob("console_*.png"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
