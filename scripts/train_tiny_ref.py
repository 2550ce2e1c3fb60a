"""Train the shipped tiny-ref checkpoint on corpora/ (a development tool, not shipped).

Needs torch (a development-only extra: ``pip install torch==2.13.0``, the CPU build)
and writes, into ``tokcost/reference/data/`` by default:

- ``tiny_ref_tokenizer.json``: a byte-level BPE (Hugging Face ``tokenizers``) trained
  on the training split of corpora/, unless ``--tokenizer SPEC`` names an existing one;
- ``tiny_ref.npz``: the weights in tokcost's ``tokcost-ref v1`` format (float16);
- ``tiny_ref.json``: the human-readable companion: shape, data, steps and the held-out
  perplexity against the uniform and unigram baselines, measured with the numpy model.

The torch model mirrors ``tokcost.reference.model`` weight for weight (same names,
same (in, out) layout, same RoPE "rotate half" convention); the script checks the
numpy forward pass against torch's on held-out text before it writes anything.

    python scripts/train_tiny_ref.py --steps 3000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tokcost.reference import RefConfig, Transformer, load_weights, save_weights  # noqa: E402

DATA = ROOT / "tokcost" / "reference" / "data"
TOKENIZER_SPEC = "hf:tokcost/reference/data/tiny_ref_tokenizer.json"
TEXT_SUFFIXES = {
    ".txt",
    ".md",
    ".py",
    ".js",
    ".ts",
    ".go",
    ".rs",
    ".java",
    ".c",
    ".h",
    ".cpp",
    ".rb",
    ".sh",
    ".json",
    ".yaml",
    ".yml",
    ".html",
    ".css",
    ".sql",
    ".kt",
    ".swift",
    ".php",
    ".cs",
    ".hs",
    ".lua",
    ".r",
    ".scala",
    ".toml",
}


def split_corpus(root: Path, held_out: float) -> tuple[list[str], list[str], list[str]]:
    """Train and held-out texts: the last ``held_out`` share of each file's lines."""
    train, valid, names = [], [], []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in TEXT_SUFFIXES:
            continue
        if path.name.lower() == "readme.md":
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        lines = text.splitlines(keepends=True)
        if len(lines) < 2:
            # One long line: split by characters instead.
            cut = int(len(text) * (1 - held_out))
            train.append(text[:cut])
            valid.append(text[cut:])
        else:
            cut = max(1, int(len(lines) * (1 - held_out)))
            train.append("".join(lines[:cut]))
            valid.append("".join(lines[cut:]))
        names.append(str(path.relative_to(root)))
    return train, valid, names


