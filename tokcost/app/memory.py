"""``kvmem estimate``: the KV cache of one model, what fits on a GPU, and the decode rate."""

from __future__ import annotations

from dataclasses import replace

from tokcost.memory.estimate import KvResult
from tokcost.memory.request import KvRequest

__all__ = ["KvRequest", "estimate_memory"]


def estimate_memory(request: KvRequest) -> KvResult:
    """Size the KV cache of the request's model at each context, per GPU (and plot it)."""
    from tokcost import memory
    from tokcost.catalog.lookup import resolve_model
    from tokcost.plotting import check_plot_path
    from tokcost.tokenizers import open_catalog
    out, ref = request.output, request.model_ref
    check_plot_path(out.plot, force=out.force)  # before any work
    catalog = open_catalog(ref.catalog)
    gpu = request.budget.gpu
    gpu = catalog.resolve_gpu(gpu) if isinstance(gpu, str) else gpu  # before reading a model
    entry, loaded = resolve_model(ref.model, config=ref.config, catalog=catalog,
                                  needs_weights=request.needs_weights)
    result = memory.estimate_kv(entry, request, gpu)
    if out.plot is not None:
        from tokcost.plotting.memory import plot_memory
        plot_memory(result, out.plot)
    return replace(result, plot=out.plot, source_notes=loaded.notes if loaded else ())
