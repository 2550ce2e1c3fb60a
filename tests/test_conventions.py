"""Output conventions every command keeps (issue 14, "One grammar"):

* money is formatted one way (``tokcost.units.format_usd``) in every command;
* a number a proxy tokenizer gave is marked ``≈``, and one an exact tokenizer gave is not;
* every table ``compare`` prints is sorted by premium, largest first, ties by code;
* stdout ends with a newline; notes, warnings and "wrote X" go to stderr.
"""

from __future__ import annotations

import itertools
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.inflation import Corpus, builtin_dir
from tokcost.units import format_percent as percent
from tokcost.units import format_usd, round_percent

PROXY, EXACT = "claude-sonnet-4-5", "gpt-4o"  # both count with o200k_base; one is a proxy


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def invoke(runner: CliRunner, args: list[str], code: int = 0) -> Any:
    result = runner.invoke(app, args)
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == code, (args, result.stdout, result.stderr)
    return result


def parse_usd(text: str) -> Decimal:
    """'≈-$1,234.50/M' -> Decimal('-1234.50'): the amount a person reads."""
    text = text.lstrip("≈").removesuffix("/M")
    sign = -1 if text.startswith("-") else 1
    assert text.lstrip("-").startswith("$"), text
    return sign * Decimal(text.lstrip("-").lstrip("$").replace(",", ""))


def last_digit(text: str) -> Decimal:
    """The value of one unit in the last digit shown: '$0.00660' -> 0.00001."""
    frac = text.removesuffix("/M").partition(".")[2]
    return Decimal(1).scaleb(-len(frac))


# --- the money rule ------------------------------------------------------------------------

AMOUNTS = st.decimals(min_value=Decimal("1e-15"), max_value=Decimal("1e12"), allow_nan=False,
                      allow_infinity=False, places=None)


@given(AMOUNTS)
def test_a_positive_amount_never_reads_as_zero(amount: Decimal) -> None:
    shown = format_usd(amount)
    assert shown != "$0.00" and parse_usd(shown) > 0
    assert re.fullmatch(r"\$[0-9]{1,3}(,[0-9]{3})*\.[0-9]{2,}", shown), shown


@given(AMOUNTS)
def test_the_shown_amount_is_within_half_its_last_digit(amount: Decimal) -> None:
    shown = format_usd(amount)
    assert abs(parse_usd(shown) - amount) <= last_digit(shown) / 2


@given(AMOUNTS)
def test_under_a_dollar_three_significant_digits_unless_exact(amount: Decimal) -> None:
    shown = format_usd(amount)
    value = parse_usd(shown)
    if value >= 1:
        assert len(shown.partition(".")[2]) == 2  # to the cent
        return
    digits = shown.partition(".")[2].lstrip("0")
    assert len(digits) == 3 or value == amount  # fewer only when nothing was rounded


@given(AMOUNTS, AMOUNTS)
def test_rounding_keeps_the_order(a: Decimal, b: Decimal) -> None:
    low, high = sorted((a, b))
    assert parse_usd(format_usd(low)) <= parse_usd(format_usd(high))


@given(AMOUNTS)
def test_negative_amounts_mirror_positive_ones_and_rates_add_per_million(amount: Decimal) -> None:
    assert format_usd(-amount) == "-" + format_usd(amount)
    assert format_usd(amount, per_million=True) == format_usd(amount) + "/M"
    assert format_usd(float(amount)) == format_usd(Decimal(str(float(amount))))


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        pytest.param("0", "$0.00", id="zero"),
        pytest.param("0.000125", "$0.000125", id="under-a-cent"),
        pytest.param("0.0066025", "$0.00660", id="rounded-zero-kept"),
        pytest.param("0.045", "$0.045", id="exact-no-padding"),
        pytest.param("0.3", "$0.30", id="cents"),
        pytest.param("0.99999", "$1.00", id="rounds-up-to-a-dollar"),
        pytest.param("1.545", "$1.55", id="half-up"),
        pytest.param("1234567.891", "$1,234,567.89", id="thousands"),
    ],
)
def test_money_examples(amount: str, shown: str) -> None:
    assert format_usd(Decimal(amount)) == shown


