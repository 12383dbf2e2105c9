//! Small charts drawn with plotters on a `<canvas>` on the page's main thread (the attention
//! maps themselves are drawn by the JS views). Each function returns the geometry of what it
//! drew, in CSS pixels, so that the page can hit-test a hover or a click.
//!
//! The canvas' pixel size is the caller's choice (it scales for devicePixelRatio); `scale`
//! (device pixels per CSS pixel) scales fonts, margins and line widths to match.
//!
//! Every chart draws with the views' palette: its options' `theme` is what views/common.js
//! `chartTheme(theme)` makes of the theme the views draw with, read here once into a
//! `ChartTheme`, whose fallbacks (`LIGHT`, `DARK`, `SERIES`) are that same palette.

use js_sys::Float32Array;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

const FONT: &str = "system-ui, sans-serif";

#[derive(Deserialize, Default)]
#[serde(default)]
struct BarOptions {
    title: String,
    /// Device pixels per CSS pixel.
    scale: f64,
    /// Top of the value axis; 0 or absent: 1.1 × the largest value (or `reference`).
    max: f64,
    /// A dashed line across the chart at this value (e.g. the entropy of a uniform row); none if 0.
    reference: f64,
    reference_label: String,
    /// Name of the value axis, written vertically beside it.
    y_label: String,
    /// Name of the category axis, written under the bar labels' left end.
    x_label: String,
    /// Bars outlined as selected.
    selected: Vec<usize>,
    /// The bar under the pointer (outlined more lightly); none when absent.
    hovered: Option<usize>,
    /// Colours: bar i is drawn in the theme's series colour i.
    theme: ChartTheme,
}

#[derive(Serialize)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

#[derive(Serialize)]
struct Bar {
    index: usize,
    value: f32,
    /// The drawn bar.
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    /// The bar's whole column (its share of the x axis), for hit-testing short bars.
    slot_x: f64,
    slot_w: f64,
}

#[derive(Serialize)]
struct BarGeometry {
    width: f64,
    height: f64,
    /// The plotting area (inside the axes).
    plot: Rect,
    bars: Vec<Bar>,
}

/// `#rgb`, `#rrggbb` or `rgb(r, g, b)` → a colour; None for anything else.
fn parse_color(s: &str) -> Option<RGBColor> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix('#') {
        let digit = |i: usize, n: usize| u8::from_str_radix(hex.get(i..i + n)?, 16).ok();
        return match hex.len() {
            3 => Some(RGBColor(digit(0, 1)? * 17, digit(1, 1)? * 17, digit(2, 1)? * 17)),
            6 => Some(RGBColor(digit(0, 2)?, digit(2, 2)?, digit(4, 2)?)),
            _ => None,
        };
    }
    let inner = s.strip_prefix("rgb(").or_else(|| s.strip_prefix("rgba("))?.strip_suffix(')')?;
    let mut parts = inner
        .split(',')
        .map(|p| p.trim().parse::<f64>().ok().map(|v| v.clamp(0.0, 255.0).round() as u8));
    Some(RGBColor(parts.next()??, parts.next()??, parts.next()??))
}

/// The views' palette for one colour scheme (www/theme.css's --av-* pairs, views/common.js
/// LIGHT or DARK, and its DIVERGING stops): what a chart draws with where its theme leaves a
/// colour out. tests/e2e/core-session.test.mjs checks these against theme.css and common.js.
struct Palette {
    bg: &'static str,
    fg: &'static str,
    muted: &'static str,
    faint: &'static str,
    negative: &'static str,
    zero: &'static str,
    positive: &'static str,
}

const LIGHT: Palette = Palette {
    bg: "#ffffff",
    fg: "#1d2330",
    muted: "#5f6b7a",
    faint: "#d8dde4",
    negative: "#2166ac",
    zero: "#f7f7f7",
    positive: "#b2182b",
};

const DARK: Palette = Palette {
    bg: "#14171c",
    fg: "#e6e9ee",
    muted: "#9aa5b4",
    faint: "#2f3540",
    negative: "#2166ac",
    zero: "#282c34",
    positive: "#b2182b",
};

