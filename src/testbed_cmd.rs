//! `harness testbed up [--nodes 3] | down | status`: the local testbed of
//! network-namespace nodes with sshd (see `nemesis::testbed`).

use engine::exit;
use nemesis::testbed::Testbed;
use std::time::Instant;

/// `harness testbed` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TestbedCommand {
    /// Brings up N nodes n1…nN at 10.99.0.1…N (idempotent: a healthy
    /// testbed of that size is kept).
    Up {
        /// Number of nodes.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
    },
    /// Tears the testbed down (idempotent; also removes a partial one).
    Down,
    /// Shows each node's namespace, process and SSH health (exit 0 when all
    /// are healthy, 4 otherwise).
    Status,
}

/// Runs a testbed subcommand.
///
/// # Errors
/// The runtime could not start.
pub fn run(cmd: TestbedCommand) -> anyhow::Result<u8> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match cmd {
            TestbedCommand::Up { nodes } => {
                let t = Instant::now();
                match Testbed::up(nodes).await {
                    Ok(tb) => {
                        for n in &tb.nodes {
                            engine::say!("{} {}", n.name, n.host);
                        }
                        engine::say!(
                            "testbed up: {} nodes in {:.2} s (ssh key {})",
                            tb.nodes.len(),
                            t.elapsed().as_secs_f64(),
                            tb.dir.join("ssh/id_ed25519").display()
                        );
                        Ok(exit::VALID)
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        Ok(exit::SETUP_FAILED)
                    }
                }
            }
            TestbedCommand::Down => {
                let t = Instant::now();
                match Testbed::down().await {
                    Ok(()) => {
                        engine::say!("testbed down in {:.2} s", t.elapsed().as_secs_f64());
                        Ok(exit::VALID)
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        Ok(exit::SETUP_FAILED)
                    }
                }
            }
            TestbedCommand::Status => match Testbed::current() {
                Err(e) => {
                    engine::say!("{e}");
                    Ok(exit::SETUP_FAILED)
                }
                Ok(tb) => {
                    let st = tb.status().await;
                    let mut healthy = true;
                    for s in &st {
                        let ok = s.netns && s.running && s.ssh;
                        healthy &= ok;
                        engine::say!(
                            "{} {} netns={} running={} ssh={} {}",
                            s.node.name,
                            s.node.host,
                            s.netns,
                            s.running,
                            s.ssh,
                            if ok { "ok" } else { "BROKEN" }
                        );
                    }
                    Ok(if healthy {
                        exit::VALID
                    } else {
                        exit::SETUP_FAILED
                    })
                }
            },
        }
    })
}
