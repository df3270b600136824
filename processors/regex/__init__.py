"""regex step: HIPAA identifier shapes (dates, phones, IDs, SSN, email, URL, IP, ZIP, streets, ages > 89)."""
