"""The notebook package's Python side (python/attnviz): argument checks before anything is sent,
the binary layout the front end reads (www/notebook/notebook.js suppliedFromSpec), and the file
save_html writes. The drawing itself is checked in a browser (tests/e2e/notebook.test.mjs)."""

import base64
import json
import re
import warnings

import numpy as np
import pytest

import attnviz


def softmax_maps(layers=2, heads=3, q=4, k=4, batch=1, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(layers):
        x = rng.normal(size=(batch, heads, q, k))
        e = np.exp(x - x.max(-1, keepdims=True))
        out.append((e / e.sum(-1, keepdims=True)).astype(np.float32))
    return tuple(out)


TOKENS = ["[CLS]", "the", "cat", "[SEP]"]


def test_the_maps_go_as_one_float32_buffer_in_layer_order_with_their_shapes():
    att = softmax_maps()
    w = attnviz.head_view(att, TOKENS, layer=1, heads=[2, 0])
    assert w.spec["blocks"] == [{"arg": "attention", "heads": 3, "q": 4, "k": 4}] * 2
    assert isinstance(w.data, bytes) and len(w.data) == 2 * 3 * 4 * 4 * 4
    back = np.frombuffer(w.data, dtype="<f4").reshape(2, 3, 4, 4)
    np.testing.assert_array_equal(back, np.stack([a[0] for a in att]))
    assert w.spec["tokens"] == TOKENS
    # The widget counts layers and heads from 1, as its controls show them.
    assert w.spec["attributes"]["view"] == "head"
    assert w.spec["attributes"]["layer"] == 2 and w.spec["attributes"]["head"] == 3
    assert w.spec["heads"] == [2, 0]
    assert attnviz.model_view(att, TOKENS).spec["attributes"]["view"] == "model"
    assert attnviz.heatmap_view(att, TOKENS).spec["attributes"]["view"] == "heatmap"


class FakeTensor:
    """What attnviz asks of a torch tensor (it never imports torch): detach, float, cpu, __array__."""

    def __init__(self, a):
        self.a = a
        self.calls = []

    def detach(self):
        self.calls.append("detach")
        return self

    def float(self):
        self.calls.append("float")
        return self

    def cpu(self):
        self.calls.append("cpu")
        return self

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def test_tensors_are_taken_off_the_graph_and_the_device_without_importing_torch():
    att = softmax_maps(layers=1)
    t = FakeTensor(att[0].astype(np.float64))
    w = attnviz.head_view([t], TOKENS)
    assert t.calls == ["detach", "float", "cpu"]
    np.testing.assert_allclose(np.frombuffer(w.data, "<f4").reshape(3, 4, 4), att[0][0], rtol=1e-6)
    import sys

    assert "torch" not in sys.modules


def test_an_encoder_decoder_sends_its_three_kinds_in_order():
    enc = softmax_maps(layers=2, q=5, k=5, seed=1)
    dec = softmax_maps(layers=1, q=3, k=3, seed=2)
    cross = softmax_maps(layers=1, q=3, k=5, seed=3)
    w = attnviz.model_view(
        encoder_attention=enc, decoder_attention=dec, cross_attention=cross,
        encoder_tokens=list("abcde"), decoder_tokens=list("xyz"),
    )
    assert [b["arg"] for b in w.spec["blocks"]] == ["encoder_attention"] * 2 + ["decoder_attention", "cross_attention"]
    flat = np.frombuffer(w.data, "<f4")
    assert flat.size == 2 * 3 * 25 + 3 * 9 + 3 * 15
    np.testing.assert_array_equal(flat[-45:].reshape(3, 3, 5), cross[0][0])
    assert w.spec["encoder_tokens"] == list("abcde") and w.spec["decoder_tokens"] == list("xyz")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(attention=softmax_maps(), tokens=TOKENS[:3]), r"attention\[0\] is 4×4 \(queries × keys\) but tokens has 3 tokens$"),
        (dict(attention=softmax_maps(batch=2), tokens=TOKENS), r"attention\[0\] has a batch of 2: pass batch_index="),
        (dict(attention=softmax_maps(batch=2), tokens=TOKENS, batch_index=2), r"batch_index=2 but attention\[0\] has a batch of 2"),
        (dict(attention=(softmax_maps()[0], softmax_maps(heads=2)[0]), tokens=TOKENS), r"attention\[1\] has 2 heads; attention\[0\] has 3"),
        (dict(attention=[np.full((1, 1, 4, 4), 0.5, np.float32)], tokens=TOKENS), r"sums to 2\.0000; attention rows sum to 1"),
        (dict(attention=softmax_maps(), tokens=TOKENS, layer=2), r"layer=2: the attention has layers 0 to 1"),
        (dict(attention=softmax_maps(), tokens=TOKENS, heads=[3]), r"heads=\[3\]: the attention has heads 0 to 2"),
        (dict(attention=[np.zeros((4, 4), np.float32)], tokens=TOKENS), r"attention\[0\] has shape \(4, 4\); expected \[batch, heads, queries, keys\]"),
        (dict(attention=softmax_maps(), tokens=None), r"tokens must be a non-empty list of token strings"),
        (dict(attention=softmax_maps(), tokens=["a", 2, "c", "d"]), r"tokens\[1\] is int, not a token string"),
        (dict(attention="not maps", tokens=TOKENS), r"attention must be a list or tuple with one attention map per layer"),
        (dict(tokens=TOKENS), r"attention is required"),
        (dict(attention=softmax_maps(), encoder_attention=softmax_maps(), encoder_tokens=TOKENS), r"give either attention"),
        (dict(cross_attention=softmax_maps(q=3), encoder_tokens=TOKENS), r"decoder_tokens must be a non-empty list"),
        (dict(attention=softmax_maps(), tokens=TOKENS, specials="[CLS]"), r"specials must be a list of token strings"),
        (dict(cross_attention=softmax_maps(q=3), encoder_tokens=TOKENS, decoder_tokens=list("xy")), r"cross_attention\[0\] is 3×4 \(queries × keys\) but decoder_tokens has 2 tokens and encoder_tokens 4$"),
        (dict(attention=softmax_maps(), tokens=TOKENS, layer=1.0), r"layer=1\.0: an integer index counted from 0"),
        (dict(attention=softmax_maps(), tokens=TOKENS, include_layers=[2]), r"include_layers=\[2\]: attention has layers 0 to 1"),
        (dict(attention=softmax_maps(), tokens=TOKENS, include_layers=[1], layer=0), r"layer=0: not one of include_layers=\[1\]"),
        (dict(attention=softmax_maps(), tokens=TOKENS, html_action="show"), r"html_action='show': 'view' or 'return'"),
    ],
)
def test_what_does_not_fit_is_refused_with_the_argument_and_what_was_expected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attnviz.head_view(**kwargs)


