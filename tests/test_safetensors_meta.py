"""Weights from safetensors headers (issue 12, item 2): exact bytes, never the tensor data.

Every checkpoint here is built in tmp_path by tests/safetensors_builder.py: real headers
with the real tensor names and shapes, and a hole where the data would be.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors_builder import (
    gpt_oss_tensors,
    llama_tensors,
    nbytes,
    split,
    write_checkpoint,
    write_shard,
)

import tokcost
from tokcost.catalog.hf_model import load_config
from tokcost.catalog.hf_weights import summarize
from tokcost.catalog.safetensors_meta import (
    DTYPE_BITS,
    TensorMeta,
    parse_header,
    read_checkpoint,
    read_header,
    shard_names,
)
from tokcost.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
GiB = 2**30


def model_folder(tmp_path: Path, name: str, shards: list[dict[str, tuple[str, list[int]]]],
                 config: dict[str, object] | None = None) -> Path:
    folder = tmp_path / name
    write_checkpoint(folder, shards)
    if config is None:
        shutil.copy(FIXTURES / name / "config.json", folder / "config.json")
    else:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_gpt_oss_120b_mixed_dtypes_exactly(tmp_path: Path) -> None:
    """openai/gpt-oss-120b, every tensor as its checkpoint has it (37 shards here).

    Per layer, bf16 (2 B an element): attention q 4096x2880 + k, v 512x2880 + o 2880x4096
    and biases, sinks 64, two norms 2880, router 128x2880 + 128; mxfp4 experts: U8 blocks
    128x5760x90x16 (gate_up) and 128x2880x90x16 (down) hold two values a byte, U8 scales
    128x5760x90 and 128x2880x90 (one per 32 values, not parameters), bf16 biases
    128x5760 and 128x2880. Embedding and unembedding 201088x2880 each, final norm 2880.

    Routed experts: 36 x (1,061,683,200 + 66,355,200 + 1,474,560 + 530,841,600 +
    33,177,600 + 737,280) = 60,993,699,840 B; everything: 65,248,815,744 B (60.77 GiB,
    the 60.8 GiB of the model card). Parameters: 116,829,156,672 (OpenAI's 116.83B);
    a token uses all but 124 of each layer's 128 experts:
    116,829,156,672 - 114,701,598,720 + 114,701,598,720 x 4 / 128 = 5,711,982,912.
    """
    folder = model_folder(tmp_path, "gpt-oss-120b", gpt_oss_tensors())
    loaded = load_config(folder)
    a = loaded.entry.architecture
    assert a is not None
    assert a.weights_bytes == 65_248_815_744
    assert a.expert_weights_bytes == 60_993_699_840
    assert (a.params_total, a.params_active) == (116_829_156_672, 5_711_982_912)
    assert (a.experts, a.experts_per_token, a.weights_dtype) == (128, 4, "mxfp4")
    assert a.is_moe
    assert loaded.shards == 37 and loaded.weights is not None and loaded.weights.tensors == 687


def test_deepseek_mtp_layer_is_left_out_and_fp8_scales_kept(tmp_path: Path) -> None:
    """DeepSeek-V3's real shapes with 2 layers (the config says num_hidden_layers 2), so
    ``model.layers.2`` is the multi-token-prediction layer vLLM skips for serving.

    Layer 1 is MoE: 4 routed experts of fp8 gate/up/down 2048x7168 (14,680,064 B each)
    with F32 block scales (16 x 56 x 4 = 3,584 B each), and one shared expert alike.
    Routed: 4 x 3 x (14,680,064 + 3,584) = 176,203,776 B.
    """
    config = json.loads((FIXTURES / "deepseek-v3" / "config.json").read_text())
    config.update(num_hidden_layers=2, n_routed_experts=4)

    def proj(prefix: str) -> dict[str, tuple[str, list[int]]]:
        t: dict[str, tuple[str, list[int]]] = {}
        for name, shape in (("gate_proj", [2048, 7168]), ("up_proj", [2048, 7168]),
                            ("down_proj", [7168, 2048])):
            t[f"{prefix}.{name}.weight"] = ("F8_E4M3", shape)
            t[f"{prefix}.{name}.weight_scale_inv"] = ("F32", [shape[0] // 128, shape[1] // 128])
        return t

    layer1: dict[str, tuple[str, list[int]]] = {"model.layers.1.mlp.gate.weight": ("BF16", [4, 7168])}
    for e in range(4):
        layer1.update(proj(f"model.layers.1.mlp.experts.{e}"))
    layer1.update(proj("model.layers.1.mlp.shared_experts"))
    mtp = {"model.layers.2.eh_proj.weight": ("BF16", [7168, 14336]),
           "model.layers.2.embed_tokens.weight": ("BF16", [129280, 7168])}
    shards = [{"model.embed_tokens.weight": ("BF16", [129280, 7168]),
               "lm_head.weight": ("BF16", [129280, 7168])},
              {**proj("model.layers.0.mlp"), **layer1}, mtp]
    folder = model_folder(tmp_path, "deepseek-v3", shards, config)
    loaded = load_config(folder)
    a = loaded.entry.architecture
    w = loaded.weights
    assert a is not None and w is not None
    everything = sum(nbytes(d, s) for shard in shards for d, s in shard.values())
    skipped = sum(nbytes(d, s) for d, s in mtp.values())
    assert w.skipped_tensors == 2 and w.skipped_bytes == skipped
    assert a.weights_bytes == everything - skipped
    assert a.expert_weights_bytes == 176_203_776
    # scales are bytes, not parameters: routed params are 4 x 3 x 2048 x 7168
    assert w.expert_params == 4 * 3 * 2048 * 7168
    assert a.weights_dtype == "fp8"
    assert any("speculative-decoding (MTP)" in n for n in loaded.notes)


def test_float32_checkpoint_counts_16_bits(tmp_path: Path) -> None:
    """Gemma-2-9B ships float32; vLLM serves it in bf16: 2 B a weight, not 4."""
    config = json.loads((FIXTURES / "gemma-2-9b" / "config.json").read_text())
    config.update(num_hidden_layers=2)
    tensors = llama_tensors(2, 3584, 14336, 16, 8, 256000, dtype="F32", tied=True)
    folder = model_folder(tmp_path, "gemma-2-9b", [tensors], config)
    loaded = load_config(folder)
    a = loaded.entry.architecture
    assert a is not None and loaded.weights is not None
    params = sum(nbytes("F32", s) // 4 for _, s in tensors.values())
    assert a.params_total == params and a.weights_bytes == 2 * params
    assert loaded.weights.cast_float32 and a.weights_dtype == "bf16"


def test_bf16_model_keeps_its_f32_tensors(tmp_path: Path) -> None:
    t = [TensorMeta("model.layers.0.mlp.gate.e_score_correction_bias", "F32", (256,), 1024)]
    assert summarize(t, layers=1, config_dtype="bfloat16").bytes == 1024
    assert summarize(t, layers=1, config_dtype="float32").bytes == 512


def test_shared_experts_are_not_routed() -> None:
    t = [TensorMeta("model.layers.0.mlp.shared_expert.up_proj.weight", "BF16", (8, 8), 128),
         TensorMeta("model.layers.0.mlp.shared_experts.up_proj.weight", "BF16", (8, 8), 128),
         TensorMeta("model.layers.0.block_sparse_moe.experts.3.w1.weight", "BF16", (8, 8), 128)]
    s = summarize(t, layers=1, config_dtype="bfloat16")
    assert (s.expert_bytes, s.expert_params, s.bytes) == (128, 64, 384)


def test_encoders_are_not_active_in_a_moe_model() -> None:
    """Llama-4's and Gemma-4's encoder tensors (as their checkpoints name them) run per image:
    a MoE model's active count leaves them out, as config.json's rule does."""
    t = [TensorMeta("vision_model.model.layers.0.mlp.fc1.weight", "BF16", (8, 8), 128),
         TensorMeta("multi_modal_projector.linear_1.weight", "BF16", (4, 8), 64),
         TensorMeta("model.embed_vision.embedding_projection.weight", "BF16", (2, 8), 32),
         TensorMeta("language_model.model.layers.0.feed_forward.experts.gate_up_proj", "BF16",
                    (4, 8, 8), 512),
         TensorMeta("language_model.model.layers.0.self_attn.q_proj.weight", "BF16", (8, 8), 128)]
    s = summarize(t, layers=1, config_dtype="bfloat16")
    assert (s.params, s.encoder_params, s.expert_params) == (64 + 32 + 16 + 256 + 64, 112, 256)
    # 4 experts, 1 a token: 432 - 112 encoder - 256 experts + 64 = 128 (the attention and one).
    assert s.active_params(4, 1) == 128
    assert s.active_params(None, None) == s.params  # dense: every parameter


def test_gptq_packed_weights_count_their_values() -> None:
    """A 4-bit GPTQ qweight packs 8 values per int32; scales and zeros are not weights."""
    t = [TensorMeta("model.layers.0.mlp.up_proj.qweight", "I32", (512, 4096), 8 * 2**20),
         TensorMeta("model.layers.0.mlp.up_proj.scales", "F16", (32, 4096), 262144),
         TensorMeta("model.layers.0.mlp.up_proj.qzeros", "I32", (32, 512), 65536)]
    s = summarize(t, layers=1, config_dtype="float16", quantization={"quant_method": "gptq",
                                                                     "bits": 4})
    assert s.params == 4096 * 4096 and s.bytes == 8 * 2**20 + 262144 + 65536


def test_kvmem_decode_reads_the_checkpoint_weights(tmp_path: Path) -> None:
    """--config on a folder: the GPU fit subtracts the headers' bytes exactly."""
    folder = model_folder(tmp_path, "gpt-oss-120b", gpt_oss_tensors())
    r = tokcost.estimate_memory(tokcost.KvRequest.of(config=folder, contexts=[8192], gpu="H100"))
    assert r.fit is not None and r.fit.weights_bytes == 65_248_815_744
    assert any("safetensors header" in n for n in r.source_notes)


def test_reads_only_the_headers(tmp_path: Path) -> None:
    """Two reads per shard, 8 + N bytes: counted at the file object, whatever the OS."""
    folder = tmp_path / "m"
    expected = write_checkpoint(folder, split(llama_tensors(2, 256, 512, 4, 2, 1000), 3))
    reads: list[int] = []
    import builtins

    real_open = builtins.open

    def counting_open(*args: object, **kwargs: object) -> object:
        f = real_open(*args, **kwargs)  # type: ignore[call-overload]
        if str(args[0]).endswith(".safetensors"):
            read = f.read

            class Counted:
                def __getattr__(self, name: str) -> object:
                    return getattr(f, name)

                def read(self, n: int = -1) -> bytes:
                    data: bytes = read(n)
                    reads.append(len(data))
                    return data

                def __enter__(self) -> Counted:
                    return self

                def __exit__(self, *exc: object) -> None:
                    f.close()

            return Counted()
        return f

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(builtins, "open", counting_open)
        checkpoint = read_checkpoint(folder, shard_names(folder) or ())
    assert checkpoint is not None and checkpoint.bytes_read == expected == sum(reads)
    assert len(reads) == 6


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20)
    .filter(lambda s: s != "__metadata__"),
    st.tuples(st.sampled_from(sorted(DTYPE_BITS)), st.lists(st.integers(0, 64), max_size=3)),
    max_size=8,
))
def test_header_round_trip(tmp_path_factory: pytest.TempPathFactory,
                           tensors: dict[str, tuple[str, list[int]]]) -> None:
    """Whatever a header holds, read_header gives back each tensor's dtype, shape and size."""
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    # F4/F6 need whole bytes, as safetensors itself requires
    tensors = {k: (d, s) for k, (d, s) in tensors.items()
               if (DTYPE_BITS[d] * (1 if not s else __import__("math").prod(s))) % 8 == 0}
    header_bytes = write_shard(path, tensors)
    found, read = read_header(path)
    assert read == header_bytes
    assert {t.name: (t.dtype, list(t.shape), t.nbytes) for t in found} == {
        k: (d, s, nbytes(d, s)) for k, (d, s) in tensors.items()
    }


