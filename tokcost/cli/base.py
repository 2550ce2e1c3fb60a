"""How tokcost runs a command (DESIGN §3): every error one ``error:`` line in the command's
flags (``{tp=3}`` -> ``--tp 3``), a closed pipe ends it as it ends ``cat``.

``TOKCOST_DEBUG=1`` lets tracebacks through."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import typer
from typer._click import exceptions as click_errors
from typer.core import TyperCommand, TyperGroup

from tokcost.cli.console import err
from tokcost.errors import GpuNotFound, ModelNotFound, TokcostError

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

# Hints only a CLI can give: the command that lists what the user can choose from.
_LIST_HINTS: tuple[tuple[type[TokcostError], str], ...] = (
    (ModelNotFound, "`tokcost models list` shows the ids"),
    (GpuNotFound, "`tokcost models list --gpus` lists them"))


class StdoutFailed(TokcostError):
    """Standard output cannot be written (a full disk, an I/O error, a closed descriptor)."""


class Command(TyperCommand):
    """A leaf command: refuses repeated single-valued options, reports its errors."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _refuse_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        with handled_errors(ctx):
            return super().invoke(ctx)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from tokcost.cli.help import render_help
        formatter.write(render_help(ctx))


class Group(TyperGroup):
    """A command group: an unknown subcommand gets a "did you mean"; ``pending`` commands are
    built when first named."""

    pending: Mapping[str, Callable[[], Any]] = MappingProxyType({})

    def list_commands(self, ctx: Any) -> list[str]:
        return [*self.pending, *(n for n in super().list_commands(ctx) if n not in self.pending)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        build = self.pending.get(cmd_name)
        if build is not None and cmd_name not in self.commands:
            self.commands[cmd_name] = build()
        return super().get_command(ctx, cmd_name)

    def command_rows(self, ctx: Any) -> list[tuple[str, str]]:
        """(name, one line of help) for each subcommand, in the help's order."""
        commands = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        return [(name, command.get_short_help_str(limit=200)) for name, command in commands
                if command is not None and not command.hidden]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from tokcost.cli.help import render_help
        formatter.write(render_help(ctx, self.command_rows(ctx)))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=2)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            raise click_errors.UsageError(f"no such command '{name}'{hint}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        with handled_errors(None):  # what a leaf command did not report itself
            return super().invoke(ctx)


class App(typer.Typer):
    """A ``typer.Typer`` whose commands are ``Command`` and groups ``Group``, with ``-h``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", Group)
        kwargs.setdefault("context_settings", HELP_OPTIONS)
        kwargs.setdefault("add_completion", False)
        super().__init__(**kwargs)

    def command(  # type: ignore[override]
        self, name: str | None = None, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        kwargs.setdefault("cls", Command)
        kwargs.setdefault("context_settings", HELP_OPTIONS)
        return super().command(name, **kwargs)


def _refuse_repeats(command: Command, ctx: Any, args: list[str]) -> None:
    """``-m a -m b`` on a single-valued option: a usage error that names both values."""
    try:
        _, _, order = command.make_parser(ctx).parse_args(args=list(args))
    except click_errors.UsageError:
        return  # Click reports it in parse_args itself
    counts = Counter(p for p in order if getattr(p, "param_type_name", "") == "option")
    param: Any  # a Click Option: multiple, count and is_flag are the Option's own
    for param, n in counts.items():
        if n < 2 or param.multiple or param.count:
            continue
        given = _occurrences(param, args)
        if param.is_flag:
            if len(set(given)) > 1:  # --json --json asks for the same thing twice
                raise click_errors.UsageError(
                    f"{' and '.join(sorted(set(given)))} contradict each other; give one", ctx)
            continue
        shown = " and ".join(repr(v) for v in given) if len(given) == n else f"{n} times"
        raise click_errors.UsageError(
            f"{param.opts[0]} given twice ({shown}); it takes one value, give it once", ctx)


def _occurrences(param: Any, args: Sequence[str]) -> list[str]:
    """The values ``param`` was given in ``args`` (for a flag: the spelling used)."""
    spellings = [*param.opts, *getattr(param, "secondary_opts", [])]
    values: list[str] = []
    words = iter(itertools.takewhile(lambda a: a != "--", args))
    for word in words:
        if word in spellings:
            values.append(word if param.is_flag else next(words, ""))
        elif any(word.startswith(s + "=") for s in spellings if s.startswith("--")):
            values.append(word.split("=", 1)[1])
        elif not param.is_flag and any(word.startswith(s) and len(word) > 2
                                       for s in spellings if len(s) == 2):
            values.append(word[2:])
    return values


# -- errors ---------------------------------------------------------------------------

def _flag(param: Any) -> tuple[str, str | None]:
    """The flag a user types for a Click parameter, and its --no- form if it has one."""
    if param.param_type_name == "argument":
        # "IDS..." in usage; in a sentence, the name alone ("(IDS run 0..N)")
        return str(param.human_readable_name).removesuffix("..."), None
    longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    negative = next((o for o in getattr(param, "secondary_opts", []) if o.startswith("--")), None)
    return longs[0], negative


def cli_words(params: Sequence[Any]) -> Callable[[str, str | None], str]:
    """Spell an API parameter as the command's flag: ``(tp, 3)`` -> ``--tp 3``, ``(batch,
    False)`` -> ``--no-batch``; a name without a flag keeps the API's spelling."""
    by_name = {p.name: p for p in params}

    def words(name: str, value: str | None) -> str:
        param = by_name.get(name)
        if param is None:
            return name if value is None else f"{name}={value}"
        flag, negative = _flag(param)
        if value is None or value == "True":
            return flag
        if value == "False":
            return negative or f"no {flag}"
        return f"{flag} {value}"

    return words


