//! The composed nemesis without root: kill and pause packages (and the
//! pause-kill choreography) over a fake process control on local nodes,
//! with real (short) timing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use nemesis::fault::Nemesis;
use nemesis::package::{self, Options, Plan, Timing};
use nemesis::process::{Process, ProcessError};
use nemesis::remote::{LocalRemote, Remote};
use nemesis::schedule::{FaultKind, Recorder};
use nemesis::target::Target;
use nemesis::{BoxFuture, Node};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Data, F, OpType};
use tokio::sync::watch;

#[derive(Default)]
struct FakeProcess {
    killed: Mutex<BTreeSet<String>>,
    paused: Mutex<BTreeSet<String>>,
    actions: Mutex<Vec<(&'static str, String)>>,
}

impl FakeProcess {
    fn act(&self, action: &'static str, node: &Node) -> BoxFuture<'_, Result<(), ProcessError>> {
        let name = node.name.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            self.actions.lock().unwrap().push((action, name.clone()));
            match action {
                "kill" => {
                    self.killed.lock().unwrap().insert(name);
                }
                "start" => {
                    self.killed.lock().unwrap().remove(&name);
                }
                "pause" => {
                    self.paused.lock().unwrap().insert(name);
                }
                _ => {
                    self.paused.lock().unwrap().remove(&name);
                }
            }
            Ok(())
        })
    }
}

impl Process for FakeProcess {
    fn kill<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        self.act("kill", node)
    }
    fn start<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        self.act("start", node)
    }
    fn pause<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        self.act("pause", node)
    }
    fn resume<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<(), ProcessError>> {
        self.act("resume", node)
    }
}

#[derive(Default)]
struct Log(Mutex<Vec<(OpType, F, Data)>>);

impl Recorder for Log {
    fn record(&self, op_type: OpType, f: F, value: Data, _error: Option<String>) {
        self.0.lock().unwrap().push((op_type, f, value));
    }
}

fn setup(n: usize) -> (Arc<Nemesis>, Arc<FakeProcess>, Vec<String>) {
    let names: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
    let remotes: Vec<Arc<dyn Remote>> = names
        .iter()
        .map(|n| Arc::new(LocalRemote::new(Node::new(n.clone(), "127.0.0.1"))) as Arc<dyn Remote>)
        .collect();
    let p = Arc::new(FakeProcess::default());
    let nem = Arc::new(Nemesis::new(remotes, Some(p.clone() as Arc<dyn Process>)));
    (nem, p, names)
}

fn plan(kinds: Vec<FaultKind>, nodes: Vec<String>, options: Options) -> Plan {
    Plan {
        kinds,
        options,
        nodes,
        primaries: vec![],
        seed: 7,
    }
}

async fn run_for(nem: Arc<Nemesis>, plan: Plan, d: Duration) -> Vec<(OpType, F, Data)> {
    let log = Arc::new(Log::default());
    let (tx, rx) = watch::channel(false);
    let task = tokio::spawn(package::run(nem, plan, log.clone(), rx));
    tokio::time::sleep(d).await;
    tx.send(true).unwrap();
    task.await.unwrap().unwrap();
    log.0.lock().map(|g| g.clone()).unwrap()
}

