#!/usr/bin/env python3
"""Writes tiny random-weight models in Hugging Face layout, for the tests of "Open your model".

    .venv/bin/python scripts/tiny_models.py --out DIR
    # DIR/tiny-bert{,-f16,-bf16,-sharded}, tiny-gpt2{,-f16,-bf16}, tiny-marian, tiny-roberta{,-f16}, tiny-distilbert{,-bf16}

Each folder is what a user drops on the page: config.json (model_type bert), model.safetensors
and tokenizer.json (WordPiece, uncased, [CLS] … [SEP]). 2 layers × 4 heads, hidden 32: about
130 KB. tiny-marian is an opus-mt folder (model_type marian: encoder-decoder, 2 + 2 layers ×
4 heads, d_model 32, swish, shared embeddings, final_logits_bias) with a Unigram (SentencePiece-
like) tokenizer.json whose ids play vocab.json's part: `</s>` 0, `<unk>` 1, `<pad>` last. All are built in well under a second with numpy and tokenizers alone (no torch, no hub). The
weights are seeded, so a run writes the same bytes every time. safetensors is written by hand:
an 8-byte little-endian header length, a JSON header, the raw little-endian data.

tiny-gpt2 is a GPT2LMHeadModel folder (model_type gpt2): `transformer.`-prefixed names, Conv1D
weights stored [in, out], the causal-mask buffers `h.N.attn.bias` real checkpoints carry, no
lm_head (tied to wte), and a byte-level BPE tokenizer.json trained here on a few sentences.

tiny-roberta is a RobertaForMaskedLM folder (model_type roberta): BERT's module names under
`roberta.`, 66 position rows of which the tokens take rows 2.. (padding_idx 1 + 1), one token
type, LayerNorm eps 1e-5, an lm_head to ignore, and a byte-level BPE tokenizer.json with
roberta-base's <s> <pad> </s> <unk> <mask> (ids 0-4) and its RobertaProcessing. tiny-distilbert
is a DistilBertForMaskedLM folder (model_type distilbert: dim, n_layers, n_heads, hidden_dim;
`distilbert.transformer.layer.N.attention.q_lin` …; no token types) with tiny-bert's tokenizer.
"""
from __future__ import annotations

import argparse
import json
import os
import struct
import sys

import numpy as np
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = "the cat sat on mat a dog ran and it was tired animal didn ' t cross street because".split()
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
VOCAB = SPECIAL + WORDS + list(".,!?") + LETTERS + [f"##{c}" for c in LETTERS]

CONFIG = {
    "model_type": "bert",
    "architectures": ["BertModel"],
    "vocab_size": len(VOCAB),
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "max_position_embeddings": 64,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
}


def bert_weights(c: dict = CONFIG, seed: int = 14) -> dict[str, np.ndarray]:
    """BertModel's tensors for config `c` (BERT keys), HF names, [out, in] linear weights;
    LayerNorms near identity."""
    rng = np.random.default_rng(seed)
    d, ffn = c["hidden_size"], c["intermediate_size"]
    r = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)  # noqa: E731
    ln = lambda: (1.0 + r(d) * 0.5, r(d))  # noqa: E731
    w = {
        "embeddings.word_embeddings.weight": r(c["vocab_size"], d),
        "embeddings.position_embeddings.weight": r(c["max_position_embeddings"], d),
        "embeddings.token_type_embeddings.weight": r(c["type_vocab_size"], d),
    }
    w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"] = ln()
    for i in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for name, out, inp in [("attention.self.query", d, d), ("attention.self.key", d, d), ("attention.self.value", d, d),
                               ("attention.output.dense", d, d), ("intermediate.dense", ffn, d), ("output.dense", d, ffn)]:
            # Queries and keys larger than the rest: the maps are peaked, not uniform.
            scale = 1.5 if name in ("attention.self.query", "attention.self.key") else 1.0
            w[p + name + ".weight"] = r(out, inp) * scale
            w[p + name + ".bias"] = r(out)
        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"] = ln()
        w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"] = ln()
    # An integer buffer, as real checkpoints carry: readers must skip it.
    w["embeddings.position_ids"] = np.arange(c["max_position_embeddings"], dtype=np.int64)[None, :]
    return w


