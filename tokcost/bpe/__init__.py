"""tokcost's own byte-level BPE (HF BpeTrainer's merges): train, encode, save, load, export."""

from tokcost.bpe.encode import Encoder as Encoder
from tokcost.bpe.export import ExportFormat as ExportFormat
from tokcost.bpe.export import export_hf as export_hf
from tokcost.bpe.export import export_tiktoken as export_tiktoken
from tokcost.bpe.io import check_writable as check_writable
from tokcost.bpe.io import load_any as load_any
from tokcost.bpe.io import load_model as load_model
from tokcost.bpe.io import render_token as render_token
from tokcost.bpe.io import save_model as save_model
from tokcost.bpe.io import vocab_path as vocab_path
from tokcost.bpe.model import BPEModel as BPEModel
from tokcost.bpe.pretokenize import PATTERNS as PATTERNS
from tokcost.bpe.pretokenize import PatternName as PatternName
from tokcost.bpe.train import DEFAULT_MAX_TOKEN_LENGTH as DEFAULT_MAX_TOKEN_LENGTH
from tokcost.bpe.train import TrainerConfig as TrainerConfig
from tokcost.bpe.train import TrainResult as TrainResult
from tokcost.bpe.train import train as train
from tokcost.bpe.train import train_counted as train_counted
from tokcost.bpe.train import train_from_counts as train_from_counts
from tokcost.bpe.train import train_from_texts as train_from_texts
