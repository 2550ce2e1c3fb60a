"""KV-cache memory: the formulas (kv), the GPU fit (fit), engine profiles (engines), one
estimate from a request (request, estimate), the roofline, and the serving simulation
(workload, blocks, policies, simulate).

Standard library and the catalog only; nothing here imports numpy or a tokenizer.
"""

from tokcost.memory.estimate import KvResult as KvResult
from tokcost.memory.estimate import estimate_kv as estimate_kv
from tokcost.memory.kv import kv_bytes_per_token as kv_bytes_per_token
from tokcost.memory.kv import kv_cache_bytes as kv_cache_bytes
from tokcost.memory.kv import kv_layout as kv_layout
from tokcost.memory.request import KvRequest as KvRequest
