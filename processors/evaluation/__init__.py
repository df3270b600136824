"""Offline evaluation against gold (not a step): ``gold`` (label maps, gold notes), ``scoring`` (token and
entity scores), ``stats`` (bootstrap intervals, correlations), ``judges`` (the judge panel), ``report``
(report.json content and report.html) and ``plots`` (its figures; ``report`` extra)."""
