"""The command line: Typer apps that parse, call the public API, and render."""
