"""tokcost's own byte-level BPE (HF BpeTrainer's merges): train, encode, save, load, export."""

from tokcost.bpe.encode import Encoder
from tokcost.bpe.io import ExportFormat, check_writable, export_hf, export_tiktoken, load_any
from tokcost.bpe.io import load_model as load_model
from tokcost.bpe.io import render_token as render_token
from tokcost.bpe.io import save_model as save_model
from tokcost.bpe.io import vocab_path as vocab_path
from tokcost.bpe.model import BPEModel
from tokcost.bpe.pretokenize import PATTERNS, PatternName
from tokcost.bpe.train import DEFAULT_MAX_TOKEN_LENGTH, TrainerConfig, TrainResult, train
from tokcost.bpe.train import train_counted as train_counted
from tokcost.bpe.train import train_from_counts as train_from_counts
from tokcost.bpe.train import train_from_texts as train_from_texts

__all__ = ["DEFAULT_MAX_TOKEN_LENGTH", "PATTERNS", "BPEModel", "Encoder", "ExportFormat",
           "PatternName", "TrainResult", "TrainerConfig", "check_writable", "export_hf",
           "export_tiktoken", "load_any", "load_model", "render_token", "save_model", "train",
           "train_counted", "train_from_counts", "train_from_texts", "vocab_path"]
