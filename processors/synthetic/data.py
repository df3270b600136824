"""Declared data for the synthetic clinical corpus: name/place pools, hard negatives and note templates.

Templates are plain strings with ``{slot}`` placeholders that ``processors.synthetic.generator`` resolves; a slot
renders either plain text or gold PHI. Everything outside slots is untagged text, so the hard negatives
written literally here (eponyms, drug brands, labs, vitals, scores, times, years) are gold non-PHI.
"""

from __future__ import annotations

#: Approximately the 100 most frequent US surnames (Census 2010) in rank order; sampled Zipf 1/rank.
HEAD_SURNAMES: tuple[str, ...] = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
    "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin",
    "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson",
    "Walker", "Young", "Allen", "King", "Wright", "Scott", "Torres", "Nguyen", "Hill", "Flores",
    "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell", "Carter", "Roberts",
    "Gomez", "Phillips", "Evans", "Turner", "Diaz", "Parker", "Cruz", "Edwards", "Collins", "Reyes",
    "Stewart", "Morris", "Morales", "Murphy", "Cook", "Rogers", "Gutierrez", "Ortiz", "Morgan", "Cooper",
    "Peterson", "Bailey", "Reed", "Kelly", "Howard", "Ramos", "Kim", "Cox", "Ward", "Richardson",
    "Watson", "Brooks", "Chavez", "Wood", "James", "Bennett", "Gray", "Mendoza", "Ruiz", "Hughes",
    "Price", "Alvarez", "Castillo", "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jimenez",
)

#: Names that are also common English words: the hard cases for dictionaries and NER.
COMMON_WORD_FIRST_F: tuple[str, ...] = ("Hope", "Rose", "Grace", "May", "June", "Faith", "Joy", "Summer", "Iris")
COMMON_WORD_FIRST_M: tuple[str, ...] = ("Will", "Frank", "Bill", "Mark", "Sonny", "Chase", "Guy", "Rusty")
COMMON_WORD_SURNAMES: tuple[str, ...] = (
    "Young", "White", "Black", "Brown", "Green", "Cook", "Rose", "Bell", "Long", "Wells", "Hope", "Little",
    "Strong", "Sharp", "Moody", "Fox", "Hardy", "Short", "May", "Street",
)

#: Given name -> common nicknames (used in text; the structured block lists them too).
NICKNAMES: dict[str, tuple[str, ...]] = {
    "William": ("Bill", "Will", "Billy"), "Robert": ("Bob", "Rob", "Bobby"), "James": ("Jim", "Jimmy"),
    "John": ("Jack", "Johnny"), "Richard": ("Rick", "Dick"), "Joseph": ("Joe", "Joey"),
    "Thomas": ("Tom", "Tommy"), "Michael": ("Mike",), "Charles": ("Charlie", "Chuck"),
    "Edward": ("Ed", "Ted"), "Anthony": ("Tony",), "Daniel": ("Dan", "Danny"), "Christopher": ("Chris",),
    "Matthew": ("Matt",), "Steven": ("Steve",), "Alexander": ("Alex",), "Samuel": ("Sam",),
    "Benjamin": ("Ben",), "Nicholas": ("Nick",), "Gregory": ("Greg",), "Timothy": ("Tim",),
    "Kenneth": ("Ken",), "Donald": ("Don",), "Ronald": ("Ron",), "Raymond": ("Ray",), "Lawrence": ("Larry",),
    "Gerald": ("Jerry",), "Francis": ("Frank",), "Harold": ("Harry",), "Henry": ("Hank",),
    "Frederick": ("Fred",), "Theodore": ("Ted", "Teddy"), "Elizabeth": ("Liz", "Beth", "Betty"),
    "Margaret": ("Peggy", "Maggie"), "Katherine": ("Kate", "Kathy"), "Patricia": ("Pat", "Trish"),
    "Jennifer": ("Jen", "Jenny"), "Susan": ("Sue",), "Deborah": ("Deb", "Debbie"), "Barbara": ("Barb",),
    "Dorothy": ("Dot", "Dottie"), "Victoria": ("Vicky",), "Rebecca": ("Becky",), "Jessica": ("Jess",),
    "Abigail": ("Abby",), "Catherine": ("Cathy", "Kate"), "Christine": ("Chris",), "Judith": ("Judy",),
    "Cynthia": ("Cindy",), "Pamela": ("Pam",), "Kimberly": ("Kim",), "Theresa": ("Terry",),
}

TITLES_M: tuple[str, ...] = ("Mr.", "Mr")
TITLES_F: tuple[str, ...] = ("Ms.", "Mrs.", "Ms", "Miss")
CREDENTIALS: tuple[str, ...] = ("MD", "M.D.", "DO", "NP", "PA-C", "MD, PhD")
NURSE_CREDENTIALS: tuple[str, ...] = ("RN", "RN, BSN", "LPN", "RN CCRN")

RELATIONS_F: tuple[str, ...] = ("wife", "daughter", "sister", "mother", "niece", "granddaughter", "partner")
RELATIONS_M: tuple[str, ...] = ("husband", "son", "brother", "father", "nephew", "grandson", "partner")

CLINIC_PLACES: tuple[str, ...] = (
    "Riverside", "Lakeview", "Northside", "Valley", "Summit", "Cedar Ridge", "Oak Park", "Harbor",
    "Pinecrest", "Maple Grove", "Bayview", "Westside", "Eastgate", "Highland", "Meadowbrook", "Sunrise",
    "Brookside", "Fairview", "Hillcrest", "Willow Creek", "Stonebridge", "Clearwater", "Red Oak",
    "Silver Lake", "Greenfield", "Prairie", "Canyon", "Heritage", "Lakeshore", "Bridgeport",
)
CLINIC_SPECIALTIES: tuple[str, ...] = (
    "Cardiology", "Family Medicine", "Pulmonary", "Orthopedic", "Dermatology", "Oncology", "Women's Health",
    "Pediatric", "Gastroenterology", "Urology", "Nephrology", "Neurology", "Endocrine", "Internal Medicine",
    "Rheumatology", "Sleep", "Pain Management", "Wound Care", "Behavioral Health", "Vascular",
)
CLINIC_KINDS: tuple[str, ...] = (
    "Clinic", "Associates", "Center", "Group", "Specialists", "Partners", "Health Center", "Medical Group",
)
EMPLOYER_FORMS: tuple[str, ...] = (
    "{s} Construction", "{s} & Sons Plumbing", "{p} Elementary School", "{p} Logistics", "{s} Hardware",
    "{p} Credit Union", "{p} Manufacturing", "{s} Landscaping", "{p} County Schools", "{p} Foods",
)

