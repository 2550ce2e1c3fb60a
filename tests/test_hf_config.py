"""config.json -> Architecture (issue 12, item 2): every catalog family, from the real files.

The fixtures in tests/fixtures/hf_configs/ are the published config.json files (SOURCES.md
names each); a folder with a config.json is what ``kvmem estimate --config`` reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tokcost
from tokcost.catalog import load_catalog
from tokcost.catalog.hf_config import architecture_from_config, context_window, weights_dtype
from tokcost.catalog.hf_model import load_config
from tokcost.errors import InputError, UsageError

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
GiB = 2**30


def real(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name / "config.json").read_text())
    return data


def arch(config: dict[str, Any]) -> Any:
    return architecture_from_config(config, where="config.json")


def test_every_catalog_family_has_a_fixture_and_a_source() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text()
    assert len(FAMILIES) == 14
    for name in FAMILIES:
        assert f"| {name} |" in sources
        assert (FIXTURES / name / "config.json").is_file()


# (folder, layers, kv heads, head_dim, attention type, pattern, window, context, dtype, experts)
CASES = [
    ("llama-3.1-8b", 32, 8, 128, "full", ("full",), None, 131072, "bf16", None),
    # sliding_window 4096 and no pattern: every layer slides (MistralConfig)
    ("mistral-7b-v0.1", 32, 8, 128, "sliding", ("sliding",), 4096, 32768, "bf16", None),
    # "sliding_window": null: full attention; 8 local experts, 2 per token
    ("mixtral-8x7b", 32, 8, 128, "full", ("full",), None, 32768, "bf16", (8, 2)),
    # sliding_window 131072 but use_sliding_window false: full (Qwen2Config)
    ("qwen2.5-7b", 28, 4, 128, "full", ("full",), None, 32768, "bf16", None),
    ("qwen3-8b", 36, 8, 128, "full", ("full",), None, 40960, "bf16", None),
    ("qwen3-30b-a3b", 48, 4, 128, "full", ("full",), None, 40960, "bf16", (128, 8)),
    # full_attention_interval 4: layers 3, 7, ... are full, the others Gated DeltaNet
    ("qwen3-next-80b-a3b", 48, 2, 256, "hybrid", ("linear", "linear", "linear", "full"), None,
     262144, "bf16", (512, 10)),
    # kv_lora_rank: every layer MLA; fp8 from quantization_config (torch_dtype says bf16)
    ("deepseek-v3", 61, 128, None, "mla", ("full",), None, 163840, "fp8", (256, 8)),
    # Gemma-2 alternates, layer 0 sliding; float32 on disk, served in 16 bits
    ("gemma-2-9b", 42, 8, 256, "sliding", ("sliding", "full"), 4096, 8192, "bf16", None),
    # text_config; (i + 1) % 6: five sliding, one full; 131,072 = Gemma3TextConfig's default
    ("gemma-3-27b", 62, 16, 128, "sliding", ("sliding",) * 5 + ("full",), 1024, 131072, "bf16",
     None),
    ("gpt-oss-120b", 36, 8, 64, "sliding", ("sliding", "full"), 128, 131072, "mxfp4", (128, 4)),
    # sliding_window 2047 on every layer, as vLLM runs Phi-3-mini (issue 12, item 5)
    ("phi-3-mini", 32, 32, 96, "sliding", ("sliding",), 2047, 4096, "bf16", None),
    # no num_key_value_heads: MHA; head_dim = 5120 / 40
    ("opt-13b", 40, 40, 128, "full", ("full",), None, 2048, "fp16", None),
    # attention at i % 8 == 4, Mamba elsewhere; 16 experts, 2 per token
    ("jamba-1.5-mini", 32, 8, 128, "hybrid", ("linear",) * 4 + ("full",) + ("linear",) * 3,
     None, 262144, "bf16", (16, 2)),
]


@pytest.mark.parametrize(
    ("name", "layers", "kv", "head_dim", "kind", "pattern", "window", "context", "dtype", "moe"),
    CASES, ids=[c[0] for c in CASES],
)
def test_family(name: str, layers: int, kv: int, head_dim: int | None, kind: str,
                pattern: tuple[str, ...], window: int | None, context: int, dtype: str,
                moe: tuple[int, int] | None) -> None:
    config = real(name)
    a = arch(config)
    assert (a.layers, a.kv_heads, a.head_dim) == (layers, kv, head_dim)
    assert (a.attention.type, a.attention.pattern, a.attention.window) == (kind, pattern, window)
    assert context_window(config, where="config.json") == context
    assert a.weights_dtype == dtype
    assert (a.experts, a.experts_per_token) == (moe or (None, None))
    assert a.params_total is None and a.weights_bytes is None  # no headers given


def test_linear_state_sizes() -> None:
    """vLLM's state shapes (mamba_utils.py), per layer and sequence:

    Qwen3-Next, Gated DeltaNet: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) = 24,576 plus
    32 x 128 x 128 = 524,288 -> 548,864 (the catalog's figure).
    Jamba-1.5-Mini, Mamba1: inner = 2 x 4096 = 8,192; 8,192 x (4 - 1) + 8,192 x 16 = 155,648.
    """
    assert arch(real("qwen3-next-80b-a3b")).attention.linear_state_elements == 548_864
    assert arch(real("jamba-1.5-mini")).attention.linear_state_elements == 155_648


CATALOG_SAME = [n for n in FAMILIES if n != "phi-3-mini"]


@pytest.mark.parametrize("name", CATALOG_SAME)
def test_config_gives_the_catalog_architecture(name: str) -> None:
    """Every catalog entry was written from these configs: the shapes agree field by field.
    (Phi-3-mini's catalog entry is being moved to its sliding window by item 5.)"""
    a = arch(real(name))
    c = load_catalog().resolve(name).architecture
    assert c is not None
    for field in ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
                  "vocab_size"):
        assert getattr(a, field) == getattr(c, field), field
    assert a.attention == c.attention


@pytest.mark.parametrize("name", CATALOG_SAME)
def test_kv_bytes_per_token_match_the_catalog(name: str) -> None:
    """``--config`` and ``-m`` give the same cache for the same model."""
    by_config = tokcost.estimate_memory(tokcost.KvRequest.of(config=FIXTURES / name, contexts=[8192]))
    by_id = tokcost.estimate_memory(tokcost.KvRequest.of(model=name, contexts=[8192]))
    assert by_config.bytes_per_token == by_id.bytes_per_token
    assert by_config.rows[0].paged_sequence_bytes == by_id.rows[0].paged_sequence_bytes


def test_llama_kv_anchor_from_config() -> None:
    """Llama-3.1-8B: 2 x 8 kv heads x 128 x 2 B x 32 layers = 131,072 B per token."""
    r = tokcost.estimate_memory(tokcost.KvRequest.of(
        config=FIXTURES / "llama-3.1-8b" / "config.json", contexts=[1024]))
    assert r.bytes_per_token == 131_072


def variant(name: str, text: bool = False, **changes: Any) -> dict[str, Any]:
    config = real(name)
    target = config["text_config"] if text else config
    for key, value in changes.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
    return config


def test_family_defaults_fill_absent_fields_only() -> None:
    """MistralConfig's sliding_window defaults to 4096 when the key is absent; Mistral-7B-v0.3
    writes "sliding_window": null, which means full attention."""
    assert arch(variant("mistral-7b-v0.1", sliding_window=None)).attention.window == 4096
    stated_null = variant("mistral-7b-v0.1")
    stated_null["sliding_window"] = None
    assert arch(stated_null).attention.type == "full"


def test_qwen_slides_from_max_window_layers_when_asked() -> None:
    """Qwen2Config: use_sliding_window true slides layers i >= max_window_layers."""
    a = arch(variant("qwen2.5-7b", use_sliding_window=True, max_window_layers=20,
                     sliding_window=4096))
    kinds = a.attention.layer_kinds(a.layers)
    assert kinds[:20] == ("full",) * 20 and kinds[20:] == ("sliding",) * 8
    assert a.attention.window == 4096


def test_explicit_layer_types_win() -> None:
    types = ["full_attention"] * 30 + ["sliding_attention"] * 32
    a = arch(variant("gemma-3-27b", text=True, layer_types=types))
    assert a.attention.layer_kinds(62) == ("full",) * 30 + ("sliding",) * 32


def test_nemotron_h_pattern_keeps_cache_layers() -> None:
    """hybrid_override_pattern: M is Mamba2, * attention; MLP (-) layers hold no cache.
    State: (4 - 1) x (128 x 64 + 2 x 8 x 128) + 128 x 64 x 128 = 30,720 + 1,048,576."""
    config = {"model_type": "nemotron_h", "num_hidden_layers": 6, "hidden_size": 4096,
              "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
              "hybrid_override_pattern": "M-M*-M", "mamba_num_heads": 128,
              "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4}
    a = arch(config)
    assert a.layers == 4
    assert a.attention.layer_kinds(4) == ("linear", "linear", "full", "linear")
    assert a.attention.linear_state_elements == 30_720 + 1_048_576
    # the SSM part (SGLang's float32 one) and the two MLP layers llama.cpp's n_layer counts
    assert a.attention.linear_ssm_elements == 1_048_576
    assert a.attention.cacheless_layers == 2


@pytest.mark.parametrize(("config", "fragment"), [
    ({"model_type": "llama", "num_attention_heads": 32, "hidden_size": 4096},
     "has no num_hidden_layers (the number of layers)"),
    ({"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096},
     "has no num_attention_heads"),
    ({"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32},
     "has no head_dim (the attention head size, or hidden_size)"),
    ({"model_type": "deepseek_v3", "num_hidden_layers": 61, "num_attention_heads": 128,
      "kv_lora_rank": 512}, "has no qk_rope_head_dim"),
    ({"model_type": "llama", "num_hidden_layers": "32", "num_attention_heads": 32,
      "hidden_size": 4096}, "num_hidden_layers is '32'; expected the number of layers"),
    ({"model_type": "llama", "num_hidden_layers": 10**9, "num_attention_heads": 32,
      "hidden_size": 4096}, "a whole number from 1 to 10,000"),
    # a hostile value is described, not echoed: 301 digits would flood the one line
    ({"model_type": "llama", "num_hidden_layers": 10**300, "num_attention_heads": 32,
      "hidden_size": 4096}, "num_hidden_layers is a 301-digit number; expected"),
    ({"model_type": "llama", "num_hidden_layers": "x" * 10**6, "num_attention_heads": 32,
      "hidden_size": 4096}, "num_hidden_layers is 'xxxxxxxx"),
    ({"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 32,
      "num_key_value_heads": 5, "hidden_size": 4096}, "not a multiple of num_key_value_heads 5"),
    ({"model_type": "x", "num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 64,
      "layer_types": ["full_attention", "chunked_attention"]},
     "layer_types holds 'chunked_attention'"),
    ({"model_type": "x", "num_hidden_layers": 3, "num_attention_heads": 4, "hidden_size": 64,
      "layer_types": ["full_attention"]}, "layer_types has 1 entries for 3 layers"),
    ({"model_type": "qwen3_next", "num_hidden_layers": 4, "num_attention_heads": 4,
      "hidden_size": 64}, "has linear layers but no state size"),
    ({"model_type": "falcon_h1", "num_hidden_layers": 4, "num_attention_heads": 4,
      "hidden_size": 64}, "has linear layers but no state size"),
    ({"model_type": "t5", "is_encoder_decoder": True, "num_layers": 6},
     "an encoder-decoder model"),
])
def test_a_missing_or_bad_field_is_named_in_one_line(config: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InputError) as info:
        architecture_from_config(config, where="x/config.json")
    message = str(info.value)
    assert fragment in message, message
    assert message.startswith("x/config.json") and "\n" not in message and len(message) < 300


@pytest.mark.parametrize(("dtype", "quant", "expected"), [
    ("bfloat16", None, "bf16"),
    ("float16", None, "fp16"),
    ("float32", None, "bf16"),  # served in 16 bits
    (None, None, "bf16"),  # no dtype: float32 to vLLM, served in 16 bits
    ("bfloat16", {"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
    (None, {"quant_method": "mxfp4"}, "mxfp4"),
    ("float16", {"quant_method": "gptq", "bits": 4}, "int4"),
    ("float16", {"quant_method": "awq", "bits": 4}, "int4"),
    ("bfloat16", {"quant_method": "compressed-tensors",
                  "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}, "fp8"),
    ("bfloat16", {"quant_method": "compressed-tensors",
                  "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}}, "int4"),
    ("bfloat16", {"quant_method": "bitsandbytes", "load_in_4bit": True}, "int4"),
])
def test_weights_dtype(dtype: str | None, quant: dict[str, Any] | None, expected: str) -> None:
    assert weights_dtype(dtype, quant) == expected


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda p: p / "missing", "does not exist; give a config.json or a model folder"),
    (lambda p: p, "has no config.json"),
    (lambda p: Path("/dev/zero"), "is not a regular file; give a config.json"),
])
def test_bad_paths_are_usage_errors(tmp_path: Path, make: Any, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        load_config(make(tmp_path))


@pytest.mark.parametrize(("text", "fragment"), [
    ("{not json", "is not JSON"),
    ("[1, 2]", "is not a JSON object"),
])
def test_a_config_that_is_not_a_json_object(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "config.json").write_text(text)
    with pytest.raises(InputError, match=fragment):
        load_config(tmp_path)


def test_a_huge_config_is_refused_after_reading_its_limit(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A stranger's config.json is read to limits.MAX_CONFIG_BYTES and no further."""
    from tokcost.catalog import hf_model
    monkeypatch.setattr(hf_model, "MAX_CONFIG_BYTES", 1 << 10)
    (tmp_path / "config.json").write_text('{"pad": "' + "x" * 2000 + '"}')
    with pytest.raises(InputError, match="is over 1 KiB, not a model's config.json"):
        load_config(tmp_path)


def test_folder_name_is_the_id(tmp_path: Path) -> None:
    folder = tmp_path / "My-Model"
    folder.mkdir()
    (folder / "config.json").write_text((FIXTURES / "qwen3-8b" / "config.json").read_text())
    loaded = load_config(folder)
    assert loaded.entry.id == "my-model"
    assert loaded.entry.family == "qwen3"
    # No shards: the weights follow from config.json (tests/test_hf_params.py), and say so.
    assert loaded.weights is not None and loaded.shards == 0
    assert loaded.weights.params == 8_190_735_360
    assert loaded.notes[0].startswith("weights from config.json (no safetensors headers")


def test_unknown_hybrid_override_letters_are_refused() -> None:
    """Nemotron-H's hybrid_override_pattern knows M, *, - and E (NemotronHConfig); another letter
    is a block tokcost cannot size, said in one line (it was read as a cache-free layer)."""
    config = {"model_type": "nemotron_h", "num_hidden_layers": 4, "hidden_size": 1024,
              "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
              "hybrid_override_pattern": "M*Q-", "mamba_num_heads": 16, "mamba_head_dim": 64,
              "ssm_state_size": 128, "n_groups": 8, "conv_kernel": 4}
    with pytest.raises(InputError, match="hybrid_override_pattern holds 'Q'"):
        arch(config)
