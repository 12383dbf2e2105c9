// Helpers for the view tests (heatmap, head legibility, entropy chart): they look at what a
// canvas really shows, independently of how a view is implemented.
//
//   installTextLog(page)            record every fillText (and count the stroke() calls) on every
//                                   2D canvas, per frame (a frame starts when a fillRect or
//                                   clearRect covers the whole canvas; on an off-screen canvas,
//                                   when a clearRect starts at its origin; a drawing made off
//                                   screen and copied whole onto a canvas with drawImage becomes
//                                   that canvas's frame)
//   textLogFromStart(context)       the same log in every page of a context from its first script
//                                   (openApp's onContext), so it sees the first drawing too
//   textFrame(page, canvas)       the last frame's texts of a canvas, in CSS px of the canvas
//   waitQuiet(page, canvas, ms)   wait until that canvas has not been drawn on for `ms`
//   realResult(page, text)          run the real model in a worker of our own (the page's worker
//                                   protocol, not the page shell) and keep the answer in
//                                   window.__real[text]; returns its tokens
//
// `canvas` is a CSS selector of the canvas, or "HOST >> SELECTOR" for a canvas in the shadow
// root of HOST (e.g. "#hm >> canvas").

/** Patch CanvasRenderingContext2D to log texts (with their device-pixel anchor and direction)
 *  and count strokes. Runs in the page. */
function textLog() {
  if (window.__textLog) return;
  const frames = new WeakMap(); // canvas → { texts: [], strokes, at: ms, n }
  window.__textLog = frames;
  const proto = CanvasRenderingContext2D.prototype;
  const fillRect = proto.fillRect;
  const fillText = proto.fillText;
  const stroke = proto.stroke;
  const drawImage = proto.drawImage;
  const touch = (c) => {
    let f = frames.get(c);
    if (!f) frames.set(c, (f = { texts: [], strokes: 0, at: 0, n: 0 }));
    f.at = performance.now();
    f.n++;
    return f;
  };
  proto.stroke = function (...args) {
    touch(this.canvas).strokes++;
    return stroke.apply(this, args);
  };
  // The page's painter draws a slow view off screen and copies it whole (render.js backBuffer):
  // what the canvas then shows is that drawing.
  proto.drawImage = function (img, ...args) {
    const src = img instanceof HTMLCanvasElement ? frames.get(img) : null;
    const r = drawImage.call(this, img, ...args);
    if (src) {
      const f = touch(this.canvas);
      const t = this.getTransform();
      const [sw, sh] = args.length === 8 ? args.slice(2, 4) : [img.width, img.height];
      const [dx, dy, dw, dh] = args.length === 8 ? args.slice(4) : args.length === 4 ? args : [args[0], args[1], img.width, img.height];
      const x0 = t.a * dx + t.e;
      const y0 = t.d * dy + t.f;
      if (x0 <= 0.5 && y0 <= 0.5 && x0 + t.a * dw >= this.canvas.width - 0.5 && y0 + t.d * dh >= this.canvas.height - 0.5) {
        // Only the copied part of the buffer (it may be larger than this drawing).
        f.texts = src.texts.filter((x) => x.x <= sw && x.y <= sh);
        f.strokes = src.strokes;
      }
    }
    return r;
  };
  // The back buffer only grows: its frame starts with a clearRect of the drawing's size at its
  // origin, which need not cover the whole buffer.
  const clearRect = proto.clearRect;
  proto.clearRect = function (x, y, w, h) {
    const t = this.getTransform();
    const c = this.canvas;
    const xs = [t.a * x + t.c * y + t.e, t.a * (x + w) + t.c * (y + h) + t.e];
    const ys = [t.b * x + t.d * y + t.f, t.b * (x + w) + t.d * (y + h) + t.f];
    const atOrigin = Math.min(...xs) <= 0.5 && Math.min(...ys) <= 0.5;
    if (atOrigin && (!c.isConnected || (Math.max(...xs) >= c.width - 0.5 && Math.max(...ys) >= c.height - 0.5))) {
      const f = touch(c);
      f.texts = [];
      f.strokes = 0;
    }
    return clearRect.call(this, x, y, w, h);
  };
  proto.fillRect = function (x, y, w, h) {
    const t = this.getTransform();
    const c = this.canvas;
    const xs = [t.a * x + t.c * y + t.e, t.a * (x + w) + t.c * (y + h) + t.e];
    const ys = [t.b * x + t.d * y + t.f, t.b * (x + w) + t.d * (y + h) + t.f];
    const f = touch(c);
    if (Math.min(...xs) <= 0.5 && Math.min(...ys) <= 0.5 && Math.max(...xs) >= c.width - 0.5 && Math.max(...ys) >= c.height - 0.5) {
      f.texts = [];
      f.strokes = 0;
    }
    return fillRect.call(this, x, y, w, h);
  };
  proto.fillText = function (text, x, y, ...rest) {
    const t = this.getTransform();
    const f = touch(this.canvas);
    const m = this.measureText(String(text));
    const px = Number((/([\d.]+)px/.exec(this.font) || [0, 10])[1]);
    f.texts.push({
      text: String(text),
      x: t.a * x + t.c * y + t.e,
      y: t.b * x + t.d * y + t.f,
      dirX: t.a,
      dirY: t.b,
      align: this.textAlign,
      baseline: this.textBaseline,
      px,
      width: m.width,
      fill: String(this.fillStyle),
    });
    return fillText.call(this, text, x, y, ...rest);
  };
}

