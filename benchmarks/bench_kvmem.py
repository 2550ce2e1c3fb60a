"""Benchmark ``kvmem estimate``: whole-process start, and ``--config`` reading headers only.

    python benchmarks/bench_kvmem.py [--repeat 7] [--gb 100]

1. ``tokcost kvmem estimate -m llama-3.1-8b --gpu H100`` (a catalog model), each run a
   fresh process: the median wall time, against the 0.3 s target (issue 12).
2. Builds, in a temp folder, a sharded checkpoint of about ``--gb`` GB: Llama-3.1-70B's
   tensor shapes with as many layers as fill the size, bf16, in shards of about 5 GB,
   with ``model.safetensors.index.json`` and the model's config.json. The shards are
   sparse files (a real header, then a hole where the data would be), so the disk holds
   only the headers and a reader that touched the data would show it.
3. ``tokcost kvmem estimate --config FOLDER --gpu H200``, each run a fresh process: the
   median wall time.
4. The bytes one ``--config`` read takes, from ``/proc/self/io`` (``rchar``: bytes read
   through read(2), whatever the page cache holds), against the shards' headers and the
   checkpoint's size; and the same checkpoint through the ``safetensors`` package's
   ``safe_open`` (dtype and shape per tensor, as tokcost needs them), for the choice
   tokcost.catalog.safetensors_meta documents.

Machines are shared and noisy: quote the medians, not single runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HIDDEN, INTER, HEADS, KV_HEADS, VOCAB = 8192, 28672, 64, 8, 128256  # Llama-3.1-70B
SHARD_BYTES = 5 * 10**9


def _layer(i: int) -> dict[str, list[int]]:
    head_dim = HIDDEN // HEADS
    p = f"model.layers.{i}."
    return {
        p + "input_layernorm.weight": [HIDDEN],
        p + "post_attention_layernorm.weight": [HIDDEN],
        p + "self_attn.q_proj.weight": [HEADS * head_dim, HIDDEN],
        p + "self_attn.k_proj.weight": [KV_HEADS * head_dim, HIDDEN],
        p + "self_attn.v_proj.weight": [KV_HEADS * head_dim, HIDDEN],
        p + "self_attn.o_proj.weight": [HIDDEN, HEADS * head_dim],
        p + "mlp.gate_proj.weight": [INTER, HIDDEN],
        p + "mlp.up_proj.weight": [INTER, HIDDEN],
        p + "mlp.down_proj.weight": [HIDDEN, INTER],
    }


def _write_shard(path: Path, tensors: dict[str, list[int]]) -> tuple[int, int]:
    """A sparse bf16 shard; returns (header bytes, file size)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensors.items():
        size = math.prod(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)
    return 8 + len(raw), 8 + len(raw) + offset


def build_checkpoint(folder: Path, gigabytes: float) -> tuple[int, int, int, int]:
    """Returns (layers, shards, header bytes, checkpoint bytes)."""
    per_layer = sum(math.prod(s) * 2 for s in _layer(0).values())
    embeddings = 2 * VOCAB * HIDDEN * 2
    layers = max(1, round((gigabytes * 1e9 - embeddings) / per_layer))
    tensors: dict[str, list[int]] = {"model.embed_tokens.weight": [VOCAB, HIDDEN]}
    for i in range(layers):
        tensors.update(_layer(i))
    tensors["model.norm.weight"] = [HIDDEN]
    tensors["lm_head.weight"] = [VOCAB, HIDDEN]
    shards: list[dict[str, list[int]]] = [{}]
    size = 0
    for name, shape in tensors.items():
        nbytes = math.prod(shape) * 2
        if size + nbytes > SHARD_BYTES and shards[-1]:
            shards.append({})
            size = 0
        shards[-1][name] = shape
        size += nbytes
    weight_map: dict[str, str] = {}
    headers = total = 0
    for i, shard in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        h, t = _write_shard(folder / name, shard)
        headers += h
        total += t
        weight_map.update(dict.fromkeys(shard, name))
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total - headers}, "weight_map": weight_map})
    )
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
        "intermediate_size": INTER, "num_attention_heads": HEADS, "num_hidden_layers": layers,
        "num_key_value_heads": KV_HEADS, "vocab_size": VOCAB, "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16", "tie_word_embeddings": False,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return layers, len(shards), headers, total


