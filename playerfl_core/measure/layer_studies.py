"""Layer studies, the public names in one place (chapters import ``layer_studies as S``).

* :mod:`playerfl_core.measure.layer_measure`: the measurement driver (:func:`layer_analytics`, the
  settings and the long table's :data:`COLUMNS`);
* :mod:`playerfl_core.measure.split_studies`: the PLayer-FL split studies (split from models,
  batches, thresholds, published splits, cost);
* :mod:`playerfl_core.stats.seed_stats`: statistics over seeds (t-intervals, the one seeded
  bootstrap, Spearman trends).
"""

from playerfl_core.measure.layer_measure import (
    ANALYTICS_PROFILES,
    COLUMNS,
    METRICS,
    NO_OTHER,
    AnalyticsPlan,
    AnalyticsSettings,
    StageObserver,
    analytics_plan,
    cka_rows,
    first_epoch_models,
    layer_analytics,
    measure_model,
)
from playerfl_core.measure.split_studies import (
    MIN_TIMING_REPEATS,
    REFERENCE_SPLITS,
    batch_study,
    metric_cost,
    pruning_check,
    reference_agreement,
    server_splits,
    split_from_models,
    timed,
)
from playerfl_core.stats.seed_stats import (
    BOOTSTRAP_STATISTICS,
    adjacent_rises,
    bootstrap_interval,
    cka_matrix_from_table,
    depth_trend,
    metric_correlation,
    rises_by_stage,
    seed_summary,
    stage_agreement,
    t_interval,
)

__all__ = [
    "ANALYTICS_PROFILES",
    "AnalyticsPlan",
    "AnalyticsSettings",
    "BOOTSTRAP_STATISTICS",
    "COLUMNS",
    "METRICS",
    "MIN_TIMING_REPEATS",
    "NO_OTHER",
    "REFERENCE_SPLITS",
    "StageObserver",
    "adjacent_rises",
    "analytics_plan",
    "batch_study",
    "bootstrap_interval",
    "cka_matrix_from_table",
    "cka_rows",
    "depth_trend",
    "first_epoch_models",
    "layer_analytics",
    "measure_model",
    "metric_correlation",
    "metric_cost",
    "pruning_check",
    "reference_agreement",
    "rises_by_stage",
    "seed_summary",
    "server_splits",
    "split_from_models",
    "stage_agreement",
    "t_interval",
    "timed",
]
