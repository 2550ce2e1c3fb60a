"""Tiny random Hugging Face checkpoints and transformers' logits for them (issue 16).

For every family the reference path loads, a 2-layer model (hidden 64, vocabulary 300)
is initialized at random by transformers, saved with ``save_pretrained`` (the real
format: config.json, model.safetensors) and run once, eager attention, on
a fixed prompt of 24 ids (longer than the 8-token window of the sliding families).
The goldens come from the saved folder, loaded again by ``from_pretrained`` in float64
(stored as float32): so they see the checkpoint exactly as a user loads it (casting a
live model to bf16 would also round its RoPE frequency buffers), and tokcost's float32
is measured against exact arithmetic.
The folder keeps ``golden_logits.npy`` (T, V) and ``prompt_ids.json``. Some checkpoints
are stored in bf16 or fp16: their goldens see those rounded weights.

Every family carries a 300-id byte-level BPE tokenizer (``tokenizer.json``, trained on
the fixed ``CORPUS`` below, so the files do not change with the README) with the
family's special tokens at the ids its config names (Gemma: <pad> 0, <eos> 1, <bos> 2;
Llama, Mistral: <unk> 0, <s> 1, </s> 2; Qwen's ChatML markers), and ``tokenizer_config.json``
with the family's chat template where its models ship one (Llama: a small template of
our own; Qwen: ChatML; Gemma: turns; the base Mistral-7B-v0.1 has none), and
``chat_golden.json`` (the prompt as transformers' ``apply_chat_template`` renders it).
``--tokenizers-only`` rewrites the tokenizer files and leaves weights and goldens alone.

    pip install 'jinja2>=3.1' 'transformers>=4.56' 'torch>=2.1' 'safetensors>=0.4'
    python scripts/make_hf_goldens.py [--out tests/fixtures/hf_tiny] [--tokenizers-only]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PROMPT = [1, 17, 200, 45, 3, 99, 150, 7, 7, 260, 12, 88, 41, 5, 230, 64, 19, 2, 101, 77, 33,
          250, 9, 140]
WINDOW = 8
SHAPE: dict[str, Any] = dict(
    vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
)
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>\n"
    "{{ message['content'] | trim }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
CHAT = [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": " The baker opens the shop. "}]
QWEN_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
# family -> (special tokens from id 0, bos, eos, chat template or None).
TOKENIZERS: dict[str, tuple[list[str], str | None, str, str | None]] = {
    "llama": (["<unk>", "<s>", "</s>"], "<s>", "</s>", CHAT_TEMPLATE),
    "mistral": (["<unk>", "<s>", "</s>"], "<s>", "</s>", None),
    "qwen2": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None, "<|im_end|>",
              QWEN_TEMPLATE),
    "qwen3": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], None, "<|im_end|>",
              QWEN_TEMPLATE),
    "gemma2": (["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"], "<bos>",
               "<eos>", GEMMA_TEMPLATE),
    "gemma3_text": (["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"], "<bos>",
                    "<eos>", GEMMA_TEMPLATE),
}
# What the tokenizers are trained on: fixed here, so rerunning gives the same files.
CORPUS = (
    "The baker opens the shop before the sun is up. The baker sells bread to the town "
    "every day, and the town buys the bread while it is warm. A cache keeps the keys and "
    "values of the tokens a model has already seen, so the next token costs one step "
    "instead of the whole text again. Every morning the baker counts the loaves, the "
    "coins and the tokens, and writes the numbers in a book. "
) * 8


def families() -> dict[str, tuple[Any, str]]:
    """family -> (config, stored dtype)."""
    from transformers import (
        Gemma2Config,
        Gemma3TextConfig,
        LlamaConfig,
        MistralConfig,
        Qwen2Config,
        Qwen3Config,
    )

    return {
        "llama": (LlamaConfig(**SHAPE, rope_theta=500000.0, tie_word_embeddings=True,
                              rope_scaling={"rope_type": "llama3", "factor": 32.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 64}),
                  "bfloat16"),
        "qwen2": (Qwen2Config(**SHAPE, rope_theta=1000000.0, tie_word_embeddings=False),
                  "float32"),
        "qwen3": (Qwen3Config(**SHAPE, head_dim=32, rope_theta=1000000.0,
                              tie_word_embeddings=True), "float16"),
        "mistral": (MistralConfig(**SHAPE, sliding_window=WINDOW, tie_word_embeddings=False),
                    "float32"),
        "gemma2": (Gemma2Config(**SHAPE, head_dim=16, sliding_window=WINDOW,
                                query_pre_attn_scalar=16, attn_logit_softcapping=50.0,
                                final_logit_softcapping=30.0), "float32"),
        "gemma3_text": (Gemma3TextConfig(**SHAPE, head_dim=16, sliding_window=WINDOW,
                                         query_pre_attn_scalar=16,
                                         layer_types=["sliding_attention", "full_attention"]),
                        "bfloat16"),
    }


def build(name: str, config: Any, dtype: str, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(sum(map(ord, name)))
    config._attn_implementation = "eager"
    model = AutoModelForCausalLM.from_config(config).eval()
    # Random norm weights: the default ones (or zeros, Gemma's) would hide a wrong offset.
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim == 1:
                p.normal_(0.0, 0.2).add_(0.0 if "gemma" in name else 1.0)
    stored = getattr(torch, dtype)
    model = model.to(stored).to(torch.float32)  # the goldens see the rounded weights
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    model.to(stored).save_pretrained(folder, safe_serialization=True)
    # The goldens come from the checkpoint as saved, loaded as a user loads it.
    model = AutoModelForCausalLM.from_pretrained(
        folder, attn_implementation="eager", dtype=torch.float64
    ).eval()
    with torch.no_grad():
        logits = model(torch.tensor([PROMPT])).logits[0].numpy()
    np.save(folder / "golden_logits.npy", logits.astype(np.float32))
    (folder / "prompt_ids.json").write_text(json.dumps(PROMPT) + "\n")
    for extra in ("generation_config.json",):
        (folder / extra).unlink(missing_ok=True)
    print(f"{name}: {logits.shape} stored {dtype}")


def tokenizer(folder: Path, family: str) -> None:
    """A 300-id byte-level BPE with the family's special tokens and chat template, and
    the rendering transformers gives for it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials, bos, eos, template = TOKENIZERS[family]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=SHAPE["vocab_size"], special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([CORPUS], trainer)
    assert tok.get_vocab_size() == SHAPE["vocab_size"], tok.get_vocab_size()
    extra = {"pad_token": specials[0]} if family.startswith(("gemma", "qwen")) else {}
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=eos,
                                   **extra)
    if template is not None:
        fast.chat_template = template
    fast.save_pretrained(folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    if template is not None:
        config["chat_template"] = template  # where real checkpoints keep it
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    (folder / "special_tokens_map.json").unlink(missing_ok=True)
    golden = folder / "chat_golden.json"
    golden.unlink(missing_ok=True)
    if template is not None:
        rendered = fast.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True)
        golden.write_text(json.dumps({"messages": CHAT, "text": rendered}, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "fixtures" / "hf_tiny")
    parser.add_argument("--tokenizers-only", action="store_true",
                        help="rewrite the tokenizer files only (no torch needed for weights)")
    args = parser.parse_args()
    if not args.tokenizers_only:
        for name, (config, dtype) in families().items():
            build(name, config, dtype, args.out)
    for name in TOKENIZERS:
        tokenizer(args.out / name, name)


if __name__ == "__main__":
    main()
