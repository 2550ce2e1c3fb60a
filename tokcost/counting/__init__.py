"""Counting tokens in texts, files, folders and streams — exactly, in bounded memory.

Large inputs are read in blocks and cut only where a tokenizer's pre-tokenization is
known to start a new piece, so the chunk counts add up to the count of the whole text
(a hypothesis test checks this). That cut rule is the one here: the streaming reader
applies it to decoded text, and ``next_cut`` to the bytes of a file at any offset (the
byte-range shards of ``tokcost.scale``). Folders are walked respecting ``.gitignore``
(through pathspec); binary files are skipped with the reason. ``Inputs`` is the part of
a request that says what to read.
"""

from tokcost.counting.cuts import CutRule as CutRule
from tokcost.counting.cuts import Specials as Specials
from tokcost.counting.cuts import find_boundary as find_boundary
from tokcost.counting.cuts import find_boundary_forward as find_boundary_forward
from tokcost.counting.cuts import next_cut as next_cut
from tokcost.counting.inputs import BLOCK_BYTES as BLOCK_BYTES
from tokcost.counting.inputs import SNIFF_BYTES as SNIFF_BYTES
from tokcost.counting.inputs import STDIN as STDIN
from tokcost.counting.inputs import STDIN_NAME as STDIN_NAME
from tokcost.counting.inputs import ByteSource as ByteSource
from tokcost.counting.inputs import Inputs as Inputs
from tokcost.counting.inputs import InputText as InputText
from tokcost.counting.inputs import Skipped as Skipped
from tokcost.counting.inputs import Utf8Decoder as Utf8Decoder
from tokcost.counting.inputs import decode_utf8 as decode_utf8
from tokcost.counting.inputs import input_warnings as input_warnings
from tokcost.counting.inputs import invalid_utf8_note as invalid_utf8_note
from tokcost.counting.inputs import load_input as load_input
from tokcost.counting.inputs import read_input as read_input
from tokcost.counting.inputs import sniff_binary as sniff_binary
from tokcost.counting.inputs import sniff_source as sniff_source
from tokcost.counting.inputs import stdin_source as stdin_source
from tokcost.counting.local import CountReport as CountReport
from tokcost.counting.local import FileCount as FileCount
from tokcost.counting.local import count_paths as count_paths
from tokcost.counting.local import runner_for as runner_for
from tokcost.counting.progress import ProgressFn as ProgressFn
from tokcost.counting.stream import LineBlocks as LineBlocks
from tokcost.counting.stream import Reader as Reader
from tokcost.counting.stream import TextStream as TextStream
from tokcost.counting.stream import count_text as count_text
from tokcost.counting.stream import count_texts as count_texts
from tokcost.counting.stream import split_text as split_text
from tokcost.counting.training import TrainingInputs as TrainingInputs
from tokcost.counting.walk import LeftOut as LeftOut
from tokcost.counting.walk import Source as Source
from tokcost.counting.walk import walk as walk
