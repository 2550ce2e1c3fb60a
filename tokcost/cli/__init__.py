"""The command line: Typer apps that parse, call the public API, and render."""

import sys


def main() -> None:
    """Entry point of ``tokcost``: ``tokcost --help`` is printed as rendered last time for
    this terminal (a checksummed cache entry), without loading Typer and Rich (55 ms)."""
    if sys.argv[1:] in (["-h"], ["--help"]):
        import warnings

        from tokcost import cachefile
        from tokcost.cli.help import root_help_cache
        with warnings.catch_warnings():  # a changed entry is only rendered again
            warnings.simplefilter("ignore")
            text = cachefile.read(root_help_cache())
        if text is not None:
            try:
                sys.stdout.buffer.write(text)
                sys.stdout.flush()
                return
            except (OSError, AttributeError, ValueError):  # no stdout, or a full disk: the
                pass  # full path reports it
    from tokcost.cli.app import main as run
    run()