def _raw(header: bytes, data: int = 0) -> bytes:
    return struct.pack("<Q", len(header)) + header + b"\0" * data


@pytest.mark.parametrize(("content", "fragment"), [
    (b"abc", "too short for a safetensors file"),
    (struct.pack("<Q", 10**12) + b"{}", "claims 1,000,000,000,000 bytes"),
    (_raw(b"{nope"), "header is not JSON"),
    (_raw(b"[1]"), "header is not a JSON object"),
    (_raw(b'{"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}', 4),
     "ends at byte 8, past the file's 4 data bytes"),
    (_raw(b'{"w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 6]}}', 6),
     "holds 6 bytes, not the 4 x BF16 its shape says"),
    (_raw(b'{"w": {"dtype": "BF16", "shape": [-1], "data_offsets": [0, 0]}}'),
     "has no valid shape"),
    (_raw(b'{"w": {"shape": [1], "data_offsets": [0, 2]}}', 2), "has no dtype"),
    (_raw(b'{"w": {"dtype": "BF16", "shape": [1], "data_offsets": [4, 2]}}', 4),
     "has no valid data_offsets"),
])
def test_damaged_headers_are_one_line(tmp_path: Path, content: bytes, fragment: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        read_header(path)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_unknown_dtypes_keep_their_bytes() -> None:
    raw = b'{"w": {"dtype": "F2_NEW", "shape": [8], "data_offsets": [0, 2]}}'
    assert parse_header(raw, "x").__getitem__(0).nbytes == 2


def test_missing_shard_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    write_checkpoint(folder, split(llama_tensors(1, 64, 128, 2, 1, 100), 3))
    (folder / "model-00002-of-00003.safetensors").unlink()
    with pytest.raises(InputError, match="shard model-00002-of-00003.safetensors of the "
                       "checkpoint is missing"):
        read_checkpoint(folder, shard_names(folder) or ())


def test_no_shards_at_all_means_no_weights(tmp_path: Path) -> None:
    """A folder with the index but none of its shards (the JSON files alone)."""
    folder = tmp_path / "m"
    write_checkpoint(folder, split(llama_tensors(1, 64, 128, 2, 1, 100), 2))
    for shard in folder.glob("*.safetensors"):
        shard.unlink()
    assert read_checkpoint(folder, shard_names(folder) or ()) is None


@pytest.mark.parametrize(("index", "fragment"), [
    ("{", "is not JSON"),
    ('{"weight_map": [1]}', "has no weight_map"),
    ('{"weight_map": {"w": "../x.safetensors"}}', "names a shard outside its folder"),
])
def test_bad_index(tmp_path: Path, index: str, fragment: str) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(index)
    with pytest.raises(InputError, match=fragment):
        shard_names(tmp_path)


def test_single_file_and_consolidated(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, [llama_tensors(1, 64, 128, 2, 1, 100)], index=False)
    (tmp_path / "consolidated.safetensors").write_bytes(b"")
    assert shard_names(tmp_path) == ("model.safetensors",)  # never both layouts
    (tmp_path / "model.safetensors").unlink()
    assert shard_names(tmp_path) == ("consolidated.safetensors",)
