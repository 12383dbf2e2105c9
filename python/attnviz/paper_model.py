#!/usr/bin/env python3
"""The paper's own model: the Transformer of "Attention Is All You Need" (Vaswani et al. 2017),
scaled down and trained here, in numpy, on a generated English → Portuguese toy task.

Architecture: post-norm encoder-decoder, sinusoid positions, √d-scaled embeddings shared by the
encoder, the decoder and the output layer; 2 + 2 layers, d_model 128, 4 heads, FFN 512, ReLU.
It is written as a Hugging Face Marian (opus-mt) folder (config.json, model.safetensors,
tokenizer.json) so the attnviz core loads it like any opus-mt model.

The task: sentences of a small grammar, NP verb NP [PP] [.], e.g.
    "the black cat sees a red ball on the table."  →  "o gato preto vê uma bola vermelha na mesa."
Adjectives move after the noun and agree with its gender, articles take the noun's gender, and
"on the"/"in the" contract to "no"/"na": cross-attention has reordering to show, decoder
self-attention agreement.

Training is plain numpy (forward and hand-written backward, checked by `--gradcheck` against
finite differences in float64), Adam with warm-up and cosine decay, float32, fixed seeds:
the same seed gives the same data, and the same weights with the same BLAS kernel (numpy's
OpenBLAS picks one per processor, or OPENBLAS_CORETYPE does; another rounds differently, and
400 steps carry that into other weights: the lesson page reads its numbers from the model). The folder is written only when greedy
decoding gets at least 98 % of a held-out set (another seed, none of the training sentences)
exactly right.

    python paper_model.py --out DIR [--seed 0]   # train, evaluate, write DIR (atomically)
    python paper_model.py --eval DIR             # greedy-decode the held-out set again
    python paper_model.py --gradcheck            # finite-difference test of the backward pass
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import time
import unicodedata

import numpy as np

EXAMPLE = "The black cat sees a red ball on the table."
EXAMPLE_TRANSLATION = "o gato preto vê uma bola vermelha na mesa."

# ---------------------------------------------------------------------------------------------
# The grammar

NOUNS = [  # English, Portuguese, gender
    ("cat", "gato", "m"), ("dog", "cão", "m"), ("boy", "menino", "m"), ("book", "livro", "m"),
    ("car", "carro", "m"), ("bird", "pássaro", "m"), ("man", "homem", "m"), ("fish", "peixe", "m"),
    ("ball", "bola", "f"), ("girl", "menina", "f"), ("house", "casa", "f"), ("table", "mesa", "f"),
    ("woman", "mulher", "f"), ("flower", "flor", "f"), ("apple", "maçã", "f"), ("tree", "árvore", "f"),
]
ADJECTIVES = [  # English, masculine, feminine
    ("black", "preto", "preta"), ("white", "branco", "branca"), ("red", "vermelho", "vermelha"),
    ("small", "pequeno", "pequena"), ("old", "velho", "velha"), ("new", "novo", "nova"),
    ("pretty", "bonito", "bonita"), ("yellow", "amarelo", "amarela"), ("big", "grande", "grande"),
    ("blue", "azul", "azul"),
]
VERBS = [("sees", "vê"), ("has", "tem"), ("wants", "quer"), ("eats", "come"), ("finds", "encontra"),
         ("follows", "segue"), ("takes", "pega"), ("washes", "lava")]
ARTICLES = {"the": {"m": "o", "f": "a"}, "a": {"m": "um", "f": "uma"}, "an": {"m": "um", "f": "uma"}}
CONTRACTIONS = {"m": "no", "f": "na"}  # em + o, em + a
PREPOSITIONS = ["on", "in", "with"]   # on/in + the → no/na; with + det → com + det
P_ADJECTIVE, P_PP, P_PERIOD, P_GLUED = 0.5, 0.5, 0.5, 0.5

GRAMMAR = {
    "sentence": "NP verb NP [PP] [.]",
    "NP": "det [adj] noun → det' noun [adj'] (article and adjective agree with the noun's gender; a/an by the next word)",
    "PP": "on|in the [adj] noun → no|na noun [adj']; with det [adj] noun → com det' noun [adj']",
    "determiners": {"the": "o/a", "a, an": "um/uma"},
    "nouns": {e: f"{p} ({g})" for e, p, g in NOUNS},
    "adjectives": {e: f"{m}/{f}" if m != f else m for e, m, f in ADJECTIVES},
    "verbs": dict(VERBS),
    "probabilities": {"adjective": P_ADJECTIVE, "PP": P_PP, "period": P_PERIOD, "glued period": P_GLUED},
}

_WORDS: list[str] = []
for _w in (["the", "a", "an"] + [n[0] for n in NOUNS] + [a[0] for a in ADJECTIVES] + [v[0] for v in VERBS] + PREPOSITIONS
           + ["o", "a", "um", "uma", "no", "na", "com"] + [n[1] for n in NOUNS] + [x for a in ADJECTIVES for x in a[1:]]
           + [v[1] for v in VERBS]):
    if _w not in _WORDS:
        _WORDS.append(_w)
PIECES = ["</s>", "<unk>"] + ["▁" + w for w in _WORDS] + ["▁.", ".", "<pad>"]
ID = {p: i for i, p in enumerate(PIECES)}
V = len(PIECES)
EOS, UNK, PAD = 0, 1, V - 1
_SCORES = [-2.0 if p.startswith("▁") else -6.0 for p in PIECES]  # the Unigram scores of tokenizer.json
_UNK_SCORE = min(_SCORES) - 10.0
_LONGEST = max(len(p) for p in PIECES)


def _np_phrase(det: int, adj: int, noun: int) -> tuple[list[str], list[str]]:
    """English and Portuguese words of det [adj] noun; adj = -1 for none, det 0 the, 1 a/an."""
    e, p, g = NOUNS[noun]
    head = ADJECTIVES[adj][0] if adj >= 0 else e
    en_det = "the" if det == 0 else ("an" if head[0] in "aeiou" else "a")
    en = [en_det] + ([ADJECTIVES[adj][0]] if adj >= 0 else []) + [e]
    pt_adj = ([ADJECTIVES[adj][1 if g == "m" else 2]] if adj >= 0 else [])
    return en, [ARTICLES[en_det][g], p] + pt_adj


def generate(rng: np.random.Generator, n: int) -> list[tuple[str, list[int]]]:
    """n sentences (source text, target ids without `</s>`); all draws vectorised, in a fixed order."""
    nn, na = len(NOUNS), len(ADJECTIVES)
    det = rng.integers(0, 2, (n, 3))
    noun = rng.integers(0, nn, (n, 3))
    adj = np.where(rng.random((n, 3)) < P_ADJECTIVE, rng.integers(0, na, (n, 3)), -1)
    verb = rng.integers(0, len(VERBS), n)
    pp = np.where(rng.random(n) < P_PP, rng.integers(0, len(PREPOSITIONS), n), -1)
    period = rng.random(n) < P_PERIOD
    glued = rng.random(n) < P_GLUED
    out = []
    for i in range(n):
        s_en, s_pt = _np_phrase(det[i, 0], adj[i, 0], noun[i, 0])
        o_en, o_pt = _np_phrase(det[i, 1], adj[i, 1], noun[i, 1])
        en = s_en + [VERBS[verb[i]][0]] + o_en
        pt = s_pt + [VERBS[verb[i]][1]] + o_pt
        if pp[i] >= 0:
            prep = PREPOSITIONS[pp[i]]
            if prep == "with":
                p_en, p_pt = _np_phrase(det[i, 2], adj[i, 2], noun[i, 2])
                en += ["with"] + p_en
                pt += ["com"] + p_pt
            else:
                p_en, p_pt = _np_phrase(0, adj[i, 2], noun[i, 2])
                en += [prep] + p_en
                pt += [CONTRACTIONS[NOUNS[noun[i, 2]][2]]] + p_pt[1:]
        text = " ".join(en)
        tgt = [ID["▁" + w] for w in pt]
        if period[i]:
            text += "." if glued[i] else " ."
            tgt.append(ID["."])
        out.append((text, tgt))
    return out


def encode(text: str) -> list[int]:
    """Source ids as the folder's tokenizer.json gives them: NFKC, lower case, "▁" + each word
    (Metaspace), then the Unigram's best split of it into PIECES (Viterbi; a character no piece
    covers costs min score − 10, as in `tokenizers`, and runs of them become one `<unk>`). For the
    grammar's sentences that is one id per word, "table." → ▁table + ".". The model appends `</s>`."""
    ids: list[int] = []
    for word in unicodedata.normalize("NFKC", text).lower().split():
        w = "▁" + word
        best = [(0.0, -1, -1)] + [(-math.inf, -1, -1)] * len(w)  # (score, start, id) of the best split of w[:i]
        for i in range(len(w)):
            if best[i][0] == -math.inf:
                continue
            single = False
            for j in range(i + 1, min(len(w), i + _LONGEST) + 1):
                pid = ID.get(w[i:j])
                if pid is not None and pid not in (EOS, UNK, PAD):
                    single |= j == i + 1
                    if best[i][0] + _SCORES[pid] > best[j][0]:
                        best[j] = (best[i][0] + _SCORES[pid], i, pid)
            if not single and best[i][0] + _UNK_SCORE > best[i + 1][0]:
                best[i + 1] = (best[i][0] + _UNK_SCORE, i, UNK)
        word_ids, i = [], len(w)
        while i > 0:
            word_ids.append(best[i][2])
            i = best[i][1]
        fused: list[int] = []
        for pid in reversed(word_ids):
            if not (pid == UNK and fused[-1:] == [UNK]):
                fused.append(pid)
        ids += fused
    return ids


