"""README's configuration table names every setting (docs that match the code): each ``DEID_SECTION__FIELD``
either in full or as ``FIELD`` in a row of its section."""

from __future__ import annotations

import re

from paths import readme_section
from pydantic import BaseModel

from streams.settings import Settings


def _rows() -> list[str]:
    return [line for line in readme_section("## Configuration").splitlines() if line.startswith("| `DEID_")]


def _named(env: str, rows: list[str]) -> bool:
    section, _, field = env.rpartition("__")
    if any(f"`{env}`" in r or re.search(rf"`{re.escape(env)}` /", r) for r in rows):
        return True
    # a row of the section naming it short: "also `SSL_CAFILE`", "`DEID_TOPICS__RAW` / `__DEID`"
    return any(r.startswith(f"| `{section}__") and (f"`{field}`" in r or f"`__{field}`" in r) for r in rows)


def test_when_a_setting_exists_then_the_readme_table_names_it() -> None:
    rows = _rows()
    missing = []
    for name, field in Settings.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            if name == "pipeline":  # steps, profile, options, policy: each its own row or the step reference
                continue
            missing += [env for sub in ann.model_fields if not _named(env := f"DEID_{name.upper()}__{sub.upper()}",
                                                                        rows)]
        elif not _named(f"DEID_{name.upper()}", rows):
            missing.append(f"DEID_{name.upper()}")
    assert missing == []
