//! Anomalies as Graphviz DOT: one graph per cycle.

use super::text::{find_op, fmt_mop};
use super::{Anomaly, Evidence};
use crate::rels::Rel;
use std::fmt::Write as _;
use store::{History, OpType};

fn dot_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '{' | '}' | '<' | '>' | '|' | '\\' => {
                o.push('\\');
                o.push(c);
            }
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn rel_color(r: Rel) -> &'static str {
    match r {
        Rel::Ww => "#C02700",
        Rel::Wr => "#C000A5",
        Rel::Rw => "#5B00C0",
        Rel::Realtime => "#0050C0",
        Rel::Process => "#00C0C0",
    }
}

/// Renders a cycle anomaly as a Graphviz DOT digraph (record nodes, one field
/// per micro-op; edges labelled and coloured by relation). `None` for
/// anomalies that are not cycles.
pub fn render_dot(a: &Anomaly, history: &History) -> Option<String> {
    let Evidence::Cycle { cycle, steps } = &a.evidence else {
        return None;
    };
    let n = cycle.len().saturating_sub(1);
    let mut out = String::from(
        "digraph a {\n  node [fontname=\"Helvetica\" shape=\"record\"];\n  edge [fontname=\"Helvetica\"];\n",
    );
    for o in &cycle[..n] {
        let op = find_op(history, *o);
        let color = match op.as_ref().map(|o| o.op_type) {
            Some(OpType::Info) => "#AC6E00",
            Some(OpType::Fail) => "#A50053",
            _ => "#0058AD",
        };
        let fields: Vec<String> = op
            .as_ref()
            .and_then(|op| op.value.txn())
            .map(|m| {
                m.iter()
                    .enumerate()
                    .map(|(i, x)| {
                        let t = fmt_mop(x);
                        format!("<f{i}> {}", dot_escape(&t[1..t.len() - 1]))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  T{o} [label=\"{}\" color=\"{color}\" fontcolor=\"{color}\"];",
            if fields.is_empty() {
                format!("T{o}")
            } else {
                fields.join("|")
            }
        );
    }
    for s in steps {
        let port = |m: Option<usize>| m.map_or(String::new(), |i| format!(":f{i}"));
        let (from, to) = s.ends();
        let c = rel_color(s.rel());
        let _ = writeln!(
            out,
            "  T{}{} -> T{}{} [label=\"{}\" color=\"{c}\" fontcolor=\"{c}\"];",
            from,
            port(s.site().map(|x| x.a_mop)),
            to,
            port(s.site().map(|x| x.b_mop)),
            s.rel().short()
        );
    }
    out.push_str("}\n");
    Some(out)
}