/// The nemesis process never has two ops in flight: invoke, info, invoke, …
fn strictly_paired(ops: &[(OpType, F, Data)]) -> bool {
    ops.chunks(2).all(|c| {
        c.len() == 2 && c[0].0 == OpType::Invoke && c[1].0 == OpType::Info && c[0].1 == c[1].1
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_and_pause_packages_overlap_and_everything_is_healed() {
    let (nem, proc_, nodes) = setup(3);
    let options = Options {
        interval: Duration::from_millis(15),
        ..Options::default()
    };
    let ops = run_for(
        nem,
        plan(vec![FaultKind::Kill, FaultKind::Pause], nodes, options),
        Duration::from_millis(600),
    )
    .await;
    assert!(strictly_paired(&ops), "{ops:?}");
    let fs: Vec<F> = ops.iter().map(|o| o.1.clone()).collect();
    assert!(fs.contains(&F::Kill) && fs.contains(&F::Pause), "{fs:?}");
    // Some pause starts while a kill is in effect (or the reverse).
    let (mut killing, mut pausing, mut overlap) = (false, false, false);
    for (t, f, _) in &ops {
        if *t != OpType::Info {
            continue;
        }
        match f {
            F::Kill => killing = true,
            F::Start => killing = false,
            F::Pause => pausing = true,
            F::Resume => pausing = false,
            _ => {}
        }
        overlap |= killing && pausing;
    }
    assert!(overlap, "no overlapping windows in {fs:?}");
    assert!(proc_.killed.lock().unwrap().is_empty(), "all restarted");
    assert!(proc_.paused.lock().unwrap().is_empty(), "all resumed");
}

#[tokio::test]
async fn the_initial_quiet_period_holds_every_fault_back() {
    let (nem, proc_, nodes) = setup(3);
    let options = Options {
        interval: Duration::from_millis(5),
        timing: Timing::Fixed,
        initial_quiet: Duration::from_secs(30),
        ..Options::default()
    };
    let ops = run_for(
        nem,
        plan(vec![FaultKind::Kill], nodes, options),
        Duration::from_millis(200),
    )
    .await;
    assert!(ops.is_empty(), "{ops:?}");
    assert!(proc_.actions.lock().unwrap().is_empty());
}

#[tokio::test]
async fn named_targets_are_the_only_nodes_hit() {
    let (nem, proc_, nodes) = setup(5);
    let options = Options {
        interval: Duration::from_millis(5),
        kill_targets: vec![Target::Nodes(vec!["n2".into(), "n4".into()])],
        ..Options::default()
    };
    let ops = run_for(
        nem,
        plan(vec![FaultKind::Kill], nodes, options),
        Duration::from_millis(150),
    )
    .await;
    assert!(ops.iter().any(|o| o.1 == F::Kill));
    let hit: BTreeSet<String> = proc_
        .actions
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.1.clone())
        .collect();
    assert_eq!(hit, ["n2", "n4"].iter().map(|s| s.to_string()).collect());
}

#[tokio::test]
async fn pause_kill_choreography_runs_its_script_and_ends_resumed() {
    let (nem, proc_, nodes) = setup(3);
    let options = Options {
        interval: Duration::from_millis(5),
        hold: Duration::from_millis(20),
        ..Options::default()
    };
    let ops = run_for(
        nem,
        plan(vec![FaultKind::PauseKill], nodes, options),
        Duration::from_millis(300),
    )
    .await;
    assert!(strictly_paired(&ops), "{ops:?}");
    let actions = proc_.actions.lock().unwrap().clone();
    let first: Vec<(&str, &str)> = actions
        .iter()
        .take(6)
        .map(|(a, n)| (*a, n.as_str()))
        .collect();
    assert_eq!(
        first,
        vec![
            ("pause", "n1"),
            ("kill", "n2"),
            ("pause", "n3"),
            ("resume", "n1"),
            ("start", "n2"),
            ("resume", "n3")
        ]
    );
    assert!(proc_.killed.lock().unwrap().is_empty());
    assert!(proc_.paused.lock().unwrap().is_empty());
}

#[tokio::test]
async fn faults_the_database_cannot_do_are_rejected_before_the_run() {
    let names: Vec<String> = vec!["n1".into(), "n2".into(), "n3".into()];
    let p = plan(vec![FaultKind::Pause], names.clone(), Options::default());
    let e = package::validate(&p, false, false, "sim").unwrap_err();
    assert!(
        e.to_string().contains("sim cannot be killed or paused"),
        "{e}"
    );
    let p = plan(
        vec![FaultKind::Kill],
        names.clone(),
        Options {
            kill_targets: vec![Target::Primaries],
            ..Options::default()
        },
    );
    let e = package::validate(&p, true, false, "mariadb").unwrap_err();
    assert!(e.to_string().contains("mariadb has no primaries"), "{e}");
    let p = plan(
        vec![FaultKind::PartKill],
        names[..2].to_vec(),
        Options::default(),
    );
    let e = package::validate(&p, true, false, "x").unwrap_err();
    assert!(e.to_string().contains("at least 3"), "{e}");
    let p = plan(
        vec![FaultKind::Partition],
        names,
        Options {
            partitions: vec![nemesis::partition::PartitionKind::Primaries],
            ..Options::default()
        },
    );
    assert!(package::validate(&p, true, false, "x").is_err());
}