STREET_NAMES: tuple[str, ...] = (
    "Oak", "Maple", "Main", "Elm", "Washington", "Lincoln", "Park", "Cedar", "Pine", "Lake", "Hill",
    "Church", "Walnut", "Spring", "Highland", "Chestnut", "Sunset", "Franklin", "Jefferson", "Mill",
    "River", "Meadow", "Forest", "Willow", "Madison", "Ridge", "Prospect", "Cherry", "Union", "Jackson",
    "Martin Luther King Jr", "Broad", "Center", "School", "Orchard", "Magnolia", "Dogwood", "Hickory",
)
STREET_SUFFIXES: tuple[str, ...] = (
    "St", "St.", "Street", "Ave", "Avenue", "Rd", "Road", "Dr", "Drive", "Ln", "Lane", "Blvd", "Ct",
    "Court", "Way", "Pl", "Terrace", "Circle",
)
UNITS: tuple[str, ...] = ("Apt {n}", "Apt. {n}{l}", "Unit {n}", "#{n}", "Suite {n}")

EMAIL_DOMAINS: tuple[str, ...] = (
    "gmail.com", "yahoo.com", "hotmail.com", "aol.com", "outlook.com", "icloud.com", "comcast.net",
    "verizon.net", "msn.com", "att.net",
)
COUNTRIES: tuple[str, ...] = (
    "Guatemala", "Mexico", "Vietnam", "the Philippines", "India", "Haiti", "El Salvador", "Poland",
    "Ukraine", "Nigeria", "Somalia", "Honduras", "China", "Ireland", "Ethiopia", "Brazil", "Cuba",
)

#: Used only when dictionaries.vocab is not importable (invented names, real city/state/ZIP triples).
FALLBACK_HOSPITALS: tuple[tuple[str, str, str, str], ...] = (
    ("Mercy General Hospital", "Sacramento", "CA", "95819"),
    ("St. Luke's Regional Medical Center", "Boise", "ID", "83712"),
    ("Good Samaritan Hospital", "Dayton", "OH", "45406"),
    ("Memorial Hermann Hospital", "Houston", "TX", "77030"),
    ("Providence St. Vincent Medical Center", "Portland", "OR", "97225"),
    ("Baptist Medical Center", "Jacksonville", "FL", "32207"),
    ("Sacred Heart Hospital", "Pensacola", "FL", "32504"),
    ("Mount Carmel East Hospital", "Columbus", "OH", "43213"),
    ("Saint Mary's Hospital", "Rochester", "MN", "55902"),
    ("Lakeland Regional Medical Center", "Lakeland", "FL", "33805"),
    ("Community Memorial Hospital", "Ventura", "CA", "93003"),
    ("Holy Cross Hospital", "Silver Spring", "MD", "20910"),
)

# ---------------------------------------------------------------------------------------------------
# Hard negatives: medical text that looks like PHI to a naive detector. Always untagged.

