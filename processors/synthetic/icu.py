"""ICU shift notes as real nursing notes are written: numbers, jargon and telegraphic style, few identifiers.

The ``icu_shift`` note kind (``generate(n, seed, kinds=["icu_shift"])``; not in the default mix, so the
held-out synthetic sets of earlier versions stay byte-identical). Real ICU nursing notes are mostly
*clinical content that looks like identifiers to a model trained on letters*: vital-sign ranges
("HR 80-90S", "BP 110-130/50-60"), ventilator settings ("AC 600X14/5/50%", "CPAP 5/5", "PSV 15/5"), blood
gases ("7.38/40/95", "7.42-38-110"), lab values and trends ("HCT 28.4->30.1", "K 3.6"), drips and doses,
intake/output, shift times ("7P-7A", "@0300"), clipped drug and device names ("levo", "neo", "vanco",
"aline", "swan", "pacer"), nursing actions ("wean", "bolus", "diurese"); written in capitals, in lower
case or in sentence case, with abbreviations, dropped articles and misspellings. Every such number and
word is a negative example here; the identifiers of the kind (names of nurses, doctors and family,
dates as m/d or month/yy, hospitals by short names, wards, phone numbers) are tagged.

Everything below is written from general critical-care nursing knowledge (flowsheet conventions,
ventilator and blood-gas notation, standard abbreviations); the clipped drug and device names come from
``dictionaries/data/clinical_jargon.txt`` (sourced). Nothing is taken from any evaluation corpus.

The builder returns templates in the generator's slot syntax (``{dr_last}``, ``{date_short}``, ...): the
numbers and words are filled in here, the identifiers by the generator's slot resolvers, so gold spans stay
exact.
"""

from __future__ import annotations

import random
from collections.abc import Callable

# --- numbers ----------------------------------------------------------------------------------------------


def _tens(rng: random.Random, lo: int, hi: int) -> str:
    """A decade as nurses chart it: "80S", "80'S", "80s"."""
    suffix = rng.choice(("S", "S", "'S", "s"))
    return f"{rng.randint(lo, hi) * 10}{suffix}"


def _range(rng: random.Random, lo: int, hi: int, step: int = 1, sep: str | None = None) -> str:
    a = rng.randrange(lo, hi, step)
    b = a + step * rng.randint(1, 4)
    return f"{a}{sep or rng.choice(('-', '-', ' - ', '/'))}{b}"


