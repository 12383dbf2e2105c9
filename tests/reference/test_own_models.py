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


# ----------------------------------------------------------------------------- opus-mt (HF Marian)

import reference_opus_mt  # noqa: E402

MARIAN_TEXTS = TEXTS + ["o o o o o o o o", "a dog ran and the cat sat"]
MARIAN_KINDS = ("encoder_self", "decoder_self", "cross")


@pytest.mark.parametrize("text", MARIAN_TEXTS)
def test_tiny_marian_matches_reference(folders, text):
    """All three attention kinds and the greedy ids of the opus-mt folder, CLI against numpy."""
    folder = folders[3]
    rust, ref = rust_attend(folder, text), reference_opus_mt.attend(folder, text)
    assert rust["tokens"] == ref["tokens"]
    assert rust["stop_reason"] == ref["stop_reason"] and rust["output_text"] == ref["output_text"]
    # The generated ids: the target pieces of a Unigram vocabulary name them one to one.
    tok = reference_opus_mt.OpusMt(folder).tok
    assert [tok.token_to_id(t) for t in rust["tokens"]["target"]] == ref["target_ids"]
    rb, fb = _blocks(rust), _blocks(ref)
    assert rb.keys() == fb.keys() == {(k, i) for k in MARIAN_KINDS for i in (0, 1)}
    ts, tt = len(ref["tokens"]["source"]), len(ref["tokens"]["target"])
    for key, b in fb.items():
        got = np.asarray(rb[key]["data"]).reshape(rb[key]["shape"])
        want = np.asarray(b["data"]).reshape(b["shape"])
        assert got.shape == want.shape == (4, ts if key[0] == "encoder_self" else tt, tt if key[0] == "decoder_self" else ts)
        err = float(np.abs(got - want).max())
        assert err <= ATTN_TOL, f"{key}: max |Δ| {err}"
        if key[0] == "decoder_self":  # causal: nothing above the diagonal
            assert float(np.abs(np.triu(got, 1)).max()) == 0.0


@pytest.mark.parametrize("text", MARIAN_TEXTS[:2])
def test_tiny_marian_value_norms_match_reference(folders, text):
    """‖α f_h(x_j)‖ of the three kinds (the decoder's from a KV cache in Rust, from full passes here)."""
    rust = rust_attend(folders[3], text, "--measure", "value-norm")
    ref = reference_opus_mt.attend(folders[3], text, "value-norm")
    got = {(b["kind"], b["layer"]): b for b in rust["value_norms"]}
    for b in ref["value_norms"]:
        g = got[(b["kind"], b["layer"])]
        assert g["shape"] == b["shape"]
        err = float(np.abs(np.asarray(g["data"]) - np.asarray(b["data"])).max())
        assert err <= ATTN_TOL * max(1.0, float(np.abs(b["data"]).max())), f"{b['kind']} {b['layer']}: max |Δ| {err}"


def test_tiny_marian_covers_both_stop_reasons(folders):
    reasons = {rust_attend(folders[3], t)["stop_reason"] for t in MARIAN_TEXTS}
    assert reasons == {"eos", "max_length"}


def test_hf_sinusoid_is_the_transformers_layout():
    """sin of p/10000^(2i/d) in the first half, cos in the second (not Bergamot's d/2−1)."""
    t = reference_opus_mt.hf_sinusoid(3, 8)
    assert np.allclose(t[1], np.concatenate([np.sin(1 / 10000 ** (np.arange(4) / 4)), np.cos(1 / 10000 ** (np.arange(4) / 4))]))


# ----------------------------------------------------------------------------- opus-mt's tokenizer.json

import json  # noqa: E402

from tokenizers import Tokenizer  # noqa: E402

import opus_mt_tokenizer  # noqa: E402  (scripts/, on the path above)

ENPT_SPM = os.path.join(ROOT, "models", "en-pt", "vocab.enpt.spm")
SPM_TEXTS = ["How are you today?", "The cat sat on the mat.", "Ich möchte café crème — naïve façade.",
             "日本語のテキストと emoji 🎉", "“Curly quotes” and a naïve café.", "  two  spaces ﬁ ①"]


@pytest.mark.parametrize("shuffle", [False, True], ids=["spm-order", "vocab.json-order"])
def test_opus_mt_tokenizer_cuts_as_the_spm_with_vocab_json_ids(shuffle):
    """scripts/opus_mt_tokenizer.py on a real SentencePiece model (the en-pt one, whose own
    tokenizer.json agrees with it): the same pieces, numbered as vocab.json says."""
    pieces, _, _ = opus_mt_tokenizer.read_spm(ENPT_SPM)
    order = list(range(len(pieces)))
    if shuffle:
        np.random.default_rng(3).shuffle(order)
    vocab = {pieces[i][0]: n for n, i in enumerate(order)}
    mine = Tokenizer.from_str(json.dumps(opus_mt_tokenizer.build(ENPT_SPM, vocab)))
    ref = Tokenizer.from_file(os.path.join(ROOT, "models", "en-pt", "tokenizer.json"))
    for text in SPM_TEXTS:
        want = ref.encode(text, add_special_tokens=False)
        got = mine.encode(text, add_special_tokens=False)
        assert got.tokens == want.tokens, text
        assert got.ids == [vocab.get(t, vocab["<unk>"]) for t in want.tokens], text  # unknown characters: <unk>
    assert mine.token_to_id("</s>") == vocab["</s>"]
