"""CI budgets: token, cost, context-window and growth limits on a repository's prompts;
``tokcost.check`` chains the modules (docs/check.md)."""

from tokcost.budget.baseline import Baseline, BaselineError, read_baseline, write_baseline
from tokcost.budget.config import Budget, BudgetConfig, BudgetConfigError, load_config
from tokcost.budget.evaluate import (
    RULES,
    BudgetResult,
    ConfigResult,
    Finding,
    Measurement,
    Notice,
    baseline_from,
    judge,
    measure,
)
from tokcost.budget.report import FORMATS, ReportTables, render

__all__ = ["FORMATS", "RULES", "Baseline", "BaselineError", "Budget", "BudgetConfig",
           "BudgetConfigError", "BudgetResult", "ConfigResult", "Finding", "Measurement", "Notice",
           "ReportTables", "baseline_from", "judge", "load_config", "measure",
           "read_baseline", "render", "write_baseline"]
