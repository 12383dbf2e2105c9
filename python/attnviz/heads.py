"""Head scores of attention computed elsewhere, for the widget's head overview: what each head
does on the text (sink, previous token, …) and the share of weight behind it.

The definitions are attnviz's (src/heads.rs, which scores our own models' forwards; its doc
comment cites the papers). Maps given to head_view & co. run no wasm, so the kernel scores them
here with numpy; tests/reference/test_head_scores.py holds the two to the same numbers on all
three default models. Each score is a mean over the query rows of a head's map (rows sum to 1):
entropy (nats) and broad (÷ ln of the keys a row can see), first (weight on key 0), special
(on the special tokens), previous/next/self (key i − 1, i + 1, i; one sequence only), delimiter
([SEP], </s> and punctuation), and induction (causal models, measured on a repeated random
sequence: only ours have it, so supplied maps have none).
"""

from __future__ import annotations

import re

import numpy as np

PATTERN_MIN = 0.4  # a pattern names a head when at least this share of its weight follows it
BROAD_MIN = 0.6  # a head without a pattern is "broad" from this normalised entropy on
_PUNCTUATION = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~—–…“”‘’«»¿¡")
# Special tokens when none are given: how tokenizers write them ([CLS], </s>, <|endoftext|>).
_SPECIAL = re.compile(r"^(\[[A-Z_]+\]|<\|?/?[A-Za-z_][A-Za-z0-9_]*\|?>)$")


def guess_specials(tokens) -> list:
    """The tokens written as tokenizers write special tokens: [CLS], [SEP], <s>, </s>, <pad>, <|endoftext|>."""
    return sorted({t for t in tokens if _SPECIAL.match(t)})


def _is_punctuation(token: str) -> bool:
    core = token.lstrip("Ġ▁Ċ")
    while core.startswith("##"):
        core = core[2:]
    return bool(core) and all(c in _PUNCTUATION for c in core)


def _mean(values: np.ndarray) -> float | None:
    """Mean over the last axis, None when it is empty (per head: values is [heads, rows])."""
    return None if values.shape[-1] == 0 else values.mean(axis=-1)


def score_block(maps: np.ndarray, kind: str, layer: int, keys, specials, induction=None) -> list:
    """Scores of every head of one block: `maps` [heads, queries, keys] of the given `kind`
    (encoder_self, decoder_self or cross), `keys` its key tokens, `specials` the special tokens,
    `induction` a score per head (causal models of ours) or None."""
    a = np.asarray(maps, dtype=np.float32)  # [heads, q, k]
    heads, tq, tk = a.shape
    same_sequence = kind != "cross" and tq == tk
    causal = kind == "decoder_self"
    is_special = np.array([j < len(keys) and keys[j] in specials for j in range(tk)], dtype=bool)
    is_delimiter = np.array([j < len(keys) and (_is_punctuation(keys[j]) or keys[j] in ("[SEP]", "</s>")) for j in range(tk)], dtype=bool)
    # In float32 as the model's maps are, summed in float64; 0 · ln 0 = 0.  # [heads, q]
    logs = np.zeros_like(a)
    np.log(a, out=logs, where=a > 0)
    logs *= a
    row_entropy = -logs.sum(axis=-1, dtype=np.float64)
    del logs
    visible = np.arange(1, tq + 1) if causal and same_sequence else np.full(tq, tk)
    seen = visible > 1
    entropy = _mean(row_entropy)
    broad = _mean(row_entropy[:, seen] / np.log(visible[seen]))
    first = _mean(a[:, :, 0].astype(np.float64))
    special = _mean(a[:, :, is_special].sum(axis=-1, dtype=np.float64))
    delimiter = _mean(a[:, :, is_delimiter].sum(axis=-1, dtype=np.float64))

    def offset(d: int):
        if not same_sequence:
            return None
        rows = [i for i in range(tq) if 0 <= i + d < tk]
        return a[:, rows, [i + d for i in rows]].mean(axis=-1, dtype=np.float64) if rows else np.zeros(heads)

    previous, following, own = offset(-1), offset(1), offset(0)
    out = []
    for h in range(heads):
        at = lambda v: None if v is None else float(v[h])  # noqa: E731
        ind = None if induction is None else float(induction[h])
        s = {
            "kind": kind, "layer": layer, "head": h,
            "entropy": at(entropy) or 0.0, "broad": at(broad) or 0.0, "first": at(first) or 0.0,
            "special": at(special) or 0.0, "previous": at(previous), "next": at(following),
            "self": at(own), "delimiter": at(delimiter) or 0.0, "induction": ind,
        }
        candidates = [("sink", max(s["first"], s["special"])), ("previous", s["previous"]),
                      ("next", None if causal else s["next"]), ("self", s["self"]), ("delimiter", s["delimiter"])]
        best = ("mixed", float("-inf"))
        for label, value in candidates:
            if value is not None and value > best[1]:  # the first of equals wins
                best = (label, value)
        if ind is not None and ind >= PATTERN_MIN:
            s["label"], s["score"] = "induction", ind
        elif best[1] >= PATTERN_MIN:
            s["label"], s["score"] = best
        elif s["broad"] >= BROAD_MIN:
            s["label"], s["score"] = "broad", s["broad"]
        else:
            s["label"], s["score"] = "mixed", max(best[1], 0.0)
        out.append(s)
    return out