def test_infinite_money_is_refused() -> None:
    with pytest.raises(ValueError, match="not an amount"):
        format_usd(Decimal("Infinity"))


# --- the same amount reads the same in every command ---------------------------------------

TEXT = "The ferry left at noon, and the harbour was quiet again.\n"


@pytest.fixture
def priced(tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """A catalog with one priced model, a prompt file, a compare folder and a budget on it."""
    rate, repeat = request.param
    catalog = tmp_path / "models.yaml"
    catalog.write_text(
        "version: 1\nmodels:\n  - id: m\n    provider: test\n    tokenizer: tiktoken:cl100k_base\n"
        f"    context_window: 1000000\n    pricing: {{input: {rate}, output: {rate}}}\n",
        encoding="utf-8")
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "en.txt").write_text(TEXT * repeat, encoding="utf-8")
    (texts / "de.txt").write_text("Die Fähre fuhr am Mittag ab.\n" * repeat, encoding="utf-8")
    (tmp_path / "tokcost.yaml").write_text(
        "model: m\ncatalog: models.yaml\nbudgets:\n  - name: en\n    paths: [texts/en.txt]\n"
        "    max_cost_per_call: 1000000\n", encoding="utf-8")
    tokens = tokcost.get_tokenizer("cl100k_base").count(TEXT * repeat)
    cost = Decimal(tokens) * Decimal(rate) / Decimal(1_000_000)
    return {"root": tmp_path, "catalog": str(catalog), "prompt": str(texts / "en.txt"),
            "texts": str(texts), "rate": format_usd(Decimal(rate), per_million=True),
            "cost": format_usd(cost)}


RATES = [("0.075", 1), ("2.50", 40), ("0.3125", 7), ("18.75", 300), ("30000", 50)]


@pytest.mark.parametrize("priced", RATES, indirect=True, ids=[r for r, _ in RATES])
@pytest.mark.parametrize(
    ("args", "key"),
    [
        pytest.param(["price", "-m", "m", "{prompt}", "--catalog", "{catalog}"], "cost",
                     id="price-cost"),
        pytest.param(["price", "-m", "m", "{prompt}", "--catalog", "{catalog}"], "rate",
                     id="price-rate"),
        pytest.param(["compare", "{texts}", "-m", "m", "--catalog", "{catalog}", "--no-chart"],
                     "cost", id="compare-table"),
        pytest.param(["compare", "{texts}", "-m", "m", "--catalog", "{catalog}", "--markdown"],
                     "cost", id="compare-markdown"),
        pytest.param(["check", "--config", "{root}/tokcost.yaml"], "cost", id="check-text"),
        pytest.param(["check", "--config", "{root}/tokcost.yaml", "--format", "markdown"], "cost",
                     id="check-markdown"),
        pytest.param(["models", "show", "m", "--catalog", "{catalog}"], "rate", id="models-show"),
        pytest.param(["models", "list", "--catalog", "{catalog}"], "rate", id="models-list"),
    ],
)
def test_one_amount_one_string_in_every_command(runner: CliRunner, priced: dict[str, Any],
                                                args: list[str], key: str) -> None:
    result = invoke(runner, [a.format(**priced) for a in args])
    shown = re.findall(r"≈?-?\$[0-9][0-9,]*\.[0-9]+(?:/M)?", result.stdout)
    assert priced[key] in shown, (priced[key], shown)


# --- ≈ where a proxy tokenizer gave the number, and nowhere else ----------------------------