def hr(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.35:
        return f"{_tens(rng, 6, 12)}-{_tens(rng, 7, 13)}"
    if r < 0.65:
        return _range(rng, 55, 125, 5, "-")
    return str(rng.randint(48, 140))


def bp(rng: random.Random) -> str:
    r = rng.random()
    s, d = rng.randint(85, 170), rng.randint(40, 95)
    if r < 0.4:
        return f"{s}/{d}"
    if r < 0.7:
        return f"{s}-{s + rng.choice((10, 15, 20, 30))}/{d}-{d + rng.choice((5, 10, 15))}"
    return f"{_tens(rng, 8, 16)}-{_tens(rng, 9, 17)}/{_tens(rng, 4, 8)}"


def temp(rng: random.Random) -> str:
    if rng.random() < 0.7:
        return f"{rng.uniform(96.8, 102.6):.1f}"
    return f"{rng.uniform(36.0, 39.4):.1f}"


def sat(rng: random.Random) -> str:
    if rng.random() < 0.5:
        a = rng.randint(88, 98)
        return f"{a}-{min(100, a + rng.randint(1, 4))}%"
    return f"{rng.randint(88, 100)}{rng.choice(('%', '%', ''))}"


def vent(rng: random.Random) -> str:
    """A ventilator setting line: mode, tidal volume x rate, PEEP, FiO2, pressure support."""
    tv, rate, peep = rng.choice((400, 450, 500, 550, 600, 650, 700)), rng.randint(8, 24), rng.choice((5, 5, 8, 10, 12))
    fio2, ps = rng.choice((30, 35, 40, 50, 60, 70, 100)), rng.choice((5, 8, 10, 12, 15, 18, 20))
    forms: list[Callable[[], str]] = [
        lambda: f"AC {tv}X{rate}/{peep}/{fio2}%",
        lambda: f"AC {tv} X {rate}, PEEP {peep}, FIO2 {fio2}%",
        lambda: f"A/C {tv}x{rate} {peep} PEEP .{fio2}",
        lambda: f"SIMV {tv}X{rate} PS {ps} PEEP {peep} {fio2}%",
        lambda: f"CPAP {peep}/{ps}" if rng.random() < 0.5 else f"CPAP {peep}/{peep}",
        lambda: f"PSV {ps}/{peep}",
        lambda: f"CPAP+PS {ps}/{peep} FIO2 .{fio2}",
        lambda: f"{tv}x{rate}x{peep}x{fio2}%",
        lambda: f"TV {tv}-{tv + 50} RR {_range(rng, 12, 28, 2, '-')}",
        lambda: f"PIP {rng.randint(18, 40)} PLAT {rng.randint(14, 30)}",
        lambda: f"RSBI {rng.randint(25, 130)}, NIF -{rng.randint(15, 40)}",
    ]
    return rng.choice(forms)()


def gas(rng: random.Random) -> str:
    """A blood gas: pH / pCO2 / pO2 (/ HCO3 / BE), in the several ways nurses write it."""
    ph = f"7.{rng.randint(18, 52):02d}"
    co2, o2 = rng.randint(26, 72), rng.randint(55, 420)
    hco3, be = rng.randint(16, 34), rng.randint(-8, 6)
    return rng.choice((
        f"{ph}/{co2}/{o2}", f"{ph}/{co2}/{o2}/{hco3}/{be}", f"{ph}-{co2}-{o2}", f"{ph}-{co2}-{o2}-{hco3}",
        f"{ph} / {co2} / {o2}", f"{ph},{co2},{o2}",
    ))


_LAB_RANGES: tuple[tuple[str, float, float, int], ...] = (
    ("HCT", 21, 38, 1), ("HGB", 7, 13, 1), ("WBC", 2, 28, 1), ("PLT", 30, 420, 0), ("K", 2.9, 5.8, 1),
    ("NA", 126, 150, 0), ("CL", 95, 115, 0), ("CO2", 16, 32, 0), ("BUN", 8, 90, 0), ("CR", 0.5, 4.8, 1),
    ("GLUC", 60, 320, 0), ("MG", 1.3, 2.8, 1), ("CA", 7.1, 10.2, 1), ("PHOS", 1.8, 6.2, 1), ("INR", 0.9, 4.5, 1),
    ("PTT", 24, 95, 1), ("PT", 11, 28, 1), ("LACTATE", 0.7, 8.5, 1), ("CK", 40, 4200, 0), ("TROP", 0.01, 4.5, 2),
    ("CI", 1.6, 4.2, 1), ("CO", 2.8, 8.5, 1), ("SVR", 500, 1800, 0), ("CVP", 2, 24, 0), ("PAD", 10, 32, 0),
    ("PCWP", 8, 30, 0), ("PAS", 24, 70, 0), ("SVO2", 45, 82, 0), ("ICP", 4, 30, 0), ("CPP", 50, 95, 0),
    ("FS", 70, 310, 0), ("FSBS", 70, 310, 0), ("BS", 70, 310, 0), ("ALB", 1.8, 4.1, 1), ("AMMONIA", 20, 140, 0),
)


def _num(rng: random.Random, lo: float, hi: float, nd: int) -> str:
    x = rng.uniform(lo, hi)
    return f"{x:.{nd}f}" if nd else str(round(x))


def lab(rng: random.Random) -> str:
    name, lo, hi, nd = rng.choice(_LAB_RANGES)
    if rng.random() < 0.3:
        name = name.lower() if rng.random() < 0.5 else name.title()
    r = rng.random()
    a = _num(rng, lo, hi, nd)
    if r < 0.5:
        return f"{name} {a}"
    b = _num(rng, lo, hi, nd)
    if r < 0.75:
        return f"{name} {a}{rng.choice(('->', '-->', ' > ', ' TO ', '-'))}{b}"
    if r < 0.88:
        return f"{name} {a} ({b})"
    return f"{name} {a}-{b}"


_DRIPS = ("LEVO", "NEO", "DOPA", "DOBUT", "EPI", "VASO", "NTG", "NIPRIDE", "PROPOFOL", "FENTANYL", "VERSED",
          "INSULIN", "HEPARIN", "AMIO", "DILT", "ESMOLOL", "PRECEDEX", "MILRINONE", "LASIX", "MSO4", "INTEGRILIN")
_DRIP_UNITS = ("MCG/KG/MIN", "MCG/MIN", "MG/HR", "U/HR", "UNITS/HR", "CC/HR", "MCG/HR", "MG/MIN")
_MEDS = ("VANCO", "ZOSYN", "LEVOFLOX", "FLAGYL", "CEFEPIME", "MEROPENEM", "LASIX", "LOPRESSOR", "KCL", "MAG SULFATE",
         "ATIVAN", "HALDOL", "MSO4", "DILAUDID", "TYLENOL", "PROTONIX", "HEP SC", "REGLAN", "COLACE", "SENNA", "ZOFRAN",
         "CAPTOPRIL", "DIGOXIN", "ALBUMIN", "FFP", "PRBC", "PLTS", "NS", "LR", "D5W", "CA GLUC", "NAHCO3", "VIT K")
_ROUTES = ("IV", "IVP", "PO", "PNGT", "SC", "SL", "PR", "IV X1", "VIA OGT")


def drip(rng: random.Random) -> str:
    name = rng.choice(_DRIPS)
    dose = rng.choice((f"{rng.uniform(0.02, 2.5):.2f}".rstrip("0").rstrip("."), str(rng.randint(1, 200))))
    unit = rng.choice(_DRIP_UNITS)
    return rng.choice((
        f"{name} @ {dose} {unit}", f"{name} GTT {dose}{unit}", f"{name} {dose} {unit}",
        f"{name} WEANED FROM {dose} TO {_num(rng, 0, 1, 2)} {unit}", f"{name} OFF SINCE {hm(rng)}",
        f"{name} TITRATED TO MAP >{rng.choice((60, 65, 70))}",
    ))


def dose(rng: random.Random) -> str:
    med = rng.choice(_MEDS)
    amount = rng.choice((f"{rng.choice((0.5, 1, 2, 4, 5, 10, 20, 25, 40, 80, 250, 500, 1000))}",
                         f"{rng.randint(1, 4)}"))
    unit = rng.choice(("MG", "MG", "GM", "MEQ", "U", "CC", "MCG", "ML", "UNITS", "G", "AMP"))
    when = rng.choice(("", "", " X1", " Q6H", " Q8", " Q12", " Q4H PRN", " BID", " TID", " QD", f" @{hm(rng)}"))
    return f"{med} {amount}{rng.choice(('', ' '))}{unit} {rng.choice(_ROUTES)}{when}"


def io(rng: random.Random) -> str:
    return rng.choice((
        f"UOP {_range(rng, 10, 200, 10, '-')}CC/HR", f"U/O {rng.randint(15, 300)}CC/HR",
        f"I/O {rng.choice(('+', '-'))}{rng.randint(1, 4)}.{rng.randint(0, 9)}L",
        f"I&O {rng.randint(800, 4200)}/{rng.randint(300, 3800)}", f"TF @ {rng.randint(10, 90)}CC/HR",
        f"RESIDUALS {_range(rng, 0, 120, 10, '-')}CC", f"CT DRAINING {rng.randint(10, 200)}CC/{rng.choice(('HR', 'SHIFT'))}",
        f"BOLUSED {rng.choice((250, 500, 1000))}CC NS X{rng.randint(1, 3)}", f"NGT {rng.randint(50, 600)}CC BILIOUS",
        f"{rng.randint(1, 4)}+ EDEMA", f"STOOL X{rng.randint(1, 4)}",
    ))


def hm(rng: random.Random) -> str:
    """A clock time as charted: "0300", "2200", "3AM", "1530", "@ 4"."""
    h, m = rng.randint(0, 23), rng.choice((0, 0, 0, 15, 30, 45))
    return rng.choice((f"{h:02d}{m:02d}", f"{h:02d}{m:02d}", f"{(h % 12) or 12}{'AM' if h < 12 else 'PM'}",
                       f"{(h % 12) or 12}{rng.choice(('A', 'P'))}", f"{h:02d}:{m:02d}"))


def shift(rng: random.Random) -> str:
    return rng.choice(("7P-7A", "7A-7P", "7A-3P", "3P-11P", "11P-7A", "0700-1900", "1900-0700", "7-3", "3-11",
                       "11-7", "NOCTE", "DAYS", "EVENINGS", "1500-2300"))


# --- words ------------------------------------------------------------------------------------------------

_HEADERS = ("NPN", "NSG NOTE", "NURSING PROGRESS NOTE", "MICU NPN", "CCU NURSING NOTE", "SICU NPN", "CSRU NPN",
            "NEURO ICU NSG", "NURSING ADMIT NOTE", "NSG ACCEPT NOTE", "NPN ADDENDUM")
_SYSTEMS = ("NEURO", "CV", "RESP", "GI", "GU", "ID", "HEME", "ENDO", "SKIN", "SOCIAL", "PLAN", "LINES", "PAIN",
            "A/P", "FEN", "RENAL", "ACCESS", "DISPO")

#: sentences by system; {n:name} fills a number of this module, {s:slot} is a generator slot (identifier
#: or clinical pool), everything else is written as is
_SENTENCES: dict[str, tuple[str, ...]] = {
    "NEURO": (
        "A+OX3, MAE, PERRL.", "SEDATED ON {n:drip}, RASS -{n:small}.", "OPENS EYES TO VOICE, NOT FOLLOWING CMDS.",
        "PERRLA {n:small}MM BRISK.", "MOVING ALL EXT WEAKLY.", "AGITATED @{n:hm}, ATIVAN {n:small}MG IV W/ GOOD EFFECT.",
        "GCS {n:gcs}.", "DENIES PAIN.", "C/O INCISIONAL PAIN {n:small}/10, MSO4 {n:small}MG IV.",
        "SLEEPING IN NAPS.", "WITHDRAWS TO NOXIOUS STIM X4.", "PROPOFOL OFF FOR NEURO EXAM, LIGHTENS UP.",
        "SEIZURE PRECAUTIONS MAINTAINED.", "NO SZ ACTIVITY NOTED.", "FOLLOWS SIMPLE COMMANDS INCONSISTENTLY.",
    ),
    "CV": (
        "HR {n:hr} {n:rhythm}.", "BP {n:bp}.", "SBP {n:tens}-{n:tens}.", "{n:drip}.", "{n:lab}, {n:lab}.",
        "CVP {n:cvp}.", "PAD {n:cvp}, CI {n:ci}.", "MAP > {n:map} ON {n:drip}.", "NEO WEANED OFF @{n:hm}.",
        "LEVO UP TO {n:dripdose} FOR MAPS 50S.", "PULSES PALP X4.", "PACER WIRES CAPPED.", "A-LINE DAMPENED, FLUSHED.",
        "SWAN PULLED BACK TO {n:cm}CM.", "K {n:k} REPLETED W/ {n:small}0 MEQ KCL.", "LYTES REPLETED PER SS.",
        "FREQ PVCS, OCC RUNS VT {n:small}-{n:small} BEATS.", "AFIB {n:hr}, DILT {n:small}0MG IV.",
        "HCT {n:hct} -> {n:hct} AFTER {n:small} U PRBC.", "TMAX {n:temp}, CULTURED.", "EDEMA {n:small}+ BLE.",
    ),
    "RESP": (
        "{n:vent}.", "VENT SETTINGS {n:vent}.", "ABG {n:gas}.", "ABG {n:gas} ON {n:vent}.", "SATS {n:sat} ON {n:o2}.",
        "LS CLEAR UPPER, DIM BASES.", "COARSE BS, SX FOR SM AMT THICK TAN SPUTUM.", "RR {n:rr}.",
        "WEANED TO {n:vent} @{n:hm}, TOL WELL.", "SBT FAILED, BACK ON {n:vent}.", "CXR PND.", "ETT {n:cm} @ LIP.",
        "NEB TX Q4H.", "SAT DROPPED TO {n:small}0S W/ TURNING, RECOVERED.", "EXTUBATED @{n:hm} TO {n:o2}.",
        "IS {n:is}CC.", "TRACH CARE DONE.", "MDI GIVEN.",
    ),
    "GI": (
        "ABD SOFT, +BS.", "TF {n:io}.", "{n:io}.", "NPO EXCEPT MEDS.", "OGT TO LCWS.", "PROTONIX IV.",
        "GUAIAC NEG STOOL.", "LFTS PND.", "NO BM, COLACE/SENNA GIVEN.", "DOBHOFF PLACED, POSITION CONFIRMED BY KUB.",
    ),
    "GU": (
        "FOLEY DRAINING CLEAR YELLOW URINE {n:io}.", "{n:io}.", "BUN/CR {n:bun}/{n:cr}.", "LASIX {n:small}0MG IV, DIURESED WELL.",
        "UOP BORDERLINE, MD AWARE.", "CRRT RUNNING, PULLING {n:small}0CC/HR.",
    ),
    "ID": ("TMAX {n:temp}.", "WBC {n:wbc}.", "{n:dose}.", "ON VANCO/ZOSYN.", "CULTURES PND.", "AFEBRILE.", "PAN CX'D."),
    "HEME": ("HCT {n:hct}.", "PLT {n:plt}.", "INR {n:inr}, VIT K GIVEN.", "HEPARIN GTT {n:dripdose} U/HR, PTT {n:ptt}.",
             "{n:small} U FFP GIVEN.", "NO S/S BLEEDING."),
    "ENDO": ("FS {n:fs} COVERED PER SS.", "INSULIN GTT @ {n:small} U/HR.", "BS {n:fs}-{n:fs}.", "FSBS Q6H."),
    "SKIN": ("INTACT.", "COCCYX RED, BLANCHABLE.", "TURNED Q2H.", "DSG C/D/I.", "STAGE {n:small} DECUB ON SACRUM.",
             "DUODERM APPLIED."),
    "LINES": ("R IJ TLC, L RADIAL ALINE.", "PIV X2.", "PICC R ARM.", "SWAN R IJ @ {n:cm}CM.", "NEW A-LINE PLACED."),
    "PAIN": ("PAIN {n:small}/10, {n:dose} W/ RELIEF.", "FENTANYL {n:small}0MCG IV PRN.", "DENIES PAIN."),
    "SOCIAL": (
        "{s:relation} IN TO VISIT, UPDATED BY {s:dr_last}.", "{s:rel} CALLED, UPDATED.", "FAMILY MTG {s:date_short} W/ {s:dr_last}.",
        "{s:rel_name} ({s:relation}) IS HCP, # {s:rel_phone}.", "NO CALLS THIS SHIFT.", "{s:relation} VISITED, TEARFUL.",
        "PT FROM {s:city}, LIVES W/ {s:relation}.", "FAMILY AWARE OF POC.", "SW FOLLOWING.",
    ),
    "PLAN": (
        "CONT TO MONITOR.", "WEAN VENT AS TOL.", "WEAN {n:dripname} AS TOL.", "FOLLOW LYTES, REPLETE PRN.",
        "AM LABS.", "? EXTUBATE IN AM.", "F/U CX RESULTS.", "CALL HO W/ CHANGES.", "TX TO FLOOR WHEN BED AVAIL.",
        "MAY NEED TRACH/PEG.", "DIURESE AS TOL.", "CONT SUPPORTIVE CARE.",
    ),
    "A/P": ("STABLE ON {n:vent}.", "HEMODYNAMICALLY STABLE OFF PRESSORS.", "CONT POC.", "IMPROVING RESP STATUS."),
    "FEN": ("{n:io}.", "K {n:k}, MG {n:mg}, REPLETED.", "NA {n:na}.", "D5 1/2NS @ {n:small}0CC/HR."),
    "RENAL": ("CR {n:cr} ({n:cr}).", "HD IN AM.", "{n:io}."),
    "ACCESS": ("L SC TLC DSG CHANGED.", "ALINE WAVEFORM OK.", "PIV {n:small}0G L FA."),
    "DISPO": ("FULL CODE.", "DNR/DNI.", "REMAINS IN MICU.", "CMO PER FAMILY.", "TX TO {s:hosp2} WHEN BED AVAIL."),
}

#: sentences with identifiers, added to a share of notes (history dates, events with names and places)
_PHI_SENTENCES: tuple[str, ...] = (
    "{s:dr_last} IN @{n:hm}, AWARE OF {n:lab}.", "SEEN BY {s:dr} RE: {n:gas}.", "{s:dr_last} NOTIFIED OF BP {n:bp}.",
    "PMH: CAD, S/P CABG {s:mmyy}, DM, HTN.", "ECHO {s:mmyy} EF {n:small}0%.", "TX FROM {s:hosp2} ON {s:date_short}.",
    "ADMITTED {s:date_short} W/ {s:dx}.", "REPORT FROM {s:rn}.", "{s:rn} TO RESUME CARE @{n:hm}.",
    "PT'S {s:relation} {s:rel_name} CALLED FROM {s:city}.", "RETURNED FROM {s:ward} @{n:hm}.",
    "TO {s:ward} FOR CT, BACK @{n:hm}.", "SEEN BY {s:dr2} (ID).", "CONSENT SIGNED BY {s:rel_name}.",
    "FAMILY MEETING {s:weekday} W/ {s:dr_last}.", "HX {s:dx} DX'D {s:mmyy} AT {s:hosp2}.",
)


def _fill(rng: random.Random, template: str) -> str:
    """Fill the {n:...} number holes; {s:...} become generator slots ({slot})."""
    numbers: dict[str, Callable[[], str]] = {
        "hr": lambda: hr(rng), "bp": lambda: bp(rng), "temp": lambda: temp(rng), "sat": lambda: sat(rng),
        "vent": lambda: vent(rng), "gas": lambda: gas(rng), "lab": lambda: lab(rng), "drip": lambda: drip(rng),
        "dose": lambda: dose(rng), "io": lambda: io(rng), "hm": lambda: hm(rng),
        "tens": lambda: _tens(rng, 8, 16), "small": lambda: str(rng.randint(1, 9)),
        "gcs": lambda: rng.choice((str(rng.randint(3, 15)), f"{rng.randint(3, 15)}T",
                                    f"E{rng.randint(1, 4)}V{rng.randint(1, 5)}M{rng.randint(1, 6)}")),
        "cvp": lambda: _range(rng, 4, 26, 1, "-"), "ci": lambda: f"{rng.uniform(1.6, 4.2):.1f}",
        "map": lambda: str(rng.choice((55, 60, 65, 70))), "dripdose": lambda: _num(rng, 0.02, 20, rng.choice((0, 2))),
        "cm": lambda: str(rng.randint(20, 60)), "k": lambda: f"{rng.uniform(2.9, 5.6):.1f}",
        "hct": lambda: f"{rng.uniform(21, 38):.1f}", "rr": lambda: _range(rng, 10, 36, 2, "-"),
        "o2": lambda: rng.choice((f"{rng.randint(1, 6)}L NC", f"{rng.randint(35, 100)}% FM", f"{rng.randint(40, 100)}% CN",
                                  f"{rng.randint(30, 100)}% TRACH MASK", "RA", "NRB")),
        "is": lambda: str(rng.choice((250, 500, 750, 1000, 1250))), "bun": lambda: str(rng.randint(8, 90)),
        "cr": lambda: f"{rng.uniform(0.5, 4.8):.1f}", "wbc": lambda: f"{rng.uniform(2, 28):.1f}",
        "plt": lambda: str(rng.randint(30, 420)), "inr": lambda: f"{rng.uniform(0.9, 4.5):.1f}",
        "ptt": lambda: f"{rng.uniform(24, 95):.1f}", "fs": lambda: str(rng.randint(70, 320)),
        "mg": lambda: f"{rng.uniform(1.3, 2.8):.1f}", "na": lambda: str(rng.randint(126, 150)),
        "dripname": lambda: rng.choice(_DRIPS),
        "rhythm": lambda: rng.choice(("NSR", "SR", "ST", "SB", "AFIB", "AFLUTTER", "PACED", "SR W/ OCC PVCS",
                                      "NSR NO ECTOPY", "ST W/ RARE PAC")),
    }
    out: list[str] = []
    i = 0
    while i < len(template):
        j = template.find("{", i)
        if j < 0:
            out.append(template[i:])
            break
        k = template.index("}", j)
        out.append(template[i:j])
        kind, name = template[j + 1:k].split(":", 1)
        out.append(numbers[name]() if kind == "n" else "{" + name + "}")
        i = k + 1
    return "".join(out)


def _misspell_words(rng: random.Random, text: str, rate: float) -> str:
    """Swap two adjacent letters or drop one in a few long plain words (never inside a {slot})."""
    parts = text.split(" ")
    for i, w in enumerate(parts):
        if "{" in w or "}" in w or len(w) < 6 or not w.isalpha() or rng.random() >= rate:
            continue
        j = rng.randint(1, len(w) - 3)
        parts[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:] if rng.random() < 0.5 else w[:j] + w[j + 1:]
    return " ".join(parts)


def _case(text: str, style: str) -> str:
    """Apply a case style to the literal text, leaving {slot} names alone: "upper" (as written), "lower",
    or "sentence" (lower case, first letter of each sentence and line capitalised)."""
    if style == "upper":
        return text
    out: list[str] = []
    depth = 0
    start = True
    for ch in text:
        if ch == "{":
            depth += 1
        if depth:
            out.append(ch)
            if ch == "}":
                depth -= 1
                start = False
            continue
        low = ch.lower()
        if style == "sentence" and start and low.isalpha():
            low, start = ch.upper(), False
        elif ch.isalnum():
            start = False
        if ch in ".\n:":
            start = True
        out.append(low)
    return "".join(out)


def shift_note(rng: random.Random) -> tuple[list[str], str]:
    """The templates of one ICU shift note (case already applied to the literal text) and its case style
    ("upper": everything in capitals, identifiers too; "lower"; "sentence")."""
    style = rng.choices(("upper", "lower", "sentence"), (0.5, 0.3, 0.2))[0]
    lines: list[str] = []
    head = rng.choice(_HEADERS)
    lines.append(rng.choice((f"{head} {shift(rng)}\n", f"{head}\n", f"{head} {{date_short}} {shift(rng)}\n",
                             f"{head}: ")))
    systems = list(_SYSTEMS)
    rng.shuffle(systems)
    order = [s for s in _SYSTEMS if s in set(systems[: rng.randint(4, 10)])]
    phi_share = rng.random()
    for system in order:
        pool = _SENTENCES[system]
        k = rng.randint(1, min(5, len(pool)))
        sentences = [_fill(rng, t) for t in rng.sample(pool, k)]
        if phi_share > 0.4 and rng.random() < 0.35:
            sentences.insert(rng.randint(0, len(sentences)), _fill(rng, rng.choice(_PHI_SENTENCES)))
        body = " ".join(sentences)
        if rng.random() < 0.3:
            body = body.replace(".", "", body.count(".") // 2)
        body = _misspell_words(rng, body, 0.04)
        label = rng.choice((f"{system}: ", f"{system}- ", f"{system}; ", f"{system} "))
        lines.append(label + body + rng.choice(("\n", "\n", " ")))
    if rng.random() < 0.5:
        lines.append(rng.choice(("{rn}", "-- {rn}", "{rn} {dt}", "SEE FLOWSHEET FOR DETAILS. {rn}")))
    return [_case(line, style) for line in lines], style
