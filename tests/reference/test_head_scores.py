"""The notebook's head scores (python/attnviz/heads.py, numpy: for attention computed elsewhere)
against `attnviz heads` (src/heads.rs, Rust: for our own forwards), on the CLI's own maps of all
three default models: encoder self-attention (MiniLM), the translator's three kinds, and a causal
decoder whose induction scores (measured by the CLI on a repeated sequence) are handed over.
Special tokens are the package's default guess from the token strings, which must be the
models' own on these texts for the numbers to agree."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from test_parity import BIN, ENPT, MINILM, ROOT, _need_binary, _need_model, rust_attend

# The module alone, not the package: attnviz/__init__.py defines the widget, which needs the
# front-end bundle (make notebook, from www/); these numbers need numpy only, and this suite
# does not rerun for a change in www/.
_spec = importlib.util.spec_from_file_location("attnviz_heads", os.path.join(ROOT, "python", "attnviz", "heads.py"))
_heads = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_heads)
guess_specials, score_block = _heads.guess_specials, _heads.score_block

SMOLLM2 = os.path.join(ROOT, "models", "smollm2")
SCORE_TOL = 2e-5  # Rust sums a row's entropy in f32, numpy in f64
NUMBERS = ("entropy", "broad", "first", "special", "previous", "next", "self", "delimiter", "induction")

CASES = [
    (MINILM, "The animal didn't cross the street because it was too tired."),
    (MINILM, "Paris is the capital of France, and Berlin is the capital of Germany."),
    (ENPT, "The cat sat on the mat."),
    (SMOLLM2, "The cat sat on the mat. The cat sat on the mat."),
]


def _model_arg(model_dir: str) -> str:
    ggufs = [f for f in os.listdir(model_dir) if f.endswith(".gguf")]
    return os.path.join(model_dir, ggufs[0]) if ggufs else model_dir


def rust_heads(model_dir: str, text: str) -> dict:
    _need_binary()
    proc = subprocess.run([BIN, "heads", "--model", _model_arg(model_dir), "--text", text, "--format", "json"],
                          cwd=ROOT, capture_output=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"attnviz heads exited {proc.returncode}: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return json.loads(proc.stdout)


@pytest.mark.parametrize("model_dir,text", CASES, ids=["minilm-0", "minilm-1", "en-pt", "smollm2"])
def test_numpy_head_scores_are_the_cli_heads_scores(model_dir, text):
    _need_model(model_dir)
    expected = rust_heads(model_dir, text)
    maps = rust_attend(_model_arg(model_dir), text)
    tokens = maps["tokens"]
    specials = guess_specials(tokens["source"] + tokens["target"])
    by_block = {}
    for s in expected["heads"]:
        by_block.setdefault((s["kind"], s["layer"]), []).append(s)
    assert len(by_block) == len(maps["attentions"])
    labels = set()
    for block in maps["attentions"]:
        want = by_block[(block["kind"], block["layer"])]
        side = block["key_side"]
        keys = tokens["source"] + tokens["target"] if side == "source_then_target" else tokens[side]
        a = np.asarray(block["data"], dtype=np.float32).reshape(block["shape"])
        induction = [s["induction"] for s in want] if want[0]["induction"] is not None else None
        got = score_block(a, block["kind"], block["layer"], keys, specials, induction)
        for g, w in zip(got, want, strict=True):
            where = f"{w['kind']} layer {w['layer']} head {w['head']}"
            for key in NUMBERS:
                if w[key] is None:
                    assert g[key] is None, f"{where}: {key} is {g[key]}, the CLI has none"
                else:
                    assert abs(g[key] - w[key]) <= SCORE_TOL, f"{where}: {key} {g[key]} vs the CLI's {w[key]}"
            assert (g["label"], g["kind"], g["layer"], g["head"]) == (w["label"], w["kind"], w["layer"], w["head"]), where
            assert abs(g["score"] - w["score"]) <= SCORE_TOL, where
            labels.add(g["label"])
    # The texts are chosen so that the labels differ between heads (a test of the label rules too).
    assert len(labels) >= 2, labels
