"""The reference generation path: a numpy transformer running the word-chain loop with a real KV
cache, to check ``tokcost.memory`` against; it imports numpy, so ``import tokcost`` never does."""

from tokcost.reference.cache import BlockAllocator, BlockEvent, ContiguousCache, KVCache, PagedCache
from tokcost.reference.config import CacheMode, CacheSpec, ModelTooLarge, PromptTooLong, RefConfig
from tokcost.reference.config import WeightsMismatch as WeightsMismatch
from tokcost.reference.generate import GenerationResult, Step, StepCandidate, generate
from tokcost.reference.model import Transformer
from tokcost.reference.sampling import Distribution, SamplingParams, distribution, draw
from tokcost.reference.weights import init_weights, load_weights, save_weights

__all__ = ["BlockAllocator", "BlockEvent", "CacheMode", "CacheSpec", "ContiguousCache",
           "Distribution", "GenerationResult", "KVCache", "ModelTooLarge", "PagedCache",
           "PromptTooLong", "RefConfig", "SamplingParams", "Step", "StepCandidate", "Transformer",
           "WeightsMismatch", "distribution", "draw", "generate", "init_weights", "load_weights",
           "save_weights"]
