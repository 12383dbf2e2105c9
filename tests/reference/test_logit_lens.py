"""The logit lens (`attnviz attend --lens` → `logit_lens`) against the independent numpy references:
what each layer's output would predict if the model stopped there.

- SmolLM2 (`decoder_self`): for every layer l and every fed position p (prompt, then the generated
  tokens), softmax(final RMSNorm(h_l[p]) · Eᵀ) from reference_llama (`Llama.forward(hidden=…)`,
  `Llama.unembed`). The last layer is the model's own distribution: `generation.next` at the last
  position, each greedy step's token at the position before it.
- The translators (`cross`): at every greedy decode step t, every decoder layer's output through
  the output matrix, softmax(y_l · Wembᵀ + bias) with the banned token (opus-mt's pad) at −∞:
  models/paper from reference_opus_mt (`decoder_layer_outputs`, `OpusMt.unembed`), models/en-pt
  (Bergamot, SSRU decoder) from reference.Marian (`decoder_layer_outputs`, `Marian.unembed`). The
  last layer is the step's own candidates (`decode_top[t]`); its top-1 is `tokens.target[t]`.
- MiniLM predicts no tokens: `--lens` exits 2 saying it "has no logit lens".

Each row: the same five ids in the same order as the reference's five most probable, except where
two candidates' reference probabilities are within TIE_TOL of each other (then either order, and
either of two near-tied fifth/sixth candidates); each p within PROB_TOL of the reference's p for that
id; every token string the tokenizer's for its id.

Run: cd tests/reference && ATTNVIZ_BIN=… ../../.venv/bin/python -m pytest -q test_logit_lens.py
"""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import reference
import reference_llama
import reference_opus_mt
from reference import softmax
from test_parity import BIN, ENPT, MINILM, ROOT, _need_binary, _need_model, rust_attend

SMOLLM = os.path.join(ROOT, "models", "smollm2")
PAPER = os.path.join(ROOT, "models", "paper")

TIE_TOL = 1e-4   # reference probabilities this close: the two candidates may come in either order
PROB_TOL = 2e-4  # each p vs the reference's p for that id, abs (the parity tests measure ~1e-6)
SELF_TOL = 1e-9  # the reference's last-layer lens vs its own forward's distribution (float64)
SAME_TOL = 1e-5  # the CLI's last-layer lens vs its own decode_top / generation (float32 rounding)
TOP_K = 5

# (text, --generate): the prompt-only pass and the KV-cache generation (its positions fed one a step)
SMOLLM_CASES = [("The black cat sees a red ball.", 0), ("The capital of France is", 3)]
PAPER_TEXTS = ["The black cat sees a red ball on the table.", "the woman washes the car in the new house ."]
ENPT_TEXTS = ["The cat sat on the mat.", "How are you today?"]

MEASURED: dict[str, float] = {}  # model → worst |p − reference| (printed with -s)
SWAPS: dict[str, int] = {}       # model → ranks where the CLI's id differs from the reference's (near-ties)


def rust_lens(model_dir: str, text: str, *extra: str) -> dict:
    _need_model(model_dir)
    out = rust_attend(model_dir, text, "--lens", *extra)
    assert out.get("logit_lens") is not None, f"{os.path.basename(model_dir)}: no logit_lens with --lens"
    return out


