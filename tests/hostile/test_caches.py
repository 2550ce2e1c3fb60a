"""Verified caches (issue 26, part 5): an entry changed on disk is rebuilt, with one warning,
and never changes a result."""

from __future__ import annotations

import marshal
from pathlib import Path

from .conftest import Sandbox


def _tamper(entry: Path, change: bytes) -> None:
    header, _, payload = entry.read_bytes().partition(b"\n")
    entry.write_bytes(header + b"\n" + change + payload[len(change):])


def test_a_changed_rank_cache_is_rebuilt(sandbox: Sandbox) -> None:
    (sandbox.repo / "a.txt").write_text("hello world, hello tokens\n")
    first = sandbox.run("count", "a.txt", "-t", "cl100k_base", "--total")
    cache = Path(sandbox.env["TOKCOST_CACHE_DIR"])
    (entry,) = cache.glob("*.ranks-v2")
    ranks = marshal.loads(entry.read_bytes().partition(b"\n")[2])
    ranks[b"hello"], ranks[b" world"] = ranks[b" world"], ranks[b"hello"]
    header = entry.read_bytes().partition(b"\n")[0]
    entry.write_bytes(header + b"\n" + marshal.dumps(ranks))  # same header, other ranks
    again = sandbox.run("count", "a.txt", "-t", "cl100k_base", "--total")
    assert again.code == 0 and again.stdout == first.stdout
    assert again.error_lines == [f"warning: cache entry {entry} is damaged or was changed (its "
                                 "checksum does not match); rebuilding it"]
    assert sandbox.run("count", "a.txt", "-t", "cl100k_base", "--total").stderr == ""


def test_a_changed_catalog_cache_is_rebuilt(sandbox: Sandbox) -> None:
    args = ("price", "-m", "gpt-4o", "--input-tokens", "1000")
    first = sandbox.run(*args)
    (entry,) = Path(sandbox.env["TOKCOST_CACHE_DIR"]).glob("*.catalog-v3")
    _tamper(entry, b"\x80\x05junk")
    again = sandbox.run(*args)
    assert again.code == 0 and again.stdout == first.stdout
    assert [line for line in again.error_lines if line.startswith("warning:")] == [
        f"warning: cache entry {entry} is damaged or was changed (its checksum does not match); "
        "rebuilding it"]
