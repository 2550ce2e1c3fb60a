"""CI budgets: token, cost, context-window and growth limits on a repository's prompts.

>>> from tokcost.budget import load_config, measure, judge, read_baseline
>>> # config = load_config("tokcost.yaml"); m = measure(config)
>>> # result = judge(m, read_baseline(config.baseline)); print(result.render("markdown"))

Modules: ``config`` (tokcost.yaml / [tool.tokcost], discovery, ad-hoc budgets),
``baseline`` (JSON counts), ``evaluate`` (measure + judge), ``report`` (json, github,
markdown, junit, and the cells of the terminal table), ``many`` (several configs in
one run). The use cases that chain them are ``tokcost.check`` and ``tokcost.check_many``.
"""

from tokcost.budget.baseline import Baseline as Baseline
from tokcost.budget.baseline import BaselineError as BaselineError
from tokcost.budget.baseline import read_baseline as read_baseline
from tokcost.budget.baseline import write_baseline as write_baseline
from tokcost.budget.config import Budget as Budget
from tokcost.budget.config import BudgetConfig as BudgetConfig
from tokcost.budget.config import BudgetConfigError as BudgetConfigError
from tokcost.budget.config import find_config as find_config
from tokcost.budget.config import load_config as load_config
from tokcost.budget.evaluate import RULES as RULES
from tokcost.budget.evaluate import BudgetResult as BudgetResult
from tokcost.budget.evaluate import CheckResult as CheckResult
from tokcost.budget.evaluate import Finding as Finding
from tokcost.budget.evaluate import Measurement as Measurement
from tokcost.budget.evaluate import Notice as Notice
from tokcost.budget.evaluate import baseline_from as baseline_from
from tokcost.budget.evaluate import judge as judge
from tokcost.budget.evaluate import measure as measure
from tokcost.budget.many import CheckRun as CheckRun
from tokcost.budget.report import FORMATS as FORMATS
from tokcost.budget.report import ReportTables as ReportTables
from tokcost.budget.report import render as render
from tokcost.budget.report import render_json as render_json
from tokcost.budget.report import render_markdown as render_markdown
