//! Performance plots, each as PNG and SVG: `latency-raw` (latency of every
//! op over time, by outcome), `latency-quantiles` (ok latency quantiles per
//! time bucket) and `rate` (throughput per time bucket, by outcome). Fault
//! windows are shaded in all of them.
//!
//! Key decision: plotters without its system font stack (no fontconfig or
//! freetype): text is drawn with ab_glyph from DejaVu Sans bundled in
//! `assets/fonts/` and registered once as "sans-serif". SVGs cap the number
//! of scatter points (evenly sampled) so they stay small at 100k ops.

use super::spans::{Extract, FaultKind, Outcome, Span};
use anyhow::{Context, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

/// Width and height of every plot, in pixels.
pub const PLOT_SIZE: (u32, u32) = (1000, 480);
/// Scatter points drawn in an SVG at most (PNGs draw all of them).
const SVG_MAX_POINTS: usize = 20_000;
/// Time buckets of the quantile and rate plots.
const BUCKETS: usize = 60;

static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
static FONT_REGISTERED: OnceLock<bool> = OnceLock::new();

pub(crate) fn register_font() -> anyhow::Result<()> {
    let ok = *FONT_REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the bundled DejaVu Sans font could not be loaded"))
    }
}

fn outcome_color(o: Outcome) -> RGBColor {
    match o {
        Outcome::Ok => RGBColor(60, 160, 60),
        Outcome::Fail => RGBColor(214, 60, 50),
        Outcome::Info => RGBColor(235, 150, 20),
    }
}

pub(crate) fn fault_color(k: FaultKind) -> RGBColor {
    let (r, g, b) = k.rgb();
    RGBColor(r, g, b)
}

/// Which plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlotKind {
    /// Latency of every op against its start time, by outcome.
    LatencyRaw,
    /// Quantiles of ok latency per time bucket.
    LatencyQuantiles,
    /// Operations per second per time bucket, by outcome.
    Rate,
}

impl PlotKind {
    /// All plots.
    pub const ALL: [PlotKind; 3] = [
        PlotKind::LatencyRaw,
        PlotKind::LatencyQuantiles,
        PlotKind::Rate,
    ];

    /// The file stem (`latency-raw`, …).
    pub fn stem(self) -> &'static str {
        match self {
            PlotKind::LatencyRaw => "latency-raw",
            PlotKind::LatencyQuantiles => "latency-quantiles",
            PlotKind::Rate => "rate",
        }
    }
}

/// Client spans in seconds (or op positions when times are synthetic).
struct Series<'a> {
    spans: Vec<&'a Span>,
    windows: Vec<(FaultKind, f64, f64)>,
    t_end: f64,
    scale: f64,
    x_label: &'static str,
    /// Nanoseconds per latency unit, and the unit's axis label. The unit is
    /// the largest in which the fastest op still takes ≥ 1, because plotters'
    /// log axis labels nothing below 1.
    lat_div: f64,
    lat_label: &'static str,
}

impl<'a> Series<'a> {
    fn new(extract: &'a Extract) -> Series<'a> {
        let scale = if extract.synthetic_time { 1.0 } else { 1e9 };
        let t0 = extract.t_min_ns;
        let spans: Vec<&Span> = extract
            .spans
            .iter()
            .filter(|s| s.process != Some(store::Process::Nemesis))
            .collect();
        let windows = extract
            .windows
            .iter()
            .map(|w| {
                (
                    w.kind,
                    (w.start_ns - t0) as f64 / scale,
                    (w.end_ns - t0) as f64 / scale,
                )
            })
            .collect();
        let t_end = ((extract.t_max_ns - t0) as f64 / scale).max(1e-9);
        let fastest = spans
            .iter()
            .map(|s| s.latency_ns())
            .filter(|&l| l > 0)
            .min()
            .unwrap_or(1_000_000);
        let (lat_div, lat_label) = if extract.synthetic_time {
            (1.0, "latency (ops)")
        } else if fastest >= 1_000_000 {
            (1e6, "latency (ms)")
        } else if fastest >= 1_000 {
            (1e3, "latency (µs)")
        } else {
            (1.0, "latency (ns)")
        };
        Series {
            lat_div,
            lat_label,
            spans,
            windows,
            t_end,
            scale,
            x_label: if extract.synthetic_time {
                "op position"
            } else {
                "time (s)"
            },
        }
    }

    fn x(&self, s: &Span, t0: i64) -> f64 {
        (s.start_ns - t0) as f64 / self.scale
    }

    /// Latency in the series' unit.
    fn latency(&self, s: &Span) -> f64 {
        s.latency_ns() as f64 / self.lat_div
    }

    fn y_label(&self) -> &'static str {
        self.lat_label
    }
}

