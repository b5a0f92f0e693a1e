"""Benchmarks: figures reported as ratios against a reference measured in the same run.

`sim2real bench sim`    simulation throughput vs the raw MuJoCo limit and Gymnasium Ant-v5
`sim2real bench train`  PPO/SAC training throughput vs SB3 on Gymnasium Ant-v5
`sim2real bench deploy` ROS 2 state-in to command-out latency at 500 Hz vs a bare rclpy echo
`sim2real bench soak`   the safety filter for an hour at 500 Hz: p99 and RSS per minute
`sim2real bench passivity` energy-tank violations over randomized arm episodes, passivity filter on vs off
`sim2real bench drone-fallback` the drone's fallback in MuJoCo: state lost mid-flight -> touchdown speed, drift
`sim2real bench reward` CLIP reward frames/s (batched vs one frame) and its share of training wall-clock
`sim2real bench console` the correction console: key press -> filtered command latency, fps, CPU share
`sim2real bench import` an imported policy's adapter + ONNX inference per step vs the shipped quadruped policy
`sim2real bench go2 --load N` the Go2's 500 Hz writer beside N CPU-bound competitors, real-time scheduling off and on
`sim2real bench crazyflie --load N` the Crazyflie's setpoint stream and log stream, the same way
`sim2real bench arm --load N` the arm's 200 Hz ros2_control command stream and joint_states, the same way
"""

from __future__ import annotations

import argparse
import importlib

# name -> module with HELP, add_arguments(parser) and run(args): one line per benchmark.
BENCHES = {
    "sim": "sim2real.bench.sim",
    "train": "sim2real.bench.train",
    "deploy": "sim2real.bench.deploy",
    "soak": "sim2real.bench.soak",
    "passivity": "sim2real.bench.passivity",
    "reward": "sim2real.bench.reward",
    "hil": "sim2real.bench.hil",
    "drone-fallback": "sim2real.bench.drone_fallback",
    "console": "sim2real.bench.console",
    "import": "sim2real.bench.imported",
    "go2": "sim2real.bench.go2",
    "crazyflie": "sim2real.bench.crazyflie",
    "arm": "sim2real.bench.arm",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="which", metavar="BENCH", required=True)
    for name, module_name in BENCHES.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        module.add_arguments(p)
        p.set_defaults(_bench=module)


def run(args: argparse.Namespace) -> int:
    return int(args._bench.run(args) or 0)
