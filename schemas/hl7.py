"""HL7 v2 input mapping: one MDM^T02 / ORU^R01 (or OML/ORM/ADT) message -> ``NoteIn``.

What is read (DESIGN.md §3: the message's own identifiers are the per-note dictionary):

- narrative: OBX-5 of value type TX or FT, OBX-5 of type ST when the value has a letter and is longer
  than 20 characters (shorter ST values are results such as "Negative"), and NTE-3. Repetitions and
  successive segments are joined in message order with "\\n" (a value's components joined as text: a coded
  value as its display text, others with ", "; ``readable_components``); empty lines inside the narrative are
  kept, empty lines before and after it are not. HL7 escapes are decoded (``\\F\\ \\S\\ \\T\\ \\R\\ \\E\\``,
  ``\\.br\\``, ``\\.sp\\``, ``\\Xhh\\`` ...); unknown escapes stay verbatim, so the text is otherwise exact.
- patient (PID, NK1): ids from PID-2/3/4/18/20, MRN = the PID-3 id typed MR (else the first), names
  from PID-5 and PID-9, birth date PID-7 as given, addresses PID-11, phones and emails PID-13/14,
  SSN PID-19 (else a PID-3 id typed SS); relatives from NK1 and PID-6 (mother's maiden name); administrative sex PID-8.
- providers: the XCN/NDL fields listed in ``PROVIDER_FIELDS`` (PV1, ORC, OBR, OBX, TXA).
- facility: MSH-4 sending facility, else PV1-3 location facility, else MSH-6.
- note id: TXA-12 document number, else MSH-10 control id, else the caller's ``note_id``.

Error codes (``HL7ParseError`` unless noted; messages name segments and fields, never content):

====  ============================================================================================
E101  bytes that are neither UTF-8 nor the charset declared in MSH-18 (``InputError``)
E201  not an HL7 v2 message (empty, binary, JSON, prose ...)
E202  segments but no MSH at the start, or an HL7 file without any message
E203  missing or unusable delimiters (MSH-1 / MSH-2: too short, repeated or alphanumeric characters)
E204  a required MSH field is empty (MSH-9 message type)
E205  the payload holds more than one message (split it with ``iter_hl7_file``)
E206  a field could not be read (control characters, or a failure of the ``hl7`` package or of the
      mapping while reading it)
E207  no note id: TXA-12 and MSH-10 are empty and the caller gave none
E208  the mapped note does not validate
E210  the message has no narrative (no TX/FT OBX, no long ST OBX, no NTE): nothing to de-identify
====  ============================================================================================

Structure (segments, fields, repetitions, components, sub-components, and the delimiters from
MSH-1/MSH-2) comes from the ``hl7`` package: ``hl7.parse`` builds the containers, and values are read
from them. Done here before it: bytes decoding (strict UTF-8, else MSH-18), MLLP framing, BOM, line
breaks normalised to ``\\r``, lines that continue an OBX-5 after a raw line break, FHS/BHS envelopes,
message splitting, and delimiter checks that ``hl7.parse`` does not make (it accepts repeated or
alphanumeric delimiters). Every exception of ``hl7.parse`` (segment MSH, whose MSH-1/MSH-2 drive it) or
of a field read (segment and field) becomes an ``HL7ParseError`` E206, raised outside the ``except`` block so the original
(whose text may quote content) is neither its cause nor its context.

Escapes are decoded by our own ``unescape``, not the package's: ``hl7.util.unescape`` (used by
``Message.unescape`` and ``Segment.extract_field``) logs the whole field at WARNING/ERROR when a sequence
is empty or unknown, which would put PHI in logs; it also turns ``\\.br\\`` into ``\\r`` and ``\\H\\`` into
``_``. So values are read from the containers directly and neither of those is called, nor
``hl7.split_file`` (it logs stray lines). ``hl7.parse`` itself does not log. As a second guard, the
package's loggers get a filter that blanks any record they emit (message, arguments, traceback).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import hl7
from pydantic import ValidationError

from schemas.errors import HL7ParseError, InputError, validation_summary
from schemas.models import Address, Facility, NoteIn, Patient, PersonName, Provider, Relative

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: (segment, field, data type, role). NDL fields carry the person as sub-components of component 1.
PROVIDER_FIELDS: tuple[tuple[str, int, str, str], ...] = (
    ("PV1", 7, "XCN", "attending"),
    ("PV1", 8, "XCN", "referring"),
    ("PV1", 9, "XCN", "consulting"),
    ("PV1", 17, "XCN", "admitting"),
    ("ORC", 10, "XCN", "entered by"),
    ("ORC", 11, "XCN", "verified by"),
    ("ORC", 12, "XCN", "ordering"),
    ("OBR", 16, "XCN", "ordering"),
    ("OBR", 28, "XCN", "result copies to"),
    ("OBR", 32, "NDL", "principal result interpreter"),
    ("OBR", 33, "NDL", "assistant result interpreter"),
    ("OBR", 34, "NDL", "technician"),
    ("OBR", 35, "NDL", "transcriptionist"),
    ("OBX", 16, "XCN", "responsible observer"),
    ("OBX", 25, "XCN", "performing medical director"),
    ("TXA", 5, "XCN", "primary activity provider"),
    ("TXA", 9, "XCN", "originator"),
    ("TXA", 10, "XCN", "assigned document authenticator"),
    ("TXA", 11, "XCN", "transcriptionist"),
    ("TXA", 22, "XCN", "authenticator"),
    ("TXA", 23, "XCN", "distributed copies"),
)

_PROVIDERS_BY_SEGMENT: dict[str, list[tuple[int, str, str]]] = {}
for _seg, _n, _dtype, _role in PROVIDER_FIELDS:
    _PROVIDERS_BY_SEGMENT.setdefault(_seg, []).append((_n, _dtype, _role))

#: OBX-2 value types whose OBX-5 is narrative as such; ST only under ``_is_narrative_st``.
NARRATIVE_TYPES = frozenset({"TX", "FT"})
ST_MIN_LENGTH = 20

#: HL7 table 0211 (MSH-18) values we can decode, with a few common non-table spellings.
CHARSETS: dict[str, str] = {
    "ASCII": "ascii", "ISO IR6": "ascii", "US-ASCII": "ascii",
    "8859/1": "latin-1", "ISO IR100": "latin-1", "ISO-8859-1": "latin-1",
    "8859/2": "iso8859-2", "8859/3": "iso8859-3", "8859/4": "iso8859-4", "8859/5": "iso8859-5",
    "8859/6": "iso8859-6", "8859/7": "iso8859-7", "8859/8": "iso8859-8", "8859/9": "iso8859-9",
    "8859/15": "iso8859-15",
    "UNICODE UTF-8": "utf-8", "UTF-8": "utf-8",
    "WINDOWS-1252": "cp1252", "CP1252": "cp1252",
    "BIG-5": "big5", "GB 18030-2000": "gb18030", "KS X 1001": "euc_kr", "ISO IR87": "iso2022_jp",
}

_ENVELOPE = frozenset({"FHS", "BHS", "BTS", "FTS"})
_HEADERS = ("MSH", "FHS", "BHS")
_SEGMENT_NAME = re.compile(r"[A-Z][A-Z0-9]{2}")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LETTER = re.compile(r"[^\W\d_]")
_EDGE_CHARS = "\ufeff\x0b\x1c \t\r\n"
_MESSAGE_TYPE = re.compile(r"[A-Z0-9]{3}(\^[A-Z0-9]{3})?")


@dataclass(frozen=True, slots=True)
class Delimiters:
    """MSH-1 and MSH-2 of a message."""

    field: str = "|"
    component: str = "^"
    repetition: str = "~"
    escape: str = "\\"
    subcomponent: str = "&"


Component = list[str]  # sub-components
Repetition = list[Component]


def _name_of(seg: hl7.Segment) -> str:
    """The segment id (field 0 of an ``hl7.Segment``)."""
    return str(seg[0][0])


def _field(seg: hl7.Segment, n: int) -> hl7.Field | None:
    """Field n of a segment (MSH too: ``hl7.parse`` makes MSH-1 field 1), None when absent or empty."""
    if n >= len(seg):
        return None
    field = seg[n]
    return None if len(field) == 1 and field[0] == "" else field


class _Reader:
    """Values out of the ``hl7`` containers, with escapes decoded by our ``unescape``.

    A ``hl7.Field`` holds strings (a repetition without components) or ``hl7.Repetition``; a repetition
    holds strings or ``hl7.Component``; a component holds sub-component strings."""

    def __init__(self, delims: Delimiters, charset: str) -> None:
        self.d = delims
        self.charset = charset

    def reps(self, seg: hl7.Segment, n: int) -> list[Repetition]:
        field = _field(seg, n)
        if field is None:
            return []
        text = self.text
        return [
            [[text(rep)]] if isinstance(rep, str)
            else [[text(comp)] if isinstance(comp, str) else [text(s) for s in comp] for comp in rep]
            for rep in field
        ]

    def narrative(self, seg: hl7.Segment, n: int) -> list[str]:
        """Each repetition as readable text (``readable_components``); a literal ``^`` in prose is escaped
        (``\\S\\``) by the sender and comes out as ``^``."""
        field = _field(seg, n)
        if field is None:
            return []
        out = []
        for rep in field:
            if isinstance(rep, str):
                out.append(self.text(rep))
                continue
            comps = [self.text(c) if isinstance(c, str) else " ".join(t for s in c if (t := self.text(s)).strip())
                     for c in rep]
            out.append(readable_components(comps))
        return out

    def text(self, value: str) -> str:
        return unescape(value, self.d, self.charset) if self.d.escape in value else value


#: A coding system in the third component of a coded element (CWE / CE: code^text^system): LN (LOINC), SCT, L,
#: UCUM, HL70136, 99TNH (local), I10 ...
_CODING_SYSTEM = re.compile(r"[A-Z][A-Z0-9-]{0,11}|99[A-Z0-9]{1,10}")
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-_]{0,31}")
#: Coding systems whose codes may have no digit (HL7 table 0396); a local system starts with "99"
_CODE_SYSTEMS = frozenset({"LN", "SCT", "SNM", "SNM3", "I10", "I10C", "I9", "I9C", "I9CM", "CPT", "UCUM", "NDC",
                           "RXNORM", "HL70078", "HL70136", "HL70189", "HL70396", "CDCREC", "NCI", "L"})


def _is_coded(parts: list[str]) -> bool:
    """code^text^system (CWE / CE): a code without blanks, a display text, a coding system; the code has a digit
    or the system is a known or local one, so "SMITH^JOHN^A" (a name) is not read as a code."""
    if len(parts) < 3 or not parts[1] or not _CODE.fullmatch(parts[0]) or not _CODING_SYSTEM.fullmatch(parts[2]):
        return False
    return any(c.isdigit() for c in parts[0]) or parts[2].startswith("99") or parts[2] in _CODE_SYSTEMS


def readable_components(comps: list[str]) -> str:
    """A field repetition's components as text a reader (and the detectors) can read: a coded element
    (``LA25402-1^Heel Stick^LN``, CWE/CE) becomes its display text ("Heel Stick"), as HL7 viewers show it (the code
    stays in the message; in the narrative a bare code next to the following line read as part of an address);
    other components are joined with ", " without the empty ones ("5901 Lakeside Ave^^Richmond^CA^94804" ->
    "5901 Lakeside Ave, Richmond, CA, 94804"; "BATES^JOHN" -> "BATES, JOHN"), so a ZIP is read as a ZIP."""
    parts = [c.strip() for c in comps]
    if _is_coded(parts):
        return parts[1]
    kept = [p for p in parts if p]
    return ", ".join(kept) if len(kept) > 1 else (kept[0] if kept else "")


def _guard(segment: str, field: int | None, read: Callable[[], T], what: str = "malformed field") -> T:
    """Run ``read``; turn any failure into E206 naming the segment and field, with no chained cause."""
    try:
        return read()
    except HL7ParseError:
        raise
    except Exception as exc:  # any failure of the hl7 package or of a field read is a malformed field
        failure = type(exc).__name__
    # Raised outside the except block, so the original exception (whose text may hold content) is
    # neither the cause nor the context of the error we raise.
    raise HL7ParseError(f"{what} ({failure})", segment=segment, field=field, code="E206")


class _BlankRecord(logging.Filter):
    """Blanks a log record of the ``hl7`` package: its messages quote whole fields (PHI)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = "hl7 package log record withheld (it may quote message content)"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