def detokenize(ids) -> str:
    return "".join(PIECES[i] for i in ids if i not in (EOS, PAD)).replace("▁", " ").strip()


def datasets(seed: int, steps: int, batch: int, n_heldout: int):
    """The training sentences (steps × batch, in order) and the held-out set: another seed's
    sentences that are not among the training ones, first n_heldout of them."""
    train = generate(np.random.default_rng([seed, 0]), steps * batch)
    seen = {t for t, _ in train}
    rng = np.random.default_rng([seed, 1])
    held, texts = [], set()
    while len(held) < n_heldout:
        for t, y in generate(rng, n_heldout):
            if t not in seen and t not in texts and len(held) < n_heldout:
                held.append((t, y))
                texts.add(t)
    return train, held, len(seen)


# ---------------------------------------------------------------------------------------------
# The model: Hugging Face MarianMTModel's forward (post-norm), with a hand-written backward pass

CONFIG = {
    "d_model": 128, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "encoder_ffn_dim": 512, "decoder_ffn_dim": 512, "max_position_embeddings": 64,
}
LN_EPS = 1e-5
NEG = -1e9


def hf_sinusoid(n: int, d: int) -> np.ndarray:
    """MarianSinusoidalPositionalEmbedding [n, d]: sin of the even j's angles, then cos of the odd j's."""
    p = np.arange(n, dtype=np.float64)[:, None]
    j = np.arange(d)
    theta = p / np.power(10000.0, 2 * (j // 2) / d)[None, :]
    return np.concatenate([np.sin(theta[:, 0::2]), np.cos(theta[:, 1::2])], axis=1)


def init_params(rng: np.random.Generator, cfg: dict, vocab: int, dtype=np.float32) -> dict[str, np.ndarray]:
    d, f = cfg["d_model"], cfg["encoder_ffn_dim"]

    def xavier(o, i):
        a = math.sqrt(6.0 / (i + o))
        return rng.uniform(-a, a, (o, i))

    w = {"model.shared.weight": rng.standard_normal((vocab, d)) * d ** -0.5, "final_logits_bias": np.zeros((1, vocab))}
    for stack in ("encoder", "decoder"):
        for i in range(cfg[stack + "_layers"]):
            p = f"model.{stack}.layers.{i}."
            for a in ["self_attn"] + (["encoder_attn"] if stack == "decoder" else []):
                for m in ("q", "k", "v", "out"):
                    w[f"{p}{a}.{m}_proj.weight"], w[f"{p}{a}.{m}_proj.bias"] = xavier(d, d), np.zeros(d)
                w[f"{p}{a}_layer_norm.weight"], w[f"{p}{a}_layer_norm.bias"] = np.ones(d), np.zeros(d)
            w[p + "fc1.weight"], w[p + "fc1.bias"] = xavier(f, d), np.zeros(f)
            w[p + "fc2.weight"], w[p + "fc2.bias"] = xavier(d, f), np.zeros(d)
            w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"] = np.ones(d), np.zeros(d)
    return {k: v.astype(dtype) for k, v in w.items()}


class Net:
    """Forward passes over padded batches; each op returns (output, backward) and the backward
    functions add parameter gradients into self.g."""

    def __init__(self, params: dict[str, np.ndarray], cfg: dict):
        self.p, self.cfg = params, cfg
        self.g = {k: np.zeros_like(v) for k, v in params.items()}
        self.d, self.h = cfg["d_model"], cfg["encoder_attention_heads"]
        dt = params["model.shared.weight"].dtype
        self.pos = hf_sinusoid(cfg["max_position_embeddings"], self.d).astype(dt)
        self.scale = math.sqrt(self.d)

    def linear(self, name, x):
        W, b = self.p[name + ".weight"], self.p[name + ".bias"]
        y = x @ W.T + b

        def back(g):
            g2 = g.reshape(-1, g.shape[-1])
            self.g[name + ".weight"] += g2.T @ x.reshape(-1, x.shape[-1])
            self.g[name + ".bias"] += g2.sum(0)
            return g @ W
        return y, back

    def layer_norm(self, name, x):
        w, b = self.p[name + ".weight"], self.p[name + ".bias"]
        mu = x.mean(-1, keepdims=True)
        xc = x - mu
        rstd = 1.0 / np.sqrt((xc * xc).mean(-1, keepdims=True) + LN_EPS)
        xh = xc * rstd

        def back(g):
            self.g[name + ".weight"] += (g * xh).reshape(-1, self.d).sum(0)
            self.g[name + ".bias"] += g.reshape(-1, self.d).sum(0)
            gx = g * w
            return rstd * (gx - gx.mean(-1, keepdims=True) - xh * (gx * xh).mean(-1, keepdims=True))
        return xh * w + b, back

    def attention(self, name, xq, xkv, mask):
        """mask: additive, broadcast to [B, H, Tq, Tk]. Returns (out, probs, back(g) → (g_xq, g_xkv))."""
        B, Tq, d = xq.shape
        Tk, H = xkv.shape[1], self.h
        dk = d // H
        sc = dk ** -0.5
        q, bq = self.linear(name + ".q_proj", xq)
        k, bk = self.linear(name + ".k_proj", xkv)
        v, bv = self.linear(name + ".v_proj", xkv)
        q = q.reshape(B, Tq, H, dk).transpose(0, 2, 1, 3) * sc
        k = k.reshape(B, Tk, H, dk).transpose(0, 2, 1, 3)
        v = v.reshape(B, Tk, H, dk).transpose(0, 2, 1, 3)
        s = q @ k.transpose(0, 1, 3, 2) + mask
        s -= s.max(-1, keepdims=True)
        pr = np.exp(s)
        pr /= pr.sum(-1, keepdims=True)
        o = (pr @ v).transpose(0, 2, 1, 3).reshape(B, Tq, d)
        y, bo = self.linear(name + ".out_proj", o)

        def back(g):
            go = bo(g).reshape(B, Tq, H, dk).transpose(0, 2, 1, 3)
            gp = go @ v.transpose(0, 1, 3, 2)
            gv = pr.transpose(0, 1, 3, 2) @ go
            gs = pr * (gp - (gp * pr).sum(-1, keepdims=True))
            gq = (gs @ k) * sc
            gk = gs.transpose(0, 1, 3, 2) @ q
            gq = gq.transpose(0, 2, 1, 3).reshape(B, Tq, d)
            gk = gk.transpose(0, 2, 1, 3).reshape(B, Tk, d)
            gv = gv.transpose(0, 2, 1, 3).reshape(B, Tk, d)
            return bq(gq), bk(gk) + bv(gv)
        return y, pr, back

    def ffn(self, p, x):
        f1, b1 = self.linear(p + "fc1", x)
        r = np.maximum(f1, 0)
        f2, b2 = self.linear(p + "fc2", r)
        y, bl = self.layer_norm(p + "final_layer_norm", x + f2)

        def back(g):
            g = bl(g)
            return g + b1(b2(g) * (f1 > 0))
        return y, back

    def embed(self, ids):
        E = self.p["model.shared.weight"]
        x = E[ids] * self.scale + self.pos[:ids.shape[1]]

        def back(g):
            np.add.at(self.g["model.shared.weight"], ids.reshape(-1), g.reshape(-1, self.d) * self.scale)
        return x, back

    def self_attention_block(self, p, x, mask):
        """x = LN(x + SelfAttn(x)), the post-norm sublayer both stacks start with; its backward
        takes the gradient of the output and returns that of x."""
        a, _, ba = self.attention(p + "self_attn", x, x, mask)
        y, bl = self.layer_norm(p + "self_attn_layer_norm", x + a)

        def back(g):
            g = bl(g)
            gq, gkv = ba(g)
            return g + gq + gkv
        return y, back

    def encoder(self, src, src_mask):
        x, be = self.embed(src)
        backs = []
        for i in range(self.cfg["encoder_layers"]):
            p = f"model.encoder.layers.{i}."
            x, bs = self.self_attention_block(p, x, src_mask)
            x, bf = self.ffn(p, x)
            backs.append((bs, bf))

        def back(g):
            for bs, bf in reversed(backs):
                g = bs(bf(g))
            be(g)
        return x, back

    def decoder(self, dec_in, memory, self_mask, cross_mask):
        y, be = self.embed(dec_in)
        backs = []
        for i in range(self.cfg["decoder_layers"]):
            p = f"model.decoder.layers.{i}."
            y, bs = self.self_attention_block(p, y, self_mask)
            c, _, bc = self.attention(p + "encoder_attn", y, memory, cross_mask)
            y, bl = self.layer_norm(p + "encoder_attn_layer_norm", y + c)
            y, bf = self.ffn(p, y)
            backs.append((bs, bc, bl, bf))

        def back(g):
            gmem = np.zeros_like(memory)
            for bs, bc, bl, bf in reversed(backs):
                g = bl(bf(g))
                gq, gm = bc(g)
                gmem += gm
                g = bs(g + gq)
            be(g)
            return gmem
        return y, back

    def loss(self, src, dec_in, labels, smoothing=0.0):
        """Mean cross-entropy over the non-pad labels; fills self.g (zeroed first)."""
        for v in self.g.values():
            v.fill(0)
        dt = self.p["model.shared.weight"].dtype
        src_mask = np.where(src == PAD, NEG, 0.0).astype(dt)[:, None, None, :]
        T = dec_in.shape[1]
        causal = np.where(np.tril(np.ones((T, T), dtype=bool)), 0.0, NEG).astype(dt)[None, None]
        memory, benc = self.encoder(src, src_mask)
        h, bdec = self.decoder(dec_in, memory, causal, src_mask)
        E = self.p["model.shared.weight"]
        vocab = E.shape[0]
        logits = h @ E.T + self.p["final_logits_bias"][0]
        logits[..., PAD] = NEG
        logits -= logits.max(-1, keepdims=True)
        pr = np.exp(logits)
        pr /= pr.sum(-1, keepdims=True)
        keep = labels != PAD
        n = keep.sum()
        lab = np.where(keep, labels, 0)
        target = np.zeros_like(pr)
        np.put_along_axis(target, lab[..., None], 1.0 - smoothing, -1)
        if smoothing:
            target += smoothing / (vocab - 1)
            target[..., PAD] = 0.0
        logp = np.log(np.maximum(pr, 1e-30))
        loss = float(-(target * logp).sum(-1)[keep].sum() / n)
        gl = (pr * target.sum(-1, keepdims=True) - target) * (keep[..., None] / n)
        gl = gl.astype(dt)
        gl[..., PAD] = 0.0
        self.g["final_logits_bias"][0] += gl.reshape(-1, vocab).sum(0)
        self.g["model.shared.weight"] += gl.reshape(-1, vocab).T @ h.reshape(-1, self.d)
        gh = gl @ E
        gmem = bdec(gh)
        benc(gmem)
        return loss


def batch_arrays(pairs):
    """(source ids, target ids) pairs → padded src (+ `</s>`), decoder inputs, labels."""
    ts = max(len(s) for s, _ in pairs) + 1
    tt = max(len(t) for _, t in pairs) + 1
    B = len(pairs)
    src = np.full((B, ts), PAD, dtype=np.int64)
    dec = np.full((B, tt), PAD, dtype=np.int64)
    lab = np.full((B, tt), PAD, dtype=np.int64)
    for i, (s, t) in enumerate(pairs):
        src[i, :len(s) + 1] = s + [EOS]
        dec[i, :len(t) + 1] = [PAD] + t
        lab[i, :len(t) + 1] = t + [EOS]
    return src, dec, lab


# ---------------------------------------------------------------------------------------------
# Greedy decoding (key/value cache; the same choices as the reference: pad never chosen, stop at
# `</s>`, at most max(⌈2.5 · source tokens⌉, 4) target tokens)

def _ln(x, w, b):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    return xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + LN_EPS) * w + b


def greedy(P: dict[str, np.ndarray], cfg: dict, sources: list[list[int]], batch: int = 1000) -> list[list[int]]:
    """Target ids (with the final `</s>` when reached) for each source (ids without `</s>`)."""
    out = []
    for b0 in range(0, len(sources), batch):
        out += _greedy_batch(P, cfg, sources[b0:b0 + batch])
    return out


def _greedy_batch(P, cfg, sources):
    d, H = cfg["d_model"], cfg["encoder_attention_heads"]
    dk = d // H
    sc = dk ** -0.5
    dt = P["model.shared.weight"].dtype
    E = P["model.shared.weight"]
    pos = hf_sinusoid(cfg["max_position_embeddings"], d).astype(dt)
    lin = lambda n, x: x @ P[n + ".weight"].T + P[n + ".bias"]  # noqa: E731
    src, _, _ = batch_arrays([(s, []) for s in sources])
    B, Ts = src.shape
    mask = np.where(src == PAD, NEG, 0.0).astype(dt)[:, None, None, :]

    def heads(x):
        return x.reshape(x.shape[0], x.shape[1], H, dk).transpose(0, 2, 1, 3)

    def attend(q, k, v, m):
        s = (q * sc) @ k.transpose(0, 1, 3, 2) + m
        s -= s.max(-1, keepdims=True)
        pr = np.exp(s)
        pr /= pr.sum(-1, keepdims=True)
        return (pr @ v).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[2], d)

    x = E[src] * math.sqrt(d) + pos[:Ts]
    for i in range(cfg["encoder_layers"]):
        p = f"model.encoder.layers.{i}."
        a = attend(heads(lin(p + "self_attn.q_proj", x)), heads(lin(p + "self_attn.k_proj", x)),
                   heads(lin(p + "self_attn.v_proj", x)), mask)
        x = _ln(x + lin(p + "self_attn.out_proj", a), P[p + "self_attn_layer_norm.weight"], P[p + "self_attn_layer_norm.bias"])
        f = lin(p + "fc2", np.maximum(lin(p + "fc1", x), 0))
        x = _ln(x + f, P[p + "final_layer_norm.weight"], P[p + "final_layer_norm.bias"])
    L = cfg["decoder_layers"]
    cross = [(heads(lin(f"model.decoder.layers.{i}.encoder_attn.k_proj", x)), heads(lin(f"model.decoder.layers.{i}.encoder_attn.v_proj", x)))
             for i in range(L)]
    cache: list[list] = [[None, None] for _ in range(L)]
    lengths = np.array([len(s) + 1 for s in sources])
    limits = np.minimum(np.maximum(np.ceil(2.5 * lengths).astype(int), 4), cfg["max_position_embeddings"])
    result = [[] for _ in range(B)]
    done = np.zeros(B, dtype=bool)
    tok = np.full(B, PAD, dtype=np.int64)
    t = 0
    while not done.all() and t < limits.max():
        y = E[tok][:, None, :] * math.sqrt(d) + pos[t]
        for i in range(L):
            p = f"model.decoder.layers.{i}."
            k, v = heads(lin(p + "self_attn.k_proj", y)), heads(lin(p + "self_attn.v_proj", y))
            ck = cache[i]
            ck[0] = k if ck[0] is None else np.concatenate([ck[0], k], axis=2)
            ck[1] = v if ck[1] is None else np.concatenate([ck[1], v], axis=2)
            a = attend(heads(lin(p + "self_attn.q_proj", y)), ck[0], ck[1], 0.0)
            y = _ln(y + lin(p + "self_attn.out_proj", a), P[p + "self_attn_layer_norm.weight"], P[p + "self_attn_layer_norm.bias"])
            c = attend(heads(lin(p + "encoder_attn.q_proj", y)), cross[i][0], cross[i][1], mask)
            y = _ln(y + lin(p + "encoder_attn.out_proj", c), P[p + "encoder_attn_layer_norm.weight"], P[p + "encoder_attn_layer_norm.bias"])
            f = lin(p + "fc2", np.maximum(lin(p + "fc1", y), 0))
            y = _ln(y + f, P[p + "final_layer_norm.weight"], P[p + "final_layer_norm.bias"])
        logits = y[:, 0] @ E.T + P["final_logits_bias"][0]
        logits[:, PAD] = -np.inf
        tok = logits.argmax(-1)
        for b in np.nonzero(~done)[0]:
            result[b].append(int(tok[b]))
            if tok[b] == EOS or len(result[b]) >= limits[b]:
                done[b] = True
        t += 1
    return result


