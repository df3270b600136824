"""decide: one learned decision over every candidate span (issue 25).

The detectors aim at recall; recovery drops only certain medical terms. This step scores each remaining candidate
with a gradient-boosted model over its features (``features.FEATURES``: the detectors' sources and scores, the
span's shape and case, its words' vocabularies, the words around it, and the cues of the old rules,
``cues.RULES``), calibrated to the probability that the candidate holds an identifier, and keeps those at or
above the model's threshold (chosen by nested cross-validation by patient for recall first; the model card
says how). Dropped candidates go to ``note.dropped`` with that probability as their score, so the residual-risk
score (``processors.risk``) counts the expected identifiers among them.

Never dropped: candidates from a protected source (the message's own identifiers), with an identifier's shape,
repeating the message's identifiers, or from a detector the model was not trained on (an LLM's proposals are
add-only). Policy, not fitting: a candidate made only of weekday names is kept or dropped by ``weekdays``, one that is
only a US state or a country by ``states_countries``.

The model is chosen by the detectors the pipeline runs: ``models/decider`` with the NER step, ``models/
decider-no-ner`` without it (``model_dir`` overrides). The ensemble step after this one only merges overlaps.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from dictionaries.jargon import jargon_version
from dictionaries.medical import MedicalVocabulary, medical_vocabulary
from dictionaries.medical_syntax import clinical_measures
from processors.decide.cues import Cues
from processors.decide.features import SOURCES, Extractor
from processors.decide.model import DEFAULT_MODEL, NO_NER_MODEL, Decider, load
from processors.pipeline import BuildContext, Note, register
from schemas.models import Span

logger = logging.getLogger(__name__)


@register("decide")
class Decide:
    """Keep or drop each candidate span by the decision model (see the module docstring)."""

    name = "decide"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        #: a model folder (``deidstream train-decider`` writes one); None: the shipped model for the detectors run
        model_dir: str | None = None
        #: keep candidates at or above this calibrated probability; None: the model's own threshold
        threshold: float | None = Field(default=None, ge=0, le=1)
        protect_sources: list[str] = Field(default_factory=lambda: ["message"])
        protect_message_identifiers: bool = True
        #: policy: a weekday's name ("seen Monday") is removed. HIPAA Safe Harbor lists a date's elements (day,
        #: month), not weekdays, and the PhysioNet annotators left them; but general-English annotations
        #: (presidio_synth_v2) and our generator label them, and beside a shifted or surrogate date (surrogate,
        #: dateshift modes) a kept weekday tells the shift modulo 7. Recall first: removed by default (README,
        #: Quality: precision with and without)
        weekdays: bool = True
        #: policy: a place that is only a US state or a country ("lives in Texas") is removed. Safe Harbor requires
        #: only the places smaller than a state; general-English annotations (presidio_synth_v2) and MEDDOCAN label
        #: them, the PhysioNet annotators did not (README, Quality: precision with and without)
        states_countries: bool = True

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        default = DEFAULT_MODEL if (not ctx.steps or "ner" in ctx.steps) else NO_NER_MODEL
        self.model: Decider = load(Path(config.model_dir) if config.model_dir else default)
        # the step's option, else the detector profile's threshold (issue 26; None until fitted), else the model's
        profile_threshold = ctx.profile.decide_threshold if ctx.profile is not None else None
        self.threshold = next(t for t in (config.threshold, profile_threshold, self.model.threshold) if t is not None)
        self.vocab: MedicalVocabulary = medical_vocabulary(ctx.cache_dir)
        self.extractor = Extractor(
            Cues(ctx.cache_dir), self.vocab, frozenset(config.protect_sources), config.protect_message_identifiers,
            config.weekdays, frozenset(self.model.meta.get("sources", SOURCES)), config.states_countries)

    def dictionary_versions(self) -> dict[str, str]:
        return {"decider": self.model.model_id, "clinical_measures": clinical_measures().version,
                "clinical_words": jargon_version(), "medical": self.vocab.version}

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        parts = [self.extractor.split(n) for n in notes]
        rows = [r for _, _, rs in parts for r in rs]
        probs = self.model.probability(rows)
        out: list[Note] = []
        k = 0
        for note, (fixed, scored, _) in zip(notes, parts, strict=True):
            keep = set(fixed)
            dropped: list[Span] = []
            for i in scored:
                p = float(probs[k])
                k += 1
                if p >= self.threshold:
                    keep.add(i)
                else:
                    dropped.append(note.spans[i].model_copy(update={"score": round(p, 6)}))
            scored_set = set(scored)
            dropped += [s.model_copy(update={"score": 0.0}) for i, s in enumerate(note.spans)
                        if i not in keep and i not in scored_set]  # the policies' (weekdays, states_countries)
            if dropped:
                logger.debug("decide dropped %d of %d candidates", len(dropped), len(note.spans))
            out.append(note.replace(spans=tuple(s for i, s in enumerate(note.spans) if i in keep),
                                    dropped=note.dropped + tuple(dropped)))
        return out
