#!/usr/bin/env python3
"""Independent float64 numpy reference for the attnviz inference core.

Shares no code with the Rust crate: weights are read by hand (safetensors and the Marian
`.bin` layout), the maths is plain numpy in float64, tokenization uses the HF `tokenizers`
Python package on the same tokenizer.json files.

Models:
  * BERT (HF BertModel folder: config.json + model.safetensors + tokenizer.json),
    e.g. all-MiniLM-L6-v2 -> self-attention per layer, last hidden state, mean-pooled
    L2-normalised sentence embedding.
  * Marian "tiny" transformer en->pt (Bergamot, `*.intgemm.alphas.bin` + tokenizer.json):
    6 post-norm encoder layers, 2 decoder layers of SSRU + cross-attention + FFN, greedy.

CLI (prints the same JSON schema as `attnviz attend --format json`):
    python tests/reference/reference.py --model models/minilm --text "..."
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import struct
import sys

import numpy as np
from tokenizers import Tokenizer

_erf = np.vectorize(math.erf, otypes=[np.float64])


# ----------------------------------------------------------------------------- maths

def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def gelu_erf(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(x.dtype))


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def multi_head_attention(q_in, kv_in, wq, bq, wk, bk, wv, bv, wo, bo, heads, values=None):
    """q_in [Tq, D], kv_in [Tk, D]; weights as [in, out] for x @ W. No mask (all visible).

    Returns (output [Tq, D], probabilities [H, Tq, Tk], heads' outputs side by side [Tq, D]).
    `values`: a dict that receives "f" = f_h(x_j) `# [H, Tk, D]` (see `value_vectors`)."""
    tq, d = q_in.shape
    tk = kv_in.shape[0]
    dk = d // heads
    q = (q_in @ wq + bq).reshape(tq, heads, dk).transpose(1, 0, 2)  # [H, Tq, dk]
    k = (kv_in @ wk + bk).reshape(tk, heads, dk).transpose(1, 0, 2)  # [H, Tk, dk]
    v = (kv_in @ wv + bv).reshape(tk, heads, dk).transpose(1, 0, 2)  # [H, Tk, dk]
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(dk)  # [H, Tq, Tk]
    probs = softmax(scores)
    ctx = (probs @ v).transpose(1, 0, 2).reshape(tq, d)  # [Tq, D]
    if values is not None:
        values["f"] = value_vectors(v, wo)
    return ctx @ wo + bo, probs, ctx


def value_vectors(v: np.ndarray, wo: np.ndarray) -> np.ndarray:
    """f_h(x_j) of Kobayashi et al. (EMNLP 2020), `# [H, Tk, D]`: key j's value in head h
    (`v` = its heads' values `# [H, Tk, dk]`, value bias included) sent through head h's rows of
    the output projection (`wo` as [in = H·dk, out = D] for x @ W; no output bias). Then the
    attention sub-layer's output is Σ_h Σ_j α_hij f_h(x_j) + b_O."""
    h, _, dk = v.shape
    return v @ wo.reshape(h, dk, wo.shape[1])


def value_norms(probs: np.ndarray, f: np.ndarray) -> np.ndarray:
    """‖α_hij f_h(x_j)‖ = α_hij ‖f_h(x_j)‖ `# [H, Tq, Tk]` (α ≥ 0)."""
    return probs * np.linalg.norm(f, axis=-1)[:, None, :]


def recompose(probs: np.ndarray, f: np.ndarray, bias) -> np.ndarray:
    """Σ_h Σ_j α_hij f_h(x_j) + b_O `# [Tq, D]`: what the sub-layer's output must equal."""
    out = np.einsum("hij,hjd->id", probs, f)
    return out if bias is None else out + bias


def attention_block(kind: str, layer: int, probs: np.ndarray) -> dict:
    h, tq, tk = probs.shape
    return {
        "kind": kind,
        "layer": layer,
        "heads": int(h),
        "shape": [int(h), int(tq), int(tk)],
        "data": [float(v) for v in probs.reshape(-1)],
    }


# ----------------------------------------------------------------------------- safetensors

_ST_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I8": "i1"}


def read_safetensors(path: str, dtype=np.float64) -> dict[str, np.ndarray]:
    """Hand-written reader: u64 LE header length, JSON header, raw little-endian data. An I8
    tensor `<name>` is an int8 weight with an F32 `<name>_scale` (one scale per row, or one for
    all): it is returned dequantised, real = q · scale, and `<name>_scale` is not returned."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        if info["dtype"] == "BF16":
            # bfloat16 is the upper half of a float32
            bits = np.frombuffer(raw, dtype="<u2", count=(end - start) // 2, offset=base + start)
            out[name] = (bits.astype("<u4") << 16).view("<f4").reshape(info["shape"]).astype(dtype)
            continue
        dt = _ST_DTYPES[info["dtype"]]
        arr = np.frombuffer(raw, dtype=dt, count=(end - start) // np.dtype(dt).itemsize,
                            offset=base + start)
        out[name] = arr.reshape(info["shape"]).astype(dtype)
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "I8":
            continue
        scale = out.pop(f"{name}_scale")
        q = out[name]
        out[name] = q * (scale.reshape(-1, *([1] * (q.ndim - 1))) if scale.size > 1 else scale.reshape(()))
    return out


# ----------------------------------------------------------------------------- Marian .bin

MARIAN_F32 = 0x404
MARIAN_INT8 = 0x4101


def read_marian_bin(path: str, dtype=np.float64) -> tuple[dict[str, np.ndarray], dict]:
    """Returns ({name: float64 array}, {name: (type, header_shape)}).

    int8 (0x4101) matrices: the header shape is [in, out] but the bytes are [out, in] row-major,
    followed by a float32 alpha; real = int8 / alpha. They are returned as [in, out] (ready for
    x @ W), except `Wemb` which is returned as stored, [vocab, dim]."""
    with open(path, "rb") as f:
        raw = f.read()
    version, n = struct.unpack_from("<QQ", raw, 0)
    if version != 1:
        raise ValueError(f"unsupported Marian binary version {version}")
    off = 16
    headers = []
    for _ in range(n):
        headers.append(struct.unpack_from("<4Q", raw, off))
        off += 32
    names = []
    for name_len, _, _, _ in headers:
        names.append(raw[off:off + name_len].split(b"\0", 1)[0].decode("utf-8"))
        off += name_len
    shapes = []
    for _, _, shape_len, _ in headers:
        shapes.append(struct.unpack_from(f"<{shape_len}i", raw, off))
        off += 4 * shape_len
    (pad,) = struct.unpack_from("<Q", raw, off)
    off += 8 + pad
    tensors: dict[str, np.ndarray] = {}
    info: dict[str, tuple] = {}
    for name, (_, typ, _, data_len), shape in zip(names, headers, shapes):
        start = off
        off += data_len
        info[name] = (typ, tuple(shape))
        if name.endswith("QuantMultA") or name.startswith("special:"):
            continue
        count = int(np.prod(shape))
        if typ == MARIAN_F32:
            tensors[name] = np.frombuffer(raw, "<f4", count, start).astype(dtype).reshape(shape)
        elif typ == MARIAN_INT8:
            q = np.frombuffer(raw, np.int8, count, start).astype(dtype)
            (alpha,) = struct.unpack_from("<f", raw, start + count)
            w = q / dtype(alpha)
            if name == "Wemb":
                tensors[name] = w.reshape(shape)  # [vocab, dim], not transposed
            else:
                d_in, d_out = shape
                tensors[name] = w.reshape(d_out, d_in).T.copy()  # -> [in, out]
        else:
            raise ValueError(f"unsupported tensor type {typ:#x} for {name}")
    if off != len(raw):
        raise ValueError(f"Marian binary: data ends at {off}, file has {len(raw)} bytes")
    return tensors, info


def sinusoidal_positions(n: int, d: int, start: int = 0, dtype=np.float64) -> np.ndarray:
    """Marian: [sin(p * w_i) for i < d/2] ++ [cos(p * w_i)], w_i = exp(-i * ln(1e4)/(d/2 - 1))."""
    half = d // 2
    inv = np.exp(-np.arange(half, dtype=np.float64) * (math.log(10000.0) / (half - 1)))
    pos = np.arange(start, start + n, dtype=np.float64)[:, None] * inv[None, :]
    return np.concatenate([np.sin(pos), np.cos(pos)], axis=1).astype(dtype)


# ----------------------------------------------------------------------------- BERT

# DistilBertModel's module names -> BertModel's (transformers' modeling_distilbert.py).
DISTILBERT_TO_BERT = [("transformer.layer.", "encoder.layer."), ("attention.q_lin.", "attention.self.query."),
                      ("attention.k_lin.", "attention.self.key."), ("attention.v_lin.", "attention.self.value."),
                      ("attention.out_lin.", "attention.output.dense."), ("sa_layer_norm.", "attention.output.LayerNorm."),
                      ("ffn.lin1.", "intermediate.dense."), ("ffn.lin2.", "output.dense."),
                      ("output_layer_norm.", "output.LayerNorm.")]


def bert_position_ids(ids: np.ndarray, padding_idx: int | None) -> np.ndarray:
    """BERT/DistilBERT: 0, 1, 2, …. RoBERTa: transformers' create_position_ids_from_input_ids,
    mask = ids != padding_idx; cumsum(mask) * mask + padding_idx (pad tokens at padding_idx, the
    others from padding_idx + 1 on)."""
    if padding_idx is None:
        return np.arange(len(ids))
    mask = (ids != padding_idx).astype(np.int64)
    return np.cumsum(mask) * mask + padding_idx


class Bert:
    """BertModel, RobertaModel / XLMRobertaModel (positions after padding_idx) and
    DistilBertModel (its names and config keys mapped onto BERT's; no token types)."""

    def __init__(self, model_dir: str, dtype=np.float64, weights_file: str = "model.safetensors"):
        self.dtype = dtype
        with open(os.path.join(model_dir, "config.json")) as f:
            self.config = json.load(f)
        self.w = read_safetensors(os.path.join(model_dir, weights_file), dtype)
        model_type = self.config.get("model_type", "bert")
        # task-head checkpoints prefix every name with the base model's ("bert.", "roberta.", …)
        base = {"roberta": "roberta.", "xlm-roberta": "roberta.", "distilbert": "distilbert."}.get(model_type, "bert.")
        if not any(k.startswith("embeddings.") for k in self.w):
            self.w = {k[len(base):]: v for k, v in self.w.items() if k.startswith(base)}
        if model_type == "distilbert":
            c = self.config
            self.config = {"num_attention_heads": c["n_heads"], "max_position_embeddings": c.get("max_position_embeddings", 512),
                           "layer_norm_eps": 1e-12}
            renamed = {}
            for k, v in self.w.items():
                for old, new in DISTILBERT_TO_BERT:
                    k = k.replace(old, new, 1)
                renamed[k] = v
            self.w = renamed
        self.padding_idx = int(self.config.get("pad_token_id", 1)) if model_type in ("roberta", "xlm-roberta") else None
        self.heads = int(self.config["num_attention_heads"])
        self.eps = float(self.config.get("layer_norm_eps", 1e-12))
        # RoBERTa's tokens take the rows after padding_idx
        self.max_len = int(self.config.get("max_position_embeddings", 512)) - (0 if self.padding_idx is None else self.padding_idx + 1)
        self.layers = 0
        while f"encoder.layer.{self.layers}.attention.self.query.weight" in self.w:
            self.layers += 1
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=self.max_len)

    def lin(self, name):
        # torch Linear stores weight [out, in]
        return self.w[name + ".weight"].T, self.w[name + ".bias"]

    def embedding_parts(self, text: str) -> dict[str, np.ndarray]:
        """The first layer's input `# [T, D]` split into parts that sum to it (the score parts'
        `embedding` basis): with each row's mean and deviation σ of the embedding sum w + p + t
        fixed, LayerNorm is linear in it, LN(w + p + t) = γ(w − w̄)/σ + γ(p − p̄)/σ +
        [γ(t − t̄)/σ + β]: "token", "position" and "bias" (segment embedding and LayerNorm bias)."""
        ids = np.array(self.tok.encode(text).ids, dtype=np.int64)
        w = self.w
        word = w["embeddings.word_embeddings.weight"][ids]
        pos = w["embeddings.position_embeddings.weight"][bert_position_ids(ids, self.padding_idx)]
        seg = w["embeddings.token_type_embeddings.weight"][0] if "embeddings.token_type_embeddings.weight" in w else 0.0
        seg = np.broadcast_to(seg, word.shape)
        total = word + pos + seg
        sigma = np.sqrt(((total - total.mean(axis=-1, keepdims=True)) ** 2).mean(axis=-1, keepdims=True) + self.eps)
        gamma, beta = w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]
        centred = lambda a: gamma * (a - a.mean(axis=-1, keepdims=True)) / sigma  # noqa: E731
        return {"token": centred(word), "position": centred(pos), "bias": centred(seg) + beta}

    def forward(self, text: str, trace_layer: int | None = None, values: bool = False) -> dict:
        """trace_layer: also return that layer's attention block stages under "block".
        values: also return, per layer, the value decomposition under "values" (a list of
        {"f": f_h(x_j) [H, T, D], "norms": ‖α f‖ [H, T, T], "output": the attention sub-layer's
        output before the residual [T, D], "bias": b_O})."""
        enc = self.tok.encode(text)
        ids = np.array(enc.ids, dtype=np.int64)
        truncated = len(enc.overflowing) > 0
        w = self.w
        token_type = w["embeddings.token_type_embeddings.weight"][0] if "embeddings.token_type_embeddings.weight" in w else 0.0
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][bert_position_ids(ids, self.padding_idx)]
             + token_type)
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        attentions, decomposed = [], []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            wq, bq = self.lin(p + "attention.self.query")
            wk, bk = self.lin(p + "attention.self.key")
            wv, bv = self.lin(p + "attention.self.value")
            wo, bo = self.lin(p + "attention.output.dense")
            vals = {} if values else None
            a, probs, ctx = multi_head_attention(x, x, wq, bq, wk, bk, wv, bv, wo, bo, self.heads, vals)
            if values:
                decomposed.append({"f": vals["f"], "norms": value_norms(probs, vals["f"]), "output": a, "bias": bo})
            x_in = x
            x = layer_norm(x + a, w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], self.eps)
            if i == trace_layer:
                block = {"concat": ctx, "projected": a, "block_input": x_in, "residual": x_in + a, "normed": x}
            w1, b1 = self.lin(p + "intermediate.dense")
            w2, b2 = self.lin(p + "output.dense")
            f = gelu_erf(x @ w1 + b1) @ w2 + b2
            x = layer_norm(x + f, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"],
                           self.eps)
            attentions.append(probs)
        pooled = x.mean(axis=0)
        emb = pooled / max(np.linalg.norm(pooled), 1e-12)
        out = {
            "ids": enc.ids,
            "tokens": list(enc.tokens),
            "truncated": truncated,
            "attentions": attentions,
            "last_hidden_state": x,
            "sentence_embedding": emb,
        }
        if trace_layer is not None:
            out["block"] = block
        if values:
            out["values"] = decomposed
        return out


