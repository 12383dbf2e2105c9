// The notebook widget against BertViz (issue 25), reported, never asserted: for a 12-layer,
// 12-head attention at 64, 256 and 512 tokens, the bytes each sends to the browser and the time
// from opening its output to a drawn head view in headless Chromium.
//
// attnviz: attnviz.head_view(...) → the widget's message, spec JSON + one float32 buffer (the
// 190 KiB bundle is sent once per kernel), fetched by a page as anywidget hands them over (the
// JSON as an object, the buffer as a DataView) to the bundle's render(): the notebook's path
// without the kernel's websocket.
// BertViz 1.4.1 (pip download --no-deps from PyPI): its own head_view(..., html_action='return')
// run with numpy arrays and a stand-in `torch` module whose only function is `stack` (np.stack;
// BertViz calls nothing else of torch on this path, and tolist() of a float32 array gives the
// same numbers), so its HTML is byte for byte what it sends. It loads require.js, d3 5.7.0 and
// jQuery 2.0.0 from cdnjs; offline here, those URLs are answered from npm's requirejs 2.3.6,
// d3 5.7.0 and jquery 2.1.0 (2.0.0 is not on npm). Where BertViz cannot be fetched, its rows
// say so and attnviz's are still measured.
//
// Usage: node benches/notebook.mjs [sizes…]   (default 64 256 512; medians of RUNS page loads)
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser, staticServer, stopStaticServers } from '../tests/e2e/harness.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PY = path.join(ROOT, '.venv', 'bin', 'python');
const SIZES = process.argv.slice(2).map(Number).filter((n) => n > 0);
const RUNS = 5;
const LIMIT_MS = 180_000;
const work = mkdtempSync(path.join(os.tmpdir(), 'attnviz-bench-notebook-'));

/** BertViz's package folder (downloaded once into `work`), or null with why not. */
function fetchBertviz() {
  try {
    execFileSync(PY, ['-m', 'pip', 'download', '-q', '--no-deps', '--disable-pip-version-check', 'bertviz==1.4.1', '-d', work], { stdio: 'pipe', timeout: 300_000 });
    const wheel = path.join(work, 'bertviz-1.4.1-py3-none-any.whl');
    execFileSync(PY, ['-c', 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])', wheel, path.join(work, 'bertviz')]);
    return { dir: path.join(work, 'bertviz') };
  } catch (e) {
    return { why: `pip download bertviz failed: ${String(e.stderr || e.message).trim().split('\n').pop()}` };
  }
}

/** requirejs, d3 and jquery from npm, for BertViz's cdnjs URLs. */
function fetchBertvizScripts() {
  const dir = path.join(work, 'npm');
  mkdirSync(dir, { recursive: true });
  execFileSync('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--silent', '--prefix', dir, 'requirejs@2.3.6', 'd3@5.7.0', 'jquery@2.1.0'], { stdio: 'pipe', timeout: 300_000 });
  const m = path.join(dir, 'node_modules');
  return {
    'require.js/2.3.6/require.min.js': path.join(m, 'requirejs', 'require.js'),
    'd3/5.7.0/d3.min.js': path.join(m, 'd3', 'dist', 'd3.min.js'),
    'jquery/2.0.0/jquery.min.js': path.join(m, 'jquery', 'dist', 'jquery.min.js'),
  };
}

// Both widgets' pages and payloads, written by Python: one row per size.
const PAYLOADS = String.raw`
import json, pathlib, sys, time, types
import numpy as np
root, out, bv = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(root / "python"))
import attnviz
if bv:
    torch = types.ModuleType("torch")  # BertViz's one call on this path: torch.stack
    torch.stack = np.stack
    sys.modules["torch"] = torch
    sys.path.insert(0, bv)
    from bertviz import head_view as bertviz_head_view
rows = []
for n in map(int, sys.argv[4:]):
    rng = np.random.default_rng(n)
    att = []
    for _ in range(12):
        x = rng.normal(size=(1, 12, n, n)).astype(np.float32)
        e = np.exp(x - x.max(-1, keepdims=True))
        att.append((e / e.sum(-1, keepdims=True)).astype(np.float32))
    tokens = [f"tok{i}" for i in range(n)]
    t0 = time.perf_counter()
    w = attnviz.head_view(tuple(att), tokens)
    row = {"n": n, "attnviz_py_ms": (time.perf_counter() - t0) * 1e3, "attnviz_bytes": len(w.data) + len(json.dumps(w.spec))}
    (out / f"attnviz-{n}.json").write_text(json.dumps(w.spec), encoding="utf-8")
    (out / f"attnviz-{n}.bin").write_bytes(w.data)
    if bv:
        t0 = time.perf_counter()
        html = bertviz_head_view(att, tokens, html_action="return").data
        row["bertviz_py_ms"] = (time.perf_counter() - t0) * 1e3
        row["bertviz_bytes"] = len(html.encode("utf-8"))
        (out / f"bertviz-{n}.html").write_text("<!doctype html><html><head><meta charset='utf-8'></head><body>" + html + "</body></html>", encoding="utf-8")
    rows.append(row)
print(json.dumps(rows))
`;