DTYPES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}
BF16 = "bf16"  # numpy has no bfloat16: such tensors are written from f32, rounded to nearest even


def bf16_bits(a: np.ndarray) -> np.ndarray:
    """The upper 16 bits of each f32, rounded to nearest even (as torch's .to(bfloat16))."""
    bits = a.astype("<f4").view("<u4").astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")


def write_safetensors(path: str, tensors: dict[str, np.ndarray], floats: str | None = None) -> None:
    """floats: None keeps each tensor's dtype; BF16 writes the f32 ones as bfloat16."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        if floats == BF16 and a.dtype == np.float32:
            raw, dtype = bf16_bits(a).tobytes(), "BF16"
        else:
            raw, dtype = a.astype(a.dtype.newbyteorder("<")).tobytes(), DTYPES[a.dtype]
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned, as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def tokenizer() -> Tokenizer:
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(VOCAB)}, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", VOCAB.index("[CLS]")), ("[SEP]", VOCAB.index("[SEP]"))])
    tok.decoder = decoders.WordPiece()
    return tok


def write_folder(folder: str, config: dict, w: dict[str, np.ndarray], tok: Tokenizer, dtype=np.float32) -> str:
    """config.json, model.safetensors (the float tensors of `w` as dtype: np.float32, np.float16
    or BF16) and tokenizer.json in `folder`."""
    os.makedirs(folder, exist_ok=True)
    if dtype == np.float16:
        w = {k: (v.astype(dtype) if v.dtype == np.float32 else v) for k, v in w.items()}
    write_safetensors(os.path.join(folder, "model.safetensors"), w, BF16 if dtype == BF16 else None)
    torch_dtype = {BF16: "bfloat16", np.float16: "float16"}.get(dtype, "float32")
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({**config, "torch_dtype": torch_dtype}, f, indent=2)
    tok.save(os.path.join(folder, "tokenizer.json"))
    return folder


def write_bert(folder: str, dtype=np.float32) -> str:
    """dtype: np.float32, np.float16 or BF16."""
    return write_folder(folder, CONFIG, bert_weights(), tokenizer(), dtype)


# ----------------------------------------------------------------------------- RoBERTa

ROBERTA_SPECIAL = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # ids 0-4, as roberta-base's

ROBERTA_CONFIG = {
    **CONFIG,
    "model_type": "roberta",
    "architectures": ["RobertaForMaskedLM"],
    "vocab_size": 0,  # set from the tokenizer
    # RoBERTa's positions start at padding_idx + 1 = 2: 64 tokens take rows 2..65.
    "max_position_embeddings": 66,
    "type_vocab_size": 1,
    "layer_norm_eps": 1e-5,
    "pad_token_id": 1,
    "bos_token_id": 0,
    "eos_token_id": 2,
}


def roberta_tokenizer() -> Tokenizer:
    """Byte-level BPE as roberta-base's: <s> … </s> around the text (RobertaProcessing)."""
    return byte_level_bpe(ROBERTA_SPECIAL, processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True, add_prefix_space=False))


def write_roberta(folder: str, dtype=np.float32) -> str:
    """RobertaForMaskedLM's layout: BERT's module names under `roberta.`, and an lm_head the
    readers must ignore."""
    tok = roberta_tokenizer()
    config = {**ROBERTA_CONFIG, "vocab_size": tok.get_vocab_size()}
    w = {"roberta." + k: v for k, v in bert_weights(config, seed=16).items()}
    d = config["hidden_size"]
    w["lm_head.dense.weight"], w["lm_head.dense.bias"] = np.zeros((d, d), np.float32), np.zeros(d, np.float32)
    w["lm_head.bias"] = np.zeros(config["vocab_size"], np.float32)
    return write_folder(folder, config, w, tok, dtype)


# ----------------------------------------------------------------------------- DistilBERT

