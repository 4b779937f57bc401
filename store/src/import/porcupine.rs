//! Porcupine's Jepsen etcd logs (`test_data/jepsen/etcd_NNN.log`, from
//! ahorn/linearizability-checker): one client op per line,
//! `INFO  jepsen.util - <process>\t:<type>\t:<f>\t<value>`, values `nil`,
//! an integer, `[old new]` (cas) or `:timed-out` (a timed-out completion).
//!
//! Read as register ops of one unkeyed register, in line order (the log's
//! order is real time; there are no timestamps): `f` `read` / `write` /
//! `cas`, values as Jepsen writes them. A `:timed-out` completion keeps
//! its invocation's value and carries `error: :timed-out`; an `info` one
//! stays `info` (open: may have taken effect), a `fail` read stays `fail`.
//! Porcupine's kv files are Jepsen EDN maps and need no reader of their own.

use crate::Data;
use crate::format::FormatError;
use crate::history::{Extra, F, Op, OpIndex, OpType, OpValue, Process, ProcessId};
use std::collections::HashMap;
use std::path::Path;

/// The marker every line starts with (after `INFO` and spaces).
pub const MARKER: &[u8] = b"jepsen.util";

/// Whether `head` (a file's first bytes) looks like an etcd log.
pub fn sniff(head: &[u8]) -> bool {
    let head = head.trim_ascii_start();
    head.starts_with(b"INFO") && head.windows(MARKER.len()).take(64).any(|w| w == MARKER)
}

fn parse_value(s: &str) -> Result<Data, String> {
    let s = s.trim();
    if s == "nil" {
        return Ok(Data::Nil);
    }
    if let Some(k) = s.strip_prefix(':') {
        return Ok(Data::Keyword(k.to_string()));
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return inner
            .split_whitespace()
            .map(parse_value)
            .collect::<Result<Vec<_>, _>>()
            .map(Data::Vec);
    }
    s.parse::<i64>()
        .map(Data::Int)
        .map_err(|_| format!("cannot read value {s:?}"))
}

/// Reads an etcd log.
///
/// # Errors
/// A line that is not an op of this format (file, line, reason).
pub fn read(bytes: &[u8], path: Option<&Path>) -> Result<Vec<Op>, FormatError> {
    let text = String::from_utf8_lossy(bytes);
    let mut ops = Vec::new();
    let mut open: HashMap<u64, Data> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let err = |reason: String| FormatError {
            file: path.map(Path::to_path_buf),
            line: n as u64 + 1,
            column: None,
            op: None,
            reason,
        };
        if line.trim().is_empty() {
            continue;
        }
        let rest = line.split_once(" - ").map(|(_, r)| r).ok_or_else(|| {
            err("expected `INFO jepsen.util - <process> :<type> :<f> <value>`".into())
        })?;
        let mut parts = rest.split_whitespace();
        let (Some(p), Some(t), Some(f)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(err("expected `<process> :<type> :<f> <value>`".into()));
        };
        let value_text: Vec<&str> = parts.collect();
        let process: u64 = p
            .parse()
            .map_err(|_| err(format!("process {p:?} is not a number")))?;
        let op_type = match t {
            ":invoke" => OpType::Invoke,
            ":ok" => OpType::Ok,
            ":fail" => OpType::Fail,
            ":info" => OpType::Info,
            other => return Err(err(format!("unknown type {other:?}"))),
        };
        let f = f
            .strip_prefix(':')
            .ok_or_else(|| err(format!("function {f:?} is not a keyword")))?;
        let mut value = parse_value(&value_text.join(" ")).map_err(err)?;
        let mut error = None;
        if op_type == OpType::Invoke {
            open.insert(process, value.clone());
        } else {
            let invoked = open.remove(&process);
            if matches!(&value, Data::Keyword(k) if k == "timed-out") {
                error = Some(Box::new(value));
                value = invoked.unwrap_or(Data::Nil);
            }
        }
        ops.push(Op {
            index: OpIndex(ops.len() as u64),
            time_ns: None,
            op_type,
            process: Some(Process::Client(ProcessId(process))),
            f: Some(F::parse(f)),
            value: OpValue::Data(Box::new(value)),
            error,
            extra: Extra::new(),
        });
    }
    Ok(ops)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_line_kind() {
        let log = "INFO  jepsen.util - 1\t:invoke\t:cas\t[1 4]\n\
                   INFO  jepsen.util - 2\t:invoke\t:read\tnil\n\
                   INFO  jepsen.util - 1\t:fail\t:cas\t[1 4]\n\
                   INFO  jepsen.util - 2\t:fail\t:read\t:timed-out\n\
                   INFO  jepsen.util - 3\t:invoke\t:write\t2\n\
                   INFO  jepsen.util - 3\t:info\t:write\t:timed-out\n";
        assert!(sniff(log.as_bytes()));
        let ops = read(log.as_bytes(), None).unwrap();
        assert_eq!(ops.len(), 6);
        assert_eq!(ops[0].f.as_ref().unwrap().as_str(), "cas");
        assert_eq!(ops[2].op_type, OpType::Fail);
        assert!(ops[3].error.is_some());
        assert_eq!(ops[5].op_type, OpType::Info);
        assert_eq!(ops[5].value, OpValue::Data(Box::new(Data::Int(2))));
        assert!(read(b"INFO  jepsen.util - x\t:ok\t:read\t1\n", None).is_err());
    }
}