EPONYM_SIGNS: tuple[str, ...] = (
    "Murphy sign", "Babinski sign", "Homans sign", "Romberg test", "Tinel sign", "Phalen test", "McMurray test",
    "Lachman test", "Chvostek sign", "Kernig sign", "Brudzinski sign", "Cullen sign", "Grey Turner sign",
    "Trousseau sign", "Rovsing sign", "Spurling test", "Hoffmann sign", "Kehr sign", "Levine sign",
)
EPONYM_DISEASES: tuple[str, ...] = (
    "Parkinson's disease", "Hodgkin lymphoma", "Crohn's disease", "Alzheimer's dementia", "Bell's palsy",
    "Cushing syndrome", "Graves disease", "Hashimoto thyroiditis", "Kawasaki disease", "Guillain-Barre syndrome",
    "Mallory-Weiss tear", "Barrett's esophagus", "Wolff-Parkinson-White pattern", "Brugada pattern",
    "Sjogren syndrome", "Addison disease", "Raynaud phenomenon", "Wernicke encephalopathy", "Dupuytren contracture",
    "Baker cyst", "Colles fracture", "Meckel diverticulum", "Huntington disease", "Lou Gehrig's disease",
    "Down syndrome", "Marfan syndrome", "Kaposi sarcoma", "Paget disease", "Hirschsprung disease",
)
EPONYM_DEVICES: tuple[str, ...] = (
    "Foley catheter", "Swan-Ganz catheter", "St. Jude valve", "Jackson-Pratt drain", "Hickman line",
    "Blake drain", "Penrose drain", "Dobhoff tube", "Miami J collar", "Sengstaken-Blakemore tube", "Quinton catheter",
)
EPONYM_PROCS: tuple[str, ...] = (
    "Whipple procedure", "Nissen fundoplication", "Roux-en-Y gastric bypass", "Hartmann procedure",
    "Bruce protocol", "Epley maneuver", "Valsalva maneuver", "Billroth II", "Ross procedure", "Fontan procedure",
)
EPONYMS: tuple[str, ...] = EPONYM_SIGNS + EPONYM_DISEASES + EPONYM_DEVICES + EPONYM_PROCS
DRUGS: tuple[str, ...] = (
    "Lasix 40 mg IV BID", "Tylenol 650 mg PO q6h PRN", "Coumadin 5 mg daily", "metoprolol tartrate 25 mg PO BID",
    "Lipitor 40 mg qHS", "Zosyn 3.375 g IV q8h", "vancomycin 1 g IV q12h", "heparin 5000 units SC TID",
    "insulin glargine 20 units qHS", "Protonix 40 mg daily", "Eliquis 5 mg BID", "Plavix 75 mg daily",
    "aspirin 81 mg daily", "Norco 5/325 1-2 tabs q4h PRN", "Zofran 4 mg IV q6h PRN", "Ativan 0.5 mg IV q4h PRN",
    "Keppra 500 mg BID", "prednisone 40 mg daily", "Levaquin 750 mg daily", "ceftriaxone 1 g IV daily",
    "lisinopril 10 mg daily", "Norvasc 5 mg daily", "Synthroid 75 mcg daily", "Flomax 0.4 mg qHS",
    "Senna 8.6 mg BID", "Colace 100 mg BID", "Dilaudid 0.5 mg IV q3h PRN", "morphine 2 mg IV q4h PRN",
    "Lovenox 40 mg SC daily", "Bactrim DS 1 tab BID", "tacrolimus (FK506) 2 mg BID", "Cipro 500 mg BID",
    "Xarelto 20 mg daily", "Jardiance 10 mg daily", "Entresto 24/26 mg BID", "Humalog sliding scale",
    "Solu-Medrol 125 mg IV once", "Coreg 6.25 mg BID", "Aldactone 25 mg daily", "Seroquel 25 mg qHS PRN",
    "Haldol 2 mg IV PRN agitation", "Zyprexa 5 mg qHS", "Neurontin 300 mg TID", "Lexapro 10 mg daily",
    "Augmentin 875 mg BID", "Flagyl 500 mg IV q8h", "Keflex 500 mg QID", "Miralax 17 g daily",
)
DRIPS: tuple[str, ...] = (
    "propofol gtt at 20 mcg/kg/min", "Levophed at 0.05 mcg/kg/min", "precedex 0.4 mcg/kg/hr",
    "heparin gtt per protocol", "insulin gtt at 3 units/hr", "fentanyl gtt at 50 mcg/hr",
    "amiodarone gtt at 0.5 mg/min", "nitro gtt at 20 mcg/min", "vasopressin 0.04 units/min",
)
LABS: tuple[str, ...] = (
    "K 4.1", "Cr 1.2", "INR 2.5", "WBC 12.3", "Hgb 9.8", "Na 134", "BUN 28", "lactate 2.1", "troponin <0.01",
    "BNP 850", "A1c 7.9%", "TSH 2.3", "plt 210", "glucose 182", "Mg 1.8", "phos 3.2", "ALT 45", "AST 38",
    "lipase 60", "pH 7.32", "pCO2 48", "HCO3 22", "K 3.4", "Cr 2.7", "INR 1.1", "WBC 4.5", "Hgb 13.1",
    "Na 141", "Ca 8.9", "albumin 2.9", "CRP 112", "ESR 54", "ferritin 22", "PTT 38", "D-dimer 1.9",
)
VITALS: tuple[str, ...] = (
    "BP 120/80", "HR 88", "T 98.6", "RR 18", "SpO2 96% on 2L NC", "Tmax 101.2", "MAP 65", "CVP 12",
    "wt 82.4 kg", "BP 142/91", "HR 112", "T 37.9 C", "RR 24", "SpO2 91% RA", "BP 98/54", "HR 54",
)
SCORES: tuple[str, ...] = (
    "GCS 15", "NYHA III", "Apgar 8/9", "Gleason 3+4", "CHA2DS2-VASc 4", "Wells score 2", "MELD 18",
    "RASS -1", "CURB-65 of 2", "ASA class III", "Braden 14", "Morse fall score 45", "pain 4/10", "EF 35%",
    "Mallampati II", "NIHSS 3", "HAS-BLED 2", "Child-Pugh B", "ECOG 1", "PHQ-9 of 12",
)
VARIANTS: tuple[str, ...] = (
    "g.7578395G>C", "c.35G>A", "p.V600E", "KRAS G12C", "BRCA1 c.68_69delAG", "EGFR L858R", "JAK2 V617F",
    "c.1521_1523delCTT", "HFE C282Y", "Factor V Leiden", "MTHFR C677T",
)
LEVELS: tuple[str, ...] = ("C5-C6", "L4-L5", "L5-S1", "T12", "C3-C4", "T6-T7", "L2")
DEVICES: tuple[str, ...] = (
    "BiPAP", "Impella CP", "HeartMate 3 LVAD", "PleurX catheter", "Dexcom G6", "Omnipod", "Medtronic ICD",
    "PICC line", "Mepilex dressing", "Wound VAC", "Passy-Muir valve", "Hoyer lift", "SCDs",
)
FREQS: tuple[str, ...] = ("q6h", "q4h PRN", "BID", "TID", "qHS", "q2h turns", "q1h neuro checks", "QID")
TIMES: tuple[str, ...] = ("0630", "0800", "1400", "14:30", "2200", "0315", "1900", "06:45", "11:20", "1730")

# ---------------------------------------------------------------------------------------------------
# Templates. A section is (header, sentence pool, min sentences, max sentences, joiner). Slots:
# names {pt} {pt_full} {pt_last} {pt_first} {pt_ini} {dr} {dr_last} {dr_full} {dr_sig} {dr2} {pcp} {rn}
# {rel} {rel_name} {rel_full} {relation}; dates {date} {date_short} {adm} {dc} {visit} {dob} {prior} {fu}
# {monyr} {theday} {weekday} {dt}; contacts/IDs {phone} {rel_phone} {clinic_phone} {fax} {pager} {email}
# {rel_email} {dr_email} {url} {ip} {mrn} {ssn} {acct} {accession} {npi} {dea} {member} {serial};
# places/orgs {addr_line} {clinic_addr} {hosp_addr} {city} {state} {zip} {country} {hosp} {hosp2} {clinic}
# {employer} {pharmacy}; untagged {age} (tagged only when > 89) {age_other} {year} {time} {sex} {man}
# {pron} {Pron} {poss} {Poss} and the clinical pools {epo_sign} {epo_dx} {epo_dev} {epo_proc} {drug}
# {drip} {lab} {vitals} {score} {variant} {level} {device} {dx} {pmh} {cc} {proc} {proc_short} {service}
# {exam} {job}.

Section = tuple[str, str, int, int, str]

