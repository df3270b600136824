"""regex step: HIPAA identifier shapes (dates, phones, IDs, SSN, email, URL, IP, ZIP, streets, ages > 89).

Modules: ``step`` (the registered ``regex`` step, its engine and the design notes), ``recognizer`` (the
``ClinicalRecognizer`` base and its pattern machinery), ``context`` (unit and measurement words shared by the
families), and one module per recognizer family: ``dates``, ``ages``, ``phones``, ``ids``, ``web`` (email, URL,
IP), ``locations``.
"""
