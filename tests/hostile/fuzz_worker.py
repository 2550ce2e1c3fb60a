"""Runs tokcost command lines in this one process, a JSON job per stdin line, answering each
on the stdout it started with: the fuzz tests start it under tests/hostile's limits (1 GiB of
address space; 10 s per job, enforced by the parent), so every example runs under the limits
of the subprocess cases without paying a process start each."""

from __future__ import annotations

import json
import os
import sys

from typer.testing import CliRunner

from tokcost.cli.app import app


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")  # CliRunner swaps sys.stdout
    for line in sys.stdin:
        job = json.loads(line)
        os.chdir(job["cwd"])
        result = CliRunner().invoke(app, job["args"])
        raised = result.exception
        answers.write(json.dumps({
            "code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr,
            "exception": None if raised is None or isinstance(raised, SystemExit)
            else repr(raised)}) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