DISTILBERT_CONFIG = {
    "model_type": "distilbert",
    "architectures": ["DistilBertForMaskedLM"],
    "vocab_size": len(VOCAB),
    "dim": 32,
    "n_layers": 2,
    "n_heads": 4,
    "hidden_dim": 64,
    "max_position_embeddings": 64,
    "activation": "gelu",
    "sinusoidal_pos_embds": False,
    "dropout": 0.1,
    "attention_dropout": 0.1,
    "pad_token_id": 0,
}

# DistilBERT's names for BertModel's modules (transformers' modeling_distilbert.py).
DISTILBERT_NAMES = [("attention.self.query", "attention.q_lin"), ("attention.self.key", "attention.k_lin"),
                    ("attention.self.value", "attention.v_lin"), ("attention.output.dense", "attention.out_lin"),
                    ("attention.output.LayerNorm", "sa_layer_norm"), ("intermediate.dense", "ffn.lin1"),
                    ("output.dense", "ffn.lin2"), ("output.LayerNorm", "output_layer_norm")]


def distilbert_name(bert_name: str) -> str:
    name = bert_name.replace("encoder.layer.", "transformer.layer.")
    for old, new in DISTILBERT_NAMES:
        if old in name:
            return "distilbert." + name.replace(old, new)
    return "distilbert." + name


def write_distilbert(folder: str, dtype=np.float32) -> str:
    """DistilBertForMaskedLM's layout: BERT's modules renamed under `distilbert.`, no token type
    embeddings, and the MLM head (vocab_transform, vocab_layer_norm, vocab_projector) the readers
    must ignore. The WordPiece tokenizer is tiny-bert's."""
    c = DISTILBERT_CONFIG
    bert_keys = {**CONFIG, "vocab_size": c["vocab_size"], "hidden_size": c["dim"], "num_hidden_layers": c["n_layers"],
                 "num_attention_heads": c["n_heads"], "intermediate_size": c["hidden_dim"], "max_position_embeddings": c["max_position_embeddings"]}
    w = {distilbert_name(k): v for k, v in bert_weights(bert_keys, seed=17).items() if "token_type" not in k}
    d = c["dim"]
    w["vocab_transform.weight"], w["vocab_transform.bias"] = np.zeros((d, d), np.float32), np.zeros(d, np.float32)
    w["vocab_layer_norm.weight"], w["vocab_layer_norm.bias"] = np.ones(d, np.float32), np.zeros(d, np.float32)
    w["vocab_projector.bias"] = np.zeros(c["vocab_size"], np.float32)
    return write_folder(folder, c, w, tokenizer(), dtype)


MARIAN_PIECES = (["</s>", "<unk>"] + ["▁" + w for w in WORDS if w.isalpha()] + ["▁o", "▁gato", "▁sentou", "▁no", "▁tapete"]
                 + ["▁" + c for c in LETTERS] + LETTERS + list(".,!?'") + ["<pad>"])

MARIAN_CONFIG = {
    "model_type": "marian",
    "architectures": ["MarianMTModel"],
    "vocab_size": len(MARIAN_PIECES),
    "decoder_vocab_size": len(MARIAN_PIECES),
    "d_model": 32,
    "encoder_layers": 2,
    "decoder_layers": 2,
    "encoder_attention_heads": 4,
    "decoder_attention_heads": 4,
    "encoder_ffn_dim": 64,
    "decoder_ffn_dim": 64,
    "activation_function": "swish",
    "max_position_embeddings": 64,
    "scale_embedding": True,
    "normalize_before": False,
    "share_encoder_decoder_embeddings": True,
    "static_position_embeddings": True,
    "eos_token_id": 0,
    "pad_token_id": len(MARIAN_PIECES) - 1,
    "decoder_start_token_id": len(MARIAN_PIECES) - 1,
    "bad_words_ids": [[len(MARIAN_PIECES) - 1]],
    "max_length": 64,
}


