"""Test helpers: gold-like spans from (substring, label[, subtype]) items (transform and leakcheck tests), and
one span by offsets (metrics tests)."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.models import Span

Item = tuple[str, str] | tuple[str, str, str | None]


def spans_for(text: str, items: Sequence[Item]) -> tuple[Span, ...]:
    """A span per (substring, label[, subtype]): the first occurrence not taken by an earlier item."""
    out: list[Span] = []
    seen: dict[str, int] = {}
    for item in items:
        sub, label = item[0], item[1]
        subtype = item[2] if len(item) > 2 else None  # type: ignore[misc]
        start = text.index(sub, seen.get(sub, 0))
        free = start
        while free >= 0 and any(s.start < free + len(sub) and free < s.end for s in out):
            free = text.find(sub, free + 1)
        start = free if free >= 0 else start  # no free occurrence: overlap on purpose
        seen[sub] = start + 1
        out.append(Span(start=start, end=start + len(sub), label=label, subtype=subtype, source="message"))
    return tuple(out)


def make_span(start: int, end: int, label: str = "NAME", subtype: str | None = None, source: str = "regex") -> Span:
    """One span by offsets (the label and subtype as strings, validated by the model)."""
    return Span(start=start, end=end, label=label, subtype=subtype, source=source)  # type: ignore[arg-type]
