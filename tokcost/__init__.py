"""tokcost: count tokens, price them, and size the KV cache that serves them.

This is the public API of tokcost; the CLI imports only what is re-exported here.
Heavy packages (numpy, tokenizers, sentencepiece, matplotlib, dask) are imported
inside the functions that need them, never at import time.
"""

from tokcost.adapters import Tokenizer as Tokenizer
from tokcost.adapters import get_tokenizer as get_tokenizer
from tokcost.catalog import load_catalog as load_catalog
from tokcost.errors import TokcostError as TokcostError
from tokcost.memory import estimate_kv as estimate_kv
from tokcost.memory import kv_bytes_per_token as kv_bytes_per_token
from tokcost.memory import kv_cache_bytes as kv_cache_bytes
from tokcost.memory.simulate import compare_policies as compare_policies
from tokcost.pricing import estimate_cost as estimate_cost

__version__ = "0.1.0"
