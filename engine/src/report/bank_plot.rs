//! `bank.png` / `bank.svg`: the total of all balances seen by every ok
//! read over time (Jepsen's bank plot), one series per node (process mod
//! node count), fault windows shaded. A correct bank is a flat line at the
//! bank's total; money created or destroyed shows as points off it.

use super::plots::{PLOT_SIZE, register_font, shade};
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
    root.fill(&WHITE).map_err(err)?;
    let t0 = extract.t_min_ns as f64 / 1e9;
    let x_max = totals.iter().map(|t| t.0 - t0).fold(1.0f64, f64::max);
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
    let mut chart = ChartBuilder::on(&root)
        .caption("Bank: total of all accounts per read", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max * 1.02, y0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("Time (s)")
        .y_desc("Total of all accounts")
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    let windows: Vec<_> = extract
        .windows
        .iter()
        .map(|w| w.seconds_after(t0))
        .collect();
    shade(&mut chart, &windows, y0, y1).map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, expected as f64), (x_max * 1.02, expected as f64)],
            BLACK.mix(0.5).stroke_width(1),
        ))
        .map_err(err)?
        .label(format!("expected {expected}"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.mix(0.5)));
    let nodes = nodes.max(1);
    for n in 0..nodes {
        let color = NODE_COLORS[n % NODE_COLORS.len()];
        chart
            .draw_series(
                totals
                    .iter()
                    .filter(|t| t.2 as usize % nodes == n)
                    .map(|t| Circle::new((t.0 - t0, t.1 as f64), 2, color.filled())),
            )
            .map_err(err)?
            .label(format!("node {n}"))
            .legend(move |(x, y)| Circle::new((x + 7, y), 3, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
