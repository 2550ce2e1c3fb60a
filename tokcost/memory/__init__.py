"""KV-cache memory: formulas (kv), GPU fit the vLLM way (fit), estimates (estimate), and
the serving simulation: workload, block allocator (blocks), allocation policies
(policies), the loop (simulate) and its report.

Standard library and the catalog only; nothing here imports numpy or a tokenizer.
"""

from tokcost.memory.estimate import KvEstimate as KvEstimate
from tokcost.memory.estimate import estimate_kv as estimate_kv
from tokcost.memory.fit import GpuFit as GpuFit
from tokcost.memory.fit import gpu_fit as gpu_fit
from tokcost.memory.fit import largest_context as largest_context
from tokcost.memory.fit import max_concurrency as max_concurrency
from tokcost.memory.kv import KV_DTYPES as KV_DTYPES
from tokcost.memory.kv import ArchitectureIncomplete as ArchitectureIncomplete
from tokcost.memory.kv import KvDtype as KvDtype
from tokcost.memory.kv import KvDtypeName as KvDtypeName
from tokcost.memory.kv import KvLayout as KvLayout
from tokcost.memory.kv import kv_bytes_per_token as kv_bytes_per_token
from tokcost.memory.kv import kv_cache_bytes as kv_cache_bytes
from tokcost.memory.kv import kv_layout as kv_layout
from tokcost.memory.roofline import DecodeStep as DecodeStep
from tokcost.memory.roofline import decode_step as decode_step
from tokcost.memory.roofline import weights_bytes as weights_bytes
