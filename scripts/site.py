#!/usr/bin/env python3
"""Write the folder a teacher uploads to any static host: `make site DEST=path`.

The folder is laid out as `make serve` serves it: the page, the lesson example and the widget
files of www/ (every file, its subfolders too) at the top, the wasm builds in pkg/ (pkg/relaxed/,
and pkg/threads/ when it was built), and the default models in models/ (index.json, each model's
manifest and the files it lists, int8 variants included). Beside each file goes its `.br` and
`.gz` from `make precompress` while they are no older than it, for static hosts that serve
precompressed files (`attnviz serve` does). Nothing else: no build stamps, no source. Prints what
it wrote and the total size.
"""

import argparse
import json
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG_FILES = ("attnviz.js", "attnviz_bg.wasm")


def fail(message):
    print(f"make site: {message}", file=sys.stderr)
    sys.exit(1)


PRECOMPRESSED = (".br", ".gz")


def copy(src, dest, written):
    """Copies a file, and its precompressed variants that are up to date."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copyfile(src, dest)
    written.append(os.path.getsize(dest))
    for suffix in PRECOMPRESSED:
        variant = src + suffix
        if os.path.isfile(variant) and os.path.getmtime(variant) >= os.path.getmtime(src):
            shutil.copyfile(variant, dest + suffix)
            written.append(os.path.getsize(dest + suffix))


def copy_www(dest, written):
    www = os.path.join(ROOT, "www")
    for folder, dirs, files in os.walk(www):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(PRECOMPRESSED):  # copied beside their file, when up to date
                continue
            src = os.path.join(folder, name)
            copy(src, os.path.join(dest, os.path.relpath(src, www)), written)


BUILDS = {"simd": "", "relaxed": "relaxed", "threads": "threads"}


def copy_pkg(dest, written, wanted):
    builds = []
    for sub in (BUILDS[b] for b in wanted):
        src = os.path.join(ROOT, "pkg", sub)
        if not all(os.path.isfile(os.path.join(src, f)) for f in PKG_FILES):
            if sub != "threads":  # the threads build needs a nightly toolchain: optional
                fail(f"pkg/{sub} is not built: run `make build` first")
            continue
        for f in PKG_FILES:
            copy(os.path.join(src, f), os.path.join(dest, "pkg", sub, f), written)
        builds.append(f"pkg/{sub}" if sub else "pkg/")
    return builds


def copy_models(dest, written):
    models = os.path.join(ROOT, "models")
    index_path = os.path.join(models, "index.json")
    if not os.path.isfile(index_path):
        fail("models/index.json is missing: run `make models` first")
    with open(index_path, encoding="utf-8") as f:
        index = json.load(f)
    copy(index_path, os.path.join(dest, "models", "index.json"), written)
    names = []
    for m in index:
        files = set(m["files"]) | {f for variant in (m.get("variants") or {}).values() for f in variant}
        files.add("manifest.json")
        for name in sorted(files):
            src = os.path.join(models, m["dir"], name)
            if not os.path.isfile(src):
                fail(f"models/{m['dir']}/{name} is missing: run `make models` first")
            copy(src, os.path.join(dest, "models", m["dir"], name), written)
        names.append(m["id"])
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", required=True, help="the folder to write (made if missing; must be empty)")
    ap.add_argument("--builds", default="simd,relaxed,threads", help="the wasm builds to copy (default: all; threads only where built)")
    args = ap.parse_args()
    dest = os.path.abspath(args.dest)
    if os.path.realpath(dest).startswith(os.path.realpath(ROOT) + os.sep) and not os.path.realpath(dest).startswith(os.path.join(os.path.realpath(ROOT), "dist") + os.sep):
        fail(f"{dest} is inside the repository: write the site elsewhere (or under dist/)")
    if os.path.exists(dest) and os.listdir(dest):
        fail(f"{dest} is not empty: give a new or empty folder")
    wanted = args.builds.split(",")
    if not wanted or any(b not in BUILDS for b in wanted):
        fail(f"--builds {args.builds}: a comma-separated list of {', '.join(BUILDS)}")
    written = []
    copy_www(dest, written)
    builds = copy_pkg(dest, written, wanted)
    models = copy_models(dest, written)
    total = sum(written)
    print(f"make site: {len(written)} files, {total / 1048576:.1f} MiB in {dest}")
    print(f"  wasm builds: {', '.join(builds)}; models: {', '.join(models)}")
    print(f"  try it: python3 -m http.server -d {dest} 8000  (then http://127.0.0.1:8000/ and /examples.html)")


if __name__ == "__main__":
    main()
