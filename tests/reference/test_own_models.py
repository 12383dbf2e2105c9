"""A user's own BERT folder (Hugging Face layout, no manifest.json), f32, f16 and bf16: the Rust CLI
against the numpy reference, ≤ 1e-4. The folders are written by scripts/tiny_models.py into a
temporary folder for this run (nothing generated is kept in git)."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from test_parity import ATTN_TOL, EMB_TOL, ROOT, _blocks, ref_attend, rust_attend

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import tiny_models  # noqa: E402

TEXTS = ["The cat sat on the mat.", "The animal didn't cross the street because it was tired!", "zebra quux"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return tiny_models.write_all(str(tmp_path_factory.mktemp("own")))


@pytest.mark.parametrize("variant", [0, 1, 2], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("text", TEXTS)
def test_tiny_bert_matches_reference(folders, variant, text):
    folder = folders[variant]
    rust, ref = rust_attend(folder, text), ref_attend(folder, text)
    assert rust["tokens"] == ref["tokens"]
    assert len(rust["tokens"]["source"]) > 3
    rb, fb = _blocks(rust), _blocks(ref)
    assert rb.keys() == fb.keys() == {("encoder_self", 0), ("encoder_self", 1)}
    for key, b in fb.items():
        got = np.asarray(rb[key]["data"]).reshape(rb[key]["shape"])
        want = np.asarray(b["data"]).reshape(b["shape"])
        assert got.shape == want.shape == (4, len(ref["tokens"]["source"]), len(ref["tokens"]["source"]))
        err = float(np.abs(got - want).max())
        assert err <= ATTN_TOL, f"{key}: max |Δ| {err}"
        # Not uniform: a forward that ignored the weights would not pass for a real one.
        assert float(want.max()) > 0.5
    emb = np.abs(np.asarray(rust["sentence_embedding"]) - np.asarray(ref["sentence_embedding"])).max()
    assert emb <= EMB_TOL


@pytest.mark.parametrize("variant", [1, 2], ids=["f16", "bf16"])
def test_half_precision_is_the_rounded_f32(folders, variant):
    """The f16 and bf16 folders hold the f32 weights rounded: their maps differ a little, not
    entirely (bf16 keeps 8 bits of mantissa, f16 11)."""
    a, b = rust_attend(folders[0], TEXTS[0]), rust_attend(folders[variant], TEXTS[0])
    da = np.asarray(a["attentions"][0]["data"])
    db = np.asarray(b["attentions"][0]["data"])
    assert 0 < float(np.abs(da - db).max()) < 0.1
