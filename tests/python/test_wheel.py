"""The wheel `make dist` writes, built from python/ here, installed into a fresh venv (with its two
dependencies from PyPI, as a user's pip would) and used there: it carries the bundle, and a
widget made in that venv saves a page that holds it."""

import pathlib
import subprocess
import sys
import venv
import zipfile

import pytest

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[2] / "python"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--disable-pip-version-check", "-w", str(out), str(PYTHON_DIR)],
        check=True,
        timeout=600,
    )
    (path,) = out.glob("attnviz-*-py3-none-any.whl")
    return path


def test_the_wheel_holds_the_package_and_its_bundle_and_needs_only_anywidget_and_numpy(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        # The bundle, and what show() runs a model on: the model worker and the SIMD wasm build.
        shipped = ["notebook.js", "worker.js", "pkg/attnviz.js", "pkg/attnviz_bg.wasm"]
        assert {"attnviz/__init__.py"} | {f"attnviz/static/{f}" for f in shipped} <= names
        for f in shipped:
            assert z.read(f"attnviz/static/{f}") == (PYTHON_DIR / "attnviz" / "static" / f).read_bytes(), f
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = sorted(line.split(":", 1)[1].strip().split()[0].split(">")[0] for line in meta.splitlines() if line.startswith("Requires-Dist:"))
    assert requires == ["anywidget", "numpy"]
    # The wasm (2.7 MB) is most of it, deflated in the zip.
    assert wheel.stat().st_size < 2_000_000, f"{wheel.stat().st_size} bytes"


def test_the_wheel_installs_into_a_fresh_venv_and_draws_from_there(wheel, tmp_path):
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    py = env / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)], check=True, timeout=900)
    script = (
        "import numpy as np, attnviz, sys; "
        "a = [np.full((1, 2, 3, 3), 1/3, np.float32)] * 2; "
        "w = attnviz.head_view(a, ['a', 'b', 'c']); "
        "p = w.save_html(sys.argv[1]); "
        "print(attnviz.__file__)"
    )
    page = tmp_path / "a.html"
    where = subprocess.run([str(py), "-c", script, str(page)], check=True, capture_output=True, text=True, timeout=120).stdout
    assert str(env) in where, f"imported from {where}, not from the fresh venv"
    assert 'id="attnviz-esm"' in page.read_text(encoding="utf-8")
