"""The ``deidstream`` command line (entry point ``streams.cli:main``; ``python -m streams.cli`` runs it too).

One module per command group, each with a ``register(app)``; shared helpers in ``streams.cli._util``, which
the command modules import and never each other (tests/unit/streams/test_cli_layout.py checks it):

- ``engine``: detect, deid, synth, schemas export, dictionaries build (the pipeline on files, no Kafka);
- ``kafka``: worker, broker, produce, consume, replay, compare, config show;
- ``demo``: demo (the whole stream on one machine), samples (the same pipeline offline);
- ``bench``: bench (pipeline throughput), bench-kafka (through Kafka vs the pipeline alone);
- ``eval``: eval (scores against gold spans, reports);
- ``train``: train-ner.

Heavy imports (faust, aiokafka, torch, scipy, the pipeline) happen inside the commands, so
``deidstream --help`` stays fast.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import sys
from typing import Annotated

import typer

from schemas.errors import ConfigError, DeidError
from streams.cli import bench, demo, engine, kafka, train
from streams.cli import eval as evaluation
from streams.cli._util import EXIT_FAILED, EXIT_USAGE, err, hide_flag_types

#: ``pretty_exceptions_show_locals=False``: a traceback must not print local variables (note text).
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_show_locals=False,
                  help="Streaming de-identification of clinical notes.")
for _module in (engine, bench, demo, kafka, train, evaluation):
    _module.register(app)
hide_flag_types()


def _print_version(value: bool) -> None:
    if value:
        from processors.pipeline import PIPELINE_VERSION

        try:
            package = importlib.metadata.version("deidstream")
        except importlib.metadata.PackageNotFoundError:  # run from a checkout that is not installed
            package = "not installed"
        typer.echo(f"deidstream {package} (pipeline {PIPELINE_VERSION})")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Streaming de-identification of clinical notes."""


def main() -> None:
    logging.basicConfig(level=os.environ.get("DEID_LOG_LEVEL", "WARNING"), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        app()
    except ConfigError as exc:  # a usage error, as the commands that check their configuration first report it
        err.print(f"[red]config error[/] {exc}", markup=True, highlight=False)
        sys.exit(EXIT_USAGE)
    except DeidError as exc:  # coded, and never note text (schemas.errors): the message, not a traceback
        err.print(f"[red]error[/] {exc}", markup=True, highlight=False)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
