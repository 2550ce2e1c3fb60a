"""Every count flag reads its value with ``parse_count`` (issue 14, "Numbers and
sizes"), a budget's ``tokenizer:`` is judged when the config loads, and arguments show
uppercase metavars.

The tables are rows of (arguments, exit code, fragment of the one line on stderr), run
through the real Typer app. A count suffix that is accepted shows up in the library's
own bound check (``--block-size 8Ki`` -> ``--block-size 8192 is larger than ...``): the
flag was parsed by the one parser and the library's caps still apply.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
import tokcost.units
from tokcost.budget import BudgetConfigError, load_config
from tokcost.cli.app import app
from tokcost.cli.options import CountError, count_parser
from tokcost.errors import UsageError
from tokcost.units import MAX_COUNT

runner = CliRunner()

TEXT = "the kettle sang while the kettle cooled\nwe counted tokens and then bytes\n" * 20

NOT_A_COUNT = "is not a count; write a whole number such as 8000, 8k"
TOO_LARGE = "'1e30' is beyond 10^15"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A text file and a small tokcost BPE model beside it (trained once)."""
    tmp_path = tmp_path_factory.mktemp("ws")
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    result = runner.invoke(app, ["bpe", "train", str(tmp_path / "a.txt"), "-v", "300",
                                 "-o", str(tmp_path / "tok.bpe")])
    assert result.exit_code == 0, result.output
    return tmp_path


def _refusals(prefix: list[str], flag: str, negative: str) -> list[object]:
    """Values no count flag takes: nonsense and a typo past 10^15 (the parser's words),
    and a negative number (the library's bound, as any caller of the API reads it)."""
    cmd = " ".join(w for w in prefix if not w.startswith("{"))
    return [
        pytest.param([*prefix, flag, "abc"], 2, f"{flag} 'abc' {NOT_A_COUNT}",
                     id=f"{cmd} {flag} abc"),
        pytest.param([*prefix, flag, "1e30"], 2, f"{flag} {TOO_LARGE}",
                     id=f"{cmd} {flag} 1e30"),
        pytest.param([*prefix, flag, "-1e30"], 2, f"{flag} '-1e30' is beyond 10^15",
                     id=f"{cmd} {flag} -1e30"),
        pytest.param([*prefix, flag, "-1"], 2, negative, id=f"{cmd} {flag} -1"),
    ]


COUNT = ["count", "{ws}/a.txt", "-t", "bpe:{ws}/tok.bpe"]
GENERATE = ["generate", "The baker", "--max-new-tokens", "2"]
INSPECT = ["bpe", "inspect", "{ws}/tok.bpe"]
SIMULATE = ["kvmem", "simulate", "--requests", "10"]

ROWS = [
    # count --truncate: 8k (more than the file holds) keeps it whole; 1.5 is no count
    pytest.param([*COUNT, "--truncate", "8k"], 0, "", id="count --truncate 8k"),
    pytest.param([*COUNT, "--truncate", "1Ki"], 0, "", id="count --truncate 1Ki"),
    pytest.param([*COUNT, "--truncate", "1.5"], 2, "--truncate '1.5' is not a whole number",
                 id="count --truncate 1.5"),
    pytest.param([*COUNT, "--truncate", "80GB"], 2, "--truncate '80GB' is a size",
                 id="count --truncate 80GB"),
    *_refusals(COUNT, "--truncate", "--truncate must not be negative, got '-1'"),
    # generate: the suffix is parsed, then the reference path's own caps judge the number
    pytest.param(["generate", "The baker", "--max-new-tokens", "2k"], 2,
                 "plus --max-new-tokens 2000 needs 2005 positions, but the context window is "
                 "1024", id="generate --max-new-tokens 2k"),
    pytest.param([*GENERATE, "--block-size", "8Ki"], 2,
                 "--block-size 8192 is larger than the context window of 1024 tokens",
                 id="generate --block-size 8Ki"),
    pytest.param([*GENERATE, "--block-size", "0"], 2, "--block-size must be >= 1, got 0",
                 id="generate --block-size 0"),
    pytest.param([*GENERATE, "--n", "1M"], 2,
                 "--n 1000000 samples are more than the 1024", id="generate --n 1M"),
    pytest.param([*GENERATE, "--n", "0"], 2, "--n must be >= 1, got 0", id="generate --n 0"),
    pytest.param([*GENERATE, "--top", "0", "--explain"], 2, "--top must be >= 1, got 0",
                 id="generate --top 0"),
    pytest.param(["generate", "The baker", "--max-new-tokens", "0"], 2,
                 "--max-new-tokens must be >= 1, got 0", id="generate --max-new-tokens 0"),
    pytest.param([*GENERATE, "--top-k", "8k", "--temperature", "1", "--seed", "1"], 0, "",
                 id="generate --top-k 8k"),
    pytest.param([*GENERATE, "--n", "2", "--block-size", "1e1", "--temperature", "1"], 0, "",
                 id="generate --n 2 --block-size 1e1"),
    *_refusals(GENERATE, "--max-new-tokens", "--max-new-tokens must be >= 1, got -1"),
    *_refusals(GENERATE, "--block-size", "--block-size must be >= 1, got -1"),
    *_refusals(GENERATE, "--n", "--n must be >= 1, got -1"),
    *_refusals(GENERATE, "--top-k", "--top-k must be >= 0, got -1"),
    *_refusals(GENERATE, "--top", "--top must be >= 1, got -1"),
    # bpe inspect --top: 1k is more merges than the model has (all of them are shown)
    pytest.param([*INSPECT, "--top", "1k"], 0, "", id="bpe inspect --top 1k"),
    pytest.param([*INSPECT, "--top", "0"], 0, "", id="bpe inspect --top 0"),
    *_refusals(INSPECT, "--top", "--top -1 must be 0 or more"),
    # kvmem simulate --n
    pytest.param([*SIMULATE, "--n", "2"], 0, "", id="kvmem simulate --n 2"),
    pytest.param([*SIMULATE, "--n", "0"], 2, "--n must be >= 1, got 0", id="kvmem simulate --n 0"),
    *_refusals(SIMULATE, "--n", "--n must be >= 1, got -1"),
]


