"""One grammar for numbers: counts, sizes, money and percentages, and the nonsense refused.

The parsers (tokcost.units) are checked by round trips over many values; the
commands by a table of bad inputs, each answered with one line and exit 2 (or run,
with a warning, where the input is odd but meaningful).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.budget.config import BudgetConfigError, load_config
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.units import (
    MAX_COUNT,
    MAX_SIZE,
    OutOfRange,
    parse_context_list,
    parse_count,
    parse_fraction,
    parse_money,
    parse_percent,
    parse_size,
)

runner = CliRunner()
SETTINGS = settings(max_examples=200, deadline=None, database=None)

# --- counts --------------------------------------------------------------------------------

DECIMAL = {"": 1, "k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6, "B": 10**9, "b": 10**9,
           "T": 10**12}
BINARY = {"Ki": 2**10, "ki": 2**10, "KI": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


@SETTINGS
@given(n=st.integers(0, 900), suffix=st.sampled_from(sorted({**DECIMAL, **BINARY})),
       space=st.sampled_from(["", " "]))
def test_count_suffixes_multiply(n: int, suffix: str, space: str) -> None:
    assert parse_count(f"{n}{space}{suffix}") == n * {**DECIMAL, **BINARY}[suffix]


@SETTINGS
@given(n=st.integers(0, 10**11), m=st.integers(0, 9))
def test_count_round_trips(n: int, m: int) -> None:
    assert parse_count(str(n)) == parse_count(n) == n
    assert parse_count(f"{n:_}") == parse_count(f"{n:,}") == n
    assert parse_count(f"{n}.{m}k") == n * 1000 + m * 100
    assert parse_count(f"{n}e3") == n * 1000


@SETTINGS
@given(n=st.integers(1, 10**12))
def test_negative_counts_are_refused(n: int) -> None:
    with pytest.raises(UsageError, match="must not be negative"):
        parse_count(f"-{n}", param="tokens")


@SETTINGS
@given(n=st.integers(MAX_COUNT + 1, 10**40))
def test_counts_past_the_bound_are_refused(n: int) -> None:
    with pytest.raises(OutOfRange, match=r"beyond 10\^15"):
        parse_count(n)
    with pytest.raises(OutOfRange):
        parse_count(str(n))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("1B", None, id="1B-is-a-billion"),
        pytest.param("1.5", "not a whole number", id="fraction"),
        pytest.param("1,5", "not a count", id="comma-decimal"),
        pytest.param("nan", "finite", id="nan"),
        pytest.param("-inf", "finite", id="inf"),
        pytest.param("8GB", "is a size", id="a-size"),
        pytest.param("8q", "unknown suffix", id="suffix"),
        pytest.param("1e99999999", "beyond", id="huge-exponent"),
        pytest.param("", "not a count", id="empty"),
    ],
)
def test_count_edges(text: str, message: str | None) -> None:
    if message is None:
        assert parse_count(text) == 10**9
        return
    with pytest.raises(UsageError, match=message) as caught:
        parse_count(text)
    assert "\n" not in str(caught.value)


def test_context_lists_use_the_count_rule() -> None:
    assert parse_context_list("8000, 8k, 8K, 8Ki, 1.5M, 1e6, 8_000, 128Ki") == [
        8000, 8000, 8000, 8192, 1_500_000, 1_000_000, 8000, 131072,
    ]
    with pytest.raises(UsageError, match="positive"):
        parse_context_list("0")


# --- sizes ---------------------------------------------------------------------------------

SI = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
IEC = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


@SETTINGS
@given(n=st.integers(1, 999), unit=st.sampled_from(sorted({**SI, **IEC})),
       case=st.sampled_from([str, str.lower, str.upper]), space=st.sampled_from(["", " "]))
def test_sizes_in_both_unit_systems(n: int, unit: str, case: object, space: str) -> None:
    spelled = case(unit)  # type: ignore[operator]
    assert parse_size(f"{n}{space}{spelled}") == n * {**SI, **IEC}[unit]


@SETTINGS
@given(n=st.integers(2**20, MAX_SIZE))
def test_bare_byte_counts_from_one_mib(n: int) -> None:
    assert parse_size(str(n)) == parse_size(n) == n


@SETTINGS
@given(n=st.integers(1, 2**20 - 1))
def test_small_bare_numbers_need_a_unit(n: int) -> None:
    with pytest.raises(UsageError, match="has no unit"):
        parse_size(str(n))


@SETTINGS
@given(n=st.integers(1, 10**6), space=st.sampled_from(["", " "]), b=st.sampled_from("Bb"))
def test_a_B_on_a_size_is_bytes(n: int, space: str, b: str) -> None:
    # on a size flag B is bytes, as vLLM's --kv-cache-memory takes them (issue 25)
    assert parse_size(f"{n}{space}{b}", param="gpu_memory") == n
    assert parse_count(f"{n}{space}{b}") == n * 10**9  # as a count, a billion


@SETTINGS
@given(n=st.integers(MAX_SIZE + 1, 10**30))
def test_sizes_past_one_eib_are_refused(n: int) -> None:
    with pytest.raises(OutOfRange, match=r"2\^60 bytes"):
        parse_size(n)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("80G", "ambiguous", id="bare-G"),
        pytest.param("-5GB", "must not be negative", id="negative"),
        pytest.param("nan", "finite", id="nan"),
        pytest.param("inf GB", "not a size", id="inf"),
        pytest.param("0B", "greater than zero", id="zero-bytes"),
        pytest.param("2EiB", "beyond", id="EiB"),
        pytest.param("80Gibs", "unknown unit", id="typo"),
    ],
)
def test_size_edges(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        parse_size(text)
    assert "\n" not in str(caught.value)


# --- money, percentages, shares ------------------------------------------------------------


@SETTINGS
@given(cents=st.integers(0, 10**9))
def test_money_spellings_agree(cents: int) -> None:
    usd = Decimal(cents) / 100
    text = f"{usd:.2f}"
    assert parse_money(text) == parse_money(f"${text}") == parse_money(f"{text} USD") == usd
    assert parse_money(f"{cents}c") == parse_money(f"{cents}¢") == usd
    assert parse_money(f"${cents}k") == cents * 1000


@pytest.mark.parametrize("text", ["-$5", "$-5", "€5", "5 EUR", "£3", "$5c", "lots", "nan",
                                  "$2e13"])
def test_money_refusals_are_one_line(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_money(text, param="max_cost")
    assert "\n" not in str(caught.value) and "max_cost" in str(caught.value)


@SETTINGS
@given(value=st.decimals(0, 10**6, places=2))
def test_percent_sign_is_optional(value: Decimal) -> None:
    assert parse_percent(f"{value}%") == parse_percent(str(value)) == value


@SETTINGS
@given(points=st.integers(0, 100))
def test_shares_as_fractions_or_percent(points: int) -> None:
    assert parse_fraction(f"{points}%") == parse_fraction(str(Decimal(points) / 100))
    assert parse_fraction(f"{points}%") == Decimal(points) / 100


def test_a_bare_share_above_one_is_refused_not_guessed() -> None:
    with pytest.raises(UsageError, match="write 50%"):
        parse_fraction("50", param="cached_share")


@SETTINGS
@given(text=st.text(max_size=12))
def test_any_text_is_a_value_or_one_usage_error(text: str) -> None:
    for parse in (parse_count, parse_size, parse_money, parse_percent, parse_fraction):
        try:
            parse(text)
        except UsageError as exc:
            assert str(exc) and "\n" not in str(exc)


# --- every command: nonsense refused in one line -------------------------------------------

SIM = ["kvmem", "simulate", "--requests", "5"]
EST = ["kvmem", "estimate", "-m", "llama-3.1-8b"]
PRICE = ["price", "-m", "gpt-4o"]

CLI_ROWS = [
    pytest.param([*SIM, "--max-len", "0"], 2, "--max-len must be >= 2", id="sim-max-len-0"),
    pytest.param([*SIM, "--max-len", "-3"], 2, "--max-len must not be negative",
                 id="sim-max-len-negative"),
    pytest.param([*SIM, "--policy", "paged,paged"], 2, "'paged' twice", id="sim-policy-twice"),
    pytest.param([*SIM, "--block-size", "100000"], 2, "give 1 to 2,048 tokens",
                 id="sim-block-beyond-max-len"),
    pytest.param([*SIM, "--block-size", "64", "--max-len", "32"], 2, "at most --max-len 32",
                 id="sim-block-larger-than-max-len"),
    pytest.param([*SIM, "--block-size", "0"], 2, "--block-size must be >= 1", id="sim-block-0"),
    pytest.param([*SIM, "--rate", "nan"], 2, "--rate must be > 0 and finite", id="sim-rate-nan"),
    pytest.param([*SIM, "--rate", "inf"], 2, "--rate must be > 0 and finite", id="sim-rate-inf"),
    pytest.param(["kvmem", "simulate", "--requests", "1e9"], 2, "at most 1,000,000",
                 id="sim-requests-huge"),
    pytest.param(["kvmem", "simulate", "--requests", "0"], 2, "--requests must be >= 1",
                 id="sim-requests-0"),
    pytest.param([*SIM, "--slots", "0"], 2, "--slots must be >= 1", id="sim-slots-0"),
    pytest.param([*SIM, "--slots", "1e30"], 2, "beyond 10^15", id="sim-slots-huge"),
    pytest.param([*SIM, "--kv-memory", "12B"], 2, "memory holds 0", id="sim-kv-memory-B"),
    pytest.param([*SIM, "--dist", "fixed:0,5"], 2, "positive lengths", id="sim-dist-zero"),
    pytest.param([*SIM, "--dist", "uniform:1-1e30"], 2, "whole-number lengths",
                 id="sim-dist-huge"),
    pytest.param([*EST, "--context", "1e30"], 2, "--context '1e30' is beyond 10^15",
                 id="est-context-1e30"),
    pytest.param([*EST, "--context", "1e12"], 2, "far past any model's context window",
                 id="est-context-1e12"),
    pytest.param([*EST, "--context", "-5"], 2, "--context must be positive",
                 id="est-context-negative"),
    pytest.param([*EST, "--context", "1.5"], 2, "not a whole number", id="est-context-fraction"),
    pytest.param([*EST, "--batch", "0"], 2, "--batch must be a positive integer",
                 id="est-batch-0"),
    pytest.param([*EST, "--batch", "1e7"], 2, "--batch 10,000,000 is beyond", id="est-batch-huge"),
    pytest.param([*EST, "--tp", "0"], 2, "--tp", id="est-tp-0"),
    pytest.param([*EST, "--tp", "4096"], 2, "tensor-parallel group", id="est-tp-huge"),
    pytest.param([*EST, "--gpu-util", "1.5"], 2, "give --gpu or --gpu-memory",
                 id="est-util-without-gpu"),
    pytest.param([*EST, "--gpu", "h100", "--gpu-util", "1.5"], 2, "must be in (0, 1]",
                 id="est-util-1.5"),
    pytest.param([*EST, "--gpu", "h100", "--gpu-util", "nan"], 2, "must be in (0, 1]",
                 id="est-util-nan"),
    pytest.param([*EST, "--reserve", "1GiB"], 2, "--reserve applies to a GPU's memory",
                 id="est-reserve-without-gpu"),
    pytest.param([*EST, "--gpu-memory", "80B"], 1, "nothing is left for the KV cache",
                 id="est-gpu-memory-B"),
    pytest.param([*EST, "--gpu-memory", "80"], 2, "has no unit", id="est-gpu-memory-bare"),
    pytest.param([*EST, "--gpu-memory", "2EiB"], 2, "beyond 2^60 bytes", id="est-gpu-memory-huge"),
    pytest.param([*EST, "--kv-memory", "-5GB"], 2, "must not be negative", id="est-kv-negative"),
    pytest.param([*EST, "--bandwidth", "nan"], 2, "finite", id="est-bandwidth-nan"),
    pytest.param([*EST, "--block-size", "100000"], 2, "give 1 to 4,096 tokens",
                 id="est-block-huge"),
    pytest.param([*PRICE, "-i", "-5"], 2, "--input-tokens must not be negative",
                 id="price-negative"),
    pytest.param([*PRICE, "-i", "1e30"], 2, "beyond 10^15", id="price-huge"),
    pytest.param([*PRICE, "-i", "1.5"], 2, "not a whole number", id="price-fraction"),
    pytest.param([*PRICE, "-i", "5", "--output-tokens", "nan"], 2, "finite", id="price-nan"),
    pytest.param([*PRICE, "-i", "5", "--requests", "0"], 2, "--requests", id="price-requests-0"),
    pytest.param([*PRICE, "-i", "5", "--cached-tokens", "8GB"], 2, "is a size",
                 id="price-size-for-count"),
]


def _run(args: list[str]) -> tuple[int, str, str]:
    result = runner.invoke(app, args)
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("args", "code", "fragment"), CLI_ROWS)
def test_nonsense_is_refused_in_one_line(args: list[str], code: int, fragment: str) -> None:
    exit_code, _, stderr = _run(args)
    assert exit_code == code, stderr
    assert fragment in stderr
    assert len(stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(["bpe", "train", "CORPUS", "--vocab-size", "1e30"], "beyond 10^15",
                     id="vocab-huge"),
        pytest.param(["bpe", "train", "CORPUS", "--vocab-size", "-5"], "must not be negative",
                     id="vocab-negative"),
        pytest.param(["bpe", "train", "CORPUS", "--vocab-size", "300", "--min-frequency", "1.5"],
                     "not a whole number", id="min-frequency-fraction"),
    ],
)
def test_bpe_train_numbers(tmp_path: Path, args: list[str], fragment: str) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world " * 20, encoding="utf-8")
    argv = [str(corpus) if a == "CORPUS" else a for a in args] + ["-o", str(tmp_path / "t.bpe")]
    exit_code, _, stderr = _run(argv)
    assert exit_code == 2 and fragment in stderr and len(stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == [corpus]  # nothing written


def test_bpe_train_takes_a_binary_count(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world " * 20, encoding="utf-8")
    exit_code, _, stderr = _run(["bpe", "train", str(corpus), "-v", "0.25Ki", "-o",
                                 str(tmp_path / "t.bpe"), "--json"])
    assert exit_code == 0, stderr  # 256 tokens: the bytes alone


def test_lengths_cut_to_max_len_are_reported() -> None:
    exit_code, stdout, stderr = _run([*SIM, "--dist", "fixed:3000,100", "--max-len", "2k"])
    assert exit_code == 0
    assert "5 of 5 requests were longer than --max-len 2,000 and cut to fit" in stderr
    assert "max length 2,000" in stdout
    exit_code, _, stderr = _run([*SIM, "--dist", "fixed:100,100", "--max-len", "2Ki"])
    assert exit_code == 0 and "warning" not in stderr
    exit_code, _, stderr = _run([*SIM[:3], "1", "--dist", "fixed:3000,1"])
    assert exit_code == 0
    assert "1 of 1 request was longer than the max length 2,048 (set it with --max-len)" in stderr


def test_contexts_past_the_window_say_so() -> None:
    exit_code, stdout, stderr = _run([*EST, "--context", "1M"])
    assert exit_code == 0
    assert "(>window)" in stdout and "cannot serve them" in stderr  # the note: stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param([*EST, "--context", "8Ki", "--batch", "1k", "--kv-memory", "10GiB",
                      "--json"], 8192, id="estimate"),
        pytest.param([*PRICE, "-i", "1.5k", "--json"], 1500, id="price"),
    ],
)
def test_human_counts_on_every_count_flag(args: list[str], expected: int) -> None:
    import json

    exit_code, stdout, stderr = _run(args)
    assert exit_code == 0, stderr
    data = json.loads(stdout)
    if "contexts" in data:
        assert data["contexts"][0]["context"] == expected and data["batch"] == 1000
    else:
        assert data["lines"][0]["tokens"] == expected


# --- budget files --------------------------------------------------------------------------


def _config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "tokcost.yaml"
    path.write_text("budgets:\n  - name: a\n    paths: [x]\n" + body, encoding="utf-8")
    return path


def test_budget_values_as_people_write_them(tmp_path: Path) -> None:
    config = load_config(_config(
        tmp_path,
        "    max_tokens_per_file: 10k\n    max_total_tokens: 1.5M\n"
        "    max_cost_per_call: $0.05\n    output_tokens: 2Ki\n    cached_share: 50%\n"
        "    max_growth_percent: 10%\n    max_context_percent: 80\n",
    ))
    (b,) = config.budgets
    assert (b.max_tokens_per_file, b.max_total_tokens, b.output_tokens) == (10_000, 1_500_000,
                                                                            2048)
    assert b.max_cost_per_call == Decimal("0.05") and b.cached_share == Decimal("0.5")
    assert (b.max_growth_percent, b.max_context_percent) == (10.0, 80.0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param("    max_tokens_per_file: 1e30\n",
                     "tokcost.yaml:4: budgets[0] 'a': max_tokens_per_file: expected a whole "
                     "number from 1 to 10^15, got '1e30'", id="tokens-huge"),
        pytest.param("    max_total_tokens: -5k\n",
                     "tokcost.yaml:4: budgets[0] 'a': max_total_tokens: expected a whole number "
                     ">= 1, got '-5k'", id="tokens-negative"),
        pytest.param("    max_cost_per_call: €5\n",
                     "tokcost.yaml:4: budgets[0] 'a': max_cost_per_call: expected an amount in "
                     "USD", id="money-currency"),
        pytest.param("    max_total_tokens: 5\n    max_growth_percent: -10%\n",
                     "tokcost.yaml:5: budgets[0] 'a': max_growth_percent: expected a percentage",
                     id="percent-negative"),
        pytest.param("    max_total_tokens: 5\n    cached_share: 50\n",
                     "tokcost.yaml:5: budgets[0] 'a': cached_share: expected a fraction in [0, 1]",
                     id="share-bare-50"),
        pytest.param("    max_total_tokens: 5\n    output_tokens: .nan\n",
                     "tokcost.yaml:5: budgets[0] 'a': output_tokens: expected a whole number",
                     id="tokens-nan"),
    ],
)
def test_budget_nonsense_names_file_line_and_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(BudgetConfigError) as caught:
        load_config(_config(tmp_path, body))
    assert str(caught.value).endswith(message) or message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_check_refuses_a_budget_value_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path, "    max_cost_per_call: 5 EUR\n")
    monkeypatch.chdir(tmp_path)
    exit_code, _, stderr = _run(["check"])
    assert exit_code == 2
    assert "tokcost.yaml:4: budgets[0] 'a': max_cost_per_call" in stderr
    assert len(stderr.strip().splitlines()) == 1
