"""Past one machine: the Dask runner, and counting and BPE pre-tokenization as pure map/reduce
functions any runner can run (docs/scale-out.md); dask is imported when a runner starts."""

from tokcost.runner import Piece as Piece
from tokcost.runner import plan_shards as plan_shards
from tokcost.scale.cluster import ClusterError as ClusterError
from tokcost.scale.cluster import DaskRunner as DaskRunner
from tokcost.scale.cluster import dask_client as dask_client
from tokcost.scale.mapreduce import FilePartial as FilePartial
from tokcost.scale.mapreduce import TextCounts as TextCounts
from tokcost.scale.mapreduce import WordCounts as WordCounts
from tokcost.scale.mapreduce import count_paths as count_paths
from tokcost.scale.mapreduce import count_shard as count_shard
from tokcost.scale.mapreduce import count_texts_partial as count_texts_partial
from tokcost.scale.mapreduce import merge_counts as merge_counts
from tokcost.scale.mapreduce import merge_shard_counts as merge_shard_counts
from tokcost.scale.mapreduce import merge_word_counts as merge_word_counts
from tokcost.scale.mapreduce import pretokenize_shard as pretokenize_shard
from tokcost.scale.mapreduce import pretokenize_texts as pretokenize_texts
