// A tiny SVG builder that speaks the subset of CanvasRenderingContext2D the views use, so SVG
// export re-draws the very same view. Elements are created with the DOM (text via textContent),
// then serialised with XMLSerializer: token strings can never become markup.

const NS = 'http://www.w3.org/2000/svg';

let measurer = null;
function measureCtx() {
  if (!measurer) measurer = document.createElement('canvas').getContext('2d');
  return measurer;
}

/** "600 13px a, b" → { weight: '600', size: '13px', family: 'a, b' } */
function parseFont(font) {
  const m = /^\s*(?:(normal|bold|[1-9]00)\s+)?([\d.]+px)\s+(.+)$/.exec(font || '');
  if (!m) return { weight: '400', size: '10px', family: 'sans-serif' };
  return { weight: m[1] || '400', size: m[2], family: m[3] };
}

const fmtN = (v) => (Math.round(v * 100) / 100).toString();

// Every code point XML 1.0 forbids (its Char production allows only #x9 | #xA | #xD |
// [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]): C0 controls but tab, LF and CR; lone
// surrogates (with the u flag a well-formed pair is one code point and does not match); U+FFFE and
// U+FFFF. XMLSerializer writes them as they are, so a text holding one made an SVG no XML parser
// reads. Matching control characters is the point here, hence the lint exception.
// eslint-disable-next-line no-control-regex
const XML_FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uD800-\uDFFF\uFFFE\uFFFF]/gu;

/**
 * `s` with every character XML 1.0 forbids replaced: a C0 control by its visible Control Picture
 * (U+0000 → ␀ U+2400, U+001B → ␛ U+241B), anything else (lone surrogates, U+FFFE, U+FFFF) by
 * U+FFFD. Every other character is kept.
 */
export function xmlSafe(s) {
  return String(s).replace(XML_FORBIDDEN, (c) => {
    const cp = c.codePointAt(0);
    return cp < 0x20 ? String.fromCodePoint(0x2400 + cp) : '\uFFFD';
  });
}

export class SvgContext {
  constructor(width, height) {
    this.isSvg = true;
    this.width = width;
    this.height = height;
    this.root = document.createElementNS(NS, 'svg');
    this.root.setAttribute('xmlns', NS);
    this.root.setAttribute('width', String(Math.ceil(width)));
    this.root.setAttribute('height', String(Math.ceil(height)));
    this.root.setAttribute('viewBox', `0 0 ${Math.ceil(width)} ${Math.ceil(height)}`);
    this.fillStyle = '#000';
    this.strokeStyle = '#000';
    this.lineWidth = 1;
    this.globalAlpha = 1;
    this.font = '10px sans-serif';
    this.textAlign = 'start';
    this.textBaseline = 'alphabetic';
    this.lineCap = 'butt';
    this.imageSmoothingEnabled = true;
    this.m = [1, 0, 0, 1, 0, 0];
    this.stack = [];
    this.path = [];
    this.families = new Map();
  }

  // ---- state
  save() {
    this.stack.push({
      fillStyle: this.fillStyle, strokeStyle: this.strokeStyle, lineWidth: this.lineWidth, globalAlpha: this.globalAlpha,
      font: this.font, textAlign: this.textAlign, textBaseline: this.textBaseline, lineCap: this.lineCap, m: this.m.slice(),
    });
  }

  restore() {
    const s = this.stack.pop();
    if (s) Object.assign(this, s);
  }

  setTransform(a = 1, b = 0, c = 0, d = 1, e = 0, f = 0) {
    // A uniform scale is the device-pixel scaling of a canvas; SVG works in CSS pixels.
    this.m = !b && !c && !e && !f && a === d ? [1, 0, 0, 1, 0, 0] : [a, b, c, d, e, f];
  }

  translate(x, y) {
    const [a, b, c, d, e, f] = this.m;
    this.m = [a, b, c, d, a * x + c * y + e, b * x + d * y + f];
  }

  rotate(t) {
    const [a, b, c, d, e, f] = this.m;
    const cos = Math.cos(t);
    const sin = Math.sin(t);
    this.m = [a * cos + c * sin, b * cos + d * sin, -a * sin + c * cos, -b * sin + d * cos, e, f];
  }

  scale(x, y) {
    const [a, b, c, d, e, f] = this.m;
    this.m = [a * x, b * x, c * y, d * y, e, f];
  }

