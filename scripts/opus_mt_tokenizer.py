#!/usr/bin/env python3
"""Writes the tokenizer.json that attnviz needs beside a Hugging Face opus-mt (Marian) folder.

opus-mt folders ship their tokenizer as source.spm + target.spm (SentencePiece models) and
vocab.json (piece → the model's id), which `transformers`' MarianTokenizer reads with the
sentencepiece library; there is no tokenizer.json. This script makes one with the ids of
vocab.json: a Unigram model whose pieces are vocab.json's in id order, scored as in source.spm
(pieces source.spm lacks, the target side's, get a score below all of its own, so the source
is cut as source.spm cuts it), source.spm's normaliser (its precompiled character map), `▁`
word starts (Metaspace), no post-processor (attnviz appends `</s>` to the source itself).

    .venv/bin/python scripts/opus_mt_tokenizer.py path/to/opus-mt-en-de    # writes …/tokenizer.json

Needs only the `tokenizers` package (to check the result loads); the .spm protobuf is read by
hand. Matches MarianTokenizer on sentences whose source.spm pieces are all in vocab.json (the
usual case); a piece missing from vocab.json is `<unk>` there and cut smaller here.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys

# SentencePiece piece types (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint in the .spm file")
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes):
    """(field number, wire type, value) of one protobuf message; value: int, bytes or 4/8 raw bytes."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _varint(buf, i)
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            value, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} in the .spm file")
        yield field, wire, value


def read_spm(path: str) -> tuple[list[tuple[str, float, int]], bytes, int]:
    """(pieces as (piece, score, type), the normaliser's precompiled charsmap, the model type:
    1 unigram, 2 BPE)."""
    with open(path, "rb") as f:
        raw = f.read()
    pieces, charsmap, model_type = [], b"", 1
    for field, wire, value in _fields(raw):
        if field == 1 and wire == 2:  # SentencePiece
            piece, score, kind = "", 0.0, NORMAL
            for f2, w2, v2 in _fields(value):
                if f2 == 1 and w2 == 2:
                    piece = v2.decode("utf-8")
                elif f2 == 2 and w2 == 5:
                    (score,) = struct.unpack("<f", v2)
                elif f2 == 3 and w2 == 0:
                    kind = v2
            pieces.append((piece, score, kind))
        elif field == 2 and wire == 2:  # TrainerSpec
            model_type = next((v for f2, w2, v in _fields(value) if f2 == 3 and w2 == 0), 1)
        elif field == 3 and wire == 2:  # NormalizerSpec
            charsmap = next((v for f2, w2, v in _fields(value) if f2 == 2 and w2 == 2), b"")
    if not pieces:
        raise ValueError(f"{path} holds no SentencePiece pieces: is it a SentencePiece model?")
    return pieces, charsmap, model_type


def build(spm_path: str, vocab: dict[str, int]) -> dict:
    """The tokenizer.json (as a dict) for source.spm `spm_path` and vocab.json `vocab`."""
    pieces, charsmap, model_type = read_spm(spm_path)
    if model_type != 1:
        raise ValueError(f"{spm_path} is not a unigram SentencePiece model (type {model_type}); opus-mt's are")
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise ValueError("vocab.json's ids are not 0..n-1")
    scores = {p: s for p, s, kind in pieces if kind in (NORMAL, USER_DEFINED)}
    floor = min(scores.values(), default=0.0) - 1.0
    special = {p for p, _, kind in pieces if kind in (UNKNOWN, CONTROL)} | {"</s>", "<unk>", "<pad>", "<s>"}
    if "<unk>" not in vocab:
        raise ValueError("vocab.json has no <unk>")
    model_vocab = [[p, scores.get(p, 0.0 if p in special else floor)] for p, _ in by_id]
    normalizers = [{"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    if charsmap:
        normalizers.insert(0, {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()})
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    added = [{"id": vocab[p], "content": p, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
             for p in sorted(special & vocab.keys(), key=vocab.get)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": normalizers},
        "pre_tokenizer": metaspace, "post_processor": None, "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": vocab["<unk>"], "vocab": model_vocab, "byte_fallback": False},
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", help="the opus-mt folder (source.spm and vocab.json in it)")
    ap.add_argument("--spm", help="the source SentencePiece model (default FOLDER/source.spm)")
    ap.add_argument("--vocab", help="piece → id (default FOLDER/vocab.json)")
    ap.add_argument("--out", help="where to write (default FOLDER/tokenizer.json)")
    a = ap.parse_args(argv)
    spm = a.spm or os.path.join(a.folder, "source.spm")
    vocab_path = a.vocab or os.path.join(a.folder, "vocab.json")
    out = a.out or os.path.join(a.folder, "tokenizer.json")
    try:
        with open(vocab_path, encoding="utf-8") as f:
            tok = build(spm, json.load(f))
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = json.dumps(tok, ensure_ascii=False)
    from tokenizers import Tokenizer  # the result must load where attnviz's reader loads it
    Tokenizer.from_str(text)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
