// The CLI's numbers, for e2e tests that check what the page reads out against them:
// `attnviz attend … --measure value-norm --format json`, `attnviz heads … --format json`.
// The binary: $ATTNVIZ_BIN, else target/release/attnviz (built with cargo when missing).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The one native CLI every suite compares with: $ATTNVIZ_BIN (make test exports the binary
 *  cargo test built), else target/release/attnviz, built with cargo when missing. */
export function cliBinary() {
  if (process.env.ATTNVIZ_BIN) return process.env.ATTNVIZ_BIN;
  const bin = `${ROOT}target/release/attnviz`;
  if (!existsSync(bin)) execFileSync('cargo', ['build', '--release', '--bin', 'attnviz'], { cwd: ROOT, stdio: 'inherit' });
  return bin;
}

/** `attnviz <args…> --format json` run in the repository, parsed (step and positions print JSON
 *  without being asked). For MiniLM the CLI reads the f32 weights: the page's settled maps are
 *  drawn from them (int8 ones draw its first map only: issue 26). */
export function cliJson(...args) {
  const format = args[0] === 'step' || args[0] === 'positions' ? [] : ['--format', 'json'];
  const out = execFileSync(cliBinary(), [...args, ...format], { cwd: ROOT, maxBuffer: 256 << 20 });
  return JSON.parse(out.toString());
}

/** The block of one kind and layer of a CLI answer's `attentions` or `value_norms`. */
export function cliBlock(blocks, kind, layer) {
  return blocks.find((b) => b.kind === kind && b.layer === layer);
}

/** Entry [head][query i][key j] of a CLI block (its data flat, or nested [h][i][j]). */
export function cliAt(block, h, i, j) {
  const d = block.data;
  if (Array.isArray(d[0])) return d[h][i][j];
  return d[(h * block.query_len + i) * block.key_len + j];
}

/** Start collecting long tasks (window.longTasks: durations in ms). */
export function watchLongTasks(page) {
  return page.evaluate(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) window.longTasks.push(e.duration);
    }).observe({ type: 'longtask' });
  });
}

/** A short digest of a canvas's pixels (to tell two drawings apart). */
export function canvasDigest(page, selector) {
  return page.evaluate((sel) => {
    const [host, inner] = sel.split(' >> ');
    const c = inner ? document.querySelector(host).shadowRoot.querySelector(inner) : document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let h = 2166136261;
    for (let i = 0; i < d.length; i += 3) h = Math.imul(h ^ d[i], 16777619);
    return `${c.width}x${c.height}:${h >>> 0}`;
  }, selector);
}

/**
 * Wait until the page's pred(arg) holds and it has nothing left to compute or draw (a view's
 * step data, value norms or a comparison still on their way count as not drawn).
 */
export async function waitDrawn(page, pred, arg) {
  await page.waitForFunction(pred, arg, { timeout: 60_000, polling: 100 });
  await page.waitForFunction(() => !window.attnvizDebug.computing && !window.attnvizDebug.drawing, null, { timeout: 30_000 });
}