def _guard_hl7_loggers() -> None:
    """Attach ``_BlankRecord`` to the package's module loggers (named after their file paths). This is
    process-wide on purpose: any other caller of the package's ``unescape`` is covered too."""
    for module in (hl7.util, hl7.containers):
        lg = getattr(module, "logger", None)
        if isinstance(lg, logging.Logger) and not any(isinstance(f, _BlankRecord) for f in lg.filters):
            lg.addFilter(_BlankRecord())


_guard_hl7_loggers()


# --- escapes -------------------------------------------------------------------------------------------


@functools.cache
def _escape_pattern(esc: str) -> re.Pattern[str]:
    e = re.escape(esc)
    return re.compile(e + r"([^" + e + r"\r\n]{1,64})" + e)


def _count(arg: str, default: int = 1) -> int:
    arg = arg.strip().lstrip("+")
    return int(arg) if arg.isdigit() else default


def unescape(value: str, delims: Delimiters = Delimiters(), charset: str = "utf-8") -> str:
    """Decode HL7 escape sequences (v2.x §2.7). Formatting commands become newlines / spaces;
    unknown or malformed sequences are kept verbatim so no text is lost."""
    d = delims

    def sub(m: re.Match[str]) -> str:
        seq = m.group(1)
        simple = {"F": d.field, "S": d.component, "T": d.subcomponent, "R": d.repetition, "E": d.escape,
                  "H": "", "N": ""}
        if seq in simple:
            return simple[seq]
        head, arg = seq[:3], seq[3:]
        if head == ".br":
            return "\n" if not arg else m.group(0)
        if head == ".sp":
            return "\n" * _count(arg)
        if head in (".fi", ".nf"):
            return ""
        if head == ".ce":
            return "\n"
        if head == ".sk":
            return " " * _count(arg)
        if head in (".in", ".ti"):
            return " " * _count(arg, default=0)
        if seq[0] == "X" and len(seq) % 2 == 1 and len(seq) > 1:
            try:
                data = bytes.fromhex(seq[1:])
            except ValueError:
                return m.group(0)
            try:
                return data.decode(charset)
            except (UnicodeDecodeError, LookupError):
                return data.decode("latin-1")  # one character per byte, as the hl7 package does
        if seq[0] in "CM" and all(c in "0123456789ABCDEFabcdef" for c in seq[1:]):
            return ""  # character-set switch: no text of its own
        return m.group(0)

    return _escape_pattern(d.escape).sub(sub, value)