def marian_weights(seed: int = 15) -> dict[str, np.ndarray]:
    """MarianMTModel's tensors, HF names, [out, in] linear weights; LayerNorms near identity."""
    rng = np.random.default_rng(seed)
    c = MARIAN_CONFIG
    d, ffn, v = c["d_model"], c["encoder_ffn_dim"], c["vocab_size"]
    r = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)  # noqa: E731
    w = {"model.shared.weight": r(v, d), "final_logits_bias": r(1, v)}
    for stack, layers in (("encoder", c["encoder_layers"]), ("decoder", c["decoder_layers"])):
        for i in range(layers):
            p = f"model.{stack}.layers.{i}."
            attns = ["self_attn"] + (["encoder_attn"] if stack == "decoder" else [])
            for a in attns:
                for m in ("q", "k", "v", "out"):
                    # Queries and keys larger than the rest: the maps are peaked, not uniform.
                    w[f"{p}{a}.{m}_proj.weight"] = r(d, d) * (2.0 if m in ("q", "k") else 1.0)
                    w[f"{p}{a}.{m}_proj.bias"] = r(d)
                w[f"{p}{a}_layer_norm.weight"], w[f"{p}{a}_layer_norm.bias"] = 1.0 + r(d) * 0.5, r(d)
            w[p + "fc1.weight"], w[p + "fc1.bias"], w[p + "fc2.weight"], w[p + "fc2.bias"] = r(ffn, d), r(ffn), r(d, ffn), r(d)
            w[p + "final_layer_norm.weight"], w[p + "final_layer_norm.bias"] = 1.0 + r(d) * 0.5, r(d)
    # A reachable end of sentence: `</s>` a little more likely than the rest.
    w["final_logits_bias"][0, 0] += 1.0
    return w


def marian_tokenizer() -> Tokenizer:
    """A Unigram model over MARIAN_PIECES (ids = positions), Metaspace `▁` word starts, no
    post-processor (the model appends `</s>`), as a converted opus-mt source.spm would be."""
    scores = [(p, -2.0 if p.startswith("▁") and len(p) > 2 else -6.0) for p in MARIAN_PIECES]
    tok = Tokenizer(models.Unigram(scores, unk_id=1, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.add_special_tokens(["</s>", "<unk>", "<pad>"])
    return tok


def write_marian(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), marian_weights())
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({**MARIAN_CONFIG, "torch_dtype": "float32"}, f, indent=2)
    marian_tokenizer().save(os.path.join(folder, "tokenizer.json"))
    return folder


GPT2_CORPUS = [
    "The cat sat on the mat. The dog ran and it was tired.",
    "The animal didn't cross the street because it was tired!",
    "Once upon a time, there was a little cat who liked the mat.",
    "Hello world, hello attention: 1 2 3 4 5 6 7 8 9 10.",
]
EOT = "<|endoftext|>"

GPT2_CONFIG = {
    "model_type": "gpt2",
    "architectures": ["GPT2LMHeadModel"],
    "vocab_size": 0,  # set from the tokenizer
    "n_positions": 64,
    "n_ctx": 64,
    "n_embd": 32,
    "n_layer": 2,
    "n_head": 4,
    "n_inner": None,
    "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-5,
    "bos_token_id": 0,
    "eos_token_id": 0,
    "tie_word_embeddings": True,
}


def byte_level_bpe(special: list[str], post_processor) -> Tokenizer:
    """Byte-level BPE: every byte is a token, merges learnt from GPT2_CORPUS, `special` are ids
    0, 1, …. Deterministic (the trainer breaks ties by order)."""
    from tokenizers import trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = post_processor
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(GPT2_CORPUS, trainer=trainer)
    return tok


def gpt2_tokenizer() -> Tokenizer:
    """GPT-2's: <|endoftext|> is id 0, no special tokens added around the text."""
    return byte_level_bpe([EOT], processors.ByteLevel(trim_offsets=False))


def gpt2_weights(vocab: int, seed: int = 2) -> dict[str, np.ndarray]:
    """GPT2LMHeadModel's tensors, HF names (`transformer.` prefix), Conv1D weights [in, out]."""
    rng = np.random.default_rng(seed)
    c = GPT2_CONFIG
    d, ffn, t = c["n_embd"], 4 * c["n_embd"], c["n_positions"]
    r = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)  # noqa: E731
    ln = lambda: (1.0 + r(d) * 0.5, r(d))  # noqa: E731
    p = "transformer."
    w = {p + "wte.weight": r(vocab, d) * 2.0, p + "wpe.weight": r(t, d)}
    for i in range(c["n_layer"]):
        h = f"{p}h.{i}."
        w[h + "ln_1.weight"], w[h + "ln_1.bias"] = ln()
        w[h + "ln_2.weight"], w[h + "ln_2.bias"] = ln()
        # Queries and keys larger than the rest: the maps are peaked, not uniform.
        qkv = r(d, 3 * d)
        qkv[:, :2 * d] *= 2.0
        w[h + "attn.c_attn.weight"], w[h + "attn.c_attn.bias"] = qkv, r(3 * d)
        w[h + "attn.c_proj.weight"], w[h + "attn.c_proj.bias"] = r(d, d), r(d)
        w[h + "mlp.c_fc.weight"], w[h + "mlp.c_fc.bias"] = r(d, ffn), r(ffn)
        w[h + "mlp.c_proj.weight"], w[h + "mlp.c_proj.bias"] = r(ffn, d), r(d)
        # The causal-mask buffer GPT-2 checkpoints carry (readers must ignore it).
        w[h + "attn.bias"] = np.tril(np.ones((t, t), dtype=np.float32))[None, None]
    w[p + "ln_f.weight"], w[p + "ln_f.bias"] = ln()
    return w


