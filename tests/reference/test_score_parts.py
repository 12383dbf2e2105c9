"""Score parts (`attnviz step` → `score_parts`, src/nn/score_parts.rs) against the independent numpy
references: every part of the traced head's scaled scores q_i·k_j/√d_k equals the part computed
from the reference's own weights and layer inputs (float64), and the parts sum to the CLI's
`scaled`.

- `embedding` (first layer of a token + position model): the reference's layer input split into
  token, position and bias parts (reference.Bert.embedding_parts: LayerNorm linear once each row's
  mean and σ of the sum are fixed; Marian: scaled embedding, sinusoid, zero), each projected by
  W_Q / W_K (the projection biases only on the bias part), nine products q_a·k_b/√d_k.
- `bias` (later layers, cross attention): q = x·W_Q + b_Q, k = y·W_K + b_K from the reference's
  inputs of that attention, four products (input·input, input·bias, bias·input, bias·bias).
- `rotary` (SmolLM2): the reference's q and k after RoPE (GGUF layout, adjacent pairs (2i, 2i+1);
  the CLI may keep another layout, the pair's index and frequency are what must agree), one part
  per pair, and θ_i = rope_theta^(−i/(d_k/2)).

Run: cd tests/reference && ATTNVIZ_BIN=… ../../.venv/bin/python -m pytest -q test_score_parts.py
"""
from __future__ import annotations

import functools
import json
import math
import os
import subprocess

import numpy as np
import pytest

import reference
import reference_llama
import reference_opus_mt
from test_parity import BIN, ENPT, MINILM, ROOT, _need_binary, _need_model

PAPER = os.path.join(ROOT, "models", "paper")
SMOLLM = os.path.join(ROOT, "models", "smollm2")

PART_TOL = 1e-4  # each part vs the reference's, max abs (the attention maps' tolerance)
SUM_TOL = 1e-5   # Σ parts vs the CLI's `scaled`, relative to max(1, |scaled|)
SELF_TOL = 1e-9  # the reference's parts vs its own forward's inputs (float64, same maths)
FREQ_TOL = 1e-9  # rotary frequencies, relative

# The specification, written out (not built the way the Rust side builds it).
EMBEDDING_NAMES = ["token·token", "token·position", "token·bias",
                   "position·token", "position·position", "position·bias",
                   "bias·token", "bias·position", "bias·bias"]
BIAS_NAMES = ["input·input", "input·bias", "bias·input", "bias·bias"]
PARTS = ("token", "position", "bias")

BERT_TEXTS = ["The animal didn't cross the street because it was too tired.",
              "Paris is the capital of France, and Berlin is the capital of Germany."]
PAPER_TEXTS = ["The black cat sees a red ball on the table.",
               "the woman washes the car in the new house ."]
ENPT_TEXTS = ["The cat sat on the mat.", "How are you today?"]
SMOLLM_TEXT = "The black cat sees a red ball."


# ----------------------------------------------------------------------------- runners

