"""Tokenizer adapters: one module per family, one registry of lazy constructors."""

from tokcost.adapters.base import Tokenizer as Tokenizer
from tokcost.adapters.registry import get_tokenizer as get_tokenizer
from tokcost.adapters.registry import known_specs as known_specs
