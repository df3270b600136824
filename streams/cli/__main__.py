"""``python -m streams.cli ...`` runs the ``deidstream`` command line."""

from streams.cli import main

main()