@pytest.fixture
def texts(tmp_path: Path) -> Path:
    """Three parallel texts: a folder compare reads, and files count and price read."""
    folder = tmp_path / "texts"
    folder.mkdir()
    prose = builtin_dir() / "prose"
    for code in ("en", "de", "hi"):
        (folder / f"{code}.txt").write_text((prose / f"{code}.txt").read_text(encoding="utf-8"),
                                            encoding="utf-8")
    return folder


@pytest.fixture
def budget(tmp_path: Path, texts: Path) -> Path:
    """A folder with en.txt and a budget config on it per model: ``<model>.yaml``."""
    folder = tmp_path / "budget"
    folder.mkdir()
    (folder / "en.txt").write_text((texts / "en.txt").read_text(encoding="utf-8"),
                                   encoding="utf-8")
    for model in (PROXY, EXACT):
        (folder / f"{model}.yaml").write_text(
            f"model: {model}\nbudgets:\n  - name: en\n    paths: [en.txt]\n"
            "    max_cost_per_call: 1\n", encoding="utf-8")
    return folder


APPROX_ROWS = [
    pytest.param(["compare", "{texts}", "-m", "{model}", "--no-chart"],
                 ["prose · ≈{model} · premium vs en", "≈1.00x", "≈$"], id="compare-table"),
    pytest.param(["compare", "{texts}", "-m", "{model}"],
                 ["■ ≈{model}", "the Hindi version costs ≈"], id="compare-chart-summary"),
    pytest.param(["compare", "{texts}", "-m", "{model}", "--markdown"],
                 ["≈{model} premium", "| ≈"], id="compare-markdown"),
    pytest.param(["price", "-m", "{model}", "{texts}/en.txt"], ["total: ≈$", "≈1,"],
                 id="price"),
    pytest.param(["count", "{texts}/en.txt", "-m", "{model}"],
                 ["≈{model}", "≈1,", "= ≈"], id="count-table"),
    pytest.param(["count", "{texts}/en.txt", "-m", "{model}", "--tokens"],
                 ["tokens (≈{model}, proxy o200k_base)"], id="count-tokens-header"),
    pytest.param(["check", "--config", "{budget}/{model}.yaml"],
                 ["(≈o200k_base)", "≈$", "≈1,"], id="check-text"),
    pytest.param(["check", "--config", "{budget}/{model}.yaml", "--format", "markdown"],
                 ["(≈o200k_base)", "≈$"], id="check-markdown"),
]


@pytest.mark.parametrize(("args", "fragments"), APPROX_ROWS)
def test_a_proxy_is_marked(runner: CliRunner, texts: Path, budget: Path, args: list[str],
                           fragments: list[str]) -> None:
    stdout = invoke(runner, [a.format(texts=texts, model=PROXY, budget=budget)
                             for a in args]).stdout
    for fragment in fragments:
        assert fragment.format(model=PROXY) in stdout, (fragment, stdout)


@pytest.mark.parametrize(("args", "fragments"), APPROX_ROWS)
def test_an_exact_tokenizer_is_not_marked(runner: CliRunner, texts: Path, budget: Path,
                                          args: list[str], fragments: list[str]) -> None:
    result = invoke(runner, [a.format(texts=texts, model=EXACT, budget=budget) for a in args])
    assert "≈" not in result.stdout
    assert "proxy" not in result.stderr


def test_compare_names_the_proxy_on_stderr(runner: CliRunner, texts: Path) -> None:
    result = invoke(runner, ["compare", str(texts), "-m", PROXY, "-m", EXACT, "--no-chart"])
    assert f"note: ≈ {PROXY} is counted with a proxy tokenizer (o200k_base)" in result.stderr
    assert "note:" not in result.stdout
    assert f"· {EXACT} ·" in result.stdout and f"· ≈{EXACT}" not in result.stdout