def _argv(args: list[str], ws: Path) -> list[str]:
    """The row's command line; a row that sets a flag of its base (``--max-new-tokens``)
    drops the base's value, since a single-valued option is given once."""
    flag = args[-2]
    if flag.startswith("-") and args.index(flag) < len(args) - 2:
        at = args.index(flag)
        args = args[:at] + args[at + 2:]
    return [a.replace("{ws}", str(ws)) for a in args]


@pytest.mark.parametrize(("args", "code", "fragment"), ROWS)
def test_count_flags(ws: Path, args: list[str], code: int, fragment: str) -> None:
    result = runner.invoke(app, _argv(args, ws))
    assert "Traceback" not in result.output
    assert result.exit_code == code, result.output
    if code == 0:
        assert "error" not in result.stderr, result.stderr
        return
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]
    assert result.stdout == ""


def test_truncate_takes_a_suffix(ws: Path) -> None:
    args = _argv([*COUNT, "--truncate", "0.01k", "--json"], ws)
    doc = json.loads(runner.invoke(app, args).stdout)
    assert doc["max_tokens"] == 10
    assert [f["input_tokens"] > 10 and f["truncated"] for f in doc["files"]] == [True]


def test_a_refused_count_under_json_is_a_json_error(ws: Path) -> None:
    result = runner.invoke(app, _argv([*COUNT, "--truncate", "abc", "--json"], ws))
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error == {"type": "UsageError", "exit_code": 2,
                     "message": result.stderr.strip().removeprefix("error: ")}
    assert "--truncate 'abc' is not a count" in error["message"]


