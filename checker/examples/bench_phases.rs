//! Times each phase of a list-append check one after the other, on one
//! thread: `bench_phases FILE`. Prints, per phase, wall and CPU seconds and
//! the resident set after it (what the phase added and still holds), plus
//! the graph's size — to see which phase grows faster than the history.
//! Then one line of the peak each of the first phases added (load,
//! `Txns`, `Observations`, version order), the weak check's phases, and
//! last the whole `check_with_engines` with the wall
//! time of each analysis it ran. `bench_phases FILE [MODEL]` (default
//! strict-serializable; the weak level is the one MODEL needs);
//! `bench_phases FILE load` stops after the load, so `/usr/bin/time` of it
//! gives the load's CPU on all its threads (the rows give this thread's).
//! Rw-register histories (Plume text) skip the list-append phases.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::analysis::Workload;
use checker::graph::kahn::acyclic;
use checker::graph::{Edges, Graph, tarjan};
use checker::list_append::ListAppend;
use checker::model::{ConsistencyModel, Level, weak_level_needed};
use checker::observe::Observations;
use checker::order::realtime;
use checker::rels::Rels;
use checker::txn::Txns;
use checker::versions::VersionOrder;
use checker::weak;
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
    if std::env::args().nth(2).as_deref() == Some("load") {
        // Not the history's drop: the load alone.
        std::process::exit(0);
    }
    let workload = Workload::detect(&history).unwrap();
    let model = std::env::args()
        .nth(2)
        .map_or(ConsistencyModel::StrictSerializable, |m| {
            ConsistencyModel::parse(&m).unwrap()
        });
    let level = weak_level_needed(&[model], &[]);
    let txns = phase("txns", || Txns::new(&history));
    let t = peak_mb();
    let obs = phase("observations", || {
        Observations::new(&txns, &history, workload)
    });
    let o = peak_mb();
    if workload == Workload::ListAppend {
        list_phases(&history, &txns, &obs, [load, t, o]);
    }
    if let Some(level) = level {
        weak_phases(&history, &txns, &obs, workload, level);
    }
    drop((obs, txns));
    let mut opts = checker::CheckOptions::new(workload);
    opts.models = vec![model];
    let checked = phase("check_with_engines", || {
        checker::check_with_engines(&history, &opts)
    });
    println!("verdict {:?} ({model})", checked.result.valid);
    for (name, s) in &checked.timings {
        println!("  {name:<20} {s:>7.3} s wall");
    }
}

/// The list-append version order, Elle's graph and Tarjan.
/// `peaks`: after the load, `Txns` and the observations (MB).
fn list_phases(history: &store::History, txns: &Txns<'_>, obs: &Observations<'_>, peaks: [f64; 3]) {
    let [load, t, o] = peaks;
    let list = phase("list-append order", || ListAppend::new(txns, obs));
    let v = peak_mb();
    let _ = phase("list anomalies", || list.anomalies(txns, history));
    let data = phase("data edge index", || list.edges(txns));
    let rt = phase("realtime events", || realtime(txns, history));
    let graph = phase("graph (count + fill)", || {
        Graph::from_sources(txns.len(), &[&*data, &*rt as &dyn Edges])
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
    let ok = phase("kahn (acyclic?)", || {
        acyclic(&graph, Rels::DATA | Rels::REALTIME)
    });
    println!("acyclic: {ok}");
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

/// The weak check at `level`: its observations, the saturation per level,
/// and the whole check (fast path or report).
fn weak_phases(
    history: &store::History,
    txns: &Txns<'_>,
    seen: &Observations<'_>,
    workload: Workload,
    level: Level,
) {
    let obs = phase("weak observations", || {
        weak::observe::Observations::new(txns, seen, workload)
    });
    let mut inferred = Vec::new();
    phase("weak rc saturation", || {
        weak::saturate::read_committed(&obs, &mut inferred)
    });
    if level >= Level::ReadAtomic {
        phase("weak ra saturation", || {
            weak::saturate::read_atomic(&obs, &mut inferred)
        });
    }
    if level >= Level::Causal {
        phase("weak cc saturation", || {
            weak::saturate::causal::causal(&obs, &mut inferred)
        });
    }
    println!("weak: {} inferred edges", inferred.len());
    drop((obs, inferred));
    let w = phase("weak check (whole)", || {
        weak::check_observed(history, txns, seen, workload, level)
    });
    println!("weak: {} anomalies", w.anomalies.len());
}