def test_a_nan_is_named_by_its_layer_head_query_and_key():
    att = list(softmax_maps())
    att[1] = att[1].copy()
    att[1][0, 2, 1, 3] = np.nan
    with pytest.raises(ValueError, match=r"attention\[1\]: head 2, query 1, key 3 is nan"):
        attnviz.head_view(att, TOKENS)


def test_a_batch_index_picks_one_example():
    att = softmax_maps(batch=3)
    w = attnviz.head_view(att, TOKENS, batch_index=2)
    np.testing.assert_array_equal(np.frombuffer(w.data, "<f4").reshape(2, 3, 4, 4)[0], att[0][2])


def test_sentence_b_start_is_taken_and_said_to_be_unused():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attnviz.head_view(softmax_maps(), TOKENS, sentence_b_start=2)
    assert any("sentence_b_start is not used" in str(w.message) for w in caught)


def test_save_html_writes_one_file_with_the_code_and_the_maps_and_nothing_to_fetch(tmp_path):
    att = softmax_maps()
    w = attnviz.head_view(att, TOKENS + [], label="a </script> test")
    path = w.save_html(tmp_path / "attention.html")
    page = path.read_text(encoding="utf-8")
    # Nothing from a CDN or any other address: no src= or href= at all.
    assert not re.search(r"""\b(src|href)\s*=""", page)
    assert "https://" not in page and "http://" not in page
    payload = json.loads(re.search(r'<script type="application/json" id="attnviz-data">(.*?)</script>', page, re.S).group(1))
    assert payload["spec"] == w.spec
    assert base64.b64decode(payload["data"]) == w.data
    esm = base64.b64decode(re.search(r'<script type="text/plain" id="attnviz-esm">(.*?)</script>', page, re.S).group(1))
    assert esm == (attnviz._STATIC / "notebook.js").read_bytes()
    assert page.count("</script>") == 3, "the label's </script> cannot end a script early"


