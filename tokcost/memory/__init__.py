"""KV-cache memory: formulas (kv), GPU fit (fit), engines, estimate, roofline, and the serving
simulation (workload, blocks, policies, simulate). No numpy, no tokenizer."""

from tokcost.memory.estimate import KvResult as KvResult
from tokcost.memory.estimate import estimate_kv as estimate_kv
from tokcost.memory.kv import kv_bytes_per_token as kv_bytes_per_token
from tokcost.memory.kv import kv_cache_bytes as kv_cache_bytes
from tokcost.memory.kv import kv_layout as kv_layout
from tokcost.memory.request import KvRequest as KvRequest
