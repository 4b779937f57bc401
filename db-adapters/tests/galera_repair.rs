//! `await_ready` repairs a Galera member that does not come back by itself:
//! a node isolated at the group-communication level (`gmcast.isolate=1`:
//! running, answering queries, but out of the primary component for as long
//! as the setting stays) is restarted and rejoins. Needs what galera.rs needs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use db_adapters::db::{Db, connect_all, setup_with_retry};
use db_adapters::mysql::{MariaDb, MariaDbConfig};
use nemesis::remote::Remote;
use nemesis::testbed::{Testbed, TestbedLock};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pid of node `n`'s mariadbd.
async fn pid(r: &Arc<dyn Remote>, n: &str) -> String {
    r.run(&format!(
        "pgrep -f '^/usr/sbin/mariadbd --defaults-file=/var/lib/harness/mariadb/{n}/my.cnf'"
    ))
    .await
    .unwrap()
    .stdout_str()
    .trim()
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_stuck_outside_the_primary_component_is_restarted() {
    let _lock = TestbedLock::acquire().unwrap();
    let tb = Testbed::up(3).await.unwrap();
    let remotes: Vec<Arc<dyn Remote>> = tb.dyn_remotes();
    connect_all(&remotes).await.unwrap();
    let db = MariaDb::new(MariaDbConfig::new(true), remotes.clone());
    let result = async {
        setup_with_retry(&db, 2).await?;
        let n1 = db.nodes()[0].clone();
        let before = pid(&remotes[0], "n1").await;
        assert!(!before.is_empty(), "n1's mariadbd runs");
        remotes[0]
            .run(
                "mariadb --defaults-file=/var/lib/harness/mariadb/n1/my.cnf -uroot \
                 -e \"SET GLOBAL wsrep_provider_options='gmcast.isolate=1'\"",
            )
            .await?;
        // Out of the primary component, still running and answering.
        let mut isolated = None;
        for _ in 0..100 {
            let s = db.wsrep_status(&n1).await?;
            if s.status != "Primary" {
                isolated = Some(s);
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let isolated = isolated.expect("n1 left the primary component");
        eprintln!("n1 isolated: {isolated:?}");
        assert!(!isolated.serving());
        let t = Instant::now();
        db.await_ready(Duration::from_secs(90)).await?;
        eprintln!("serving again after {:?}", t.elapsed());
        for n in db.nodes() {
            let s = db.wsrep_status(&n).await?;
            assert!(s.serving() && s.size == 3, "{}: {s:?}", n.name);
        }
        let after = pid(&remotes[0], "n1").await;
        assert_ne!(before, after, "n1 was restarted");
        Ok::<(), db_adapters::db::DbError>(())
    }
    .await;
    let td = db.teardown().await;
    Testbed::down().await.unwrap();
    result.unwrap();
    td.unwrap();
}