/// The head colours (views/common.js HEAD_COLORS) that series cycle through.
const SERIES: [&str; 16] = [
    "#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
    "#9c755f", "#7f7fff", "#2ca58d", "#d4a017", "#8c564b", "#17becf", "#bcbd22", "#e377c2",
];

/// A chart's `theme` option as views/common.js chartTheme writes it: CSS colours (`#rgb`,
/// `#rrggbb` or `rgb(r, g, b)`), each may be absent.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ThemeOptions {
    /// Which half of the palette stands in for a colour left out.
    dark: bool,
    /// Background, text, secondary text (axes, labels), grid lines.
    bg: String,
    fg: String,
    muted: String,
    faint: String,
    /// The diverging scale: its colour at −1, 0 and +1.
    negative: String,
    zero: String,
    positive: String,
    /// Series colours (bars, lines), cycled through.
    series: Vec<String>,
}

/// The colours every chart draws with, read once from its options' `theme`.
#[derive(Deserialize)]
#[serde(from = "ThemeOptions")]
struct ChartTheme {
    bg: RGBColor,
    fg: RGBColor,
    muted: RGBColor,
    faint: RGBColor,
    negative: RGBColor,
    zero: RGBColor,
    positive: RGBColor,
    /// Never empty.
    series: Vec<RGBColor>,
}

impl From<ThemeOptions> for ChartTheme {
    fn from(o: ThemeOptions) -> Self {
        let p = if o.dark { &DARK } else { &LIGHT };
        let pick = |given: &str, fallback: &str| {
            parse_color(given).or_else(|| parse_color(fallback)).unwrap_or(BLACK)
        };
        let series = if o.series.is_empty() {
            SERIES.iter().map(|c| pick("", c)).collect()
        } else {
            o.series.iter().enumerate().map(|(i, c)| pick(c, SERIES[i % SERIES.len()])).collect()
        };
        ChartTheme {
            bg: pick(&o.bg, p.bg),
            fg: pick(&o.fg, p.fg),
            muted: pick(&o.muted, p.muted),
            faint: pick(&o.faint, p.faint),
            negative: pick(&o.negative, p.negative),
            zero: pick(&o.zero, p.zero),
            positive: pick(&o.positive, p.positive),
            series,
        }
    }
}

impl Default for ChartTheme {
    fn default() -> Self {
        ThemeOptions::default().into()
    }
}

impl ChartTheme {
    /// Series colour i (cycling).
    fn series(&self, i: usize) -> RGBColor {
        self.series[i % self.series.len()]
    }

    /// The diverging scale at t in [−1, 1]: `negative` … `zero` … `positive` (the views'
    /// views/common.js diverging).
    fn diverging(&self, t: f32) -> RGBColor {
        let t = if t.is_finite() { t.clamp(-1.0, 1.0) } else { 0.0 };
        let (end, a) = if t < 0.0 { (self.negative, -t) } else { (self.positive, t) };
        let mix = |m: u8, e: u8| (m as f32 + (e as f32 - m as f32) * a).round() as u8;
        let mid = self.zero;
        RGBColor(mix(mid.0, end.0), mix(mid.1, end.1), mix(mid.2, end.2))
    }
}

/// A chart's options (absent or null: every default), read once.
fn read_options<T: DeserializeOwned + Default>(
    options: JsValue,
    chart: &str,
) -> Result<T, JsError> {
    if options.is_undefined() || options.is_null() {
        return Ok(T::default());
    }
    serde_wasm_bindgen::from_value(options)
        .map_err(|e| JsError::new(&format!("{chart} options: {e}")))
}

/// Device pixels per CSS pixel: `scale`, or 1 when it is not positive.
fn device_scale(scale: f64) -> f64 {
    if scale > 0.0 {
        scale
    } else {
        1.0
    }
}

fn draw_error<E: std::fmt::Debug>(e: E) -> JsError {
    JsError::new(&format!("chart drawing failed: {e:?}"))
}

