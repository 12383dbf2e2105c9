"""The paper's Transformer (models/paper/, trained by python/attnviz/paper_model.py): the Rust CLI
against the independent numpy reference (reference_opus_mt.py, float64, written from
transformers' MarianMTModel, sharing no code with the training script): the three attention kinds
≤ 1e-4, the value norms, the same greedy pieces and each decode step's five most probable tokens
with their probabilities (softmax of the logits) ≤ 1e-4; and the shipped weights translate
sentences of the grammar that training never saw as the grammar says, measured again here by the
reference's forward rather than by the training script's own."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import reference_opus_mt
from test_parity import ATTN_TOL, ROOT, _blocks, assert_decode_top, rust_attend

sys.path.insert(0, os.path.join(ROOT, "python", "attnviz"))
import paper_model  # noqa: E402  (its grammar and held-out sentences; numpy only)

PAPER = os.path.join(ROOT, "models", "paper")
KINDS = ("encoder_self", "decoder_self", "cross")
TEXTS = [
    paper_model.EXAMPLE,
    "A Big Dog takes the pretty flower with an old man.",
    "the woman washes the car in the new house .",
    "the zebra sees a cat",  # an unknown word: <unk>, whatever the model then makes of it
]


@pytest.fixture(scope="module")
def model():
    if not os.path.isfile(os.path.join(PAPER, "manifest.json")):
        pytest.fail(f"{PAPER} is missing: run `make models` (it trains the paper's Transformer)")
    return reference_opus_mt.OpusMt(PAPER)


@pytest.mark.parametrize("text", TEXTS)
def test_paper_model_matches_reference(model, text):
    rust, ref = rust_attend(PAPER, text, "--measure", "value-norm"), reference_opus_mt.attend(PAPER, text, "value-norm")
    assert rust["tokens"] == ref["tokens"]
    assert rust["output_text"] == ref["output_text"] and rust["stop_reason"] == ref["stop_reason"]
    assert [model.tok.token_to_id(t) for t in rust["tokens"]["target"]] == ref["target_ids"]
    assert_decode_top(rust, model.forward(text)["probs"])
    ts, tt = len(ref["tokens"]["source"]), len(ref["tokens"]["target"])
    for name in ("attentions", "value_norms"):
        got, want = _blocks({"attentions": rust[name]}), _blocks({"attentions": ref[name]})
        assert got.keys() == want.keys() == {(k, i) for k in KINDS for i in (0, 1)}
        for key, b in want.items():
            g = np.asarray(got[key]["data"]).reshape(got[key]["shape"])
            w = np.asarray(b["data"]).reshape(b["shape"])
            assert g.shape == w.shape == (4, ts if key[0] == "encoder_self" else tt, tt if key[0] == "decoder_self" else ts)
            err = float(np.abs(g - w).max())
            scale = 1.0 if name == "attentions" else max(1.0, float(np.abs(w).max()))
            assert err <= ATTN_TOL * scale, f"{name} {key}: max |Δ| {err}"
            if key[0] == "decoder_self":  # masked: no step sees a later one
                assert float(np.abs(np.triu(g, 1)).max()) == 0.0


def test_paper_model_translates_unseen_sentences(model):
    """200 sentences of the grammar that are not among the training ones (another seed),
    greedy-decoded by the reference: at least the bar the training script holds itself to."""
    _, held, _ = paper_model.datasets(0, paper_model.STEPS, paper_model.BATCH, 200)
    wrong = []
    for text, target in held:
        got = model.forward(text)["target_ids"]
        if got != target + [model.eos]:
            wrong.append((text, paper_model.detokenize(got), paper_model.detokenize(target)))
    assert 1 - len(wrong) / len(held) >= paper_model.THRESHOLD, wrong[:5]
    # The Rust core decodes them the same way (a sample: one process per sentence).
    for text, _ in held[:12]:
        assert rust_attend(PAPER, text)["output_text"] == reference_opus_mt.attend(PAPER, text)["output_text"], text


def test_paper_cross_attention_shows_the_alignment(model):
    """Last decoder layer, mean over heads: each content word reads the word it translates,
    across the adjective-noun reordering (preto ← black after gato ← cat)."""
    r = reference_opus_mt.attend(PAPER, paper_model.EXAMPLE)
    src, tgt = r["tokens"]["source"], r["tokens"]["target"]
    b = _blocks(r)[("cross", 1)]
    a = np.asarray(b["data"]).reshape(b["shape"]).mean(axis=0)
    read = {tgt[t]: src[int(a[t].argmax())] for t in range(len(tgt))}
    assert r["output_text"] == paper_model.EXAMPLE_TRANSLATION
    for pt, en in [("▁gato", "▁cat"), ("▁preto", "▁black"), ("▁bola", "▁ball"), ("▁vermelha", "▁red"), ("▁mesa", "▁table")]:
        assert read[pt] == en, read


def test_paper_training_backward_matches_finite_differences():
    """The training's hand-written backward pass, on a tiny float64 model of the same code: every
    tensor's gradient within 1e-4 (relative) of central differences, with and without label
    smoothing."""
    assert paper_model.gradcheck() < 1e-4
