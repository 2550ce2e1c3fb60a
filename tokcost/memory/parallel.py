"""How an engine splits a model over GPUs: tensor-parallel checks, pipeline stages.

Both follow vLLM, whose rules SGLang shares:

- tensor parallelism shards attention heads, so ``attention_heads % tp == 0``
  (``ModelConfig.verify_with_parallel_config`` in ``vllm/config/model.py``: "Total number of
  attention heads (32) must be divisible by tensor parallel size (3)"); kv heads are split
  when ``tp`` divides them and replicated when ``tp`` is a multiple of them
  (``QKVParallelLinear``), see ``tokcost.memory.kv.kv_heads_per_gpu``;
- pipeline parallelism gives each stage a contiguous run of layers, ``layers // pp`` each,
  the remainder spread one by one over the stages before the last, walking backwards
  (``get_pp_indices`` in ``vllm/distributed/utils.py``): 61 layers on 4 stages are
  ``[15, 15, 16, 15]``.
"""

from __future__ import annotations

from tokcost.errors import UsageError, arg

__all__ = ["check_attention_heads", "pp_stages"]


def check_attention_heads(attention_heads: int | None, tp: int) -> None:
    """Refuse a tensor-parallel size that does not divide the query heads, as vLLM does."""
    if attention_heads is not None and tp > 1 and attention_heads % tp:
        raise UsageError(
            f"{arg('tp', tp)} does not divide the model's {attention_heads} attention heads "
            f"(vLLM and SGLang shard heads across GPUs); use a divisor of {attention_heads}",
            param="tp",
        )


def pp_stages(layers: int, pp: int) -> tuple[range, ...]:
    """The layer indices each of ``pp`` pipeline stages holds, as vLLM assigns them.

    >>> [len(s) for s in pp_stages(61, 4)]
    [15, 15, 16, 15]
    >>> [len(s) for s in pp_stages(62, 4)]
    [15, 16, 16, 15]
    """
    if pp <= 0:
        raise UsageError(f"{arg('pp')} must be a positive integer, got {pp}", param="pp")
    if pp > layers:
        raise UsageError(
            f"{arg('pp', pp)} pipeline stages exceed the model's {layers} layers; use at most "
            f"{layers}",
            param="pp",
        )
    sizes = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        sizes[-i] += 1
    stages, start = [], 0
    for size in sizes:
        stages.append(range(start, start + size))
        start += size
    return tuple(stages)