def render_error(exc: TokcostError, params: Sequence[Any]) -> str:
    """The one line the user sees for ``exc`` (without the ``error:`` prefix)."""
    message = exc.render(cli_words(params))
    for kind, hint in _LIST_HINTS:
        if isinstance(exc, kind) and hint not in message:
            message += f"; {hint}"
    return message


def current_words() -> Callable[[str, str | None], str] | None:
    """The running command's ``cli_words``, or None outside a command."""
    ctx = typer.main.get_current_context(silent=True)  # type: ignore[attr-defined]
    return cli_words(ctx.command.params) if ctx is not None else None


def json_requested(ctx: Any) -> bool:
    """Whether the running command was asked for JSON (``--json`` or ``--format json``)."""
    for param in ctx.command.params if ctx is not None else ():
        value, opts = ctx.params.get(param.name), getattr(param, "opts", ())
        chosen = str(getattr(value, "value", value))  # an Enum choice or a plain string
        if ("--json" in opts and value) or ("--format" in opts and chosen == "json"):
            return True
    return False


@contextlib.contextmanager
def handled_errors(ctx: Any) -> Iterator[None]:
    """The one place a TokcostError becomes a line on stderr and an exit code."""
    try:
        yield
    except TokcostError as exc:
        if os.environ.get("TOKCOST_DEBUG"):
            raise
        params = ctx.command.params if ctx is not None else ()
        wants_json = json_requested(ctx) and not isinstance(exc, StdoutFailed)
        report(render_error(exc, params), exc.exit_code, wants_json=wants_json,
               kind=type(exc).__name__)
        if isinstance(exc, StdoutFailed):
            _silence_stdout()  # said once: the last flush must not say it again
        raise typer.Exit(code=exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("interrupted", highlight=False)
        raise typer.Exit(code=130) from None
    except BrokenPipeError:  # here, before typer's own handler turns it into exit 1
        die_of_sigpipe()


def report(line: str, code: int, *, wants_json: bool, kind: str) -> None:
    """One line on stderr and, for ``--json``, a JSON error object on stdout."""
    from tokcost.cli.console import error, print_json
    if wants_json:
        print_json({"error": {"type": kind, "message": line, "exit_code": code}})
    error(line)  # escaped: "pip install 'dask[distributed]>=2024.1'" keeps its "[distributed]"


def usage_line(exc: Any, command_path: str) -> str:
    """A Click usage error as one line from its fields, ending ``see 'tokcost count -h'``."""
    if isinstance(exc, click_errors.NoSuchOption):
        import difflib
        typed = exc.option_name
        # closest first: "--jsn" is nearer "--json" than "--csv"
        options = sorted(exc.possibilities or (),
                         key=lambda o: -difflib.SequenceMatcher(None, typed, o).ratio())
        message = f"no such option: {typed}"
        if options:
            message += f" (did you mean {' or '.join(options[:3])}?)"
    else:
        message = " ".join(exc.format_message().split()).rstrip(".")
        message = message[:1].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    # Click's context can be a parent's (an option's missing value is raised while the
    # subcommand parses): the longer of the two paths names the command that failed.
    path = max((ctx.command_path if ctx is not None else "", command_path), key=len)
    return f"{message}; see '{path} -h'"


# -- running ----------------------------------------------------------------------------

class _Stdout:
    """``sys.stdout`` whose failed writes (but a closed pipe) are a ``StdoutFailed``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _guard(self, call: Callable[[], Any]) -> Any:
        if self._stream is None:
            raise StdoutFailed("cannot write to standard output: it is closed")
        try:
            return call()
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise
            raise StdoutFailed(f"cannot write to standard output: {exc.strerror}") from None

    def write(self, text: str) -> Any:
        return self._guard(lambda: self._stream.write(text))

    def flush(self) -> None:
        self._guard(lambda: self._stream.flush())

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        return self._guard(lambda: getattr(self._stream, name))


def guard_stdout() -> None:
    """Route stdout's failures to ``StdoutFailed``; a closed descriptor 1 is held on /dev/null."""
    if sys.stdout is None:
        with contextlib.suppress(OSError):
            os.open(os.devnull, os.O_WRONLY)  # the lowest free descriptor: 1
    if not isinstance(sys.stdout, _Stdout):
        sys.stdout = _Stdout(sys.stdout)


def finish_stdout() -> None:
    """Flush stdout while a failure can still be reported; then exit as it says."""
    try:
        sys.stdout.flush()
    except StdoutFailed as exc:
        from tokcost.cli.console import error
        error(str(exc))
        _silence_stdout()
        sys.exit(1)
    except BrokenPipeError:
        die_of_sigpipe()


def _silence_stdout() -> None:
    # Python would complain on exit that it cannot flush stdout.
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    sys.stdout = _Stdout(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as stdout


def die_of_sigpipe() -> None:
    """Die of SIGPIPE as ``cat`` does (exit status 141); without SIGPIPE (Windows), exit 1."""
    import signal
    _silence_stdout()
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(1)
