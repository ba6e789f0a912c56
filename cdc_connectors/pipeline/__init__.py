"""Pipelines: a YAML pipeline file (Conduit's shape) -> a Spark job, run locally or submitted.

:mod:`~cdc_connectors.pipeline.config` reads and checks the file (errors name key and
line), :mod:`~cdc_connectors.pipeline.plan` is the Spark stage of one batch,
:mod:`~cdc_connectors.pipeline.runner` runs batch jobs and streaming queries with progress
and clean stops, :mod:`~cdc_connectors.pipeline.launch` starts the driver
(:mod:`~cdc_connectors.pipeline.driver`) for ``cdc-connectors run`` and ``submit``.
"""

from __future__ import annotations

from cdc_connectors.pipeline.config import Config, ConfigError, Pipeline, load, parse

__all__ = ["Config", "ConfigError", "Pipeline", "load", "parse"]