POOLS: dict[str, tuple[str, ...]] = {
    # --- ICU nursing note (rendered in capitals)
    "icu_open": (
        "NURSING NOTE 0700-1900. PT IS A {age} YO {sex} ADMITTED FROM {hosp} ED ON {adm} W/ {dx}.",
        "NSG PROGRESS NOTE {dt}. {pt_ini} {age}{sex} POD #2 S/P {proc}.",
        "PT {pt_last} ({age} YO) RECEIVED FROM {rn} @{time}, REPORT GIVEN AT BEDSIDE.",
        "MICU NSG NOTE {date_short}. PT {pt} ADMITTED FOR {dx}, HX {pmh}.",
        "CCU NSG 7P-7A. {age} YO {sex} W/ {dx}, TRANSFERRED FROM {hosp2} ON {adm}.",
        "SICU NURSING {visit}: {pt_full}, MRN {mrn}, HD #3 FOR {dx}.",
    ),
    "icu_neuro": (
        "PT ALERT, A&O X3, PERRLA.", "{score}.", "MAE, FOLLOWS COMMANDS.", "SEDATED ON PROPOFOL GTT AT 20 MCG/KG/MIN, RASS -2.",
        "PT INTERMITTENTLY CONFUSED OVERNIGHT, REORIENTED EASILY.", "CIWA 4, NO ATIVAN NEEDED.",
        "HX {epo_dx}, AT BASELINE PER FAMILY.", "PAIN 6/10 RELIEVED W/ {drug}.", "Q1H NEURO CHECKS UNCHANGED.",
        "NEG {epo_sign}.", "WILL CONT TO MONITOR MENTAL STATUS.", "DENIES HA. NO FOCAL DEFICITS.",
        "GCS 14 (E4V4M6) @{time}.", "SLEPT 3-4 HRS, MELATONIN GIVEN.", "SPEECH CLEAR, GRIPS EQUAL.",
    ),
    "icu_cv": (
        "NSR 80S-90S, NO ECTOPY.", "{vitals}, {vitals}.", "AFIB RVR TO 140S @{time}, {drug} GIVEN W/ EFFECT.",
        "K 3.3 REPLETED W/ 40 MEQ KCL.", "{lab}, {lab} THIS AM.", "+2 PEDAL EDEMA, PULSES PALPABLE.",
        "{drip}, WEANING AS TOL.", "{epo_dev} IN PLACE, CI 2.4.", "HR ROSE TO 120S W/ ACTIVITY.",
        "SBP 90S, MAP >65, NO PRESSORS.", "BLACK TARRY STOOL X1, HCT SENT.", "TELE: SINUS TACH 100S.",
        "{device} SITE C/D/I.", "MG 1.6 REPLETED W/ 2G IV.", "PLAN FOR TEE/DCCV ON {date_short}.",
    ),
    "icu_resp": (
        "LS CLEAR/DIM BASES, 2L NC SATS 95-98%.", "ON BIPAP OVERNIGHT, TOLERATED WELL.",
        "VENT: AC 450/14/+5/40%, SATS 96%.", "SXN FOR MOD AMT THICK GREEN SPUTUM.", "{vitals}.",
        "CXR @{time} W/ IMPROVED EFFUSION.", "IS TO 1000, ENCOURAGED C&DB.", "RR 20S, NO DISTRESS, NAD.",
        "ABG 7.32/48/88, VENT CHANGES PER RT.", "SBT @{time}, PASSED, EXTUBATED TO 4L NC.",
    ),
    "icu_gi": (
        "ABD SOFT, +BS, TOL CLEAR LIQ.", "{epo_dev} DRAINING CLEAR YELLOW URINE 40-60CC/HR.",
        "BM X1 BROWN FORMED.", "NPO AFTER MN FOR {proc}.", "{lab}. {drug}.", "TF @ 50CC/HR VIA DHT.",
        "FOLEY CATHETER D/C'D @{time}, DTV.", "INS/OUTS 1.2L/2.1L, -900CC.", "FRANK BLOOD IN NGT, MD AWARE.",
        "FSBG 180-220, COVERED PER SSI.", "JP DRAINING SEROSANG 30CC/SHIFT.",
    ),
    "icu_skin": (
        "SACRUM INTACT, {device} APPLIED.", "BRADEN 13, Q2H TURNS.", "R AC PIV 20G, L IJ TLC DSG C/D/I.",
        "STAGE 2 PI TO COCCYX, WOUND RN CONSULTED.", "SKIN WARM, DRY, INTACT.", "MIDLINE INCISION W/ STAPLES, C/D/I.",
    ),
    "icu_social": (
        "{rel} CALLED {rel_phone}, UPDATED ON POC.", "{rel} AT BEDSIDE MOST OF SHIFT.",
        "SEEN BY {dr_last} @{time}, AWARE OF {lab}.", "{dr2} (RENAL) PAGED @{time} RE: UOP, {pager}.",
        "{rel_name} IS HCP, PHONE {rel_phone}.", "PT'S {relation} {rel_name} WILL VISIT TOMORROW.",
        "SW CONSULT PLACED, PT LIVES ALONE IN {city}.", "CHAPLAIN VISITED. FAMILY HOPEFUL.",
        "{dr_last} NOTIFIED OF {lab} @{time}, NEW ORDERS RECEIVED.", "PT'S {relation} ASKED TO BE CALLED AT {rel_phone}.",
        "MAY TRANSFER TO {hosp2} PER FAMILY REQUEST.",
    ),
    "icu_plan": (
        "CONT CURRENT POC.", "WEAN {drip} AS TOL.", "AM LABS, CXR.", "POSS TRANSFER TO FLOOR {date_short}.",
        "MAY NEED {proc} PER {dr_last}.", "CONT {drug}.", "WILL F/U W/ {dr2} IN AM.", "FALL PRECAUTIONS.",
        "FAMILY MTG {dt} W/ {dr_last}.",
    ),
    "icu_sign": ("-- {rn}", "{rn} {dt}", "SIGNED {rn} @{time}"),
    # --- discharge summary
    "dc_header": (
        "DISCHARGE SUMMARY\n\nPatient: {pt_full}    MRN: {mrn}\nDOB: {dob}    Age: {age}\n"
        "Admission Date: {adm}    Discharge Date: {dc}\nAttending: {dr_sig}\nService: {service}\n",
        "{hosp}\nDISCHARGE SUMMARY\nName: {pt_full}\nMedical Record #: {mrn}    Account #: {acct}\n"
        "Date of Birth: {dob}\nAdmitted: {adm}\nDischarged: {dc}\nAttending Physician: {dr_sig}\n",
        "DISCHARGE SUMMARY\nPATIENT NAME: {pt_full}\nMRN: {mrn}  DOB: {dob}  SSN: {ssn}\n"
        "ADMIT: {adm}  DISCHARGE: {dc}\nPCP: {pcp}\n",
    ),
    "dc_hpi_lead": (
        "{pt_last} is a {age} yo {man} with a history of {pmh} who presented to the {hosp} ED on {adm} with {cc}.",
        "{pt_full} is a {age}-year-old {man} with {pmh}, admitted on {adm} from {hosp2} for {dx}.",
        "Patient is a {age} yo {sex} with {pmh} who presents with {cc}.",
    ),
    "dc_hpi": (
        "{Pron} was in {poss} usual state of health until {theday}, when {pron} developed {cc}.",
        "{Pron} was seen by {poss} PCP, {pcp}, at {clinic} on {date_short} and started on {drug}.",
        "In the ED, {vitals}, {vitals}. Labs notable for {lab}, {lab}, {lab}.",
        "{Pron} had a {proc} at {hosp2} in {year}.", "Of note, {pron} was hospitalized in {monyr} for {dx}.",
        "Per {poss} {relation}, {pron} had been more confused for several days.",
        "{Pron} reports taking {drug} and {drug} at home.", "A Bruce protocol stress test was negative in {year}.",
        "{Pron} denies fevers or chills and expressed hope to return home soon.",
        "EMS found {obj} on the floor at home in {city}; down time unknown.",
        "{Pron} was transferred from {hosp2} on {adm} for higher level of care.",
        "{Poss} {relation} {rel_name} reports {pron} will not eat and has lost 10 lbs since {monyr}.",
        "ECG showed a Brugada pattern without acute ST changes. Troponin peaked at 0.45.",
    ),
    "dc_pmh": (
        "{pmh}.", "{epo_dx}, diagnosed {year}.", "{proc_short} {year}.", "{dx} in {monyr}.", "Gout.",
        "Depression, on Lexapro 10 mg daily.", "Osteoarthritis s/p R TKA {year}.", "Colon polyps, last colonoscopy {year}.",
        "Lumbar stenosis at {level}.", "Hypothyroidism.",
    ),
    "dc_social": (
        "Lives with {poss} {relation} {rel_name} in {city}.", "Lives alone in an apartment in {city}, {state}.",
        "Retired {job}; previously worked at {employer}.", "Works as a {job} at {employer}.",
        "Former smoker, 30 pack-years, quit in {year}.", "Drinks 2-3 beers on weekends. No illicit drugs.",
        "Emigrated from {country} in {year}; speaks Spanish and English.", "Independent in ADLs, uses a cane.",
        "Health care proxy is {poss} {relation}, {rel_full} ({rel_phone}).",
    ),
    "dc_exam": (
        "Gen: NAD, pleasant.", "{vitals}, {vitals}, {vitals}.", "HEENT: MMM, no JVD.", "CV: RRR, 2/6 SEM at RUSB.",
        "Lungs: bibasilar crackles.", "Abd: soft, mild RUQ tenderness, {epo_sign} negative.",
        "Ext: 1+ edema bilaterally.", "Neuro: A&O x3, CN II-XII intact, {epo_sign} absent.",
        "Skin: no rashes. {epo_dev} site clean.",
    ),
    "dc_course": (
        "{Pron} was admitted to the {service} service and started on {drug}.",
        "Cardiology ({dr2}) was consulted on {date_short}; echo showed EF 35%.",
        "{Pron} underwent {proc} on {date} without complication.", "Cr 2.7 on admission improved to 1.4 by discharge.",
        "Course complicated by {dx} on hospital day 3, treated with {drug}.", "{Pron} was diuresed with {drug}.",
        "A {epo_dev} was placed on {date_short} and removed prior to discharge.", "Genetics returned {variant}.",
        "MRI spine showed disc protrusion at {level} without cord compression.", "Pain controlled with {drug}.",
        "PT/OT evaluated and recommended rehab at {clinic}.", "Family meeting held on {date_short} with {rel}.",
        "{Pron} was seen by {dr2} who recommended {drug} and outpatient follow-up.",
        "White count trended down from 14.2 to 9.1.", "Frank discussion held about goals of care; remains full code.",
        "Anticoagulation was held for a Mallory-Weiss tear and resumed on {date_short}.",
        "Blood cultures from {date_short} grew MSSA; ID recommended {drug} for 6 weeks.",
        "Surgery ({dr2}) performed a {epo_proc} on {date_short}; pathology pending.",
        "{Pron} was briefly transferred to the MICU on {date_short} for hypotension requiring {drip}.",
        "Will need repeat {lab} at follow-up. May resume {drug} if stable.",
    ),
    "dc_meds": (
        "DISCHARGE MEDICATIONS:\n1. {drug}\n2. {drug}\n3. {drug}\n4. {drug}\n",
        "Discharge medications: {drug}; {drug}; {drug}.\n",
        "MEDICATIONS ON DISCHARGE:\n- {drug}\n- {drug}\n- {drug}\n- {drug}\n- {drug}\n",
        "DISCHARGE MEDICATIONS:\n1. {drug}\n2. {drug}\n3. {drug}\n4. {drug}\n5. {drug}\n6. {drug}\n7. {drug}\n",
    ),
    "dc_fu": (
        "Follow up with {pcp} at {clinic} on {fu}. Call {clinic_phone} with questions.",
        "Follow-up: {dr2}, {clinic}, {fu} at {time}. Labs ({lab} recheck) in 1 week.",
        "Discharged to home with {relation} ({rel_name}, {rel_phone}). VNA to visit.",
        "Discharged to {clinic} for rehab. Contact: {rel_full}, {rel_phone}.",
        "Results pending at discharge will be sent via MyChart and to {pcp}.",
        "Condition at discharge: stable. Diet: 2 g sodium. Activity: as tolerated with walker.",
    ),
    "dc_sign": (
        "\n{dr_sig}\nDictated {dt}  Transcribed {date}\n", "\nElectronically signed by {dr_sig} on {dt}.\n",
        "\n{dr_sig}, NPI {npi}\ncc: {pcp}\n", "\n{dr_sig}\nDEA {dea}\n",
    ),
    # --- progress note (SOAP)
    "pn_header": (
        "PROGRESS NOTE  {visit}\n{pt_full}  MRN {mrn}\n", "Hospital Day #4 - {visit}\nPatient: {pt_full}\n",
        "{service} Progress Note\nDate of service: {visit}\n",
        "Daily Progress Note - {pt_full} ({age} yo {sex}) - {visit}\n",
        "{clinic} - Clinic Visit {visit}\n{pt_full}, DOB {dob}\n",
    ),
    "pn_s": (
        "Pt reports feeling better today, pain 3/10.", "No acute events overnight.",
        "{Pron} slept poorly; c/o {cc}.", "Tolerating diet. +BM. +flatus.", "Denies CP, SOB, N/V.",
        "{Poss} {relation} {rel_name} at bedside, asking about discharge.",
        "Pt states {pron} will try to walk more today.", "Reports dark brown urine since {weekday}.",
        "Patient wants to go home by {fu}.", "Mood improved; hopeful about rehab.",
        "Here for follow-up of {dx} after discharge from {hosp} on {date}.",
        "Since last visit on {prior}, {pron} has had two falls.", "Reports adherence to {drug}.",
        "{Pron} ran out of {drug} on {theday}.", "Has been checking BP at home, 130s-140s/80s.",
    ),
    "pn_o": (
        "{vitals}, {vitals}, {vitals}, {vitals}.", "Gen: NAD, A&O x3.", "CV: RRR, no m/r/g.",
        "Lungs: CTAB, no wheezes.", "Abd: soft, NT/ND, {epo_sign} negative.", "Ext: no edema. {epo_sign} neg.",
        "Labs: {lab}, {lab}, {lab}, {lab}.", "Micro: BCx {date_short} NGTD.", "I/O: 1.8L/2.4L.",
        "Imaging: CXR {date_short} with small R effusion.", "Tele: NSR, occasional PVCs.",
        "Neuro: strength 5/5 throughout, {epo_sign} negative.", "Wound: JP drain with 20 mL serous output.",
        "Echo ({date_short}): EF 55%, mild MR.",
    ),
    "pn_a": (
        "{age} yo {sex} with {pmh} admitted with {dx}, improving.", "1. {dx}: continue {drug}.",
        "2. {dx}: {lab}, trend. Continue {drug}.", "3. Hx {epo_dx}: stable, no changes.",
        "4. DVT ppx: {drug}.", "5. {epo_dx}: continue {drug}, neurology follow-up at {clinic}.",
        "Spine: {level} stenosis, outpatient follow-up.", "May need repeat {proc} if {lab} worsens.",
        "Will discuss with {dr2} regarding {proc}.", "Code: full (confirmed with pt and {relation}).",
        "Mark for discharge planning; CM to arrange {device}.",
        "Dispo: likely home {fu} pending PT eval; d/w {dr_last}.", "RTC in 4 weeks, sooner PRN.",
    ),
    "pn_sign": (
        "\n{dr_sig}\n{pager}\n", "\n-- {dr_sig} {time}\n", "\nSeen and examined with {dr_last}. {dr_sig}\n",
        "\n{dr_sig}\n",
    ),
    # --- radiology
    "rad_header": (
        "EXAM: {exam}\nACCESSION: {accession}\nDATE: {dt}\nPATIENT: {pt_full}  MRN: {mrn}  DOB: {dob}\n",
        "{hosp} - Department of Radiology\n{exam}\nAcc# {accession}  Exam date: {visit}\n",
        "RADIOLOGY REPORT\nName: {pt_full}\nMRN: {mrn}\nExam: {exam}\nOrdering: {dr}\nDate: {visit}\n",
    ),
    "rad_hist": (
        "CLINICAL HISTORY: {age} yo {sex} with {cc}.", "INDICATION: {dx}; r/o {dx}.",
        "HISTORY: Hx {epo_dx}, {pmh}.", "Ordered by {dr} for {cc} x 3 days.",
    ),
    "rad_comp": (
        "COMPARISON: {exam} dated {prior}.", "COMPARISON: None.", "COMPARISON: Outside study from {hosp2}, {monyr}.",
        "COMPARISON: {prior}.",
    ),
    "rad_find": (
        "Lungs are clear without focal consolidation.", "No pleural effusion or pneumothorax.",
        "Heart size is normal. {epo_dev} is unchanged in position.", "Mild degenerative changes at {level}.",
        "A 6 mm nodule in the right upper lobe is stable since {year}.", "Small hiatal hernia.",
        "Sternotomy wires and {epo_dev} noted.", "No acute fracture. Disc height loss at {level}.",
        "Gallbladder wall thickening with positive sonographic Murphy sign.", "Liver is normal in size.",
        "Trace ascites. Spleen is unremarkable.", "Vascular calcifications are noted.",
        "Findings were discussed with {dr} by telephone at {time} on {date_short}.",
        "Postsurgical changes of {epo_proc}.", "Pacemaker (serial {serial}) leads in standard position.",
        "Bibasilar atelectasis. Tip of right IJ catheter at the cavoatrial junction.",
        "Moderate central canal stenosis at {level} with bilateral foraminal narrowing.",
        "Kidneys demonstrate no hydronephrosis. Bladder is decompressed around a {epo_dev}.",
    ),
    "rad_imp": (
        "IMPRESSION:\n1. No acute cardiopulmonary process.\n2. Stable {level} degenerative disease.",
        "IMPRESSION: Findings consistent with {dx}. Recommend follow-up CT in 3 months.",
        "IMPRESSION:\n1. {dx}.\n2. Recommend correlation with {lab}.",
        "IMPRESSION:\n1. Acute cholecystitis.\n2. Critical result called to {dr} at {time} on {date_short},"
        " read back confirmed.",
    ),
    "rad_sign": (
        "\nDictated by: {dr_sig}\nElectronically signed: {dt}\n", "\n{dr_sig}\nSigned {dt}\n",
        "\nAttending radiologist: {dr_sig} ({dr_email})\n",
    ),
    # --- referral letter
    "ref_header": (
        "{clinic}\n{clinic_addr}\nTel {clinic_phone}  Fax {fax}\n{url}\n\n{visit}\n\n",
        "{clinic}\n{clinic_addr}\nPhone: {clinic_phone}\n\n{visit}\n\n",
    ),
    "ref_to": (
        "{dr_full}\n{hosp}\n{hosp_addr}\n\nRe: {pt_full}, DOB {dob}, MRN {mrn}\n\n",
        "To: {dr_full}, {hosp}\nRE: {pt_full} (DOB: {dob})\n\n",
        "{dr_full}\n{hosp}\n\nRE: {pt_full}\nDate of birth: {dob}\nAddress: {addr_line}\n\n",
    ),
    "ref_salute": ("Dear Dr. {dr_last_only},\n\n", "Dear {dr_first_only},\n\n", "Dear Colleague,\n\n"),
    "ref_lead": (
        "Thank you for seeing {pt_last}, a pleasant {age}-year-old {man} whom I follow for {pmh}.",
        "I am referring {pt_full} ({age} yo {sex}) for evaluation of {dx}.",
        "I saw {pt_last} in clinic on {date} and would appreciate your opinion.",
    ),
    "ref_body": (
        "{Pron} was seen in our office on {date} for {cc}.", "{Poss} exam was notable for a positive {epo_sign}.",
        "Recent labs show {lab} and {lab}.", "{Pron} is currently taking {drug} and {drug}.",
        "A {proc} performed at {hosp2} in {monyr} was unremarkable.", "{Pron} completed a Bruce protocol in {year}.",
        "{Pron} lives with {poss} {relation} in {city}, {state}, and works at {employer}.",
        "Family history is notable for {epo_dx} in {poss} mother, who died at {age_other}.",
        "I would appreciate your evaluation regarding {dx} and possible {proc}.",
        "{Pron} can be reached at {phone} or {email}.", "Genetic testing showed {variant}.",
        "{Pron} emigrated from {country} in {year}.", "Insurance member ID {member}.",
        "{Pron} was previously followed by {dr2} at {hosp2} until {monyr}.",
        "An MRI on {prior} showed changes at {level}.", "{Poss} {relation}, {rel_full}, will accompany {obj}.",
        "{Pron} has tried {drug} and {drug} without relief.", "Vitals today: {vitals}, {vitals}.",
        "{Pron} prefers appointments on {weekday} afternoons.",
    ),
    "ref_close": (
        "Please do not hesitate to contact me with any questions.\n\nSincerely,\n\n{dr_sig}\n{clinic}\n{dr_email}\n",
        "Thank you for your help with {poss} care.\n\nBest regards,\n{dr_sig}\nNPI {npi}\n",
        "With thanks,\n\n{dr_sig}\ncc: {pt_full}, {addr_line}\n",
    ),
    # --- telephone encounter
    "tel_header": (
        "TELEPHONE ENCOUNTER\n{dt}\nPatient: {pt_full}  MRN: {mrn}\n", "Phone note - {dt}\n",
        "Telephone Encounter  {clinic}\nDate: {visit}  Caller: {rel_full} ({relation})\n",
        "Nurse Triage Call {dt}\n{pt_full}, {age} yo {sex}, DOB {dob}\n",
    ),
    "tel_body": (
        "{Poss} {relation} {rel_name} called at {time} stating pt has had {cc} since {weekday}.",
        "Pt called from {phone} requesting refill of {drug}.",
        "Pt reports {vitals} at home this morning.", "Advised to hold {drug} until seen.",
        "Discussed with {dr_last}, who recommends {drug}.", "Appointment made for {fu} with {dr}.",
        "Pt verified identity with DOB {dob}.", "Call back number: {phone}.", "Left message at {rel_phone}.",
        "Pt asked to send photos through MyChart.", "Will call pt back with {lab} result.",
        "Pt's {relation} can be reached at {rel_phone} or {rel_email}.",
        "Portal message sent from IP {ip}; identity confirmed by phone.",
        "Pharmacy ({pharmacy}) faxed request from {fax}.", "Pt states {pron} may go to {hosp} ED if worse.",
        "Told to go to ED if CP, SOB.", "Pt voiced understanding. NAD on phone.",
        "Pt was seen at urgent care on {date_short} and given {drug}.",
        "Prior auth for {drug} submitted; member ID {member}.", "Home health nurse reports {vitals}, {vitals}.",
        "Scheduled for {proc} on {fu} at {hosp}; prep instructions mailed to {addr_line}.",
    ),
    "tel_sign": ("-- {rn}", "{rn} {dt}", "Routed to {dr_last}. {rn}"),
}

