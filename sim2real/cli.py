"""The ``sim2real`` command line. Each subcommand lives in ``sim2real/commands/``
and is registered by one line in :data:`COMMANDS`."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

import sim2real

# name -> module with `add_arguments(parser)`, `run(args) -> int` and a docstring.
COMMANDS = {
    "list": "sim2real.commands.list_tasks",
    "render": "sim2real.commands.render",
    "bench": "sim2real.commands.bench",
    "demo": "sim2real.commands.demo",
    "train": "sim2real.commands.train",
    "eval": "sim2real.commands.eval",
    "export": "sim2real.commands.export",
    "plot": "sim2real.commands.plot",
    "deploy": "sim2real.commands.deploy",
    "study": "sim2real.commands.study",
    "reward": "sim2real.commands.reward",
    "hil": "sim2real.commands.hil",
    "hardware": "sim2real.commands.hardware",
    "bag": "sim2real.commands.bag",
    "config": "sim2real.commands.config",
    "console": "sim2real.commands.console",
    "robustness": "sim2real.commands.robustness",
    "sysid": "sim2real.commands.sysid",
    "import": "sim2real.commands.import_policy",
    "sim2sim": "sim2real.commands.sim2sim",
    "sweep": "sim2real.commands.sweep",
    "security": "sim2real.commands.security",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of command ``only`` alone (importing one command
    module, not all: a launched node starts seconds sooner, and Ctrl-C in those seconds
    raised tracebacks)."""
    parser = argparse.ArgumentParser(
        prog="sim2real",
        description="Robot control policies from MuJoCo simulation to ROS 2 robots.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `sim2real COMMAND --help` for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"sim2real {sim2real.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(module_name)
        doc = (module.__doc__ or "").strip()
        p = sub.add_parser(
            name,
            # argparse %-formats help texts: escape so a docstring may say "95%".
            help=doc.splitlines()[0].replace("%", "%%") if doc else None,
            description=doc.replace("%", "%%"),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def _stacks_on_sigusr1() -> None:
    """``kill -USR1 PID`` prints where every thread of a command that seems stuck is, and
    the command goes on (no debugger on a robot computer needed)."""
    import faulthandler
    import signal

    with contextlib.suppress(AttributeError, ValueError, OSError):  # no SIGUSR1, or no stderr file
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the process's own command (not a caller's in-process call)
        _stacks_on_sigusr1()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["deploy", "--node"]:  # a launched node: from now on a stop signal is never a traceback
        from sim2real.ros_nodes.process_life import note_stop_signals

        note_stop_signals()
    parser = build_parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from sim2real.errors import Sim2RealError

    try:
        return int(args._module.run(args) or 0)
    except Sim2RealError as exc:
        print(f"sim2real {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        from sim2real.extras import missing_extra_message

        message = missing_extra_message(exc)
        if message is None:
            raise
        print(f"sim2real {args.command}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"sim2real {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
