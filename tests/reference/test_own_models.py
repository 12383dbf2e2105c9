"""A user's own BERT, RoBERTa and DistilBERT folder (Hugging Face layout, no manifest.json), f32,
f16 and bf16, and a GPT-2 folder: the Rust CLI against the numpy references (reference.py,
reference_gpt2.py), ≤ 1e-4. The
folders are written by scripts/tiny_models.py into a temporary folder for this run (nothing
generated is kept in git)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import reference
import reference_gpt2
from test_parity import ATTN_TOL, BIN, EMB_TOL, ROOT, _blocks, _need_binary, assert_decode_top, rust_attend

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import tiny_models  # noqa: E402

TEXTS = ["The cat sat on the mat.", "The animal didn't cross the street because it was tired!", "zebra quux"]
# Indices in tiny_models.write_all's list of the BERT-family folders.
ENCODERS = {"bert": 0, "bert-f16": 1, "bert-bf16": 2, "roberta": 7, "roberta-f16": 8, "distilbert": 9, "distilbert-bf16": 10}
# A typed <pad> is RoBERTa's pad token (id padding_idx): it sits at position padding_idx and the
# tokens after it count on without it (transformers' create_position_ids_from_input_ids).
PAD_TEXT = "a <pad> cat sat on the mat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return tiny_models.write_all(str(tmp_path_factory.mktemp("own")))


@pytest.mark.parametrize("variant", ENCODERS.values(), ids=ENCODERS.keys())
@pytest.mark.parametrize("text", TEXTS + [PAD_TEXT])
def test_tiny_encoders_match_reference(folders, variant, text):
    """Maps ≤ 1e-4 and value norms ‖α f_h(x_j)‖ ≤ 1e-4 relative to their largest."""
    folder = folders[variant]
    rust, ref = rust_attend(folder, text, "--measure", "value-norm"), reference.attend(folder, text, measure="value-norm")
    assert rust["tokens"] == ref["tokens"]
    assert len(rust["tokens"]["source"]) > 3
    if variant in (ENCODERS["roberta"], ENCODERS["roberta-f16"]) and text == PAD_TEXT:
        assert "<pad>" in rust["tokens"]["source"], rust["tokens"]
    t = len(ref["tokens"]["source"])
    for name in ("attentions", "value_norms"):
        got_blocks = {(b["kind"], b["layer"]): b for b in rust[name]}
        assert got_blocks.keys() == {(b["kind"], b["layer"]) for b in ref[name]} == {("encoder_self", 0), ("encoder_self", 1)}
        for b in ref[name]:
            g = got_blocks[(b["kind"], b["layer"])]
            got = np.asarray(g["data"]).reshape(g["shape"])
            want = np.asarray(b["data"]).reshape(b["shape"])
            assert got.shape == want.shape == (4, t, t)
            err = float(np.abs(got - want).max())
            scale = 1.0 if name == "attentions" else max(1.0, float(np.abs(want).max()))
            assert err <= ATTN_TOL * scale, f"{name} {b['layer']}: max |Δ| {err}"
            # Not uniform: a forward that ignored the weights would not pass for a real one.
            assert name != "attentions" or float(want.max()) > 0.5
    emb = np.abs(np.asarray(rust["sentence_embedding"]) - np.asarray(ref["sentence_embedding"])).max()
    assert emb <= EMB_TOL


def test_roberta_reference_positions_are_transformers():
    """create_position_ids_from_input_ids(input_ids, padding_idx=1) on a hand-made row:
    non-pad tokens count from 2, a pad token stays at 1."""
    ids = np.array([0, 31, 1, 42, 2])
    assert reference.bert_position_ids(ids, 1).tolist() == [2, 3, 1, 4, 5]
    assert reference.bert_position_ids(ids, None).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("pair", [(0, 1), (0, 2), (7, 8), (9, 10)], ids=["bert-f16", "bert-bf16", "roberta-f16", "distilbert-bf16"])
def test_half_precision_is_the_rounded_f32(folders, pair):
    """The f16 and bf16 folders hold the f32 weights rounded: their maps differ a little, not
    entirely (bf16 keeps 8 bits of mantissa, f16 11)."""
    a, b = rust_attend(folders[pair[0]], TEXTS[0]), rust_attend(folders[pair[1]], TEXTS[0])
    da = np.asarray(a["attentions"][0]["data"])
    db = np.asarray(b["attentions"][0]["data"])
    assert 0 < float(np.abs(da - db).max()) < 0.1


# ----------------------------------------------------------------------------- GPT-2

GPT2 = 3  # index of tiny-gpt2 in tiny_models.write_all's list (then its f16 and bf16 copies)
GPT2_TEXTS = ["The cat sat on the mat.", "Once upon a time, there was a cat", "Hello 1 2 3 — café ☕"]
HIDDEN_TOL = 1e-4   # hidden states (the residual stream, O(1) values), max abs
PROB_TOL = 1e-4     # next-token probabilities, abs


def _decoder_maps(result: dict) -> dict[int, np.ndarray]:
    out = {}
    for b in result["attentions"]:
        assert b["kind"] == "decoder_self", b["kind"]
        out[b["layer"]] = np.asarray(b["data"], dtype=np.float64).reshape(b["shape"])
    return out


def _max_diff(got: dict, want: dict) -> float:
    assert sorted(got) == sorted(want) == [0, 1]
    worst = 0.0
    for layer, w in want.items():
        assert got[layer].shape == w.shape, f"layer {layer}: {got[layer].shape} != {w.shape}"
        worst = max(worst, float(np.abs(got[layer] - w).max()))
    return worst


def rust_step(folder: str, text: str, layer: int, head: int = 0) -> dict:
    _need_binary()
    proc = subprocess.run([BIN, "step", "--model", folder, "--text", text, "--kind", "decoder_self", "--layer", str(layer), "--head", str(head)],
                          cwd=ROOT, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    return json.loads(proc.stdout)


@pytest.mark.parametrize("variant", [0, 1, 2], ids=["f32", "f16", "bf16"])
@pytest.mark.parametrize("generate", [0, 4], ids=["prompt", "generate4"])
@pytest.mark.parametrize("text", GPT2_TEXTS)
def test_tiny_gpt2_matches_reference(folders, text, generate, variant):
    folder = folders[GPT2 + variant]
    extra = ["--generate", str(generate)] if generate else []
    rust = rust_attend(folder, text, *extra, "--measure", "value-norm")
    ref = reference_gpt2.attend(folder, text, generate, values=True, raw=True)
    assert rust["tokens"] == ref["tokens"]
    assert len(rust["tokens"]["source"]) > 3
    assert rust["generation"]["token_ids"] == ref["generation"]["token_ids"]
    got, want = _decoder_maps(rust), _decoder_maps(ref)
    t = len(ref["generation"]["token_ids"])
    for layer, w in want.items():
        assert w.shape == (4, t, t)
        assert float(w.max()) > 0.9  # peaked, not uniform: a forward that ignored the weights would not pass
        assert np.all(got[layer][:, np.triu(np.ones((t, t), dtype=bool), k=1)] == 0.0), "a query sees the future"
    err = _max_diff(got, want)
    assert err <= ATTN_TOL, f"attention max |Δ| {err}"
    norms = _max_diff({b["layer"]: np.asarray(b["data"]).reshape(b["shape"]) for b in rust["value_norms"]},
                      {b["layer"]: np.asarray(b["data"]).reshape(b["shape"]) for b in ref["value_norms"]})
    assert norms <= ATTN_TOL, f"value norms max |Δ| {norms}"
    probs = ref["_raw"]["next"]
    for g in rust["generation"]["next"]:
        assert abs(g["p"] - float(probs[g["id"]])) <= PROB_TOL, g
    assert [g["id"] for g in rust["generation"]["next"]][:1] == [int(np.argmax(probs))]


@pytest.mark.parametrize("layer", [0, 1])
def test_tiny_gpt2_hidden_states_match_reference(folders, layer):
    """The step view's block internals are the residual stream: the block's input (the hidden
    state after the previous layer, or the embeddings), x + attention, and ln_2 of it."""
    folder, text = folders[GPT2], GPT2_TEXTS[1]
    rust = rust_step(folder, text, layer, head=2)
    r = reference_gpt2.load(folder).generate(text)
    assert rust["block_norm"] == "pre_layer_norm"
    t, d = len(r["ids"]), 32
    for key in ("block_input", "residual", "normed"):
        got = np.asarray(rust[key]).reshape(t, d)
        err = float(np.abs(got - r[key][layer]).max())
        assert err <= HIDDEN_TOL, f"layer {layer} {key}: max |Δ| {err}"


def test_tiny_gpt2_loads_without_the_transformer_prefix(folders, tmp_path):
    """Names as GPT2Model saves them (no `transformer.`) give the same maps."""
    import shutil
    src = folders[GPT2]
    dst = tmp_path / "gpt2-bare"
    shutil.copytree(src, dst)
    w = reference_gpt2.read_safetensors(os.path.join(src, "model.safetensors"), np.float32)
    tiny_models.write_safetensors(str(dst / "model.safetensors"), {k.removeprefix("transformer."): v for k, v in w.items()})
    a, b = rust_attend(src, GPT2_TEXTS[0]), rust_attend(str(dst), GPT2_TEXTS[0])
    assert _max_diff(_decoder_maps(a), _decoder_maps(b)) == 0.0


# ----------------------------------------------------------------------------- opus-mt (HF Marian)

import reference_opus_mt  # noqa: E402

MARIAN_TEXTS = TEXTS + ["o o o o o o o o", "a dog ran and the cat sat"]
MARIAN_KINDS = ("encoder_self", "decoder_self", "cross")
MARIAN = 6  # index of tiny-marian in tiny_models.write_all's list


@pytest.mark.parametrize("text", MARIAN_TEXTS)
def test_tiny_marian_matches_reference(folders, text):
    """All three attention kinds and the greedy ids of the opus-mt folder, CLI against numpy."""
    folder = folders[MARIAN]
    rust, ref = rust_attend(folder, text), reference_opus_mt.attend(folder, text)
    assert rust["tokens"] == ref["tokens"]
    assert rust["stop_reason"] == ref["stop_reason"] and rust["output_text"] == ref["output_text"]
    # The generated ids: the target pieces of a Unigram vocabulary name them one to one.
    model = reference_opus_mt.OpusMt(folder)
    assert [model.tok.token_to_id(t) for t in rust["tokens"]["target"]] == ref["target_ids"]
    assert_decode_top(rust, model.forward(text)["probs"])
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
    rust = rust_attend(folders[MARIAN], text, "--measure", "value-norm")
    ref = reference_opus_mt.attend(folders[MARIAN], text, "value-norm")
    got = {(b["kind"], b["layer"]): b for b in rust["value_norms"]}
    for b in ref["value_norms"]:
        g = got[(b["kind"], b["layer"])]
        assert g["shape"] == b["shape"]
        err = float(np.abs(np.asarray(g["data"]) - np.asarray(b["data"])).max())
        assert err <= ATTN_TOL * max(1.0, float(np.abs(b["data"]).max())), f"{b['kind']} {b['layer']}: max |Δ| {err}"


def test_tiny_marian_covers_both_stop_reasons(folders):
    reasons = {rust_attend(folders[MARIAN], t)["stop_reason"] for t in MARIAN_TEXTS}
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


SHARDED = 11  # index of tiny-bert-sharded (tiny-bert's weights over two safetensors shards)


def test_a_sharded_checkpoint_is_the_same_model(folders):
    """tiny-bert-sharded holds tiny-bert's weights in model-00001-of-00002.safetensors and
    model-00002-of-00002.safetensors: the CLI loads it as one model with tiny-bert's maps, exactly."""
    assert not os.path.exists(os.path.join(folders[SHARDED], "model.safetensors"))
    one, sharded = rust_attend(folders[0], TEXTS[1]), rust_attend(folders[SHARDED], TEXTS[1])
    assert sharded["tokens"] == one["tokens"]
    assert [b["data"] for b in sharded["attentions"]] == [b["data"] for b in one["attentions"]]


def test_a_missing_shard_is_named(folders, tmp_path):
    """Without its second shard the folder is refused, naming the file that is missing."""
    broken = tmp_path / "two-shards-one-missing"
    shutil.copytree(folders[SHARDED], broken)
    os.remove(broken / "model-00002-of-00002.safetensors")
    _need_binary()
    out = subprocess.run([BIN, "attend", "--model", str(broken), "--text", "hi"], capture_output=True, text=True)
    assert out.returncode != 0
    assert "missing: model-00002-of-00002.safetensors" in out.stderr, out.stderr
