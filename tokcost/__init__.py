"""tokcost: count tokens, price them, and size the KV cache that serves them.

This is the public API of tokcost; the CLI imports only what is re-exported here.
Heavy packages (numpy, tokenizers, sentencepiece, matplotlib, dask) are imported
inside the functions that need them, never at import time.
"""

from tokcost.adapters import Tokenizer as Tokenizer
from tokcost.adapters import get_tokenizer as get_tokenizer
from tokcost.errors import TokcostError as TokcostError

__version__ = "0.1.0"