ICU_SECTIONS: tuple[Section, ...] = (
    ("", "icu_open", 1, 1, " "), ("NEURO: ", "icu_neuro", 3, 6, " "), ("CV: ", "icu_cv", 3, 7, " "),
    ("RESP: ", "icu_resp", 2, 4, " "), ("GI/GU: ", "icu_gi", 2, 4, " "), ("SKIN: ", "icu_skin", 0, 3, " "),
    ("SOCIAL: ", "icu_social", 2, 4, " "), ("PLAN: ", "icu_plan", 1, 4, " "), ("", "icu_sign", 1, 1, " "),
)
DC_SECTIONS: tuple[Section, ...] = (
    ("", "dc_header", 1, 1, ""), ("\nHISTORY OF PRESENT ILLNESS:\n", "dc_hpi_lead", 1, 1, ""), (" ", "dc_hpi", 2, 7, " "),
    ("\n\nPAST MEDICAL HISTORY:\n", "dc_pmh", 2, 6, "\n"), ("\n\nSOCIAL HISTORY:\n", "dc_social", 1, 4, " "),
    ("\n\nEXAM ON ADMISSION:\n", "dc_exam", 2, 6, " "), ("\n\nHOSPITAL COURSE:\n", "dc_course", 4, 12, " "),
    ("\n\n", "dc_meds", 1, 1, ""), ("\nFOLLOW-UP:\n", "dc_fu", 1, 4, "\n"), ("", "dc_sign", 1, 1, ""),
)
PN_SECTIONS: tuple[Section, ...] = (
    ("", "pn_header", 1, 1, ""), ("S: ", "pn_s", 3, 7, " "), ("\nO: ", "pn_o", 4, 10, " "),
    ("\nA/P: ", "pn_a", 3, 10, "\n"), ("", "pn_sign", 1, 1, ""),
)
RAD_SECTIONS: tuple[Section, ...] = (
    ("", "rad_header", 1, 1, ""), ("\n", "rad_hist", 1, 2, " "), ("\n", "rad_comp", 1, 1, ""),
    ("\nTECHNIQUE: Standard protocol. Contrast: Omnipaque 100 mL IV.\n\nFINDINGS:\n", "rad_find", 4, 11, "\n"),
    ("\n\n", "rad_imp", 1, 1, ""), ("", "rad_sign", 1, 1, ""),
)
REF_SECTIONS: tuple[Section, ...] = (
    ("", "ref_header", 1, 1, ""), ("", "ref_to", 1, 1, ""), ("", "ref_salute", 1, 1, ""),
    ("", "ref_lead", 1, 1, ""), (" ", "ref_body", 4, 12, " "), ("\n\n", "ref_close", 1, 1, ""),
)
TEL_SECTIONS: tuple[Section, ...] = (
    ("", "tel_header", 1, 1, ""), ("", "tel_body", 3, 10, " "), ("\n", "tel_sign", 1, 1, ""),
)