def test_the_bundle_is_one_module():
    code = (attnviz._STATIC / "notebook.js").read_text(encoding="utf-8")
    # anywidget imports it from a string: it can import nothing by a relative path.
    assert not re.search(r"""^\s*import\s.*from\s*['"]\.""", code, re.M)
    assert "export" in code and "render" in code


def test_a_second_calls_maps_go_as_b_after_a_in_the_one_buffer():
    a, b = softmax_maps(seed=1), softmax_maps(seed=2)
    w = attnviz.heatmap_view(a, TOKENS, compare_attention=b, compare_tokens=["[CLS]", "a", "dog", "[SEP]"], compare_label="fine-tuned")
    assert [x["arg"] for x in w.spec["blocks"]] == ["attention"] * 2 + ["compare_attention"] * 2
    assert w.spec["compare"] == {"tokens": ["[CLS]", "a", "dog", "[SEP]"], "label": "fine-tuned"}
    back = np.frombuffer(w.data, dtype="<f4").reshape(4, 3, 4, 4)
    np.testing.assert_array_equal(back[2:], np.stack([x[0] for x in b]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"compare_attention": softmax_maps(layers=3)}, r"compare_tokens must be"),
        ({"compare_attention": softmax_maps(layers=3), "compare_tokens": TOKENS}, r"compare_attention has 3 layers × 3 heads; attention has 2 × 3"),
        ({"compare_tokens": TOKENS}, r"compare_tokens is given without compare_attention"),
        ({"compare_attention": softmax_maps(q=5, k=5), "compare_tokens": TOKENS}, r"compare_attention\[0\]"),
    ],
)
def test_a_comparison_that_does_not_fit_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attnviz.head_view(softmax_maps(), TOKENS, **kwargs)


def one_hot_maps(rows, k):
    """One layer, one head: row i all on key rows[i]."""
    a = np.zeros((1, 1, len(rows), k), np.float32)
    for i, j in enumerate(rows):
        a[0, 0, i, j] = 1.0
    return (a,)


def test_the_head_scores_go_with_the_maps_and_name_what_each_head_does():
    tokens = ["[CLS]", "the", "cat", ",", "sat", "[SEP]"]
    previous = one_hot_maps([0, 0, 1, 2, 3, 4], 6)[0]
    on_sep = one_hot_maps([5] * 6, 6)[0]
    w = attnviz.head_overview((np.concatenate([previous, on_sep], axis=1),), tokens)
    assert w.spec["attributes"]["view"] == "heads"
    assert w.spec["specials"] == ["[CLS]", "[SEP]"]  # guessed from how they are written
    prev, sep = w.spec["head_scores"]
    assert (prev["kind"], prev["layer"], prev["head"], prev["label"], prev["score"]) == ("encoder_self", 0, 0, "previous", 1.0)
    # Row 0 has no previous key and is left out of the mean (as src/heads.rs does).
    assert prev["entropy"] == 0.0 and prev["induction"] is None
    assert (sep["label"], sep["special"], sep["delimiter"], sep["first"]) == ("sink", 1.0, 1.0, 0.0)
    # A causal stack is decoder self-attention; each row uniform over what it sees is fully broad.
    causal = np.tril(np.ones((12, 12), np.float32))
    causal /= causal.sum(-1, keepdims=True)
    (s,) = attnviz.head_scores((causal[None, None],), list("abcdefghijkl"), causal=True)
    assert (s["kind"], s["label"], s["next"]) == ("decoder_self", "broad", 0.0) and abs(s["broad"] - 1) < 1e-6
    # Given specials replace the guess.
    assert attnviz.head_view((on_sep,), tokens, specials=["[SEP]"]).spec["specials"] == ["[SEP]"]


