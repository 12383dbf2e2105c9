"""The int8 path's own parity: MiniLM's int8 weights (`model.int8.safetensors`, what the page
loads by default), read by the numpy reference by hand (I8 tensors times their per-row F32
`_scale`, reference.read_safetensors), against `attnviz attend --weights int8`. Held to the f32
path's bound (1e-4 on every attention probability, the sentence embedding too), so a wrong
dequantisation or a wrong scale cannot hide inside int8's own drift from the f32 model (up to
7e-2, tests/int8.rs)."""
from __future__ import annotations

import numpy as np
import pytest

import reference
from test_parity import ATTN_TOL, BERT_SENTENCES, EMB_TOL, MINILM, _blocks, _need_model, rust_attend


@pytest.mark.parametrize("text", BERT_SENTENCES)
def test_int8_attention_and_embedding_match_the_reference(text):
    _need_model(MINILM)
    ref = reference.attend(MINILM, text, weights="int8")
    rust = rust_attend(MINILM, text, "--weights", "int8")
    assert rust["tokens"]["source"] == ref["tokens"]["source"]
    ref_b, rust_b = _blocks(ref), _blocks(rust)
    assert sorted(rust_b) == sorted(ref_b)
    worst = 0.0
    for key in sorted(ref_b):
        a = np.asarray(rust_b[key]["data"], dtype=np.float64).reshape(rust_b[key]["shape"])
        b = np.asarray(ref_b[key]["data"], dtype=np.float64).reshape(ref_b[key]["shape"])
        worst = max(worst, float(np.abs(a - b).max()))
    assert worst <= ATTN_TOL, f"int8 attention differs from the int8 reference by {worst:.3e}"
    emb = np.abs(np.asarray(rust["sentence_embedding"]) - np.asarray(ref["sentence_embedding"])).max()
    assert emb <= EMB_TOL, f"int8 sentence embedding differs by {emb:.3e}"


def test_int8_reference_is_not_the_f32_one():
    """The int8 reference reads the int8 file: its maps differ from the f32 reference's by int8's
    drift (so the test above compares int8 with int8, not f32 with f32)."""
    text = BERT_SENTENCES[0]
    f32 = _blocks(reference.attend(MINILM, text))
    int8 = _blocks(reference.attend(MINILM, text, weights="int8"))
    drift = max(float(np.abs(np.asarray(f32[k]["data"]) - np.asarray(int8[k]["data"])).max()) for k in f32)
    assert drift > 10 * ATTN_TOL, f"int8 and f32 references differ by only {drift:.3e}"
