"""Pipelines: config files, cdc-connectors run and submit."""
