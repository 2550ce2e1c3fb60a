"""How vLLM (and SGLang) split a model over GPUs (docs/kvmem.md): ``attention_heads % tp``
(``vllm/config/model.py`` verify_with_parallel_config), pipeline stages
(``vllm/distributed/utils.py`` get_pp_indices)."""

from __future__ import annotations

from tokcost.errors import UsageError, arg

__all__ = ["check_attention_heads", "pp_stages"]


def check_attention_heads(attention_heads: int | None, tp: int) -> None:
    """Refuse a tensor-parallel size that does not divide the query heads, as vLLM does."""
    if attention_heads is not None and tp > 1 and attention_heads % tp:
        raise UsageError(
            f"{arg('tp', tp)} does not divide the model's {attention_heads} attention heads (vLLM "
            f"and SGLang shard heads across GPUs); use a divisor of {attention_heads}", param="tp")


def pp_stages(layers: int, pp: int) -> tuple[range, ...]:
    """The layers of each of ``pp`` stages: ``layers // pp``, the rest one by one backwards
    over the stages before the last.

    >>> [len(s) for s in pp_stages(61, 4)]
    [15, 15, 16, 15]
    """
    if pp <= 0:
        raise UsageError(f"{arg('pp')} must be a positive integer, got {pp}", param="pp")
    if pp > layers:
        raise UsageError(f"{arg('pp', pp)} pipeline stages exceed the model's {layers} layers; "
                         f"use at most {layers}", param="pp")
    sizes = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        sizes[-i] += 1
    stages, start = [], 0
    for size in sizes:
        stages.append(range(start, start + size))
        start += size
    return tuple(stages)
