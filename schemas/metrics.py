"""Per-note quality metrics (value of ``notes.metrics``; ``"metrics"`` in ``deidstream deid`` output).

Numbers, counts and labels only: never note text, identifiers or note ids (DESIGN.md §5, §8).
Percent metrics (ALID, LR, LRDI, LRQI, JSC, NSDCG) are on 0-100 as in Pissarra et al.; shares
(retention, CIRE, risk score) are on 0-1. ``None`` means undefined for this note (nothing to measure).

Version 2 (issue 14): number retention counts what the pipeline itself tagged (lost unless an identifier
cue of its own), word retention and the counts removed for a reason are new, and ``risk`` (residual risk of
missed identifiers, no gold) is published on every note. The recall proxy (``recall``) still measures only
the removal of identifiers the pipeline or the message knows about.

Version 3 (issue 11): ``llm``, what the optional LLM pass did with the note (ok / skipped / failed with a
reason code, the residual-risk score it gated on, counts); None when the pipeline has no ``llm`` step.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.models import Versions

_FROZEN = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)


class RecallProxy(BaseModel):
    """Recall without gold, over the identifiers KNOWN to be in the original (Pissarra et al.)."""

    model_config = _FROZEN

    threshold: float = Field(ge=0.0, le=1.0, description="t of LR@t: an entity counts as removed when LSI < t")
    known: int = Field(ge=0, description="known identifiers evaluated")
    skipped: int = Field(default=0, ge=0, description="known identifiers too short to score (initials)")
    direct: int = Field(ge=0, description="of which direct identifiers")
    quasi: int = Field(ge=0, description="of which quasi-identifiers")
    removed: int = Field(ge=0, description="known identifiers with LSI < t")
    verbatim: int = Field(ge=0, description="known identifiers still present verbatim in the aligned output")
    lsi_mean: float | None = Field(default=None, ge=0.0, le=1.0, description="mean LSI (0-1)")
    alid: float | None = Field(default=None, ge=0.0, le=100.0, description="(1 - mean LSI) * 100")
    lr: float | None = Field(default=None, ge=0.0, le=100.0, description="LR@t: 100 * share with LSI < t")
    lrdi: float | None = Field(default=None, ge=0.0, le=100.0,
                               description="LRDI@t: 100 if every direct identifier has LSI < t, else 0")
    lrqi: float | None = Field(default=None, ge=0.0, le=100.0, description="LR@t over quasi-identifiers")
    known_by_label: dict[str, int] = Field(default_factory=dict)
    removed_by_label: dict[str, int] = Field(default_factory=dict)


class ClinicalRetention(BaseModel):
    """Clinical information retention (CIR) between the original and the de-identified note."""

    model_config = _FROZEN

    classifier: str = Field(description="clinical classifier behind JSC / NSDCG")
    jsc_threshold: float = Field(ge=0.0, le=1.0)
    nsdcg_k: int = Field(ge=1)
    classes: int = Field(ge=0, description="classes with probability > jsc_threshold in the original")
    jsc: float | None = Field(default=None, ge=0.0, le=100.0, description="JSC@thb, 0-100")
    nsdcg: float | None = Field(default=None, ge=0.0, le=100.0, description="NSDCG@K, 0-100")
    medical_terms: int = Field(ge=0, description="medical-dictionary terms in the original")
    medical_terms_kept: int = Field(ge=0)
    medical_term_retention: float | None = Field(default=None, ge=0.0, le=1.0)
    numbers: int = Field(ge=0, description="number tokens counted: kept + lost (those removed for a reason "
                                           "excluded)")
    numbers_kept: int = Field(ge=0, description="number tokens no change of the output touched")
    numbers_lost: int = Field(default=0, ge=0, description="number tokens the output changed without an "
                                                           "identifier cue of their own: clinical content lost")
    numbers_lost_clinical: int = Field(default=0, ge=0, description="of which in clinical syntax (vitals, "
                                                                    "ventilator, labs, doses, ranges)")
    numbers_removed: int = Field(default=0, ge=0, description="number tokens changed for a reason: an "
                                                              "identifier cue or the message's own identifiers")
    number_retention: float | None = Field(default=None, ge=0.0, le=1.0, description="numbers_kept / numbers")
    words: int = Field(default=0, ge=0, description="word tokens counted: kept + lost")
    words_kept: int = Field(default=0, ge=0)
    words_lost: int = Field(default=0, ge=0, description="word tokens the output changed that are clinical "
                                                         "vocabulary or common words, without a name cue")
    words_lost_clinical: int = Field(default=0, ge=0, description="of which clinical vocabulary (jargon, "
                                                                  "medical terms, clinical-text words)")
    words_removed: int = Field(default=0, ge=0, description="word tokens changed for a reason: names, unknown "
                                                            "proper nouns, the message's own identifiers")
    word_retention: float | None = Field(default=None, ge=0.0, le=1.0, description="words_kept / words")
    chunk_tokens: int = Field(ge=1)
    chunks: int = Field(ge=0)
    chunks_changed: int = Field(ge=0)
    chunks_clinical: int = Field(ge=0, description="changed chunks judged clinically relevant")
    cire: float | None = Field(default=None, ge=0.0, le=1.0,
                               description="share of chunks unchanged in clinical meaning")
    cire_judge: str = Field(description="rules, or the name of the LLM judge")


class ResidualRisk(BaseModel):
    """No-gold estimate of the identifiers still in the output (``processors/risk.py``): signals
    found in the text no final span covers, their weighted sum and a 0-1 score."""

    model_config = _FROZEN

    names: int = Field(ge=0, description="uncovered name-list words no vocabulary explains")
    proper_nouns: int = Field(ge=0, description="uncovered capitalised words no vocabulary knows")
    identifier_numbers: int = Field(ge=0, description="uncovered numbers with an identifier cue (date, phone, "
                                                      "long digits, MRN/DOB cue, age > 89)")
    rejected_mass: float = Field(ge=0.0, description="scores of rejected candidates that are not medical")
    ner_mass: float = Field(ge=0.0, description="NER entity probability below its threshold, when recorded")
    kchars: float = Field(ge=0.0, description="note length, thousands of characters")
    detected: int = Field(ge=0, description="final spans (identifiers come in groups)")
    expected: float = Field(ge=0.0, description="expected missed identifiers (a Poisson model of the signals)")
    score: float = Field(ge=0.0, le=1.0, description="1 - exp(-expected): chance of at least one missed")
    risky: bool = Field(description="score >= the risky threshold (the LLM step's gate)")


class LLMOutcome(BaseModel):
    """What the optional LLM pass (step ``llm``) did with the note: a status, a reason code and counts, never text.

    ``failed``: at least one request failed after the client's retries; ``reason`` is the client's code
    (timeout, connection, server_error, rate_limited, auth, bad_request, refusal, malformed, truncated, empty,
    error) and the spans of the requests that succeeded are kept. ``skipped``: ``below_threshold`` (mode
    ``risky``, ``gate_score`` under ``risk_threshold``) or ``empty_note``."""

    model_config = _FROZEN

    status: Literal["ok", "skipped", "failed"]
    reason: str | None = Field(default=None, description="why skipped or failed: a code, never text")
    mode: Literal["always", "risky"]
    gate_score: float = Field(ge=0.0, le=1.0, description="residual-risk score of the candidates before the pass")
    risk_threshold: float = Field(ge=0.0, le=1.0, description="risky mode sends notes with gate_score >= this")
    windows: int = Field(default=0, ge=0, description="requests for this note (one per window of its text)")
    windows_failed: int = Field(default=0, ge=0, description="of them, without a valid answer")
    proposed: int = Field(default=0, ge=0, description="distinct identifier strings the model returned")
    located: int = Field(default=0, ge=0, description="of them, found in the original text")
    not_found: int = Field(default=0, ge=0, description="of them, not in the original text (dropped)")
    rejected: int = Field(default=0, ge=0, description="of them, dropped as too short or an age not over 89")
    spans: int = Field(default=0, ge=0, description="spans added (every occurrence of a located string)")
    ms: float = Field(default=0.0, ge=0.0, description="time in requests for this note (they run concurrently)")


class NoteMetrics(BaseModel):
    """Everything measured about one processed note; no text, no identifiers."""

    model_config = _FROZEN

    metrics_version: str = "3"
    note_pseudonym: str | None = None
    patient_pseudonym: str | None = None
    chars: int = Field(ge=0)
    spans: int = Field(ge=0)
    dropped: int = Field(ge=0)
    spans_by_label: dict[str, int] = Field(default_factory=dict)
    spans_by_source: dict[str, int] = Field(default_factory=dict)
    dropped_by_source: dict[str, int] = Field(default_factory=dict)
    leak: bool | None = None
    leak_findings: int = Field(default=0, ge=0)
    leak_findings_by_label: dict[str, int] = Field(default_factory=dict)
    recall: RecallProxy | None = None
    retention: ClinicalRetention | None = None
    risk: ResidualRisk | None = None
    llm: LLMOutcome | None = None
    stage_ms: dict[str, float] = Field(default_factory=dict, description="per-stage latency, ms per note")
    total_ms: float = Field(default=0.0, ge=0.0)
    versions: Versions
