//! Real testbed: 3 network-namespace nodes with sshd, partitions and heals.
//! Needs root, iproute2, util-linux, tini, openssh-server/-client, iptables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use nemesis::Node;
use nemesis::fault::{Fault, Nemesis};
use nemesis::partition::Grudge;
use nemesis::remote::{Remote, RemoteError, SshConfig, SshRemote};
use nemesis::testbed::{Testbed, TestbedLock};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

async fn tcp_ok(from: &dyn Remote, ip: &str) -> bool {
    let cmd = format!("timeout 2 bash -c 'exec 3<>/dev/tcp/{ip}/22'");
    from.exec(&cmd, None, Duration::from_secs(10))
        .await
        .unwrap()
        .success()
}

fn grudge(pairs: &[(&str, &[&str])]) -> Grudge {
    pairs
        .iter()
        .map(|(a, bs)| {
            (
                a.to_string(),
                bs.iter().map(|b| b.to_string()).collect::<BTreeSet<_>>(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "system test, needs root + the testbed (network namespaces, sshd, iptables); .ci/run runs it"]
async fn testbed_up_partition_heal_down() {
    let _lock = TestbedLock::acquire().unwrap();
    let tb = Testbed::up(3).await.unwrap();
    // Idempotent: a second `up` keeps the healthy testbed.
    let again = Testbed::up(3).await.unwrap();
    assert_eq!(again.nodes, tb.nodes);
    let st = tb.status().await;
    assert!(st.iter().all(|s| s.netns && s.running && s.ssh), "{st:?}");

    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    for r in &remotes {
        assert_eq!(r.run("hostname").await.unwrap().stdout_str(), r.node().name);
        // Own PID namespace: tini is PID 1.
        assert_eq!(
            r.run("cat /proc/1/comm").await.unwrap().stdout_str(),
            "tini"
        );
    }
    let nem = Nemesis::new(remotes.clone(), None);
    nem.heal_partitions().await.unwrap();
    assert!(tcp_ok(remotes[0].as_ref(), "10.99.0.2").await);

    let g = grudge(&[("n1", &["n2"]), ("n2", &["n1"])]);
    nem.start(&Fault::Partition(g)).await.unwrap();
    assert!(
        !tcp_ok(remotes[0].as_ref(), "10.99.0.2").await,
        "n1 -> n2 must fail"
    );
    assert!(
        !tcp_ok(remotes[1].as_ref(), "10.99.0.1").await,
        "n2 -> n1 must fail"
    );
    assert!(
        tcp_ok(remotes[0].as_ref(), "10.99.0.3").await,
        "n1 -> n3 must work"
    );
    assert!(
        tcp_ok(remotes[2].as_ref(), "10.99.0.1").await,
        "n3 -> n1 must work"
    );
    let rules = nem.harness_rules().await.unwrap();
    assert!(
        !rules["n1"].is_empty() && rules["n3"].is_empty(),
        "{rules:?}"
    );
    // A rule harness did not write survives the heal.
    remotes[2]
        .run("iptables -w -A INPUT -s 10.99.0.99 -j DROP")
        .await
        .unwrap();

    nem.heal_partitions().await.unwrap();
    let rules = nem.harness_rules().await.unwrap();
    assert!(rules.values().all(|v| v.is_empty()), "{rules:?}");
    assert!(tcp_ok(remotes[0].as_ref(), "10.99.0.2").await);
    let foreign = remotes[2]
        .run("iptables -w -S INPUT")
        .await
        .unwrap()
        .stdout_str();
    assert!(foreign.contains("10.99.0.99"), "{foreign}");
    remotes[2].run("iptables -w -F INPUT").await.unwrap();

    // A failed login is reported by node name.
    let mut bad = SshConfig::new();
    bad.key = Some(std::path::PathBuf::from("/nonexistent-key"));
    bad.user = "nobody-harness".to_string();
    bad.control_dir = std::env::temp_dir().join(format!("hssh-{}", std::process::id()));
    let r = SshRemote::new(Node::new("n2", "10.99.0.2"), bad);
    match r.connect().await {
        Err(RemoteError::Unreachable { node, detail }) => {
            assert_eq!(node, "n2");
            assert!(detail.contains("Permission denied"), "{detail}");
        }
        other => panic!("expected a login failure, got {other:?}"),
    }

    let _ =
        std::fs::remove_dir_all(std::env::temp_dir().join(format!("hssh-{}", std::process::id())));
    Testbed::down().await.unwrap();
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout).to_string();
    assert!(
        !ns.lines()
            .any(|l| l.starts_with("n1") || l.starts_with("n2")),
        "{ns}"
    );
    assert!(Testbed::current().is_err());
}

#[tokio::test]
async fn unreachable_node_is_reported_by_name() {
    let mut cfg = SshConfig::new();
    cfg.port = 1; // nothing listens there
    cfg.control_dir = std::env::temp_dir().join(format!("hssh-u-{}", std::process::id()));
    let r = SshRemote::new(Node::new("db7", "127.0.0.1"), cfg);
    let e = r.connect().await.unwrap_err();
    let msg = e.to_string();
    let _ = std::fs::remove_dir_all(
        std::env::temp_dir().join(format!("hssh-u-{}", std::process::id())),
    );
    assert!(msg.starts_with("node db7: unreachable"), "{msg}");
}
