"""Goldens for what a user sees: every command's output pinned, byte for byte.

Each case is one command line run as a user runs it (from the checkout, stdout and
stderr apart, the exit code kept); its output lives in tests/golden/cli/<id>.txt.
They pin the outputs before code moves, so a redesign shows every line it changes.

    TOKCOST_UPDATE_GOLDENS=1 pytest tests/test_cli_golden.py   # rewrite them

The cases run in a workspace made once per run, holding copies of what they read
(corpora/, the fixtures) and what the first steps make (a trained tok.bpe, a chat
file, a small project with a tokcost.yaml), so every path is short and the same on
every machine: a table's widths do not depend on where pytest keeps its files.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_ROOT = Path(tokcost.__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "cli"
UPDATE = bool(os.environ.get("TOKCOST_UPDATE_GOLDENS"))

EN = "corpora/prose/en.txt"
TOK = "tok.bpe"

# (id, command line after `tokcost`, stdin or None)
CASES: list[tuple[str, str, str | None]] = [
    # count
    ("count-one", f"count {EN}", None),
    ("count-readme", f"count {EN} corpora/prose/hi.txt corpora/code/tasks.py -t cl100k_base "
     "-m gpt-4o -m claude-sonnet-4-5", None),
    ("count-folder-json", "count corpora/prose --json", None),
    ("count-folder-csv", "count corpora/prose -t cl100k_base --csv", None),
    ("count-total", "count corpora/code --total", None),
    ("count-verbose", "count corpora/code --verbose -t o200k_base", None),
    ("count-tokens", "count - --tokens -t cl100k_base", "The ferry left at noon.\n"),
    ("count-truncate", f"count {EN} --truncate 20", None),
    ("count-stdin", "count -", "hello world, the ferry left at noon\n"),
    ("count-stdin-json", "count - --json -t cl100k_base", "héllo wörld\n"),
    ("count-chat", "count --chat chat.json -m gpt-4o", None),
    ("count-chat-json", "count --chat chat.json -m gpt-4o -m gpt-4 --json", None),
    ("count-bpe", f"count {EN} -t bpe:{TOK} -t cl100k_base", None),
    ("count-missing", "count no/such/file.txt", None),
    ("count-bad-tokenizer", f"count {EN} -t nope_base", None),
    ("count-bad-model", f"count {EN} -m gpt-4p", None),
    ("count-conflict", f"count {EN} --json --csv", None),
    ("count-unknown-option", f"count --jsn {EN}", None),
    ("count-by-lang", "count corpora --by lang -t cl100k_base", None),
    ("count-by-dir-top", "count corpora --by dir --top 3", None),
    ("count-by-ext-json", "count corpora/code corpora/data --by ext --top 2 --json", None),
    ("count-sort-top", "count corpora/prose --sort bytes --top 4", None),
    ("count-bad-by", "count corpora --by language", None),
    # compare
    ("compare-prose", "compare --builtin --kind prose -m gpt-4o --no-chart", None),
    ("compare-chart", "compare --builtin --kind prose -t o200k_base -t cl100k_base", None),
    ("compare-json", "compare --builtin --kind code -t cl100k_base --json", None),
    ("compare-markdown", "compare --builtin --kind prose -t o200k_base --markdown", None),
    ("compare-csv", "compare --builtin --kind prose -t o200k_base --csv", None),
    ("compare-data", "compare --kind data -t o200k_base", None),
    ("compare-baseline", "compare --builtin --kind prose -t o200k_base --baseline fr --no-chart",
     None),
    # price
    ("price-cached", "price -m claude-sonnet-4-5 --input-tokens 250k --cached-tokens 200k "
     "--output-tokens 2k", None),
    ("price-batch", "price -m gpt-4o-mini --input-tokens 1234 --output-tokens 567 "
     "--requests 1000 --batch-api", None),
    ("price-tier", "price -m gpt-4o --input-tokens 200k --output-tokens 20k", None),
    ("price-json", "price -m claude-sonnet-4-5 --input-tokens 250k --output-tokens 2k --json",
     None),
    ("price-files", f"price -m gpt-4o {EN} --output-tokens 500", None),
    ("price-unpriced", "price -m llama-3.1-8b -i 1000", None),
    ("price-bad-count", "price -m gpt-4o -i 12q", None),
    # kvmem estimate
    ("kvmem-plain", "kvmem estimate -m llama-3.1-8b", None),
    ("kvmem-h100", "kvmem estimate -m llama-3.1-8b --context 1k,8k,32k,128k --gpu H100", None),
    ("kvmem-tp4", "kvmem estimate -m llama-3.1-70b --gpu H100 --tp 4 --context 1k,8k,32k,128k",
     None),
    ("kvmem-fp8", "kvmem estimate -m qwen3-32b --gpu-memory 80GiB --kv-dtype fp8 --batch 16",
     None),
    ("kvmem-kvmemory", "kvmem estimate -m llama-3.1-8b --kv-memory 57.4GiB --context 8k", None),
    ("kvmem-policy", "kvmem estimate -m llama-3.1-8b --gpu H100 --context 32k --kv-dtype int4 "
     "--residual 128 --evict streaming:4+1024 --engine ideal", None),
    ("kvmem-mla-json", "kvmem estimate -m deepseek-v3 --context 32k --json", None),
    ("kvmem-gemma-logs", "kvmem estimate -m gemma-3-27b --max-model-len 128Ki --kv-memory 20GiB",
     None),
    ("kvmem-sglang", "kvmem estimate -m gpt-oss-120b --gpu H100 --engine sglang", None),
    ("kvmem-sglang-json", "kvmem estimate -m gemma-3-27b --gpu H200 --engine sglang --json",
     None),
    ("kvmem-pp", "kvmem estimate -m llama-3.1-70b --gpu A100-80GB --tp 4 --pp 2 --engine ideal",
     None),
    ("kvmem-roofline", "kvmem estimate -m gpt-oss-120b --gpu H200 --batch 64 -i 8k "
     "--efficiency 0.7", None),
    ("kvmem-refuses", "kvmem estimate -m mistral-7b-v0.1 --kv-memory 1GiB", None),
    ("kvmem-config", "kvmem estimate --config tests/fixtures/hf_configs/qwen3-8b --context 32k",
     None),
    ("kvmem-config-hybrid", "kvmem estimate --config tests/fixtures/hf_configs/qwen3-next-80b-a3b "
     "--kv-memory 40GiB --context 32k", None),
    ("kvmem-no-hybrid", "kvmem estimate -m gemma-3-27b --kv-memory 20GiB --no-hybrid-manager",
     None),
    ("kvmem-block", "kvmem estimate -m llama-3.1-8b --kv-memory 20GiB --block-size 32 "
     "--max-num-batched-tokens 4k", None),
    ("kvmem-util", "kvmem estimate -m llama-3.1-8b --gpu L40S --gpu-util 0.8 --context 8k", None),
    ("kvmem-bad-size", "kvmem estimate -m llama-3.1-8b --gpu-memory 80G", None),
    ("kvmem-bad-gpu", "kvmem estimate -m llama-3.1-8b --gpu H1000", None),
    ("kvmem-bad-tp", "kvmem estimate -m llama-3.1-8b --tp 3", None),
    ("kvmem-sglang-util", "kvmem estimate -m llama-3.1-8b --gpu H100 --engine sglang "
     "--gpu-util 0.8", None),
    ("kvmem-kv-and-gpu", "kvmem estimate -m llama-3.1-8b --kv-memory 20GiB --gpu-memory 80GiB",
     None),
    ("kvmem-bad-engine", "kvmem estimate -m llama-3.1-8b --engine vlm", None),
    ("kvmem-bad-dtype", "kvmem estimate -m llama-3.1-8b --kv-dtype fp9", None),
    # kvmem simulate / quality
    ("simulate-small", "kvmem simulate --n 4 --policy oracle,paged --dist alpaca --requests 1000",
     None),
    ("simulate-json", "kvmem simulate --requests 500 --json", None),
    ("quality-small", "kvmem quality --max-tokens 96 --policy int8 --policy window:32", None),
    ("quality-json", "kvmem quality --max-tokens 64 --policy int4 --json", None),
    # models
    ("models-list", "models list", None),
    ("models-list-provider", "models list --provider anthropic", None),
    ("models-list-gpus", "models list --gpus", None),
    ("models-show", "models show claude-sonnet-4-5-20250929", None),
    ("models-show-json", "models show llama-3.1-8b --json", None),
    ("models-show-unknown", "models show gpt-4p", None),
    ("models-validate", "models validate", None),
    ("models-validate-bad", "models validate bad.yaml", None),
    # check
    ("check-adhoc", "check 'corpora/prose/*.txt' --max-tokens 10k -m gpt-4o", None),
    ("check-adhoc-fail", "check corpora/prose --max-tokens 2k -t cl100k_base", None),
    ("check-adhoc-json", "check corpora/code --max-tokens 2k -t cl100k_base --format json", None),
    ("check-adhoc-md", "check corpora/code --max-tokens 2k -t cl100k_base --format markdown",
     None),
    ("check-adhoc-github", "check corpora/code --max-tokens 600 -t cl100k_base --format github",
     None),
    ("check-project", "check --config project/tokcost.yaml", None),
    ("check-project-junit", "check --config project/tokcost.yaml --format junit", None),
    # bpe
    ("bpe-encode", f"bpe encode {TOK} 'The ferry left at noon.'", None),
    ("bpe-encode-special", f"bpe encode {TOK} 'end <|endoftext|>'", None),
    ("bpe-encode-allow", f"bpe encode {TOK} --allow-special 'end <|endoftext|>'", None),
    ("bpe-encode-json", f"bpe encode {TOK} 'The ferry left at noon.' --json", None),
    ("bpe-decode", f"bpe decode {TOK} 84 104 101 32 300", None),
    ("bpe-inspect", f"bpe inspect {TOK} --top 3", None),
    ("bpe-inspect-json", f"bpe inspect {TOK} --top 2 --json", None),
    ("bpe-inspect-tiktoken", "bpe inspect tiktoken:cl100k_base --top 2", None),
    ("bpe-encode-o200k", "bpe encode -t o200k_base 'The ferry left at noon.'", None),
    ("bpe-export-hf", f"bpe export {TOK} --format hf -o out/tokenizer.json", None),
    ("bpe-export-exists", f"bpe export {TOK} --format hf -o {TOK}", None),
    ("bpe-train-json", "bpe train corpora/prose/en.txt corpora/prose/fr.txt --vocab-size 400 "
     "-o out/t.bpe --json", None),
    ("bpe-train-bad", "bpe train corpora/prose/en.txt --vocab-size 100 -o out/x.bpe", None),
    ("bpe-sweep", "bpe sweep corpora/prose/en.txt --eval corpora/prose/fr.txt "
     "--vocab-sizes 300,400 -t cl100k_base", None),
    # generate / attention
    ("generate", "generate 'Every morning the small bakery' --max-new-tokens 24", None),
    ("generate-n", "generate 'The baker knows' --n 4 --temperature 0.8 --seed 1 "
     "--max-new-tokens 12 --block-size 4", None),
    ("generate-n-json", "generate 'The baker knows' --n 2 --temperature 0.8 --seed 1 "
     "--max-new-tokens 6 --block-size 4 --json", None),
    ("generate-explain", "generate 'The baker knows' --n 2 --temperature 0.8 --top-p 0.9 "
     "--seed 1 --max-new-tokens 4 --block-size 4 --explain --top 3", None),
    ("generate-hf", "generate 'The baker' --model-dir tests/fixtures/hf_tiny/llama "
     "--max-new-tokens 8", None),
    ("generate-bad-cache", "generate 'x' --cache pagd", None),
    ("attention", "attention 'The baker opens the shop. The baker sells bread, and the baker "
     "knows the town.'", None),
    ("attention-json", "attention 'The baker opens the shop.' --json", None),
    # the root
    ("root-version", "--version", None),
    ("root-typo", "cuont README.md", None),
]

# Issue 28: --engine vllm is v0.34; each case that ran the default engine has a copy pinned to
# v0.21, whose figures are the old golden's.
PINNED = ("kvmem-plain", "kvmem-h100", "kvmem-tp4", "kvmem-fp8", "kvmem-kvmemory",
          "kvmem-mla-json", "kvmem-gemma-logs", "kvmem-roofline", "kvmem-refuses", "kvmem-config",
          "kvmem-config-hybrid", "kvmem-no-hybrid", "kvmem-block", "kvmem-util")
CASES += [(f"{case}-v0.21", f"{line} --engine vllm@0.21", stdin)
          for case, line, stdin in list(CASES) if case in PINNED]

# Every command's help at 80 columns (the narrow terminal the issue names).
HELP = ["", "count", "compare", "price", "kvmem", "kvmem estimate", "kvmem simulate",
        "kvmem quality", "models", "models list", "models show", "models validate",
        "models sync-prices", "models import", "check", "bpe", "bpe train", "bpe encode",
        "bpe decode", "bpe inspect", "bpe export", "bpe sweep", "generate", "attention"]
CASES += [(f"help-{c.replace(' ', '-') or 'root'}", f"{c} --help".strip(), None) for c in HELP]

CHAT = [
    {"role": "system", "content": "You are a terse assistant."},
    {"role": "user", "name": "ada", "content": "How many tokens is this sentence?"},
    {"role": "assistant", "content": "Nine or ten, depending on the tokenizer."},
]

CONFIG = """\
budgets:
  - name: prose
    paths: ["corpora/*.txt"]
    max_tokens_per_file: 5k
    model: gpt-4o
  - name: code
    paths: ["code/*.py"]
    max_total_tokens: 100
    tokenizer: cl100k_base
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the cases read and write: made once, through the CLI itself."""
    tmp = tmp_path_factory.mktemp("golden")
    (tmp / "out").mkdir()
    shutil.copytree(ROOT / "corpora", tmp / "corpora")
    for fixture in ("hf_configs", "hf_tiny"):
        shutil.copytree(ROOT / "tests" / "fixtures" / fixture, tmp / "tests" / "fixtures" / fixture)
    (tmp / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")
    (tmp / "bad.yaml").write_text("models:\n  - id: x\n    context_window: -5\n", encoding="utf-8")
    project = tmp / "project"
    (project / "corpora").mkdir(parents=True)
    (project / "code").mkdir()
    for name in ("en.txt", "de.txt"):
        shutil.copy(ROOT / "corpora" / "prose" / name, project / "corpora" / name)
    shutil.copy(ROOT / "corpora" / "code" / "tasks.py", project / "code" / "tasks.py")
    (project / "tokcost.yaml").write_text(CONFIG, encoding="utf-8")
    os.chdir(tmp)
    try:
        result = _run("bpe train corpora/prose/en.txt corpora/prose/fr.txt --vocab-size 600 "
                      "--special '<|endoftext|>' -o tok.bpe", None)
    finally:
        os.chdir(ROOT)
    assert result[0] == 0, result
    return tmp


def _run(line: str, stdin: str | None) -> tuple[int, str, str]:
    args = shlex.split(line)
    result = CliRunner().invoke(app, args, input=stdin, prog_name="tokcost")
    stdout, stderr = result.stdout, result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, stdout, stderr


# Wall-clock figures differ run to run, and the counting backend depends on what the
# process has already loaded (a fast encoder built by an earlier test is reused): masked.
_TIMES = re.compile(r'("seconds[a-z_]*": )[0-9.e-]+|("backend": )"[a-z_+-]+"')


def _render(line: str, code: int, stdout: str, stderr: str) -> str:
    text = f"$ tokcost {line}\n[exit {code}]\n--- stdout\n{stdout}--- stderr\n{stderr}"
    # the shipped catalog, corpora and weights are named by where tokcost is installed
    masked = _TIMES.sub(lambda m: f"{m.group(1) or m.group(2)}<masked>",
                        text.replace(str(PACKAGE_ROOT), "{root}"))
    return masked


@pytest.mark.parametrize(("case", "line", "stdin"), CASES, ids=[c[0] for c in CASES])
def test_cli_golden(case: str, line: str, stdin: str | None, workspace: Path,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("COLUMNS", "80" if case.startswith("help-") else "100")
    monkeypatch.setenv("TERM", "dumb")
    code, stdout, stderr = _run(line, stdin)
    got = _render(line, code, stdout, stderr)
    path = GOLDEN / f"{case}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")