# --- bytes, framing, file splitting --------------------------------------------------------------------


def _unframe(text: str) -> str:
    """Drop MLLP start/end block characters (never data) wherever they are."""
    if "\x0b" in text or "\x1c" in text:
        text = text.replace("\x0b", "").replace("\x1c", "")
    return text


def _declared_charset(payload: bytes) -> str | None:
    """The Python codec for MSH-18 of the first message in ``payload``, if it is one we know."""
    head = payload.lstrip(b"\xef\xbb\xbf\x0b \t\r\n")
    if not head.startswith(b"MSH") or len(head) < 8:
        return None
    line = re.split(rb"[\r\n]", head, maxsplit=1)[0].decode("latin-1")  # ASCII-safe peek
    parts = line.split(line[3])
    if len(parts) < 18 or len(parts[1]) < 2:
        return None
    value = parts[17].split(parts[1][1])[0].split(parts[1][0])[0].strip().upper()
    return CHARSETS.get(value)


def decode_payload(payload: bytes) -> str:
    """UTF-8 (strict), else the MSH-18 charset if declared and known, else ``InputError`` E101."""
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = exc.start
    codec = _declared_charset(payload)
    if codec is not None and codec != "utf-8":
        try:
            return payload.decode(codec)
        except UnicodeDecodeError:
            pass
    raise InputError(f"input is not valid UTF-8 nor the MSH-18 charset (byte {where})", code="E101")