def compare_row(got: list, probs: np.ndarray, name, what: str, model: str) -> None:
    """`got`: the CLI's five {token, id, p}; `probs`: the reference's full distribution `# [V]`."""
    assert len(got) == TOP_K, f"{what}: {len(got)} entries"
    ids = [int(g["id"]) for g in got]
    assert len(set(ids)) == TOP_K, f"{what}: repeated ids {ids}"
    ps = [float(g["p"]) for g in got]
    assert all(a >= b for a, b in zip(ps, ps[1:])), f"{what}: not most probable first: {ps}"
    want = np.argsort(-probs, kind="stable")[:TOP_K]
    worst = MEASURED.get(model, 0.0)
    for rank, (g, wid) in enumerate(zip(got, want)):
        gid = int(g["id"])
        assert g["token"] == name(gid), f"{what} rank {rank}: token {g['token']!r} is not id {gid} ({name(gid)!r})"
        if gid != wid:
            gap = abs(float(probs[gid]) - float(probs[wid]))
            assert gap <= TIE_TOL, (f"{what} rank {rank}: CLI id {gid} ({name(gid)!r}, reference p {probs[gid]:.6g}), "
                                    f"reference id {int(wid)} ({name(int(wid))!r}, p {probs[wid]:.6g}): "
                                    f"apart by {gap:.2e} > {TIE_TOL}; CLI ids {ids}, reference {[int(i) for i in want]}")
            SWAPS[model] = SWAPS.get(model, 0) + 1
        dp = abs(float(g["p"]) - float(probs[gid]))
        worst = max(worst, dp)
        assert dp <= PROB_TOL, f"{what} rank {rank} id {gid} ({name(gid)!r}): p {g['p']:.7g} vs reference {probs[gid]:.7g} (|Δ| {dp:.2e})"
    MEASURED[model] = worst


def same_top(got: list, own: list, what: str) -> None:
    """The CLI's last-layer lens row vs its own candidates for that position: the same ids in the
    same order (two may swap only where their p are within SAME_TOL), each p within SAME_TOL."""
    assert len(got) == len(own) == TOP_K, f"{what}: {len(got)} vs {len(own)} entries"
    own_by_id = {int(o["id"]): o for o in own}
    for rank, (g, o) in enumerate(zip(got, own)):
        if g["id"] != o["id"]:
            assert abs(float(g["p"]) - float(o["p"])) <= SAME_TOL, (
                f"{what} rank {rank}: lens id {g['id']} ({g['token']!r}, p {g['p']:.7g}) vs "
                f"{o['id']} ({o['token']!r}, p {o['p']:.7g})")
        match = own_by_id.get(int(g["id"]))
        assert match is not None and match["token"] == g["token"], f"{what} rank {rank}: {g} not among {own}"
        assert abs(float(g["p"]) - float(match["p"])) <= SAME_TOL, (
            f"{what} rank {rank} id {g['id']}: lens p {g['p']:.7g} vs {match['p']:.7g}")


def check_shape(lens: dict, kind: str, layers: int, positions: int, what: str) -> None:
    assert lens["kind"] == kind, f"{what}: kind {lens['kind']!r}, want {kind!r}"
    top = lens["top"]
    assert len(top) == layers, f"{what}: {len(top)} layers, want {layers}"
    for l, rows in enumerate(top):
        assert len(rows) == positions, f"{what} layer {l}: {len(rows)} positions, want {positions}"


# ----------------------------------------------------------------------------- SmolLM2

@pytest.fixture(scope="module")
def llama():
    _need_model(SMOLLM)
    return reference_llama.load(SMOLLM)


@pytest.mark.parametrize("text,generate", SMOLLM_CASES, ids=["prompt", "generate3"])
def test_smollm2_lens(llama, text, generate):
    got = rust_lens(SMOLLM, text, *(["--generate", str(generate)] if generate else []))
    gen = got["generation"]
    ids, p = gen["token_ids"], gen["prompt_len"]
    assert ids[:p] == llama.tok.encode(text), "prompt ids differ from the reference tokenizer's"
    t = len(ids)  # every fed position: the prompt, then each generated token (the last one too)
    lens = got["logit_lens"]
    check_shape(lens, "decoder_self", llama.layers, t, "smollm2")
    hidden: list = []
    _, logits = llama.forward(ids, logits_from=0, hidden=hidden)
    assert len(hidden) == llama.layers
    # The helper is the forward's own head: the last layer's lens is the forward's logits.
    assert np.abs(softmax(llama.unembed(hidden[-1])) - softmax(logits)).max() <= SELF_TOL
    name = llama.tok.token
    for layer, h in enumerate(hidden):
        probs = softmax(llama.unembed(h))  # [T, V]
        for pos in range(t):
            compare_row(lens["top"][layer][pos], probs[pos], name, f"smollm2 layer {layer} position {pos}", "smollm2")
    last = lens["top"][-1]
    same_top(last[-1], gen["next"], "smollm2 last layer, last position vs generation.next")
    for i, s in enumerate(gen["steps"]):
        assert s["position"] == p - 1 + i
        same_top(last[s["position"]], s["top"], f"smollm2 last layer vs generation step {i}")
        assert last[s["position"]][0]["id"] == s["id"] == ids[p + i]


