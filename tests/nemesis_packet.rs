//! Packet faults on the real testbed (`--nemesis packet`): loss through
//! iptables `statistic` in harness's own chain, duplication through `TEE`
//! in the mangle table, a rate limit through a `tbf` root qdisc; the loss
//! asked vs the loss measured by the chain's counters, recorded on the
//! `stop-packet` op; and the heals: the stop removes everything, and so
//! does the heal a run starts with (a stale rule or qdisc left by a
//! crashed run). Needs root, iproute2 (`tc`) and iptables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod run_common;

use nemesis::fault::{Fault, Nemesis};
use nemesis::packet::{CHAIN, PacketFault, TBF_HANDLE};
use nemesis::remote::Remote;
use nemesis::schedule::{Recorder, start_recorded, stop_recorded};
use nemesis::testbed::{Testbed, TestbedLock};
use run_common::{Down, testbed_up};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use store::{Data, F, OpType};

/// One recorded nemesis op: type, f, value, error.
type Recorded = (OpType, F, Data, Option<String>);

#[derive(Default)]
struct Ops(Mutex<Vec<Recorded>>);

impl Recorder for Ops {
    fn record(&self, op_type: OpType, f: F, value: Data, error: Option<String>) {
        self.0.lock().unwrap().push((op_type, f, value, error));
    }
}

/// Every trace of packet faults on a node: filter and mangle rules naming
/// the chain, and harness's qdisc.
async fn traces(r: &dyn Remote) -> String {
    let cmd = format!(
        "iptables -w -S | grep -- {CHAIN}; iptables -w -t mangle -S | grep -- {CHAIN}; \
         tc qdisc show dev eth0 | grep 'tbf {TBF_HANDLE}'; true"
    );
    r.run_timeout(&cmd, Duration::from_secs(20))
        .await
        .unwrap()
        .stdout_str()
}

/// Sends `n` UDP datagrams from `from` to `ip` (port 9, discard).
async fn udp_burst(from: &dyn Remote, ip: &str, n: u32) {
    let cmd = format!("for i in $(seq {n}); do echo x > /dev/udp/{ip}/9; done 2>/dev/null; true");
    from.run_timeout(&cmd, Duration::from_secs(60))
        .await
        .unwrap();
}

fn map_get<'a>(d: &'a Data, key: &str) -> Option<&'a Data> {
    match d {
        Data::Map(m) => m
            .iter()
            .find(|(k, _)| *k == Data::Str(key.to_string()))
            .map(|(_, v)| v),
        _ => None,
    }
}

#[test]
#[ignore = "needs root and the testbed: run by .ci/run"]
fn packet_loss_duplication_and_rate_are_applied_measured_and_healed() {
    let _lock = TestbedLock::acquire().unwrap();
    let _down = Down;
    testbed_up();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(packet_faults());
}

async fn packet_faults() {
    let tb = Testbed::current().unwrap();
    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    let nem = Nemesis::new(remotes.clone(), None);
    nem.heal_partitions().await.unwrap();
    let fault = Fault::Packet(PacketFault {
        targets: vec!["n1".into()],
        behavior: "loss=0.3,duplicate=0.2,rate=4000".parse().unwrap(),
    });
    let ops = Ops::default();
    eprintln!("starting the packet fault");
    start_recorded(&nem, &ops, &fault).await.unwrap();
    // n1 (the target) shapes its links to n2 and n3; n2 only its link to n1.
    let n1 = traces(remotes[0].as_ref()).await;
    assert!(
        n1.contains("10.99.0.2/32") && n1.contains("10.99.0.3/32"),
        "{n1}"
    );
    // iptables prints the probability in its own rounding (0.29999999981).
    assert!(
        n1.contains("statistic --mode random --probability 0.29999"),
        "{n1}"
    );
    assert!(n1.contains("TEE --gateway 10.99.0.2"), "{n1}");
    assert!(n1.contains(&format!("tbf {TBF_HANDLE}")), "{n1}");
    let n2 = traces(remotes[1].as_ref()).await;
    assert!(
        n2.contains("10.99.0.1/32") && !n2.contains("10.99.0.3/32"),
        "{n2}"
    );
    assert!(
        !n2.contains("tbf"),
        "the rate limit is on targets only: {n2}"
    );

    eprintln!("sending 3000 datagrams n2 → n1");
    udp_burst(remotes[1].as_ref(), "10.99.0.1", 3000).await;
    stop_recorded(&nem, &ops, &fault).await.unwrap();

    let ops = ops.0.lock().unwrap().clone();
    let fs: Vec<String> = ops.iter().map(|o| o.1.as_str().to_string()).collect();
    assert_eq!(
        fs,
        vec!["start-packet", "start-packet", "stop-packet", "stop-packet"]
    );
    assert!(ops.iter().all(|o| o.3.is_none()), "{ops:?}");
    assert_eq!(map_get(&ops[0].2, "loss"), Some(&Data::Float(0.3)));
    let measured = &ops[3].2;
    let Some(Data::Float(got)) = map_get(measured, "measured-loss") else {
        panic!("no measured loss: {measured:?}");
    };
    let Some(Data::Int(seen)) = map_get(map_get(measured, "n1").unwrap(), "seen") else {
        panic!("{measured:?}");
    };
    eprintln!("packet loss asked 0.30, measured {got:.4} over {seen} packets seen by n1");
    assert!(
        *seen >= 3000,
        "every datagram passed the counting rule: {seen}"
    );
    // Bernoulli(0.3) over >= 3000 packets: sd < 0.009, so 0.2..0.4 is > 10 sd.
    assert!((0.2..0.4).contains(got), "measured {got}");

    for r in &remotes {
        let t = traces(r.as_ref()).await;
        assert!(t.trim().is_empty(), "{}: left {t}", r.node().name);
    }

    // A fault left behind (a crashed run) is removed by the heal every run
    // starts with.
    nem.start(&fault).await.unwrap();
    assert!(!traces(remotes[0].as_ref()).await.trim().is_empty());
    let fresh = Nemesis::new(remotes.clone(), None);
    fresh.heal_partitions().await.unwrap();
    for r in &remotes {
        let t = traces(r.as_ref()).await;
        assert!(t.trim().is_empty(), "{}: left {t}", r.node().name);
    }
    assert_eq!(
        fresh
            .harness_rules()
            .await
            .unwrap()
            .values()
            .map(Vec::len)
            .sum::<usize>(),
        0
    );
}
