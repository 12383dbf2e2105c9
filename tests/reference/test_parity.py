"""Parity between `attnviz attend --format json` (Rust) and the independent numpy reference.

Run from the repository root:
    .venv/bin/python -m pytest tests/reference -q
ATTNVIZ_BIN overrides the binary (default target/release/attnviz). Nothing is skipped: a missing
binary or missing model folder fails with a message saying what to do.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import reference  # noqa: E402

BIN = os.environ.get("ATTNVIZ_BIN", os.path.join(ROOT, "target", "release", "attnviz"))
if not os.path.isabs(BIN):
    BIN = os.path.join(ROOT, BIN)

MINILM = os.path.join(ROOT, "models", "minilm")
ENPT = os.path.join(ROOT, "models", "en-pt")

ATTN_TOL = 1e-4
EMB_TOL = 1e-4
ROW_SUM_TOL = 1e-5

# Shared with tests/int8.rs (int8 vs f32 drift on the same sentences).
with open(os.path.join(HERE, "bert_sentences.json"), encoding="utf-8") as _f:
    BERT_SENTENCES = json.load(_f)
MARIAN_SENTENCES = [
    "How are you today?",
    "The cat sat on the mat.",
    "Ich möchte café crème — naïve façade.",
    "日本語のテキストと emoji 🎉",
    "“Curly quotes” and a naïve café.",
    "The quick brown fox jumps over the lazy dog near the river bank.",
    # Greedy decoding repeats "o" until the length limit: stop_reason "max_length".
    "o o o o o o o o o o o o o",
]
CASES = [("minilm", MINILM, s) for s in BERT_SENTENCES] + [("en-pt", ENPT, s) for s in MARIAN_SENTENCES]
CASE_IDS = [f"{name}-{i}" for i, (name, _, _) in enumerate(CASES)]


def _need_model(model_dir: str) -> None:
    if not os.path.isdir(model_dir):
        pytest.fail(f"model folder {model_dir} is missing: run the models setup script first")


def _need_binary() -> None:
    if not (os.path.isfile(BIN) and os.access(BIN, os.X_OK)):
        pytest.fail(f"attnviz binary not found at {BIN}: build it with "
                    f"`cargo build --release --bin attnviz` or set ATTNVIZ_BIN")


@functools.lru_cache(maxsize=None)
def rust_attend(model_dir: str, text: str, *extra: str) -> dict:
    """`extra`: more CLI arguments (e.g. "--generate", "8")."""
    _need_binary()
    proc = subprocess.run([BIN, "attend", "--model", model_dir, "--text", text, "--format", "json", *extra],
                          cwd=ROOT, capture_output=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"attnviz exited {proc.returncode} for {text!r} {' '.join(extra)}: "
                    f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    try:
        return json.loads(proc.stdout.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        err = f"{e}: stdout starts {proc.stdout[:200]!r}"
    pytest.fail(f"attnviz attend did not print JSON for {text!r}: {err}")


@functools.lru_cache(maxsize=None)
def ref_attend(model_dir: str, text: str) -> dict:
    _need_model(model_dir)
    return reference.attend(model_dir, text)


def _blocks(result: dict) -> dict:
    return {(b["kind"], b["layer"]): b for b in result["attentions"]}


def assert_decode_top(rust: dict, probs: list) -> None:
    """A translator's candidates at each decode step (`decode_top`) are the reference's: each one's
    probability ≤ 1e-4 from the reference's softmax of that step's logits (`probs`, one array per
    step), five of them, most probable first, none under the reference's fifth largest."""
    assert len(rust["decode_top"]) == len(probs) == len(rust["tokens"]["target"])
    for t, (got, p) in enumerate(zip(rust["decode_top"], probs)):
        fifth = float(np.sort(p)[-5])
        assert len(got) == 5 and got[0]["token"] == rust["tokens"]["target"][t], (t, got)
        for c in got:
            assert abs(c["p"] - float(p[c["id"]])) <= ATTN_TOL and c["p"] >= fifth - ATTN_TOL, (t, c, float(p[c["id"]]), fifth)
        assert all(a["p"] >= b["p"] for a, b in zip(got, got[1:])), (t, got)