def looks_like_hl7(payload: str | bytes) -> bool:
    """True when the payload starts with an MSH (or FHS/BHS envelope) segment, after an optional BOM,
    whitespace and MLLP start block."""
    head = payload[:64]
    text = head.decode("latin-1") if isinstance(head, bytes) else head
    text = text.removeprefix("\xef\xbb\xbf").lstrip(_EDGE_CHARS)
    return len(text) > 3 and text[:3] in _HEADERS and not text[3].isalnum() and not text[3].isspace()


def _is_segment_start(line: str) -> bool:
    """``XYZ`` followed by a delimiter (or nothing): a segment, not a continuation line of prose."""
    if len(line) < 3 or not _SEGMENT_NAME.match(line):
        return False
    return len(line) == 3 or (not line[3].isalnum() and not line[3].isspace())


def split_messages(text: str) -> list[str]:
    """Split decoded text into messages (each with ``\\r`` segment separators), dropping FHS/BHS/BTS/FTS
    envelope segments and blank lines between messages. Lines before the first MSH form an item of
    their own, so the parser reports them rather than dropping them silently."""
    text = _unframe(text).lstrip("\ufeff")
    messages: list[list[str]] = []
    current: list[str] | None = None
    for line in _LINE_BREAK.split(text):
        if _is_segment_start(line) and line[:3] in _ENVELOPE:
            continue
        if line.startswith("MSH") and _is_segment_start(line):
            current = [line]
            messages.append(current)
        elif current is None:
            if line.strip():
                current = [line]
                messages.append(current)
        else:
            current.append(line)
    return [m for m in ("\r".join(lines).strip(_EDGE_CHARS) for lines in messages) if m]


