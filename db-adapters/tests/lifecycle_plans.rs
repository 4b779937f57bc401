//! The command plans of the CockroachDB, TiDB and YugabyteDB lifecycles
//! produce exactly the commands each database's documentation prescribes
//! (links next to each assertion). Pure: no nodes needed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use db_adapters::cluster::{Action, Tarball};
use db_adapters::cockroach::CockroachConfig;
use db_adapters::tidb::{Role, Roles, TidbConfig};
use db_adapters::yugabyte::YugabyteConfig;
use nemesis::Node;
use std::path::PathBuf;

fn nodes(n: usize) -> Vec<Node> {
    (1..=n)
        .map(|i| Node::new(format!("n{i}"), format!("10.0.0.{i}")))
        .collect()
}

fn tarball() -> Tarball {
    Tarball::Local(PathBuf::from("/tmp/release.tar.gz"))
}

/// The start commands of a plan, with the pid-file supervision stripped:
/// what runs is `setsid <cmdline> </dev/null …`.
fn started(plan: &db_adapters::cluster::Plan, node: &str) -> Vec<String> {
    plan.commands_on(node)
        .iter()
        .filter_map(|c| {
            let (_, rest) = c.split_once("setsid ")?;
            let (cmdline, _) = rest.split_once(" </dev/null")?;
            Some(cmdline.to_string())
        })
        .collect()
}

#[test]
fn cockroach_start_join_init_as_documented() {
    let ns = nodes(3);
    let cfg = CockroachConfig::new(tarball());
    let spec = cfg.spec(&ns);
    // https://www.cockroachlabs.com/docs/stable/deploy-cockroachdb-on-premises-insecure
    // step 2: `cockroach start --insecure --advertise-addr=<node> --join=<n1>,<n2>,<n3>
    // --cache=.25 --max-sql-memory=.25`, on every node.
    for (i, n) in ns.iter().enumerate() {
        let s = started(&spec.setup, &n.name);
        assert_eq!(
            s,
            vec![format!(
                "/var/lib/harness/cockroach/{name}/dist/cockroach start --insecure \
                 --listen-addr=10.0.0.{k}:26257 --advertise-addr=10.0.0.{k}:26257 \
                 --http-addr=10.0.0.{k}:8080 \
                 --join=10.0.0.1:26257,10.0.0.2:26257,10.0.0.3:26257 \
                 --store=path=/var/lib/harness/cockroach/{name}/data \
                 --cache=.25 --max-sql-memory=.25 --log-dir=/var/lib/harness/cockroach/{name}/logs",
                name = n.name,
                k = i + 1
            )]
        );
    }
    // step 3: `cockroach init --insecure --host=<address of any node>`, once.
    let inits: Vec<_> = spec
        .setup
        .steps
        .iter()
        .filter(|s| s.cmd().is_some_and(|c| c.contains(" init ")))
        .collect();
    assert_eq!(inits.len(), 1);
    assert_eq!(inits[0].node, "n1");
    assert_eq!(
        inits[0].cmd().unwrap(),
        "/var/lib/harness/cockroach/n1/dist/cockroach init --insecure --host=10.0.0.1:26257"
    );
    assert!(inits[0].attempts > 1, "init waits for the node to listen");
    // init comes after every start.
    let pos = |pred: &dyn Fn(&str) -> bool| {
        spec.setup
            .steps
            .iter()
            .rposition(|s| s.cmd().is_some_and(pred))
            .unwrap()
    };
    assert!(pos(&|c| c.contains("setsid")) < pos(&|c| c.contains(" init ")));
    // Install: copy the tarball, unpack once, check the binary.
    let n1 = spec.setup.commands_on("n1");
    assert_eq!(n1[0], "mkdir -p /var/lib/harness/cockroach/n1");
    assert_eq!(
        n1[1],
        "upload /tmp/release.tar.gz /var/lib/harness/cockroach/n1/release.tar.gz"
    );
    assert!(n1[2].contains("test -f /var/lib/harness/cockroach/n1/dist/.harness-unpacked ||"));
    assert!(n1[3].contains("test -x /var/lib/harness/cockroach/n1/dist/cockroach"));
    // Ready: `cockroach sql --insecure -e` on every node.
    assert_eq!(
        spec.ready.commands_on("n2"),
        vec![
            "/var/lib/harness/cockroach/n2/dist/cockroach sql --insecure --host=10.0.0.2:26257 -e 'SELECT 1'"
        ]
    );
    // Teardown kills by pid file and wipes data and logs, not the release.
    let td = spec.teardown_plan().commands_on("n3");
    assert!(
        td[0].contains("cat /var/lib/harness/cockroach/n3/cockroach.pid")
            && td[0].contains("kill -KILL $p")
    );
    assert!(td.contains(&"rm -rf /var/lib/harness/cockroach/n3/data".to_string()));
    assert!(
        !td.iter()
            .any(|c| c.starts_with("rm -rf") && c.contains("dist"))
    );
    // Logs.
    let logs: Vec<_> = spec
        .logs
        .iter()
        .filter(|(n, _)| n == "n1")
        .map(|(_, l)| l.local_name.clone())
        .collect();
    assert_eq!(
        logs,
        vec!["cockroach.log", "cockroach.stdout.log", "unpack.log"]
    );
    assert_eq!(spec.client_nodes, ns);
}

