"""Hostile input (issue 26): every case runs tokcost as a subprocess under a 10 s wall-clock
limit and a 1 GiB address-space limit, from a repository folder inside ``tmp_path``, with a
victim folder beside it that no run may change."""

from __future__ import annotations

import hashlib
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# A hang guard, not a speed test: tokcost's own limits stop work sooner (a chat template at
# limits.TEMPLATE_SECONDS = 5); the margin is for start-up on a loaded 2-core CI machine.
WALL_S = 20
ADDRESS_SPACE = 1 << 30


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _digest(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = "dir"
    return out


@dataclass
class Sandbox:
    """``repo`` is where tokcost runs; ``outside`` holds files no run may touch."""

    repo: Path
    outside: Path
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None) -> Ran:
        before = _digest(self.outside)
        proc = subprocess.run(
            [sys.executable, "-m", "tokcost", *args], cwd=self.repo, env=self.env,
            input=stdin, capture_output=True, text=True, timeout=WALL_S, preexec_fn=_limits)
        assert _digest(self.outside) == before, "a file outside the repository changed"
        assert "Traceback" not in proc.stderr, proc.stderr
        return Ran(proc.returncode, proc.stdout, proc.stderr)

    def one_error(self, *args: str, code: int = 1) -> str:
        """Run, expect exit ``code`` with exactly one ``error:`` line; return that line."""
        ran = self.run(*args)
        assert ran.code == code, (ran.code, ran.stdout, ran.stderr)
        assert len(ran.error_lines) == 1 and ran.error_lines[0].startswith("error: "), ran.stderr
        return ran.error_lines[0]


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TOKCOST_"))}
    src = str(Path(__file__).resolve().parents[2])
    env.update(HOME=str(tmp_path / "home"), TOKCOST_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")])),
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", NO_COLOR="1",
               HF_HUB_OFFLINE="1")
    return Sandbox(repo, outside, env)
