"""Engine profiles: how vLLM, SGLang and the ideal paged cache account for KV memory.

``vllm`` (the default) and ``sglang`` reproduce those engines' start-up arithmetic, read
from their source (cited in each module); ``ideal`` is the bytes truly held.
"""

from tokcost.memory.engines.base import ENGINES as ENGINES
from tokcost.memory.engines.base import EngineGroup as EngineGroup
from tokcost.memory.engines.base import EnginePlan as EnginePlan
from tokcost.memory.engines.base import EngineReport as EngineReport
from tokcost.memory.engines.ideal import IdealPlan as IdealPlan
from tokcost.memory.engines.sglang import SglangPlan as SglangPlan
from tokcost.memory.engines.sglang import default_mem_fraction_static as default_mem_fraction_static
from tokcost.memory.engines.sglang import plan_sglang as plan_sglang
from tokcost.memory.engines.vllm import VllmPlan as VllmPlan
from tokcost.memory.engines.vllm import (
    default_max_num_batched_tokens as default_max_num_batched_tokens,
)
from tokcost.memory.engines.vllm import plan_vllm as plan_vllm