def test_tokcount_refuses_a_bad_count_in_one_line(ws: Path) -> None:
    # The standalone script parses before any command runs: the refusal is still one line.
    code = "import sys; from tokcost.cli.app import count_main; sys.argv[0] = 'tokcount'; count_main()"
    proc = subprocess.run([sys.executable, "-c", code, "--truncate", "1e30", str(ws / "a.txt")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == (f"error: --truncate {TOO_LARGE}, more than any corpus or model "
                           "handles; check the number and its suffix; see 'tokcount -h'\n")


@pytest.mark.parametrize(
    ("command", "flags"),
    [
        (["count"], ["--truncate"]),
        (["generate"], ["--max-new-tokens", "--top-k", "--block-size", "--n", "--top"]),
        (["bpe", "inspect"], ["--top"]),
        (["kvmem", "simulate"], ["--n"]),
    ],
)
def test_help_shows_count_flags_as_count(command: list[str], flags: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    lines = {line.split()[1]: line for line in result.stdout.splitlines()
             if len(line.split()) > 2 and line.split()[1].startswith("--")}
    for flag in flags:
        assert lines[flag].split()[2] == "COUNT", lines[flag]


@given(st.integers(min_value=-10, max_value=MAX_COUNT * 2), st.sampled_from(["", "k", "Ki", "M"]))
@settings(max_examples=200, deadline=None)
def test_a_count_flag_reads_what_parse_count_reads(number: int, suffix: str) -> None:
    """The flag reads the magnitude as ``parse_count`` does and keeps the sign for the
    library's bound check."""
    text = f"{number}{suffix}"
    parse = count_parser("--top")
    try:
        expected = tokcost.units.parse_count(f"{abs(number)}{suffix}", param="top")
    except UsageError as exc:
        with pytest.raises(CountError) as refused:
            parse(text)
        shown = str(exc).replace("top", "--top", 1).replace(f"'{abs(number)}{suffix}'",
                                                            f"'{text}'")
        assert refused.value.format_message() == shown
        assert "\n" not in shown
    else:
        assert parse(text) == (-expected if number < 0 else expected)


# --- arguments: uppercase metavars -----------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "usage"),
    [
        (["models", "validate"], "[OPTIONS] [FILE]"),
        (["models", "show"], "[OPTIONS] {MODEL}"),
        (["generate"], "[OPTIONS] {PROMPT}"),
        (["bpe", "train"], "[OPTIONS] {FILES...}"),
        (["bpe", "encode"], "[OPTIONS] [TOKENIZER] [TEXT]"),
        (["bpe", "decode"], "[OPTIONS] [TOKENIZER] [IDS...]"),
        (["bpe", "inspect"], "[OPTIONS] [TOKENIZER]"),
        (["bpe", "export"], "[OPTIONS] {MODEL}"),
    ],
)
def test_arguments_show_uppercase_metavars(command: list[str], usage: str) -> None:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert f"Usage: tokcost {' '.join(command)} {usage}" in result.stdout, result.stdout[:300]


def test_a_missing_argument_is_named_by_its_metavar() -> None:
    result = runner.invoke(app, ["models", "show"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: missing argument 'MODEL'; see 'tokcost models show -h'"


# --- a budget's tokenizer: judged at load, with file:line ------------------------------------

YAML = """\
model: gpt-4o
tokenizer: {top}
budgets:
  - name: prompts
    paths: ["*.md"]
    tokenizer: {own}
    max_tokens_per_file: 2k
"""

TOML = """\
[project]
name = "x"

[tool.tokcost]
model = "gpt-4o"

[[tool.tokcost.budgets]]
name = "prompts"
paths = ["*.md"]
tokenizer = "{own}"
max_tokens_per_file = "2k"
"""


@pytest.mark.parametrize(
    ("top", "own", "fragment"),
    [
        pytest.param("tiktoken:nonexistent_base", "cl100k_base",
                     "tokcost.yaml:2: tokenizer: unknown tiktoken encoding 'nonexistent_base'",
                     id="top-level"),
        pytest.param("o200k_base", "o200k_bas",
                     "tokcost.yaml:6: budgets[0] 'prompts': tokenizer: unknown tokenizer spec "
                     "'o200k_bas' (did you mean: o200k_base?)", id="budget"),
        pytest.param("o200k_base", "nosuch:thing",
                     "tokcost.yaml:6: budgets[0] 'prompts': tokenizer: unknown tokenizer spec "
                     "'nosuch:thing': no tokenizer family 'nosuch'", id="family"),
        pytest.param("o200k_base", "'hf:'",
                     "tokcost.yaml:6: budgets[0] 'prompts': tokenizer: tokenizer spec 'hf:' "
                     "names nothing after 'hf:'", id="empty-path"),
    ],
)
def test_a_bad_budget_tokenizer_is_a_config_error(
    tmp_path: Path, top: str, own: str, fragment: str
) -> None:
    path = tmp_path / "tokcost.yaml"
    path.write_text(YAML.format(top=top, own=own), encoding="utf-8")
    with pytest.raises(BudgetConfigError) as raised:
        load_config(path)
    assert str(raised.value).removeprefix(str(tmp_path) + "/").startswith(fragment), raised.value
    assert "\n" not in str(raised.value)


def test_a_bad_tokenizer_is_counted_with_the_other_problems(tmp_path: Path) -> None:
    path = tmp_path / "tokcost.yaml"
    path.write_text(YAML.format(top="tiktoken:nope", own="o200k_bas").replace(
        "2k", "lots"), encoding="utf-8")
    with pytest.raises(BudgetConfigError, match=r"tokcost.yaml:2: tokenizer: .*"
                       r"\(and 2 more problems\)$"):
        load_config(path)


def test_a_bad_tokenizer_in_pyproject_has_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(TOML.format(own="cl100k_bse"), encoding="utf-8")
    with pytest.raises(BudgetConfigError, match=r"pyproject.toml:10: budgets\[0\] 'prompts': "
                       r"tokenizer: unknown tokenizer spec 'cl100k_bse' \(did you mean"):
        load_config(path)


@pytest.mark.parametrize(
    "spec", ["o200k_base", "cl100k", "tiktoken:cl100k_base", "model:gpt-4o",
             "hf:some/tokenizer.json", "sp:tok.model", "bpe:tok.bpe"],
)
def test_what_t_takes_a_budget_takes(tmp_path: Path, spec: str) -> None:
    path = tmp_path / "tokcost.yaml"
    path.write_text(YAML.format(top="o200k_base", own=spec), encoding="utf-8")
    assert load_config(path).budgets[0].tokenizer == spec


def test_check_reports_a_bad_tokenizer_before_counting(tmp_path: Path) -> None:
    (tmp_path / "tokcost.yaml").write_text(
        YAML.format(top="o200k_base", own="tiktoken:o200k_bse"), encoding="utf-8")
    (tmp_path / "a.md").write_text("hello\n", encoding="utf-8")
    result = runner.invoke(app, ["check", "--config", str(tmp_path / "tokcost.yaml")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert "tokcost.yaml:6: budgets[0] 'prompts': tokenizer: unknown tiktoken encoding " \
           "'o200k_bse' (did you mean: o200k_base?)" in lines[0]
