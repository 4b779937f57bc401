//! SVG of a cycle graph without Graphviz: reads the small DOT subset that
//! `checker::explain::render_dot` writes (node statements with a `label`,
//! edges `a[:port] -> b[:port]` with `label`/`color`) and lays the nodes out
//! on a circle, edges as arcs bending outward with their relation label.
//!
//! Key decision: Graphviz's `dot` gives better layouts and is used when
//! installed; this fallback keeps the report complete on machines without
//! it, and cycles (the only graphs rendered) read well on a circle.

use super::html_escape as esc;
use std::fmt::Write as _;

#[derive(Debug, Default, Clone, PartialEq)]
struct Node {
    id: String,
    /// Record fields (`a|b` labels), ports stripped.
    lines: Vec<String>,
    color: String,
}

#[derive(Debug, Clone, PartialEq)]
struct Edge {
    from: String,
    to: String,
    label: String,
    color: String,
}

/// `key="value"` pairs of an attribute list (the text between `[` and `]`).
fn attrs(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && (b[i].is_whitespace() || b[i] == ',' || b[i] == ';') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i] != '=' && !b[i].is_whitespace() {
            i += 1;
        }
        let key: String = b[start..i].iter().collect();
        while i < b.len() && (b[i].is_whitespace() || b[i] == '=') {
            i += 1;
        }
        let mut val = String::new();
        if i < b.len() && b[i] == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' && i + 1 < b.len() {
                    i += 1;
                }
                val.push(b[i]);
                i += 1;
            }
            i += 1;
        } else {
            while i < b.len() && !b[i].is_whitespace() && b[i] != ',' {
                val.push(b[i]);
                i += 1;
            }
        }
        if !key.is_empty() {
            out.push((key, val));
        }
    }
    out
}

fn get(a: &[(String, String)], k: &str) -> String {
    a.iter()
        .find(|(x, _)| x == k)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

fn strip_port(s: &str) -> String {
    s.split(':')
        .next()
        .unwrap_or(s)
        .trim()
        .trim_matches('"')
        .to_string()
}

/// Parses the DOT subset; statements it does not understand are skipped.
fn parse(dot: &str) -> (Vec<Node>, Vec<Edge>) {
    let mut nodes: Vec<Node> = Vec::new();
    let mut edges = Vec::new();
    for line in dot.lines() {
        let line = line.trim();
        let (head, rest) = match line.split_once('[') {
            Some((h, r)) => (h.trim(), r.rsplit_once(']').map_or(r, |(a, _)| a)),
            None => (line.trim_end_matches(';').trim(), ""),
        };
        if head.is_empty()
            || head.starts_with("digraph")
            || head.starts_with("graph")
            || head == "node"
            || head == "edge"
            || head == "}"
        {
            continue;
        }
        let a = attrs(rest);
        if let Some((from, to)) = head.split_once("->") {
            let (from, to) = (strip_port(from), strip_port(to));
            for id in [&from, &to] {
                if !nodes.iter().any(|n| &n.id == id) {
                    nodes.push(Node {
                        id: id.clone(),
                        lines: vec![id.clone()],
                        color: String::new(),
                    });
                }
            }
            edges.push(Edge {
                from,
                to,
                label: get(&a, "label"),
                color: get(&a, "color"),
            });
        } else {
            let id = strip_port(head);
            let label = get(&a, "label");
            let mut lines: Vec<String> = label
                .split('|')
                .map(|f| {
                    let f = f.trim();
                    match f.strip_prefix('<') {
                        Some(r) => r.split_once('>').map_or(r, |(_, t)| t).trim().to_string(),
                        None => f.to_string(),
                    }
                })
                .filter(|f| !f.is_empty())
                .collect();
            lines.insert(0, id.clone());
            let color = get(&a, "color");
            match nodes.iter_mut().find(|n| n.id == id) {
                Some(n) => {
                    n.lines = lines;
                    n.color = color;
                }
                None => nodes.push(Node { id, lines, color }),
            }
        }
    }
    (nodes, edges)
}

fn safe_color(c: &str, default: &str) -> String {
    let ok = !c.is_empty()
        && c.len() <= 20
        && c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '#');
    if ok {
        c.to_string()
    } else {
        default.to_string()
    }
}

