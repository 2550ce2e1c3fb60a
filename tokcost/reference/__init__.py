"""The reference generation path: a small numpy transformer with a real KV cache.

It runs the word-chain loop for real (tokenize, predict, embed, attend over the
Key/Value notes kept in a cache, repeat) so the memory model in ``tokcost.memory``
can be checked against a cache that exists. It knows nothing about files of the
user or the CLI: the caller passes a config, weights and token ids.

Importing this package imports numpy, so ``import tokcost`` never imports it.
"""

from tokcost.reference.cache import BlockAllocator as BlockAllocator
from tokcost.reference.cache import BlockEvent as BlockEvent
from tokcost.reference.cache import ContiguousCache as ContiguousCache
from tokcost.reference.cache import KVCache as KVCache
from tokcost.reference.cache import PagedCache as PagedCache
from tokcost.reference.config import CacheMode as CacheMode
from tokcost.reference.config import RefConfig as RefConfig
from tokcost.reference.errors import ModelTooLarge as ModelTooLarge
from tokcost.reference.errors import PromptTooLong as PromptTooLong
from tokcost.reference.errors import WeightsMismatch as WeightsMismatch
from tokcost.reference.generate import GenerationResult as GenerationResult
from tokcost.reference.generate import Step as Step
from tokcost.reference.generate import StepCandidate as StepCandidate
from tokcost.reference.generate import generate as generate
from tokcost.reference.model import Transformer as Transformer
from tokcost.reference.sampling import Distribution as Distribution
from tokcost.reference.sampling import SamplingParams as SamplingParams
from tokcost.reference.sampling import distribution as distribution
from tokcost.reference.sampling import draw as draw
from tokcost.reference.weights import init_weights as init_weights
from tokcost.reference.weights import load_weights as load_weights
from tokcost.reference.weights import save_weights as save_weights
