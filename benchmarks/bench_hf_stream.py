"""``count -t hf:PATH`` in bounded memory (issue 29 part 2): a real-size byte-level
tokenizer.json and a 100 MB file, counted by tokcount as a whole process.

    python benchmarks/bench_hf_stream.py [--mb 100] [--vocab 65536] [--pipeline llama3]
                                         [--whole-mb 0]

Untimed: seeded generated prose (Zipf-distributed words of 1-4 syllables, capitals, commas,
numbers, a few accented and CJK words) in documents joined by ``<|doc|>``, a non-special added
token; a ByteLevel BPE of ``--vocab`` trained on its first 24 MB by ``tokenizers`` (Llama-3's
Split + ByteLevel, or GPT-2's ByteLevel alone), with a BOS post-processor as Llama-3 has.

Timed: ``python -m tokcost count -t hf:tokenizer.json FILE --json``, wall and peak RSS (wait4).
Oracle: ``tokenizers``' own count of the file. It cannot encode 100 MB at once here (about
180 bytes a character), but it splits added tokens off before anything else
(tokenizers/src/tokenizer/added_vocabulary.rs, ``extract_and_normalize``), so its count of
the whole file is its counts of the documents plus one per ``<|doc|>``: a child process counts
them document by document. ``--whole-mb N`` also has tokenizers encode the first N MB whole and
compares it with tokcount's count of that prefix (cut at a ``<|doc|>``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SEP = "<|doc|>"
ORACLE = r"""
import sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
tok.encode_special_tokens = True  # as tokcount counts without --allow-special
text = open(sys.argv[2], encoding="utf-8").read()
docs = text.split(sys.argv[3])
total = len(docs) - 1
for i in range(0, len(docs), 32):
    total += sum(len(e.ids) for e in tok.encode_batch(docs[i:i + 32], add_special_tokens=False))
print(total)
"""
WHOLE = r"""
import sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
tok.encode_special_tokens = True
print(len(tok.encode(open(sys.argv[2], encoding="utf-8").read(), add_special_tokens=False).ids))
"""


def prose(path: Path, megabytes: float, seed: int = 29) -> None:
    rng = random.Random(seed)
    syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in ("a", "e", "i", "o", "u", "ou")]
    words = list(dict.fromkeys("".join(rng.choices(syllables, k=rng.choice((1, 2, 2, 3, 3, 4))))
                                for _ in range(90_000)))
    words += ["café", "naïve", "Zürich", "東京", "中文", "façade", "über", "señor"]
    cum = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
    target = int(megabytes * 1_000_000)
    written = 0
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            doc: list[str] = []
            for _ in range(rng.randint(20, 400)):  # paragraphs
                sentences = []
                for _ in range(rng.randint(1, 8)):
                    ws = rng.choices(words, cum_weights=cum, k=rng.randint(4, 30))
                    ws[0] = ws[0].capitalize()
                    if rng.random() < 0.3:
                        ws[rng.randrange(len(ws))] += ","
                    if rng.random() < 0.2:
                        ws.insert(rng.randrange(len(ws)), str(rng.randint(0, 99_999)))
                    sentences.append(" ".join(ws) + rng.choice(".....?!:"))
                doc.append(" ".join(sentences))
            text = "\n\n".join(doc) + SEP
            out.write(text)
            written += len(text.encode())


def train(corpus: Path, vocab: int, pipeline: str, out: Path) -> None:
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )

    from tokcost.adapters.hf_cuts import LLAMA3_REGEX
    tok = Tokenizer(models.BPE())
    if pipeline == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_REGEX), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bos = "<|begin_of_text|>"
    trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, show_progress=False,
                                  special_tokens=[bos, "<|end_of_text|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    with corpus.open(encoding="utf-8") as fh:
        head = fh.read(24_000_000)
    tok.train_from_iterator(head.split("\n\n"), trainer)
    tok.add_tokens([AddedToken(SEP, special=False, normalized=False)])
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", special_tokens=[(bos, tok.token_to_id(bos))])
    tok.save(str(out))


def run(cmd: list[str]) -> tuple[str, float, float]:
    """stdout, wall seconds and peak RSS (MB) of one child process."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        text = out.read().decode()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"failed: {' '.join(cmd)}")
    return text, wall, usage.ru_maxrss / 1024


def tokcount(tok: Path, file: Path) -> tuple[int, float, float]:
    out, wall, rss = run([sys.executable, "-m", "tokcost", "count", "-t", f"hf:{tok}",
                          str(file), "--json"])
    return int(json.loads(out)["files"][0]["tokens"][f"hf:{tok}"]), wall, rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--vocab", type=int, default=65_536)
    parser.add_argument("--pipeline", choices=("llama3", "gpt2"), default="llama3")
    parser.add_argument("--whole-mb", type=float, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        file, tok = work / "prose.txt", work / "tokenizer.json"
        t0 = time.perf_counter()
        prose(file, args.mb)
        t1 = time.perf_counter()
        train(file, args.vocab, args.pipeline, tok)
        vocab = json.loads(tok.read_text())["model"]["vocab"]
        print(f"corpus {file.stat().st_size / 1e6:.0f} MB ({t1 - t0:.0f} s), {args.pipeline} "
              f"ByteLevel BPE of {len(vocab):,} tokens ({time.perf_counter() - t1:.0f} s), "
              f"untimed; load: {os.getloadavg()[0]:.2f}")
        count, wall, rss = tokcount(tok, file)
        print(f"tokcount count -t hf: {count:,} tokens, {wall:.1f} s, "
              f"{file.stat().st_size / 1e6 / wall:.1f} MB/s, peak RSS {rss:.0f} MB")
        out, owall, orss = run([sys.executable, "-c", ORACLE, str(tok), str(file), SEP])
        oracle = int(out)
        print(f"tokenizers, document by document: {oracle:,} tokens ({owall:.1f} s, "
              f"{orss:.0f} MB): {'equal' if oracle == count else 'DIFFERENT'}")
        if args.whole_mb:
            text = file.read_text(encoding="utf-8")
            cut = text.rfind(SEP, 0, int(args.whole_mb * 1_000_000)) + len(SEP)
            prefix = work / "prefix.txt"
            prefix.write_text(text[:cut], encoding="utf-8")
            del text
            pcount, pwall, prss = tokcount(tok, prefix)
            out, wwall, wrss = run([sys.executable, "-c", WHOLE, str(tok), str(prefix)])
            print(f"first {cut / 1e6:.0f} M characters: tokcount {pcount:,} ({pwall:.1f} s, "
                  f"{prss:.0f} MB); tokenizers whole {int(out):,} ({wwall:.1f} s, {wrss:.0f} MB):"
                  f" {'equal' if int(out) == pcount else 'DIFFERENT'}")
        ok = rss <= 400 and oracle == count
        print(f"bar (RSS <= 400 MB, count equal to tokenizers'): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
