//! `clock-skew.png` / `clock-skew.svg` and `clock-offsets.csv`: each
//! node's clock offset over time (Jepsen's clock plot), as a step line per
//! node extended to the end of the run, in the frame of `plot_frame`
//! (fault lanes above the data, legend above the lanes).
//!
//! The samples are the `clock-offsets` of the nemesis `info` completions
//! of clock ops (`start-clock`, `stop-clock`): the database's own clock
//! minus the harness clock, measured after each op (`nemesis::clock`).
//! Nothing is written for a run without such ops. The CSV has one row per
//! sample: `time_s,node,offset_s,error_s,expected_s` (time since the first
//! op; `error_s` is half the read's round trip; `expected_s` what the
//! control file said).

use super::plot_frame::{
    DESC_SIZE, Key, MARGIN, Mark, TICK_SIZE, X_LABEL_AREA, Y_LABEL_AREA, draw_lanes, frame, lanes,
    shade, tick,
};
use super::plots::{PLOT_SIZE, mesh, register_font};
use super::spans::Extract;
use anyhow::{Context, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use store::{Data, F, History, OpType};

/// Colours of the node series.
const NODE_COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// One measured offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Seconds since the history's first op.
    pub t_s: f64,
    /// The node.
    pub node: String,
    /// Database clock − harness clock, seconds.
    pub offset_s: f64,
    /// The read's error bound, seconds (`NaN` when not recorded).
    pub error_s: f64,
    /// The offset the control file asked for (`NaN` when not recorded).
    pub expected_s: f64,
}

fn field<'a>(m: &'a [(Data, Data)], key: &str) -> Option<&'a [(Data, Data)]> {
    m.iter().find_map(|(k, v)| match (k, v) {
        (Data::Str(s) | Data::Keyword(s), Data::Map(inner)) if s == key => Some(inner.as_slice()),
        _ => None,
    })
}

use store::run::faults::number;

fn name(d: &Data) -> Option<&str> {
    match d {
        Data::Str(s) | Data::Keyword(s) => Some(s),
        _ => None,
    }
}

/// The offsets recorded in `history`, in history order.
pub fn samples(history: &History) -> Vec<Sample> {
    let t0 = (0..history.len())
        .filter_map(|p| history.time_ns(p))
        .min()
        .unwrap_or(0);
    let mut out = Vec::new();
    for pos in 0..history.len() {
        if !history.is_nemesis(pos)
            || history.op_type(pos) != OpType::Info
            || !matches!(history.f(pos), Some(F::StartClock | F::StopClock))
        {
            continue;
        }
        let (Some(Data::Map(m)), Some(t)) = (history.data(pos), history.time_ns(pos)) else {
            continue;
        };
        let Some(offsets) = field(m, "clock-offsets") else {
            continue;
        };
        let lookup = |key: &str, node: &str| -> f64 {
            field(m, key)
                .and_then(|e| e.iter().find(|(k, _)| name(k) == Some(node)))
                .and_then(|(_, v)| number(v))
                .unwrap_or(f64::NAN)
        };
        for (k, v) in offsets {
            let (Some(node), Some(offset_s)) = (name(k), number(v)) else {
                continue;
            };
            out.push(Sample {
                t_s: (t - t0) as f64 / 1e9,
                node: node.to_string(),
                offset_s,
                error_s: lookup("clock-offset-errors", node),
                expected_s: lookup("expected-offsets", node),
            });
        }
    }
    out
}