/// `drawBarChart(canvas, values, labels, options) → { width, height, plot, bars: [{ index,
/// value, x, y, w, h, slot_x, slot_w }] }` (CSS px). One bar per value, labelled below with
/// `labels[i]`, bar i in the theme's series colour i. Options: `{ title, scale, max, reference,
/// reference_label, y_label, x_label, selected: [i], hovered: i, theme }`.
#[wasm_bindgen(js_name = drawBarChart)]
pub fn draw_bar_chart(
    canvas: HtmlCanvasElement,
    values: &Float32Array,
    labels: Vec<String>,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let values = values.to_vec();
    let n = values.len();
    if n == 0 {
        return Err(JsError::new("bar chart: no values"));
    }
    if labels.len() != n {
        return Err(JsError::new(&format!("bar chart: {n} values but {} labels", labels.len())));
    }
    let opts: BarOptions = read_options(options, "bar chart")?;
    let scale = device_scale(opts.scale);
    let px = |v: f64| (v * scale).round() as u32;
    let theme = &opts.theme;
    let (bg, fg, muted, faint) = (theme.bg, theme.fg, theme.muted, theme.faint);
    let largest = values.iter().copied().filter(|v| v.is_finite()).fold(0.0f32, f32::max) as f64;
    let top = if opts.max > 0.0 { opts.max } else { (largest.max(opts.reference) * 1.1).max(1e-6) };

    let backend = CanvasBackend::with_canvas_object(canvas)
        .ok_or_else(|| JsError::new("bar chart: the canvas has no 2D context"))?;
    let root: DrawingArea<CanvasBackend, Shift> = backend.into_drawing_area();
    root.fill(&bg).map_err(draw_error)?;
    let (width_px, height_px) = root.dim_in_pixel();

    let font_px = 11.0 * scale;
    let text = (FONT, font_px).into_font().color(&muted);
    let mut builder = ChartBuilder::on(&root);
    builder
        .margin(px(6.0))
        .margin_right(px(10.0))
        .x_label_area_size(px(if opts.x_label.is_empty() { 18.0 } else { 30.0 }))
        .y_label_area_size(px(38.0));
    if !opts.title.is_empty() {
        builder.caption(&opts.title, (FONT, 12.0 * scale).into_font().color(&fg));
    }
    let mut chart =
        builder.build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top).map_err(draw_error)?;
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(0)
        .y_labels(5)
        .y_label_formatter(&|v| format!("{v:.1}"))
        .y_label_style(text.clone())
        .axis_style(muted)
        .bold_line_style(faint)
        .light_line_style(TRANSPARENT)
        .set_all_tick_mark_size(px(3.0));
    if !opts.y_label.is_empty() {
        mesh.y_desc(opts.y_label.as_str()).axis_desc_style(text.clone());
    }
    mesh.draw().map_err(draw_error)?;

    let half = 0.36;
    let stroke = |c: RGBColor, w: f64| ShapeStyle {
        color: c.to_rgba(),
        filled: false,
        stroke_width: px(w).max(1),
    };
    let mut bars = Vec::with_capacity(n);
    for (i, &v) in values.iter().enumerate() {
        let x = i as f64;
        let v64 = if v.is_finite() { (v as f64).clamp(0.0, top) } else { 0.0 };
        let color = theme.series(i);
        let (a, b) = ((x - half, v64), (x + half, 0.0));
        chart
            .draw_series(std::iter::once(Rectangle::new([a, b], color.filled())))
            .map_err(draw_error)?;
        if opts.selected.contains(&i) {
            chart
                .draw_series(std::iter::once(Rectangle::new([a, b], stroke(fg, 2.0))))
                .map_err(draw_error)?;
        } else if opts.hovered == Some(i) {
            chart
                .draw_series(std::iter::once(Rectangle::new([a, b], stroke(muted, 1.5))))
                .map_err(draw_error)?;
        }
        let (x0, y0) = chart.backend_coord(&a);
        let (x1, y1) = chart.backend_coord(&b);
        let (s0, _) = chart.backend_coord(&(x - 0.5, 0.0));
        let (s1, _) = chart.backend_coord(&(x + 0.5, 0.0));
        bars.push(Bar {
            index: i,
            value: v,
            x: x0 as f64 / scale,
            y: y0 as f64 / scale,
            w: (x1 - x0) as f64 / scale,
            h: (y1 - y0) as f64 / scale,
            slot_x: s0 as f64 / scale,
            slot_w: (s1 - s0) as f64 / scale,
        });
    }

    // Bar labels under the axis (bold for selected bars); the axis name at the left.
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64, 0.0));
        let style = if opts.selected.contains(&i) {
            (FONT, font_px, FontStyle::Bold).into_font().color(&fg)
        } else {
            (FONT, font_px).into_font().color(&muted)
        };
        root.draw(&Text::new(
            label.clone(),
            (x, y + px(4.0) as i32),
            style.pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(draw_error)?;
    }
    let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
    if !opts.x_label.is_empty() {
        let pos = Pos::new(HPos::Right, VPos::Top);
        root.draw(&Text::new(
            opts.x_label.clone(),
            (plot_x.start - px(4.0) as i32, plot_y.end + px(4.0) as i32),
            text.clone().pos(pos),
        ))
        .map_err(draw_error)?;
    }

    // Reference line, dashed, labelled at its right end.
    if opts.reference > 0.0 && opts.reference <= top {
        let (_, y) = chart.backend_coord(&(0.0, opts.reference));
        let (dash, gap) = (px(5.0) as i32, px(3.0) as i32);
        let mut x = plot_x.start;
        while x < plot_x.end {
            let x2 = (x + dash).min(plot_x.end);
            root.draw(&PathElement::new(vec![(x, y), (x2, y)], stroke(fg, 1.0)))
                .map_err(draw_error)?;
            x = x2 + gap;
        }
        if !opts.reference_label.is_empty() {
            let pos = Pos::new(HPos::Right, VPos::Bottom);
            root.draw(&Text::new(
                opts.reference_label.clone(),
                (plot_x.end, y - px(2.0) as i32),
                (FONT, font_px).into_font().color(&fg).pos(pos),
            ))
            .map_err(draw_error)?;
        }
    }
    root.present().map_err(draw_error)?;

    let geom = BarGeometry {
        width: width_px as f64 / scale,
        height: height_px as f64 / scale,
        plot: Rect {
            x: plot_x.start as f64 / scale,
            y: plot_y.start as f64 / scale,
            w: (plot_x.end - plot_x.start) as f64 / scale,
            h: (plot_y.end - plot_y.start) as f64 / scale,
        },
        bars,
    };
    geom.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("internal: cannot convert the chart geometry ({e})")))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PositionsOptions {
    /// Device pixels per CSS pixel.
    scale: f64,
    /// Dimensions drawn as lines over position in the lower chart, line i in the theme's series
    /// colour i.
    line_dims: Vec<usize>,
    /// Height of the heatmap's part of the canvas, in CSS px (the lines get the rest).
    heat_height: f64,
    /// The colour scale's end (values beyond it are drawn at full colour); 0 or absent: the
    /// largest magnitude. A learned table has a few outliers that would wash the rest out.
    color_max: f32,
    /// The position under the pointer (a vertical rule in both charts); none when absent.
    hovered: Option<usize>,
    /// Draw everything but the heatmap's cells (they are then drawn in bands, `heat_dims`).
    no_heat: bool,
    /// Draw only the heatmap's cells of dims `[start, end)`, onto a chart drawn before with the
    /// same canvas, table and options: a 128 × 384 table is ~150 ms of canvas calls, so the page
    /// draws it in bands, each in a task of its own.
    heat_dims: Option<[usize; 2]>,
    /// Colours: the heatmap in the theme's diverging scale, the lines in its series colours.
    theme: ChartTheme,
}