def iter_hl7_file(path: str | Path) -> Iterator[str]:
    """The messages of an HL7 file (one or more; ``\\r``, ``\\n`` or ``\\r\\n`` separators; optional
    MLLP framing and FHS/BHS envelopes), normalised to ``\\r`` separators for ``parse_hl7``.

    Raises ``InputError`` E101 for undecodable bytes and ``HL7ParseError`` E202 for a file without any
    message."""
    messages = split_messages(decode_payload(Path(path).read_bytes()))
    if not messages:
        raise HL7ParseError("file holds no HL7 message", code="E202")
    yield from messages


# --- structure (hl7.parse) -----------------------------------------------------------------------------


def _delimiters(msh: str) -> Delimiters:
    """MSH-1 / MSH-2 as written, checked: ``hl7.parse`` takes whatever characters are there."""
    if len(msh) < 4 or msh[3].isalnum() or msh[3].isspace():
        raise HL7ParseError("missing or unusable field separator", segment="MSH", field=1, code="E203")
    fs = msh[3]
    enc = msh[4:].split(fs, 1)[0]
    chars = enc[:4]
    if (len(enc) not in (4, 5) or len(set(enc)) != len(enc) or fs in enc
            or any(c.isalnum() or c.isspace() for c in enc)):
        raise HL7ParseError("missing or unusable encoding characters", segment="MSH", field=2, code="E203")
    return Delimiters(field=fs, component=chars[0], repetition=chars[1], escape=chars[2], subcomponent=chars[3])


def _segment_lines(text: str) -> tuple[Delimiters, list[str]]:
    """The segments of one message as lines for ``hl7.parse``, envelope segments dropped. Lines that do
    not start with a segment name continue the previous segment (senders that put raw line breaks in
    OBX-5); they are kept with a "\\n", which ``hl7.parse`` leaves alone (it splits segments on "\\r")."""
    if not text:
        raise HL7ParseError("empty payload", code="E201")
    lines = _LINE_BREAK.split(text)
    first = next((ln for ln in lines  # a single message may come in an FHS/BHS envelope
                  if ln.strip() and not (ln[:3] in _ENVELOPE and _is_segment_start(ln))), "")
    if not _is_segment_start(first):
        raise HL7ParseError("not an HL7 v2 message", code="E201")
    if first[:3] != "MSH":
        raise HL7ParseError("message does not start with an MSH segment", code="E202")
    d = _delimiters(first)
    fs = d.field
    raw: list[str] = []
    blanks = 0
    for line in lines:
        if len(line) >= 3 and _SEGMENT_NAME.match(line) and (len(line) == 3 or line[3] == fs):
            if line[:3] not in _ENVELOPE:
                raw.append(line)
            blanks = 0
        elif not line.strip():
            blanks += 1
        elif raw:
            raw[-1] += "\n" * (1 + blanks) + line
            blanks = 0
    if raw[0].find(fs, 4) < 0:  # hl7.parse reads MSH-2 up to the next field separator
        raw[0] += fs
    return d, raw


