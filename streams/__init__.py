"""Kafka I/O: faust app, agents, topics, settings, telemetry, CLI, replay, embedded broker."""
