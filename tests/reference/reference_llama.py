#!/usr/bin/env python3
"""Independent float64 numpy reference for the llama family (SmolLM2-135M-Instruct, GGUF).

Shares no code with the Rust crate: tensors and metadata are read with the `gguf` PyPI package
(`GGUFReader`, `gguf.quants.dequantize` for Q4_1/Q8_0), the tokenizer is a pure-Python byte-level
BPE written here from the GGUF vocabulary and merges, and the maths is plain numpy in float64
(`dtype=np.float32` runs the same maths in float32, to size rounding noise).

Model: RMSNorm, rotary positions in llama.cpp's GGUF layout (adjacent pairs (2i, 2i+1): the
converter permuted q/k), grouped-query attention (query head h uses KV head h // (H / H_kv)),
SwiGLU FFN, output head = `output.weight` if present, else the tied `token_embd.weight`.
Every forward is a full causal pass over the whole sequence (no KV cache); greedy generation
re-runs the whole sequence for every new token.

CLI (prints the same JSON schema as `attnviz attend --format json`):
    python tests/reference/reference_llama.py --model models/smollm2 --text "..." [--generate N]
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys

import numpy as np
import regex

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import reference  # noqa: E402
from reference import attention_block, model_id, softmax, value_norms, value_vectors  # noqa: E402

MAX_POSITIONS = 256  # the viewer's cap on prompt + generated tokens (a choice shared with the Rust side)
TOP_K = 5


# ----------------------------------------------------------------------------- GGUF

def gguf_path(model_dir: str) -> str:
    files = sorted(f for f in os.listdir(model_dir) if f.endswith(".gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file in {model_dir}")
    return os.path.join(model_dir, files[0])


def _field(reader, key: str):
    f = reader.fields.get(key)
    return None if f is None else f.contents()


@functools.lru_cache(maxsize=2)
def read_gguf(path: str) -> tuple[dict, dict]:
    """Returns (metadata {key: value}, tensors {name: float64 array}).

    Arrays are returned in numpy (row-major) order, i.e. the GGUF shape reversed: a GGUF matrix
    with ne = [in, out] becomes [out, in] (a torch Linear weight; use x @ W.T)."""
    import gguf  # imported here so the tokenizer helpers work without it

    reader = gguf.GGUFReader(path)
    meta = {}
    for key in reader.fields:
        if key.startswith("GGUF."):
            continue
        meta[key] = _field(reader, key)
    tensors = {}
    for t in reader.tensors:
        shape = tuple(int(n) for n in reversed(t.shape.tolist()))
        w = gguf.quants.dequantize(t.data, t.tensor_type)
        tensors[t.name] = np.asarray(w, dtype=np.float64).reshape(shape)
        tensors[t.name].setflags(write=False)
    return meta, tensors


# ----------------------------------------------------------------------------- tokenizer

def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (Ġ = space, Ċ = newline)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


# GPT-2 / HF ByteLevel(use_regex=True) pattern; `smollm` first isolates every \p{N} character.
GPT2_PATTERN = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
DIGIT = regex.compile(r"\p{N}")
TOKEN_TYPE_CONTROL = 3


class ByteBPE:
    """Byte-level BPE from GGUF metadata (tokenizer.ggml.model = gpt2).

    Control tokens (token_type 3, e.g. <|im_start|>) typed literally in the text are matched as
    single special tokens before any pre-tokenization (as HF's added special tokens and llama.cpp
    with parse_special do); the text between them goes through the pre-tokenizer and BPE."""

    def __init__(self, meta: dict):
        model = meta.get("tokenizer.ggml.model")
        if model != "gpt2":
            raise ValueError(f"unsupported tokenizer.ggml.model {model!r}")
        pre = meta.get("tokenizer.ggml.pre")
        if pre not in ("smollm",):
            raise ValueError(f"unsupported pre-tokenizer {pre!r}")
        self.tokens: list[str] = list(meta["tokenizer.ggml.tokens"])
        self.types: list[int] = [int(t) for t in meta["tokenizer.ggml.token_type"]]
        self.vocab = {s: i for i, s in enumerate(self.tokens)}
        self.ranks = {}
        for r, m in enumerate(meta["tokenizer.ggml.merges"]):
            a, b = m.split(" ")
            self.ranks[(a, b)] = r
        self.add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", False))
        self.bos = meta.get("tokenizer.ggml.bos_token_id")
        self.eos = int(meta["tokenizer.ggml.eos_token_id"])
        self.byte_enc = bytes_to_unicode()
        self.byte_dec = {c: b for b, c in self.byte_enc.items()}
        specials = [s for s, t in zip(self.tokens, self.types) if t == TOKEN_TYPE_CONTROL]
        specials.sort(key=len, reverse=True)  # longest first
        self.special_ids = {self.vocab[s] for s in specials}
        self.special_re = regex.compile("|".join(regex.escape(s) for s in specials)) if specials else None
        self._cache: dict[str, list[str]] = {}

    def pre_tokenize(self, text: str) -> list[str]:
        words = []
        pos = 0
        for m in DIGIT.finditer(text):  # Digits(individual_digits=True): each digit is its own piece
            if m.start() > pos:
                words.extend(GPT2_PATTERN.findall(text[pos:m.start()]))
            words.append(m.group())
            pos = m.end()
        if pos < len(text):
            words.extend(GPT2_PATTERN.findall(text[pos:]))
        return words

    def bpe(self, word: str) -> list[str]:
        """`word` in byte-level characters; merges the lowest-ranked adjacent pair until none."""
        if word in self._cache:
            return self._cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = parts[best], parts[best + 1]
            merged, i = [], 0
            while i < len(parts):  # merge every occurrence of (a, b), left to right
                if i < len(parts) - 1 and parts[i] == a and parts[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        self._cache[word] = parts
        return parts

    def _encode_plain(self, text: str) -> list[int]:
        ids = []
        for word in self.pre_tokenize(text):
            mapped = "".join(self.byte_enc[b] for b in word.encode("utf-8"))
            for piece in self.bpe(mapped):
                ids.append(self.vocab[piece])
        return ids

    def encode(self, text: str) -> list[int]:
        ids = [int(self.bos)] if self.add_bos and self.bos is not None else []
        pos = 0
        if self.special_re is not None:
            for m in self.special_re.finditer(text):
                ids.extend(self._encode_plain(text[pos:m.start()]))
                ids.append(self.vocab[m.group()])
                pos = m.end()
        ids.extend(self._encode_plain(text[pos:]))
        return ids

    def token(self, i: int) -> str:
        return self.tokens[i]

    def decode(self, ids, skip_special: bool = False) -> str:
        out = bytearray()
        for i in ids:
            if i in self.special_ids:
                if not skip_special:
                    out.extend(self.tokens[i].encode("utf-8"))
                continue
            out.extend(self.byte_dec[c] for c in self.tokens[i])
        return out.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------- model

def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def rope(x: np.ndarray, base: float, dims: int, start: int = 0, pairs: str = "adjacent") -> np.ndarray:
    """x [H, T, head_dim]. llama.cpp "normal" rope (GGUF layout): rotates (x[2i], x[2i+1]) by
    angle p * base^(-2i/dims). pairs="half" is the HF/NeoX layout (x[i], x[i + d/2]), kept only to
    show that the GGUF file needs the adjacent one (see NOTES.md)."""
    t = x.shape[1]
    inv = base ** (-np.arange(0, dims, 2, dtype=np.float64) / dims)  # [dims/2]
    ang = np.arange(start, start + t, dtype=np.float64)[:, None] * inv[None, :]  # [T, dims/2]
    cos, sin = np.cos(ang).astype(x.dtype), np.sin(ang).astype(x.dtype)
    out = x.copy()
    if pairs == "adjacent":
        x0, x1 = x[..., 0:dims:2], x[..., 1:dims:2]
        out[..., 0:dims:2] = x0 * cos - x1 * sin
        out[..., 1:dims:2] = x0 * sin + x1 * cos
    else:
        h = dims // 2
        x0, x1 = x[..., :h], x[..., h:dims]
        out[..., :h] = x0 * cos - x1 * sin
        out[..., h:dims] = x0 * sin + x1 * cos
    return out


class Llama:
    def __init__(self, path: str, dtype=np.float64, rope_pairs: str = "adjacent"):
        self.path = path
        self.dtype = dtype
        self.rope_pairs = rope_pairs
        meta, tensors = read_gguf(path)
        self.meta = meta
        arch = meta["general.architecture"]
        if arch != "llama":
            raise ValueError(f"unsupported architecture {arch!r}")
        g = lambda k, d=None: meta.get(f"{arch}.{k}", d)  # noqa: E731
        self.layers = int(g("block_count"))
        self.d = int(g("embedding_length"))
        self.heads = int(g("attention.head_count"))
        self.kv_heads = int(g("attention.head_count_kv", self.heads))
        self.head_dim = self.d // self.heads
        self.rope_dims = int(g("rope.dimension_count", self.head_dim))
        self.rope_base = float(g("rope.freq_base", 10000.0))
        self.eps = float(g("attention.layer_norm_rms_epsilon"))
        self.tok = ByteBPE(meta)
        cast = (lambda a: a) if dtype == np.float64 else (lambda a: a.astype(dtype))
        self.w = {k: cast(v) for k, v in tensors.items()}
        self.emb = self.w["token_embd.weight"]  # [V, D]
        self.out = self.w.get("output.weight", self.emb)  # tied when the file has no output.weight
        self.tied = "output.weight" not in self.w

    def forward(self, ids, logits_from: int = 0, values: list | None = None, qk: list | None = None,
                hidden: list | None = None):
        """Full causal pass. Returns (per-layer probabilities [H, T, T] with exact zeros above the
        diagonal, logits [T - logits_from, V] for positions logits_from..T-1).
        values: a list that receives, per layer, {"f": f_h(x_j) [H, T, D] (query head h's KV
        head h // group, through head h's columns of attn_output), "norms": ‖α f‖ [H, T, T],
        "output": the attention sub-layer's output before the residual [T, D], "bias": None}.
        qk: a list that receives, per layer, (q [H, T, hd], k [Hkv, T, hd]) after the rotation.
        hidden: a list that receives, per layer, its output [T, D] (the residual stream after
        the layer's FFN; the last one is what `unembed` turns into the logits)."""
        ids = np.asarray(ids, dtype=np.int64)
        t = len(ids)
        w, hd, H, Hkv = self.w, self.head_dim, self.heads, self.kv_heads
        group = H // Hkv
        x = self.emb[ids].copy()  # [T, D]
        mask = np.triu(np.ones((t, t), dtype=bool), k=1)
        scale = self.dtype(1.0 / math.sqrt(hd))
        attentions = []
        for i in range(self.layers):
            p = f"blk.{i}."
            h = rms_norm(x, w[p + "attn_norm.weight"], self.eps)
            q = (h @ w[p + "attn_q.weight"].T).reshape(t, H, hd).transpose(1, 0, 2)  # [H, T, hd]
            k = (h @ w[p + "attn_k.weight"].T).reshape(t, Hkv, hd).transpose(1, 0, 2)  # [Hkv, T, hd]
            v = (h @ w[p + "attn_v.weight"].T).reshape(t, Hkv, hd).transpose(1, 0, 2)
            q = rope(q, self.rope_base, self.rope_dims, pairs=self.rope_pairs)
            k = rope(k, self.rope_base, self.rope_dims, pairs=self.rope_pairs)
            if qk is not None:
                qk.append((q, k))
            kv_of = np.arange(H) // group  # query head h reads KV head h // group
            scores = q @ k[kv_of].transpose(0, 2, 1) * scale  # [H, T, T]
            scores = np.where(mask, -np.inf, scores)
            probs = softmax(scores)
            probs[:, mask] = 0.0  # exp(-inf) is already 0; make it explicit
            ctx = (probs @ v[kv_of]).transpose(1, 0, 2).reshape(t, H * hd)
            a = ctx @ w[p + "attn_output.weight"].T
            if values is not None:
                f = value_vectors(v[kv_of], w[p + "attn_output.weight"].T)
                values.append({"f": f, "norms": value_norms(probs, f), "output": a, "bias": None})
            x = x + a
            h = rms_norm(x, w[p + "ffn_norm.weight"], self.eps)
            f = silu(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)
            x = x + f @ w[p + "ffn_down.weight"].T
            if hidden is not None:
                hidden.append(x)
            attentions.append(probs)
        x = rms_norm(x[logits_from:], w["output_norm.weight"], self.eps)
        return attentions, x @ self.out.T

    def unembed(self, x: np.ndarray) -> np.ndarray:
        """Logits `# [T, V]` of residual-stream rows x `# [T, D]`: the final RMSNorm, then the
        output head (what `forward` does to the last layer's output; the logit lens applies it
        to every layer's)."""
        return rms_norm(x, self.w["output_norm.weight"], self.eps) @ self.out.T

    @staticmethod
    def top(probs: np.ndarray, k: int = TOP_K) -> list[tuple[int, float]]:
        order = np.argsort(-probs, kind="stable")[:k]
        return [(int(j), float(probs[j])) for j in order]

    def generate(self, text: str, n: int = 0, values: bool = False) -> dict:
        """Greedy: each new token = argmax of the logits after a full re-run of the sequence.
        The result covers every position fed (prompt, then each generated token, the last one
        included), from one more full pass over the final sequence."""
        prompt = self.tok.encode(text)
        truncated = False
        if len(prompt) + n > MAX_POSITIONS:
            raise ValueError(f"prompt of {len(prompt)} tokens + {n} exceeds {MAX_POSITIONS} positions")
        ids = list(prompt)
        stop_reason = None
        for _ in range(n):
            _, logits = self.forward(ids, logits_from=len(ids) - 1)
            nxt = int(np.argmax(logits[-1]))
            ids.append(nxt)
            stop_reason = "max_length"
            if nxt == self.tok.eos:
                stop_reason = "eos"
                break
        decomposed = [] if values else None
        attentions, logits = self.forward(ids, logits_from=len(prompt) - 1, values=decomposed)
        probs = softmax(logits.astype(np.float64))  # [G + 1, V]: rows for positions P-1 .. T-1
        gen = ids[len(prompt):]
        return {
            "ids": ids,
            "prompt_len": len(prompt),
            "tokens": [self.tok.token(i) for i in prompt],
            "target_tokens": [self.tok.token(i) for i in gen],
            "output_text": self.tok.decode(gen) if n > 0 else None,
            "stop_reason": stop_reason,
            "truncated": truncated,
            "attentions": attentions,
            "probs": probs,
            **({"values": decomposed} if values else {}),
        }


@functools.lru_cache(maxsize=4)
def load(model_dir: str, dtype=np.float64, rope_pairs: str = "adjacent") -> Llama:
    return Llama(gguf_path(os.path.abspath(model_dir)), dtype, rope_pairs)


def attend(model_dir: str, text: str, generate: int = 0, dtype=np.float64, raw: bool = False,
           measure: str = "weight") -> dict:
    """Same schema as `attnviz attend --format json [--measure value-norm]` for a llama model.
    raw=True also returns the numpy results under "_raw" (probabilities as float64 arrays)."""
    if measure not in ("weight", "value-norm"):
        raise ValueError(f"unknown measure {measure!r}")
    m = load(model_dir, dtype)
    r = m.generate(text, generate, values=measure == "value-norm")
    p = r["prompt_len"]

    def entries(row):
        return [{"token": m.tok.token(j), "id": j, "p": pj} for j, pj in m.top(row)]

    out = {
        "model": model_id(model_dir),
        "text": text,
        "tokens": {"source": r["tokens"], "target": r["target_tokens"]},
        "output_text": r["output_text"],
        "truncated": r["truncated"],
        "stop_reason": r["stop_reason"],
        "attentions": [attention_block("decoder_self", i, a) for i, a in enumerate(r["attentions"])],
        **({"value_norms": [attention_block("decoder_self", i, v["norms"]) for i, v in enumerate(r["values"])]}
           if measure == "value-norm" else {}),
        "generation": {
            "prompt_len": p,
            "token_ids": r["ids"],
            "steps": [{"position": p - 1 + i, "token": m.tok.token(j), "id": j, "top": entries(r["probs"][i])}
                      for i, j in enumerate(r["ids"][p:])],
            "next": entries(r["probs"][-1]),
            "sampling": {"method": "greedy", "temperature": 0.0, "top_k": 0, "seed": 0},
        },
    }
    if raw:
        out["_raw"] = r
    return out


def main(argv=None) -> int:
    ap = reference.cli_parser("model folder holding one .gguf (models/smollm2)")
    ap.add_argument("--generate", type=int, default=0, help="greedy continuation length")
    args = ap.parse_args(argv)
    dtype = np.float32 if args.float32 else np.float64
    return reference.run_cli(lambda: attend(args.model, args.text, args.generate, dtype, measure=args.measure))


if __name__ == "__main__":
    sys.exit(main())
