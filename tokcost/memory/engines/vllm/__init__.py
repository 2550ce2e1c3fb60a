"""vLLM v1's KV cache manager, reproduced (docs/kvmem.md) from vllm-project/vllm v0.11 on:
pages ``vllm/v1/kv_cache_interface.py``; groups, num_blocks, the start-up check and the log
``vllm/v1/core/kv_cache_utils.py``; block sizes ``vllm/platforms/cuda.py``,
``vllm/model_executor/models/config.py``; tokens per step ``vllm/engine/arg_utils.py``.

One module per concept: ``releases`` (what changed in each release, each rule with its PR),
``blocks`` (the block size), ``specs`` (each layer's spec and the groups), ``plan`` (the pool of
one stage and its log lines) and ``engine`` (the profile, ``--engine vllm@0.X``)."""


from tokcost.memory.engines.vllm.blocks import resolve_block_size
from tokcost.memory.engines.vllm.engine import Vllm, plan_vllm
from tokcost.memory.engines.vllm.plan import VllmPlan
from tokcost.memory.engines.vllm.releases import default_max_num_batched_tokens

__all__ = ["Vllm", "VllmPlan", "default_max_num_batched_tokens", "plan_vllm",
           "resolve_block_size"]
