"""Value-weighted norms (issue 12; Kobayashi et al., "Attention is Not Only a Weight", EMNLP 2020):
`attnviz attend --measure value-norm` (Rust) vs the independent numpy references.

data[h, i, j] = ‖α_hij f_h(x_j)‖, f_h(x_j) = (x_j W_V^h + b_V^h) W_O^h: key j's value in head h
(value bias included) through head h's rows of the output projection (no output bias). Marian's
cross-attention takes the encoder memory through the context Wv/Wo; SmolLM2's query head h uses
KV head h // 3 and has no biases.

Two kinds of test:
  * the reference itself: Σ_h Σ_j α_hij f_h(x_j) + b_O equals the attention sub-layer's output
    before the residual (concat · W_O + b_O) within 1e-9 relative in float64, for every layer of
    each model: this validates the decomposition, not just our arithmetic;
  * Rust vs reference: every block within max |diff| / max(1, |x|) ≤ 1e-4 (elementwise), blocks
    in the same kind/layer/shape order as `attentions`, exact zeros where α is exactly 0.

Run from the repository root: .venv/bin/python -m pytest tests/reference -q -k value
"""
from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import reference  # noqa: E402
import reference_llama  # noqa: E402
from test_llama_parity import PROMPT_IDS, PROMPTS, SMOLLM  # noqa: E402
from test_parity import BERT_SENTENCES, ENPT, MARIAN_SENTENCES, MINILM, _need_model, rust_attend  # noqa: E402

VN_TOL = 1e-4          # max |diff| / max(1, |x|), elementwise
DECOMP_TOL = 1e-9      # float64, relative to the sub-layer output's max |x|

# (model name, folder, text, --generate N or 0): ≥ 3 sentences per model from the existing lists,
# picked to cover accents, CJK/emoji/<unk>, a max_length Marian run and the ChatML specials.
CASES = (
    [("minilm", MINILM, BERT_SENTENCES[i], 0) for i in (0, 2, 3, 5)]
    + [("en-pt", ENPT, MARIAN_SENTENCES[i], 0) for i in (1, 2, 3, 6)]
    + [("smollm2", SMOLLM, PROMPTS[i], 0) for i in (0, 2, 5)]
    + [("smollm2", SMOLLM, PROMPTS[0], 4)]
)
CASE_IDS = [f"{name}-{text[:16].strip()}{'-gen' + str(g) if g else ''}" for name, _, text, g in CASES]
# the decomposition check: two texts per model (the first two cases of each)
DECOMP_CASES = [c for name in ("minilm", "en-pt", "smollm2") for c in [c for c in CASES if c[0] == name][:2]]
DECOMP_IDS = [CASE_IDS[CASES.index(c)] for c in DECOMP_CASES]


# ----------------------------------------------------------------------------- runners (cached)

@functools.lru_cache(maxsize=None)
def ref(model_dir: str, text: str, generate: int = 0) -> dict:
    """The reference's JSON with value_norms, plus its numpy decomposition under "_raw"."""
    _need_model(model_dir)
    if model_dir == SMOLLM:
        return reference_llama.attend(SMOLLM, text, generate, raw=True, measure="value-norm")
    assert generate == 0
    return reference.attend(model_dir, text, measure="value-norm", raw=True)


def rust(model_dir: str, text: str, generate: int = 0) -> dict:
    extra = ("--generate", str(generate)) if generate else ()
    return rust_attend(model_dir, text, "--measure", "value-norm", *extra)


def ref_decompositions(r: dict) -> list[tuple[str, int, np.ndarray, dict]]:
    """[(kind, layer, α [H, Tq, Tk], {"f", "norms", "output", "bias"})] in `attentions` order."""
    raw = r["_raw"]
    if "values" in raw:
        vals = raw["values"]
    else:
        vals = raw["encoder_values"] + raw["cross_values"]
    alphas = [np.asarray(b["data"]).reshape(b["shape"]) for b in r["attentions"]]
    assert len(vals) == len(alphas)
    return [(b["kind"], b["layer"], a, v) for b, a, v in zip(r["attentions"], alphas, vals)]


def _array(block: dict) -> np.ndarray:
    a = np.asarray(block["data"], dtype=np.float64)
    assert a.size == int(np.prod(block["shape"])), (block["kind"], block["layer"], a.size, block["shape"])
    return a.reshape(block["shape"])


# ----------------------------------------------------------------------------- the reference itself

@pytest.mark.parametrize("name,model_dir,text,generate", DECOMP_CASES, ids=DECOMP_IDS)
def test_reference_value_decomposition(name, model_dir, text, generate):
    """Σ_h Σ_j α_hij f_h(x_j) + b_O == the sub-layer's output before the residual (computed the
    usual way, concat · W_O + b_O), every layer, ≤ 1e-9 relative in float64; shapes [H, Tk, D]
    and [H, Tq, Tk]; the norms are ‖α f‖ of the vectors themselves."""
    r = ref(model_dir, text, generate)
    worst, report = 0.0, []
    for kind, layer, alpha, v in ref_decompositions(r):
        h, tq, tk = alpha.shape
        f, out = v["f"], v["output"]
        assert f.shape == (h, tk, out.shape[1]), f"{kind} {layer}: f shape {f.shape}"
        assert v["norms"].shape == alpha.shape and out.shape[0] == tq
        if name == "minilm" or name == "en-pt":
            assert v["bias"] is not None and v["bias"].shape == (out.shape[1],)
        else:
            assert v["bias"] is None  # Llama: no output bias
        rel = float(np.abs(reference.recompose(alpha, f, v["bias"]) - out).max() / np.abs(out).max())
        worst = max(worst, rel)
        if rel > DECOMP_TOL:
            report.append(f"{kind} layer {layer}: relative residual {rel:.2e}")
        direct = np.linalg.norm(alpha[..., None] * f[:, None, :, :], axis=-1)  # ‖α_hij f_h(x_j)‖
        assert np.abs(direct - v["norms"]).max() <= 1e-12 * max(1.0, float(direct.max()))
    assert not report, f"{name}: the decomposition does not add up:\n" + "\n".join(report)


