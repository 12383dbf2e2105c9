//! The heatmap view drawn with plotters on a `<canvas>`: queries as rows (top to bottom),
//! keys as columns, token labels on both axes and a colour bar. The canvas' pixel size is the
//! caller's choice (it scales for devicePixelRatio); `scale` scales fonts and margins to match.

use js_sys::Float32Array;
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
    let char_px = font_px * 0.62;
    let (x_area, y_area) = ((longest(&col_labels) * char_px + 10.0 * scale) as u32, (longest(&row_labels) * char_px + 10.0 * scale) as u32);

    // Cells are unit squares in f64 coordinates: x = key, y = rows − query (row 0 on top).
    let mut chart = ChartBuilder::on(&main)
        .caption(&opts.title, ("sans-serif", 14.0 * scale).into_font().color(&fg))
        .margin(px(8.0))
        .x_label_area_size(x_area)
        .y_label_area_size(y_area)
        .build_cartesian_2d(0.0..cols as f64, 0.0..rows as f64)
        .map_err(draw_error)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .axis_style(fg)
        .draw()
        .map_err(draw_error)?;
    chart
        .draw_series((0..rows).flat_map(|r| {
            let values = &values;
            (0..cols).map(move |c| {
                let (x, y) = (c as f64, (rows - r) as f64);
                Rectangle::new([(x, y), (x + 1.0, y - 1.0)], ramp(values[r * cols + c] as f64 / top, opts.dark).filled())
            })
        }))
        .map_err(draw_error)?;
    // Token labels in pixel space at the cell centres (every n-th when they would overlap):
    // queries right-aligned left of the plot, keys rotated to read downwards under it.
    let (every_row, every_col) = (every(rows), every(cols));
    let row_style = font.clone().pos(Pos::new(HPos::Right, VPos::Center));
    for r in (0..rows).step_by(every_row) {
        let (x, y) = chart.backend_coord(&(0.0, rows as f64 - r as f64 - 0.5));
        main.draw(&Text::new(row_labels[r].clone(), (x - px(4.0) as i32, y), row_style.clone())).map_err(draw_error)?;
    }
    let col_style = font.clone().transform(FontTransform::Rotate90).pos(Pos::new(HPos::Left, VPos::Center));
    for c in (0..cols).step_by(every_col) {
        let (x, y) = chart.backend_coord(&(c as f64 + 0.5, 0.0));
        main.draw(&Text::new(col_labels[c].clone(), (x, y + px(4.0) as i32), col_style.clone())).map_err(draw_error)?;
    }

    // Colour bar: 0 at the bottom, `top` at the top.
    let mut bar_chart = ChartBuilder::on(&bar)
        .margin_top(px(30.0))
        .margin_bottom(x_area + px(8.0))
        .margin_left(px(6.0))
        .margin_right(px(4.0))
        .y_label_area_size(px(44.0))
        .build_cartesian_2d(0.0..1.0, 0.0..top)
        .map_err(draw_error)?;
    bar_chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(5)
        .y_label_formatter(&|v| format!("{v:.2}"))
        .set_all_tick_mark_size(px(4.0))
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
