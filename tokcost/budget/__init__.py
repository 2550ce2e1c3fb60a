"""CI budgets: token, cost, context-window and growth limits on a repository's prompts.

>>> from tokcost.budget import load_config, measure, judge, read_baseline
>>> # config = load_config("tokcost.yaml"); m = measure(config)
>>> # result = judge(m, read_baseline(config.baseline)); print(result.render("markdown"))

Modules: ``config`` (tokcost.yaml / [tool.tokcost], discovery, ad-hoc budgets),
``baseline`` (JSON counts), ``evaluate`` (measure + judge), ``crossing`` (the line a file
crosses its limit on), ``git_base`` (a git ref as the baseline), ``report`` (every format),
``pr_comment`` (the GitHub Action's comment). ``tokcost.check`` chains them.
"""

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

__all__ = [
    "FORMATS", "RULES", "Baseline", "BaselineError", "Budget", "BudgetConfig",
    "BudgetConfigError", "BudgetResult", "ConfigResult", "Finding", "Measurement", "Notice",
    "ReportTables", "baseline_from", "judge", "load_config", "measure",
    "read_baseline", "render", "write_baseline",
]