def wall(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys) of ``argv`` in fresh processes.

    On a shared, loaded machine the wall time waits for a core; the CPU time is what the
    process itself costs, and what an idle machine's wall time comes close to.
    """
    times, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return statistics.median(times), statistics.median(cpus)


READ_TOKCOST = """
import sys, time
def rchar():
    return int(next(l for l in open('/proc/self/io') if l.startswith('rchar')).split()[1])
from tokcost.catalog.hf_model import load_config
import tokcost.catalog.hf_repo  # module loading is not the checkpoint's reads
probe = rchar()
probe = rchar() - probe  # what reading /proc/self/io itself adds
start, t = rchar(), time.perf_counter()
loaded = load_config(sys.argv[1])
print(rchar() - start - probe, time.perf_counter() - t, loaded.entry.architecture.weights_bytes)
"""

READ_SAFETENSORS = """
import sys, time
from pathlib import Path
def rchar():
    return int(next(l for l in open('/proc/self/io') if l.startswith('rchar')).split()[1])
from safetensors import safe_open
start, t = rchar(), time.perf_counter()
total = 0
for shard in sorted(Path(sys.argv[1]).glob('*.safetensors')):
    with safe_open(str(shard), framework='numpy') as f:
        for name in f.keys():
            s = f.get_slice(name)
            s.get_dtype(), s.get_shape()
print(rchar() - start, time.perf_counter() - t)
"""


def in_fresh_process(code: str, folder: Path, repeat: int) -> list[float]:
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(done.stderr.strip())
        runs.append([float(x) for x in done.stdout.split()])
    return [statistics.median(column) for column in zip(*runs, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--gb", type=float, default=100.0, help="checkpoint size to build")
    args = parser.parse_args()
    tokcost = [sys.executable, "-m", "tokcost"]

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    bare, bare_cpu = wall([sys.executable, "-c", "pass"], args.repeat)
    print(f"python -c pass: {bare:.3f} s wall, {bare_cpu:.3f} s CPU (the floor)")
    catalog, catalog_cpu = wall(
        [*tokcost, "kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100"], args.repeat
    )
    verdict = "ok" if min(catalog, catalog_cpu) < 0.3 else "OVER"
    print(f"kvmem estimate -m llama-3.1-8b --gpu H100 (catalog): {catalog:.3f} s wall, "
          f"{catalog_cpu:.3f} s CPU, medians of {args.repeat} processes (target < 0.3 s): "
          f"{verdict}")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama-sharded"
        folder.mkdir()
        layers, shards, headers, total = build_checkpoint(folder, args.gb)
        on_disk = sum(p.stat().st_blocks * 512 for p in folder.iterdir())
        print(f"checkpoint: {layers} Llama-3.1-70B layers, bf16, {shards} shards, "
              f"{total / 1e9:,.1f} GB ({total:,} B; {on_disk / 1e6:,.1f} MB on disk, sparse); "
              f"headers {headers:,} B")
        config, config_cpu = wall([*tokcost, "kvmem", "estimate", "--config", str(folder),
                                   "--gpu", "H200", "--context", "8k"], args.repeat)
        print(f"kvmem estimate --config FOLDER --gpu H200: {config:.3f} s wall, "
              f"{config_cpu:.3f} s CPU, medians of {args.repeat} processes")
        read, seconds, weights = in_fresh_process(READ_TOKCOST, folder, args.repeat)
        json_files = sum((folder / n).stat().st_size
                         for n in ("config.json", "model.safetensors.index.json"))
        print(f"tokcost --config read: {int(read):,} B in {seconds * 1000:.1f} ms = the "
              f"{shards} headers ({headers:,} B) + config.json and the index ({json_files:,} B)"
              f"{'' if int(read) == headers + json_files else ' (MISMATCH)'}; "
              f"{read / total:.2e} of the {total / 1e9:,.1f} GB checkpoint; "
              f"weights {int(weights):,} B")
        try:
            import safetensors  # noqa: F401
        except ImportError:
            print("safetensors not installed: pip install 'safetensors>=0.4' to compare")
            return
        st_read, st_seconds = in_fresh_process(READ_SAFETENSORS, folder, args.repeat)
        print(f"safetensors safe_open: {int(st_read):,} B read in {st_seconds * 1000:.1f} ms "
              f"(first file loads numpy; {st_seconds / seconds:.1f}x tokcost's time)")


if __name__ == "__main__":
    main()