# ----------------------------------------------------------------------------- the translators

def check_translator(got: dict, want_ids: list, outputs: list, unembed, name, layers: int, model: str) -> None:
    """`outputs[t]` `# [layers, d]`: the reference's decoder layers' outputs at decode step t."""
    steps = len(want_ids)
    assert got["tokens"]["target"] == [name(i) for i in want_ids], (
        f"{model}: target {got['tokens']['target']} vs the reference's {[name(i) for i in want_ids]}")
    lens = got["logit_lens"]
    check_shape(lens, "cross", layers, steps, model)
    assert len(outputs) == steps and len(got["decode_top"]) == steps
    for t in range(steps):
        probs = softmax(unembed(outputs[t]))  # [layers, V]
        for layer in range(layers):
            compare_row(lens["top"][layer][t], probs[layer], name, f"{model} step {t} layer {layer}", model)
        last = lens["top"][-1][t]
        same_top(last, got["decode_top"][t], f"{model} step {t}: last layer vs decode_top")
        assert last[0]["token"] == got["tokens"]["target"][t], f"{model} step {t}: top-1 {last[0]['token']!r}"
        assert last[0]["id"] == want_ids[t]


@pytest.fixture(scope="module")
def paper():
    if not os.path.isfile(os.path.join(PAPER, "manifest.json")):
        pytest.fail(f"{PAPER} is missing: run `make models` (it trains the paper's Transformer)")
    return reference_opus_mt.OpusMt(PAPER)


@pytest.mark.parametrize("text", PAPER_TEXTS, ids=["example", "woman"])
def test_paper_lens(paper, text):
    got = rust_lens(PAPER, text)
    r = paper.forward(text)
    assert got["tokens"]["source"] == r["tokens"]
    outs = r["decoder_layer_outputs"]
    # The helper is the forward's own head: the last layer's lens is each step's distribution.
    assert max(float(np.abs(softmax(paper.unembed(o[-1])) - p).max()) for o, p in zip(outs, r["probs"])) <= SELF_TOL
    check_translator(got, r["target_ids"], outs, paper.unembed, paper.tok.id_to_token,
                     paper.c["decoder_layers"], "paper")


@pytest.fixture(scope="module")
def enpt():
    _need_model(ENPT)
    return reference.Marian(ENPT)


@pytest.mark.parametrize("text", ENPT_TEXTS, ids=["cat", "how"])
def test_enpt_lens(enpt, text):
    got = rust_lens(ENPT, text)
    r = enpt.forward(text)
    assert got["tokens"]["source"] == r["tokens"]
    outs = r["decoder_layer_outputs"]
    assert max(float(np.abs(softmax(enpt.unembed(o[-1])) - p).max()) for o, p in zip(outs, r["probs"])) <= SELF_TOL
    check_translator(got, r["target_ids"], outs, enpt.unembed, enpt.tok.id_to_token, enpt.dec_layers, "en-pt")


# ----------------------------------------------------------------------------- MiniLM

def test_minilm_has_no_lens():
    _need_model(MINILM)
    _need_binary()
    proc = subprocess.run([BIN, "attend", "--model", MINILM, "--text", "The cat sat on the mat.", "--lens",
                           "--format", "json"], cwd=ROOT, capture_output=True, timeout=600)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, f"exit {proc.returncode}: {err.strip()}"
    assert "has no logit lens" in err, err
    assert proc.stdout == b"", proc.stdout[:200]


@pytest.fixture(scope="module", autouse=True)
def report_measured():
    """After the module: the worst |p − reference| per model (shown with -s)."""
    yield
    print("\nlogit lens max |p − reference|: " + ", ".join(f"{k} {v:.2e}" for k, v in sorted(MEASURED.items()))
          + "; near-tie order swaps: " + (", ".join(f"{k} {v}" for k, v in sorted(SWAPS.items())) or "none"))
