#!/usr/bin/env python3
"""Independent float64 numpy reference for the GPT-2 family (Hugging Face `GPT2LMHeadModel`
folder: config.json + model.safetensors + tokenizer.json).

Shares no code with the Rust crate: the safetensors file is read by hand (reference.py's
reader), tokenization uses the HF `tokenizers` Python package on the same tokenizer.json, and
the forward is written from the GPT-2 definition: x = wte[id] + wpe[pos]; per block
a = x + c_proj(attn(ln_1(x))) with causal softmax(q·kᵀ/√d_k), x' = a + mlp(ln_2(a)) with
mlp = c_proj(gelu_new(c_fc(·))); logits = ln_f(x) · wteᵀ. Conv1D weights are used as stored,
[in, out] for x @ W. No KV cache: each generated token re-runs the whole sequence.

CLI (prints the same JSON schema as `attnviz attend --format json --generate N`):
    python tests/reference/reference_gpt2.py --model DIR --text "..." [--generate N]
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys

import numpy as np
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import attention_block, layer_norm, read_safetensors, softmax, value_norms, value_vectors  # noqa: E402

TOP_K = 5


def gelu_new(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class Gpt2:
    def __init__(self, model_dir: str, dtype=np.float64):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.config = json.load(f)
        c = self.config
        self.heads, self.layers, self.eps = c["n_head"], c["n_layer"], c.get("layer_norm_epsilon", 1e-5)
        w = read_safetensors(os.path.join(model_dir, "model.safetensors"), dtype)
        # With or without the `transformer.` prefix.
        self.w = {k[len("transformer."):] if k.startswith("transformer.") else k: v for k, v in w.items()}
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        eos = c.get("eos_token_id")
        self.eos = [eos] if isinstance(eos, int) else list(eos or [])

    def ln(self, x, name):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def conv1d(self, x, name):
        return x @ self.w[name + ".weight"] + self.w[name + ".bias"]

    def forward(self, ids: list[int], values: bool = False) -> dict:
        """→ probabilities per layer [H, T, T], the hidden state entering each block [T, D],
        each block's residual after attention and its ln_2, the final logits of every position."""
        t = len(ids)
        x = self.w["wte.weight"][ids] + self.w["wpe.weight"][:t]
        d = x.shape[1]
        dk = d // self.heads
        future = np.triu(np.ones((t, t), dtype=bool), k=1)
        out = {"attentions": [], "block_input": [], "residual": [], "normed": [], "values": []}
        for i in range(self.layers):
            p = f"h.{i}"
            out["block_input"].append(x)
            qkv = self.conv1d(self.ln(x, p + ".ln_1"), p + ".attn.c_attn")  # [T, 3D]
            q, k, v = (qkv[:, j * d:(j + 1) * d].reshape(t, self.heads, dk).transpose(1, 0, 2) for j in range(3))  # [H, T, dk]
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(dk)  # [H, T, T]
            scores = np.where(future[None], -np.inf, scores)
            probs = softmax(scores)
            ctx = (probs @ v).transpose(1, 0, 2).reshape(t, d)
            a = x + self.conv1d(ctx, p + ".attn.c_proj")
            if values:
                out["values"].append(value_norms(probs, value_vectors(v, self.w[p + ".attn.c_proj.weight"])))
            normed = self.ln(a, p + ".ln_2")
            out["attentions"].append(probs)
            out["residual"].append(a)
            out["normed"].append(normed)
            x = a + self.conv1d(gelu_new(self.conv1d(normed, p + ".mlp.c_fc")), p + ".mlp.c_proj")
        out["logits"] = self.ln(x, "ln_f") @ self.w["wte.weight"].T  # [T, vocab]
        return out

    @staticmethod
    def probs(logits: np.ndarray) -> np.ndarray:
        return softmax(logits[None])[0]

    @staticmethod
    def top(probs: np.ndarray, k: int = TOP_K) -> list[tuple[int, float]]:
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], i))[:k]
        return [(i, float(probs[i])) for i in order]

    def generate(self, text: str, n: int = 0, values: bool = False) -> dict:
        enc = self.tok.encode(text, add_special_tokens=True)
        ids = list(enc.ids)
        prompt = list(ids)
        steps = []
        for _ in range(n):
            p = self.probs(self.forward(ids)["logits"][-1])
            nxt = self.top(p, 1)[0][0]
            steps.append({"position": len(ids) - 1, "id": nxt, "probs": p})
            ids.append(nxt)
            if nxt in self.eos:
                break
        r = self.forward(ids, values)
        r.update(tokens=list(enc.tokens), prompt=prompt, ids=ids, steps=steps, next=self.probs(r["logits"][-1]))
        return r


@functools.lru_cache(maxsize=4)
def load(model_dir: str, dtype=np.float64) -> Gpt2:
    return Gpt2(os.path.abspath(model_dir), dtype)


def attend(model_dir: str, text: str, generate: int = 0, values: bool = False, raw: bool = False) -> dict:
    """Same schema as `attnviz attend --format json --generate N` (the fields compared)."""
    m = load(os.path.abspath(model_dir))
    r = m.generate(text, generate, values)
    gen = [m.tok.id_to_token(i) for i in r["ids"][len(r["prompt"]):]]
    out = {
        "tokens": {"source": r["tokens"], "target": gen},
        "attentions": [attention_block("decoder_self", i, p) for i, p in enumerate(r["attentions"])],
        "generation": {"prompt_len": len(r["prompt"]), "token_ids": r["ids"],
                       "next": [{"token": m.tok.id_to_token(i), "id": i, "p": p} for i, p in m.top(r["next"])]},
    }
    if values:
        out["value_norms"] = [attention_block("decoder_self", i, v) for i, v in enumerate(r["values"])]
    if raw:
        out["_raw"] = r
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a GPT-2 folder (config.json, model.safetensors, tokenizer.json)")
    ap.add_argument("--text", required=True)
    ap.add_argument("--generate", type=int, default=0)
    a = ap.parse_args(argv)
    json.dump(attend(a.model, a.text, a.generate), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
