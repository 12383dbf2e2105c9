# The notebook package is tested from its source folder (python/), with the bundle that
# `make notebook` (scripts/notebook.mjs) wrote into python/attnviz/static/.
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "python"))
