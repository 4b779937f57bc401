//! Database nodes as the control plane sees them.

/// A database node: a name used in histories and logs, and a host to reach it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Node {
    /// Name used in grudges, logs and run directories (e.g. `n1`).
    pub name: String,
    /// Hostname or IP address the harness connects to.
    pub host: String,
}

impl Node {
    /// The local machine, for single-node databases run by harness itself.
    pub fn local() -> Node {
        Node {
            name: "local".to_string(),
            host: "127.0.0.1".to_string(),
        }
    }
}