def train_tokenizer(texts: list[str], vocab_size: int, out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    fd, tmp = tempfile.mkstemp(dir=out.parent, suffix=".json")
    os.close(fd)
    tok.save(tmp)
    os.replace(tmp, out)


def build_torch_model(cfg: RefConfig, dropout: float) -> Any:
    import torch
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + cfg.norm_eps) * self.weight

    def lin(i: int, o: int, std: float) -> nn.Parameter:
        return nn.Parameter(torch.randn(i, o) * std)  # (in, out), as numpy's x @ w

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            c, hs = cfg.hidden_size, cfg.head_dim
            res = 0.02 / math.sqrt(2 * cfg.layers)
            self.attn_norm, self.mlp_norm = RMSNorm(c), RMSNorm(c)
            self.wq = lin(c, cfg.attention_heads * hs, 0.02)
            self.wk = lin(c, cfg.kv_heads * hs, 0.02)
            self.wv = lin(c, cfg.kv_heads * hs, 0.02)
            self.wo = lin(cfg.attention_heads * hs, c, res)
            self.w_gate = lin(c, cfg.ffn_hidden, 0.02)
            self.w_up = lin(c, cfg.ffn_hidden, 0.02)
            self.w_down = lin(cfg.ffn_hidden, c, res)
            self.drop = nn.Dropout(dropout)

        def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
            b, t, _ = x.shape
            nh, nkv, hs = cfg.attention_heads, cfg.kv_heads, cfg.head_dim
            h = self.attn_norm(x)
            q = (h @ self.wq).view(b, t, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
            k = (h @ self.wk).view(b, t, nkv, hs).transpose(1, 2)  # (B, nkv, T, hs)
            v = (h @ self.wv).view(b, t, nkv, hs).transpose(1, 2)  # (B, nkv, T, hs)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            k = k.repeat_interleave(cfg.group, dim=1)  # (B, nh, T, hs)
            v = v.repeat_interleave(cfg.group, dim=1)
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=True, dropout_p=dropout if self.training else 0.0
            )  # (B, nh, T, hs)
            x = x + self.drop(y.transpose(1, 2).reshape(b, t, nh * hs) @ self.wo)
            h = self.mlp_norm(x)
            g = torch.nn.functional.silu(h @ self.w_gate) * (h @ self.w_up)
            return x + self.drop(g @ self.w_down)

    def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_emb = nn.Parameter(torch.randn(cfg.vocab_size, cfg.hidden_size) * 0.02)
            self.layers = nn.ModuleList(Block() for _ in range(cfg.layers))
            self.norm = RMSNorm(cfg.hidden_size)
            inv = 1.0 / cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2).double() / cfg.head_dim)
            ang = torch.outer(torch.arange(cfg.context_window).double(), inv)
            self.register_buffer("cos", ang.cos().float(), persistent=False)
            self.register_buffer("sin", ang.sin().float(), persistent=False)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            t = ids.shape[1]
            x = self.tok_emb[ids]  # (B, T, C)
            for layer in self.layers:
                x = layer(x, self.cos[:t], self.sin[:t])
            return self.norm(x) @ self.tok_emb.T  # (B, T, V)

        def export(self) -> dict[str, np.ndarray]:
            out = {}
            for name, p in self.named_parameters():
                key = name.replace(".weight", "")
                out[key] = p.detach().cpu().numpy().astype(np.float32)
            return out

    return Model()