def _parse(text: str) -> tuple[Delimiters, hl7.Message]:
    """One message through ``hl7.parse``, after the checks it does not make."""
    expected, lines = _segment_lines(text)
    joined = "\r".join(lines)
    msg = _guard("MSH", None, functools.partial(hl7.parse, joined), "message could not be parsed")
    d = Delimiters(field=msg.separators[1], repetition=msg.separators[2], component=msg.separators[3],
                   subcomponent=msg.separators[4], escape=msg.esc)
    if d != expected:
        raise HL7ParseError("encoding characters could not be read", segment="MSH", field=2, code="E203")
    if _CONTROL.search(joined) is not None:
        # Named from the parsed fields. One that hl7.parse stripped off the message's end (str.strip
        # counts \x1c-\x1f as whitespace) is in no field, so there is nothing left to reject.
        for seg in msg:
            for n, field in enumerate(seg):
                if _CONTROL.search(str(field)) is not None:
                    raise HL7ParseError("control character in field", segment=_name_of(seg), field=n,
                                        code="E206")
    if sum(1 for seg in msg if _name_of(seg) == "MSH") > 1:
        raise HL7ParseError("payload holds more than one message; split it with iter_hl7_file", code="E205")
    return d, msg


# --- data types ----------------------------------------------------------------------------------------


def _value(s: str | None) -> str | None:
    """Stripped value; HL7's explicit null ``""`` and blanks are None."""
    if s is None:
        return None
    s = s.strip()
    return s if s and s != '""' else None


def _comp(rep: Repetition, i: int, sub: int = 1) -> str | None:
    if i > len(rep) or sub > len(rep[i - 1]):
        return None
    return _value(rep[i - 1][sub - 1])


def _family(rep: Repetition, i: int) -> str | None:
    """FN: the surname is sub-component 1; fall back to the other parts when it is empty."""
    if i > len(rep):
        return None
    subs = [v for v in (_value(s) for s in rep[i - 1]) if v]
    return subs[0] if subs else None


def _name(family: str | None, given: str | None, middle: str | None, suffix: str | None,
          prefix: str | None) -> PersonName | None:
    if not (family or given or middle):
        return None
    return PersonName(family=family, given=given, middle=middle, suffix=suffix, prefix=prefix)


def _xpn(rep: Repetition) -> PersonName | None:
    return _name(_family(rep, 1), _comp(rep, 2), _comp(rep, 3), _comp(rep, 4), _comp(rep, 5))


def _xcn(rep: Repetition) -> Provider | None:
    name = _name(_family(rep, 2), _comp(rep, 3), _comp(rep, 4), _comp(rep, 5), _comp(rep, 6))
    pid = _comp(rep, 1)
    return Provider(id=pid, name=name) if (pid or name) else None


def _ndl(rep: Repetition) -> Provider | None:
    """NDL component 1 is a CNN whose parts are sub-components: id&family&given&middle&suffix&prefix."""
    return _xcn([[s] for s in rep[0]]) if rep else None


def _xad(rep: Repetition) -> Address | None:
    street = _comp(rep, 1)
    if street is None and rep:  # SAD without part 1: dwelling number + street name
        street = _value(" ".join(p for p in (_comp(rep, 1, 3), _comp(rep, 1, 2)) if p))
    addr = Address(street=street, other=_comp(rep, 2), city=_comp(rep, 3), state=_comp(rep, 4),
                   zip=_comp(rep, 5), country=_comp(rep, 6), county=_comp(rep, 9))
    return addr if any(addr.model_dump().values()) else None


def _xtn(rep: Repetition) -> tuple[str | None, str | None]:
    """(phone, email): the telephone string (component 1), else (area) local [xext] from 6/7/8, else
    the unformatted number (12); the email is component 4."""
    phone = _comp(rep, 1)
    if phone is None:
        area, local, ext = _comp(rep, 6), _comp(rep, 7), _comp(rep, 8)
        if local:
            phone = (f"({area}) " if area else "") + local + (f" x{ext}" if ext else "")
        else:
            phone = _comp(rep, 12)
    return phone, _comp(rep, 4)


def _each(parse: Callable[[Repetition], T], reps: list[Repetition]) -> list[T]:
    return [parse(r) for r in reps]


def _unique(values: Iterable[T | None]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(v for v in values if v is not None))


# --- mapping -------------------------------------------------------------------------------------------