def score(P, cfg, held) -> dict:
    outs = greedy(P, cfg, [encode(t) for t, _ in held])
    exact = tokens = total = 0
    for (_, y), o in zip(held, outs):
        want = y + [EOS]
        exact += o == want
        tokens += sum(a == b for a, b in zip(o, want))
        total += len(want)
    return {"exact_match": exact / len(held), "token_accuracy": tokens / total, "outputs": outs}


# ---------------------------------------------------------------------------------------------
# Files

def write_safetensors(path: str, tensors: dict[str, np.ndarray]) -> None:
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def read_safetensors(path: str) -> dict[str, np.ndarray]:
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(raw, dtype="<f4", count=(b - a) // 4, offset=8 + n + a).reshape(info["shape"]).astype(np.float32)
    return out


def tokenizer_json() -> dict:
    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": PIECES[i], **flags} for i in (EOS, UNK, PAD)],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]},
        "pre_tokenizer": dict(metaspace), "post_processor": None, "decoder": dict(metaspace),
        "model": {"type": "Unigram", "unk_id": UNK,
                  "vocab": [[p, sc] for p, sc in zip(PIECES, _SCORES)], "byte_fallback": False},
    }


def hf_config(extra: dict) -> dict:
    return {
        "model_type": "marian", "architectures": ["MarianMTModel"], "vocab_size": V, "decoder_vocab_size": V,
        **CONFIG, "activation_function": "relu", "scale_embedding": True, "normalize_before": False,
        "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True, "static_position_embeddings": True,
        "eos_token_id": EOS, "pad_token_id": PAD, "decoder_start_token_id": PAD, "bad_words_ids": [[PAD]],
        "max_length": 64, "torch_dtype": "float32", "attnviz": extra,
    }