#[test]
fn tidb_roles_start_in_dependency_order_with_documented_flags() {
    let ns = nodes(5);
    let roles = Roles::parse("pd=n1,n2,n3; tikv=n1,n2,n3,n4; tidb=n5", &ns).unwrap();
    let cfg = TidbConfig::new(
        Tarball::Url("https://download.pingcap.org/tidb-v7.5.0-linux-amd64.tar.gz".into()),
        roles,
    );
    let spec = cfg.spec(&ns);
    // Start order: every pd-server, PD health, every tikv-server, every tidb-server.
    let order: Vec<String> = spec
        .setup
        .steps
        .iter()
        .filter(|s| s.what.starts_with("start ") || s.what == "pd ready")
        .map(|s| format!("{}@{}", s.what, s.node))
        .collect();
    assert_eq!(
        order,
        vec![
            "start pd-server@n1",
            "start pd-server@n2",
            "start pd-server@n3",
            "pd ready@n1",
            "pd ready@n2",
            "pd ready@n3",
            "start tikv-server@n1",
            "start tikv-server@n2",
            "start tikv-server@n3",
            "start tikv-server@n4",
            "start tidb-server@n5",
        ]
    );
    // https://docs.pingcap.com/tidb/stable/command-line-flags-for-pd-configuration
    let d = "/var/lib/harness/tidb/n2";
    assert_eq!(
        cfg.daemon(Role::Pd, &ns[1]).command_line(),
        format!(
            "{d}/dist/bin/pd-server --name=pd-n2 --data-dir={d}/pd \
             --client-urls=http://10.0.0.2:2379 --peer-urls=http://10.0.0.2:2380 \
             --advertise-client-urls=http://10.0.0.2:2379 --advertise-peer-urls=http://10.0.0.2:2380 \
             --initial-cluster=pd-n1=http://10.0.0.1:2380,pd-n2=http://10.0.0.2:2380,pd-n3=http://10.0.0.3:2380 \
             --log-file={d}/pd.log"
        )
    );
    // https://docs.pingcap.com/tidb/stable/command-line-flags-for-tikv-configuration
    assert_eq!(
        cfg.daemon(Role::Tikv, &ns[1]).command_line(),
        format!(
            "{d}/dist/bin/tikv-server --pd=10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 \
             --addr=10.0.0.2:20160 --advertise-addr=10.0.0.2:20160 --status-addr=10.0.0.2:20180 \
             --data-dir={d}/tikv --log-file={d}/tikv.log"
        )
    );
    // https://docs.pingcap.com/tidb/stable/command-line-flags-for-tidb-configuration
    let d5 = "/var/lib/harness/tidb/n5";
    assert_eq!(
        started(&spec.setup, "n5"),
        vec![format!(
            "{d5}/dist/bin/tidb-server --store=tikv --path=10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 \
             --host=10.0.0.5 -P 4000 --status=10080 --advertise-address=10.0.0.5 --log-file={d5}/tidb.log"
        )]
    );
    // Each node installs and checks only the binaries of its roles.
    let n5 = spec.setup.commands_on("n5");
    assert!(
        n5.iter()
            .any(|c| c.contains("test -x /var/lib/harness/tidb/n5/dist/bin/tidb-server"))
    );
    assert!(!n5.iter().any(|c| c.contains("pd-server")));
    assert!(n5[1].contains("curl -fsSL -o /var/lib/harness/tidb/n5/release.tar.gz https://download.pingcap.org/tidb-v7.5.0-linux-amd64.tar.gz"));
    // Clients go to tidb-server nodes; PD nodes are the primaries.
    assert_eq!(spec.client_nodes, vec![ns[4].clone()]);
    assert_eq!(spec.primaries, ns[..3].to_vec());
    // Kill order on a node with pd+tikv: tikv first (reverse start order).
    let td = spec.teardown_plan().commands_on("n1");
    assert!(
        td[0].contains("tikv.pid") && td[1].contains("pd.pid"),
        "{td:?}"
    );
    // Per-role faults.
    let p = db_adapters::tidb::role_signal_plan(&cfg, Role::Tikv, &ns[3], "STOP");
    assert!(
        p.commands_on("n4")[0].contains("tikv.pid")
            && p.commands_on("n4")[0].contains("kill -STOP $p")
    );
}

