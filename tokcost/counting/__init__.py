"""Counting tokens in texts, files, folders and streams — exactly, in bounded memory.

Large inputs are read in blocks and cut only where a tokenizer's pre-tokenization
is known to start a new piece, so the sum of the chunk counts equals the count of
the whole text (a hypothesis test checks this). That cut rule is the one here:
the streaming reader applies it to decoded text, and ``next_cut`` to the bytes of
a file at any offset (for byte-range shards, ``tokcost.scale``). Folders are
walked respecting ``.gitignore`` (through pathspec), binary files are skipped
with the reason.
"""

from tokcost.counting.cuts import (
    SCAN_BYTES,
    CutRule,
    Specials,
    find_boundary,
    find_boundary_forward,
    next_cut,
)
from tokcost.counting.inputs import (
    BLOCK_BYTES,
    SNIFF_BYTES,
    STDIN,
    STDIN_NAME,
    ByteSource,
    FileScan,
    InputText,
    Skipped,
    Utf8Decoder,
    decode_utf8,
    input_warnings,
    invalid_utf8_note,
    load_input,
    read_input,
    scan_file,
    sniff_binary,
    sniff_source,
    stdin_size,
    stdin_source,
)
from tokcost.counting.local import (
    BATCH_CHARS,
    CountReport,
    Engine,
    FileCount,
    LocalEngine,
    ProgressFn,
    count_paths,
    refuse_urls,
)
from tokcost.counting.stream import (
    MAX_WHOLE_CHARS,
    LineBlocks,
    Reader,
    TextStream,
    count_text,
    count_texts,
    read_text,
    split_text,
)
from tokcost.counting.walk import (
    LeftOut,
    Source,
    walk,
)

__all__ = [
    "BATCH_CHARS",
    "BLOCK_BYTES",
    "MAX_WHOLE_CHARS",
    "SCAN_BYTES",
    "SNIFF_BYTES",
    "STDIN",
    "STDIN_NAME",
    "ByteSource",
    "CountReport",
    "CutRule",
    "Engine",
    "FileCount",
    "FileScan",
    "InputText",
    "LeftOut",
    "LineBlocks",
    "LocalEngine",
    "ProgressFn",
    "Reader",
    "Skipped",
    "Source",
    "Specials",
    "TextStream",
    "Utf8Decoder",
    "count_paths",
    "count_text",
    "count_texts",
    "decode_utf8",
    "find_boundary",
    "find_boundary_forward",
    "input_warnings",
    "invalid_utf8_note",
    "load_input",
    "next_cut",
    "read_input",
    "read_text",
    "refuse_urls",
    "scan_file",
    "sniff_binary",
    "sniff_source",
    "split_text",
    "stdin_size",
    "stdin_source",
    "walk",
]