/// Renders `dot` as an SVG document with a circular layout.
pub fn dot_to_svg(dot: &str) -> String {
    let (nodes, edges) = parse(dot);
    let n = nodes.len().max(1);
    const CHAR_W: f64 = 7.2;
    const LINE_H: f64 = 15.0;
    let sizes: Vec<(f64, f64)> = nodes
        .iter()
        .map(|nd| {
            let w = nd
                .lines
                .iter()
                .map(|l| l.chars().count())
                .max()
                .unwrap_or(1) as f64
                * CHAR_W
                + 16.0;
            (w.min(420.0), nd.lines.len() as f64 * LINE_H + 8.0)
        })
        .collect();
    let max_w = sizes.iter().map(|s| s.0).fold(60.0, f64::max);
    let max_h = sizes.iter().map(|s| s.1).fold(20.0, f64::max);
    // Radius large enough that neighbours' boxes do not overlap.
    let radius = if n == 1 {
        0.0
    } else {
        ((max_w.max(max_h) + 40.0) / (2.0 * (std::f64::consts::PI / n as f64).sin())).max(120.0)
    };
    let (cx, cy) = (radius + max_w / 2.0 + 30.0, radius + max_h / 2.0 + 30.0);
    let pos: Vec<(f64, f64)> = (0..nodes.len())
        .map(|i| {
            let a = -std::f64::consts::FRAC_PI_2 + 2.0 * std::f64::consts::PI * i as f64 / n as f64;
            (cx + radius * a.cos(), cy + radius * a.sin())
        })
        .collect();
    let (w, h) = (2.0 * cx, 2.0 * cy);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    s.push_str("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"context-stroke\"/></marker></defs>\n");
    s.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    let idx = |id: &str| nodes.iter().position(|nd| nd.id == id);
    for e in &edges {
        let (Some(a), Some(b)) = (idx(&e.from), idx(&e.to)) else {
            continue;
        };
        let color = safe_color(&e.color, "#444");
        let (p, q) = (pos[a], pos[b]);
        // Bend outward from the centre so a→b and b→a do not overlap.
        let (mx, my) = ((p.0 + q.0) / 2.0, (p.1 + q.1) / 2.0);
        let (dx, dy) = (q.0 - p.0, q.1 - p.1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let (nx, ny) = (-dy / len, dx / len);
        let bend = 0.25 * len.max(80.0);
        let (kx, ky) = (mx + nx * bend, my + ny * bend);
        // Stop at the target box's edge (approximately).
        let (tw, th) = sizes[b];
        let (ex, ey) = (q.0 - kx, q.1 - ky);
        let el = (ex * ex + ey * ey).sqrt().max(1.0);
        let shrink = ((tw / 2.0) / ex.abs().max(1e-9))
            .min((th / 2.0) / ey.abs().max(1e-9))
            .min(1.0)
            * el;
        let (qx, qy) = (q.0 - ex / el * shrink, q.1 - ey / el * shrink);
        let (sw, sh) = sizes[a];
        let (fx, fy) = (kx - p.0, ky - p.1);
        let fl = (fx * fx + fy * fy).sqrt().max(1.0);
        let sshrink = ((sw / 2.0) / fx.abs().max(1e-9))
            .min((sh / 2.0) / fy.abs().max(1e-9))
            .min(1.0)
            * fl;
        let (px, py) = (p.0 + fx / fl * sshrink, p.1 + fy / fl * sshrink);
        let _ = writeln!(
            s,
            "<path class=\"edge\" d=\"M{px:.1},{py:.1} Q{kx:.1},{ky:.1} {qx:.1},{qy:.1}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"1.6\" marker-end=\"url(#arrow)\"/>"
        );
        let (lx, ly) = (
            0.25 * px + 0.5 * kx + 0.25 * qx,
            0.25 * py + 0.5 * ky + 0.25 * qy,
        );
        let _ = writeln!(
            s,
            "<text class=\"edge-label\" x=\"{lx:.1}\" y=\"{ly:.1}\" fill=\"{color}\" text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
            esc(&e.label)
        );
    }
    for (i, nd) in nodes.iter().enumerate() {
        let (x, y) = pos[i];
        let (bw, bh) = sizes[i];
        let color = safe_color(&nd.color, "#0058AD");
        let _ = writeln!(
            s,
            "<g class=\"node\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bw:.1}\" height=\"{bh:.1}\" rx=\"4\" fill=\"white\" stroke=\"{color}\" stroke-width=\"1.4\"/>",
            x - bw / 2.0,
            y - bh / 2.0
        );
        for (j, line) in nd.lines.iter().enumerate() {
            let weight = if j == 0 { " font-weight=\"bold\"" } else { "" };
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{color}\"{weight}>{}</text>",
                x - bw / 2.0 + 8.0,
                y - bh / 2.0 + 4.0 + LINE_H * (j as f64 + 0.8),
                esc(line)
            );
        }
        s.push_str("</g>\n");
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOT: &str = "digraph a {\n  node [fontname=\"Helvetica\" shape=\"record\"];\n  edge [fontname=\"Helvetica\"];\n  T1 [label=\"<f0> append 1 1|<f1> r 2 [1]\" color=\"#0058AD\" fontcolor=\"#0058AD\"];\n  T3 [label=\"<f0> append 2 1|<f1> r 1 [1]\" color=\"#0058AD\" fontcolor=\"#0058AD\"];\n  T1:f0 -> T3:f1 [label=\"wr\" color=\"#C000A5\" fontcolor=\"#C000A5\"];\n  T3:f0 -> T1:f1 [label=\"wr\" color=\"#C000A5\" fontcolor=\"#C000A5\"];\n}\n";

    #[test]
    fn parses_record_nodes_and_ported_edges() {
        let (nodes, edges) = parse(DOT);
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].id, "T1");
        assert_eq!(nodes[0].lines, vec!["T1", "append 1 1", "r 2 [1]"]);
        assert_eq!(edges.len(), 2);
        assert_eq!((edges[0].from.as_str(), edges[0].to.as_str()), ("T1", "T3"));
        assert_eq!(edges[0].label, "wr");
        assert_eq!(edges[0].color, "#C000A5");
    }

    #[test]
    fn svg_has_every_node_and_labelled_edge() {
        let svg = dot_to_svg(DOT);
        let doc = match roxmltree::Document::parse(&svg) {
            Ok(d) => d,
            Err(e) => panic!("{e}\n{svg}"),
        };
        let class = |c: &str| {
            doc.descendants()
                .filter(|n| n.attribute("class") == Some(c))
                .count()
        };
        assert_eq!(class("node"), 2);
        assert_eq!(class("edge"), 2);
        assert_eq!(class("edge-label"), 2);
        assert!(svg.contains("append 1 1") && svg.contains(">wr<"));
    }

    #[test]
    fn hostile_labels_are_escaped() {
        let svg = dot_to_svg("digraph { T1 [label=\"<script>x</script>\" color=\"red;x\"]; }");
        assert!(!svg.contains("<script>"));
        assert!(roxmltree::Document::parse(&svg).is_ok());
    }
}
