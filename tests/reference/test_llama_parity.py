"""Parity between `attnviz attend --model models/smollm2 --format json` (Rust) and the independent
numpy reference for the llama family (reference_llama.py: GGUF read with the `gguf` package,
pure-Python byte-level BPE, float64 maths).

Run from the repository root:
    .venv/bin/python -m pytest tests/reference -q -k llama
ATTNVIZ_BIN overrides the binary (default target/release/attnviz). Nothing is skipped: a missing
binary or model fails with a message saying what to do.
"""
from __future__ import annotations

import functools
import os
import random
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import reference_llama  # noqa: E402
from test_parity import ROOT, _need_model, rust_attend  # noqa: E402  (shared CLI runner, cached)

SMOLLM = os.path.join(ROOT, "models", "smollm2")

ATTN_TOL = 1e-4      # attention probabilities, max abs
PROB_TOL = 1e-4      # next-token probabilities, abs
ROW_SUM_TOL = 1e-5
KV_TOL = 1e-5        # Rust KV-cache generation vs a Rust full re-run of the final sequence
GENERATE = 8

PROMPTS = [
    "The capital of France is",
    "In 2024, 3 + 4 = 7.",
    "Ich möchte café crème — naïve façade.",
    "Emoji 🎉 and CJK 日本語",
    "Roses are red,\nviolets are",
    # the instruct model answers "No." and stops with <|im_end|> (EOS) after 3 of the 8 tokens
    "<|im_start|>user\nIs the sky blue? Answer yes or no.<|im_end|>\n<|im_start|>assistant\n",
]
PROMPT_IDS = ["france", "digits", "accents", "emoji-cjk", "newline", "chat-specials"]


# ----------------------------------------------------------------------------- runners (cached per session)

@functools.lru_cache(maxsize=None)
def ref(text: str, generate: int = 0) -> dict:
    _need_model(SMOLLM)
    return reference_llama.attend(SMOLLM, text, generate, raw=True)


def rust(text: str, generate: int = 0) -> dict:
    return rust_attend(SMOLLM, text, *(["--generate", str(generate)] if generate else []))


def _attn(result: dict) -> dict[int, np.ndarray]:
    out = {}
    for b in result["attentions"]:
        assert b["kind"] == "decoder_self", b["kind"]
        out[b["layer"]] = np.asarray(b["data"], dtype=np.float64).reshape(b["shape"])
    return out


def _compare_attention(got: dict, want: dict, what: str) -> float:
    """Max abs per layer/head; the failure message names every layer over the tolerance (the
    first one is where the two sides start to differ) and where."""
    assert sorted(got) == sorted(want), f"{what}: layers {sorted(got)} != {sorted(want)}"
    report, worst = [], 0.0
    for layer in sorted(want):
        a, b = got[layer], want[layer]
        assert a.shape == b.shape, f"{what} layer {layer}: shape {a.shape} != {b.shape}"
        d = np.abs(a - b)
        worst = max(worst, float(d.max()))
        per_head = d.reshape(d.shape[0], -1).max(axis=1)
        if per_head.max() > ATTN_TOL:
            h, q, k = np.unravel_index(int(d.argmax()), d.shape)
            report.append(f"layer {layer}: max |diff| {d.max():.3e} (heads over: "
                          f"{[int(i) for i in np.nonzero(per_head > ATTN_TOL)[0]]}) at head {h} query {q} "
                          f"key {k} (rust {a[h, q, k]:.6f}, ref {b[h, q, k]:.6f})")
    assert not report, f"{what}: attention differs from the reference:\n" + "\n".join(report)
    return worst


def _check_structure(blocks: dict, t: int, heads: int, what: str) -> None:
    upper = np.triu(np.ones((t, t), dtype=bool), k=1)
    for layer, a in blocks.items():
        assert a.shape == (heads, t, t), f"{what} layer {layer}: shape {a.shape}"
        rows = float(np.abs(a.sum(axis=-1) - 1.0).max())
        assert rows <= ROW_SUM_TOL, f"{what} layer {layer}: a row sums to 1 ± {rows:.2e}"
        assert np.all(a[:, upper] == 0.0), f"{what} layer {layer}: non-zero above the diagonal"
        assert np.all(a >= 0.0), f"{what} layer {layer}: negative probability"