# ----------------------------------------------------------------------------- the reference itself

def _bert_embedding(text: str) -> np.ndarray:
    return np.asarray(ref_attend(MINILM, text)["sentence_embedding"])


def test_reference_minilm_published_similarities():
    e = [_bert_embedding(s) for s in
         ("The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium.")]
    sims = [float(e[0] @ e[1]), float(e[0] @ e[2]), float(e[1] @ e[2])]
    assert [round(s, 4) for s in sims] == [0.6660, 0.1046, 0.1411], sims


@pytest.mark.parametrize("text,expected,source,target", [
    ("How are you today?", "Como você está hoje?",
     ["▁How", "▁are", "▁you", "▁today", "?", "</s>"],
     ["▁Como", "▁você", "▁está", "▁hoje", "?", "</s>"]),
    ("The cat sat on the mat.", "O gato sentou-se no tapete.",
     ["▁The", "▁cat", "▁sat", "▁on", "▁the", "▁mat", ".", "</s>"],
     ["▁O", "▁gato", "▁sent", "ou", "-", "se", "▁no", "▁tapete", ".", "</s>"]),
])
def test_reference_marian_published_translations(text, expected, source, target):
    r = ref_attend(ENPT, text)
    assert r["output_text"] == expected
    assert r["tokens"]["source"] == source
    assert r["tokens"]["target"] == target
    assert r["stop_reason"] == "eos"


def test_reference_marian_cross_attention_aligns():
    """Last decoder layer's head-averaged cross attention points at the source word translated."""
    r = ref_attend(ENPT, "The cat sat on the mat.")
    src, tgt = r["tokens"]["source"], r["tokens"]["target"]
    b = _blocks(r)[("cross", 1)]
    a = np.asarray(b["data"]).reshape(b["shape"]).mean(axis=0)
    aligned = {tgt[t]: src[int(a[t].argmax())] for t in range(len(tgt))}
    assert aligned["▁O"] == "▁The"
    assert aligned["▁gato"] == "▁cat"
    assert aligned["▁sent"] == "▁sat"
    assert aligned["▁no"] == "▁on"
    assert aligned["▁tapete"] == "▁mat"


@pytest.mark.parametrize("name,model_dir,text", CASES, ids=CASE_IDS)
def test_reference_shapes_and_rows(name, model_dir, text):
    r = ref_attend(model_dir, text)
    ts, tt = len(r["tokens"]["source"]), len(r["tokens"]["target"])
    for b in r["attentions"]:
        h = b["heads"]
        tq = ts if b["kind"] == "encoder_self" else tt
        assert b["shape"] == [h, tq, ts]
        a = np.asarray(b["data"]).reshape(b["shape"])
        assert np.abs(a.sum(axis=-1) - 1.0).max() < 1e-9


# ----------------------------------------------------------------------------- Rust vs reference

@pytest.mark.parametrize("name,model_dir,text", CASES, ids=CASE_IDS)
def test_parity_tokens_text_shapes(name, model_dir, text):
    ref = ref_attend(model_dir, text)
    rust = rust_attend(model_dir, text)
    assert rust["model"] == ref["model"]
    assert rust["text"] == text
    assert rust["tokens"]["source"] == ref["tokens"]["source"], "source tokens differ"
    assert rust["tokens"]["target"] == ref["tokens"]["target"], "target tokens differ"
    assert rust["output_text"] == ref["output_text"]
    assert rust["truncated"] == ref["truncated"]
    assert rust["stop_reason"] == ref["stop_reason"], "stop_reason differs"
    got = [(b["kind"], b["layer"], b["heads"], b["shape"]) for b in rust["attentions"]]
    want = [(b["kind"], b["layer"], b["heads"], b["shape"]) for b in ref["attentions"]]
    assert sorted(got) == sorted(want)
    for b in rust["attentions"]:
        assert len(b["data"]) == int(np.prod(b["shape"])), (b["kind"], b["layer"])


def test_parity_covers_both_stop_reasons():
    """The stop_reason comparison above sees both outcomes, so it can catch either one wrong."""
    seen = {rust_attend(ENPT, s)["stop_reason"] for s in MARIAN_SENTENCES}
    assert seen == {"eos", "max_length"}, seen
    assert {ref_attend(ENPT, s)["stop_reason"] for s in MARIAN_SENTENCES} == seen
    assert rust_attend(MINILM, BERT_SENTENCES[0])["stop_reason"] is None