/// Writes `clock-skew.{png,svg}` and `clock-offsets.csv` into `dir` when
/// `history` has clock offsets; returns whether it did.
///
/// # Errors
/// When the font cannot be loaded or a file cannot be written.
pub fn write(dir: &Path, history: &History, extract: &Extract) -> anyhow::Result<bool> {
    let samples = samples(history);
    if samples.is_empty() {
        return Ok(false);
    }
    let mut csv = String::from("time_s,node,offset_s,error_s,expected_s\n");
    for s in &samples {
        csv.push_str(&format!(
            "{:.6},{},{:.6},{:.6},{:.6}\n",
            s.t_s, s.node, s.offset_s, s.error_s, s.expected_s
        ));
    }
    let path = dir.join("clock-offsets.csv");
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    register_font()?;
    let png = dir.join("clock-skew.png");
    draw(
        BitMapBackend::new(&png, PLOT_SIZE).into_drawing_area(),
        &samples,
        extract,
    )
    .with_context(|| format!("drawing {}", png.display()))?;
    let svg = dir.join("clock-skew.svg");
    draw(
        SVGBackend::new(&svg, PLOT_SIZE).into_drawing_area(),
        &samples,
        extract,
    )
    .with_context(|| format!("drawing {}", svg.display()))?;
    Ok(true)
}

/// Each node's step line: its samples, extended to `t_end`.
fn steps(samples: &[Sample], t_end: f64) -> BTreeMap<&str, Vec<(f64, f64)>> {
    let mut by_node: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for s in samples {
        let line = by_node.entry(&s.node).or_default();
        if let Some(&(_, prev)) = line.last() {
            line.push((s.t_s, prev));
        }
        line.push((s.t_s, s.offset_s));
    }
    for line in by_node.values_mut() {
        if let Some(&(t, last)) = line.last()
            && t < t_end
        {
            line.push((t_end, last));
        }
    }
    by_node
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    samples: &[Sample],
    extract: &Extract,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    draw_in(&root, samples, extract).map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn draw_in<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    samples: &[Sample],
    extract: &Extract,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let t0 = extract.t_min_ns as f64 / 1e9;
    let t_end = ((extract.t_max_ns as f64 / 1e9) - t0)
        .max(samples.iter().map(|s| s.t_s).fold(1.0, f64::max));
    let lo = samples.iter().map(|s| s.offset_s).fold(0.0f64, f64::min);
    let hi = samples.iter().map(|s| s.offset_s).fold(0.0f64, f64::max);
    let pad = ((hi - lo) * 0.1).max(0.05);
    let (y0, y1) = (lo - pad, hi + pad);
    let lines = steps(samples, t_end);
    let keys: Vec<Key> = lines
        .keys()
        .enumerate()
        .map(|(i, node)| Key::new(*node, NODE_COLORS[i % NODE_COLORS.len()], Mark::Line))
        .collect();
    let lanes = lanes(&extract.windows, extract.t_min_ns, 1e9);
    let area = frame(
        root,
        "clock offset per node (database clock − harness clock)",
        &keys,
        &lanes,
    )?;
    let x_max = t_end * 1.02;
    let mut chart = ChartBuilder::on(&area)
        .margin(MARGIN)
        .x_label_area_size(X_LABEL_AREA)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(0.0..x_max, y0..y1)?;
    mesh!(chart, "time (s)", "offset (s)");
    shade(&mut chart, &lanes, y0, y1)?;
    for (i, (node, line)) in lines.into_iter().enumerate() {
        let color = NODE_COLORS[i % NODE_COLORS.len()];
        chart.draw_series(LineSeries::new(line, color.stroke_width(2)))?;
        chart.draw_series(
            samples
                .iter()
                .filter(|s| s.node == node)
                .map(|s| Circle::new((s.t_s, s.offset_s), 3, color.filled())),
        )?;
    }
    let px = chart.plotting_area().get_pixel_range().0;
    draw_lanes(root, &lanes, px, (0.0, x_max))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn s(t: f64, n: &str, o: f64) -> Sample {
        Sample {
            t_s: t,
            node: n.into(),
            offset_s: o,
            error_s: 0.0,
            expected_s: o,
        }
    }

    #[test]
    fn steps_hold_each_offset_until_the_next_and_reach_the_end() {
        let samples = [s(1.0, "n1", 2.0), s(3.0, "n1", -1.0), s(2.0, "n2", 0.5)];
        let lines = steps(&samples, 10.0);
        assert_eq!(
            lines["n1"],
            vec![(1.0, 2.0), (3.0, 2.0), (3.0, -1.0), (10.0, -1.0)]
        );
        assert_eq!(lines["n2"], vec![(2.0, 0.5), (10.0, 0.5)]);
    }
}