# ----------------------------------------------------------------------------- Marian

class Marian:
    EOS = 0
    EPS = 1e-9
    # Not properties of the model: choices shared with the Rust side (src/models/marian/) so that
    # truncation and max_length stops agree. Source: at most 255 pieces + </s>; target: at most
    # max(ceil(2.5 * T_src), 4) tokens (Bergamot's max-length-factor 2.5), T_src counting </s>.
    MAX_SOURCE_TOKENS = 256  # including the appended </s>
    MAX_LENGTH_FACTOR = 2.5

    def __init__(self, model_dir: str, dtype=np.float64):
        self.dtype = dtype
        bins = sorted(f for f in os.listdir(model_dir) if f.endswith(".bin") and "lex" not in f)
        if not bins:
            raise FileNotFoundError(f"no Marian .bin model in {model_dir}")
        self.w, self.info = read_marian_bin(os.path.join(model_dir, bins[0]), dtype)
        self.emb = self.w["Wemb"]  # [V, D]
        self.dim = self.emb.shape[1]
        self.heads = 8
        # heads are not in the tensor shapes; read them from the embedded model.yml if present
        yml = self._model_yml(os.path.join(model_dir, bins[0]))
        for line in yml.splitlines():
            if line.startswith("transformer-heads:"):
                self.heads = int(line.split(":", 1)[1])
        self.enc_layers = 0
        while f"encoder_l{self.enc_layers + 1}_self_Wq" in self.w:
            self.enc_layers += 1
        self.dec_layers = 0
        while f"decoder_l{self.dec_layers + 1}_rnn_W" in self.w:
            self.dec_layers += 1
        self.tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        # Each attention's inputs since the last `forward`: {prefix: ([query rows per call], keys' input)}.
        self.inputs: dict[str, tuple[list, np.ndarray]] = {}

    def embedding_parts(self, ids) -> dict[str, np.ndarray]:
        """The first encoder layer's input `# [T, D]` split into parts that sum to it (the score
        parts' `embedding` basis): "token" = embedding · √d, "position" = the sinusoid, "bias" = 0
        (the projection biases join it)."""
        token = self.emb[np.asarray(ids)] * math.sqrt(self.dim)
        return {"token": token, "position": sinusoidal_positions(len(ids), self.dim, dtype=self.dtype),
                "bias": np.zeros_like(token)}

    @staticmethod
    def _model_yml(path: str) -> str:
        with open(path, "rb") as f:
            raw = f.read()
        i = raw.rfind(b"dec-depth")
        if i < 0:
            return ""
        j = raw.rfind(b"\n", 0, i)
        return raw[j + 1 if j >= 0 else i:].decode("utf-8", "replace")

    def _attn(self, prefix, q_in, kv_in, values=None):
        """values: a dict that receives "f" (f_h(x_j) [H, Tk, D]), "output" (the sub-layer's
        output before the residual [Tq, D]) and "bias" (b_O). `self.inputs[prefix]` gets q_in's
        rows (a decode step's cross-attention: one row a call) and kv_in."""
        self.inputs.setdefault(prefix, ([], kv_in))[0].append(q_in)
        w = self.w
        out, probs, _ = multi_head_attention(
            q_in, kv_in,
            w[prefix + "_Wq"], w[prefix + "_bq"][0], w[prefix + "_Wk"], w[prefix + "_bk"][0],
            w[prefix + "_Wv"], w[prefix + "_bv"][0], w[prefix + "_Wo"], w[prefix + "_bo"][0],
            self.heads, values)
        if values is not None:
            values["output"], values["bias"] = out, w[prefix + "_bo"][0]
        x = layer_norm(q_in + out, w[prefix + "_Wo_ln_scale"][0], w[prefix + "_Wo_ln_bias"][0], self.EPS)
        return x, probs

    def _ffn(self, prefix, x):
        w = self.w
        h = relu(x @ w[prefix + "_W1"] + w[prefix + "_b1"][0]) @ w[prefix + "_W2"] + w[prefix + "_b2"][0]
        return layer_norm(x + h, w[prefix + "_ffn_ln_scale"][0], w[prefix + "_ffn_ln_bias"][0], self.EPS)

    def encode(self, ids, values: list | None = None):
        """values: a list that receives, per layer, the decomposition (see `Bert.forward`)."""
        t = len(ids)
        x = self.emb[np.asarray(ids)] * math.sqrt(self.dim) + sinusoidal_positions(t, self.dim, dtype=self.dtype)
        attns = []
        for i in range(1, self.enc_layers + 1):
            vals = {} if values is not None else None
            x, probs = self._attn(f"encoder_l{i}_self", x, x, vals)
            if values is not None:
                vals["norms"] = value_norms(probs, vals["f"])
                values.append(vals)
            x = self._ffn(f"encoder_l{i}_ffn", x)
            attns.append(probs)
        return x, attns

    def unembed(self, y: np.ndarray) -> np.ndarray:
        """Logits `# [..., V]` of decoder rows y `# [..., D]`: y · Wembᵀ + the output bias (what
        `forward` does to the last layer's output; no final norm: the layers end in their own)."""
        return y @ self.emb.T + self.w["decoder_ff_logit_out_b"][0]

    def max_target_len(self, src_len: int) -> int:
        return max(math.ceil(self.MAX_LENGTH_FACTOR * src_len), 4)

    def forward(self, text: str, max_target_len: int | None = None, values: bool = False) -> dict:
        """values: also return the value decompositions, "encoder_values" and "cross_values"
        (per layer, as in `Bert.forward`; the cross-attention's f is the encoder memory through
        the layer's context Wv / Wo, its "output" stacks every decoding step's [Tt, D])."""
        self.inputs = {}
        enc = self.tok.encode(text, add_special_tokens=False)
        ids = list(enc.ids)
        tokens = list(enc.tokens)
        truncated = False
        if len(ids) > self.MAX_SOURCE_TOKENS - 1:
            ids, tokens, truncated = ids[:self.MAX_SOURCE_TOKENS - 1], tokens[:self.MAX_SOURCE_TOKENS - 1], True
        ids.append(self.EOS)
        tokens.append(self.tok.id_to_token(self.EOS))
        enc_values = [] if values else None
        memory, enc_attn = self.encode(ids, enc_values)
        w = self.w
        if max_target_len is None:
            max_target_len = self.max_target_len(len(ids))
        cells = [np.zeros(self.dim, self.dtype) for _ in range(self.dec_layers)]
        cross_rows = [[] for _ in range(self.dec_layers)]  # per layer: list of [H, Tk]
        cross_vals = [{"outputs": []} for _ in range(self.dec_layers)]
        out_ids: list[int] = []
        step_probs = []  # each step's softmax of its logits
        layer_outputs = []  # each step's decoder layers' outputs [L, D] (the logit lens's inputs)
        prev_emb = np.zeros(self.dim, self.dtype)  # first decoder input: zero vector (not an embedding)
        stop_reason = "max_length"
        for step in range(max_target_len):
            x = (prev_emb * math.sqrt(self.dim) + sinusoidal_positions(1, self.dim, start=step, dtype=self.dtype)[0])[None, :]
            outs = []
            for li in range(self.dec_layers):
                p = f"decoder_l{li + 1}"
                # SSRU: f = sigmoid(x Wf + bf); c = f c + (1 - f) (x W); h = LN(x + relu(c))
                f = sigmoid(x[0] @ w[p + "_rnn_Wf"] + w[p + "_rnn_bf"][0])
                cells[li] = f * cells[li] + (1.0 - f) * (x[0] @ w[p + "_rnn_W"])
                x = layer_norm(x + relu(cells[li]), w[p + "_rnn_ffn_ln_scale"][0],
                               w[p + "_rnn_ffn_ln_bias"][0], self.EPS)
                vals = {} if values else None
                x, probs = self._attn(p + "_context", x, memory, vals)
                cross_rows[li].append(probs[:, 0, :])
                if values:  # f depends on the memory only: the same at every step
                    cross_vals[li].update(f=vals["f"], bias=vals["bias"])
                    cross_vals[li]["outputs"].append(vals["output"][0])
                x = self._ffn(p + "_ffn", x)
                outs.append(x[0])
            layer_outputs.append(np.stack(outs))
            logits = x[0] @ self.emb.T + w["decoder_ff_logit_out_b"][0]
            nxt = int(np.argmax(logits))
            step_probs.append(softmax(logits))
            out_ids.append(nxt)
            if nxt == self.EOS:
                stop_reason = "eos"
                break
            prev_emb = self.emb[nxt]
        cross = [np.stack(rows, axis=1) for rows in cross_rows]  # [H, Tt, Ts]
        text_ids = [i for i in out_ids if i != self.EOS]
        result = {
            "ids": ids,
            "tokens": tokens,
            "target_ids": out_ids,
            "target_tokens": [self.tok.id_to_token(i) for i in out_ids],
            "output_text": self.tok.decode(text_ids),
            "truncated": truncated,
            "stop_reason": stop_reason,
            "probs": step_probs,
            "decoder_layer_outputs": layer_outputs,
            "encoder_attentions": enc_attn,
            "cross_attentions": cross,
        }
        if values:
            result["encoder_values"] = enc_values
            result["cross_values"] = [
                {"f": v["f"], "norms": value_norms(a, v["f"]), "output": np.stack(v.pop("outputs")), "bias": v["bias"]}
                for v, a in zip(cross_vals, cross)]
        return result


