"""The ``tokcost`` command (``python -m tokcost`` too): ``tokcost --help`` is printed as rendered
last time for this terminal, from a checksummed cache entry, without loading Typer and Rich."""

import sys


def main() -> None:
    if sys.argv[1:] in (["-h"], ["--help"]) and _cached_help():
        return
    from tokcost.cli.app import main as run
    run()


def _cached_help() -> bool:
    """Print the root help from its cache entry (made now on a miss); False if not printed."""
    import warnings
    from pathlib import Path

    from tokcost import cachefile
    from tokcost.cli.help import root_key
    here = Path(__file__).parent / "cli"  # the code that renders it is part of the key
    stamp = sum((here / name).stat().st_mtime_ns for name in ("app.py", "help.py", "options.py"))
    entry = cachefile.cache_dir() / f"help-{root_key()}-{stamp}.txt"
    with warnings.catch_warnings():  # a changed entry is only rendered again
        warnings.simplefilter("ignore")
        text = cachefile.read(entry)
    if text is None:
        from tokcost.cli.app import root_help
        text = root_help().encode()
        cachefile.write(entry, text)
    try:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
    except (OSError, AttributeError, ValueError):  # no stdout, or a full disk: the CLI says so
        return False
    return True


if __name__ == "__main__":
    main()
