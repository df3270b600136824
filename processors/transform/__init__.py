"""transform step: tags, per-patient surrogates, per-patient date shift; builds the output model."""