def test_an_encoder_decoder_has_head_scores_of_each_kind_and_cross_attention_has_no_offsets():
    scores = attnviz.head_scores(
        encoder_attention=softmax_maps(layers=2, q=5, k=5, seed=1), decoder_attention=softmax_maps(layers=1, q=3, k=3, seed=2),
        cross_attention=softmax_maps(layers=1, q=3, k=5, seed=3), encoder_tokens=list("abcd") + ["</s>"], decoder_tokens=list("xyz"),
    )
    assert [(s["kind"], s["layer"]) for s in scores] == [("encoder_self", 0)] * 3 + [("encoder_self", 1)] * 3 + [("decoder_self", 0)] * 3 + [("cross", 0)] * 3
    cross = scores[-1]
    assert (cross["previous"], cross["next"], cross["self"]) == (None, None, None)
    # </s> is a delimiter of the keys (the encoder's tokens) and a special token.
    assert cross["delimiter"] == pytest.approx(cross["special"]) and cross["special"] > 0


def test_a_comparison_scores_a_only():
    w = attnviz.head_view(softmax_maps(), TOKENS, compare_attention=softmax_maps(seed=5), compare_tokens=TOKENS)
    assert len(w.spec["head_scores"]) == 2 * 3


# BertViz's own arguments (bertviz 1.4.1's head_view and model_view signatures), one test each.


def test_bertviz_positional_order_puts_prettify_tokens_fourth_and_layer_fifth():
    # head_view(attention, tokens, sentence_b_start, prettify_tokens, layer, heads)
    w = attnviz.head_view(softmax_maps(), TOKENS, None, True, 1, [2])
    assert w.spec["attributes"]["layer"] == 2 and w.spec["heads"] == [2]
    # model_view(attention, tokens, sentence_b_start, prettify_tokens, display_mode)
    assert attnviz.model_view(softmax_maps(), TOKENS, None, True, "light").spec["display_mode"] == "light"


def test_prettify_tokens_writes_sentencepiece_word_starts_as_spaces_and_drops_end_of_word_marks():
    tokens = ["▁The", "▁cat", "s</w>", "Ġsat"]
    assert attnviz.head_view(softmax_maps(), tokens).spec["tokens"] == [" The", " cat", "s", "Ġsat"]
    assert attnviz.head_view(softmax_maps(), tokens, prettify_tokens=False).spec["tokens"] == tokens
    enc = attnviz.model_view(encoder_attention=softmax_maps(), encoder_tokens=tokens, prettify_tokens=True)
    assert enc.spec["encoder_tokens"] == [" The", " cat", "s", "Ġsat"]


def test_display_mode_sets_the_widgets_colours_and_is_checked():
    assert attnviz.model_view(softmax_maps(), TOKENS).spec["display_mode"] == "dark"  # BertViz's default
    assert attnviz.model_view(softmax_maps(), TOKENS, display_mode="light").spec["display_mode"] == "light"
    assert "display_mode" not in attnviz.head_view(softmax_maps(), TOKENS).spec
    with pytest.raises(ValueError, match=r"display_mode='blue': 'light' or 'dark'"):
        attnviz.model_view(softmax_maps(), TOKENS, display_mode="blue")


def test_include_layers_draws_those_layers_and_layer_names_one_of_them():
    att = softmax_maps(layers=4)
    w = attnviz.head_view(att, TOKENS, layer=3, include_layers=[1, 3])
    assert len(w.spec["blocks"]) == 2
    back = np.frombuffer(w.data, "<f4").reshape(2, 3, 4, 4)
    np.testing.assert_array_equal(back[1], att[3][0])
    assert w.spec["attributes"]["layer"] == 2  # the second layer drawn, counted from 1
    enc = attnviz.model_view(encoder_attention=att, encoder_tokens=TOKENS, include_layers=[0])
    assert len(enc.spec["blocks"]) == 1


def test_include_heads_draws_those_heads_of_every_layer():
    att = softmax_maps(layers=2, heads=3)
    w = attnviz.model_view(att, TOKENS, include_heads=[2, 0])
    assert [b["heads"] for b in w.spec["blocks"]] == [2, 2]
    back = np.frombuffer(w.data, "<f4").reshape(2, 2, 4, 4)
    np.testing.assert_array_equal(back[0], att[0][0][[2, 0]])
    with pytest.raises(ValueError, match=r"include_heads=\[3\]: attention has heads 0 to 2"):
        attnviz.model_view(att, TOKENS, include_heads=[3])


