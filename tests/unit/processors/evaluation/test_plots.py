"""The report's figures: each is a PNG, base64-encoded for an inline ``data:`` URL."""

from __future__ import annotations

import base64
import binascii

from processors.evaluation.plots import (
    plot_distributions,
    plot_estimates_vs_truth,
    plot_label_recall,
    plot_proxy_vs_recall,
)
from processors.evaluation.report import summarise

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(data: str) -> bool:
    try:
        return base64.b64decode(data, validate=True).startswith(PNG)
    except binascii.Error:
        return False


ROWS = [{"lr": 100.0 * k / 9, "token_recall": k / 9, "alid": 10.0, "lr_gold": 50.0, "jsc": 90.0, "nsdcg": 80.0,
         "cire": 0.9, "medical_term_retention": 1.0, "number_retention": None} for k in range(10)]


def test_when_plots_are_drawn_then_each_is_a_base64_png() -> None:
    rep = {"per_label": {"NAME": {"gold_tokens": 4, "recall": 0.75, "entity_recall": 0.5},
                         "DATE": {"gold_tokens": 0, "recall": None, "entity_recall": None}},
           "per_label_ci95": {"NAME": {"recall": [0.5, 1.0], "entity_recall": None}}}
    assert _is_png(plot_label_recall(rep))
    assert _is_png(plot_distributions(ROWS))
    assert _is_png(plot_proxy_vs_recall(ROWS, {"pearson": 1.0, "spearman": None}))
    assert _is_png(plot_proxy_vs_recall([], {}))
    rows = [{**r, "number_retention": 1 - k / 20, "number_retention_true": 1 - k / 18, "word_retention": 0.99,
             "word_retention_true": 0.98, "risk_score": k / 10, "risk_expected": k / 5, "missed_entities": k % 3}
            for k, r in enumerate(ROWS)]
    assert _is_png(plot_estimates_vs_truth(rows, summarise(rows)))
