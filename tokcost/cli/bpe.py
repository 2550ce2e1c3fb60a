"""``tokcost bpe train|encode|decode|inspect|export|sweep``: parse, build the request, call
``tokcost``, render."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost.cli import options as opt
from tokcost.cli.base import App, current_words
from tokcost.cli.console import err, out, print_json, progress_enabled, table, warn
from tokcost.errors import TokcostError, UsageError, install_hint

if TYPE_CHECKING:
    from rich.progress import Task

bpe_app = App(name="bpe", no_args_is_help=True, rich_markup_mode="rich",
              help="Train and export tokcost's own byte-level BPE (matches HF BpeTrainer); "
              "encode, decode and inspect with any tokenizer.")

ModelArg = Annotated[str, typer.Argument(metavar="MODEL", help=(
    "A model: tok.bpe, bpe:tok.bpe, a .tiktoken rank file or tiktoken:cl100k_base."))]
TokenizerArg = Annotated[str | None, typer.Argument(metavar="TOKENIZER", help=(
    "Any tokenizer: tok.bpe, a .tiktoken, .model or tokenizer.json file, or a spec (o200k_base, "
    "hf:ORG/REPO, sp:PATH.model, model:ID); or give it as -t SPEC."))]
TokenizerOpt = Annotated[str | None, typer.Option("--tokenizer", "-t", help=(
    "The tokenizer as a spec, in place of the TOKENIZER argument (o200k_base, "
    "hf:PATH/tokenizer.json, sp:PATH.model, bpe:PATH, model:ID)."))]
PatternOpt = Annotated[str | None, typer.Option(
    "--pattern", help="Pattern for a .tiktoken file without PATH.json beside it.")]
TrainPatternOpt = Annotated[str, typer.Option(
    "--pattern", help="gpt2, cl100k, o200k (tiktoken's regexes) or a regex.")]
JobsOpt = Annotated[int, typer.Option(
    "--jobs", "-j", help="Processes that pre-tokenize in parallel.")]


@contextmanager
def _progress() -> Iterator[Any]:
    """A rich progress callback on stderr when a person watches; else None."""
    if not progress_enabled():
        yield None
        return
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text
    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            unit, speed = task.fields.get("unit", ""), task.speed
            if speed is None:
                return Text("")
            return Text(f"{speed / 1e6:.1f} MB/s" if unit == "B" else f"{speed:,.0f} {unit}/s")
    bars: dict[str, Any] = {}
    with Progress(TextColumn("{task.description:<12}"), BarColumn(),
                  TextColumn("{task.completed:>,.0f}/{task.total:,.0f}"), Rate(),
                  TimeElapsedColumn(), console=err, transient=False) as progress:
        def callback(phase: str, done: int, total: int) -> None:
            if phase not in bars:
                unit = "B" if phase == "pretokenize" else "merges"
                bars[phase] = progress.add_task(phase, total=total, unit=unit)
            progress.update(bars[phase], completed=done, total=total)
        yield callback


def _warn(notes: Iterable[TokcostError]) -> None:
    words = current_words()
    for note in notes:
        warn(note.render(words) if words else str(note))


def _wrote(paths: Iterable[object]) -> None:
    err.print("wrote " + " and ".join(map(str, paths)), markup=False)


@bpe_app.command("train")
def train_cmd(
    files: Annotated[list[str], typer.Argument(metavar="FILES...", help="UTF-8 text files or "
        "folders (walked as count walks them) to train on; '-' reads stdin (with --engine dask "
        "also globs and fsspec URLs such as s3://...). Binary files are skipped, invalid UTF-8 "
        "is read as U+FFFD; both are reported.")],
    vocab_size: Annotated[int, opt.count_option("--vocab-size", "-v", signed=False, help=(
        "Tokens in the vocabulary: specials + 256 bytes + merges (32000, 32k, 32Ki)."))],
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="Model file to write (and OUT.vocab beside it).")],
    pattern: TrainPatternOpt = "o200k",
    special_tokens: Annotated[list[str] | None, typer.Option("--special", "-s", help=(
        "A special token (repeatable), e.g. '<|endoftext|>'. Its text in the corpus is split out "
        "of the lines, as HF does for added tokens, and not learned from."))] = None,
    min_frequency: Annotated[int, opt.count_option(
        "--min-frequency", signed=False, help="Stop when the best pair is rarer.")] = 0,
    max_token_length: Annotated[int | None, opt.count_option("--max-token-length", help=(
        "Longest token in bytes. The default is the longest token of o200k_base and cl100k_base "
        "(128 spaces); a value past the longest pre-token, such as 1M, lifts the limit (HF's "
        "default)."))] = tokcost.BPETrainRequest.default_max_token_length,
    jobs: JobsOpt = 1,
    max_pretokens: Annotated[int | None, opt.count_option(
        "--max-pretokens", signed=False, help=(
            "Hold at most this many distinct pre-tokens (10M, 2Mi): the most frequent, ties by "
            "first seen; for corpora whose distinct words alone exceed memory. Default: all of "
            "them, as HF does. Once it prunes, the merges depend on how the files are split "
            "(--jobs, the engine)."))] = None,
    engine: Annotated[str, typer.Option("--engine", help=(
        "local, or dask: pre-tokenize on a Dask cluster (--scheduler ADDRESS, else --jobs local "
        "worker processes); the merges are identical."))] = "local",
    scheduler: opt.SchedulerOpt = None,
    timeout: opt.DaskTimeoutOpt = None,
    force: opt.ForceOpt = False,
    json_out: opt.JsonOpt = False) -> None:
    """Train a BPE vocabulary; the merges equal Hugging Face BpeTrainer's.

    Examples:

      tokcost bpe train corpus.txt --vocab-size 32768 -o tok.bpe

      tokcost bpe train docs/*.md -v 8192 --pattern cl100k -s '<|endoftext|>' \\
        -j 2 -o tok.bpe --json

      tokcost bpe train 's3://bucket/corpus/*.txt' -v 32768 --engine dask \\
        -o tok.bpe

      cat corpus/*.txt | tokcost bpe train - -v 8192 -o tok.bpe
    """
    request = tokcost.BPETrainRequest.of(
        files=tuple(files), vocab_size=vocab_size, pattern=pattern,
        special_tokens=tuple(special_tokens or ()), min_frequency=min_frequency, jobs=jobs,
        max_token_length=max_token_length, max_pretokens=max_pretokens, output=output,
        force=force, engine=engine, scheduler=scheduler, timeout=timeout)
    with _progress() as callback:
        result = tokcost.train_bpe(request, callback)
    _warn(result.notes)
    doc = result.to_dict()
    if json_out:
        print_json(doc)
        return
    out.print(f"trained {doc['vocab_size']:,} tokens ({doc['merges']:,} merges) from "
              f"{doc['distinct_pretokens']:,} distinct pre-tokens in {doc['seconds']:.1f} s")
    _wrote(result.outputs)


def _tokenizer(argument: str | None, option: str | None) -> str:
    """The tokenizer, given as the TOKENIZER argument or as -t (exactly one of them)."""
    if option is not None and argument is not None:
        raise UsageError("give the tokenizer once: as TOKENIZER or as -t SPEC")
    name = option if option is not None else argument
    if name is None:
        raise UsageError("give a tokenizer: TOKENIZER (tok.bpe, o200k_base, ...) or -t SPEC")
    return name


def _text_or_path(model: str | None, tokenizer: str | None, text: list[str] | None,
                  file: str | None) -> tuple[str, str | None, str | None]:
    """encode's tokenizer, and its text or the path to read it from (stdin when piped)."""
    words = list(text or [])
    if tokenizer is not None and model is not None:  # with -t, the first positional is text
        words, model = [model, *words], None
    if tokenizer is not None and len(words) == 2:  # TOKENIZER TEXT, and -t as well
        _tokenizer(words[0], tokenizer)
    if len(words) > 1:
        raise UsageError("give the text as one argument (quote it), or --file PATH")
    given = words[0] if words else None
    if given is not None and file is not None:
        raise UsageError("give TEXT or --file, not both")
    if given is None and file is None and sys.stdin.isatty():
        raise UsageError("give TEXT, --file PATH, or pipe text on stdin")
    if given is not None and given != "-":
        return _tokenizer(model, tokenizer), given, None
    return _tokenizer(model, tokenizer), None, file if given is None and file else "-"


@bpe_app.command("encode")
def encode_cmd(
    model: TokenizerArg = None,
    text: Annotated[list[str] | None, typer.Argument(metavar="[TEXT]", help=(
        "Text to encode; '-' reads stdin (default: --file, else stdin)."))] = None,
    tokenizer: TokenizerOpt = None,
    file: Annotated[str | None, typer.Option(
        "--file", help="Read the text from a file ('-' = stdin).")] = None,
    allow_special: Annotated[bool, typer.Option(
        "--allow-special", help="Encode special-token text as the special token.")] = False,
    reference: Annotated[bool, typer.Option("--reference", help="Use the pure-Python encoder, not "
        "tiktoken's core (tokcost BPE and .tiktoken files).")] = False,
    pattern: PatternOpt = None,
    catalog: opt.CatalogOpt = None,
    json_out: opt.JsonOpt = False) -> None:
    """Print the token ids of a text, with any tokenizer.

    A file or stdin is read as every command reads input: invalid UTF-8 is
    replaced (and reported on stderr), a binary file is refused.
    --json prints {model, tokenizer, exact, count, ids, invalid_utf8_bytes}.

    Examples:

      tokcost bpe encode tok.bpe "hello world"

      tokcost bpe encode -t o200k_base "hello world"

      cat notes.txt | tokcost bpe encode tok.bpe - --json
    """
    name, given, path = _text_or_path(model, tokenizer, text, file)
    result = tokcost.encode_bpe(tokcost.BPEEncodeRequest(
        tokenizer=name, text=given, path=path, allow_special=allow_special,
        reference=reference, pattern=pattern, catalog=catalog))
    for note in result.warnings:
        warn(note)
    if json_out:
        print_json(result.to_dict())
    else:
        out.print(" ".join(map(str, result.ids)))


@bpe_app.command("decode")
def decode_cmd(
    model: TokenizerArg = None,
    ids: Annotated[list[str] | None, typer.Argument(metavar="IDS...", help=(
        "Token ids; '-' or none reads them from stdin."))] = None,
    tokenizer: TokenizerOpt = None,
    pattern: PatternOpt = None,
    catalog: opt.CatalogOpt = None,
    json_out: opt.JsonOpt = False) -> None:
    """Print the text of token ids, with any tokenizer (bytes that are not UTF-8 show as U+FFFD).

    --json prints {model, tokenizer, exact, text, count}.

    Examples:

      tokcost bpe decode tok.bpe 71 1917

      tokcost bpe decode -t o200k_base 24912 2375

      tokcost bpe encode tok.bpe "hi" | tokcost bpe decode tok.bpe
    """
    raw = list(ids or [])
    if tokenizer is not None and model is not None:  # with -t, the first positional is an id
        raw, model = [model, *raw], None
    if not raw or raw == ["-"]:
        raw = sys.stdin.buffer.read().decode("utf-8", "replace").replace(",", " ").split()
    try:
        numbers = tuple(int(x) for x in raw)
    except ValueError:
        raise UsageError(f"token ids must be integers, got {raw[:5]}") from None
    result = tokcost.decode_bpe(tokcost.BPEDecodeRequest(
        tokenizer=_tokenizer(model, tokenizer), ids=numbers, pattern=pattern, catalog=catalog))
    if json_out:
        print_json(result.to_dict())
    else:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")


SHOWN_SPECIALS = 12  # special tokens the table shows (--json has all)


@bpe_app.command("inspect")
def inspect_cmd(
    model: TokenizerArg = None,
    top: Annotated[int, opt.count_option(
        "--top", help="How many merges and long tokens to show (0: none).")] = 10,
    tokenizer: TokenizerOpt = None,
    pattern: PatternOpt = None,
    catalog: opt.CatalogOpt = None,
    json_out: opt.JsonOpt = False) -> None:
    """Summarize any tokenizer: sizes, pattern, special tokens; for tokcost BPE and tiktoken
    also the first merges and longest tokens.

    --json prints the fields below ("-" in the table is null: not known for this
    tokenizer); special_tokens are ordered by id, then text.

    Examples:

      tokcost bpe inspect tok.bpe

      tokcost bpe inspect tiktoken:cl100k_base --json

      tokcost bpe inspect -t hf:tokenizer.json
    """
    from rich.text import Text
    info = tokcost.inspect_bpe(tokcost.BPEInspectRequest(
        tokenizer=_tokenizer(model, tokenizer), top=top, pattern=pattern,
        catalog=catalog)).to_dict()
    if json_out:
        print_json(info)
        return
    rows = table(header=False)
    for key in ("source", "tokenizer", "pattern", "vocab_size", "tokens", "mergeable_tokens",
                "merges", *["unmerged_tokens"][:bool(info["unmerged_tokens"])], "max_token_bytes"):
        value = info[key]
        shown = "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)
        rows.add_row(key, Text(shown))  # Text: a token such as [CLS] is not rich markup
    specials = [f"{k}={v}" for k, v in info["special_tokens"].items()]
    if len(specials) > SHOWN_SPECIALS:
        specials[SHOWN_SPECIALS:] = [f"... ({len(specials)} in all; --json lists them)"]
    rows.add_row("special_tokens", Text(", ".join(specials) or "-"))
    out.print(rows)
    merges = [f"  {m['id']:>6}  [{m['left']}] + [{m['right']}] -> [{m['token']}]"
              for m in info["first_merges"]]
    if merges:
        out.print("\n".join(["first merges:", *merges]), markup=False)
    if info["longest_tokens"]:
        out.print("longest tokens: " + "  ".join(f"[{t}]" for t in info["longest_tokens"]),
                  markup=False)


@bpe_app.command("export")
def export_cmd(
    model: ModelArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")],
    format: Annotated[str, typer.Option("--format", "-f", metavar="<hf|tiktoken>", help=(
        "tiktoken (rank file + OUT.json) or hf (tokenizer.json)."))] = "hf",
    pattern: PatternOpt = None,
    force: opt.ForceOpt = False,
    json_out: opt.JsonOpt = False) -> None:
    """Export to a tiktoken rank file or a Hugging Face tokenizer.json (same ids).

    Examples:

      tokcost bpe export tok.bpe --format hf -o tokenizer.json

      tokcost bpe export tok.bpe --format tiktoken -o tok.tiktoken
    """
    result = tokcost.export_bpe(tokcost.BPEExportRequest(
        model=model, output=output, format=format, force=force, pattern=pattern))
    if json_out:
        print_json(result.to_dict())
    else:
        _wrote(result.outputs)


def _si(n: float) -> str:
    """``1.5e9`` -> ``1.5G``, ``2.5e15`` -> ``2.5P`` (rounded first: 999.6G is ``1T``)."""
    n = float(f"{n:.3g}")
    for power, unit in reversed(list(enumerate("kMGTPEZY", 1))):
        if abs(n) >= 1000**power:
            return f"{n / 1000**power:.3g}{unit}"
    return f"{n:.3g}"


@bpe_app.command("sweep")
def sweep_cmd(
    files: Annotated[list[str], typer.Argument(metavar="CORPUS...", help=(
        "UTF-8 text files or folders to train on ('-' reads stdin), as bpe train."))],
    held_out: Annotated[list[str], typer.Option(
        "--eval", metavar="HELD_OUT", help="Held-out text (repeatable): "
        "files, or one parallel folder such as corpora/prose/ (one row per language in --json).")],
    vocab_sizes: Annotated[str, typer.Option("--vocab-sizes", metavar="COUNT,...", help=(
        "Vocabulary sizes, comma-separated (1Ki,2Ki,4Ki or 1k,2k,4k); one training at the "
        "largest gives them all."))] = "1Ki,2Ki,4Ki,8Ki,16Ki,32Ki,64Ki,128Ki",
    tokenizers: opt.TokenizersOpt = None,
    hidden: Annotated[int | None, opt.count_option("--hidden", help=(
        "Model width for the embedding, output-layer, attention and KV numbers (default 4096, or "
        "-m's hidden_size)."))] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help=(
        "A catalog model: its hidden_size, layers and heads give the costs (whole model), its "
        "tokenizer joins the references."))] = None,
    tied: Annotated[bool, typer.Option(
        "--tied", help="The output layer shares the embedding's parameters.")] = False,
    pattern: TrainPatternOpt = "o200k",
    special_tokens: Annotated[list[str] | None, typer.Option(
        "--special", "-s", help="A special token (repeatable), as bpe train.")] = None,
    knee_gain: Annotated[float, typer.Option("--knee-gain", metavar="SHARE", help=(
        "The knee is the first size whose next doubling cuts tokens per byte by less than this "
        "share."))] = tokcost.BPESweepRequest.knee_gain,
    jobs: JobsOpt = 1,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the curve with the knee and "
        f"the references (.png/.svg/.pdf; {install_hint('plot')}).")] = None,
    force: opt.ForceOpt = False,
    catalog: opt.CatalogOpt = None,
    json_out: opt.JsonOpt = False) -> None:
    """Choose a vocabulary size: train once at the largest size, measure every smaller one.

    Per size, on the held-out text: tokens per byte and per character, the sequence length against
    the first -t (default o200k_base), the embedding and output-layer parameters at the model width,
    attention FLOPs and KV bytes per document (whole model with -m; per layer, MHA in bf16, with
    --hidden), and the share of the vocabulary the held-out text never uses. The -t tokenizers (and
    -m's) are shown on the same axes. --json keys are in the README.

    Examples:

      tokcost bpe sweep train/*.txt --eval test/ --vocab-sizes 512,1Ki,2Ki,4Ki,8Ki

      tokcost bpe sweep corpus.txt --eval held.txt -m llama-3.1-8b -t cl100k_base --plot sweep.png
    """
    request = tokcost.BPESweepRequest(
        files=tuple(files), held_out=tuple(held_out),
        vocab_sizes=tuple(s.strip() for s in vocab_sizes.split(",") if s.strip()),
        tokenizers=tuple(tokenizers or ("tiktoken:o200k_base",)), hidden=hidden, model=model,
        tied=tied, pattern=pattern, special_tokens=tuple(special_tokens or ()), jobs=jobs,
        knee_gain=knee_gain, plot=plot, force=force, catalog=catalog)
    with _progress() as callback:
        result = tokcost.sweep_bpe(request, callback)
    _warn(result.notes)
    doc = result.to_dict()
    if json_out:
        print_json(doc)
        return
    out.print(_sweep_table(doc))
    width, knee = doc["width"], doc["knee"]
    err.print(
        f"hidden {width['hidden_size']:,}{' (' + width['model'] + ')' if width['model'] else ''}"
        f", output layer {'tied' if width['tied'] else 'untied'}; {width['cost_formula']}; "
        f"knee: {knee['rule']}" + ("" if knee["vocab_size"] is not None else " (none found)"),
        markup=False)
    if result.plot is not None:
        _wrote([result.plot])


def _sweep_table(doc: dict[str, Any]) -> Any:
    scope = doc["width"]["cost_scope"]
    rows = table("vocab", "tokens", "tok/byte", "tok/char", f"vs {doc['reference'] or '-'}",
                 "emb+out params", f"attn FLOPs/doc/{scope}", f"KV bytes/doc/{scope}", "unused")
    knee = doc["knee"]["vocab_size"]
    for row in doc["sizes"] + doc["references"]:
        vs, unused = row["vs_reference"], row["unused_share"]
        mark = "" if row["exact"] else "≈"
        label = f"{row['vocab_size']:,}" if row["spec"] is None else (
            f"{mark}{row['label']} ({row['vocab_size']:,})")
        if row["requested_vocab_size"] == knee and knee is not None:
            label += " *knee"
        rows.add_row(label, f"{mark}{row['tokens']:,}", f"{mark}{row['tokens_per_byte']:.3f}",
                     f"{mark}{row['tokens_per_char']:.3f}",
                     "-" if vs is None else f"{mark}{vs:.2f}x",
                     _si(row["embedding_params"] + row["output_params"]),
                     f"{mark}{_si(row['attention_flops_per_document'])}",
                     f"{mark}{_si(row['kv_bytes_per_document'])}",
                     "-" if unused is None else f"{100 * unused:.1f}%")
    return rows