def test_reference_gqa_heads_share_values_not_vectors():
    """SmolLM2: heads 0–2 read the same KV head, yet their f differ (each has its own W_O rows);
    and f_h equals v_{h//3} · W_O^h computed from scratch for one layer."""
    r = ref(SMOLLM, PROMPTS[0])
    _, _, _, v = ref_decompositions(r)[0]
    f = v["f"]
    assert f.shape[0] == 9
    assert np.abs(f[0] - f[1]).max() > 1e-3
    m = reference_llama.load(SMOLLM)
    ids = r["generation"]["token_ids"]
    x = m.emb[np.asarray(ids)]
    h = reference_llama.rms_norm(x, m.w["blk.0.attn_norm.weight"], m.eps)
    vv = h @ m.w["blk.0.attn_v.weight"].T  # [T, 3·64]
    wo = m.w["blk.0.attn_output.weight"]  # [576 out, 576 in]
    for head in (0, 4, 8):
        kv = head // 3
        want = vv[:, kv * 64:(kv + 1) * 64] @ wo[:, head * 64:(head + 1) * 64].T
        assert np.abs(want - f[head]).max() <= 1e-12 * np.abs(want).max()


# ----------------------------------------------------------------------------- Rust vs reference

@pytest.mark.parametrize("name,model_dir,text,generate", CASES, ids=CASE_IDS)
def test_value_norm_parity(name, model_dir, text, generate):
    want, got = ref(model_dir, text, generate), rust(model_dir, text, generate)
    assert got["tokens"] == want["tokens"], "tokens differ"
    if generate:
        assert got["generation"]["token_ids"] == want["generation"]["token_ids"], "continuation differs"
    assert "value_norms" in got, "no value_norms in the Rust output with --measure value-norm"
    # same kind/layer/shape order as the attentions, block by block
    order = lambda blocks: [(b["kind"], b["layer"], b["heads"], list(b["shape"])) for b in blocks]  # noqa: E731
    assert order(got["value_norms"]) == order(got["attentions"]), "value_norms not laid out like attentions"
    assert order(got["value_norms"]) == order(want["value_norms"]), "value_norms blocks differ from the reference"
    for b in got["value_norms"]:
        assert [b["query_len"], b["key_len"]] == b["shape"][1:], (b["kind"], b["layer"])
    report, worst = [], 0.0
    for g, w, a in zip(got["value_norms"], want["value_norms"], got["attentions"]):
        x, y, alpha = _array(g), _array(w), _array(a)
        key = f"{g['kind']} layer {g['layer']}"
        assert np.all(x >= 0.0), f"{key}: negative norm"
        # a zero weight sends nothing: exactly 0 (the causal upper triangle, underflowed softmax)
        assert np.all(x[alpha == 0.0] == 0.0), f"{key}: non-zero norm where α == 0"
        d = np.abs(x - y) / np.maximum(1.0, np.abs(y))
        worst = max(worst, float(d.max()))
        if d.max() > VN_TOL:
            hh, q, k = np.unravel_index(int(d.argmax()), d.shape)
            report.append(f"{key}: max |diff|/max(1,|x|) {d.max():.3e} at head {hh} query {q} key {k} "
                          f"(rust {x[hh, q, k]:.6f}, ref {y[hh, q, k]:.6f}, α {alpha[hh, q, k]:.6f})")
    assert not report, f"{name}: value norms differ from the reference (first = where it starts):\n" + "\n".join(report)
    if name == "smollm2":
        t = len(got["generation"]["token_ids"])
        upper = np.triu(np.ones((t, t), dtype=bool), k=1)
        for g in got["value_norms"]:
            assert g["shape"] == [9, t, t]
            assert np.all(_array(g)[:, upper] == 0.0), f"layer {g['layer']}: non-zero above the diagonal"


def test_value_norm_is_weight_times_key_norm():
    """Rust's norms divided by Rust's own weights depend on (head, key) only: α_hij ‖f_h(x_j)‖
    (checked where α > 1e-3, so float32 rounding of small α does not blow up the ratio)."""
    got = rust(ENPT, MARIAN_SENTENCES[1])
    for g, a in zip(got["value_norms"], got["attentions"]):
        x, alpha = _array(g), _array(a)
        big = alpha > 1e-3
        ratio = x / np.where(big, alpha, 1.0)
        hi = np.where(big, ratio, -np.inf).max(axis=1)  # over queries, per (head, key)
        lo = np.where(big, ratio, np.inf).min(axis=1)
        ok = big.any(axis=1)
        assert ok.sum() > ok.size // 2, (g["kind"], g["layer"])
        assert np.all(hi[ok] - lo[ok] <= 1e-4 * np.maximum(1.0, hi[ok])), (g["kind"], g["layer"])