/// Writes `<stem>.png` and `<stem>.svg` of every plot into `dir`.
///
/// # Errors
/// When the font cannot be loaded or a file cannot be written.
pub fn write_all(dir: &Path, extract: &Extract) -> anyhow::Result<()> {
    register_font()?;
    for kind in PlotKind::ALL {
        let png = dir.join(format!("{}.png", kind.stem()));
        draw(
            BitMapBackend::new(&png, PLOT_SIZE).into_drawing_area(),
            kind,
            extract,
            usize::MAX,
        )
        .with_context(|| format!("drawing {}", png.display()))?;
        let svg = dir.join(format!("{}.svg", kind.stem()));
        draw(
            SVGBackend::new(&svg, PLOT_SIZE).into_drawing_area(),
            kind,
            extract,
            SVG_MAX_POINTS,
        )
        .with_context(|| format!("drawing {}", svg.display()))?;
    }
    Ok(())
}

/// Renders one plot as an SVG string (for tests).
///
/// # Errors
/// When the font cannot be loaded or drawing fails.
#[cfg(test)]
pub fn svg_string(kind: PlotKind, extract: &Extract) -> anyhow::Result<String> {
    register_font()?;
    let mut out = String::new();
    draw(
        SVGBackend::with_string(&mut out, PLOT_SIZE).into_drawing_area(),
        kind,
        extract,
        SVG_MAX_POINTS,
    )?;
    Ok(out)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    kind: PlotKind,
    extract: &Extract,
    max_points: usize,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let series = Series::new(extract);
    let r = match kind {
        PlotKind::LatencyRaw => latency_raw(&root, &series, extract.t_min_ns, max_points),
        PlotKind::LatencyQuantiles => latency_quantiles(&root, &series, extract.t_min_ns),
        PlotKind::Rate => rate(&root, &series, extract.t_min_ns),
    };
    r.map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Shades fault windows over `[y0, y1]`, labelling the first window of each kind.
/// `windows` are `(kind, start, end)` in the chart's x unit; the bank and
/// clock plots shade theirs with it too.
pub(crate) fn shade<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    windows: &[(FaultKind, f64, f64)],
    y0: f64,
    y1: f64,
) -> DrawResult<DB> {
    let mut labelled: Vec<FaultKind> = Vec::new();
    for &(k, a, b) in windows {
        let color = fault_color(k);
        let rect = Rectangle::new([(a, y0), (b.max(a), y1)], color.mix(0.22).filled());
        let anno = chart.draw_series(std::iter::once(rect))?;
        if !labelled.contains(&k) {
            labelled.push(k);
            anno.label(k.name()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.mix(0.4).filled())
            });
        }
    }
    Ok(())
}

fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult<DB> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .draw()
}

fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values {
        let v = v.max(1e-3);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.1, 10.0);
    }
    // A single distinct value still gets a visible range.
    let hi = if hi <= lo * 1.01 { lo * 2.0 } else { hi };
    (lo / 1.5, hi * 1.5)
}

/// Builds a latency chart on a log axis when latencies span more than two
/// decades (plotters labels only powers of ten there), else on a linear axis
/// from 0, binds it to `$chart` (and the axis bottom to `$y0`) and runs `$body`.
macro_rules! latency_chart {
    ($root:expr, $title:expr, $series:expr, $ylo:expr, $yhi:expr, |$chart:ident, $y0:ident| $body:block) => {{
        let (ylo, yhi): (f64, f64) = ($ylo, $yhi);
        if yhi / ylo.max(1e-12) > 100.0 {
            let mut $chart = ChartBuilder::on($root)
                .caption($title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(0f64..$series.t_end, (ylo..yhi).log_scale())?;
            $chart
                .configure_mesh()
                .x_desc($series.x_label)
                .y_desc($series.y_label())
                .y_label_formatter(&|v| fmt_ms(*v))
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 15))
                .light_line_style(WHITE.mix(0.0))
                .draw()?;
            let $y0 = ylo;
            $body
        } else {
            let top = yhi / 1.5 * 1.1;
            let mut $chart = ChartBuilder::on($root)
                .caption($title, ("sans-serif", 20))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(0f64..$series.t_end, 0f64..top)?;
            $chart
                .configure_mesh()
                .x_desc($series.x_label)
                .y_desc($series.y_label())
                .y_label_formatter(&|v| fmt_ms(*v))
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 15))
                .light_line_style(WHITE.mix(0.0))
                .draw()?;
            let $y0 = 0.0;
            let _ = ylo;
            let yhi = top;
            let _ = yhi;
            $body
        }
    }};
}

