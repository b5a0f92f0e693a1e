"""HIL-SERL: RL on the arm with demonstrations, a success classifier and operator interventions.

  sim2real hil record-demos --task ArmPegInsert --n 20 --device scripted --out demos/peg
  sim2real hil train-classifier --demos demos/peg-labels --out classifier.pt
  sim2real hil learner --run-dir runs/hil --demos demos/peg          (binds 127.0.0.1:5555-5556)
  sim2real hil actor --learner 127.0.0.1 --device spacemouse --steps 20000
  sim2real hil run --demos demos/peg --steps 5000                    (both, simulated arm)
  sim2real hil run --console --labels labels/peg                     (a person corrects in the browser)
  sim2real hil actor --env ros --classifier classifier.pt             (a real arm's graph, policy:=external)

docs/hil_serl.md is the workflow on a real arm.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sim2real.commands.output import add_json_flag, console, emit_json, stdout
from sim2real.commands.overrides import add_set_flag, parse_overrides
from sim2real.errors import ConfigError, Sim2RealError

DEVICES = ("scripted", "keyboard", "gamepad", "spacemouse", "none")


def _env_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, help="HilConfig as JSON/YAML (a run folder's config.json); flags override")
    p.add_argument("--task", help="arm task (default ArmPegInsert)")
    p.add_argument("--obs-mode", choices=("pixels", "state"), help="pixels+proprioception (default) or full state")
    p.add_argument("--cameras", help="comma-separated cameras, e.g. wrist,front (default wrist)")
    p.add_argument("--image-size", type=int, help="square image side (default 64)")
    p.add_argument("--seed", type=int)
    add_set_flag(p, "learner.lr=1e-4")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="hil_command", metavar="SUBCOMMAND", required=True)
    p = sub.add_parser("record-demos", help="record demonstration episodes (HDF5, one file per episode)")
    _env_args(p)
    p.add_argument("--n", type=int, default=20, help="episodes to have in --out (continues a partial recording)")
    p.add_argument("--device", choices=DEVICES[:-1], default="scripted")
    p.add_argument("--out", type=Path, required=True, help="demo folder")
    p.add_argument("--hold-success", type=int, default=0, metavar="STEPS",
                   help="keep recording this many steps after the first success (classifier positives)")
    p.add_argument("--keep-failures", action="store_true", help="also save episodes that did not succeed")
    _env_choice(p)
    p.add_argument("--classifier", type=Path, help="reward classifier (.pt) deciding success (a real arm)")
    add_json_flag(p)

    p = sub.add_parser("train-classifier", help="train the binary success classifier on labelled frames")
    p.add_argument("--demos", type=Path, required=True, help="demo folder recorded with --obs-mode pixels")
    p.add_argument("--out", type=Path, required=True, help="classifier file (.pt)")
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--threshold", type=float, default=0.85)
    p.add_argument("--seed", type=int, default=0)
    add_json_flag(p)

    p = sub.add_parser("learner", help="the learner process (binds, trains, publishes weights)")
    _env_args(p)
    p.add_argument("--run-dir", type=Path, required=True, help="run folder (resumed if it exists)")
    p.add_argument("--demos", type=Path, help="demo folder for the demo buffer")
    p.add_argument("--bind", default="127.0.0.1",
                   help="address to bind (0.0.0.0: accept other machines; off loopback both sides need "
                        "the shared secret in SIM2REAL_HIL_SECRET or transport.secret_file)")
    p.add_argument("--port", type=int, default=5555, help="transitions port (weights on port + 1)")
    p.add_argument("--max-updates", type=int)
    p.add_argument("--max-seconds", type=float)

    p = sub.add_parser("actor", help="the actor process (acts, intervenes, streams transitions)")
    _env_args(p)
    p.add_argument("--learner", default="127.0.0.1",
                   help="learner's host name or address (off loopback: the shared secret is required)")
    p.add_argument("--port", type=int, default=5555)
    p.add_argument("--steps", type=int, default=10_000)
    p.add_argument("--device", choices=DEVICES, default="scripted", help="intervention device")
    p.add_argument("--classifier", type=Path, help="reward classifier (.pt) instead of the simulator's success")
    _env_choice(p)
    p.add_argument("--env-factory", metavar="MODULE:FUNCTION",
                   help="a real arm's environment: FUNCTION(env_config, seed, success_fn) returning an object with "
                        "HilEnv's interface (default: the simulated arm)")
    _console_args(p)
    add_json_flag(p)

    p = sub.add_parser("run", help="learner and actor as two processes on this machine")
    _env_args(p)
    _env_choice(p)
    p.add_argument("--run-dir", type=Path, default=Path("runs/hil"))
    p.add_argument("--demos", type=Path)
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--device", choices=DEVICES, default="scripted")
    p.add_argument("--classifier", type=Path, help="reward classifier (.pt) for the actor")
    p.add_argument("--port", type=int, default=5555)
    _console_args(p)
    add_json_flag(p)


def _env_choice(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", choices=("sim", "ros"), default="sim",
                   help="sim: the simulated arm; ros: the arm behind a running deployment graph (real or emulated, "
                        "started with policy:=external), every action through its safety filter "
                        "(env.graph.* settings, docs/hil_serl.md)")


def _console_args(p: argparse.ArgumentParser) -> None:
    from sim2real.console.launch import add_console_flags

    add_console_flags(p)
    p.add_argument("--labels", type=Path, metavar="DIR",
                   help="with --console: episodes the operator labels go here (train-classifier reads the folder)")


def _config(args: argparse.Namespace):
    """The config file, then the flags and ``--set`` overrides, through one strict load."""
    from sim2real.policies.config_loading import read_yaml, with_overrides
    from sim2real.policies.hil.config import HilConfig
    from sim2real.sim.core.schema import from_dict

    cameras = tuple(c for c in args.cameras.split(",") if c) if args.cameras else None
    flags = {"env.task": args.task, "env.obs_mode": args.obs_mode, "env.cameras": cameras,
             "env.image_size": args.image_size or None, "seed": args.seed, **parse_overrides(args.overrides)}
    data = read_yaml(args.config) if args.config else {}
    if args.config:
        try:
            from_dict(HilConfig, data, validate=False)
        except ConfigError as exc:
            raise exc.with_source(str(args.config)) from None
    try:
        return from_dict(HilConfig, with_overrides(data, flags))
    except ConfigError as exc:
        raise exc.with_source("command line") from None


def _env_flags(args: argparse.Namespace) -> list[str]:
    out = []
    for flag in ("config", "task", "obs_mode", "cameras", "image_size", "seed"):
        value = getattr(args, flag)
        if value is not None:
            out += [f"--{flag.replace('_', '-')}", str(value)]
    for item in args.overrides:
        out += ["--set", item]
    return out


def run(args: argparse.Namespace) -> int:
    return {"record-demos": _record, "train-classifier": _train_classifier, "learner": _learner,
            "actor": _actor, "run": _run_both}[args.hil_command](args)


def _record(args: argparse.Namespace) -> int:
    from sim2real.policies.hil.demos import record_demos
    from sim2real.policies.hil.devices import make_device

    if args.n < 1:
        raise Sim2RealError(f"--n must be >= 1, got {args.n}")
    cfg = _config(args)
    cfg.env.end_on_success = args.hold_success == 0
    env = _make_env(args, cfg)
    device = make_device(args.device, env, seed=cfg.seed, always=True)
    have = record_demos(env, device, args.out, args.n, seed=cfg.seed, device_name=args.device,
                        only_success=not args.keep_failures, hold_steps=args.hold_success,
                        log=lambda s: console.print(s, markup=False))
    env.close()
    (emit_json if args.json else lambda o: stdout.print(json.dumps(o)))({"episodes": have, "out": str(args.out)})
    return 0 if have >= args.n else 1


def _train_classifier(args: argparse.Namespace) -> int:
    import torch

    from sim2real.policies.hil.classifier import load_labelled_frames, save_classifier, train_classifier

    torch.set_num_threads(1)
    data = load_labelled_frames(args.demos)
    model, report = train_classifier(data, steps=args.steps, batch_size=args.batch_size, threshold=args.threshold,
                                     seed=args.seed)
    save_classifier(model, args.out, args.threshold)
    report["out"] = str(args.out)
    (emit_json if args.json else lambda o: stdout.print(json.dumps(o, indent=2)))(report)
    return 0


def _learner(args: argparse.Namespace) -> int:
    from sim2real.policies.hil.demos import load_demo_dir
    from sim2real.policies.hil.env import HilEnv
    from sim2real.policies.hil.learner import Learner

    cfg = _config(args)
    probe = HilEnv(cfg.env, seed=cfg.seed)  # shapes only; renders nothing
    shapes, action_dim = probe.observation_shapes(), probe.action_dim
    probe.close()
    demos = None
    if args.demos:
        demos, used = load_demo_dir(args.demos)
        console.print(f"demo buffer: {used} episodes from {args.demos}", markup=False)
    learner = Learner(cfg, shapes, action_dim, args.run_dir, demos, args.bind, args.port,
                      log=lambda s: console.print(s, markup=False))
    console.print(f"learner on {args.bind}:{args.port}-{args.port + 1}, run folder {args.run_dir}", markup=False)
    learner.run(args.max_updates, args.max_seconds)
    console.print(f"learner stopped at update {learner.agent.updates}; {len(learner.online)} online transitions",
                  markup=False)
    return 0


def _make_env(args: argparse.Namespace, cfg: Any) -> Any:
    """The actor's environment: the simulated arm, a real arm's graph (``--env ros``) or
    the user's adapter (``--env-factory``), with the classifier as its success."""
    from sim2real.policies.hil.classifier import SuccessDetector
    from sim2real.policies.hil.env import HilEnv

    success_fn = SuccessDetector(args.classifier) if args.classifier else None
    factory: Any = HilEnv
    if args.env == "ros":
        from functools import partial

        from sim2real.ros_nodes.hil_env import GraphArmEnv

        factory = partial(GraphArmEnv, log=lambda s: console.print(s, markup=False))
    if getattr(args, "env_factory", None):
        import importlib

        module, _, name = args.env_factory.partition(":")
        try:
            factory = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, ValueError) as exc:
            raise Sim2RealError(f"--env-factory {args.env_factory!r}: {exc}") from exc
    return factory(cfg.env, seed=cfg.seed, success_fn=success_fn)


