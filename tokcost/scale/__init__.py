"""Past one machine: counting and BPE pre-tokenization as map/reduce, on Dask or anything.

The map functions count or pre-tokenize texts or byte-range shards of files with
counting's and the BPE trainer's own readers; the reduce functions merge their
partial results in any order. They are pure, so Spark, Ray or a process pool can
run them as well as ``DaskEngine`` (``count_paths``, ``count_words``; pass it as
``engine=`` to ``tokcost.count_paths`` or ``tokcost.bpe.train``). Nothing here
imports dask until the engine runs.
"""

from tokcost.scale.engine import ClusterError as ClusterError
from tokcost.scale.engine import DaskEngine as DaskEngine
from tokcost.scale.engine import dask_client as dask_client
from tokcost.scale.mapreduce import FilePartial as FilePartial
from tokcost.scale.mapreduce import TextCounts as TextCounts
from tokcost.scale.mapreduce import WordCounts as WordCounts
from tokcost.scale.mapreduce import count_shard as count_shard
from tokcost.scale.mapreduce import count_texts_partial as count_texts_partial
from tokcost.scale.mapreduce import merge_counts as merge_counts
from tokcost.scale.mapreduce import merge_shard_counts as merge_shard_counts
from tokcost.scale.mapreduce import merge_word_counts as merge_word_counts
from tokcost.scale.mapreduce import pretokenize_shard as pretokenize_shard
from tokcost.scale.mapreduce import pretokenize_texts as pretokenize_texts
from tokcost.scale.shards import SHARD_BYTES as SHARD_BYTES
from tokcost.scale.shards import Piece as Piece
from tokcost.scale.shards import Shard as Shard
from tokcost.scale.shards import plan_shards as plan_shards