def write_gpt2(folder: str, dtype=np.float32) -> str:
    """dtype: np.float32, np.float16 or BF16."""
    tok = gpt2_tokenizer()
    vocab = tok.get_vocab_size()
    assert tok.token_to_id(EOT) == 0
    return write_folder(folder, {**GPT2_CONFIG, "vocab_size": vocab}, gpt2_weights(vocab), tok, dtype)


def write_sharded_bert(folder: str) -> str:
    """tiny-bert with its weights sharded over two files, as Hugging Face saves a large
    checkpoint: model-00001-of-00002.safetensors, model-00002-of-00002.safetensors and
    model.safetensors.index.json (its weight_map), no model.safetensors."""
    w = bert_weights()
    write_folder(folder, CONFIG, w, tokenizer())
    os.remove(os.path.join(folder, "model.safetensors"))
    names = sorted(w)
    parts = [names[: len(names) // 2], names[len(names) // 2:]]
    weight_map = {}
    for i, part in enumerate(parts, 1):
        file = f"model-{i:05d}-of-{len(parts):05d}.safetensors"
        write_safetensors(os.path.join(folder, file), {k: w[k] for k in part})
        weight_map.update({k: file for k in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": int(sum(a.nbytes for a in w.values()))}, "weight_map": weight_map}, f, indent=2)
    return folder


def write_all(out: str) -> list[str]:
    """[tiny-bert, tiny-bert-f16, tiny-bert-bf16, tiny-gpt2, tiny-gpt2-f16, tiny-gpt2-bf16, tiny-marian,
    tiny-roberta, tiny-roberta-f16, tiny-distilbert, tiny-distilbert-bf16, tiny-bert-sharded]"""
    return [write_bert(os.path.join(out, "tiny-bert")), write_bert(os.path.join(out, "tiny-bert-f16"), np.float16),
            write_bert(os.path.join(out, "tiny-bert-bf16"), BF16), write_gpt2(os.path.join(out, "tiny-gpt2")),
            write_gpt2(os.path.join(out, "tiny-gpt2-f16"), np.float16), write_gpt2(os.path.join(out, "tiny-gpt2-bf16"), BF16),
            write_marian(os.path.join(out, "tiny-marian")), write_roberta(os.path.join(out, "tiny-roberta")),
            write_roberta(os.path.join(out, "tiny-roberta-f16"), np.float16), write_distilbert(os.path.join(out, "tiny-distilbert")),
            write_distilbert(os.path.join(out, "tiny-distilbert-bf16"), BF16), write_sharded_bert(os.path.join(out, "tiny-bert-sharded"))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder to write tiny-bert{,-f16,-bf16}/, tiny-gpt2{,-f16,-bf16}/, tiny-marian/, "
                    "tiny-roberta{,-f16}/, tiny-distilbert{,-bf16}/ and tiny-bert-sharded/ into")
    for folder in write_all(ap.parse_args(argv).out):
        print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