# ---------------------------------------------------------------------------------------------
# Training

STEPS, BATCH, PEAK_LR, WARMUP, N_HELDOUT = 400, 64, 2e-3, 80, 2000
THRESHOLD = 0.98


def log(msg: str) -> None:
    print("[paper] " + msg, flush=True)


def _lr(step: int, steps: int) -> float:
    if step < WARMUP:
        return PEAK_LR * (step + 1) / WARMUP
    return PEAK_LR * 0.5 * (1 + math.cos(math.pi * (step - WARMUP) / max(1, steps - WARMUP)))


def fit(seed: int = 0, steps: int | None = None, batch: int | None = None):
    """Trains; returns (params, held-out set, n_train, seconds)."""
    t0 = time.time()
    steps, batch = steps or STEPS, batch or BATCH
    train, held, n_train = datasets(seed, steps, batch, N_HELDOUT)
    pairs = [(encode(t), y) for t, y in train]
    P = init_params(np.random.default_rng([seed, 2]), CONFIG, V)
    net = Net(P, CONFIG)
    m = {k: np.zeros_like(v) for k, v in P.items()}
    s = {k: np.zeros_like(v) for k, v in P.items()}
    b1, b2, eps = 0.9, 0.98, 1e-9
    log(f"{n_train} training sentences, {len(held)} held out, vocabulary {V}, {sum(v.size for v in P.values())} parameters")
    avg = None
    for step in range(steps):
        src, dec, lab = batch_arrays(pairs[step * batch:(step + 1) * batch])
        loss = net.loss(src, dec, lab)
        avg = loss if avg is None else 0.9 * avg + 0.1 * loss
        lr = _lr(step, steps)
        c1, c2 = 1 - b1 ** (step + 1), 1 - b2 ** (step + 1)
        for k, w in P.items():
            g = net.g[k]
            m[k] *= b1
            m[k] += (1 - b1) * g
            s[k] *= b2
            s[k] += (1 - b2) * g * g
            w -= (lr / c1) * m[k] / (np.sqrt(s[k] / c2) + eps)
        if step % 50 == 0 or step == steps - 1:
            log(f"step {step:4d}  loss {avg:.4f}  lr {lr:.2e}  {time.time() - t0:.1f}s")
    return P, held, n_train, time.time() - t0