def test_the_plot_legend_marks_a_proxy(texts: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    import tokcost.plotting.inflation as figure

    seen: dict[str, Any] = {}

    def keep(fig: Any, path: Path) -> None:
        ax = fig.axes[0]
        seen["legend"] = [t.get_text() for t in ax.get_legend().get_texts()]
        seen["values"] = [t.get_text().strip() for t in ax.texts]

    monkeypatch.setattr(figure, "save_figure", keep)
    tokcost.compare(tokcost.CompareRequest(corpus=Corpus(sources=[texts]),
                                           models=(PROXY, EXACT), plot=tmp_path / "p.png"))
    assert seen["legend"] == [f"≈{PROXY} (proxy tokenizer)", EXACT]
    marked = [v for v in seen["values"] if v.startswith("≈")]
    assert len(marked) == len(seen["values"]) // 2 == 3  # the proxy's bars, not gpt-4o's


# --- compare tables are sorted by premium --------------------------------------------------

TITLE = re.compile(r"^(prose|code|data) · (≈?\S+) · premium vs \S+$")


def tables_of(stdout: str) -> dict[str, list[tuple[str, float]]]:
    """'kind · tokenizer' -> the (code, premium) rows of that table, in printed order."""
    tables: dict[str, list[tuple[str, float]]] = {}
    current: list[tuple[str, float]] = []
    for line in stdout.splitlines():
        title = TITLE.match(line)
        if title:
            current = tables.setdefault(f"{title[1]} · {title[2]}", [])
        elif line and not line.startswith(("code ", "On ")):  # a row, not the header
            cells = re.split(r"\s{2,}", line.strip())
            premium = next(c for c in reversed(cells) if c.endswith("x"))
            current.append((cells[0], float(premium.lstrip("≈").rstrip("x"))))
    return tables


def is_sorted(rows: list[tuple[str, float]]) -> bool:
    """Largest premium first (the shown premiums are rounded, so ties are tested apart)."""
    return all(a[1] >= b[1] for a, b in itertools.pairwise(rows))


def test_every_compare_table_is_sorted_by_its_own_premium(runner: CliRunner) -> None:
    # cl100k_base and o200k_base rank the languages differently (Bengali vs Greek on top)
    stdout = invoke(runner, ["compare", "--builtin", "-t", "cl100k_base", "-t", "o200k_base",
                             "-m", PROXY, "--no-chart"]).stdout
    tables = tables_of(stdout)
    assert len(tables) == 3 * 3  # prose, code, data x three tokenizers
    for name, rows in tables.items():
        assert rows and is_sorted(rows), name
    assert tables["prose · cl100k_base"][0][0] != tables["prose · o200k_base"][0][0]


def test_the_cost_sentence_names_the_top_of_its_own_table(runner: CliRunner) -> None:
    stdout = invoke(runner, ["compare", "--builtin", "-k", "prose", "-t", "cl100k_base",
                             "-m", EXACT, "--no-chart"]).stdout
    top = tables_of(stdout)[f"prose · {EXACT}"][0][0]
    request = tokcost.CompareRequest(corpus=Corpus(kinds=["prose"]), models=(EXACT,))
    name = tokcost.compare(request).report.groups[0].rows[0].sample.label
    assert top == "el" and f"the {name} version costs" in stdout


def test_markdown_and_chart_rows_follow_the_first_tokenizer(runner: CliRunner) -> None:
    stdout = invoke(runner, ["compare", "--builtin", "-k", "prose", "-t", "cl100k_base",
                             "-t", "o200k_base", "--markdown"]).stdout
    rows = [line.split("|")[1:-1] for line in stdout.splitlines() if line.startswith("| `")]
    premiums = [(r[0].strip(" `"), float(r[4].strip(" x"))) for r in rows]
    assert is_sorted(premiums)


def test_csv_rows_are_sorted_per_tokenizer(runner: CliRunner) -> None:
    import csv
    import io

    stdout = invoke(runner, ["compare", "--builtin", "-t", "cl100k_base", "-t", "o200k_base",
                             "--csv"]).stdout
    tables: dict[tuple[str, str], list[tuple[str, float]]] = {}
    for r in csv.DictReader(io.StringIO(stdout)):
        tables.setdefault((r["kind"], r["tokenizer"]), []).append((r["code"], float(r["premium"])))
    assert len(tables) == 6
    assert all(is_sorted(rows) for rows in tables.values())


def test_ties_are_in_code_order() -> None:
    from tokcost.inflation import Group, Meter, Sample, measure

    same = "one two three\n"
    samples = tuple(Sample(code, same, kind="prose") for code in ("zz", "en", "aa", "mm"))
    report = measure([Group("prose", "en", samples)], [Meter.of("tiktoken:cl100k_base")])
    assert [r.code for r in report.groups[0].rows] == ["aa", "en", "mm", "zz"]


# --- check's failure messages mark the proxy's numbers too --------------------------------

MESSAGE_ROWS = [
    pytest.param("max_tokens_per_file: 10", ["en.txt: ≈{n} tokens (≈o200k_base)"],
                 id="tokens-per-file"),
    pytest.param("max_total_tokens: 10", ["budget 'en': ≈{n} tokens in 1 file (≈o200k_base)"],
                 id="total-tokens"),
    pytest.param("max_cost_per_call: 0.000001",
                 ["en.txt: ≈$", " per call on {model} (≈{n} input + ", "over the $0.000001 limit"],
                 id="cost-per-file"),
    pytest.param("max_cost_per_call: 0.000001\n    combine: true",
                 ["budget 'en': ≈$", " per call on {model} (≈{n} input + "], id="cost-combined"),
    pytest.param("max_context_percent: 0.01\n    reserve_output_tokens: 0",
                 ["en.txt: ≈{n} prompt + 0 reserved output tokens = ≈", "over 0.01%"],
                 id="context-per-file"),
    pytest.param("max_context_percent: 0.01\n    reserve_output_tokens: 0\n    combine: true",
                 ["budget 'en': ≈{n} prompt + 0 reserved output tokens = ≈"],
                 id="context-combined"),
]


def _check_messages(runner: CliRunner, budget: Path, model: str, limits: str) -> list[str]:
    config = budget / "limits.yaml"
    config.write_text(f"model: {model}\nbudgets:\n  - name: en\n    paths: [en.txt]\n"
                      f"    {limits}\n", encoding="utf-8")
    result = invoke(runner, ["check", "--config", str(config), "--format", "json"], code=1)
    return [f["message"] for f in json.loads(result.stdout)["failures"]]


@pytest.mark.parametrize(("limits", "fragments"), MESSAGE_ROWS)
def test_a_failure_message_marks_the_proxy_numbers(runner: CliRunner, budget: Path,
                                                   limits: str, fragments: list[str]) -> None:
    n = f"{tokcost.get_tokenizer('o200k_base').count(_read(budget / 'en.txt')):,}"
    [message] = _check_messages(runner, budget, PROXY, limits)
    for fragment in fragments:
        assert fragment.format(n=n, model=PROXY) in message, (fragment, message)
    assert "approximate" not in message  # the ≈ says it, as in the tables


@pytest.mark.parametrize(("limits", "fragments"), MESSAGE_ROWS)
def test_an_exact_failure_message_is_not_marked(runner: CliRunner, budget: Path, limits: str,
                                                fragments: list[str]) -> None:
    [message] = _check_messages(runner, budget, EXACT, limits)
    assert "≈" not in message, message


def test_a_growth_message_marks_the_proxy_numbers(runner: CliRunner, budget: Path) -> None:
    config = budget / "growth.yaml"
    config.write_text(f"model: {PROXY}\nbudgets:\n  - name: en\n    paths: [en.txt]\n"
                      "    max_growth_percent: 0\n    max_file_growth_percent: 0\n",
                      encoding="utf-8")
    invoke(runner, ["check", "--config", str(config), "--update-baseline"])
    with (budget / "en.txt").open("a", encoding="utf-8") as f:
        f.write("One more line.\n")
    result = invoke(runner, ["check", "--config", str(config), "--format", "json"], code=1)
    messages = [f["message"] for f in json.loads(result.stdout)["failures"]]
    assert len(messages) == 2
    for message in messages:
        assert re.search(r"≈[0-9,]+ tokens, ≈\+[0-9.]+% against the baseline \(≈[0-9,]+\)",
                         message), message


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


# --- a small positive share never reads as zero ---------------------------------------------

SHARES = st.floats(min_value=1e-9, max_value=1e4, allow_nan=False, allow_infinity=False)


def _percent_value(text: str) -> Decimal:
    return Decimal(text.removesuffix("%"))


@given(SHARES)
def test_a_positive_share_never_reads_as_zero(share: float) -> None:
    shown = percent(share)
    assert re.fullmatch(r"[0-9]+\.[0-9]+%", shown), shown  # never e-notation
    assert _percent_value(shown) > 0
    assert round_percent(share) > 0


@given(SHARES)
def test_the_shown_share_is_within_half_its_last_digit(share: float) -> None:
    shown = percent(share)
    assert abs(_percent_value(shown) - Decimal(share)) <= last_digit(shown.removesuffix("%")) / 2
    digits = shown.removesuffix("%").replace(".", "").lstrip("0")
    assert len(digits) >= 2 or share >= 0.1  # under 0.1%, two significant digits


@given(SHARES, SHARES)
def test_share_rounding_keeps_the_order(a: float, b: float) -> None:
    low, high = sorted((a, b))
    assert _percent_value(percent(low)) <= _percent_value(percent(high))


@given(SHARES)
def test_growth_is_signed_and_mirrors(share: float) -> None:
    assert percent(share, sign=True) == "+" + percent(share)
    assert percent(-share, sign=True) == "-" + percent(share)
    assert round_percent(-share) == -round_percent(share)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.0, "0.0%"), (130.24, "130.2%"), (0.1, "0.1%"), (0.0996, "0.10%"), (0.0469, "0.047%"),
     (0.0006, "0.00060%"), (3e-7, "0.00000030%")],
)
def test_share_examples(value: float, shown: str) -> None:
    assert percent(value) == shown


