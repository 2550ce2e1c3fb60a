"""Counting tokens in texts, files, folders and streams, exactly and in bounded memory: the
cut rule, the input policy every command reads under (``Inputs``), the gitignore-aware walk."""

from tokcost.counting.cuts import CutRule, find_boundary, find_boundary_forward, next_cut
from tokcost.counting.inputs import (
    SNIFF_BYTES,
    STDIN,
    STDIN_NAME,
    UTF8,
    Inputs,
    InputText,
    Skipped,
    Utf8Decoder,
    decode_utf8,
    input_warnings,
    invalid_utf8_note,
    load_input,
    read_input,
    sniff_binary,
)
from tokcost.counting.local import CountReport, FileCount, ProgressFn, count_paths, runner_for
from tokcost.counting.stream import LineBlocks, Reader, TextStream, TrainingInputs, split_text
from tokcost.counting.walk import LeftOut, Visited, walk

__all__ = ["SNIFF_BYTES", "STDIN", "STDIN_NAME", "UTF8", "CountReport", "CutRule", "FileCount",
           "InputText", "Inputs", "LeftOut", "LineBlocks", "ProgressFn", "Reader", "Skipped",
           "TextStream", "TrainingInputs", "Utf8Decoder", "Visited", "count_paths", "decode_utf8",
           "find_boundary", "find_boundary_forward", "input_warnings", "invalid_utf8_note",
           "load_input", "next_cut", "read_input", "runner_for", "sniff_binary", "split_text",
           "walk"]
