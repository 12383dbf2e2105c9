// The <attention-viz> widget's shadow-root style sheet (attention-viz.js puts it in each widget).

// The palette is theme.css's (the page's too), imported into the shadow root, where :host matches.
import { PREBUNDLED_FROM } from '../core/engine.js';

// (Pre-bundled by Vite's dev server: the package's own theme.css, wasm-build.js PREBUNDLED_FROM.)
const THEME_URL = (PREBUNDLED_FROM ? new URL('theme.css', PREBUNDLED_FROM) : new URL('../theme.css', import.meta.url)).href;
export const STYLE = `
@import url("${THEME_URL}");
:host {
  display: block;
  /* Light or dark as the page around the widget is: theme.css's light-dark() follows the host's
     color-scheme (and, where the host allows both, the reader's preference). A page that
     declares no dark scheme gets a light widget even for a reader who prefers dark: its own text
     and form fields are light there. --av-dark is not inherited from the page: readTheme() asks
     the scheme. */
  --av-dark: initial;
  color: var(--av-fg);
  font: 14px/1.4 system-ui, -apple-system, "Segoe UI", "Noto Sans", "Noto Sans CJK SC", "Apple Color Emoji", "Noto Color Emoji", "DejaVu Sans", sans-serif;
  border: 1px solid var(--av-border);
  border-radius: 8px;
  background: var(--av-bg);
  overflow: hidden;
  contain: content;
}
[hidden] { display: none !important; }
.bar { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: center; padding: 6px 8px; background: var(--av-panel); border-bottom: 1px solid var(--av-border); font-size: 13px; }
.bar label { display: inline-flex; gap: 4px; align-items: center; }
select, input, textarea, button { font: inherit; color: inherit; }
select, button { background: var(--av-bg); border: 1px solid var(--av-border); border-radius: 5px; padding: 2px 6px; min-height: 28px; }
textarea { display: block; width: 100%; box-sizing: border-box; border: 0; border-bottom: 1px solid var(--av-border); padding: 6px 8px; font-size: 15px; background: var(--av-bg); resize: vertical; min-height: 2.6em; }
.out { padding: 4px 8px; font-size: 14px; border-bottom: 1px solid var(--av-border); }
.out b { font-weight: 600; color: var(--av-muted); margin-right: 6px; }
.out .coverage, .coverage { display: block; font-size: 12px; color: var(--av-muted); }
.wrap { overflow: auto; position: relative; max-height: 78vh; } /* the box views fit (zoom "fit"); the height attribute sets another */
canvas { display: block; margin-inline: auto; }
:focus-visible { outline: 3px solid var(--av-accent); outline-offset: -3px; }
/* The map's ring goes on its scrolling box: on a canvas wider than the box it would be cut off. */
.wrap:has(canvas:focus-visible) { outline: 3px solid var(--av-accent); outline-offset: -3px; }
canvas:focus-visible { outline: none; }
.foot { display: flex; flex-wrap: wrap; justify-content: space-between; gap: 0 8px; padding: 3px 8px; font-size: 11px; color: var(--av-muted); border-top: 1px solid var(--av-border); }
.foot .save button { font-size: 11px; padding: 0 6px; margin-right: 4px; }
.foot .stop-exact { font-size: 11px; padding: 0 6px; margin-left: 6px; }
.msg { padding: 16px 8px; color: var(--av-muted); }
/* Until the first map, the message holds the map box's height, so a page's layout does not move
   when it comes, and a loading="lazy" widget below stays below (not pulled near the screen). */
:host([data-state="waiting"]) .msg, :host([data-state="loading"]) .msg { box-sizing: border-box; min-height: var(--av-box-h, 78vh); }
.msg.err { color: var(--av-error); }
.warn { padding: 6px 8px; border-bottom: 2px solid var(--av-warn-border); background: var(--av-warn-bg); color: var(--av-warn-fg); font-weight: 600; font-size: 13px; }
.gen { margin: 6px 8px; }
.gqa { font-size: 12px; color: var(--av-muted); }
.readout { padding: 3px 8px; font-size: 12px; color: var(--av-muted); border-top: 1px solid var(--av-border); min-height: 1.4em; }
progress { width: 160px; }
.heads-rank { border-top: 1px solid var(--av-border); font-size: 12px; }
.heads-caption { margin: 0; padding: 4px 8px; color: var(--av-muted); }
.heads-scroll { max-height: 22em; overflow: auto; }
.heads-table { border-collapse: collapse; table-layout: fixed; width: 58em; font-variant-numeric: tabular-nums; }
.heads-table th:first-child, .heads-table td:first-child { position: sticky; left: 0; z-index: 1; background: var(--av-bg); }
.heads-table th, .heads-table td { padding: 1px 4px; text-align: right; white-space: nowrap; }
.heads-table th:nth-child(-n+2), .heads-table td:nth-child(-n+2) { text-align: left; }
.heads-table th button, .heads-table td button { min-height: 22px; padding: 0 4px; font-size: 12px; }
.heads-table tr.current, .heads-table tr.current td:first-child { background: var(--av-hover); }
`;