#: Clinical queries: one-liners, mostly lowercase.
QUERIES: tuple[str, ...] = (
    "pt {pt} {age}{sex} c/o {cc} since {weekday}, hx {proc_short} {year} at {hosp}",
    "{age} yo {sex} {pt} w/ {dx}, on {drug}, {lab} - ok to hold before {proc_short} on {date_short}?",
    "can someone call {pt_first}'s {relation} back at {rel_phone} re: results",
    "dr {dr_last_only} - pt {pt} (mrn {mrn}) needs {drug} refill, pharmacy fax {fax}",
    "{pt} dob {dob} seen at {clinic} {date_short}, f/u {fu}?",
    "pls page {dr} {pager} re bed 12, {lab}",
    "is {pt} still on {drug}? {relation} says stopped {theday}",
    "{pt} {age}{sex} s/p {proc_short} {year}, hx {epo_dx}, wants appt w/ {dr_last} next wk",
    "mrn {mrn} - {lab}, {lab} - repeat in am? d/w {dr}",
    "pt from {city} {state} {zip} transferring from {hosp2}, eta {time}",
    "{rel_name} ({relation} of {pt}) asking for update, ph {rel_phone}",
    "{pt} {age}{sex} w/ {pmh} s/p fall {weekday}, ct head neg, {score}",
    "who is covering {pt}? {dr_last} out until {date_short}",
    "{pt} missed {proc_short} appt {date_short}, will call {phone}",
)

