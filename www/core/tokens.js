// Token labels: how the views, lists and read-outs show a tokenizer's token strings.
//
// Byte-level BPE (GPT-2, SmolLM2) spells every byte as one character: the printable ones as
// themselves, the others (space, newline, control bytes, …) as U+0100 + n, so a token reads
// "Ġcapital" for " capital" and "Ã©" for "é". Shown readably: the bytes decoded as UTF-8, spaces
// as ␣, newlines as ↵, tabs as ⇥, other control bytes as their Control Pictures, and bytes of a
// character split between tokens as ‹hex›. Tokens of other tokenizers ([CLS], ##ing, ▁The) are
// shown as they are.

/** Character code → byte of GPT-2's byte-to-unicode table (a constant). */
const BYTE_OF = (() => {
  const m = new Map();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    m.set(printable ? b : 256 + n++, b);
  }
  return m;
})();

const CONTROL_SHOWN = { 0x20: '␣', 0x0a: '↵', 0x09: '⇥', 0x7f: '␡' };

/** Spaces, newlines, tabs and other control characters as visible marks. */
function visibleControls(s) {
  let out = '';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    out += c <= 0x20 || c === 0x7f ? CONTROL_SHOWN[c] || String.fromCharCode(0x2400 + c) : ch;
  }
  return out;
}

/** UTF-8 bytes → visible text; a byte that starts no complete character is written ‹XX›. */
function decodeBytes(bytes) {
  let out = '';
  let bad = [];
  const flush = () => {
    if (bad.length) out += `‹${bad.map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join(' ')}›`;
    bad = [];
  };
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const len = b < 0x80 ? 1 : b >= 0xc2 && b < 0xe0 ? 2 : b >= 0xe0 && b < 0xf0 ? 3 : b >= 0xf0 && b < 0xf5 ? 4 : 0;
    let cp = len === 1 ? b : len ? b & (0xff >> (len + 1)) : -1;
    for (let k = 1; k < len && cp >= 0; k++) {
      const c = bytes[i + k];
      cp = c !== undefined && (c & 0xc0) === 0x80 ? (cp << 6) | (c & 0x3f) : -1;
    }
    const minimal = len === 1 || cp >= [0, 0, 0x80, 0x800, 0x10000][len];
    if (cp < 0 || !minimal || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) {
      bad.push(b);
      i += 1;
      continue;
    }
    flush();
    out += visibleControls(String.fromCodePoint(cp));
    i += len;
  }
  flush();
  return out;
}

/** A token string as the views, lists and read-outs show it (text, never markup). */
export function tokenLabel(token) {
  const t = String(token ?? '');
  const bytes = new Uint8Array(t.length);
  let remapped = false;
  let high = false;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    const b = BYTE_OF.get(c);
    if (b === undefined) return visibleControls(t); // not byte-level BPE
    if (c >= 0x100) remapped = true;
    else if (c >= 0x80) high = true;
    bytes[i] = b;
  }
  if (!remapped && !high) return t; // printable ASCII reads as itself
  const text = decodeBytes(bytes);
  // Latin-1 letters of other tokenizers ("é" of a BERT vocabulary) are no UTF-8 of their own.
  if (!remapped && text.includes('‹')) return t;
  return text;
}