def _atomic_write(out_dir: str, files: dict) -> None:
    out_dir = os.path.abspath(out_dir)
    parent = os.path.dirname(out_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".paper-", dir=parent)
    try:
        for name, write in files.items():
            write(os.path.join(tmp, name))
        os.chmod(tmp, 0o755)
        if os.path.exists(out_dir):
            old = tempfile.mkdtemp(prefix=".paper-old-", dir=parent)
            os.rename(out_dir, os.path.join(old, "x"))
            os.rename(tmp, out_dir)
            shutil.rmtree(old)
        else:
            os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def train(out_dir: str, seed: int = 0) -> dict:
    """Trains, evaluates on the held-out set and writes out_dir; raises RuntimeError (writing
    nothing) below 98 % exact match. Returns the training.json dict."""
    P, held, n_train, secs = fit(seed)
    r = score(P, CONFIG, held)
    log(f"held-out exact match {r['exact_match']:.4f}, token accuracy {r['token_accuracy']:.4f} on {len(held)} sentences")
    log(f"trained in {secs:.1f}s")
    examples = [{"source": EXAMPLE, "target": detokenize(greedy(P, CONFIG, [encode(EXAMPLE)])[0]), "expected": EXAMPLE_TRANSLATION}]
    examples += [{"source": t, "target": detokenize(o), "expected": detokenize(y)} for (t, y), o in list(zip(held, r["outputs"]))[:4]]
    for e in examples:
        log(f"{e['source']}  →  {e['target']}")
    if r["exact_match"] < THRESHOLD:
        raise RuntimeError(f"held-out exact match {r['exact_match']:.4f} < {THRESHOLD}: nothing written")
    info = {
        "seed": seed, "steps": STEPS, "batch": BATCH, "seconds": round(secs, 1), "numpy": np.__version__,
        "n_train": n_train, "n_heldout": len(held), "heldout_exact_match": r["exact_match"],
        "required_exact_match": THRESHOLD,
        "heldout_token_accuracy": r["token_accuracy"], "examples": examples, "grammar": GRAMMAR,
    }
    extra = {"task": "toy English → Portuguese (generated grammar), the Transformer of 'Attention Is All You Need' scaled down",
             "trained_by": "python/attnviz/paper_model.py", "seed": seed, "heldout_exact_match": r["exact_match"],
             "heldout_token_accuracy": r["token_accuracy"], "example": EXAMPLE}

    def dump(obj):
        def w(path):
            with open(path, "w", encoding="utf-8") as f:
                json.dump(obj, f, indent=2, ensure_ascii=False)
        return w
    _atomic_write(out_dir, {
        "config.json": dump(hf_config(extra)),
        "model.safetensors": lambda path: write_safetensors(path, P),
        "tokenizer.json": dump(tokenizer_json()),
        "training.json": dump(info),
    })
    log(f"wrote {out_dir}")
    return info