# ----------------------------------------------------------------------------- front door

def model_id(model_dir: str) -> str:
    man = os.path.join(model_dir, "manifest.json")
    if os.path.exists(man):
        with open(man) as f:
            mid = json.load(f).get("id")
        if mid:
            return mid
    files = os.listdir(model_dir)
    if "config.json" in files and "model.safetensors" in files:
        return "minilm-l6"
    if any(f.endswith(".bin") for f in files):
        return "en-pt-tiny"
    raise ValueError(f"cannot tell which model is in {model_dir}")


def weights_file(model_dir: str, weights: str) -> str:
    """The safetensors file of a weight set: "f32" the folder's model.safetensors; "int8" the one
    its manifest's `variants.int8` names (int8 + per-row scales, read by read_safetensors)."""
    if weights == "f32":
        return "model.safetensors"
    with open(os.path.join(model_dir, "manifest.json")) as f:
        files = json.load(f).get("variants", {}).get(weights, [])
    named = [f for f in files if f.endswith(".safetensors")]
    if len(named) != 1:
        raise ValueError(f"{model_dir}: the manifest names no {weights} safetensors file")
    return named[0]


@functools.lru_cache(maxsize=4)
def load(model_dir: str, dtype=np.float64, weights: str = "f32"):
    """dtype=np.float32 runs the same maths in float32 (to size rounding noise); default float64.
    weights: "f32", or "int8" for a BERT folder's int8 variant (its manifest names the file)."""
    model_dir = os.path.abspath(model_dir)
    files = os.listdir(model_dir)
    if "config.json" in files and "model.safetensors" in files:
        return Bert(model_dir, dtype, weights_file(model_dir, weights))
    if any(f.endswith(".bin") for f in files):
        return Marian(model_dir, dtype)
    raise ValueError(f"unsupported model folder {model_dir}")


