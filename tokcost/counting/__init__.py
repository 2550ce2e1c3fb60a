"""Counting tokens in texts, files, folders and streams, exactly and in bounded memory: the
cut rule, the input policy every command reads under (``Inputs``), the gitignore-aware walk."""

from tokcost.counting.cuts import CutRule as CutRule
from tokcost.counting.cuts import find_boundary as find_boundary
from tokcost.counting.cuts import find_boundary_forward as find_boundary_forward
from tokcost.counting.cuts import next_cut as next_cut
from tokcost.counting.inputs import SNIFF_BYTES as SNIFF_BYTES
from tokcost.counting.inputs import STDIN as STDIN
from tokcost.counting.inputs import STDIN_NAME as STDIN_NAME
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
from tokcost.counting.local import CountReport as CountReport
from tokcost.counting.local import FileCount as FileCount
from tokcost.counting.local import ProgressFn as ProgressFn
from tokcost.counting.local import count_paths as count_paths
from tokcost.counting.local import runner_for as runner_for
from tokcost.counting.stream import LineBlocks as LineBlocks
from tokcost.counting.stream import Reader as Reader
from tokcost.counting.stream import TextStream as TextStream
from tokcost.counting.stream import TrainingInputs as TrainingInputs
from tokcost.counting.stream import split_text as split_text
from tokcost.counting.walk import LeftOut as LeftOut
from tokcost.counting.walk import walk as walk