class _Mapper:
    """Reads the mapped fields out of one ``hl7.Message``; every read is guarded (E206)."""

    def __init__(self, message: hl7.Message, reader: _Reader) -> None:
        self.msg = message
        self.r = reader

    def read(self, seg: hl7.Segment, n: int, fn: Callable[[list[Repetition]], T]) -> T:
        return _guard(_name_of(seg), n, lambda: fn(self.r.reps(seg, n)))

    def all(self, name: str) -> list[hl7.Segment]:
        try:
            return list(self.msg.segments(name))
        except KeyError:  # hl7 raises KeyError when the message has no such segment
            return []

    def first(self, name: str) -> hl7.Segment | None:
        found = self.all(name)
        return found[0] if found else None

    def names(self, seg: hl7.Segment, n: int) -> list[PersonName | None]:
        return self.read(seg, n, lambda reps: [_xpn(r) for r in reps])

    def phones(self, seg: hl7.Segment, fields: tuple[int, ...]) -> tuple[list[str | None], list[str | None]]:
        pairs = [p for n in fields for p in self.read(seg, n, lambda reps: [_xtn(r) for r in reps])]
        return [p for p, _ in pairs], [e for _, e in pairs]

    def addresses(self, seg: hl7.Segment, n: int) -> list[Address | None]:
        return self.read(seg, n, lambda reps: [_xad(r) for r in reps])

    def narrative(self) -> str:
        pieces: list[str] = []
        for seg in self.msg:
            name = _name_of(seg)
            if name == "OBX":
                vtype = (self.read(seg, 2, lambda reps: _comp(reps[0], 1) if reps else None) or "").upper()
                if vtype in NARRATIVE_TYPES or vtype == "ST":
                    values = _guard("OBX", 5, functools.partial(self.r.narrative, seg, 5))
                    if vtype == "ST" and not _is_narrative_st("\n".join(values)):
                        continue
                    pieces.extend(values or [""])
            elif name == "NTE":
                pieces.extend(_guard("NTE", 3, functools.partial(self.r.narrative, seg, 3)) or [""])
        while pieces and not pieces[-1].strip():
            pieces.pop()
        start = next((i for i, p in enumerate(pieces) if p.strip()), len(pieces))
        return "\n".join(pieces[start:])

    def patient(self) -> Patient | None:
        pid = self.first("PID")
        relatives = [rel for nk1 in self.all("NK1") if (rel := self.relative(nk1)) is not None]
        if pid is None:
            return Patient(relatives=tuple(relatives)) if relatives else None
        cx = self.read(pid, 3, lambda reps: [(_comp(r, 1), _comp(r, 5)) for r in reps])
        ids = [i for i, _ in cx if i]
        mrn = next((i for i, t in cx if i and t and t.upper() == "MR"), ids[0] if ids else None)
        ssn = self.read(pid, 19, lambda reps: _comp(reps[0], 1) if reps else None)
        if ssn is None:
            ssn = next((i for i, t in cx if i and t and t.upper() == "SS"), None)
        for n in (2, 4, 18, 20):
            ids.extend(self.read(pid, n, lambda reps: [v for r in reps if (v := _comp(r, 1))]))
        phones, emails = self.phones(pid, (13, 14))
        maiden = self.read(pid, 6, lambda reps: [_xpn(r) for r in reps])
        relatives[:0] = [Relative(name=m, relationship="mother (maiden name)") for m in maiden if m]
        return Patient(
            id=mrn,
            mrn=mrn,
            ids=_unique(ids),
            names=_unique([*self.names(pid, 5), *self.names(pid, 9)]),
            birth_date=self.read(pid, 7, lambda reps: _comp(reps[0], 1) if reps else None),
            phones=_unique(phones),
            emails=_unique(emails),
            addresses=_unique(self.addresses(pid, 11)),
            ssn=ssn,
            relatives=tuple(relatives),
            sex=self.read(pid, 8, lambda reps: _comp(reps[0], 1) if reps else None),
        )

    def relative(self, nk1: hl7.Segment) -> Relative | None:
        names = [n for n in self.names(nk1, 2) if n] or [n for n in self.names(nk1, 30) if n]
        rel = self.read(nk1, 3, lambda reps: (_comp(reps[0], 2) or _comp(reps[0], 1)) if reps else None)
        phones, emails = self.phones(nk1, (5, 6))
        addresses = _unique(self.addresses(nk1, 4))
        if not (names or phones or emails or addresses):
            return None
        return Relative(name=names[0] if names else None, relationship=rel, phones=_unique(phones),
                        emails=_unique(emails), addresses=addresses)

    def providers(self) -> tuple[Provider, ...]:
        found: list[Provider] = []
        seen: set[tuple[str, str]] = set()  # lab results repeat the same person in every OBX
        for seg in self.msg:
            for n, dtype, role in _PROVIDERS_BY_SEGMENT.get(_name_of(seg), ()):
                field = _field(seg, n)
                raw = _guard(_name_of(seg), n, functools.partial(str, field)) if field is not None else ""
                if not raw or (role, raw) in seen:
                    continue
                seen.add((role, raw))
                parse = _ndl if dtype == "NDL" else _xcn
                for p in self.read(seg, n, functools.partial(_each, parse)):
                    if p is not None:
                        found.append(p.model_copy(update={"role": role}))
        return _unique(found)

    def facility(self, msh: hl7.Segment) -> Facility | None:
        def hd(reps: list[Repetition], comp: int) -> Facility | None:
            if not reps:
                return None
            rep = reps[0]
            if comp > 1:  # an HD inside a component: its parts are sub-components
                rep = [[s] for s in rep[comp - 1]] if comp <= len(rep) else []
            name, uid = _comp(rep, 1), _comp(rep, 2)
            return Facility(name=name, id=uid) if (name or uid) else None

        pv1 = self.first("PV1")
        return (self.read(msh, 4, lambda reps: hd(reps, 1))
                or (self.read(pv1, 3, lambda reps: hd(reps, 4)) if pv1 is not None else None)
                or self.read(msh, 6, lambda reps: hd(reps, 1)))

    def note_id(self, msh: hl7.Segment) -> str | None:
        txa = self.first("TXA")
        doc = self.read(txa, 12, lambda reps: _comp(reps[0], 1) if reps else None) if txa else None
        return doc or self.read(msh, 10, lambda reps: _comp(reps[0], 1) if reps else None)


