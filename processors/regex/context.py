"""Context-word tables and small text-window helpers shared by several recognizer families.

Units and measurement words decide that a number is a quantity or a score, not an identifier: "5 mg", "3-4 days",
"BP 120/80", "Apgar 8/9". Each helper looks at a short window of the note at one position.
"""

from __future__ import annotations

import re

#: Units / count nouns: a number followed by one of these is a measurement, not an identifier.
_UNIT_WORDS = frozenset("""
mg mcg µg ug ng pg gm gms gram grams kg kgs lb lbs oz ml mls cc dl unit units iu meq mmol umol nmol mol mm cm km inch
inches ft mmhg cmh percent tab tabs tablet tablets cap caps capsule capsules pill pills puff puffs drop drops gtt gtts
spray sprays patch patches dose doses vial vials amp amps bag bags times hr hrs hour hours min mins minute minutes sec
secs second seconds day days wk wks week weeks mos month months yr yrs year years bpm beats breaths pts patients cells
copies episode episodes occasion occasions serving servings cup cups glasses beers drinks pack packs cigarettes steps
stairs blocks feet mile miles meters lesion lesions node nodes mosm kcal calories french fr gauge ga liter liters mph
degree degrees ui
""".split())
#: One-letter units count only when glued to the number ("3L", "5d", "10h", "2g").
_UNIT_LETTERS = frozenset("gldhmu")
_NEXT_WORD = re.compile(r"([ \t]*-?[ \t]*)(?:([^\W\d_]+)|([%°]))")
_NEXT_DIGIT = re.compile(r"[ \t]*\d")


def unit_after(text: str, end: int) -> bool:
    """True when a unit or count noun follows ``end`` ("5 mg", "3-4 days", "2/3 tabs", "1500mL", "x 3")."""
    m = _NEXT_WORD.match(text, end)
    if m is None:
        return False
    if m.group(3):
        return True
    word = m.group(2).lower()
    if word in _UNIT_WORDS:
        return True
    if not m.group(1) and word in _UNIT_LETTERS:
        return True
    return word == "x" and _NEXT_DIGIT.match(text, m.end()) is not None


def next_words(text: str, end: int, n: int = 2) -> list[str]:
    """The next ``n`` lower-case words after ``end`` (on the same line)."""
    line_end = text.find("\n", end, end + 40)
    return text[end:end + 40 if line_end < 0 else line_end].lower().split()[:n]


_MEASURE_TOKEN = re.compile(r"\d{1,4}(?:\.\d+)?(?P<u>[^\W\d_]+)")


def is_measure_token(value: str) -> bool:
    """"500mg", "2L", "10units": a quantity, not an ID."""
    m = _MEASURE_TOKEN.fullmatch(value)
    return m is not None and (m.group("u").lower() in _UNIT_WORDS or m.group("u").lower() in _UNIT_LETTERS)


#: Measurement words immediately left of a number: "BP 120/80", "Apgar 8/9", "pain 8/10", "grade 3/6".
_MEASURE_WORDS = frozenset("""
bp b/p nibp abp sbp dbp map hr pulse p rr resp t temp tmax tm sat sats spo2 o2 fio2 peep ps tv vt gcs apgar apgars
grade gr strength motor power pain score scores ratio scale stage class murmur vision va acuity inr ptt k na cl co2
bun cr glu glucose hgb hb hct wbc plt a1c ldl hdl tg ast alt tsh ef lvef dose dosing titer titre dilution reflexes
dtr dtrs pulses i:e fev1 fvc lvot ga g para gravida mallampati nyha asa ecog kps rom mmse moca phq-9 phq9 gad-7 gad7
cd4 range approx approximately about ~ iop ct lot sig take takes taking give given glasgow h/h h&h nl normal ref
rue lue rle lle bue ble grip deltoid deltoids biceps triceps quads df pf ehl pugh child-pugh
""".split()) | {"blood pressure", "blood pressures", "heart rate", "gestational age"}


def measure_before(text: str, start: int, window: int = 24) -> bool:
    """True when a measurement word sits right before ``start`` ("BP 120/80", "pain: 8/10", "Apgars 8/9")."""
    seg = text[max(0, start - window):start].lower().rstrip(" \t:=#")
    for filler in (" was", " is", " at"):
        if seg.endswith(filler):
            seg = seg[: -len(filler)].rstrip(" \t:=#")
    if not seg or seg[-1] in "\r\n":
        return False
    words = seg.split()[-2:]
    last = words[-1].lstrip("([{,;")
    return last in _MEASURE_WORDS or (len(words) == 2 and " ".join(words) in _MEASURE_WORDS)