fn latency_raw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &Series<'_>,
    t0: i64,
    max_points: usize,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (ylo, yhi) = log_range(series.spans.iter().map(|s| series.latency(s)));
    let sampled = series.spans.len() > max_points;
    let title = if sampled {
        format!(
            "latency (every op, {max_points} of {} shown)",
            series.spans.len()
        )
    } else {
        "latency (every op)".to_string()
    };
    latency_chart!(root, title, series, ylo, yhi, |chart, y0| {
        shade(&mut chart, &series.windows, y0, yhi)?;
        let step = series.spans.len().div_ceil(max_points.max(1)).max(1);
        for o in Outcome::ALL {
            let color = outcome_color(o);
            let points = series
                .spans
                .iter()
                .step_by(step)
                .filter(|s| s.outcome == o)
                .map(|s| {
                    Circle::new(
                        (series.x(s, t0), series.latency(s).max(1e-3)),
                        2,
                        color.mix(0.7).filled(),
                    )
                });
            chart
                .draw_series(points)?
                .label(o.name())
                .legend(move |(x, y)| Circle::new((x + 6, y), 4, color.filled()));
        }
        legend(&mut chart)
    })
}

/// Per bucket: (bucket centre, spans in it).
fn buckets<'a>(series: &Series<'a>, t0: i64) -> (f64, Vec<(f64, Vec<&'a Span>)>) {
    let width = series.t_end / BUCKETS as f64;
    let mut out: Vec<(f64, Vec<&Span>)> = (0..BUCKETS)
        .map(|b| ((b as f64 + 0.5) * width, Vec::new()))
        .collect();
    for s in &series.spans {
        let b = ((series.x(s, t0) / width) as usize).min(BUCKETS - 1);
        out[b].1.push(s);
    }
    (width, out)
}

fn latency_quantiles<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &Series<'_>,
    t0: i64,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    const QUANTILES: [(f64, &str, RGBColor); 4] = [
        (0.5, "p50", RGBColor(40, 110, 200)),
        (0.95, "p95", RGBColor(60, 160, 60)),
        (0.99, "p99", RGBColor(235, 150, 20)),
        (1.0, "max", RGBColor(214, 60, 50)),
    ];
    let (_, bs) = buckets(series, t0);
    // Quantiles of ok ops per bucket.
    let mut lines: Vec<Vec<(f64, f64)>> = vec![Vec::new(); QUANTILES.len()];
    for (mid, spans) in &bs {
        let mut lat: Vec<f64> = spans
            .iter()
            .filter(|s| s.outcome == Outcome::Ok)
            .map(|s| series.latency(s).max(1e-3))
            .collect();
        if lat.is_empty() {
            continue;
        }
        lat.sort_by(f64::total_cmp);
        for (qi, (q, _, _)) in QUANTILES.iter().enumerate() {
            let idx = ((lat.len() - 1) as f64 * q).round() as usize;
            lines[qi].push((*mid, lat[idx.min(lat.len() - 1)]));
        }
    }
    let (ylo, yhi) = log_range(lines.iter().flatten().map(|p| p.1));
    latency_chart!(
        root,
        "latency quantiles (ok ops)",
        series,
        ylo,
        yhi,
        |chart, y0| {
            shade(&mut chart, &series.windows, y0, yhi)?;
            for ((_, name, color), line) in QUANTILES.iter().zip(lines) {
                let color = *color;
                chart
                    .draw_series(LineSeries::new(line, color.stroke_width(2)))?
                    .label(*name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
                    });
            }
            legend(&mut chart)
        }
    )
}

fn rate<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &Series<'_>,
    t0: i64,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (width, bs) = buckets(series, t0);
    let mut lines: Vec<Vec<(f64, f64)>> = vec![Vec::new(); Outcome::ALL.len()];
    for (mid, spans) in &bs {
        for (oi, o) in Outcome::ALL.iter().enumerate() {
            let n = spans.iter().filter(|s| s.outcome == *o).count();
            lines[oi].push((*mid, n as f64 / width));
        }
    }
    let ymax = lines
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.15;
    let y_desc = if series.scale == 1.0 {
        "ops per op position"
    } else {
        "throughput (ops/s)"
    };
    let mut chart = ChartBuilder::on(root)
        .caption("throughput by outcome", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..series.t_end, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc(series.x_label)
        .y_desc(y_desc)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    shade(&mut chart, &series.windows, 0.0, ymax)?;
    for (o, line) in Outcome::ALL.iter().zip(lines) {
        let color = outcome_color(*o);
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(2)))?
            .label(o.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
            });
    }
    legend(&mut chart)
}

/// Axis label of a latency: no trailing zeros, enough digits for sub-ms values.
fn fmt_ms(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}