  // ---- elements
  el(name, attrs) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
    const m = this.m;
    if (!(m[0] === 1 && m[1] === 0 && m[2] === 0 && m[3] === 1 && m[4] === 0 && m[5] === 0)) {
      e.setAttribute('transform', `matrix(${m.map(fmtN).join(' ')})`);
    }
    if (this.globalAlpha < 1) e.setAttribute('opacity', fmtN(this.globalAlpha));
    this.root.appendChild(e);
    return e;
  }

  fillRect(x, y, w, h) {
    this.el('rect', { x: fmtN(x), y: fmtN(y), width: fmtN(w), height: fmtN(h), fill: this.fillStyle });
  }

  strokeRect(x, y, w, h) {
    this.el('rect', { x: fmtN(x), y: fmtN(y), width: fmtN(w), height: fmtN(h), fill: 'none', stroke: this.strokeStyle, 'stroke-width': fmtN(this.lineWidth) });
  }

  clearRect() {}

  beginPath() {
    this.path = [];
  }

  moveTo(x, y) {
    this.path.push(`M${fmtN(x)} ${fmtN(y)}`);
  }

  lineTo(x, y) {
    this.path.push(`L${fmtN(x)} ${fmtN(y)}`);
  }

  rect(x, y, w, h) {
    this.path.push(`M${fmtN(x)} ${fmtN(y)}h${fmtN(w)}v${fmtN(h)}h${fmtN(-w)}Z`);
  }

  arc(x, y, r, a0, a1) {
    const full = Math.abs(a1 - a0) >= Math.PI * 2 - 1e-6;
    if (full) {
      this.path.push(`M${fmtN(x + r)} ${fmtN(y)}A${fmtN(r)} ${fmtN(r)} 0 1 1 ${fmtN(x - r)} ${fmtN(y)}A${fmtN(r)} ${fmtN(r)} 0 1 1 ${fmtN(x + r)} ${fmtN(y)}`);
      return;
    }
    const sx = x + r * Math.cos(a0);
    const sy = y + r * Math.sin(a0);
    const ex = x + r * Math.cos(a1);
    const ey = y + r * Math.sin(a1);
    const large = ((a1 - a0) % (2 * Math.PI)) > Math.PI ? 1 : 0;
    this.path.push(`M${fmtN(sx)} ${fmtN(sy)}A${fmtN(r)} ${fmtN(r)} 0 ${large} 1 ${fmtN(ex)} ${fmtN(ey)}`);
  }

  closePath() {
    this.path.push('Z');
  }

  stroke() {
    if (!this.path.length) return;
    this.el('path', { d: this.path.join(''), fill: 'none', stroke: this.strokeStyle, 'stroke-width': fmtN(this.lineWidth), 'stroke-linecap': this.lineCap });
  }

  fill() {
    if (!this.path.length) return;
    this.el('path', { d: this.path.join(''), fill: this.fillStyle });
  }

  measureText(text) {
    const c = measureCtx();
    c.font = this.font;
    return c.measureText(text);
  }

  fillText(text, x, y) {
    const anchor = { left: 'start', start: 'start', right: 'end', end: 'end', center: 'middle' }[this.textAlign] || 'start';
    const baseline = { top: 'hanging', hanging: 'hanging', middle: 'central', bottom: 'text-after-edge', ideographic: 'ideographic' }[this.textBaseline];
    const f = parseFont(this.font);
    this.families.set(f.family, (this.families.get(f.family) || 0) + 1);
    const e = this.el('text', {
      x: fmtN(x), y: fmtN(y), fill: this.fillStyle, 'text-anchor': anchor, 'dominant-baseline': baseline,
      'font-size': f.size, 'font-weight': f.weight === '400' || f.weight === 'normal' ? null : f.weight, 'data-family': f.family,
    });
    e.textContent = String(text);
  }

  drawImage(img, x, y, w, h) {
    const src = img.toDataURL ? img : null;
    if (!src) return;
    this.el('image', { x: fmtN(x), y: fmtN(y), width: fmtN(w), height: fmtN(h), href: img.toDataURL('image/png'), preserveAspectRatio: 'none', style: 'image-rendering: pixelated' });
  }

  setLineDash() {}

  /** A <title> and <desc> saying what the drawing shows (text, as every text here). */
  describe(text) {
    for (const tag of ['desc', 'title']) {
      const el = document.createElementNS(NS, tag);
      el.textContent = text;
      this.root.prepend(el);
    }
  }

  toString() {
    // The most used font family goes on the root once; others stay on their elements.
    let main = '';
    let most = -1;
    for (const [fam, n] of this.families) if (n > most) [main, most] = [fam, n];
    if (main) this.root.setAttribute('font-family', main);
    this.root.setAttribute('style', 'white-space: pre');
    for (const t of this.root.querySelectorAll('text')) {
      const fam = t.getAttribute('data-family');
      t.removeAttribute('data-family');
      if (fam && fam !== main) t.setAttribute('font-family', fam);
    }
    // Forbidden characters can only stand in text and attribute values (names are ours), so
    // replacing them in the serialised document keeps it well-formed without touching markup.
    return `<?xml version="1.0" encoding="UTF-8"?>\n${xmlSafe(new XMLSerializer().serializeToString(this.root))}`;
  }
}