@pytest.fixture
def wide(tmp_path: Path) -> Path:
    """A 1,000,000-token window, a 3-token prompt + 3 reserved: 0.0006% of the window."""
    (tmp_path / "models.yaml").write_text(
        "version: 1\nmodels:\n  - id: wide\n    provider: test\n"
        "    tokenizer: tiktoken:cl100k_base\n    context_window: 1000000\n"
        "    pricing: {input: 1, output: 1}\n", encoding="utf-8")
    (tmp_path / "p.txt").write_text("hello world\n", encoding="utf-8")
    assert tokcost.get_tokenizer("cl100k_base").count("hello world\n") == 3
    config = tmp_path / "tokcost.yaml"
    config.write_text(
        "model: wide\ncatalog: models.yaml\nbudgets:\n  - name: tiny\n    paths: [p.txt]\n"
        "    max_total_tokens: 100\n    reserve_output_tokens: 3\n  - name: strict\n"
        "    paths: [p.txt]\n    max_context_percent: 0.0001\n    reserve_output_tokens: 3\n",
        encoding="utf-8")
    return config


@pytest.mark.parametrize(
    ("fmt", "fragments"),
    [
        pytest.param("text", ["  0.00060%  ", "  0.00010%\n"], id="text"),
        pytest.param("markdown", ["| 0.00060% |", "| 0.00010% |"], id="markdown"),
        pytest.param("github", ["= 0.00060%25 of wide's 1,000,000-token window, over 0.0001%25"],
                     id="github"),
        pytest.param("junit", ["= 0.00060% of wide's", "context_window: 0.00060% &gt; 0.00010%"],
                     id="junit"),
        pytest.param("json", ['"context_percent": 0.0006', '"actual": 0.0006'], id="json"),
    ],
)
def test_a_small_window_share_is_shown_in_every_format(runner: CliRunner, wide: Path, fmt: str,
                                                       fragments: list[str]) -> None:
    stdout = invoke(runner, ["check", "--config", str(wide), "--format", fmt], code=1).stdout
    for fragment in fragments:
        assert fragment in stdout, (fragment, stdout)
    assert "0.0%" not in stdout and "0.0," not in stdout and "e-0" not in stdout