/** Start the log in a page already open (it sees the drawings made from now on). */
export async function installTextLog(page) {
  await page.evaluate(textLog);
}

/** Start the log in every page of a browser context before its scripts run (openApp's onContext),
 *  so it sees the first drawing too. */
export function textLogFromStart(context) {
  return context.addInitScript(textLog);
}

/**
 * The last frame of a canvas: { texts: [{ text, x, y (CSS px from the canvas' top left), angle
 * (radians, 0 = left to right), px (font size, CSS px), width (CSS px), align, baseline }],
 * strokes (stroke() calls: a line each in the head and cross views),
 * rect: the canvas' client rect, view: { width, height } of the window, dpr }.
 */
export function textFrame(page, canvas) {
  return page.evaluate((sel) => {
    const [host, inner] = sel.split(' >> ');
    const c = inner ? document.querySelector(host).shadowRoot.querySelector(inner) : document.querySelector(sel);
    const f = window.__textLog.get(c);
    const r = c.getBoundingClientRect();
    const dpr = c.width / r.width;
    const texts = (f ? f.texts : []).map((t) => {
      const scale = Math.hypot(t.dirX, t.dirY); // device px per CSS px of the text's own space
      return {
        text: t.text,
        x: t.x / dpr,
        y: t.y / dpr,
        angle: Math.atan2(t.dirY, t.dirX),
        px: (t.px * scale) / dpr,
        width: (t.width * scale) / dpr,
        align: t.align,
        baseline: t.baseline,
        fill: t.fill,
      };
    });
    return { texts, strokes: f ? f.strokes : 0, rect: { left: r.left, top: r.top, width: r.width, height: r.height }, view: { width: innerWidth, height: innerHeight }, dpr };
  }, canvas);
}

/** Wait until the canvas has been drawn on at least once and then not for `quietMs`. */
export async function waitQuiet(page, canvas, quietMs = 1000, timeout = 60_000) {
  await page.waitForFunction(
    ([sel, q]) => {
      const [host, inner] = sel.split(' >> ');
      const c = inner ? document.querySelector(host).shadowRoot.querySelector(inner) : document.querySelector(sel);
      const f = window.__textLog.get(c);
      return f && f.n > 0 && performance.now() - f.at > q;
    },
    [canvas, quietMs],
    { timeout, polling: 100 },
  );
}

/** Run the real model on `text` in a worker of our own; the answer stays in window.__real[text].
 *  MiniLM by default, with the exact weights the settled page draws (issue 26). */
export function realResult(page, text, model = 'minilm-l6@exact') {
  return page.evaluate(async ([t, id]) => {
    if (!window.__realWorker) {
      const w = new Worker(new URL('worker/worker.js', location.href), { type: 'module' });
      let next = 1;
      const waiting = new Map();
      w.onmessage = (ev) => {
        const m = ev.data;
        if (m.type === 'progress') return;
        const cb = waiting.get(m.id);
        waiting.delete(m.id);
        if (cb) (m.type === 'error' ? cb.reject(new Error(m.message)) : cb.resolve(m));
      };
      const ask = (msg) => new Promise((resolve, reject) => {
        const n = next++;
        waiting.set(n, { resolve, reject });
        w.postMessage({ ...msg, id: n, channel: 'views-test' });
      });
      window.__realWorker = { ask };
      window.__real = {};
      await ask({ type: 'init', base: new URL('./', location.href).href });
    }
    const { ask } = window.__realWorker;
    const info = (await ask({ type: 'load', model: id })).info;
    const ans = await ask({ type: 'attend', model: id, text: t });
    window.__real[t] = { result: ans.result, specials: info.special_tokens || [] };
    return { tokens: ans.result.tokens.source, target: ans.result.tokens.target };
  }, [text, model]);
}

/** Weight [query i][key j] of one head of the real result (raw tokens, no filters). */
export function realWeight(page, text, kind, layer, head, i, j) {
  return page.evaluate(([t, k, l, h, qi, kj]) => {
    const b = window.__real[t].result.attentions.find((a) => a.kind === k && a.layer === l);
    return b.data[h * b.query_len * b.key_len + qi * b.key_len + kj];
  }, [text, kind, layer, head, i, j]);
}

/** Decode PNG bytes (a Buffer) in the page: { width, height, inked: pixels unlike the top-left one }. */
export function decodePng(page, bytes) {
  return page.evaluate(async (b64) => {
    const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const bmp = await createImageBitmap(new Blob([bin], { type: 'image/png' }));
    const c = new OffscreenCanvas(bmp.width, bmp.height);
    const ctx = c.getContext('2d');
    ctx.drawImage(bmp, 0, 0);
    const d = ctx.getImageData(0, 0, bmp.width, bmp.height).data;
    let inked = 0;
    for (let i = 0; i < d.length; i += 4) if (Math.abs(d[i] - d[0]) + Math.abs(d[i + 1] - d[1]) + Math.abs(d[i + 2] - d[2]) > 30) inked++;
    return { width: bmp.width, height: bmp.height, inked };
  }, bytes.toString('base64'));
}