def evaluate(model_dir: str) -> dict:
    """Greedy-decodes the held-out set of the folder's seed with the folder's weights."""
    with open(os.path.join(model_dir, "training.json"), encoding="utf-8") as f:
        info = json.load(f)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    P = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    _, held, _ = datasets(info["seed"], info["steps"], info["batch"], info["n_heldout"])
    r = score(P, cfg, held)
    log(f"{model_dir}: held-out exact match {r['exact_match']:.4f}, token accuracy {r['token_accuracy']:.4f} on {len(held)} sentences")
    return {"exact_match": r["exact_match"], "token_accuracy": r["token_accuracy"], "n_heldout": len(held)}


# ---------------------------------------------------------------------------------------------
# Gradient check

def gradcheck(seed: int = 0, per_tensor: int = 3) -> float:
    """Backward vs central differences on a tiny float64 model; returns the worst relative error."""
    cfg = {**CONFIG, "d_model": 8, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
           "encoder_ffn_dim": 16, "decoder_ffn_dim": 16}
    rng = np.random.default_rng(seed)
    P = init_params(rng, cfg, V, np.float64)
    for k in P:  # break the symmetric init (zero biases, unit LayerNorms)
        P[k] += rng.standard_normal(P[k].shape) * 0.1
    data = generate(np.random.default_rng([seed, 3]), 3)
    src, dec, lab = batch_arrays([(encode(t), y) for t, y in data])
    net = Net(P, cfg)
    overall = 0.0
    for smoothing in (0.0, 0.1):
        net.loss(src, dec, lab, smoothing)
        grads = {k: v.copy() for k, v in net.g.items()}
        worst = 0.0
        for k in sorted(P):
            w = P[k].reshape(-1)
            g = grads[k].reshape(-1)
            # the entries with the largest gradients, and random ones
            idx = list(np.argsort(-np.abs(g))[:per_tensor]) + list(rng.integers(0, w.size, per_tensor))
            for i in idx:
                old = w[i]
                h = 1e-6
                w[i] = old + h
                lp = net.loss(src, dec, lab, smoothing)
                w[i] = old - h
                lm = net.loss(src, dec, lab, smoothing)
                w[i] = old
                num = (lp - lm) / (2 * h)
                # relative error; the floor keeps round-off (~1e-10) on zero gradients (k_proj
                # biases: softmax ignores a shift of every score) from counting as an error
                err = abs(num - g[i]) / max(abs(num) + abs(g[i]), 1e-5)
                worst = max(worst, err)
        log(f"gradient check (label smoothing {smoothing}): {len(P)} tensors, worst relative error {worst:.2e}")
        overall = max(overall, worst)
    return overall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the trained model folder here")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eval", metavar="DIR", help="re-evaluate a written folder")
    ap.add_argument("--gradcheck", action="store_true", help="check the backward pass against finite differences")
    a = ap.parse_args(argv)
    if a.gradcheck:
        return 0 if gradcheck(a.seed) < 1e-4 else 1
    if a.eval:
        return 0 if evaluate(a.eval)["exact_match"] >= THRESHOLD else 1
    if not a.out:
        ap.error("--out DIR, --eval DIR or --gradcheck")
    try:
        train(a.out, a.seed)
    except RuntimeError as e:
        log(str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