# --- stdout ends with a newline; notes on stderr -------------------------------------------


@pytest.fixture
def tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bpe")
    model = folder / "t.bpe"
    result = CliRunner().invoke(app, ["bpe", "train", str(builtin_dir() / "prose" / "en.txt"),
                                      "--vocab-size", "300", "-o", str(model)])
    assert result.exit_code == 0, result.output
    return model


NEWLINE_ROWS = [
    ["count", "{en}"], ["count", "{en}", "--json"], ["count", "{en}", "--csv"],
    ["count", "{en}", "--total"], ["count", "{en}", "--tokens"],
    ["count", "{en}", "--truncate", "3"], ["count", "{en}", "--truncate", "0"],
    ["count", "--chat", "{chat}", "-m", "gpt-4o"],
    ["compare", "{texts}"], ["compare", "{texts}", "--json"], ["compare", "{texts}", "--csv"],
    ["compare", "{texts}", "--markdown"],
    ["price", "-m", "gpt-4o", "-i", "1000"], ["price", "-m", "gpt-4o", "-i", "1000", "--json"],
    ["models", "list"], ["models", "list", "--gpus"], ["models", "show", "gpt-4o"],
    ["models", "validate"],
    ["kvmem", "estimate", "-m", "llama-3.1-8b"], ["kvmem", "estimate", "-m", "llama-3.1-8b",
                                                  "--json"],
    ["kvmem", "simulate", "--requests", "20"],
    ["bpe", "encode", "{tok}", "hello world"], ["bpe", "encode", "{tok}", ""],
    ["bpe", "decode", "{tok}", "104", "105"], ["bpe", "inspect", "{tok}", "--top", "2"],
    ["bpe", "inspect", "{tok}", "--json"],
    ["generate", "The baker", "--max-new-tokens", "2"],
    ["attention", "The baker bakes"], ["attention", "The baker bakes", "--json"],
    ["check", "--config", "{budget}/gpt-4o.yaml"],
    ["check", "--config", "{budget}/gpt-4o.yaml", "--format", "github"],
    ["check", "--config", "{budget}/gpt-4o.yaml", "--format", "junit"],
]


