// Keystroke → drawn while typing at 80 ms a key, per default model (make bench; reported, never
// asserted). A keystroke counts as drawn when the first drawing of a text that holds it (the text
// typed up to that key, or later) is on the canvas: while a forward takes longer than the gap
// between keys, the maps catch up at the model's pace instead of waiting for typing to stop.
// usage: node benches/typing.mjs   (needs pkg/ and models/, as make serve does)
import { openApp, launchBrowser, startServer } from '../tests/e2e/harness.mjs';

const KEY_MS = 80;
const TYPED = ' and then the little fox ran back into the woods';
const MODELS = [
  ['minilm-l6', 'The animal didn’t cross the street'],
  ['en-pt-tiny', 'The cat sat on the mat.'],
  ['smollm2-135m', 'Once upon a time'],
];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const quantile = (xs, p) => {
  const a = xs.slice().sort((x, y) => x - y);
  return a[Math.min(a.length - 1, Math.floor(p * a.length))];
};

const server = await startServer({ prefix: '/' });
const browser = await launchBrowser();
try {
  for (const [model, start] of MODELS) {
    const app = await openApp(browser, `${server.url}#${new URLSearchParams({ m: model, t: start })}`);
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
      for (const ch of TYPED) {
        await page.keyboard.type(ch);
        await sleep(KEY_MS);
      }
      await page.waitForFunction((t) => window.attnvizDebug.text === t, start + TYPED, { timeout: 120_000 });
      await sleep(200);
      const { keys, draws } = await page.evaluate(() => window.typingLog);
      const lat = keys.map((k) => {
        const d = draws.find((x) => x.len >= k.len && x.at >= k.at);
        return d ? d.at - k.at : NaN;
      }).filter(Number.isFinite);
      const drawnWhileTyping = draws.filter((d) => d.at <= keys.at(-1).at).length;
      const fwd = await page.evaluate(() => window.attnvizDebug.lastForwardMs);
      console.log(`[bench] typing ${model}: ${keys.length} keys at ${KEY_MS} ms, ${drawnWhileTyping} drawings while typing; keystroke → drawn p50 ${quantile(lat, 0.5).toFixed(0)} ms, p90 ${quantile(lat, 0.9).toFixed(0)} ms (last forward ${fwd.toFixed(0)} ms)`);
    } finally {
      await app.close();
    }
  }
} finally {
  await browser.close();
  await server.close();
}