def test_html_action_return_gives_the_standalone_page_as_ipythons_html():
    from IPython.display import HTML

    page = attnviz.head_view(softmax_maps(), TOKENS, html_action="return")
    assert isinstance(page, HTML)
    assert page.data.startswith("<!doctype html>") and 'id="attnviz-data"' in page.data
    w = attnviz.head_view(softmax_maps(), TOKENS)
    given = re.sub(r'"picture_id": "\w+"', "", page.data)  # (each widget's own)
    assert given == re.sub(r'"picture_id": "\w+"', "", attnviz.standalone_html(w.spec, w.data))
    assert isinstance(attnviz.model_view(softmax_maps(), TOKENS, html_action="return"), HTML)


def test_numpy_integers_are_indices():
    w = attnviz.head_view(softmax_maps(), TOKENS, layer=np.int64(1), heads=np.array([2, 1]))
    assert w.spec["attributes"]["layer"] == 2 and w.spec["heads"] == [2, 1]


def test_head_view_draws_every_head_unless_heads_are_given():
    assert attnviz.head_view(softmax_maps(heads=3), TOKENS).spec["heads"] == [0, 1, 2]
    assert attnviz.heatmap_view(softmax_maps(heads=3), TOKENS).spec["heads"] is None


class Kernel:
    """What display_in_notebook asks of a kernel's shell: that there is a kernel."""


def test_in_a_kernel_every_call_displays_its_widget_once_wherever_it_is_in_the_cell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell, "kernel", Kernel(), raising=False)
    published = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, *a, **k: published.append(data))
    shown = []
    monkeypatch.setattr(shell.displayhook, "write_format_data", lambda data, *a, **k: shown.append(data))
    shell.user_ns.update(attnviz=attnviz, att=softmax_maps(), tokens=TOKENS)
    widget = "application/vnd.jupyter.widget-view+json"
    # Inside a loop and not on the cell's last line: each call displays its widget (as BertViz's do).
    shell.run_cell("for layer in range(2):\n    attnviz.head_view(att, tokens, layer=layer)\nx = 1", store_history=True)
    assert sum(widget in d for d in published) == 2
    # On the last line: displayed by the call, not a second time as the cell's value.
    published.clear()
    shell.run_cell("w = attnviz.model_view(att, tokens)\nw", store_history=True)
    assert sum(widget in d for d in published) == 1 and not any(widget in d for d in shown)
    # The widget as a later cell's value is displayed again, as any widget is.
    published.clear()
    shell.run_cell("w", store_history=True)
    assert sum(widget in d for d in published) == 1
    # html_action="return" displays nothing: the cell's value is the HTML.
    published.clear()
    shell.run_cell("page = attnviz.head_view(att, tokens, html_action='return')", store_history=True)
    assert not any(widget in d for d in published)


def test_each_display_has_a_picture_output_that_the_front_end_fills_with_the_last_drawing(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell, "kernel", Kernel(), raising=False)
    published = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, *a, **k: published.append((data, k.get("update", False))))
    shell.user_ns.update(attnviz=attnviz, att=softmax_maps(), tokens=TOKENS)
    shell.run_cell("w = attnviz.head_view(att, tokens, label='<b>mine</b>')", store_history=True)
    w = shell.user_ns["w"]
    pid = w.spec["picture_id"]
    # After the widget, its picture's output: empty until the front end has drawn.
    (widget, _), (placeholder, _) = published
    assert "application/vnd.jupyter.widget-view+json" in widget
    assert placeholder["text/html"] == f'<div id="attnviz-picture-{pid}"></div>'
    # The front end sends its canvas after drawing: the output is updated in place.
    published.clear()
    w._on_front_end_message(w, {"type": "picture", "png": "data:image/png;base64,iVBORw0KGgo=", "width": 480, "height": 276}, [])
    ((picture, update),) = published
    assert update
    assert picture["text/html"].startswith(f'<div id="attnviz-picture-{pid}"><img src="data:image/png;base64,iVBORw0KGgo=" width="480" height="276"')
    assert "&lt;b&gt;mine&lt;/b&gt;" in picture["text/html"] and "<b>mine" not in picture["text/html"]
    # Anything else is not taken for a picture.
    published.clear()
    w._on_front_end_message(w, {"type": "picture", "png": "javascript:alert(1)"}, [])
    assert published == []
