//! Performance plots, each as PNG and SVG: `latency-raw` (latency of every
//! op over time, by outcome), `latency-quantiles` (ok latency quantiles per
//! time bucket) and `rate` (throughput per time bucket, by outcome), each
//! in the frame of `plot_frame` (fault lanes above the data).
//!
//! Key decision: plotters without its system font stack (no fontconfig or
//! freetype): text is drawn with ab_glyph from DejaVu Sans bundled in
//! `assets/fonts/` and registered once as "sans-serif". SVGs cap the number
//! of scatter points (evenly sampled) so they stay small at 100k ops.

use super::plot_frame::{
    DESC_SIZE, Key, Lane, MARGIN, Mark, TICK_SIZE, X_LABEL_AREA, Y_LABEL_AREA, draw_lanes, frame,
    lanes, shade, tick, time_unit,
};
use super::spans::{Extract, Outcome, Span};
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

/// Client spans in the run's time unit (or op positions when times are
/// synthetic), and the fault lanes in the same unit.
struct Series<'a> {
    spans: Vec<&'a Span>,
    lanes: Vec<Lane>,
    t_end: f64,
    /// Nanoseconds per x unit.
    scale: f64,
    x_label: String,
    /// Nanoseconds per latency unit, and the unit's axis label: the largest
    /// unit in which the median op takes ≥ 1.
    lat_div: f64,
    lat_label: &'static str,
}

