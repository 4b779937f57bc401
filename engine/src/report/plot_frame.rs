//! The one frame every time plot is drawn in (latency, quantiles, rate,
//! clock, bank): a title saying what is drawn, a legend row above the data
//! (never over it), one fault lane per package — and per target when the
//! window names its targets — between the legend and the data, labelled and
//! coloured by [`FaultKind::rgb`] as in the timeline, and the chart below.
//! With a single lane, its windows are also shaded behind the data in one
//! light grey, so a gap in the data lines up with its fault at a glance;
//! with several lanes nothing is shaded (their union would cover most of
//! the run and say nothing): overlapping windows never blend into colours
//! the lanes do not have.
//!
//! Key decision: lanes are drawn in pixels on the root area, mapped through
//! the chart's plotting area's pixel range and x range, so any chart type
//! (linear or log y) gets the same lanes without a second coordinate system.

use super::spans::{FaultKind, FaultWindow};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Title font size (px).
pub(crate) const TITLE_SIZE: u32 = 18;
/// Tick label font size (px).
pub(crate) const TICK_SIZE: u32 = 13;
/// Axis description font size (px).
pub(crate) const DESC_SIZE: u32 = 14;
/// Width of the y label area (px), the same in every plot so lanes line up.
pub(crate) const Y_LABEL_AREA: u32 = 78;
/// Height of the x label area (px).
pub(crate) const X_LABEL_AREA: u32 = 40;
/// Margin around the chart (px).
pub(crate) const MARGIN: u32 = 12;
/// Height of one fault lane (px).
const LANE_H: i32 = 15;
/// Most lanes drawn; past it, targets of a kind share one lane.
pub(crate) const MAX_LANES: usize = 12;
const TITLE_ROW: i32 = 30;
const LEGEND_ROW: i32 = 22;

/// How a legend entry is drawn.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mark {
    /// A filled dot (scatter series).
    Dot,
    /// A short line (line series).
    Line,
}

/// One legend entry.
pub(crate) struct Key {
    pub label: String,
    pub color: RGBColor,
    pub mark: Mark,
}

impl Key {
    pub(crate) fn new(label: impl Into<String>, color: RGBColor, mark: Mark) -> Key {
        Key {
            label: label.into(),
            color,
            mark,
        }
    }
}

/// One fault lane: what it shows and its intervals in the chart's x unit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Lane {
    pub label: String,
    pub kind: FaultKind,
    pub spans: Vec<(f64, f64)>,
}

/// The lanes of `windows`, x = (ns − `t0_ns`) / `scale`: one per kind, or
/// per (kind, target) for windows that name targets, in kind order; at most
/// [`MAX_LANES`] (targets of a kind collapse into one lane when over).
pub(crate) fn lanes(windows: &[FaultWindow], t0_ns: i64, scale: f64) -> Vec<Lane> {
    let by_target = build(windows, t0_ns, scale, true);
    if by_target.len() <= MAX_LANES {
        return by_target;
    }
    build(windows, t0_ns, scale, false)
}

fn build(windows: &[FaultWindow], t0_ns: i64, scale: f64, per_target: bool) -> Vec<Lane> {
    let mut out: Vec<Lane> = Vec::new();
    for w in windows {
        let a = (w.start_ns - t0_ns) as f64 / scale;
        let b = ((w.end_ns - t0_ns) as f64 / scale).max(a);
        let labels: Vec<String> = if per_target && !w.targets.is_empty() {
            w.targets
                .iter()
                .map(|t| format!("{} {t}", w.kind.name()))
                .collect()
        } else {
            vec![w.kind.name().to_string()]
        };
        for label in labels {
            match out.iter_mut().find(|l| l.label == label) {
                Some(l) => l.spans.push((a, b)),
                None => out.push(Lane {
                    label,
                    kind: w.kind,
                    spans: vec![(a, b)],
                }),
            }
        }
    }
    out.sort_by(|x, y| x.kind.cmp(&y.kind).then_with(|| x.label.cmp(&y.label)));
    out
}

