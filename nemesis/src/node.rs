//! Database nodes as the control plane sees them, and parsing of node lists
//! (`--nodes n1,n2,…`, `--nodes-file`).

use std::fmt;

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

    /// A node called `name` reached at `host`.
    pub fn new(name: impl Into<String>, host: impl Into<String>) -> Node {
        Node {
            name: name.into(),
            host: host.into(),
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A malformed node list.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeListError {
    /// An entry is empty or has characters a host name cannot have.
    #[error("{source_name} entry {position}: invalid node {entry:?}: {reason}")]
    Invalid {
        /// Where the list came from (`--nodes`, a file name).
        source_name: String,
        /// 1-based position (entry number or line number).
        position: usize,
        /// The entry as written.
        entry: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The same node name twice.
    #[error("{source_name} entry {position}: node {name:?} is listed twice")]
    Duplicate {
        /// Where the list came from.
        source_name: String,
        /// 1-based position of the second occurrence.
        position: usize,
        /// The repeated name.
        name: String,
    },
    /// No node at all.
    #[error("{source_name}: no nodes given")]
    Empty {
        /// Where the list came from.
        source_name: String,
    },
}

fn parse_entry(source_name: &str, position: usize, entry: &str) -> Result<Node, NodeListError> {
    let invalid = |reason| NodeListError::Invalid {
        source_name: source_name.to_string(),
        position,
        entry: entry.to_string(),
        reason,
    };
    let (name, host) = match entry.split_once('=') {
        Some((n, h)) => (n.trim(), h.trim()),
        None => (entry, entry),
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
    };
    if !ok(name) {
        return Err(invalid(
            "a name may hold only letters, digits, '.', '-', '_', ':'",
        ));
    }
    if !ok(host) {
        return Err(invalid(
            "a host may hold only letters, digits, '.', '-', '_', ':'",
        ));
    }
    Ok(Node::new(name, host))
}

fn finish(source_name: &str, nodes: Vec<(usize, Node)>) -> Result<Vec<Node>, NodeListError> {
    if nodes.is_empty() {
        return Err(NodeListError::Empty {
            source_name: source_name.to_string(),
        });
    }
    let mut out: Vec<Node> = Vec::with_capacity(nodes.len());
    for (position, n) in nodes {
        if out.iter().any(|o| o.name == n.name) {
            return Err(NodeListError::Duplicate {
                source_name: source_name.to_string(),
                position,
                name: n.name,
            });
        }
        out.push(n);
    }
    Ok(out)
}

/// Parses `n1,n2,…`; an entry is `host` (named after itself) or `name=host`.
///
/// # Errors
/// [`NodeListError`] naming the entry.
pub fn parse_node_list(list: &str) -> Result<Vec<Node>, NodeListError> {
    let mut nodes = Vec::new();
    for (i, entry) in list.split(',').enumerate() {
        nodes.push((i + 1, parse_entry("--nodes", i + 1, entry.trim())?));
    }
    finish("--nodes", nodes)
}

/// Parses a nodes file: one node per line (`host` or `name=host`); blank
/// lines and `#` comments are skipped.
///
/// # Errors
/// [`NodeListError`] naming the file and line.
pub fn parse_nodes_file(file_name: &str, text: &str) -> Result<Vec<Node>, NodeListError> {
    let mut nodes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        nodes.push((i + 1, parse_entry(file_name, i + 1, line)?));
    }
    finish(file_name, nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_and_errors_name_the_entry() {
        let nodes = parse_node_list("n1, db2=10.0.0.2").unwrap_or_default();
        assert_eq!(
            nodes,
            vec![Node::new("n1", "n1"), Node::new("db2", "10.0.0.2")]
        );
        let e = parse_node_list("n1,,n3").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "--nodes entry 2: invalid node \"\": a name may hold only letters, digits, '.', '-', '_', ':'"
            )
        );
        let e = parse_node_list("n1,n1").err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("--nodes entry 2: node \"n1\" is listed twice")
        );
        let f = parse_nodes_file("nodes.txt", "# c\nn1\n\nn2 # x\nbad host\n");
        assert_eq!(
            f.err().map(|e| e.to_string()).as_deref(),
            Some(
                "nodes.txt entry 5: invalid node \"bad host\": a name may hold only letters, digits, '.', '-', '_', ':'"
            )
        );
    }
}