def attend(model_dir: str, text: str, dtype=np.float64, measure: str = "weight", raw: bool = False, weights: str = "f32") -> dict:
    """Same schema as `attnviz attend --format json [--measure value-norm]`: measure="value-norm"
    adds "value_norms" blocks ‖α_ij f_h(x_j)‖ laid out like "attentions". raw=True also returns
    the forward's numpy results under "_raw"."""
    if measure not in ("weight", "value-norm"):
        raise ValueError(f"unknown measure {measure!r}")
    values = measure == "value-norm"
    m = load(os.path.abspath(model_dir), dtype, weights)
    out = {"model": model_id(model_dir), "text": text}
    if isinstance(m, Bert):
        r = m.forward(text, values=values)
        out["tokens"] = {"source": r["tokens"], "target": []}
        out["output_text"] = None
        out["truncated"] = r["truncated"]
        out["stop_reason"] = None
        out["attentions"] = [attention_block("encoder_self", i, p) for i, p in enumerate(r["attentions"])]
        if values:
            out["value_norms"] = [attention_block("encoder_self", i, v["norms"]) for i, v in enumerate(r["values"])]
        out["sentence_embedding"] = [float(v) for v in r["sentence_embedding"]]
    else:
        r = m.forward(text, values=values)
        out["tokens"] = {"source": r["tokens"], "target": r["target_tokens"]}
        out["output_text"] = r["output_text"]
        out["truncated"] = r["truncated"]
        out["stop_reason"] = r["stop_reason"]
        out["attentions"] = (
            [attention_block("encoder_self", i, p) for i, p in enumerate(r["encoder_attentions"])]
            + [attention_block("cross", i, p) for i, p in enumerate(r["cross_attentions"])])
        if values:
            out["value_norms"] = (
                [attention_block("encoder_self", i, v["norms"]) for i, v in enumerate(r["encoder_values"])]
                + [attention_block("cross", i, v["norms"]) for i, v in enumerate(r["cross_values"])])
    if raw:
        out["_raw"] = r
    return out


def cli_parser(model_help: str) -> argparse.ArgumentParser:
    """The options both reference CLIs share (this one and reference_llama.py's)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help=model_help)
    ap.add_argument("--text", required=True)
    ap.add_argument("--float32", action="store_true", help="compute in float32 instead of float64")
    ap.add_argument("--measure", choices=["weight", "value-norm"], default="weight",
                    help="value-norm: also print value_norms blocks ‖α_ij f_h(x_j)‖")
    return ap


def run_cli(compute) -> int:
    """Prints `compute()` as one line of JSON; a bad model or text is one line on stderr, status 2."""
    try:
        out = compute()
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


def main(argv=None) -> int:
    args = cli_parser("model folder (models/minilm, models/en-pt)").parse_args(argv)
    dtype = np.float32 if args.float32 else np.float64
    return run_cli(lambda: attend(args.model, args.text, dtype, args.measure))


if __name__ == "__main__":
    sys.exit(main())
