#!/usr/bin/env python3
"""Independent float64 numpy reference for Hugging Face Marian (opus-mt) folders.

Shares no code with the Rust crate: weights are read by hand (`reference.read_safetensors`),
tokenization uses the HF `tokenizers` package on the folder's tokenizer.json, the maths is plain
numpy in float64, written from `transformers`' MarianMTModel conventions:
  * embeddings `model.shared.weight` × √d_model when `scale_embedding`, plus the sinusoid of
    `MarianSinusoidalPositionalEmbedding` (θ[p, j] = p / 10000^(2⌊j/2⌋/d); sin of the even j in
    the first half, cos of the odd j in the second), positions from 0 on both sides;
  * post-norm layers, LayerNorm eps 1e-5: x = LN(x + SelfAttn(x)); [decoder: x = LN(x +
    CrossAttn(x, memory))]; x = LN(x + fc2(act(fc1(x)))), act from `activation_function`;
  * logits = h · sharedᵀ + final_logits_bias, the pad token never chosen (`bad_words_ids`);
  * greedy decoding from `decoder_start_token_id` to `</s>` or the length limit.
Every decode step re-runs the whole decoder over all its inputs with a causal mask (no cache).

CLI (prints the same JSON schema as `attnviz attend --format json`):
    python tests/reference/reference_opus_mt.py --model DIR --text "..."
"""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from reference import attention_block, cli_parser, gelu_erf, layer_norm, read_safetensors, relu, run_cli, sigmoid, softmax, value_norms, value_vectors  # noqa: E402

EPS = 1e-5
# Choices shared with the Rust side (src/models/marian/), not properties of the model: the
# source is cut to min(256, max_position_embeddings) tokens with `</s>`; the target has at most
# max(⌈2.5 · T_src⌉, 4) tokens, and no more than the positions, the config's max_length and
# ⌈2.5 · that source cap⌉.
MAX_SOURCE_TOKENS = 256
MAX_LENGTH_FACTOR = 2.5

ACTIVATIONS = {"swish": lambda x: x * sigmoid(x), "silu": lambda x: x * sigmoid(x), "gelu": gelu_erf, "relu": relu}


