//! `harness nemesis heal --nodes …|testbed`: manual recovery after a crashed
//! run — removes every partition rule harness wrote on the nodes (and only
//! those), and checks that none remains.

use crate::run_cmd::NodeArgs;
use engine::exit;
use nemesis::fault::Nemesis;

/// `harness nemesis` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum NemesisCommand {
    /// Removes harness's partition rules from every node.
    Heal {
        /// Nodes and SSH settings.
        #[command(flatten)]
        nodes: NodeArgs,
    },
}

/// Runs a nemesis subcommand.
///
/// # Errors
/// The runtime could not start.
pub fn run(cmd: NemesisCommand) -> anyhow::Result<u8> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match cmd {
            NemesisCommand::Heal { nodes } => {
                let nodes = nodes.to_spec();
                if !nodes.is_set() {
                    eprintln!("error: harness nemesis heal needs --nodes or --nodes-file");
                    return Ok(exit::ERROR);
                }
                let remotes = match nodes.connect().await {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("error: {e:#}");
                        return Ok(exit::SETUP_FAILED);
                    }
                };
                let n = Nemesis::new(remotes.clone(), None);
                if let Err(e) = n.heal_partitions().await {
                    eprintln!("error: {e}");
                    return Ok(exit::SETUP_FAILED);
                }
                let rules = n.harness_rules().await;
                for r in &remotes {
                    r.close().await;
                }
                match rules {
                    Ok(rules) => {
                        let left: usize = rules.values().map(Vec::len).sum();
                        for (node, lines) in &rules {
                            engine::say!("{node}: {} harness rules", lines.len());
                        }
                        Ok(if left == 0 {
                            exit::VALID
                        } else {
                            exit::SETUP_FAILED
                        })
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        Ok(exit::SETUP_FAILED)
                    }
                }
            }
        }
    })
}
