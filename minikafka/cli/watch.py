"""``--watch``: redraw a command's output in place, like watch(1).

Every ``--interval`` seconds the screen is cleared (plain ANSI: cursor home, erase
display) and the command's whole output is printed again, with a header line.  An
error of one round (a broker or ZooKeeper not answering) is shown in the frame and
the next round tries again.  Ctrl-C exits with status 0.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from typing import Callable

from ..errors import ClientError, KafkaError

CLEAR = "\x1b[H\x1b[2J"


def positive_seconds(text: str) -> float:
    """argparse type for ``--interval``: seconds, at least 0.1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0.1:
        raise argparse.ArgumentTypeError(f"must be at least 0.1 seconds, got {text}")
    return value


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add ``--watch`` and ``--interval SECONDS`` (default 1.0) to a command."""
    parser.add_argument("--watch", action="store_true",
                        help="clear the screen and redraw every --interval seconds until Ctrl-C")
    parser.add_argument("--interval", type=positive_seconds, default=1.0, metavar="SECONDS",
                        help="seconds between redraws with --watch (default 1.0)")


def watchable(command: Callable[[argparse.Namespace], int], title: str) -> Callable[[argparse.Namespace], int]:
    """Wrap a command so that ``--watch`` runs it in a redraw loop."""

    def run(args: argparse.Namespace) -> int:
        if not getattr(args, "watch", False):
            return command(args)
        return run_watch(lambda: command(args), args.interval, title)

    run.__doc__ = command.__doc__
    run.__name__ = getattr(command, "__name__", "command")
    return run


def render_frame(render: Callable[[], object]) -> str:
    """Run ``render`` with stdout captured; an error becomes one line of the frame."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            render()
    except (ClientError, KafkaError, OSError) as exc:
        text = " ".join(str(exc).split()) or exc.__class__.__name__
        buf.write(f"error: {text} (retrying)\n")
    return buf.getvalue()


def run_watch(render: Callable[[], object], interval_s: float, title: str,
              out: io.TextIOBase | None = None, rounds: int | None = None) -> int:
    """Redraw ``render``'s output every ``interval_s`` seconds; return 0 on Ctrl-C
    (or after ``rounds`` frames, for tests)."""
    stream = out if out is not None else sys.stdout
    done = 0
    try:
        while rounds is None or done < rounds:
            started = time.monotonic()
            body = render_frame(render)
            header = f"{title}    every {interval_s:g}s, Ctrl-C to quit    {time.strftime('%H:%M:%S')}\n\n"
            stream.write(CLEAR + header + body)
            stream.flush()
            done += 1
            if rounds is not None and done >= rounds:
                break
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    except KeyboardInterrupt:
        stream.write("\n")
        stream.flush()
    return 0