def _compare_top(got: list, probs: np.ndarray, what: str) -> None:
    """`got` = Rust's top-5 [{token, id, p}]; `probs` = the reference's full distribution.
    Same ids in the same order, except that two ids may swap where the reference's probabilities
    for them differ by < PROB_TOL; every p within PROB_TOL of the reference's p for that id."""
    want = reference_llama.Llama.top(probs)
    assert len(got) == len(want), f"{what}: {len(got)} entries, want {len(want)}"
    tok = reference_llama.load(SMOLLM).tok
    for rank, (g, (wid, wp)) in enumerate(zip(got, want)):
        gid = int(g["id"])
        assert g["token"] == tok.token(gid), f"{what} rank {rank}: token {g['token']!r} is not id {gid}"
        if gid != wid:
            gap = abs(float(probs[gid]) - wp)
            assert gap < PROB_TOL, (f"{what} rank {rank}: rust id {gid} ({tok.token(gid)!r}), reference id "
                                    f"{wid} ({tok.token(wid)!r}); reference p differ by {gap:.2e}")
        dp = abs(float(g["p"]) - float(probs[gid]))
        assert dp <= PROB_TOL, f"{what} rank {rank} id {gid}: p {g['p']:.6f} vs reference {probs[gid]:.6f}"
    assert len({int(g["id"]) for g in got}) == len(got), f"{what}: repeated ids"


# ----------------------------------------------------------------------------- the reference itself

