//! Times each phase of a list-append check one after the other, on one
//! thread: `bench_phases FILE`. Prints, per phase, wall and CPU seconds and
//! the resident set after it (what the phase added and still holds), plus
//! the graph's size — to see which phase grows faster than the history.
//! Last, one line of the peak each of the first phases added (load,
//! `Txns`, `Observations`, version order).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::analysis::Workload;
use checker::graph::{Edges, Graph, tarjan};
use checker::list_append::ListAppend;
use checker::observe::Observations;
use checker::order::realtime;
use checker::rels::Rels;
use checker::txn::Txns;
use checker::versions::VersionOrder;
use std::time::Instant;

#[path = "common/measure.rs"]
mod measure;
use measure::{cpu_s, peak_mb, rss_mb};

/// Runs `f`, printing its name, wall and CPU time and the RSS after it.
fn phase<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let (t, c) = (Instant::now(), cpu_s());
    let out = f();
    println!(
        "{name:<22} {:>7.3} s wall {:>7.3} s cpu  rss {:>7.0} MB  peak {:>7.0} MB",
        t.elapsed().as_secs_f64(),
        cpu_s() - c,
        rss_mb(),
        peak_mb()
    );
    out
}

fn main() {
    let path = std::path::PathBuf::from(std::env::args().nth(1).expect("FILE"));
    let (history, _) = phase("load (parse + pairing)", || {
        store::load_history(&path).unwrap()
    });
    let load = peak_mb();
    let txns = phase("txns", || Txns::new(&history));
    let t = peak_mb();
    let obs = phase("observations", || {
        Observations::new(&txns, &history, Workload::ListAppend)
    });
    let o = peak_mb();
    let list = phase("list-append order", || ListAppend::new(&txns, &obs));
    let v = peak_mb();
    let _ = phase("list anomalies", || list.anomalies(&txns, &history));
    let data = phase("data edge index", || list.edges(&txns));
    let rt = phase("realtime events", || realtime(&txns, &history));
    let graph = phase("graph (count + fill)", || {
        Graph::from_sources(txns.len(), &[&*data, &*rt])
    });
    let count = |e: &dyn Edges| {
        let mut n = 0usize;
        e.each(&mut |a, b, _| n += usize::from(a != b));
        n
    };
    let n_rt = count(&*rt);
    println!(
        "edges: data {} realtime {} ({:.2} per txn)",
        count(&*data),
        n_rt,
        n_rt as f64 / txns.len() as f64
    );
    drop((data, rt));
    println!(
        "graph: {} nodes {} edges",
        graph.node_count(),
        graph.edge_count()
    );
    let sccs = phase("tarjan", || tarjan(&graph, Rels::DATA | Rels::REALTIME));
    println!("nontrivial sccs: {}", sccs.nontrivial().len());
    println!(
        "peak MB: load {load:.0}, +Txns {:.0} ({} txns), +Observations {:.0} ({} writes, {} reads), +version order {:.0}",
        t - load,
        txns.len(),
        o - t,
        obs.writes.len(),
        obs.reads.len(),
        v - o,
    );
}
