"""Per-note quality metrics: recall proxy, clinical information retention (DESIGN.md §5) and residual risk.

The ``metrics`` processor, which sets ``note.metrics`` to a ``schemas.NoteMetrics``, and the per-note assembly;
the formulas live in ``proxy.py`` (recall proxy), ``cir.py`` and ``retention.py`` (clinical information
retention) and ``risk.py`` (residual risk of missed identifiers, no gold; shared with the LLM step).

Recall proxy, after Pissarra et al. Entities are the identifiers KNOWN to be in the original: the
message's own identifiers found in it (the dictionary step's "message" spans, or a scan of the original
when that step did not run), institution-dictionary hits (final, or dropped by the ensemble; a dropped hit
on a medical term was judged medical and is left out), every final span (what the pipeline removed),
other whole-word occurrences of those values, and the leak check's findings; de-duplicated by offsets,
without Safe-Harbor-allowed states/countries, provider names the transform keeps, and initials (fewer
than ``min_entity_chars`` letters/digits: "L" matches any "l"). For an entity of length e,
``LSI = max_j LRa(entity, AN[j:j+e])`` with ``LRa(a, b) = 1 - LD(a, b) / max(|a|, |b|)`` (rapidfuzz
``Levenshtein.normalized_similarity``, case-insensitive by default), over the windows of the ALIGNED
SENTENCE of the output only (so "Tim" is not found again in "time" elsewhere in the note). Then
``ALID = (1 - mean LSI) * 100``, ``LR@t = 100 * share(LSI < t)``, ``LRDI@t = 100`` if every direct
identifier has LSI < t else 0, ``LRQI@t`` = LR@t over quasi-identifiers; None when there is nothing to
score. Sentences are aligned through the transform's replacements (or a character alignment of another
tool's output).

Clinical information retention:
- JSC@thb and NSDCG@K over a pluggable ``ClinicalClassifier`` (class -> logit). The default,
  ``ConceptClassifier``, needs no model: medical-dictionary matches become a weighted vector of ICD-10-CM
  categories and chapters, ICD-10-PCS operation groups and drug classes; its logits are the log weights
  (so the softmax is each class's share). ``ArrayClassifier`` wraps a real model (logits over a fixed
  class list, e.g. a BioBERT ICD-10 classifier). NSDCG uses the original's softmax probabilities as
  relevance (positive, monotone in the original logits); classes the de-identified note lost entirely
  (logit -inf) have relevance 0.
- Medical-term retention: share of the original's medical-dictionary terms (not the patient's own
  identifiers) that no change touched. Number and word retention (``retention.py``): every token the output
  changed is lost unless its span has identifier evidence of its own, so the pipeline's own over-redaction
  counts; what was removed for a reason is counted apart.
- CIRE, after Aghakasiri et al.: original and output word tokens are aligned with
  ``rapidfuzz.distance.Levenshtein.opcodes`` on the token lists (a global unit-cost alignment, the
  Needleman-Wunsch equivalent), the original is cut into ``chunk_tokens``-token chunks, and a changed
  chunk is clinically relevant when a changed token is a medical term, a clinical number, a negation or
  part of an age (deterministic judge), or when an optional ``ChunkJudge`` (an LLM) says so. CIRE is the
  share of chunks unchanged in clinical meaning.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from dictionaries.message import find_message_identifiers
from processors.metrics.cir import (
    ChunkJudge,
    ClinicalClassifier,
    ConceptClassifier,
    cire,
    jsc,
    nsdcg,
    output_matches,
    softmax,
    span_has,
    syntax_spans,
)
from processors.metrics.proxy import known_identifiers, leak_entities, recall_proxy, repeated_occurrences
from processors.metrics.retention import count_retention
from processors.pipeline import PIPELINE_VERSION, BuildContext, Note, register
from processors.risk import RISKY_SCORE, WordJudge, medical_matches, note_risk, recorded_ner_mass, word_judge
from processors.spans import Intervals, OffsetMap
from schemas.errors import ConfigError
from schemas.labels import Label, Subtype
from schemas.metrics import ClinicalRetention, LLMOutcome, NoteMetrics, RecallProxy, ResidualRisk
from schemas.models import Span, Versions

logger = logging.getLogger(__name__)


#: ages: "45-year-old", "3 months old", "45 yo", "45 y/o F", "age 45", "aged 45", "45M"
_AGE = re.compile(
    r"\b\d{1,3}(?:\.\d)?[\s-]*(?i:years?|yrs?|months?|mos?|weeks?|wks?|days?)[\s-]*(?i:old)\b"
    r"|\b\d{1,3}\s?(?i:y/?o|yo)(?:[MF]\b|\b)|\b(?i:age[sd]?|aged)\s*:?\s*\d{1,3}\b|\b\d{1,3}\s?[MF]\b"
)


@dataclass(frozen=True)
class MetricsOptions:
    """Options of ``compute_note_metrics`` (the processor's Config, resolved)."""

    threshold: float = 0.85
    sentences: bool = True
    ignore_case: bool = True
    min_chars: int = 2
    jsc_threshold: float = 0.05
    nsdcg_k: int = 10
    chunk_tokens: int = 20
    dropped_dictionary: bool = True
    repeats: bool = True
    leaks: bool = True
    redact_providers: bool = True
    common_word_zipf: float = 4.0
    risky_score: float = RISKY_SCORE


def compute_note_metrics(
    note: Note, *, vocab: Any, versions: Versions, options: MetricsOptions = MetricsOptions(),
    classifier: ClinicalClassifier | None = None, judge: ChunkJudge | None = None,
    message_spans: Sequence[Span] | None = None, words: WordJudge | None = None,
) -> NoteMetrics:
    """All metrics of one processed note. ``vocab`` is the medical vocabulary (``find``, ``chapter``,
    ``genes``); ``classifier`` defaults to the concept classifier over ``vocab``;
    ``message_spans``: the message's identifiers found in the original when the pipeline's spans may not
    hold them (``find_message_identifiers``); spans whose source includes "message" are used anyway;
    ``words``: the clinical-word / name-list judge of retention and risk (built from the default cache
    when None)."""
    text, output, o = note.text, note.output, options
    words_judge = words if words is not None else WordJudge(o.common_word_zipf)
    spans_by_label = Counter(str(s.label) for s in note.spans)
    spans_by_source = Counter(s.source for s in note.spans)
    dropped_by_source = Counter(s.source for s in note.dropped)
    stage_ms = {name: round(ms, 3) for name, ms in note.stage_ms}
    recall: RecallProxy | None = None
    retention: ClinicalRetention | None = None

    message = [s for s in (*note.spans, *note.dropped) if span_has(s, "message")] + list(message_spans or ())
    msg = Intervals((s.start, s.end) for s in message)
    found = vocab.find(text)  # the vocabulary's matches of the original, asked once for risk and retention
    matches = medical_matches(text, vocab, msg, note.spans, found=found)

    def syntax(t: str, a: int, b: int) -> Sequence[tuple[int, int, str]]:
        return cast(Sequence[tuple[int, int, str]], syntax_spans(vocab, t, a, b))

    r = note_risk(text, note.spans, medical=vocab, judge=words_judge, rejected=note.dropped, message=message,
                  ner_mass=recorded_ner_mass(note.extra), matches=matches, threshold=o.risky_score)
    risk = ResidualRisk(names=r.names, proper_nouns=r.proper_nouns, identifier_numbers=r.identifier_numbers,
                        rejected_mass=r.rejected_mass, ner_mass=r.ner_mass, kchars=r.kchars, detected=r.detected,
                        expected=r.expected,
                        score=r.score, risky=r.risky)
    if output is not None:
        offsets = OffsetMap.for_note(text, output, note.replacements)

        def kept_by_policy(s: Span) -> bool:
            return not o.redact_providers and s.label == Label.NAME and s.subtype == Subtype.PROVIDER

        medical = Intervals((m.start, m.end) for m in matches)
        # a dropped hit on a medical term was judged medical (recovery), not an identifier
        dropped = [s for s in note.dropped if o.dropped_dictionary and not medical.overlaps(s.start, s.end)]
        dictionary_hits = [s for s in (*note.spans, *dropped) if span_has(s, "dictionary")]
        entities = known_identifiers([*message, *dictionary_hits, *note.spans], exclude=kept_by_policy)
        if o.repeats:
            entities = [*entities, *repeated_occurrences(text, entities)]
        if o.leaks and note.leak_findings:
            entities = [*entities, *leak_entities(note, offsets, entities)]
        entities.sort(key=lambda e: (e.start, e.end))
        recall = recall_proxy(text, output, entities, offsets, threshold=o.threshold, sentences=o.sentences,
                              ignore_case=o.ignore_case, min_chars=o.min_chars)
        retention = _retention(note, output, offsets, vocab, msg, matches, o, classifier, judge, words=words_judge,
                               syntax=syntax, found=found)

    # what the llm step did (it records an LLMOutcome on the note; absent without that step)
    llm = note.extra.get("llm")
    if not isinstance(llm, LLMOutcome):
        llm = None
    return NoteMetrics(
        note_pseudonym=note.note_pseudonym, patient_pseudonym=note.patient_pseudonym, chars=len(text),
        spans=len(note.spans), dropped=len(note.dropped),
        spans_by_label=dict(sorted(spans_by_label.items())), spans_by_source=dict(sorted(spans_by_source.items())),
        dropped_by_source=dict(sorted(dropped_by_source.items())), leak=note.leak,
        leak_findings=len(note.leak_findings),
        leak_findings_by_label=dict(sorted(Counter(f.label for f in note.leak_findings).items())),
        recall=recall, retention=retention, risk=risk, llm=llm, stage_ms=stage_ms, total_ms=round(sum(stage_ms.values()), 3),
        versions=versions,
    )


def _retention(note: Note, output: str, offsets: OffsetMap, vocab: Any, message: Intervals,
               matches: Sequence[Any], o: MetricsOptions, classifier: ClinicalClassifier | None,
               judge: ChunkJudge | None, *, words: WordJudge,
               syntax: Any, found: Sequence[Any]) -> ClinicalRetention:
    text = note.text
    terms_kept = sum(1 for m in matches if not offsets.touched(m.start, m.end))
    # every term of the vocabulary, ambiguous ones included: a changed ambiguous term with no name cue is lost
    tokens = count_retention(text, offsets, note.spans, message, syntax=syntax, medical_terms=found,
                             judge=words)
    numbers = list(tokens.number_ranges)
    num, wrd = tokens.numbers, tokens.words

    ages = [m.span() for m in _AGE.finditer(text)] + [(s.start, s.end) for s in note.spans if s.label == Label.AGE]
    sensitive = [(m.start, m.end) for m in matches] + numbers + ages
    chunks = cire(text, output, sensitive=sensitive, chunk_tokens=o.chunk_tokens, judge=judge,
                  blocks=offsets.blocks)

    clf = classifier if classifier is not None else ConceptClassifier(vocab)
    if isinstance(clf, ConceptClassifier):
        lo = clf.logits_from_matches(matches)
        ld = clf.logits_from_matches(output_matches(output, offsets, matches, vocab))
    else:
        lo, ld = clf.logits([text, output])
    po, pd = softmax(lo), softmax(ld)
    return ClinicalRetention(
        classifier=clf.name, jsc_threshold=o.jsc_threshold, nsdcg_k=o.nsdcg_k,
        classes=sum(1 for p in po.values() if p > o.jsc_threshold),
        jsc=jsc(po, pd, o.jsc_threshold), nsdcg=nsdcg(lo, ld, o.nsdcg_k),
        medical_terms=len(matches), medical_terms_kept=terms_kept,
        medical_term_retention=terms_kept / len(matches) if matches else None,
        numbers=num.counted, numbers_kept=num.kept, numbers_lost=num.lost, numbers_lost_clinical=num.lost_clinical,
        numbers_removed=num.removed, number_retention=num.retention,
        words=wrd.counted, words_kept=wrd.kept, words_lost=wrd.lost, words_lost_clinical=wrd.lost_clinical,
        words_removed=wrd.removed, word_retention=wrd.retention,
        chunk_tokens=o.chunk_tokens, chunks=chunks.chunks, chunks_changed=chunks.changed,
        chunks_clinical=chunks.clinical, cire=chunks.cire, cire_judge=judge.name if judge is not None else "rules",
    )


def _load_plugin(spec: str, ctx: BuildContext) -> Any:
    """``package.module:factory`` -> ``factory(ctx)``."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"metrics plugin {spec!r}: expected 'package.module:factory'")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"metrics plugin {spec!r} cannot be loaded ({type(exc).__name__})") from None
    return factory(ctx)


@register("metrics")
class Metrics:
    """Set ``note.metrics`` (a ``schemas.NoteMetrics``): recall proxy + clinical information retention."""

    name = "metrics"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        #: t of LR@t, LRDI@t, LRQI@t
        threshold: float = Field(default=0.85, ge=0.0, le=1.0)
        #: search each entity only in its aligned output sentence (avoids "Tim" matching "time")
        sentence_window: bool = True
        ignore_case: bool = True
        #: known identifiers with fewer letters/digits are not scored (initials match any letter)
        min_entity_chars: int = Field(default=2, ge=1)
        #: thb of JSC@thb
        jsc_threshold: float = Field(default=0.05, ge=0.0, lt=1.0)
        nsdcg_k: int = Field(default=10, ge=1)
        chunk_tokens: int = Field(default=20, ge=1)
        #: dictionary hits that the ensemble rejected are known identifiers too (not those on medical terms)
        dropped_dictionary: bool = True
        #: other occurrences of a known identifier's value are known identifiers too
        repeats: bool = True
        #: the leak check's findings (identifiers still in the output) are known identifiers too
        leaks: bool = True
        #: scan the original for the message's identifiers: "auto" = only when the dictionary step did not
        message_scan: str = Field(default="auto", pattern="^(auto|always|never)$")
        #: "concepts" or "package.module:factory" (factory(ctx) -> ClinicalClassifier)
        classifier: str = "concepts"
        #: "rules" or "package.module:factory" (factory(ctx) -> ChunkJudge, e.g. an LLM judge)
        cire_judge: str = "rules"
        #: residual-risk score from which a note is flagged ``risky`` (the LLM step's gate)
        risky_score: float = Field(default=RISKY_SCORE, ge=0.0, le=1.0)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        from dictionaries.medical import medical_vocabulary

        self.config = config
        self.vocab = medical_vocabulary(ctx.cache_dir)
        # "auto": the dictionary step already matched the message's identifiers in the original (a
        # dictionary step configured with message=false needs message_scan="always" here)
        self.scan_message = config.message_scan == "always" or (config.message_scan == "auto"
                                                                and "dictionary" not in ctx.steps)
        self.options = MetricsOptions(
            threshold=config.threshold, sentences=config.sentence_window, ignore_case=config.ignore_case,
            min_chars=config.min_entity_chars,
            jsc_threshold=config.jsc_threshold, nsdcg_k=config.nsdcg_k, chunk_tokens=config.chunk_tokens,
            dropped_dictionary=config.dropped_dictionary, repeats=config.repeats, leaks=config.leaks,
            redact_providers=ctx.policy.redact_providers, common_word_zipf=ctx.policy.common_word_zipf,
            risky_score=config.risky_score,
        )
        self.words = word_judge(ctx.policy.common_word_zipf, ctx.cache_dir)
        self.classifier: ClinicalClassifier = ConceptClassifier(self.vocab)
        if config.classifier != "concepts":
            self.classifier = cast(ClinicalClassifier, _load_plugin(config.classifier, ctx))
        self.judge: ChunkJudge | None = None
        if config.cire_judge != "rules":
            self.judge = cast(ChunkJudge, _load_plugin(config.cire_judge, ctx))
        self._pipeline_versions = ctx.versions
        self._config_hash = ctx.config_hash
        self._versions: Versions | None = None

    def dictionary_versions(self) -> dict[str, str]:
        return {"medical": self.vocab.version}

    def versions(self) -> Versions:
        """The pipeline's versions (every step built), or this step's own outside a Pipeline."""
        if self._versions is None:
            if self._pipeline_versions is not None:
                self._versions = self._pipeline_versions()
            else:
                self._versions = Versions(pipeline=PIPELINE_VERSION, model=None,
                                          dictionaries=self.dictionary_versions(), config_hash=self._config_hash)
        return self._versions

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        versions = self.versions()
        out = []
        for n in notes:
            try:
                metrics = self.measure(n, versions)
            except Exception as exc:  # noqa: BLE001 - metrics inform; they must never send a clean note to the DLQ
                logger.warning("metrics: measuring a note failed (%s); counts only", type(exc).__name__)
                metrics = compute_note_metrics(n.replace(output=None), vocab=self.vocab, versions=versions,
                                               options=self.options, words=self.words)
            out.append(n.replace(metrics=metrics))
        return out

    def measure(self, note: Note, versions: Versions | None = None) -> NoteMetrics:
        message_spans: list[Span] = []
        inp = note.input
        if self.scan_message and (inp.patient is not None or inp.providers or inp.facility is not None):
            message_spans = find_message_identifiers(note.text, inp)
        return compute_note_metrics(note, vocab=self.vocab, versions=versions or self.versions(),
                                    options=self.options, classifier=self.classifier, judge=self.judge,
                                    message_spans=message_spans, words=self.words)
