"""dictionary step: (a) the identifiers the message itself carries (``dictionaries.message``, source
``"message"``) and (b) the institution / name / place lexicons (``processors.dictionary.lexicon``, source
``"dictionary"``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from dictionaries import jargon, vocab
from dictionaries.message import dedupe, find_message
from dictionaries.text import NoteText
from processors.dictionary.lexicon import LexKey, Scores, find_institution, institution_lexicon, lexicon
from processors.pipeline import BuildContext, Note, register
from schemas.models import NoteIn, Span

logger = logging.getLogger(__name__)


@register("dictionary")
class DictionaryDetector:
    """Message identifiers + institution lists (see module docstring)."""

    name = "dictionary"

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid")
        message: bool = True
        fuzzy: bool = True
        fuzzy_threshold: int = Field(default=88, ge=50, le=100)
        institution_dirs: list[str] = Field(default_factory=list)
        first_names: bool = True
        surnames: bool = True
        hospitals: bool = True
        cities: bool = True
        states: bool = True
        countries: bool = True
        name_patterns: bool = True
        #: in ALL-CAPS lines a single word is a name only below this Zipf value (or if name-like)
        caps_zipf: float = Field(default=3.5, ge=0, le=8)
        #: clinical words (``dictionaries.jargon``: jargon list, medical terms, clinical-text frequencies)
        #: are never a name or city on their own, only inside a name or address pattern
        clinical_filter: bool = True
        city_min_population: int = Field(default=1000, ge=0)
        scores: Scores = Field(default_factory=Scores)

    def __init__(self, config: Config, ctx: BuildContext) -> None:
        self.config = config
        #: the name rules (common-word Zipf cut, shortest name part) are the pipeline's shared policy: the
        #: leak check re-scans the output with the same rules
        self.common_word_zipf = ctx.policy.common_word_zipf
        self.min_name_len = ctx.policy.min_name_len
        vocab.load(ctx.cache_dir)
        self._key = LexKey(
            config.first_names, config.surnames, config.hospitals, config.cities, config.states,
            config.countries, self.common_word_zipf, config.caps_zipf, self.min_name_len,
            config.city_min_population, config.clinical_filter,
        )
        self._lexicons = [lexicon(self._key, ctx.cache_dir)]
        self._lexicons += [institution_lexicon(d, self.min_name_len) for d in config.institution_dirs]
        self._versions = {"vocab": vocab.vocab_version()}
        if config.clinical_filter:
            self._versions["clinical_words"] = jargon.jargon_version()
        for lex in self._lexicons[1:]:
            self._versions.update(lex.versions)
        # a lone list word in an ALL-CAPS line needs another detector's vote (``Scores.caps_name``); without
        # an NER step nothing else votes for a name, so it stands on its own as it did before
        ner_votes = not ctx.steps or "ner" in ctx.steps
        self.scores = config.scores if ner_votes else config.scores.model_copy(
            update={"caps_name": config.scores.caps_name_alone})

    def dictionary_versions(self) -> dict[str, str]:
        """The vocabularies and every institution dictionary this step loaded (for output headers)."""
        return dict(self._versions)

    def detect(self, note_in: NoteIn) -> list[Span]:
        """All candidate spans of one note."""
        c = self.config
        t = NoteText(note_in.text)
        spans: list[Span] = []
        if c.message:
            spans.extend(find_message(t, note_in, c.fuzzy, c.fuzzy_threshold, self.common_word_zipf,
                                      self.min_name_len))
        spans.extend(dedupe(find_institution(t, self._lexicons, self.scores, c.name_patterns, self.common_word_zipf)))
        return spans

    def process_batch(self, notes: Sequence[Note]) -> list[Note]:
        return [note.add_spans(self.detect(note.input)) for note in notes]
