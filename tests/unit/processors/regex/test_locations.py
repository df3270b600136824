"""regex step, locations: streets, PO boxes, City / State / ZIP; credentials and clinical abbreviations
after a comma that are not states."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from schemas.labels import Label, Subtype

Expected = tuple[str, Label, Subtype | None]

L = Label.LOCATION

POSITIVE: list[tuple[str, list[Expected]]] = [
    # locations
    ("Lives at 123 Main St with wife.", [("123 Main St", L, Subtype.STREET)]),
    ("Address: 45 Oak Avenue Apt 3, Springfield", [("45 Oak Avenue Apt 3", L, Subtype.STREET)]),
    ("Mail to PO Box 123.", [("PO Box 123", L, Subtype.STREET)]),
    ("Boston, MA 02115", [("Boston", L, Subtype.CITY), ("MA", L, Subtype.STATE), ("02115", L, Subtype.ZIP)]),
    ("Springfield, Illinois 62701", [("Springfield", L, Subtype.CITY), ("Illinois", L, Subtype.STATE),
                                     ("62701", L, Subtype.ZIP)]),
    ("LIVES IN BOSTON, MA 02115-1234", [("BOSTON", L, Subtype.CITY), ("02115-1234", L, Subtype.ZIP)]),
    ("Zip code 90210.", [("90210", L, Subtype.ZIP)]),
    ("Moved to Houston, TX last year.", [("Houston", L, Subtype.CITY), ("TX", L, Subtype.STATE)]),
    ("Lives with his son in Indianapolis, IN.", [("Indianapolis", L, Subtype.CITY), ("IN", L, Subtype.STATE)]),
    ("Found on the floor at home in Pearisburg; down time unknown.", [("Pearisburg", L, Subtype.CITY)]),
    ("PT LIVES ALONE IN WICHITA. PLAN: WEAN", [("WICHITA", L, Subtype.CITY)]),
    ("Lives with his sister Judith J. Strong in Council Bluffs.", [("Council Bluffs", L, Subtype.CITY)]),
    ("23675 River Way Arlington Heights, IL 60005", [("23675 River Way", L, Subtype.STREET),
                                                    ("Arlington Heights", L, Subtype.CITY)]),
    ("Rio Grande City, TX 78582", [("Rio Grande City", L, Subtype.CITY)]),
    # a military address: the box, and the last line whole (post office, region, ZIP); a ship's name above it
    ("PSC 0413, Box 8144, APO AE 09012", [("PSC 0413, Box 8144", L, Subtype.STREET), ("APO AE 09012", L, None)]),
    ("Unit 4719 Box 7394\nDPO AP 70942 in case", [("Unit 4719 Box 7394", L, Subtype.STREET),
                                                 ("DPO AP 70942", L, None)]),
    ("sent to USNS Saibara\nFPO AP 12428. It", [("USNS Saibara", L, Subtype.STREET), ("FPO AP 12428", L, None)]),
    ("to uscgc aslakhanov, fpo ae 44941?", [("uscgc aslakhanov", L, Subtype.STREET), ("fpo ae 44941", L, None)]),
    ("Office in Suite 501.", [("Suite 501", L, Subtype.STREET)]),
    # an ALL-CAPS line gives no case evidence: a city the gazetteer knows still counts
    ("SON FROM DALLAS, TX CALLED TODAY", [("DALLAS", L, Subtype.CITY), ("TX", L, Subtype.STATE)]),
    ("Lives at 12 Oak St. with wife.", [("12 Oak St.", L, Subtype.STREET)]),
    ("1600 Pennsylvania Avenue NW, Washington, DC 20500", [
        ("1600 Pennsylvania Avenue NW", L, Subtype.STREET), ("Washington", L, Subtype.CITY),
        ("DC", L, Subtype.STATE), ("20500", L, Subtype.ZIP)]),
    # another language's street address: the street type first, the name, the house number (or "s/n"), a floor
    # and door; a German or Dutch street type at the end of one word
    ("Domicilio: Calle Dr. Joaquín Aznar Molina 2, 3F. Madrid", [("Calle Dr. Joaquín Aznar Molina 2, 3F", L,
                                                               Subtype.STREET)]),
    ("Domicilio: Av. Litoral, 30, 1C. Madrid", [("Av. Litoral, 30, 1C", L, Subtype.STREET)]),
    ("Correspondencia: C/ Manuel Silvela nº 2, 6º A.", [("C/ Manuel Silvela nº 2, 6º A", L, Subtype.STREET)]),
    ("Virgen del Rocío. Avda. Manuel Siurot S/N. Sevilla", [("Avda. Manuel Siurot S/N", L, Subtype.STREET)]),
    ("vive en la calle cartagena 19, 3B con sus padres", [("calle cartagena 19, 3B", L, Subtype.STREET)]),
    # a Spanish address's floor and door after the number: numbers, "º", a door's letter, "bajo", "izq.", "dcha", "esc."
    ("Domicilio: Calle Olmo 12, 3, Izq. Toledo", [("Calle Olmo 12, 3, Izq.", L, Subtype.STREET)]),
    ("Domicilio: C/ Pino 4, 2, B. Soria", [("C/ Pino 4, 2, B", L, Subtype.STREET)]),
    ("Remitido por: Av. del Sol, 15 - 2º Dcha. 28001 Madrid", [("Av. del Sol, 15 - 2º Dcha.", L, Subtype.STREET)]),
    ("Dra. X. C/. Roble 7, 1.º A 28004 Madrid", [("C/. Roble 7, 1.º A", L, Subtype.STREET)]),
    ("Domicilio: Pso. Acacias 9, esc. 2, 3ºb. Madrid", [("Pso. Acacias 9, esc. 2, 3ºb", L, Subtype.STREET)]),
    ("Domicilio: Calle Sauce 3. 1A Esquina", [("Calle Sauce 3. 1A", L, Subtype.STREET)]),
    ("Vive en la Calle Mayor 3. A los 2 meses volvió", [("Calle Mayor 3", L, Subtype.STREET)]),  # a period ends it
    ("Wohnhaft Hauptstraße 5 in Köln", [("Hauptstraße 5", L, Subtype.STREET)]),
    ("Adresse: Lindenstr. 12, Berlin", [("Lindenstr. 12", L, Subtype.STREET)]),
    ("Woont op Kalverstraat 92.", [("Kalverstraat 92", L, Subtype.STREET)]),
    ("Morada: Rua Augusta 45, Lisboa", [("Rua Augusta 45", L, Subtype.STREET)]),
    ("Adresse: Semperweg 150, Zürich", [("Semperweg 150", L, Subtype.STREET)]),
    # the Nordic street types at the end of one word, the Hungarian ones after the name, "Via" and "ul." before a
    # capitalised name
    ("Mellemvej 32, Aalborg", [("Mellemvej 32", L, Subtype.STREET)]),
    ("bor på Östbygatan 14 i Lund", [("Östbygatan 14", L, Subtype.STREET)]),
    ("asuu Snellmaninkatu 55, Espoo", [("Snellmaninkatu 55", L, Subtype.STREET)]),
    ("Cím: Rákóczi út 13. Veszprém", [("Rákóczi út 13", L, Subtype.STREET)]),
    ("The title refers to Árpád fejedelem útja 3. street", [("Árpád fejedelem útja 3", L, Subtype.STREET)]),
    ("must enter on hegyalja út 98. st.", [("hegyalja út 98", L, Subtype.STREET)]),
    ("Indirizzo: Via delle Coste 41, Colle", [("Via delle Coste 41", L, Subtype.STREET)]),
    ("his address: 6138 Via Roma 131", [("Via Roma 131", L, Subtype.STREET)]),
    ("Adres: ul. Jesionowa 127, Poznań", [("ul. Jesionowa 127", L, Subtype.STREET)]),
    # a unit after the number rules out "Via" only ("Via Foley 200 cc"): a road's kilometre is part of an address
    ("Hospital, Carretera de Toledo M-506 Km 12, Madrid", [("Carretera de Toledo M-506", L, Subtype.STREET)]),
    ("Virgen de la Arrixaca. Ctra. Madrid - Cartagena s/n. 30120", [("Ctra. Madrid - Cartagena s/n", L,
                                                                    Subtype.STREET)]),
    # a form's address field: the rest of its line, when it holds a number and starts with a capital or a digit
    ("NASS: 12 345.\nDomicilio: C ARBOLEDA, 1. Bajo A.\nLocalidad", [("C ARBOLEDA, 1. Bajo A", L, Subtype.STREET)]),
    ("Anschrift: Am Ring 4\nTelefon", [("Am Ring 4", L, Subtype.STREET)]),
    # a form's place field and other languages' postal-code labels
    ("Localidad/ Provincia: Alcalá de Guadaíra, Sevilla. | CP: 41500.", [
        ("Alcalá de Guadaíra, Sevilla", L, Subtype.CITY), ("41500", L, Subtype.ZIP)]),
    ("Localidad/ Provincia: Cdad. Real. | C.P. 13004", [("Cdad. Real", L, Subtype.CITY), ("13004", L, Subtype.ZIP)]),
    ("Wohnort: Köln, PLZ 50667", [("Köln", L, Subtype.CITY), ("50667", L, Subtype.ZIP)]),
    ("City: Boston. Pt lives alone", [("Boston", L, Subtype.CITY)]),  # a period ends a field's value
    # other languages' post-office boxes
    ("Remitido por: X. Apartado de Correos 20134. Tenerife", [("Apartado de Correos 20134", L, Subtype.STREET)]),
    ("Anschrift: Postfach 1234, Berlin", [("Postfach 1234", L, Subtype.STREET)]),
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE, ids=[t for t, _ in POSITIVE])
def test_when_location_then_tagged_with_exact_offsets(
    assert_tagged: Callable[[str, list[Expected]], None], text: str, expected: list[Expected]
) -> None:
    assert_tagged(text, expected)


#: Credentials and clinical abbreviations after a comma, and homes that are not cities.
MUST_NOT_TAG: list[str] = [
    "FRANK BLOOD IN NGT, MD AWARE.", "Results sent to Carri Wood, MD.", "Consults: Cardiology, ID, Renal",
    "seen by her PCP, Nevada", "K 3.3 REPLETED W/ 40 MEQ KCL. ST. JUDE VALVE IN PLACE",
    "lives in a nursing home", "LIVES IN APARTMENT ALONE",
    # ALL-CAPS clinical words before a comma are no city, so the abbreviation after it is no state
    "RESPONDING WELL TO LASIX, CO/CI IMPROVED", "LUNG SOUNDS DIM IN BASES BILAT, CT SYSTEM WITHOUT LEAK",
    "PMHX: CAD S/P CABG, MI '91",
    "PMHx: CAD -s/p CABG, MI '98, ESRD on HD",  # mixed case too: "MI" needs a place word before the city
    # no house numbers: insulin units, an ordinal written apart, two sentences
    "ENDO=BS COVER W 4U REG SQ @ 0200", "BASELINE 1 ST DEGREE AV BLOCK",
    "MOVES X 4 EXTREMITIES SPONTANEOUSLY. HEAD CT NEGATIVE",
    # "c/o" and "c/w" are no "C/" (calle); "via" leads no address here; a street type needs a name and a number
    "c/o nausea again at 2000", "c/w persistent cuff leak despite 19", "Pt to go via ambulance 2 times",
    "Via PICC 2 doses given", "plaza 3", "Via NGT 2 doses", "via foley 300", "IRRIGATE 20 ML",
    "APO A1 120 mg/dl", "AA 12345 units",  # no post office and region with a ZIP
    "tie 2 knots", "ul 12", "Location: ICU", "home address: see chart 2", "Address: on file\nPlan: 2 units", "CP: 5 out of 10", "velocity: 5 cm/s", "Via Foley 200 cc overnight", "Via Hickman 2 doses",  # a unit after the "number"
    "como se indica en el apartado 3 del informe",  # a section of a report, no post-office box
]


@pytest.mark.parametrize("text", MUST_NOT_TAG + [t.upper() for t in MUST_NOT_TAG])
def test_when_medical_value_then_not_redacted(assert_not_redacted: Callable[[str], None], text: str) -> None:
    assert_not_redacted(text)
