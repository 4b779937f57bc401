//! `bank.png` / `bank.svg`: the total of all balances seen by every ok
//! read over time (Jepsen's bank plot), one series per node (process mod
//! node count), in the frame of `plot_frame` (fault lanes above the data). A correct bank is a flat line at the
//! bank's total; money created or destroyed shows as points off it.

use super::plot_frame::{
    DESC_SIZE, Key, MARGIN, Mark, TICK_SIZE, X_LABEL_AREA, Y_LABEL_AREA, draw_lanes, frame, lanes,
    shade, tick,
};
use super::plots::{PLOT_SIZE, mesh, register_font};
use super::spans::Extract;
use anyhow::{Context, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// Colours of the node series.
const NODE_COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// Writes `bank.png` and `bank.svg` into `dir` from the read totals
/// `(seconds, total, process)` ([`checker::workloads::bank::totals`]).
///
/// # Errors
/// When the font cannot be loaded or a file cannot be written.
pub fn write(
    dir: &Path,
    totals: &[(f64, i64, u64)],
    expected: i64,
    nodes: usize,
    extract: &Extract,
) -> anyhow::Result<()> {
    register_font()?;
    let png = dir.join("bank.png");
    draw(
        BitMapBackend::new(&png, PLOT_SIZE).into_drawing_area(),
        totals,
        expected,
        nodes,
        extract,
    )
    .with_context(|| format!("drawing {}", png.display()))?;
    let svg = dir.join("bank.svg");
    draw(
        SVGBackend::new(&svg, PLOT_SIZE).into_drawing_area(),
        totals,
        expected,
        nodes,
        extract,
    )
    .with_context(|| format!("drawing {}", svg.display()))?;
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    totals: &[(f64, i64, u64)],
    expected: i64,
    nodes: usize,
    extract: &Extract,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    draw_in(&root, totals, expected, nodes, extract).map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn draw_in<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    totals: &[(f64, i64, u64)],
    expected: i64,
    nodes: usize,
    extract: &Extract,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let t0 = extract.t_min_ns as f64 / 1e9;
    let x_max = totals.iter().map(|t| t.0 - t0).fold(1.0f64, f64::max) * 1.02;
    let lo = totals
        .iter()
        .map(|t| t.1)
        .min()
        .unwrap_or(expected)
        .min(expected);
    let hi = totals
        .iter()
        .map(|t| t.1)
        .max()
        .unwrap_or(expected)
        .max(expected);
    let pad = ((hi - lo) as f64 * 0.1).max(1.0);
    let (y0, y1) = (lo as f64 - pad, hi as f64 + pad);
    let nodes = nodes.max(1);
    let mut keys = vec![Key::new(
        format!("expected {expected}"),
        RGBColor(128, 128, 128),
        Mark::Line,
    )];
    for n in 0..nodes {
        keys.push(Key::new(
            format!("node {n}"),
            NODE_COLORS[n % NODE_COLORS.len()],
            Mark::Dot,
        ));
    }
    let lanes = lanes(&extract.windows, extract.t_min_ns, 1e9);
    let area = frame(root, "bank: total of all accounts per read", &keys, &lanes)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0.0..x_max, y0..y1)?;
    mesh!(chart, "time (s)", "total of all accounts");
    shade(&mut chart, &lanes, y0, y1)?;
    chart.draw_series(LineSeries::new(
        [(0.0, expected as f64), (x_max, expected as f64)],
        RGBColor(128, 128, 128).stroke_width(1),
    ))?;
    for n in 0..nodes {
        let color = NODE_COLORS[n % NODE_COLORS.len()];
        chart.draw_series(
            totals
                .iter()
                .filter(|t| t.2 as usize % nodes == n)
                .map(|t| Circle::new((t.0 - t0, t.1 as f64), 2, color.filled())),
        )?;
    }
    let px = chart.plotting_area().get_pixel_range().0;
    draw_lanes(root, &lanes, px, (0.0, x_max))
}
