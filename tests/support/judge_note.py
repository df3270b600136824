"""Test data: the one-sentence gold note the judge-panel tests vote on (deterministic and LLM judges)."""

from __future__ import annotations

#       0         1         2         3         4
#       0123456789012345678901234567890123456789012
TEXT = "Pt John Smith seen 7/22/2019 at Mercy Clinic."
GOLD = [{"start": 3, "end": 13, "label": "NAME"}, {"start": 19, "end": 28, "label": "DATE"},
        {"start": 32, "end": 44, "label": "ORGANIZATION"}]
