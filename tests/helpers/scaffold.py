"""A fixed recording time for scaffolded sources, and loading a scaffolded module from its file."""
from __future__ import annotations

import importlib.util
import sys
from datetime import datetime, timezone
from pathlib import Path

RECORDED_AT = datetime(2026, 11, 29, 6, 0, tzinfo=timezone.utc)


def load_module(path: Path, name: str, monkeypatch):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # pandera resolves annotations through it
    spec.loader.exec_module(module)
    return module