impl<'a> Series<'a> {
    fn new(extract: &'a Extract) -> Series<'a> {
        let range_s = (extract.t_max_ns - extract.t_min_ns) as f64 / 1e9;
        let (scale, unit) = if extract.synthetic_time {
            (1.0, "")
        } else {
            time_unit(range_s)
        };
        let t0 = extract.t_min_ns;
        let spans: Vec<&Span> = extract
            .spans
            .iter()
            .filter(|s| s.process != Some(store::Process::Nemesis))
            .collect();
        let lanes = lanes(&extract.windows, t0, scale);
        let t_end = ((extract.t_max_ns - t0) as f64 / scale).max(1e-9);
        // The unit in which the median op takes ≥ 1 (so most of the axis
        // is labelled: plotters' log axis labels nothing below 1).
        let mut lat: Vec<i64> = spans.iter().map(|s| s.latency_ns()).collect();
        let median = if lat.is_empty() {
            1_000_000
        } else {
            let mid = lat.len() / 2;
            *lat.select_nth_unstable(mid).1
        };
        let (lat_div, lat_label) = if extract.synthetic_time {
            (1.0, "latency (ops)")
        } else if median >= 1_000_000 {
            (1e6, "latency (ms)")
        } else if median >= 1_000 {
            (1e3, "latency (µs)")
        } else {
            (1.0, "latency (ns)")
        };
        Series {
            lat_div,
            lat_label,
            spans,
            lanes,
            t_end,
            scale,
            x_label: if extract.synthetic_time {
                "op position".to_string()
            } else {
                format!("time ({unit})")
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
/// from 0, in the frame's chart area, binds it to `$chart` (and the axis
/// bottom and top to `$y0`, `$y1`), runs `$body`, then draws the lanes.
macro_rules! latency_chart {
    ($root:expr, $area:expr, $series:expr, $ylo:expr, $yhi:expr, |$chart:ident, $y0:ident, $y1:ident| $body:block) => {{
        let (ylo, yhi): (f64, f64) = ($ylo, $yhi);
        if yhi / ylo.max(1e-12) > 100.0 {
            let mut $chart = ChartBuilder::on(&$area)
                .margin(MARGIN)
                .x_label_area_size(X_LABEL_AREA)
                .y_label_area_size(Y_LABEL_AREA)
                .build_cartesian_2d(0f64..$series.t_end, (ylo..yhi).log_scale())?;
            mesh!($chart, $series.x_label.as_str(), $series.y_label());
            let ($y0, $y1) = (ylo, yhi);
            $body
            let px = $chart.plotting_area().get_pixel_range().0;
            draw_lanes($root, &$series.lanes, px, (0.0, $series.t_end))
        } else {
            let top = yhi / 1.5 * 1.1;
            let mut $chart = ChartBuilder::on(&$area)
                .margin(MARGIN)
                .x_label_area_size(X_LABEL_AREA)
                .y_label_area_size(Y_LABEL_AREA)
                .build_cartesian_2d(0f64..$series.t_end, 0f64..top)?;
            mesh!($chart, $series.x_label.as_str(), $series.y_label());
            let ($y0, $y1) = (0.0, top);
            let _ = ylo;
            $body
            let px = $chart.plotting_area().get_pixel_range().0;
            draw_lanes($root, &$series.lanes, px, (0.0, $series.t_end))
        }
    }};
}

/// The one mesh style: tick and axis fonts, no minor grid, plain ticks.
macro_rules! mesh {
    ($chart:expr, $x_desc:expr, $y_desc:expr) => {
        $chart
            .configure_mesh()
            .x_desc($x_desc)
            .y_desc($y_desc)
            .x_label_formatter(&|v| tick(*v))
            .y_label_formatter(&|v| tick(*v))
            .label_style(("sans-serif", TICK_SIZE))
            .axis_desc_style(("sans-serif", DESC_SIZE))
            .bold_line_style(BLACK.mix(0.08))
            .light_line_style(WHITE.mix(0.0))
            .draw()?
    };
}
pub(crate) use mesh;

fn latency_raw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &Series<'_>,
    t0: i64,
    max_points: usize,
) -> DrawResult<DB> {
    let (ylo, yhi) = log_range(series.spans.iter().map(|s| series.latency(s)));
    let total = series.spans.len();
    let step = total.div_ceil(max_points.max(1)).max(1);
    let title = if step > 1 {
        format!(
            "latency of each op: 1 in {step} drawn ({} of {total})",
            total.div_ceil(step)
        )
    } else {
        format!("latency of each op ({total} ops)")
    };
    let keys: Vec<Key> = Outcome::ALL
        .iter()
        .map(|o| Key::new(o.name(), outcome_color(*o), Mark::Dot))
        .collect();
    let area = frame(root, &title, &keys, &series.lanes)?;
    latency_chart!(root, area, series, ylo, yhi, |chart, y0, y1| {
        shade(&mut chart, &series.lanes, y0, y1)?;
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
            chart.draw_series(points)?;
        }
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

/// Quantile `q` of the ok latencies per bucket, as line segments broken
/// where a bucket has no ok op (no line is drawn across a gap).
pub(crate) fn quantile_segments(
    series_latency: impl Fn(&Span) -> f64,
    bs: &[(f64, Vec<&Span>)],
    q: f64,
) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (mid, spans) in bs {
        let mut lat: Vec<f64> = spans
            .iter()
            .filter(|s| s.outcome == Outcome::Ok)
            .map(|s| series_latency(s).max(1e-3))
            .collect();
        if lat.is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        lat.sort_by(f64::total_cmp);
        let idx = ((lat.len() - 1) as f64 * q).round() as usize;
        current.push((*mid, lat[idx.min(lat.len() - 1)]));
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn latency_quantiles<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &Series<'_>,
    t0: i64,
) -> DrawResult<DB> {
    const QUANTILES: [(f64, &str, RGBColor); 4] = [
        (0.5, "p50", RGBColor(40, 110, 200)),
        (0.95, "p95", RGBColor(60, 160, 60)),
        (0.99, "p99", RGBColor(235, 150, 20)),
        (1.0, "max", RGBColor(214, 60, 50)),
    ];
    let (_, bs) = buckets(series, t0);
    let lines: Vec<Vec<Vec<(f64, f64)>>> = QUANTILES
        .iter()
        .map(|(q, _, _)| quantile_segments(|s| series.latency(s), &bs, *q))
        .collect();
    let (ylo, yhi) = log_range(lines.iter().flatten().flatten().map(|p| p.1));
    let keys: Vec<Key> = QUANTILES
        .iter()
        .map(|(_, n, c)| Key::new(*n, *c, Mark::Line))
        .collect();
    let title = format!(
        "latency quantiles of ok ops in {BUCKETS} time slices (no line where none completed)"
    );
    let area = frame(root, &title, &keys, &series.lanes)?;
    latency_chart!(root, area, series, ylo, yhi, |chart, y0, y1| {
        shade(&mut chart, &series.lanes, y0, y1)?;
        for ((_, _, color), segments) in QUANTILES.iter().zip(&lines) {
            let color = *color;
            for seg in segments {
                if seg.len() == 1 {
                    chart.draw_series(seg.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
                } else {
                    chart.draw_series(LineSeries::new(seg.clone(), color.stroke_width(2)))?;
                }
            }
        }
    })
}

fn rate<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    series: &Series<'_>,
    t0: i64,
) -> DrawResult<DB> {
    let (width, bs) = buckets(series, t0);
    // Per second of wall time, whatever the x unit.
    let per = if series.scale == 1.0 {
        width
    } else {
        width * series.scale / 1e9
    };
    let mut lines: Vec<Vec<(f64, f64)>> = vec![Vec::new(); Outcome::ALL.len()];
    for (mid, spans) in &bs {
        for (oi, o) in Outcome::ALL.iter().enumerate() {
            let n = spans.iter().filter(|s| s.outcome == *o).count();
            lines[oi].push((*mid, n as f64 / per));
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
    let keys: Vec<Key> = Outcome::ALL
        .iter()
        .map(|o| Key::new(o.name(), outcome_color(*o), Mark::Line))
        .collect();
    let area = frame(root, "throughput by outcome", &keys, &series.lanes)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0f64..series.t_end, 0f64..ymax)?;
    mesh!(chart, series.x_label.as_str(), y_desc);
    shade(&mut chart, &series.lanes, 0.0, ymax)?;
    for (o, line) in Outcome::ALL.iter().zip(lines) {
        let color = outcome_color(*o);
        chart.draw_series(LineSeries::new(line, color.stroke_width(2)))?;
    }
    let px = chart.plotting_area().get_pixel_range().0;
    draw_lanes(root, &series.lanes, px, (0.0, series.t_end))
}