def numpy_eval(model: Transformer, ids: list[int], seq: int) -> float:
    """Mean next-token cross-entropy (nats) of the numpy model over ``ids``, in windows."""
    total, count = 0.0, 0
    for start in range(0, len(ids) - 1, seq):
        chunk = ids[start : start + seq + 1]
        if len(chunk) < 2:
            break
        x = np.asarray([chunk[:-1]], dtype=np.int64)
        logits = model.forward(x).logits[0].astype(np.float64)  # (T, V)
        logz = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
        nll = logz - logits[np.arange(len(chunk) - 1), chunk[1:]]
        total += float(nll.sum())
        count += len(chunk) - 1
    return total / count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=ROOT / "corpora")
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("--tokenizer", help="an existing tokcost spec instead of training one")
    ap.add_argument("--vocab-size", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--held-out", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-minutes", type=float, default=0, help="stop early (0: no limit)")
    args = ap.parse_args()

    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    train_texts, valid_texts, names = split_corpus(args.corpora, args.held_out)
    if not train_texts:
        sys.exit(f"no text files under {args.corpora}")
    print(
        f"{len(names)} files, {sum(map(len, train_texts)):,} train chars, "
        f"{sum(map(len, valid_texts)):,} held-out chars",
        file=sys.stderr,
    )

    import tokcost

    spec = args.tokenizer
    if spec is None:
        tok_path = args.out / "tiny_ref_tokenizer.json"
        train_tokenizer(train_texts, args.vocab_size, tok_path)
        spec = f"hf:{tok_path}"
    tok = tokcost.get_tokenizer(spec)
    vocab = tok.vocab_size
    train_ids = [i for t in train_texts for i in tok.encode(t)]
    valid_ids = [i for t in valid_texts for i in tok.encode(t)]
    print(
        f"vocab {vocab}: {len(train_ids):,} train tokens, {len(valid_ids):,} held-out tokens",
        file=sys.stderr,
    )

    cfg = RefConfig(
        layers=args.layers,
        hidden_size=args.hidden,
        attention_heads=args.heads,
        kv_heads=args.kv_heads,
        head_dim=args.hidden // args.heads,
        vocab_size=vocab,
        context_window=args.context,
    )
    model = build_torch_model(cfg, args.dropout)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": args.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=args.lr,
        betas=(0.9, 0.95),
    )
    data = torch.tensor(train_ids, dtype=torch.long)
    vdata = torch.tensor(valid_ids, dtype=torch.long)
    gen = torch.Generator().manual_seed(args.seed)

    def batch(src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ix = torch.randint(len(src) - args.seq - 1, (args.batch,), generator=gen)
        x = torch.stack([src[i : i + args.seq] for i in ix])
        y = torch.stack([src[i + 1 : i + args.seq + 1] for i in ix])
        return x, y

    def valid_loss() -> float:
        model.eval()
        with torch.no_grad():
            losses = []
            for s in range(0, len(vdata) - 1, args.seq):
                x = vdata[s : s + args.seq][None]
                y = vdata[s + 1 : s + args.seq + 1][None]
                x = x[:, : y.shape[1]]
                logits = model(x)
                losses.append(
                    (
                        torch.nn.functional.cross_entropy(
                            logits.view(-1, vocab), y.reshape(-1), reduction="sum"
                        ).item(),
                        y.numel(),
                    )
                )
        model.train()
        return sum(a for a, _ in losses) / sum(n for _, n in losses)

    best, best_state, best_step = float("inf"), model.export(), 0
    warmup = 100
    t0 = time.time()
    for step in range(1, args.steps + 1):
        lr = args.lr * min(1.0, step / warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = batch(data)
        loss = torch.nn.functional.cross_entropy(model(x).view(-1, vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        out_of_time = args.max_minutes and time.time() - t0 > args.max_minutes * 60
        if step % 100 == 0 or step == args.steps or out_of_time:
            vl = valid_loss()
            if vl < best:
                best, best_state, best_step = vl, model.export(), step
            print(
                f"step {step:5d}  train {loss.item():.3f}  held-out {vl:.3f} "
                f"(ppl {math.exp(vl):.1f})  {time.time() - t0:.0f}s",
                file=sys.stderr,
                flush=True,
            )
            if out_of_time:
                args.steps = step
                break

    # Baselines on the same held-out tokens.
    counts = Counter(train_ids)
    unigram = -sum(math.log((counts[i] + 1) / (len(train_ids) + vocab)) for i in valid_ids)
    unigram /= len(valid_ids)

    weights_path = args.out / "tiny_ref.npz"
    save_weights(weights_path, best_state)
    np_model = Transformer(cfg, load_weights(weights_path, cfg))
    np_loss = numpy_eval(np_model, valid_ids, args.seq)
    report = {
        "format": "tokcost-ref v1",
        "architecture": {
            "layers": cfg.layers,
            "hidden_size": cfg.hidden_size,
            "attention_heads": cfg.attention_heads,
            "kv_heads": cfg.kv_heads,
            "head_dim": cfg.head_dim,
            "intermediate_size": cfg.ffn_hidden,
            "vocab_size": cfg.vocab_size,
            "context_window": cfg.context_window,
            "params": cfg.params,
            "tied_embeddings": cfg.tie_embeddings,
        },
        "tokenizer": TOKENIZER_SPEC if args.tokenizer is None else args.tokenizer,
        "weights_dtype": "float16",
        "data": {
            "files": names,
            "train_tokens": len(train_ids),
            "held_out_tokens": len(valid_ids),
            "held_out": f"last {args.held_out:.0%} of the lines of every file",
        },
        "training": {
            "steps": args.steps,
            "best_step": best_step,
            "seq": args.seq,
            "batch": args.batch,
            "lr": args.lr,
            "dropout": args.dropout,
            "weight_decay": args.weight_decay,
            "seed": args.seed,
            "seconds": round(time.time() - t0),
            "torch": torch.__version__,
        },
        "held_out_perplexity": {
            "tiny_ref_numpy": round(math.exp(np_loss), 2),
            "tiny_ref_torch": round(math.exp(best), 2),
            "unigram_add_one": round(math.exp(unigram), 2),
            "uniform": vocab,
        },
    }
    (args.out / "tiny_ref.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["held_out_perplexity"], indent=2))


if __name__ == "__main__":
    main()
