// Keystroke → drawn while typing at 80 ms a key, per default model (make bench; reported, never
// asserted). A keystroke counts as drawn when the first drawing of a text that holds it (the text
// typed up to that key, or later) is on the canvas: while a forward takes longer than the gap
// between keys, the maps catch up at the model's pace instead of waiting for typing to stop.
// One row per model × view (head view, step view, head overview, score parts, logit lens; SmolLM2 also with Generate 8):
// the step view and head overview draw from the same forward as the maps, and SmolLM2 reuses
// the previous text's KV cache and rows, so these rows should be close to the head view's.
// usage: node benches/typing.mjs [model…]   (needs pkg/ and models/, as make serve does)
import { openApp, launchBrowser, startServer } from '../tests/e2e/harness.mjs';

const KEY_MS = 80;
const TYPED = ' and then the little fox ran back into the woods';
const START = {
  'minilm-l6': 'The animal didn’t cross the street',
  'en-pt-tiny': 'The cat sat on the mat.',
  'smollm2-135m': 'Once upon a time',
  'paper-transformer': 'The black cat sees',
};
// The paper's Transformer knows only its grammar's words (any other is <unk>).
const TYPED_FOR = { 'paper-transformer': ' a red ball on the table with the old dog and then' };
const VIEWS = [['head view', { v: 'head' }], ['step view', { v: 'step' }], ['head overview', { v: 'heads' }], ['score parts', { v: 'parts' }]];
const ROWS = Object.keys(START)
  .filter((m) => process.argv.length <= 2 || process.argv.includes(m))
  .flatMap((m) => [
    ...VIEWS.map(([label, params]) => [m, label, params]),
    ...(m === 'smollm2-135m' ? [[m, 'head view, Generate 8', { v: 'head', g: '8' }]] : []),
    // The logit lens reads a decoder: every model but MiniLM.
    ...(m === 'minilm-l6' ? [] : [[m, 'logit lens', { v: 'lens' }]]),
  ]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs, p) => {
  const a = xs.slice().sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor(p * a.length))];
};

const server = await startServer({ prefix: '/' });
const browser = await launchBrowser();
try {
  for (const [model, label, params] of ROWS) {
    const start = START[model];
    const app = await openApp(browser, `${server.url}#${new URLSearchParams({ m: model, t: start, ...params })}`);
    try {
      const { page } = app;
      await page.waitForFunction((t) => window.attnvizDebug.text === t, start, { timeout: 180_000 });
      // Each keystroke's time (its input event) and each drawing's time and text, as they happen.
      await page.evaluate(() => {
        const log = (window.typingLog = { keys: [], draws: [] });
        document.getElementById('text').addEventListener('input', (e) => log.keys.push({ at: e.timeStamp, len: e.target.value.length }));
        let n = window.attnvizDebug.drawCount;
        const poll = () => {
          const d = window.attnvizDebug;
          if (d.drawCount !== n) {
            n = d.drawCount;
            log.draws.push({ at: performance.now(), len: d.text.length });
          }
          requestAnimationFrame(poll);
        };
        poll();
      });
      await page.focus('#text');
      await page.keyboard.press('End');
      const typed = TYPED_FOR[model] || TYPED;
      for (const ch of typed) {
        await page.keyboard.type(ch);
        await sleep(KEY_MS);
      }
      await page.waitForFunction((t) => window.attnvizDebug.text === t, start + typed, { timeout: 120_000 });
      await sleep(200);
      const { keys, draws } = await page.evaluate(() => window.typingLog);
      const lat = keys.map((k) => {
        const d = draws.find((x) => x.len >= k.len && x.at >= k.at);
        return d ? d.at - k.at : NaN;
      }).filter(Number.isFinite);
      const drawnWhileTyping = draws.filter((d) => d.at <= keys.at(-1).at).length;
      const fwd = await page.evaluate(() => window.attnvizDebug.lastForwardMs);
      console.log(`[bench] typing ${model}, ${label}: ${keys.length} keys at ${KEY_MS} ms, ${drawnWhileTyping} drawings while typing; keystroke → drawn p50 ${quantile(lat, 0.5).toFixed(0)} ms, p90 ${quantile(lat, 0.9).toFixed(0)} ms (last forward ${fwd.toFixed(0)} ms)`);
    } finally {
      await app.close();
    }
  }
} finally {
  await browser.close();
  await server.close();
}