#[test]
fn tidb_roles_default_spread_and_parse_errors() {
    let ns = nodes(3);
    let r = Roles::spread(&ns);
    for role in Role::ALL {
        assert_eq!(r.nodes(role), ns.as_slice());
    }
    let e = Roles::parse("pd=n1;tikv=n9;tidb=n1", &ns).unwrap_err();
    assert!(e.contains("unknown node \"n9\""), "{e}");
    let e = Roles::parse("pd=n1;tikv=n1", &ns).unwrap_err();
    assert!(e.contains("role tidb has no nodes"), "{e}");
    let e = Roles::parse("pd=n1;pd=n2;tikv=n1;tidb=n1", &ns).unwrap_err();
    assert!(e.contains("given twice"), "{e}");
    let e = Roles::parse("ps=n1", &ns).unwrap_err();
    assert!(e.contains("unknown role \"ps\""), "{e}");
}

#[test]
fn yugabyte_masters_then_tservers_as_documented() {
    let ns = nodes(4);
    let mut cfg = YugabyteConfig::new(tarball());
    cfg.read_committed = true;
    let spec = cfg.spec(&ns);
    let masters = "10.0.0.1:7100,10.0.0.2:7100,10.0.0.3:7100";
    let d1 = "/var/lib/harness/yugabyte/n1";
    // https://docs.yugabyte.com/preview/deploy/manual-deployment/start-masters/
    // https://docs.yugabyte.com/preview/deploy/manual-deployment/start-tservers/
    assert_eq!(
        started(&spec.setup, "n1"),
        vec![
            format!(
                "{d1}/dist/bin/yb-master --master_addresses {masters} --rpc_bind_addresses 10.0.0.1:7100 \
                 --fs_data_dirs {d1}/data --replication_factor 3"
            ),
            format!(
                "{d1}/dist/bin/yb-tserver --tserver_master_addrs {masters} --rpc_bind_addresses 10.0.0.1:9100 \
                 --enable_ysql --pgsql_proxy_bind_address 10.0.0.1:5433 --cql_proxy_bind_address 10.0.0.1:9042 \
                 --fs_data_dirs {d1}/data --yb_enable_read_committed_isolation=true"
            ),
        ]
    );
    // n4 runs a tserver only.
    let s4 = started(&spec.setup, "n4");
    assert_eq!(s4.len(), 1);
    assert!(s4[0].contains("yb-tserver"));
    // Every master starts before any tserver.
    let whats: Vec<&str> = spec
        .setup
        .steps
        .iter()
        .filter(|s| s.what.starts_with("start "))
        .map(|s| s.what.as_str())
        .collect();
    assert_eq!(
        whats,
        vec!["start yb-master"; 3]
            .into_iter()
            .chain(vec!["start yb-tserver"; 4])
            .collect::<Vec<_>>()
    );
    // https://docs.yugabyte.com/preview/deploy/manual-deployment/install-software/ : post_install.sh once.
    assert!(
        spec.setup
            .commands_on("n2")
            .iter()
            .any(|c| c.contains("/var/lib/harness/yugabyte/n2/dist/bin/post_install.sh"))
    );
    // Ready: ysqlsh on every node.
    assert_eq!(
        spec.ready.commands_on("n3"),
        vec![
            "/var/lib/harness/yugabyte/n3/dist/bin/ysqlsh -h 10.0.0.3 -p 5433 -U yugabyte -c 'SELECT 1'"
        ]
    );
    assert_eq!(spec.primaries, ns[..3].to_vec());
    // Without READ COMMITTED the flag is absent; one node means one master with RF 1.
    let single = YugabyteConfig::new(tarball()).spec(&nodes(1));
    let s = started(&single.setup, "n1");
    assert!(s[0].ends_with("--replication_factor 1"), "{s:?}");
    assert!(!s[1].contains("read_committed"));
}

#[test]
fn uploads_are_steps_too() {
    let spec = CockroachConfig::new(tarball()).spec(&nodes(1));
    assert!(spec.setup.steps.iter().any(|s| matches!(&s.action, Action::Upload { local, .. } if local == &PathBuf::from("/tmp/release.tar.gz"))));
}