@pytest.mark.parametrize("args", NEWLINE_ROWS, ids=[" ".join(a) for a in NEWLINE_ROWS])
def test_stdout_ends_with_a_newline(runner: CliRunner, texts: Path, budget: Path, tok: Path,
                                    args: list[str]) -> None:
    chat = budget / "chat.json"
    chat.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    fields = {"en": texts / "en.txt", "texts": texts, "budget": budget, "tok": tok, "chat": chat}
    stdout = invoke(runner, [a.format(**fields) for a in args]).stdout
    assert stdout.endswith("\n"), repr(stdout[-80:])


STDERR_ROWS = [
    pytest.param(["price", "-m", "claude-sonnet-4-5", "-i", "250k", "--cached-tokens", "200k"],
                 "note: long-context tier", id="price-tier"),
    pytest.param(["price", "-m", "gpt-4o", "-i", "1k", "--batch-api"], "note: batch discount",
                 id="price-batch"),
    pytest.param(["price", "-m", "gpt-4o", "-i", "1k"], "note: prices as of", id="price-as-of"),
    pytest.param(["price", "-m", PROXY, "{texts}/en.txt"], "note: ≈ prompt counted",
                 id="price-proxy"),
    pytest.param(["compare", "{texts}", "-m", PROXY], "note: ≈", id="compare-proxy"),
    pytest.param(["compare", "{texts}", "--plot", "{out}/p.png"], "wrote ", id="compare-plot"),
    pytest.param(["check", "--config", "{budget}/gpt-4o.yaml", "--update-baseline"],
                 "wrote baseline", id="check-baseline"),
    pytest.param(["bpe", "train", "{texts}/en.txt", "--vocab-size", "300", "-o", "{out}/x.bpe"],
                 "wrote {out}/x.bpe and {out}/x.vocab", id="bpe-train"),
    pytest.param(["bpe", "export", "{tok}", "--format", "hf", "-o", "{out}/t.json"],
                 "wrote {out}/t.json", id="bpe-export"),
    pytest.param(["bpe", "export", "{tok}", "--format", "tiktoken", "-o", "{out}/t.tiktoken"],
                 "wrote {out}/t.tiktoken and {out}/t.tiktoken.json", id="bpe-export-tiktoken"),
    pytest.param(["kvmem", "estimate", "-m", "llama-3.1-8b", "--plot", "{out}/m.png"],
                 "wrote {out}/m.png", id="kvmem-plot"),
    pytest.param(["kvmem", "estimate", "-m", "llama-3.1-8b", "--tp", "2"], "note: numbers are",
                 id="kvmem-note"),
    pytest.param(["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100"],
                 "note: gpu_memory_utilization 1.0", id="kvmem-reserve-note"),
    pytest.param(["kvmem", "simulate", "--requests", "20", "--policy", "paged"], "note: paged",
                 id="simulate-note"),
    pytest.param(["kvmem", "simulate", "--requests", "20", "--policy", "paged"],
                 "tokens = token states;", id="simulate-legend"),
    pytest.param(["kvmem", "simulate", "--requests", "20", "--policy", "paged", "--plot",
                  "{out}/s.png"], "wrote {out}/s.png", id="simulate-plot"),
    pytest.param(["models", "list"], "models; ≈ = proxy tokenizer", id="models-list-legend"),
    pytest.param(["models", "sync-prices", "--catalog", "{prices}"], "not in the database: zz-",
                 id="sync-prices-unmatched"),
    pytest.param(["models", "sync-prices", "--catalog", "{prices}"],
                 "run with --write to apply them", id="sync-prices-hint"),
    pytest.param(["models", "sync-prices", "--catalog", "{prices}", "--write"],
                 "wrote 1 change(s) to {prices}", id="sync-prices-wrote"),
]