def _is_narrative_st(value: str) -> bool:
    """An ST result is narrative when it reads like prose: it has a letter and is over 20 characters."""
    return len(value.strip()) > ST_MIN_LENGTH and _LETTER.search(value) is not None


def _charset(m: _Mapper, msh: hl7.Segment) -> str:
    """The codec for ``\\Xhh\\`` escapes: MSH-18 if we know it, else UTF-8."""
    declared = m.read(msh, 18, lambda reps: _comp(reps[0], 1) if reps else None)
    return CHARSETS.get((declared or "").upper(), "utf-8")


def parse_hl7(message: str | bytes, *, note_id: str | None = None) -> NoteIn:
    """Map one HL7 v2 message to a ``NoteIn`` (see the module docstring for fields and error codes).

    ``note_id`` is used only when the message has neither TXA-12 nor MSH-10."""
    text = decode_payload(message) if isinstance(message, bytes) else message
    text = _unframe(text).strip(_EDGE_CHARS)
    d, msg = _parse(text)
    msh = msg[0]
    m = _Mapper(msg, _Reader(d, "utf-8"))
    m.r.charset = _charset(m, msh)
    mtype = m.read(msh, 9, lambda reps: [_comp(reps[0], 1), _comp(reps[0], 2)] if reps else [])
    if not mtype or not mtype[0]:
        raise HL7ParseError("missing message type", segment="MSH", field=9, code="E204")
    message_type = "^".join(p for p in mtype if p)
    narrative = m.narrative()
    if not narrative.strip():
        shown = message_type if _MESSAGE_TYPE.fullmatch(message_type) else "this"  # a code, never free text
        raise HL7ParseError(f"no narrative (OBX TX/FT/ST or NTE) in {shown} message", code="E210")
    nid = m.note_id(msh) or _value(note_id)
    if nid is None:
        raise HL7ParseError("no note id (TXA-12 and MSH-10 empty, none given)", segment="MSH", field=10,
                            code="E207")
    try:
        note = NoteIn(note_id=nid, text=narrative, patient=m.patient(), providers=m.providers(),
                      facility=m.facility(msh), source_format="hl7", message_type=message_type)
    except ValidationError as exc:
        reason = "mapped note is invalid: " + validation_summary(exc)
    else:
        logger.debug("hl7 message mapped: segments=%d chars=%d providers=%d",
                     len(msg), len(note.text), len(note.providers))
        return note
    raise HL7ParseError(reason, code="E208")
