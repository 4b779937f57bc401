//! The membership package without root: a fake cluster whose members
//! leave and join, composed with kills over a fake process control, with
//! real (short) timing. What is checked: leave/join op pairs with
//! `[node result]` completions, removals the rules refuse are skipped and
//! recorded, a kill's `start` never brings a removed node back, and the
//! heal joins every removed node.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use nemesis::fault::{Fault, Nemesis};
use nemesis::membership::{Membership, MembershipError, Rules, result_data};
use nemesis::package::{self, Options, Plan, Timing};
use nemesis::process::{Process, ProcessError};
use nemesis::remote::{LocalRemote, Remote};
use nemesis::rng::Rng;
use nemesis::schedule::{FaultKind, Recorder, start_recorded, stop_recorded};
use nemesis::{BoxFuture, Node};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Data, F, OpType};
use tokio::sync::watch;

/// A cluster of `all` nodes; `down` ones are members that do not serve.
struct FakeCluster {
    all: Vec<String>,
    members: Mutex<BTreeSet<String>>,
    down: Mutex<BTreeSet<String>>,
    rules: Rules,
    changes: Mutex<Vec<(&'static str, String)>>,
}

impl FakeCluster {
    fn new(n: usize, rules: Rules) -> Arc<FakeCluster> {
        let all: Vec<String> = (1..=n).map(|i| format!("n{i}")).collect();
        Arc::new(FakeCluster {
            members: Mutex::new(all.iter().cloned().collect()),
            all,
            down: Mutex::default(),
            rules,
            changes: Mutex::default(),
        })
    }
}

impl Membership for FakeCluster {
    fn members(&self) -> BoxFuture<'_, Result<Vec<String>, MembershipError>> {
        Box::pin(async move {
            let m = self.members.lock().unwrap();
            let down = self.down.lock().unwrap();
            Ok(self
                .all
                .iter()
                .filter(|n| m.contains(*n) && !down.contains(*n))
                .cloned()
                .collect())
        })
    }
    fn rules(&self) -> Rules {
        self.rules.clone()
    }
    fn remove<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            self.changes.lock().unwrap().push(("remove", node.into()));
            self.members.lock().unwrap().remove(node);
            Ok(result_data(vec![("wiped", Data::Bool(true))]))
        })
    }
    fn add<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<Data, MembershipError>> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            self.changes.lock().unwrap().push(("add", node.into()));
            self.members.lock().unwrap().insert(node.into());
            Ok(result_data(vec![("transfer", Data::Str("sst".into()))]))
        })
    }
}

