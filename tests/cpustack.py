"""The CPU stack every real-server test launches: the defaults of matrix/cpu-tiny.yaml (SGLang's
CPU engine, a tiny random-weight Llama, no downloads), read from that file so that a change
there reaches every test."""

import json
from pathlib import Path

import yaml

MATRIX = Path(__file__).resolve().parents[1] / "matrix" / "cpu-tiny.yaml"


def defaults(launch_timeout: int | None = None) -> str:
    """A 'defaults:' line for a test's matrix file (JSON is YAML's flow style)."""
    d = dict(yaml.safe_load(MATRIX.read_text())["defaults"])
    if launch_timeout is not None:
        d["launch_timeout"] = launch_timeout
    return "defaults: " + json.dumps(d) + "\n"