@functools.lru_cache(maxsize=None)
def rust_step(model_dir: str, text: str, kind: str, layer: int, head: int) -> dict:
    _need_model(model_dir)
    _need_binary()
    proc = subprocess.run([BIN, "step", "--model", model_dir, "--text", text, "--kind", kind,
                           "--layer", str(layer), "--head", str(head)], cwd=ROOT, capture_output=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"attnviz step exited {proc.returncode} for {kind} {layer}/{head} {text!r}: "
                    f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return json.loads(proc.stdout.decode("utf-8"))


def _parts(step: dict) -> tuple[dict, np.ndarray, np.ndarray]:
    """(score_parts, its values `# [parts, Tq, Tk]`, scaled `# [Tq, Tk]`) of a step result."""
    p = step["score_parts"]
    assert p is not None, f"{step['model']} {step['kind']} layer {step['layer']}: no score_parts"
    tq, tk = step["query_len"], step["key_len"]
    values = np.asarray(p["values"], dtype=np.float64)
    assert values.size == len(p["names"]) * tq * tk, (values.size, len(p["names"]), tq, tk)
    return p, values.reshape(len(p["names"]), tq, tk), np.asarray(step["scaled"], dtype=np.float64).reshape(tq, tk)


def _head(a: np.ndarray, h: int, dk: int) -> np.ndarray:
    return a[..., h * dk:(h + 1) * dk]


def _dot(a: np.ndarray, b: np.ndarray, dk: int) -> np.ndarray:
    return a @ b.T / math.sqrt(dk)


def embedding_parts(q_parts: dict, k_parts: dict, wq, bq, wk, bk, h: int, dk: int) -> np.ndarray:
    """`# [9, Tq, Tk]`: q_a = part_a·W_Q (+ b_Q for "bias"), k_b likewise, q_a·k_b/√d_k for head h
    (weights as [in, out] for x @ W)."""
    q = {a: _head(q_parts[a] @ wq + (bq if a == "bias" else 0.0), h, dk) for a in PARTS}
    k = {b: _head(k_parts[b] @ wk + (bk if b == "bias" else 0.0), h, dk) for b in PARTS}
    return np.stack([_dot(q[a], k[b], dk) for a in PARTS for b in PARTS])


def bias_parts(x_q, x_k, wq, bq, wk, bk, h: int, dk: int) -> np.ndarray:
    """`# [4, Tq, Tk]`: input·input, input·bias, bias·input, bias·bias of head h."""
    qi, ki = _head(x_q @ wq, h, dk), _head(x_k @ wk, h, dk)
    qb, kb = np.broadcast_to(_head(bq, h, dk), qi.shape), np.broadcast_to(_head(bk, h, dk), ki.shape)
    return np.stack([_dot(qi, ki, dk), _dot(qi, kb, dk), _dot(qb, ki, dk), _dot(qb, kb, dk)])


def full_scaled(x_q, x_k, wq, bq, wk, bk, h: int, dk: int) -> np.ndarray:
    """The reference's own scaled scores of head h from its inputs, undecomposed."""
    return _dot(_head(x_q @ wq + bq, h, dk), _head(x_k @ wk + bk, h, dk), dk)


MEASURED: dict[str, float] = {}  # basis/model → worst |part − reference| (printed with -s)


def check(step: dict, basis: str, names: list, want: np.ndarray, what: str) -> None:
    p, got, scaled = _parts(step)
    assert p["basis"] == basis, f"{what}: basis {p['basis']!r}, want {basis!r}"
    assert p["names"] == names, f"{what}: names {p['names']}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs the reference's {want.shape}"
    d = np.abs(got - want)
    i = np.unravel_index(int(d.argmax()), d.shape)
    MEASURED[what] = max(MEASURED.get(what, 0.0), float(d.max()))
    assert d.max() <= PART_TOL, (f"{what}: part {names[i[0]]!r} query {i[1]} key {i[2]}: "
                                 f"CLI {got[i]:.7g} vs reference {want[i]:.7g} (|Δ| {d[i]:.3e})")
    rel = np.abs(got.sum(axis=0) - scaled) / np.maximum(1.0, np.abs(scaled))
    j = np.unravel_index(int(rel.argmax()), rel.shape)
    assert rel.max() <= SUM_TOL, (f"{what}: Σ parts {got.sum(axis=0)[j]:.7g} vs scaled {scaled[j]:.7g} "
                                  f"at query {j[0]} key {j[1]} (relative {rel[j]:.3e})")


# ----------------------------------------------------------------------------- MiniLM

@pytest.mark.parametrize("head", [1, 10])
@pytest.mark.parametrize("text", BERT_TEXTS, ids=["animal", "paris"])
def test_minilm_first_layer_embedding_parts(text, head):
    _need_model(MINILM)
    m = reference.load(MINILM)
    step = rust_step(MINILM, text, "encoder_self", 0, head)
    assert step["query_tokens"] == step["key_tokens"] == list(m.tok.encode(text).tokens)
    dk = m.w["encoder.layer.0.attention.self.query.weight"].shape[0] // m.heads
    assert step["d_k"] == dk
    wq, bq = m.lin("encoder.layer.0.attention.self.query")
    wk, bk = m.lin("encoder.layer.0.attention.self.key")
    parts = m.embedding_parts(text)
    # The split is exact: the parts sum to the reference forward's layer-0 input, their nine
    # products to its scores.
    x = m.forward(text, trace_layer=0)["block"]["block_input"]
    assert np.abs(sum(parts.values()) - x).max() <= SELF_TOL
    want = embedding_parts(parts, parts, wq, bq, wk, bk, head, dk)
    assert np.abs(want.sum(axis=0) - full_scaled(x, x, wq, bq, wk, bk, head, dk)).max() <= SELF_TOL
    check(step, "embedding", EMBEDDING_NAMES, want, "minilm embedding")


@pytest.mark.parametrize("head", [1, 10])
@pytest.mark.parametrize("text", BERT_TEXTS, ids=["animal", "paris"])
def test_minilm_deeper_layer_bias_parts(text, head):
    _need_model(MINILM)
    layer = 3
    m = reference.load(MINILM)
    step = rust_step(MINILM, text, "encoder_self", layer, head)
    dk = step["d_k"]
    wq, bq = m.lin(f"encoder.layer.{layer}.attention.self.query")
    wk, bk = m.lin(f"encoder.layer.{layer}.attention.self.key")
    x = m.forward(text, trace_layer=layer)["block"]["block_input"]
    want = bias_parts(x, x, wq, bq, wk, bk, head, dk)
    assert np.abs(want.sum(axis=0) - full_scaled(x, x, wq, bq, wk, bk, head, dk)).max() <= SELF_TOL
    check(step, "bias", BIAS_NAMES, want, "minilm bias")


# ----------------------------------------------------------------------------- the paper model (opus-mt layout)

@functools.lru_cache(maxsize=None)
def paper_forward(text: str):
    """(the reference model, its forward; `model.inputs` is read right after, so one text at a time)."""
    m = reference_opus_mt.OpusMt(PAPER)
    return m, m.forward(text)


def _opus_lin(m, p: str):
    return m.w[p + ".weight"].T, m.w[p + ".bias"]


@pytest.mark.parametrize("head", [1, 3])
@pytest.mark.parametrize("kind,layer", [("encoder_self", 0), ("decoder_self", 0), ("cross", 1)])
@pytest.mark.parametrize("text", PAPER_TEXTS, ids=["example", "woman"])
def test_paper_model_parts(text, kind, layer, head):
    if not os.path.isfile(os.path.join(PAPER, "manifest.json")):
        pytest.fail(f"{PAPER} is missing: run `make models` (it trains the paper's Transformer)")
    m, r = paper_forward(text)
    step = rust_step(PAPER, text, kind, layer, head)
    dk = m.d // m.heads
    assert step["d_k"] == dk
    side = "encoder" if kind == "encoder_self" else "decoder"
    p = f"model.{side}.layers.{layer}." + {"encoder_self": "self_attn", "decoder_self": "self_attn", "cross": "encoder_attn"}[kind]
    wq, bq = _opus_lin(m, p + ".q_proj")
    wk, bk = _opus_lin(m, p + ".k_proj")
    x_q, x_k = m.inputs[p]
    inputs = r["ids"] if kind == "encoder_self" else [m.start] + r["target_ids"][:-1]
    assert x_q.shape[0] == step["query_len"] and x_k.shape[0] == step["key_len"]
    if kind == "encoder_self":
        assert step["query_tokens"] == r["tokens"]
    else:
        assert step["query_tokens"] == [m.tok.id_to_token(i) for i in r["target_ids"]]
    if kind == "cross":
        want = bias_parts(x_q, x_k, wq, bq, wk, bk, head, dk)
        basis, names = "bias", BIAS_NAMES
    else:
        parts = m.embedding_parts(inputs)
        assert np.abs(sum(parts.values()) - x_q).max() <= SELF_TOL
        want = embedding_parts(parts, parts, wq, bq, wk, bk, head, dk)
        basis, names = "embedding", EMBEDDING_NAMES
    assert np.abs(want.sum(axis=0) - full_scaled(x_q, x_k, wq, bq, wk, bk, head, dk)).max() <= SELF_TOL
    check(step, basis, names, want, f"paper {basis} {kind}")


# ----------------------------------------------------------------------------- en-pt (Bergamot Marian)

@functools.lru_cache(maxsize=None)
def enpt_forward(text: str):
    m = reference.Marian(ENPT)
    r = m.forward(text)
    return m, r, {k: (np.concatenate(rows), kv) for k, (rows, kv) in m.inputs.items()}


def test_enpt_has_no_decoder_self():
    """The Bergamot translator's decoder is an SSRU: the CLI offers no decoder_self to split."""
    _need_model(ENPT)
    _need_binary()
    proc = subprocess.run([BIN, "step", "--model", ENPT, "--text", ENPT_TEXTS[0], "--kind", "decoder_self",
                           "--layer", "0", "--head", "0"], cwd=ROOT, capture_output=True, timeout=600)
    assert proc.returncode != 0 and b"decoder_self" in proc.stderr, proc.stderr


@pytest.mark.parametrize("head", [2, 7])
@pytest.mark.parametrize("kind,layer", [("encoder_self", 0), ("cross", 1)])
@pytest.mark.parametrize("text", ENPT_TEXTS, ids=["cat", "how"])
def test_enpt_parts(text, kind, layer, head):
    _need_model(ENPT)
    m, r, inputs = enpt_forward(text)
    step = rust_step(ENPT, text, kind, layer, head)
    dk = m.dim // m.heads
    assert step["d_k"] == dk
    prefix = f"encoder_l{layer + 1}_self" if kind == "encoder_self" else f"decoder_l{layer + 1}_context"
    w = m.w
    wq, bq, wk, bk = w[prefix + "_Wq"], w[prefix + "_bq"][0], w[prefix + "_Wk"], w[prefix + "_bk"][0]
    x_q, x_k = inputs[prefix]
    assert x_q.shape[0] == step["query_len"] and x_k.shape[0] == step["key_len"]
    assert step["query_tokens"] == (r["tokens"] if kind == "encoder_self" else r["target_tokens"])
    if kind == "cross":
        want = bias_parts(x_q, x_k, wq, bq, wk, bk, head, dk)
        basis, names = "bias", BIAS_NAMES
    else:
        parts = m.embedding_parts(r["ids"])
        assert np.abs(sum(parts.values()) - x_q).max() <= SELF_TOL
        want = embedding_parts(parts, parts, wq, bq, wk, bk, head, dk)
        basis, names = "embedding", EMBEDDING_NAMES
    assert np.abs(want.sum(axis=0) - full_scaled(x_q, x_k, wq, bq, wk, bk, head, dk)).max() <= SELF_TOL
    check(step, basis, names, want, f"en-pt {basis} {kind}")


# ----------------------------------------------------------------------------- SmolLM2 (rotary)

@functools.lru_cache(maxsize=None)
def smollm_qk(text: str):
    _need_model(SMOLLM)
    m = reference_llama.load(SMOLLM)
    ids = m.tok.encode(text)
    qk = []
    m.forward(ids, logits_from=len(ids) - 1, qk=qk)
    return m, ids, qk


@pytest.mark.parametrize("head", [3, 7])
def test_smollm2_rotary_parts(head):
    layer = 15  # of 30
    m, ids, qk = smollm_qk(SMOLLM_TEXT)
    step = rust_step(SMOLLM, SMOLLM_TEXT, "decoder_self", layer, head)
    dk, t = m.head_dim, len(ids)
    assert step["d_k"] == dk and step["query_len"] == step["key_len"] == t
    assert step["query_tokens"] == [m.tok.token(i) for i in ids]
    q, k = qk[layer]
    qh, kh = q[head], k[head // (m.heads // m.kv_heads)]  # query head h reads KV head h // group
    pairs = m.rope_dims // 2
    want = np.stack([(np.outer(qh[:, 2 * i], kh[:, 2 * i]) + np.outer(qh[:, 2 * i + 1], kh[:, 2 * i + 1])) / math.sqrt(dk)
                     for i in range(pairs)])
    assert np.abs(want.sum(axis=0) - qh @ kh.T / math.sqrt(dk)).max() <= SELF_TOL
    check(step, "rotary", [f"pair {i}" for i in range(pairs)], want, "smollm2 rotary")
    freqs = np.asarray(step["score_parts"]["frequencies"], dtype=np.float64)
    theta = float(m.meta["llama.rope.freq_base"])
    expected = theta ** (-np.arange(pairs) / (dk / 2))
    assert freqs.shape == expected.shape, freqs.shape
    rel = np.abs(freqs / expected - 1.0)
    i = int(rel.argmax())
    assert rel.max() <= FREQ_TOL, f"pair {i}: θ {float(freqs[i])!r} vs {theta}^(−{i}/{dk // 2}) = {float(expected[i])!r} (relative {rel[i]:.2e})"


# ----------------------------------------------------------------------------- names and order

def test_part_names_and_order():
    """Exactly the specified names, in order (query part · key part, token, position, bias), and
    `frequencies` only for rotary."""
    cases = [(MINILM, BERT_TEXTS[0], "encoder_self", 0, "embedding", EMBEDDING_NAMES),
             (MINILM, BERT_TEXTS[0], "encoder_self", 3, "bias", BIAS_NAMES),
             (PAPER, PAPER_TEXTS[0], "encoder_self", 0, "embedding", EMBEDDING_NAMES),
             (PAPER, PAPER_TEXTS[0], "decoder_self", 0, "embedding", EMBEDDING_NAMES),
             (PAPER, PAPER_TEXTS[0], "decoder_self", 1, "bias", BIAS_NAMES),
             (PAPER, PAPER_TEXTS[0], "cross", 0, "bias", BIAS_NAMES),
             (ENPT, ENPT_TEXTS[0], "encoder_self", 0, "embedding", EMBEDDING_NAMES),
             (ENPT, ENPT_TEXTS[0], "encoder_self", 5, "bias", BIAS_NAMES),
             (ENPT, ENPT_TEXTS[0], "cross", 0, "bias", BIAS_NAMES),
             (SMOLLM, SMOLLM_TEXT, "decoder_self", 0, "rotary", [f"pair {i}" for i in range(32)])]
    for model, text, kind, layer, basis, names in cases:
        p = rust_step(model, text, kind, layer, 1)["score_parts"]
        where = f"{os.path.basename(model)} {kind} layer {layer}"
        assert p is not None and p["basis"] == basis, f"{where}: {p and p['basis']}"
        assert p["names"] == names, f"{where}: {p['names']}"
        assert (len(p["frequencies"]) > 0) == (basis == "rotary"), f"{where}: frequencies {p['frequencies'][:3]}"