def _hf_tokenizer(meta: dict):
    """The `tokenizers` library's BPE built from the same GGUF vocab + merges, with SmolLM2's HF
    pre-tokenizer (Digits individual, then ByteLevel regex) and the control tokens as specials."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    toks = meta["tokenizer.ggml.tokens"]
    vocab = {s: i for i, s in enumerate(toks)}
    merges = [tuple(m.split(" ")) for m in meta["tokenizer.ggml.merges"]]
    hf = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(s, special=True, normalized=False)
                           for s, t in zip(toks, meta["tokenizer.ggml.token_type"]) if t == 3])
    return hf


TOKENIZER_STRINGS = PROMPTS + [
    "", " ", "\n", "  multiple   spaces  ", "Line one\nLine two\n\n  indented", "\t\ttabs\r\nwindows",
    "don't I'll we've they're it's", "DON'T 'S '''s", "3.14159 and 1,000,000 and 007",
    "x²³ ½ ٣٤ ۱۲ 一二三 Ⅻ", "👩‍👩‍👧 🏳️‍🌈 ❤️", "😀😀😀aaa   \n\n\n   bbb", "a\u00a0b e\u0301 vs é ﬁ ß",
    "Ελληνικά, русский, العربية, עברית, हिन्दी", "fn main() { println!(\"{}\", 1+2); }",
    "    def f(x):\n        return x**2\n", "<|im_start|><|im_start|>x<|im_end|>", "<|endoftext|>",
    "<|im_start", "a<|im_end|>b <|im_end|> c", "<file_sep><reponame>",
]


def _random_strings(n: int, seed: int = 9) -> list[str]:
    pool = list("aeé日本語🎉 \n\t'sdtlmvr0123456789.,;-—€$%AZ") + [
        "'s", "'ll", "  ", "\n\n", "<|im_end|>", "ß", "\u0301", "\u200d", "ﬁ", "Ⅻ", "²"]
    rng = random.Random(seed)
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 40))) for _ in range(n)]


def test_reference_tokenizer_matches_hf_tokenizers():
    """Our pure-Python BPE == the `tokenizers` library on the same vocab/merges (ids and decoding),
    and decoding gives the text back."""
    _need_model(SMOLLM)
    tok = reference_llama.load(SMOLLM).tok
    hf = _hf_tokenizer(reference_llama.load(SMOLLM).meta)
    bad = []
    strings = TOKENIZER_STRINGS + _random_strings(1000)
    for s in strings:
        ours, theirs = tok.encode(s), hf.encode(s).ids
        if ours != theirs or tok.decode(ours) != s or hf.decode(theirs, skip_special_tokens=False) != s:
            bad.append((s, ours, theirs))
    assert not bad, f"{len(bad)}/{len(strings)} strings differ, e.g. {bad[:3]}"


def test_reference_tokenizer_facts():
    tok = reference_llama.load(SMOLLM).tok
    assert not tok.add_bos and tok.eos == 2 and tok.token(2) == "<|im_end|>"
    ids = tok.encode("In 2024, 3 + 4 = 7.")
    assert [tok.token(i) for i in ids] == ["In", "Ġ", "2", "0", "2", "4", ",", "Ġ", "3", "Ġ+", "Ġ", "4",
                                           "Ġ=", "Ġ", "7", "."]
    assert tok.encode("<|im_start|>user\nHi<|im_end|>") == [1, 4093, 198, 26843, 2]


def test_gguf_dequantize_matches_block_formats():
    """gguf.quants.dequantize agrees with a hand decoding of the block formats written in NOTES.md
    (Q4_1: f16 d, f16 m, 16 bytes of nibbles, low nibbles = weights 0..15, high = 16..31;
    Q8_0: f16 d, 32 int8)."""
    import gguf
    _need_model(SMOLLM)
    reader = gguf.GGUFReader(reference_llama.gguf_path(SMOLLM))
    seen = set()
    for t in reader.tensors:
        if t.tensor_type.name in seen or t.tensor_type.name not in ("Q4_1", "Q8_0"):
            continue
        seen.add(t.tensor_type.name)
        raw = np.asarray(t.data[:4])  # four rows of blocks
        blocks = raw.reshape(-1, 20 if t.tensor_type.name == "Q4_1" else 34)
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float64)
        if t.tensor_type.name == "Q4_1":
            m = blocks[:, 2:4].copy().view("<f2").astype(np.float64)
            qs = blocks[:, 4:]
            q = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float64)
            hand = d * q + m
        else:
            hand = d * blocks[:, 2:].copy().view(np.int8).astype(np.float64)
        lib = gguf.quants.dequantize(raw, t.tensor_type).astype(np.float64).reshape(hand.shape)
        assert np.abs(lib - hand).max() <= 1e-6 * max(1.0, np.abs(hand).max()), t.name
    assert seen == {"Q4_1", "Q8_0"}


def test_reference_paris():
    r = ref(PROMPTS[0], GENERATE)
    assert r["tokens"]["target"][0] == "ĠParis", r["tokens"]["target"]
    assert r["output_text"].startswith(" Paris")


def test_reference_needs_adjacent_rope_pairs():
    """The GGUF q/k rows are permuted by llama.cpp's converter: rotating adjacent pairs (2i, 2i+1)
    predicts position-driven sequences far better than the HF half-split layout (i, i + 32).
    Measured (mean next-token NLL, nats): alphabet 2.21 vs 5.00, weekdays ×2 1.08 vs 2.32."""
    texts = ["A B C D E F G H I J K L M N O P Q R S T U V W X Y Z",
             "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday. "
             "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday."]

    def nll(pairs, text):
        m = reference_llama.load(SMOLLM, np.float64, pairs)
        ids = m.tok.encode(text)
        _, logits = m.forward(ids)
        logp = logits - logits.max(-1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
        return -float(np.mean(logp[np.arange(len(ids) - 1), ids[1:]]))

    for text in texts:
        adjacent, half = nll("adjacent", text), nll("half", text)
        assert adjacent < 2.5 and half > adjacent + 1.0, (text, adjacent, half)


@pytest.mark.parametrize("text", PROMPTS, ids=PROMPT_IDS)
def test_reference_structure_and_greedy_margins(text):
    """Rows sum to 1, exact zeros above the diagonal, and every greedy choice wins by a margin far
    above float32 noise (so `identical continuation` is a fair demand on the Rust side)."""
    r = ref(text, GENERATE)
    t = len(r["generation"]["token_ids"])
    _check_structure(_attn(r), t, 9, "reference")
    for i, row in enumerate(r["_raw"]["probs"][:-1]):
        top2 = np.sort(row)[-2:]
        assert top2[1] - top2[0] > 1e-3, f"step {i}: greedy margin only {top2[1] - top2[0]:.2e}"


# ----------------------------------------------------------------------------- Rust vs reference

@pytest.mark.parametrize("text", PROMPTS, ids=PROMPT_IDS)
def test_llama_parity_tokens(text):
    want = ref(text)
    got = rust(text)
    p = want["generation"]["prompt_len"]
    assert got["model"] == want["model"] == "smollm2-135m"
    assert got["text"] == text
    assert got["generation"] is not None, "no generation object for a llama model"
    assert got["generation"]["prompt_len"] == p
    assert got["generation"]["token_ids"][:p] == want["generation"]["token_ids"][:p], "token ids differ"
    assert got["tokens"]["source"] == want["tokens"]["source"], "token strings differ"
    assert got["tokens"]["target"] == []
    assert got["output_text"] is None and got["stop_reason"] is None
    assert got["truncated"] is False


@pytest.mark.parametrize("text", PROMPTS, ids=PROMPT_IDS)
def test_llama_parity_prompt_attention(text):
    want, got = ref(text), rust(text)
    p = want["generation"]["prompt_len"]
    blocks = _attn(got)
    assert sorted(blocks) == list(range(30))
    for b in got["attentions"]:
        assert b["heads"] == 9 and b["query_len"] == b["key_len"] == p and b["shape"] == [9, p, p]
    _check_structure(blocks, p, 9, "rust")
    _compare_attention(blocks, _attn(want), "prompt")
    assert got["generation"]["steps"] == []
    _compare_top(got["generation"]["next"], want["_raw"]["probs"][-1], "next")


@pytest.mark.parametrize("text", PROMPTS, ids=PROMPT_IDS)
def test_llama_parity_greedy_generation(text):
    want, got = ref(text, GENERATE), rust(text, GENERATE)
    p = want["generation"]["prompt_len"]
    ids = want["generation"]["token_ids"]
    assert got["generation"]["prompt_len"] == p
    assert got["generation"]["token_ids"] == ids, (
        f"continuation differs: rust {got['generation']['token_ids'][p:]} vs reference {ids[p:]}")
    assert got["tokens"]["source"] == want["tokens"]["source"]
    assert got["tokens"]["target"] == want["tokens"]["target"]
    assert got["stop_reason"] == want["stop_reason"]
    tok = reference_llama.load(SMOLLM).tok
    # the contract does not say whether special tokens are kept in output_text: accept either
    assert got["output_text"] in (tok.decode(ids[p:]), tok.decode(ids[p:], skip_special=True)), got["output_text"]
    assert got["generation"]["sampling"]["method"] == "greedy"
    blocks = _attn(got)
    _check_structure(blocks, len(ids), 9, "rust --generate")
    _compare_attention(blocks, _attn(want), "prompt + generated")
    steps = got["generation"]["steps"]
    assert [s["id"] for s in steps] == ids[p:]
    assert [s["position"] for s in steps] == list(range(p - 1, len(ids) - 1))
    for i, s in enumerate(steps):
        assert s["token"] == tok.token(s["id"])
        _compare_top(s["top"], want["_raw"]["probs"][i], f"step {i}")
        assert s["top"][0]["id"] == s["id"], f"step {i}: greedy did not take the top token"
    _compare_top(got["generation"]["next"], want["_raw"]["probs"][-1], "next")


def test_llama_parity_kv_cache_equals_rerun():
    """Rust's KV-cache generation == Rust's own full pass over the final sequence (≤ 1e-5), for the
    prompts whose prompt + output text tokenizes back to the same ids."""
    tok = reference_llama.load(SMOLLM).tok
    checked = []
    for text in PROMPTS:
        gen = rust(text, GENERATE)
        ids = gen["generation"]["token_ids"]
        full = text + tok.decode(ids[gen["generation"]["prompt_len"]:])
        if tok.encode(full) != ids:
            continue
        again = rust(full)
        assert again["generation"]["token_ids"] == ids
        a, b = _attn(gen), _attn(again)
        worst = max(float(np.abs(a[i] - b[i]).max()) for i in a)
        assert worst <= KV_TOL, f"{text!r}: KV-cache attention vs re-run max |diff| {worst:.2e}"
        checked.append(text)
    assert len(checked) >= 3, f"only {len(checked)} prompts re-tokenize to the same ids"