def _actor(args: argparse.Namespace) -> int:
    from sim2real.policies.hil.actor import Actor
    from sim2real.policies.hil.devices import make_device

    cfg = _config(args)
    env = _make_env(args, cfg)
    target = server = None
    if args.console:  # the operator's console is the intervention device
        from sim2real.console.launch import operator_settings, start_console
        from sim2real.policies.hil.console import HilConsoleTarget

        target = HilConsoleTarget(env, labels_dir=args.labels, settings=operator_settings(args))
        server = start_console(target, args)
        device = target
    else:
        device = make_device(args.device, env, seed=cfg.seed + 1)
    actor = Actor(cfg, env, device, args.learner, args.port, log=lambda s: console.print(s, markup=False),
                  monitor=target)
    try:
        summary = actor.run(args.steps)
    finally:
        actor.close()
        if server is not None:
            server.stop()
        env.close()
    (emit_json if args.json else lambda o: stdout.print(json.dumps(o)))(summary)
    return 0


def _run_both(args: argparse.Namespace) -> int:
    base = [sys.executable, "-m", "sim2real", "hil"]
    learner_cmd = [*base, "learner", *_env_flags(args), "--run-dir", str(args.run_dir), "--port", str(args.port)]
    if args.demos:
        learner_cmd += ["--demos", str(args.demos)]
    actor_cmd = [*base, "actor", *_env_flags(args), "--steps", str(args.steps), "--device", args.device,
                 "--port", str(args.port), "--env", args.env, "--json"]
    if args.classifier:
        actor_cmd += ["--classifier", str(args.classifier)]
    if args.console:
        actor_cmd += ["--console", "--console-port", str(args.console_port), "--console-bind", args.console_bind,
                      "--takeover-blend", str(args.takeover_blend)]
        if args.labels:
            actor_cmd += ["--labels", str(args.labels)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    learner = subprocess.Popen(learner_cmd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        _await_learner(learner)
        actor = subprocess.run(actor_cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)
    finally:
        learner.send_signal(signal.SIGINT)  # the learner checkpoints, then exits
        try:
            learner.wait(timeout=60)
        except subprocess.TimeoutExpired:
            learner.kill()
            learner.wait()
    if actor.returncode != 0:
        console.print(f"actor exited with {actor.returncode}", markup=False)
        return actor.returncode
    summary = json.loads(actor.stdout.strip().splitlines()[-1])
    summary.update(run_dir=str(args.run_dir), learner_exit=learner.returncode, finished=time.time())
    (emit_json if args.json else lambda o: stdout.print(json.dumps(o)))(summary)
    return 0


LEARNER_READY = "learner on "
"""The line the learner prints once its sockets are bound (:func:`_learner`)."""
LEARNER_START_S = 300.0
"""s: the learner imports torch, builds its networks and loads the demos within this."""


def _await_learner(learner: subprocess.Popen) -> None:
    """Until the learner listens, relaying what it prints to our stderr (then and later):
    an actor started earlier acts on its random policy while the learner starts, and on
    a loaded machine a short run could end before any weights reached it."""
    ready = threading.Event()

    def relay() -> None:
        assert learner.stderr is not None
        for line in learner.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            if line.startswith(LEARNER_READY):
                ready.set()

    threading.Thread(target=relay, name="learner-output", daemon=True).start()
    end = time.monotonic() + LEARNER_START_S
    while not ready.wait(0.1):
        if learner.poll() is not None:
            raise Sim2RealError(f"the learner exited with {learner.returncode} before it listened")
        if time.monotonic() > end:
            raise Sim2RealError(f"the learner did not listen within {LEARNER_START_S:.0f} s")