/**
 * Milliseconds from navigation to `drawn()` being true (polled every frame): the median of RUNS
 * loads, or of one where a load takes over 30 s; a page that crashes or does not draw within
 * LIMIT_MS gives its reason instead ({ ms } or { failed }).
 */
async function timeToDrawn(browser, url, drawn, arg, routes = {}) {
  const times = [];
  for (let r = 0; r < RUNS && !(times[0] > 30_000); r++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.route('https://cdnjs.cloudflare.com/ajax/libs/**', (route) => {
      const file = Object.entries(routes).find(([k]) => route.request().url().endsWith(k));
      return file ? route.fulfill({ body: readFileSync(file[1]), contentType: 'text/javascript' }) : route.abort();
    });
    const page = await context.newPage();
    try {
      const t0 = Date.now();
      await page.goto(url, { timeout: LIMIT_MS });
      await page.waitForFunction(drawn, arg, { timeout: Math.max(1, LIMIT_MS - (Date.now() - t0)), polling: 'raf' });
      times.push(await page.evaluate(() => performance.now()));
    } catch (e) {
      return { failed: /crash/i.test(e.message) ? 'the page crashed' : /Timeout/.test(e.message) ? `not drawn within ${LIMIT_MS / 1000} s` : e.message.split('\n')[0] };
    } finally {
      await context.close().catch(() => {});
    }
  }
  return { ms: times.sort((a, b) => a - b)[times.length >> 1] };
}

const sizes = SIZES.length ? SIZES : [64, 256, 512];
const bv = fetchBertviz();
let routes = {};
if (bv.dir) {
  try {
    routes = fetchBertvizScripts();
  } catch (e) {
    bv.why = `npm install of BertViz's scripts failed: ${e.message}`;
    delete bv.dir;
  }
}
const rows = JSON.parse(execFileSync(PY, ['-c', PAYLOADS, ROOT, work, bv.dir || '', ...sizes.map(String)], { maxBuffer: 1 << 26, timeout: 1_800_000 }).toString());
copyFileSync(path.join(ROOT, 'python', 'attnviz', 'static', 'notebook.js'), path.join(work, 'notebook.js'));
// anywidget's part: the widget's state (spec, and data as a DataView) handed to render().
writeFileSync(path.join(work, 'attnviz.html'), `<!doctype html><html><head><meta charset="utf-8"></head><body><div id="out"></div>
<script type="module">
const n = new URLSearchParams(location.search).get('n');
const [spec, data, widget] = await Promise.all([fetch(\`attnviz-\${n}.json\`).then((r) => r.json()), fetch(\`attnviz-\${n}.bin\`).then((r) => r.arrayBuffer()), import('./notebook.js')]);
const values = { spec, data: new DataView(data) };
widget.default.render({ model: { get: (k) => values[k], on() {}, off() {} }, el: document.getElementById('out') });
</script></body></html>`);
const url = await staticServer(work);
const browser = await launchBrowser();
const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;
try {
  console.log(`[bench] notebook head view, 12 layers × 12 heads; bytes to the browser and time to a drawn head view (median of ${RUNS} loads in headless Chromium)`);
  if (!bv.dir) console.log(`[bench] BertViz: could not run (${bv.why})`);
  const bundle = statSync(path.join(ROOT, 'python', 'attnviz', 'static', 'notebook.js')).size;
  for (const row of rows) {
    const a = await timeToDrawn(browser, `${url}attnviz.html?n=${row.n}`, () => {
      const w = document.querySelector('attention-viz');
      return !!w && w.dataset.state === 'ready' && !w.session.pending && !w.shell.busy;
    });
    const shown = (t) => (t.ms !== undefined ? `drawn in ${t.ms.toFixed(0)} ms` : t.failed);
    let line = `[bench] ${String(row.n).padStart(4)} tokens: attnviz ${mb(row.attnviz_bytes)} (+ ${(bundle / 1024).toFixed(0)} KiB bundle once), ${shown(a)} (Python ${row.attnviz_py_ms.toFixed(0)} ms)`;
    if (bv.dir) {
      const b = await timeToDrawn(browser, `${url}bertviz-${row.n}.html`, (n) => document.querySelectorAll('#vis svg line').length >= n && document.querySelectorAll('#vis svg text').length >= 2 * n, row.n, routes);
      line += ` | BertViz ${mb(row.bertviz_bytes)}, ${shown(b)} (Python ${row.bertviz_py_ms.toFixed(0)} ms) | bytes ÷ ${(row.bertviz_bytes / row.attnviz_bytes).toFixed(1)}`;
      if (a.ms !== undefined && b.ms !== undefined) line += `, time ÷ ${(b.ms / a.ms).toFixed(1)}`;
    }
    console.log(line);
  }
} finally {
  await browser.close();
  stopStaticServers();
  if (existsSync(work)) rmSync(work, { recursive: true, force: true });
}