#[derive(Serialize)]
struct PositionsGeometry {
    width: f64,
    height: f64,
    /// The heatmap's plotting area: position along x, dimension along y (dim 0 at the bottom).
    heat: Rect,
    /// The line chart's plotting area: position along x, value along y from `hi` (top) to `lo`.
    lines: Rect,
    lo: f64,
    hi: f64,
    /// The colour scale's end: values are drawn from −max_abs (the theme's `negative`) to
    /// +max_abs (its `positive`), beyond it at full colour.
    max_abs: f32,
}

/// `drawPositionsChart(canvas, data, positions, dims, options) → { width, height, heat, lines,
/// lo, hi, max_abs }` (CSS px): the position table `data` `[positions, dims]` as a heatmap
/// (position × dimension, at most one cell per device pixel: larger tables keep each pixel's
/// value of largest magnitude) above a line chart of `options.line_dims` over position.
/// Options: `{ scale, line_dims, heat_height, color_max, hovered, no_heat, heat_dims, theme }`.
#[wasm_bindgen(js_name = drawPositionsChart)]
pub fn draw_positions_chart(
    canvas: HtmlCanvasElement,
    data: &Float32Array,
    positions: usize,
    dims: usize,
    options: JsValue,
) -> Result<JsValue, JsError> {
    let data = data.to_vec();
    if positions == 0 || dims == 0 || data.len() != positions * dims {
        return Err(JsError::new(&format!(
            "positions chart: {} values are not {positions} positions × {dims} dims",
            data.len()
        )));
    }
    let opts: PositionsOptions = read_options(options, "positions chart")?;
    let scale = device_scale(opts.scale);
    let px = |v: f64| (v * scale).round() as u32;
    let theme = &opts.theme;
    let (bg, fg, muted, faint) = (theme.bg, theme.fg, theme.muted, theme.faint);
    let largest =
        data.iter().copied().filter(|v| v.is_finite()).fold(0.0f32, |m, v| m.max(v.abs()));
    let max_abs =
        if opts.color_max > 0.0 && opts.color_max.is_finite() { opts.color_max } else { largest }
            .max(1e-12);

    let backend = CanvasBackend::with_canvas_object(canvas)
        .ok_or_else(|| JsError::new("positions chart: the canvas has no 2D context"))?;
    let root: DrawingArea<CanvasBackend, Shift> = backend.into_drawing_area();
    let band = opts.heat_dims;
    let frame = band.is_none();
    if frame {
        root.fill(&bg).map_err(draw_error)?;
    }
    let (width_px, height_px) = root.dim_in_pixel();
    let heat_px = if opts.heat_height > 0.0 {
        px(opts.heat_height).min(height_px)
    } else {
        height_px * 3 / 5
    };
    let (top, bottom) = root.split_vertically(heat_px);
    let font_px = 11.0 * scale;
    let text = (FONT, font_px).into_font().color(&muted);
    let last = (positions - 1) as f64;
    let x_range = -0.5..(last + 0.5);

    // Heatmap: x = position, y = dimension (0 at the bottom).
    let mut heat = ChartBuilder::on(&top)
        .margin(px(6.0))
        .margin_right(px(12.0))
        .x_label_area_size(px(30.0))
        .y_label_area_size(px(44.0))
        .build_cartesian_2d(x_range.clone(), -0.5..(dims as f64 - 0.5))
        .map_err(draw_error)?;
    if frame {
        heat.configure_mesh()
            .disable_mesh()
            .x_labels(9)
            .y_labels(6)
            .x_label_formatter(&|v| format!("{}", v.round() as i64))
            .y_label_formatter(&|v| format!("{}", v.round() as i64))
            .x_label_style(text.clone())
            .y_label_style(text.clone())
            .x_desc("position")
            .y_desc("dimension")
            .axis_desc_style(text.clone())
            .axis_style(muted)
            .set_all_tick_mark_size(px(3.0))
            .draw()
            .map_err(draw_error)?;
    }
    let (hx, hy) = heat.plotting_area().get_pixel_range();
    // At most one cell per device pixel: pool positions and dims, keeping the largest magnitude.
    let cols = positions.min(((hx.end - hx.start).max(1)) as usize);
    let rows = dims.min(((hy.end - hy.start).max(1)) as usize);
    let (first, end) = match band {
        Some([a, b]) => (a, b.min(dims)),
        None if opts.no_heat => (0, 0),
        None => (0, dims),
    };
    let mut cells = Vec::new();
    for r in 0..rows {
        let (d0, d1) = (r * dims / rows, ((r + 1) * dims / rows).max(r * dims / rows + 1));
        if d0 < first || d0 >= end {
            continue;
        }
        // One rectangle per run of cells of the same colour along the row.
        let mut run: Option<(f64, f64, RGBColor)> = None;
        let (y0, y1) = (d0 as f64 - 0.5, d1 as f64 - 0.5);
        for c in 0..cols {
            let (p0, p1) =
                (c * positions / cols, ((c + 1) * positions / cols).max(c * positions / cols + 1));
            let mut v = 0.0f32;
            for p in p0..p1 {
                for d in d0..d1 {
                    let x = data[p * dims + d];
                    if x.abs() > v.abs() {
                        v = x;
                    }
                }
            }
            let (x0, x1, color) = (p0 as f64 - 0.5, p1 as f64 - 0.5, theme.diverging(v / max_abs));
            run = match run {
                Some((start, _, c)) if c == color => Some((start, x1, c)),
                Some((start, stop, c)) => {
                    cells.push(Rectangle::new([(start, y0), (stop, y1)], c.filled()));
                    Some((x0, x1, color))
                }
                None => Some((x0, x1, color)),
            };
        }
        if let Some((start, stop, c)) = run {
            cells.push(Rectangle::new([(start, y0), (stop, y1)], c.filled()));
        }
    }
    heat.draw_series(cells).map_err(draw_error)?;

    // Lines: the chosen dimensions over position.
    let chosen: Vec<usize> = opts.line_dims.iter().copied().filter(|&d| d < dims).collect();
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for &d in &chosen {
        for p in 0..positions {
            let v = data[p * dims + d] as f64;
            if v.is_finite() {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
    }
    // No line, or flat lines: a unit range around their value.
    if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
        let c = if lo.is_finite() { lo } else { 0.0 };
        (lo, hi) = (c - 1.0, c + 1.0);
    }
    let pad = (hi - lo) * 0.06;
    let (lo, hi) = (lo - pad, hi + pad);
    let mut lines = ChartBuilder::on(&bottom)
        .margin(px(6.0))
        .margin_right(px(12.0))
        .x_label_area_size(px(30.0))
        .y_label_area_size(px(44.0))
        .build_cartesian_2d(x_range, lo..hi)
        .map_err(draw_error)?;
    if frame {
        lines
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(9)
            .y_labels(5)
            .x_label_formatter(&|v| format!("{}", v.round() as i64))
            .y_label_formatter(&|v| format!("{v:.2}"))
            .x_label_style(text.clone())
            .y_label_style(text.clone())
            .x_desc("position")
            .y_desc("value added")
            .axis_desc_style(text.clone())
            .axis_style(muted)
            .bold_line_style(faint)
            .light_line_style(TRANSPARENT)
            .set_all_tick_mark_size(px(3.0))
            .draw()
            .map_err(draw_error)?;
        for (i, &d) in chosen.iter().enumerate() {
            let color = theme.series(i);
            let style =
                ShapeStyle { color: color.to_rgba(), filled: false, stroke_width: px(1.5).max(1) };
            lines
                .draw_series(std::iter::once(PathElement::new(
                    (0..positions)
                        .map(|p| (p as f64, data[p * dims + d] as f64))
                        .collect::<Vec<_>>(),
                    style,
                )))
                .map_err(draw_error)?;
        }
    }
    let (lx, ly) = lines.plotting_area().get_pixel_range();
    if let Some(p) = opts.hovered.filter(|&p| frame && p < positions) {
        let rule = ShapeStyle { color: fg.to_rgba(), filled: false, stroke_width: px(1.0).max(1) };
        heat.draw_series(std::iter::once(PathElement::new(
            vec![(p as f64, -0.5), (p as f64, dims as f64 - 0.5)],
            rule,
        )))
        .map_err(draw_error)?;
        lines
            .draw_series(std::iter::once(PathElement::new(
                vec![(p as f64, lo), (p as f64, hi)],
                rule,
            )))
            .map_err(draw_error)?;
    }
    root.present().map_err(draw_error)?;

    let rect = |x: &std::ops::Range<i32>, y: &std::ops::Range<i32>| Rect {
        x: x.start as f64 / scale,
        y: y.start as f64 / scale,
        w: (x.end - x.start) as f64 / scale,
        h: (y.end - y.start) as f64 / scale,
    };
    let geom = PositionsGeometry {
        width: width_px as f64 / scale,
        height: height_px as f64 / scale,
        heat: rect(&hx, &hy),
        lines: rect(&lx, &ly),
        lo,
        hi,
        max_abs,
    };
    geom.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| JsError::new(&format!("internal: cannot convert the chart geometry ({e})")))
}
