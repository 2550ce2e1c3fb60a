"""The model catalog (models.yaml): typed entries, validation and lookup (DESIGN §4), with the
standard library only (pydantic and PyYAML load to validate a file, rarely: cached)."""

from pathlib import Path
from typing import TypeAlias

from tokcost.catalog.loader import CatalogInvalid as CatalogInvalid
from tokcost.catalog.loader import Problem as Problem
from tokcost.catalog.lookup import Catalog as Catalog
from tokcost.catalog.lookup import load_catalog as load_catalog
from tokcost.catalog.lookup import validate_file as validate_file
from tokcost.catalog.schema import Architecture as Architecture
from tokcost.catalog.schema import Attention as Attention
from tokcost.catalog.schema import ChatOverhead as ChatOverhead
from tokcost.catalog.schema import Gpu as Gpu
from tokcost.catalog.schema import ModelEntry as ModelEntry
from tokcost.catalog.schema import PriceTier as PriceTier
from tokcost.catalog.schema import Pricing as Pricing
from tokcost.errors import GpuNotFound as GpuNotFound

# A YAML path, a loaded Catalog, or None: $TOKCOST_CATALOG, else the shipped models.yaml.
CatalogSource: TypeAlias = "str | Path | Catalog | None"