def hf_sinusoid(n: int, d: int) -> np.ndarray:
    """MarianSinusoidalPositionalEmbedding's table `# [n, d]` (d even)."""
    theta = np.array([[p / np.power(10000, 2 * (j // 2) / d) for j in range(d)] for p in range(n)], dtype=np.float64)
    return np.concatenate([np.sin(theta[:, 0::2]), np.cos(theta[:, 1::2])], axis=1)


class OpusMt:
    def __init__(self, model_dir: str):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.c = json.load(f)
        self.w = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        c = self.c
        self.d, self.heads = c["d_model"], c["encoder_attention_heads"]
        self.act = ACTIVATIONS[c.get("activation_function", "swish")]
        self.emb = self.w["model.shared.weight"]
        self.scale = math.sqrt(self.d) if c.get("scale_embedding", False) else 1.0
        positions = c.get("max_position_embeddings", 1024)
        self.max_source = min(MAX_SOURCE_TOKENS, positions)
        self.max_target = min(math.ceil(self.max_source * MAX_LENGTH_FACTOR), positions, c.get("max_length") or 1 << 30)
        self.pos = hf_sinusoid(max(self.max_source, self.max_target), self.d)
        self.eos, self.pad = c.get("eos_token_id", 0), c["pad_token_id"]
        self.start = c.get("decoder_start_token_id", self.pad)
        self.norms: dict[str, np.ndarray] = {}
        # Each attention's inputs at its last call: {p: (query input [Tq, d], keys' input [Tk, d])}.
        self.inputs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        # The decoder layers' outputs `# [T, d]` at the last `decode` (the logit lens's inputs).
        self.layer_outputs: list[np.ndarray] = []

    def _ln(self, name, x):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], EPS)

    def _lin(self, name, x):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _attn(self, p, x, kv, causal: bool):
        """p: `model.encoder.layers.0.self_attn` …; returns LN(x + attention) and probs [H, Tq, Tk];
        `self.norms` gets ‖α f_h(x_j)‖ [H, Tq, Tk] (Kobayashi et al. 2020) under (p, len(x)),
        `self.inputs` (x, kv) under p."""
        self.inputs[p] = (x, kv)
        tq, tk, h = x.shape[0], kv.shape[0], self.heads
        dk = self.d // h
        q = self._lin(p + ".q_proj", x).reshape(tq, h, dk).transpose(1, 0, 2)
        k = self._lin(p + ".k_proj", kv).reshape(tk, h, dk).transpose(1, 0, 2)
        v = self._lin(p + ".v_proj", kv).reshape(tk, h, dk).transpose(1, 0, 2)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(dk)
        if causal:
            scores = np.where(np.tril(np.ones((tq, tk), dtype=bool)), scores, -np.inf)
        probs = softmax(scores)
        self.norms[p] = value_norms(probs, value_vectors(v, self.w[p + ".out_proj.weight"].T))
        ctx = (probs @ v).transpose(1, 0, 2).reshape(tq, self.d)
        return self._ln(p + "_layer_norm", x + self._lin(p + ".out_proj", ctx)), probs

    def _ffn(self, p, x):
        return self._ln(p + ".final_layer_norm", x + self._lin(p + ".fc2", self.act(self._lin(p + ".fc1", x))))

    def _embed(self, ids):
        return self.emb[np.asarray(ids)] * self.scale + self.pos[:len(ids)]

    def embedding_parts(self, ids) -> dict[str, np.ndarray]:
        """`_embed(ids)` `# [T, d]` split into parts that sum to it (the score parts' `embedding`
        basis): "token" = embedding (· √d when scaled), "position" = the sinusoid, "bias" = 0 (the
        projection biases join it)."""
        token = self.emb[np.asarray(ids)] * self.scale
        return {"token": token, "position": self.pos[:len(ids)], "bias": np.zeros_like(token)}

    def unembed(self, y: np.ndarray) -> np.ndarray:
        """Logits `# [..., V]` of decoder rows y `# [..., d]`: y · sharedᵀ + final_logits_bias, the
        pad token at −∞ (what `forward` does to the last layer's output)."""
        logits = y @ self.emb.T + self.w["final_logits_bias"][0]
        logits[..., self.pad] = -np.inf
        return logits

    def encode(self, ids):
        x, attns = self._embed(ids), []
        for i in range(self.c["encoder_layers"]):
            p = f"model.encoder.layers.{i}"
            x, probs = self._attn(p + ".self_attn", x, x, causal=False)
            x = self._ffn(p, x)
            attns.append(probs)
        return x, attns

    def decode(self, inputs, memory):
        """The whole decoder over `inputs` (ids): (hidden [T, d], self maps, cross maps)."""
        y, selfs, crosses = self._embed(inputs), [], []
        self.layer_outputs = []
        for i in range(self.c["decoder_layers"]):
            p = f"model.decoder.layers.{i}"
            y, s = self._attn(p + ".self_attn", y, y, causal=True)
            y, x = self._attn(p + ".encoder_attn", y, memory, causal=False)
            y = self._ffn(p, y)
            self.layer_outputs.append(y)
            selfs.append(s)
            crosses.append(x)
        return y, selfs, crosses

    def forward(self, text: str) -> dict:
        enc = self.tok.encode(text, add_special_tokens=False)
        ids, tokens = list(enc.ids), list(enc.tokens)
        truncated = len(ids) > self.max_source - 1
        ids, tokens = ids[:self.max_source - 1], tokens[:self.max_source - 1]
        ids.append(self.eos)
        tokens.append(self.tok.id_to_token(self.eos))
        memory, enc_attn = self.encode(ids)
        limit = min(max(math.ceil(MAX_LENGTH_FACTOR * len(ids)), 4), self.max_target)
        out: list[int] = []
        probs = []  # each step's softmax of its logits
        layer_outputs = []  # each step's decoder layers' outputs at its last input [L, d]
        stop = "max_length"
        while len(out) < limit:
            y, _, _ = self.decode([self.start] + out, memory)
            layer_outputs.append(np.stack([o[-1] for o in self.layer_outputs]))
            logits = y[-1] @ self.emb.T + self.w["final_logits_bias"][0]
            logits[self.pad] = -np.inf
            nxt = int(np.argmax(logits))
            probs.append(softmax(logits))
            out.append(nxt)
            if nxt == self.eos:
                stop = "eos"
                break
        # The maps: one causal pass over every decoder input (equal to the steps' rows).
        _, selfs, crosses = self.decode([self.start] + out[:-1], memory)
        self.encode(ids)  # the encoder's value norms again (the decoder passes left only theirs)
        return {"norms": dict(self.norms),"ids": ids, "tokens": tokens, "target_ids": out, "truncated": truncated, "stop_reason": stop,
                "probs": probs, "decoder_layer_outputs": layer_outputs, "encoder": enc_attn, "decoder_self": selfs, "cross": crosses}


def attend(model_dir: str, text: str, measure: str = "weight") -> dict:
    """measure="value-norm" adds "value_norms" blocks laid out like "attentions"."""
    m = OpusMt(os.path.abspath(model_dir))
    r = m.forward(text)
    text_ids = [i for i in r["target_ids"] if i != m.eos]
    attns = [attention_block("encoder_self", i, p) for i, p in enumerate(r["encoder"])]
    for i, (s, x) in enumerate(zip(r["decoder_self"], r["cross"])):
        attns += [attention_block("decoder_self", i, s), attention_block("cross", i, x)]
    n = r["norms"]
    norms = [attention_block("encoder_self", i, n[f"model.encoder.layers.{i}.self_attn"]) for i in range(len(r["encoder"]))]
    for i in range(len(r["cross"])):
        norms += [attention_block("decoder_self", i, n[f"model.decoder.layers.{i}.self_attn"]),
                  attention_block("cross", i, n[f"model.decoder.layers.{i}.encoder_attn"])]
    out = {
        "model": os.path.basename(os.path.normpath(model_dir)),
        "text": text,
        "tokens": {"source": r["tokens"], "target": [m.tok.id_to_token(i) for i in r["target_ids"]]},
        "target_ids": r["target_ids"],
        "output_text": m.tok.decode(text_ids),
        "truncated": r["truncated"],
        "stop_reason": r["stop_reason"],
        "attentions": attns,
        # As the Rust core's `decode_top`: each decode step's five most probable tokens.
        "decode_top": [[{"token": m.tok.id_to_token(int(i)), "id": int(i), "p": float(p[i])} for i in np.argsort(-p, kind="stable")[:5]]
                       for p in r["probs"]],
    }
    if measure == "value-norm":
        out["value_norms"] = norms
    return out


def main(argv=None) -> int:
    args = cli_parser("an opus-mt folder (config.json, model.safetensors, tokenizer.json)").parse_args(argv)
    return run_cli(lambda: attend(args.model, args.text, args.measure))


if __name__ == "__main__":
    sys.exit(main())