DX: tuple[str, ...] = (
    "CHF exacerbation", "community-acquired pneumonia", "NSTEMI", "COPD exacerbation", "DKA", "sepsis",
    "acute pancreatitis", "GI bleed", "AKI", "cellulitis", "PE", "syncope", "UTI", "acute cholecystitis",
    "afib with RVR", "hyponatremia", "small bowel obstruction", "stroke", "alcohol withdrawal", "C. diff colitis",
)
PMH: tuple[str, ...] = (
    "HTN, HLD, DM2", "CAD s/p CABG", "COPD on 2L home O2", "ESRD on HD MWF", "afib on Eliquis",
    "HFrEF (EF 25%)", "cirrhosis", "CKD stage 3", "breast cancer s/p lumpectomy", "Parkinson's disease",
    "Alzheimer's dementia", "OSA on CPAP", "RA on methotrexate", "Crohn's disease", "prior CVA",
)
CC: tuple[str, ...] = (
    "chest pain", "shortness of breath", "abdominal pain", "fevers and chills", "dizziness", "a fall",
    "productive cough", "leg swelling", "confusion", "nausea and vomiting", "black tarry stools", "back pain",
)
PROCS: tuple[str, ...] = (
    "cardiac catheterization", "EGD", "colonoscopy", "paracentesis", "thoracentesis", "TEE", "CABG",
    "laparoscopic cholecystectomy", "TURP", "Whipple procedure", "Nissen fundoplication", "ERCP", "PCI",
    "bronchoscopy", "IR drain placement", "Hartmann procedure", "kyphoplasty",
)
PROCS_SHORT: tuple[str, ...] = ("CABG", "PCI", "TKA", "THA", "lap chole", "TAVR", "ORIF", "EGD", "cath")
SERVICES: tuple[str, ...] = (
    "Medicine", "Cardiology", "General Surgery", "Hospitalist", "MICU", "Neurology", "Orthopedics", "Oncology",
)
EXAMS: tuple[str, ...] = (
    "CT CHEST W/O CONTRAST", "CT ABDOMEN/PELVIS WITH CONTRAST", "CXR PA AND LATERAL", "MRI LUMBAR SPINE",
    "RUQ ULTRASOUND", "CT HEAD W/O CONTRAST", "CTA CHEST PE PROTOCOL", "XR LEFT KNEE 3 VIEWS",
)
JOBS: tuple[str, ...] = (
    "teacher", "electrician", "truck driver", "nurse", "accountant", "machinist", "farmer", "cashier",
    "software engineer", "mail carrier", "construction worker", "hairdresser",
)
PHARMACY_FORMS: tuple[str, ...] = ("{p} Pharmacy", "{s} Drug", "{p} Apothecary")
