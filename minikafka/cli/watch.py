"""``--watch``: redraw a command's tables in place until Ctrl-C, like watch(1).

A watchable command has two outputs built from the same answer: its plain output
(tab-separated or aligned text, for scripts; unchanged by this module) and a
:class:`View`, its answer as structured rows, which ``--watch`` draws with ``rich``:

* tables that fit the terminal's width: identifiers never wrap, long addresses end in
  an ellipsis, member ids lose their middle (``minikafka-cons…5d9b3a77``: the client id
  and the end of the unique part stay, so two members stay distinguishable), lists
  (replicas, ISR, LEOs) wrap inside their cell;
* one frame per ``--interval`` seconds, redrawn in place (rich's ``Live``), under a
  header line with the time of the answer;
* every cell whose value differs from the previous round (leader, ISR, HW, LEO,
  process state, ...) is highlighted for one round; the comparison is the pure
  function :func:`changed_cells`;
* an error of one round (a broker or ZooKeeper not answering) is shown in the frame
  with the last answer under it, and the next round tries again;
* Ctrl-C exits with status 0, leaving the last frame on the screen.

When standard output is not a terminal (a pipe, a file) the frames are printed one
after the other, 80 columns wide (or ``$COLUMNS``), and a changed cell ends in ``*``.
With ``--json`` every round prints one JSON document on one line (JSON Lines).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Mapping, Sequence

from ..errors import ClientError, KafkaError

HIGHLIGHT = "bold reverse yellow"
MARK = "*"  # appended to a changed cell where there are no styles (not a terminal)

CellKey = tuple[Hashable, str]  # (row key, column header)


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
                        help="redraw every --interval seconds until Ctrl-C, highlighting what changed "
                             "(with --json: one JSON document per line)")
    parser.add_argument("--interval", type=positive_seconds, default=1.0, metavar="SECONDS",
                        help="seconds between redraws with --watch (default 1.0)")


# ---------------------------------------------------------------- structured rows

@dataclass(frozen=True)
class Column:
    """A column of a watch table.

    ``ratio``: where the table is wider than the terminal, the column shares the
    width the other columns leave in this proportion (None: always as wide as its
    content, for identifiers and numbers); ``wrap``: a long value may take several
    lines (lists of LEOs), else it is cut with ``overflow``: "ellipsis" cuts the end,
    "middle" the middle (:func:`shorten_middle`, for ids whose end tells them apart).
    """

    header: str
    ratio: int | None = None
    min_width: int | None = None
    wrap: bool = False
    overflow: str = "ellipsis"
    justify: str = "left"


@dataclass
class Grid:
    """One table of a view: its rows are ``(row id, cells)``; the row id names the row
    across rounds (a broker id, a topic-partition), so its cells can be compared."""

    name: str
    columns: Sequence[Column]
    rows: list[tuple[Hashable, tuple[str, ...]]] = field(default_factory=list)
    title: str | None = None
    empty: str = "(none)"


@dataclass
class View:
    """What one round of a watched command shows: tables, then lines of notes."""

    grids: list[Grid] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def cells_of(view: View) -> dict[Hashable, dict[str, str]]:
    """``{(grid name, row id): {column header: value}}`` of a view."""
    out: dict[Hashable, dict[str, str]] = {}
    for grid in view.grids:
        for row_id, values in grid.rows:
            out[(grid.name, row_id)] = {c.header: v for c, v in zip(grid.columns, values)}
    return out


def changed_cells(previous: Mapping[Hashable, Mapping[str, str]] | None,
                  current: Mapping[Hashable, Mapping[str, str]]) -> set[CellKey]:
    """The cells of ``current`` whose value differs from ``previous`` (both as
    :func:`cells_of` returns them): a changed value, and every cell of a row that was
    not there before.  Nothing on the first round (``previous`` None); a row that went
    away marks nothing."""
    if previous is None:
        return set()
    changed: set[CellKey] = set()
    for row, values in current.items():
        before = previous.get(row)
        for column, value in values.items():
            if before is None or before.get(column) != value:
                changed.add((row, column))
    return changed


# ---------------------------------------------------------------- rendering

SEPARATOR = 2  # spaces between two columns
ELLIPSIS = "…"


def shorten_middle(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: unchanged when it fits, else its start
    and its end around an ellipsis, the end at least as long as the start (a member id
    is ``client-id-`` and a UUID: the end is what differs between two members)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    keep = width - 1
    head = keep // 2
    return text[:head] + ELLIPSIS + text[len(text) - (keep - head):]


def fit_widths(naturals: Sequence[int], columns: Sequence[Column], width: int) -> list[int | None]:
    """The width of each ratio column so that the table fits ``width``: the other columns
    keep their natural width; the space left is shared by the ratio columns in their
    ratios, and a column that needs less than its share gives the rest to the others.
    None: no limit (a column that is not a ratio column)."""
    fixed = sum(n for n, c in zip(naturals, columns) if c.ratio is None)
    left = width - fixed - SEPARATOR * (len(columns) - 1)
    out: list[int | None] = [None] * len(columns)
    open_ = [i for i, c in enumerate(columns) if c.ratio is not None]
    while open_:
        total = sum(columns[i].ratio or 0 for i in open_)
        fits = [i for i in open_ if naturals[i] <= left * (columns[i].ratio or 0) / total]
        if not fits:
            for i in open_:
                out[i] = max(columns[i].min_width or 1, int(left * (columns[i].ratio or 0) / total))
            break
        for i in fits:
            out[i] = naturals[i]
            left -= naturals[i]
            open_.remove(i)
    return out


class _GridRenderable:
    """A grid drawn as a rich table as wide as the console allows (sizes are known only
    when rich asks for the rendering, with the console's width)."""

    def __init__(self, grid: Grid, changed: set[CellKey], marks: bool) -> None:
        self.grid, self.changed, self.marks = grid, changed, marks

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.cells import cell_len
        from rich.table import Table
        from rich.text import Text

        grid = self.grid
        rows = []
        for row_id, values in grid.rows:
            cells = []
            for c, value in zip(grid.columns, values):
                hot = ((grid.name, row_id), c.header) in self.changed
                cells.append((value + MARK if hot and self.marks else value, hot and not self.marks))
            rows.append(cells)
        naturals = [max([cell_len(c.header)] + [cell_len(r[i][0]) for r in rows])
                    for i, c in enumerate(grid.columns)]
        widths = fit_widths(naturals, grid.columns, options.max_width)
        for i, (c, w) in enumerate(zip(grid.columns, widths)):
            if c.overflow == "middle" and w is not None:
                w = max(w, c.min_width or 1)
                for r in rows:
                    value, hot = r[i]
                    marked = hot and self.marks
                    short = shorten_middle(value[:-len(MARK)] if marked else value, w - (len(MARK) if marked else 0))
                    r[i] = (short + MARK if marked else short, hot)
        table = Table(box=None, expand=False, padding=(0, SEPARATOR // 2), pad_edge=False, show_edge=False,
                      title=grid.title, title_justify="left", title_style="bold", header_style="bold underline")
        for c, w in zip(grid.columns, widths):
            overflow = "fold" if c.wrap else ("ellipsis" if c.overflow == "middle" else c.overflow)
            table.add_column(c.header, max_width=w, min_width=c.min_width, no_wrap=not c.wrap,
                             overflow=overflow, justify=c.justify)  # type: ignore[arg-type]
        for r in rows:
            table.add_row(*(Text(value, style=HIGHLIGHT if hot else "") for value, hot in r))
        yield table


def render(view: View | None, changed: set[CellKey], header: str, error: str | None = None,
           marks: bool = False) -> Any:
    """The rich renderable of one frame: the header line, the round's error if any,
    then the view's tables with ``changed`` cells highlighted (or marked with ``*``)."""
    from rich.console import Group
    from rich.text import Text

    parts: list[Any] = [Text(header, style="bold", no_wrap=True, overflow="ellipsis")]
    if error is not None:
        parts.append(Text(f"error: {error} (retrying)", style="bold red"))
    if view is None:
        return Group(*parts)
    for grid in view.grids:
        parts.append(Text(""))
        if grid.rows:
            parts.append(_GridRenderable(grid, changed, marks))
        else:
            if grid.title:
                parts.append(Text(grid.title, style="bold"))
            parts.append(Text(grid.empty))
    parts.extend(Text(line) for line in view.notes)
    return Group(*parts)


def frame_header(title: str, interval_s: float, answered: float | None) -> str:
    at = time.strftime("%H:%M:%S", time.localtime(answered)) if answered is not None else "--:--:--"
    return f"{title}  every {interval_s:g}s, Ctrl-C to quit  {at}"


def _error_text(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or exc.__class__.__name__


ROUND_ERRORS = (ClientError, KafkaError, OSError)


# ---------------------------------------------------------------- the loop

def watchable(command: Callable[[argparse.Namespace], int], title: str,
              view: Callable[[argparse.Namespace], tuple[View, Any]]) -> Callable[[argparse.Namespace], int]:
    """Wrap a command so that ``--watch`` redraws ``view(args)`` (a View and the JSON
    document of the same answer) every ``--interval`` seconds."""

    def run(args: argparse.Namespace) -> int:
        if not getattr(args, "watch", False):
            return command(args)
        if getattr(args, "json", False):
            return run_json_lines(lambda: view(args)[1], args.interval)
        return run_watch(lambda: view(args)[0], args.interval, title)

    run.__doc__ = command.__doc__
    run.__name__ = getattr(command, "__name__", "command")
    return run


def run_watch(fetch: Callable[[], View], interval_s: float, title: str, console: Any = None,
              rounds: int | None = None) -> int:
    """Redraw ``fetch()``'s view every ``interval_s`` seconds, highlighting changed
    cells; return 0 on Ctrl-C (or after ``rounds`` frames, for tests)."""
    from rich.console import Console
    from rich.live import Live

    console = console if console is not None else Console(highlight=False)
    in_place = console.is_terminal and not console.is_dumb_terminal
    previous: dict[Hashable, dict[str, str]] | None = None
    last: View | None = None
    answered: float | None = None
    done = 0
    live = Live(console=console, auto_refresh=False, transient=False, redirect_stdout=False,
                redirect_stderr=False, vertical_overflow="ellipsis") if in_place else None
    try:
        if live is not None:
            live.start()
        while rounds is None or done < rounds:
            started = time.monotonic()
            error = None
            changed: set[CellKey] = set()
            try:
                view = fetch()
            except ROUND_ERRORS as exc:
                error = _error_text(exc)
            else:
                current = cells_of(view)
                changed = changed_cells(previous, current)
                previous, last, answered = current, view, time.time()
            frame = render(last, changed, frame_header(title, interval_s, answered), error, marks=not in_place)
            if live is not None:
                live.update(frame, refresh=True)
            else:
                console.print(frame)
                console.print()
                console.file.flush()
            done += 1
            if rounds is not None and done >= rounds:
                break
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass
    finally:
        if live is not None:
            try:
                live.stop()
            except KeyboardInterrupt:
                pass
    return 0


def run_json_lines(fetch: Callable[[], Any], interval_s: float, out: Any = None,
                   rounds: int | None = None) -> int:
    """``--watch --json``: one JSON document per round on one line; an error of a round
    is one ``minikafka: error: ... (retrying)`` line on stderr.  Ctrl-C exits 0."""
    stream = out if out is not None else sys.stdout
    done = 0
    try:
        while rounds is None or done < rounds:
            started = time.monotonic()
            try:
                doc = fetch()
            except ROUND_ERRORS as exc:
                print(f"minikafka: error: {_error_text(exc)} (retrying)", file=sys.stderr, flush=True)
            else:
                stream.write(json.dumps(doc) + "\n")
                stream.flush()
            done += 1
            if rounds is not None and done >= rounds:
                break
            time.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    except KeyboardInterrupt:
        pass
    return 0

