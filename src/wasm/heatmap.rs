//! The heatmap view drawn with plotters on a `<canvas>`: queries as rows (top to bottom),
//! keys as columns, token labels on both axes and a colour bar. The canvas' pixel size is the
//! caller's choice (it scales for devicePixelRatio); `scale` scales fonts and margins to match.

use js_sys::Float32Array;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_canvas::CanvasBackend;
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use web_sys::HtmlCanvasElement;

#[derive(Deserialize, Default)]
#[serde(default)]
struct HeatmapOptions {
    title: String,
    dark: bool,
    /// Device pixels per CSS pixel.
    scale: f64,
    /// Top of the colour scale; 0 or absent means the data's maximum.
    max: f64,
}

/// Perceptual ramps (a few control points, linearly interpolated): light theme white → deep
/// blue, dark theme near-black → yellow, so weak weights recede into the background.
fn ramp(t: f64, dark: bool) -> RGBColor {
    const LIGHT: [(f64, [f64; 3]); 5] = [(0.0, [255., 255., 255.]), (0.25, [198., 219., 239.]), (0.5, [107., 174., 214.]), (0.75, [33., 113., 181.]), (1.0, [8., 48., 107.])];
    const DARK: [(f64, [f64; 3]); 5] = [(0.0, [20., 20., 28.]), (0.25, [59., 28., 140.]), (0.5, [33., 144., 141.]), (0.75, [94., 201., 98.]), (1.0, [253., 231., 37.])];
    let stops = if dark { &DARK } else { &LIGHT };
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let i = stops.iter().position(|s| s.0 >= t).unwrap_or(stops.len() - 1).max(1);
    let (a, b) = (stops[i - 1], stops[i]);
    let f = (t - a.0) / (b.0 - a.0);
    let c = |k: usize| (a.1[k] + (b.1[k] - a.1[k]) * f).round() as u8;
    RGBColor(c(0), c(1), c(2))
}

fn draw_error<E: std::fmt::Debug>(e: E) -> JsError {
    JsError::new(&format!("heatmap drawing failed: {e:?}"))
}

/// Shows every label when they fit, otherwise every n-th.
fn label_for(labels: &[String], v: &SegmentValue<usize>, every: usize) -> String {
    match v {
        SegmentValue::CenterOf(i) if i % every == 0 => labels.get(*i).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// `drawHeatmap(canvas, data, rows, cols, rowLabels, colLabels, { title, dark, scale, max })`
#[wasm_bindgen(js_name = drawHeatmap)]
pub fn draw_heatmap(
    canvas: HtmlCanvasElement,
    data: &Float32Array,
    rows: usize,
    cols: usize,
    row_labels: Vec<String>,
    col_labels: Vec<String>,
    options: JsValue,
) -> Result<(), JsError> {
    let values = data.to_vec();
    if rows == 0 || cols == 0 || values.len() != rows * cols {
        return Err(JsError::new(&format!("heatmap data has {} values, expected rows × cols = {rows} × {cols}", values.len())));
    }
    if row_labels.len() != rows || col_labels.len() != cols {
        return Err(JsError::new(&format!("heatmap needs {rows} row labels and {cols} column labels, got {} and {}", row_labels.len(), col_labels.len())));
    }
    let opts: HeatmapOptions = if options.is_undefined() || options.is_null() {
        HeatmapOptions::default()
    } else {
        serde_wasm_bindgen::from_value(options).map_err(|e| JsError::new(&format!("heatmap options: {e}")))?
    };
    let scale = if opts.scale > 0.0 { opts.scale } else { 1.0 };
    let px = |v: f64| (v * scale).round() as u32;
    let top = if opts.max > 0.0 { opts.max } else { values.iter().copied().fold(0.0f32, f32::max).max(1e-6) as f64 };
    let (bg, fg) = if opts.dark { (RGBColor(24, 24, 27), RGBColor(228, 228, 231)) } else { (WHITE, RGBColor(39, 39, 42)) };

    let backend = CanvasBackend::with_canvas_object(canvas).ok_or_else(|| JsError::new("heatmap: the canvas has no 2D context"))?;
    let root = backend.into_drawing_area();
    root.fill(&bg).map_err(draw_error)?;
    let (width, _) = root.dim_in_pixel();
    let bar_width = px(70.0).min(width / 3);
    let (main, bar) = root.split_horizontally(width - bar_width);

    let longest = |l: &[String]| l.iter().map(|s| s.chars().count()).max().unwrap_or(1).min(16) as f64;
    let font_px = (if rows.max(cols) > 48 { 9.0 } else { 12.0 }) * scale;
    let font = ("sans-serif", font_px).into_font().color(&fg);
    let every = |n: usize| n.div_ceil(64).max(1);
    let (every_row, every_col) = (every(rows), every(cols));

    let mut chart = ChartBuilder::on(&main)
        .caption(&opts.title, ("sans-serif", 14.0 * scale).into_font().color(&fg))
        .margin(px(8.0))
        .x_label_area_size(px(longest(&col_labels) * 7.0 + 12.0))
        .y_label_area_size(px(longest(&row_labels) * 7.0 + 12.0))
        .build_cartesian_2d((0..cols).into_segmented(), (0..rows).into_segmented())
        .map_err(draw_error)?;
    // Row 0 is drawn at the top: plotters' y grows upwards, so label row r at y = rows−1−r.
    let row_label = |v: &SegmentValue<usize>| match v {
        SegmentValue::CenterOf(y) if *y < rows => label_for(&row_labels, &SegmentValue::CenterOf(rows - 1 - y), every_row),
        _ => String::new(),
    };
    let col_label = |v: &SegmentValue<usize>| label_for(&col_labels, v, every_col);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(cols + 1)
        .y_labels(rows + 1)
        .x_label_formatter(&col_label)
        .y_label_formatter(&row_label)
        .x_label_style(font.clone().transform(FontTransform::Rotate90).pos(Pos::new(HPos::Left, VPos::Center)))
        .y_label_style(font.clone())
        .axis_style(fg)
        .x_desc("keys")
        .y_desc("queries")
        .axis_desc_style(font.clone())
        .draw()
        .map_err(draw_error)?;
    chart
        .draw_series((0..rows).flat_map(|r| {
            let values = &values;
            (0..cols).map(move |c| {
                let y = rows - 1 - r;
                let color = ramp(values[r * cols + c] as f64 / top, opts.dark);
                Rectangle::new([(SegmentValue::Exact(c), SegmentValue::Exact(y + 1)), (SegmentValue::Exact(c + 1), SegmentValue::Exact(y))], color.filled())
            })
        }))
        .map_err(draw_error)?;

    // Colour bar: 0 at the bottom, `top` at the top.
    let mut bar_chart = ChartBuilder::on(&bar)
        .margin_top(px(30.0))
        .margin_bottom(px(longest(&col_labels) * 7.0 + 20.0))
        .margin_right(px(8.0))
        .y_label_area_size(px(40.0))
        .build_cartesian_2d(0.0..1.0, 0.0..top)
        .map_err(draw_error)?;
    bar_chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(5)
        .y_label_formatter(&|v| format!("{v:.2}"))
        .y_label_style(font)
        .axis_style(fg)
        .draw()
        .map_err(draw_error)?;
    let steps = 64;
    bar_chart
        .draw_series((0..steps).map(|i| {
            let (a, b) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
            Rectangle::new([(0.0, a * top), (1.0, b * top)], ramp((a + b) / 2.0, opts.dark).filled())
        }))
        .map_err(draw_error)?;
    root.present().map_err(draw_error)?;
    Ok(())
}