/// Records process actions; `start` of a node counts as bringing it up.
#[derive(Default)]
struct FakeProcess(Mutex<Vec<(&'static str, String)>>);

impl FakeProcess {
    fn act(&self, a: &'static str, node: &Node) -> BoxFuture<'_, Result<(), ProcessError>> {
        let n = node.name.clone();
        Box::pin(async move {
            self.0.lock().unwrap().push((a, n));
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

fn nemesis(c: &Arc<FakeCluster>, p: &Arc<FakeProcess>) -> Arc<Nemesis> {
    let remotes: Vec<Arc<dyn Remote>> = c
        .all
        .iter()
        .map(|n| Arc::new(LocalRemote::new(Node::new(n.clone(), "127.0.0.1"))) as Arc<dyn Remote>)
        .collect();
    let m: Arc<dyn Membership> = c.clone();
    Arc::new(Nemesis::new(remotes, Some(p.clone() as Arc<dyn Process>)).with_membership(Some(m)))
}

fn galera_rules() -> Rules {
    Rules {
        min_members: 2,
        fixed: vec![],
    }
}

fn plan(kinds: Vec<FaultKind>, nodes: Vec<String>, primaries: Vec<String>) -> Plan {
    Plan {
        kinds,
        options: Options {
            interval: Duration::from_millis(10),
            timing: Timing::Fixed,
            ..Options::default()
        },
        nodes,
        primaries,
        seed: 3,
    }
}

/// The `result` of a `[node result]` completion, as text.
fn result_text(v: &Data) -> String {
    match v {
        Data::Vec(x) if x.len() == 2 => format!("{:?}", x[1]),
        other => panic!("not [node result]: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaves_and_joins_alternate_and_the_end_restores_every_member() {
    let c = FakeCluster::new(3, galera_rules());
    let p = Arc::new(FakeProcess::default());
    let nem = nemesis(&c, &p);
    let log = Arc::new(Log::default());
    let (tx, rx) = watch::channel(false);
    let plan = plan(vec![FaultKind::Membership], c.all.clone(), vec![]);
    let task = tokio::spawn(package::run(nem.clone(), plan, log.clone(), rx));
    tokio::time::sleep(Duration::from_millis(300)).await;
    tx.send(true).unwrap();
    task.await.unwrap().unwrap();
    let ops = log.0.lock().unwrap().clone();
    let infos: Vec<&(OpType, F, Data)> = ops.iter().filter(|o| o.0 == OpType::Info).collect();
    assert!(infos.len() >= 4, "{ops:?}");
    for (i, o) in infos.iter().enumerate() {
        let want = if i % 2 == 0 { F::Leave } else { F::Join };
        assert_eq!(o.1, want, "{ops:?}");
    }
    assert!(result_text(&infos[0].2).contains("wiped"), "{:?}", infos[0]);
    assert!(result_text(&infos[1].2).contains("sst"), "{:?}", infos[1]);
    assert_eq!(c.members.lock().unwrap().len(), 3, "full membership");
    assert!(nem.removed().is_empty());
}

#[tokio::test]
async fn a_removal_below_the_quorum_is_skipped_and_recorded() {
    let c = FakeCluster::new(3, galera_rules());
    c.down.lock().unwrap().insert("n3".into());
    let p = Arc::new(FakeProcess::default());
    let nem = nemesis(&c, &p);
    let log = Log::default();
    let leave = Fault::Leave("n2".into());
    start_recorded(&nem, &log, &leave).await.unwrap();
    stop_recorded(&nem, &log, &leave).await.unwrap();
    assert!(c.changes.lock().unwrap().is_empty(), "nothing removed");
    let ops = log.0.lock().unwrap().clone();
    assert_eq!(ops.len(), 4);
    assert_eq!((ops[1].0, &ops[1].1), (OpType::Info, &F::Leave));
    let r = result_text(&ops[1].2);
    assert!(
        r.contains("skipped") && r.contains("would leave 1 serving member(s) of 2"),
        "{r}"
    );
    assert!(result_text(&ops[3].2).contains("not removed"));
    // With every node serving, the same removal happens.
    c.down.lock().unwrap().clear();
    start_recorded(&nem, &log, &leave).await.unwrap();
    assert_eq!(nem.removed(), vec!["n2".to_string()]);
    nem.heal_all().await.unwrap();
    assert!(nem.removed().is_empty());
    assert_eq!(
        *c.changes.lock().unwrap(),
        vec![("remove", "n2".to_string()), ("add", "n2".to_string())]
    );
}

#[tokio::test]
async fn a_kill_packages_start_never_starts_a_removed_node() {
    let c = FakeCluster::new(3, galera_rules());
    let p = Arc::new(FakeProcess::default());
    let nem = nemesis(&c, &p);
    let kill = Fault::Kill(vec!["n2".into(), "n3".into()]);
    nem.start(&Fault::Leave("n2".into())).await.unwrap();
    nem.start(&kill).await.unwrap();
    nem.stop(&kill).await.unwrap();
    let actions = p.0.lock().unwrap().clone();
    assert!(
        actions.contains(&("start", "n3".to_string())),
        "{actions:?}"
    );
    assert!(
        !actions.contains(&("start", "n2".to_string())),
        "{actions:?}"
    );
    nem.heal_all().await.unwrap();
    assert_eq!(c.members.lock().unwrap().len(), 3);
}

#[test]
fn primaries_never_leave_and_databases_without_membership_are_rejected() {
    let nodes: Vec<String> = (1..=3).map(|i| format!("n{i}")).collect();
    let p = plan(
        vec![FaultKind::Membership],
        nodes.clone(),
        vec!["n1".into()],
    );
    let mut rng = Rng::stream(p.seed, "membership");
    let drawn: BTreeSet<String> = (0..50)
        .filter_map(
            |_| match package::next_fault(FaultKind::Membership, &p, &mut rng) {
                Some(Fault::Leave(n)) => Some(n),
                _ => None,
            },
        )
        .collect();
    assert_eq!(drawn, ["n2", "n3"].iter().map(|s| s.to_string()).collect());
    let e = package::validate(&p, true, false, "mariadb").unwrap_err();
    assert!(
        e.to_string()
            .contains("--nemesis membership: mariadb has no membership changes"),
        "{e}"
    );
    assert!(package::validate(&p, true, true, "postgres").is_ok());
    let only_primary = plan(
        vec![FaultKind::Membership],
        vec!["n1".into()],
        vec!["n1".into()],
    );
    let e = package::validate(&only_primary, true, true, "postgres").unwrap_err();
    assert!(e.to_string().contains("none of which may leave"), "{e}");
}