@pytest.mark.parametrize("text", MARIAN_SENTENCES)
def test_parity_translator_decode_candidates(text):
    """The translator's five candidates at each decode step, as the reference's softmax of that
    step's logits gives them."""
    _need_model(ENPT)
    assert_decode_top(rust_attend(ENPT, text), reference.Marian(ENPT).forward(text)["probs"])


@pytest.mark.parametrize("name,model_dir,text", CASES, ids=CASE_IDS)
def test_parity_attention_values(name, model_dir, text):
    ref = _blocks(ref_attend(model_dir, text))
    rust = _blocks(rust_attend(model_dir, text))
    assert sorted(rust) == sorted(ref), "attention block lists differ"
    report, worst = [], 0.0
    for key in sorted(ref):
        r, g = ref[key], rust[key]
        assert g["shape"] == r["shape"], f"{key}: shape {g['shape']} != {r['shape']}"
        a = np.asarray(g["data"], dtype=np.float64).reshape(g["shape"])
        b = np.asarray(r["data"], dtype=np.float64).reshape(r["shape"])
        d = np.abs(a - b)
        worst = max(worst, float(d.max()))
        if d.max() > ATTN_TOL:
            h, q, k = np.unravel_index(int(d.argmax()), d.shape)
            report.append(f"{key[0]} layer {key[1]}: max |diff| {d.max():.3e} at head {h} "
                          f"query {q} key {k} (rust {a[h, q, k]:.6f}, ref {b[h, q, k]:.6f})")
        rows = np.abs(a.sum(axis=-1) - 1.0).max()
        assert rows <= ROW_SUM_TOL, f"{key}: a Rust attention row sums to 1 ± {rows:.2e}"
    assert not report, "attention differs from the reference:\n" + "\n".join(report)
    assert worst <= ATTN_TOL


@pytest.mark.parametrize("text", BERT_SENTENCES)
def test_parity_sentence_embedding(text):
    ref = np.asarray(ref_attend(MINILM, text)["sentence_embedding"])
    rust = rust_attend(MINILM, text)
    assert "sentence_embedding" in rust, "BERT output has no sentence_embedding"
    got = np.asarray(rust["sentence_embedding"], dtype=np.float64)
    assert got.shape == ref.shape
    d = float(np.abs(got - ref).max())
    assert d <= EMB_TOL, f"sentence_embedding max |diff| {d:.3e}"


# ----------------------------------------------------------------------------- the step view's block end

@pytest.mark.parametrize("layer,head", [(0, 0), (3, 7), (5, 11)])
def test_parity_attention_block_stages(layer, head):
    """`attnviz step` gives the end of the attention block where all heads meet: the heads'
    outputs side by side, ×Wᴼ + bᴼ, the residual input, the sum, the LayerNorm. Each must equal
    the float64 reference; the traced head's own output must be its columns of the concat."""
    _need_binary()
    _need_model(MINILM)
    text = "The animal didn't cross the street because it was too tired."
    proc = subprocess.run([BIN, "step", "--model", MINILM, "--text", text, "--kind", "encoder_self",
                           "--layer", str(layer), "--head", str(head)], cwd=ROOT, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    got = json.loads(proc.stdout)
    ref = reference.load(MINILM).forward(text, trace_layer=layer)["block"]
    t, d, dk = got["query_len"], got["d_model"], got["d_k"]
    assert d == ref["concat"].shape[1]
    for name in ["concat", "projected", "block_input", "residual", "normed"]:
        a = np.asarray(got[name], dtype=np.float64).reshape(t, d)
        diff = np.abs(a - ref[name]).max()
        assert diff <= ATTN_TOL * max(1.0, np.abs(ref[name]).max()), f"{name}: max abs diff {diff}"
    own = np.asarray(got["output"]).reshape(t, dk)
    concat = np.asarray(got["concat"]).reshape(t, d)
    assert np.abs(concat[:, head * dk:(head + 1) * dk] - own).max() <= 1e-6