# A catalog sync-prices compares: gpt-4o with a wrong input price, and a model the
# genai-prices database does not know.
PRICES = """version: 1
models:
  - id: gpt-4o
    provider: openai
    tokenizer: tiktoken:o200k_base
    context_window: 128000
    pricing: {input: 2.75, cached_input: 1.25, output: 10.00, batch_discount: 0.5}
  - id: zz-not-a-real-model
    provider: openai
    tokenizer: tiktoken:o200k_base
    context_window: 1000
    pricing: {input: 1, output: 1}
"""


@pytest.mark.parametrize(("args", "fragment"), STDERR_ROWS)
def test_notes_go_to_stderr(runner: CliRunner, texts: Path, budget: Path, tok: Path,
                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
                            fragment: str) -> None:
    if any("plot" in a for a in args):
        pytest.importorskip("matplotlib")
        monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    if "sync-prices" in args:
        pytest.importorskip("genai_prices")
    out = tmp_path / "out"
    out.mkdir()
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES, encoding="utf-8")
    fields = {"texts": texts, "budget": budget, "tok": tok, "out": out, "prices": prices}
    result = invoke(runner, [a.format(**fields) for a in args])
    wanted = fragment.format(**fields)
    assert wanted in result.stderr
    assert wanted not in result.stdout
    for line in result.stdout.splitlines():
        assert not re.match(r"\s*(note|warning|wrote|hint)\b", line), line