/// The union of the lanes' intervals, sorted and merged: what is shaded.
pub(crate) fn union(lanes: &[Lane]) -> Vec<(f64, f64)> {
    let mut all: Vec<(f64, f64)> = lanes.iter().flat_map(|l| l.spans.clone()).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (a, b) in all {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The colour of a fault kind, as in the timeline.
pub(crate) fn fault_color(k: FaultKind) -> RGBColor {
    let (r, g, b) = k.rgb();
    RGBColor(r, g, b)
}

type Res<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Fills `root` white, draws the title and the legend row, leaves room
/// for `lanes`, and returns the area the chart goes into.
pub(crate) fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    keys: &[Key],
    lanes: &[Lane],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (w, _) = root.dim_in_pixel();
    let center = Pos::new(HPos::Center, VPos::Center);
    root.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, TITLE_ROW / 2 + 2),
        TextStyle::from(("sans-serif", TITLE_SIZE).into_font()).pos(center),
    ))?;
    // The legend row, left-aligned with the plotting area.
    let mut x = (MARGIN + Y_LABEL_AREA) as i32;
    let y = TITLE_ROW + LEGEND_ROW / 2;
    let style = TextStyle::from(("sans-serif", TICK_SIZE).into_font())
        .pos(Pos::new(HPos::Left, VPos::Center));
    for k in keys {
        match k.mark {
            Mark::Dot => root.draw(&Circle::new((x + 6, y), 4, k.color.filled()))?,
            Mark::Line => root.draw(&PathElement::new(
                vec![(x, y), (x + 14, y)],
                k.color.stroke_width(2),
            ))?,
        }
        root.draw(&Text::new(k.label.clone(), (x + 18, y), style.clone()))?;
        let (tw, _) = root
            .estimate_text_size(&k.label, &style)
            .unwrap_or((k.label.len() as u32 * 7, 0));
        x += 18 + tw as i32 + 16;
    }
    let lanes_h = if lanes.is_empty() {
        0
    } else {
        lanes.len() as i32 * LANE_H + 6
    };
    let (_, chart) = root.split_vertically(TITLE_ROW + LEGEND_ROW + lanes_h);
    Ok(chart)
}

/// Draws `lanes` above the chart whose plotting area spans pixels
/// `px` (x) and whose x axis runs `x_range`.
pub(crate) fn draw_lanes<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lanes: &[Lane],
    px: std::ops::Range<i32>,
    x_range: (f64, f64),
) -> Res<DB> {
    let (x0, x1) = x_range;
    let to_px = |x: f64| {
        let f = ((x - x0) / (x1 - x0).max(1e-12)).clamp(0.0, 1.0);
        px.start + (f * f64::from(px.end - px.start)).round() as i32
    };
    let label =
        TextStyle::from(("sans-serif", 12).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, lane) in lanes.iter().enumerate() {
        let top = TITLE_ROW + LEGEND_ROW + i as i32 * LANE_H;
        let color = fault_color(lane.kind);
        root.draw(&Rectangle::new(
            [(px.start, top), (px.end, top + LANE_H - 2)],
            RGBColor(245, 245, 245).filled(),
        ))?;
        for &(a, b) in &lane.spans {
            let (pa, pb) = (to_px(a), to_px(b));
            root.draw(&Rectangle::new(
                [(pa, top + 1), (pb.max(pa + 2), top + LANE_H - 3)],
                color.filled(),
            ))?;
        }
        root.draw(&Text::new(
            lane.label.clone(),
            (px.start - 6, top + LANE_H / 2 - 1),
            label.clone(),
        ))?;
    }
    Ok(())
}

/// Shades the intervals of a single lane over `[y0, y1]`, one light grey;
/// nothing when there are several lanes (or none).
pub(crate) fn shade<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    lanes: &[Lane],
    y0: f64,
    y1: f64,
) -> Res<DB> {
    if lanes.len() != 1 {
        return Ok(());
    }
    let rects = union(lanes)
        .into_iter()
        .map(|(a, b)| Rectangle::new([(a, y0), (b, y1)], RGBColor(0, 0, 0).mix(0.06).filled()));
    chart.draw_series(rects)?;
    Ok(())
}

/// A tick label: integers without a fraction, other values with no
/// trailing zeros.
pub(crate) fn tick(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let a = v.abs();
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.5}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The time unit of a run lasting `range_s` seconds: `(ns per unit, label)`.
pub(crate) fn time_unit(range_s: f64) -> (f64, &'static str) {
    if range_s >= 2.0 {
        (1e9, "s")
    } else if range_s >= 0.002 {
        (1e6, "ms")
    } else {
        (1e3, "µs")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn w(kind: FaultKind, a: i64, b: i64, targets: &[&str]) -> FaultWindow {
        FaultWindow {
            kind,
            start_ns: a,
            end_ns: b,
            healed: true,
            detail: String::new(),
            targets: targets.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn one_lane_per_kind_and_per_target_when_named() {
        let ws = [
            w(FaultKind::Pause, 0, 10, &[]),
            w(FaultKind::Kill, 5, 20, &["n1", "n2"]),
            w(FaultKind::Kill, 30, 40, &["n1"]),
            w(FaultKind::Partition, 1, 2, &[]),
        ];
        let l = lanes(&ws, 0, 1.0);
        let labels: Vec<&str> = l.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["partition", "kill n1", "kill n2", "pause"]);
        assert_eq!(l[1].spans, [(5.0, 20.0), (30.0, 40.0)]);
        assert_eq!(union(&l), [(0.0, 20.0), (30.0, 40.0)]);
    }

    #[test]
    fn too_many_targets_collapse_per_kind() {
        let names: Vec<String> = (0..MAX_LANES + 1).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let l = lanes(&[w(FaultKind::Kill, 0, 1, &refs)], 0, 1.0);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].label, "kill");
    }

    #[test]
    fn ticks_are_integers_when_whole() {
        assert_eq!(tick(35000.0), "35000");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(10.0), "10");
        assert_eq!(tick(0.25), "0.25");
        assert_eq!(tick(-0.5), "-0.5");
    }
}
