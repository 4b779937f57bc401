//! Times loading and checking a history file against strict-serializable:
//! `bench_check FILE [list-append|rw-register]`. Prints phase times and the
//! anomaly types found.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::analysis::{AnalyzeOptions, Workload, analyze};
use checker::budget::Budget;
use checker::model::{ConsistencyModel, anomalies_to_search};
use std::time::Instant;

#[path = "common/measure.rs"]
mod measure;
use measure::{cpu_s, peak_mb};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let t0 = Instant::now();
    let (history, _warnings) = store::load_history(&path).unwrap();
    let t_load = t0.elapsed();
    let (c_load, m_load) = (cpu_s(), peak_mb());
    let workload = match args.get(2).map(String::as_str) {
        Some("rw-register") => Workload::RwRegister,
        Some("list-append") => Workload::ListAppend,
        _ => Workload::detect(&history).unwrap(),
    };
    let t1 = Instant::now();
    let search = anomalies_to_search(&[ConsistencyModel::StrictSerializable], &[]);
    let budget = Budget::unlimited();
    let opts = AnalyzeOptions::new(workload, search, &budget);
    let a = analyze(&history, &opts);
    let t_check = t1.elapsed();
    let c_check = cpu_s() - c_load;
    let types: Vec<String> = a
        .anomalies
        .iter()
        .map(|(k, v)| format!("{}×{}", k.name(), v.len()))
        .collect();
    println!(
        "ops={} load: {:.3}s wall {:.2}s cpu, peak {:.0} MB | analyze: {:.3}s wall {:.2}s cpu | total {:.3}s wall, peak {:.0} MB | anomalies=[{}]",
        history.len(),
        t_load.as_secs_f64(),
        c_load,
        m_load,
        t_check.as_secs_f64(),
        c_check,
        t0.elapsed().as_secs_f64(),
        peak_mb(),
        types.join(" ")
    );
}
