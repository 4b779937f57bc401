//! What one node's PostgreSQL says of itself ([`PgRole`]) and when a
//! Patroni cluster serves ([`serving`]): one primary, and replicas
//! streaming from it.

/// What one node's PostgreSQL says of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgRole {
    /// Out of recovery: a primary.
    pub primary: bool,
    /// Replicas streaming from it.
    pub streaming: u32,
    /// Of those, synchronous standbys.
    pub sync: u32,
}

impl PgRole {
    /// Parses `false,2,1` (`pg_is_in_recovery`, streaming, sync; `f`/`t`
    /// also read).
    pub fn parse(s: &str) -> Option<PgRole> {
        let mut it = s.trim().split(',');
        let primary = match it.next()? {
            "f" | "false" => true,
            "t" | "true" => false,
            _ => return None,
        };
        let streaming = it.next()?.parse().ok()?;
        let sync = it.next()?.parse().ok()?;
        Some(PgRole {
            primary,
            streaming,
            sync,
        })
    }
}

/// Whether the roles seen (one per node, `None`: not answering) are a
/// serving cluster: exactly one primary, with `streaming` replicas at least
/// and, when `sync`, a synchronous standby. Returns the primary's index.
pub fn serving(roles: &[Option<PgRole>], streaming: u32, sync: bool) -> Option<usize> {
    let primaries: Vec<usize> = roles
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_some_and(|r| r.primary))
        .map(|(i, _)| i)
        .collect();
    let [p] = primaries.as_slice() else {
        return None;
    };
    let r = roles.get(*p).copied().flatten()?;
    (r.streaming >= streaming && (!sync || r.sync >= 1)).then_some(*p)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn roles_parse_and_serving_needs_one_primary() {
        let p = PgRole::parse("f,2,1\n").unwrap();
        assert_eq!(
            p,
            PgRole {
                primary: true,
                streaming: 2,
                sync: 1
            }
        );
        // `pg_is_in_recovery()::text` spells it out.
        assert_eq!(PgRole::parse("false,2,1"), Some(p));
        let r = PgRole::parse("t,0,0").unwrap();
        assert!(!r.primary);
        assert_eq!(PgRole::parse("x,1,1"), None);
        assert_eq!(PgRole::parse("f,1"), None);
        assert_eq!(serving(&[Some(r), Some(p), None], 2, true), Some(1));
        // Two primaries (split brain) is not serving.
        assert_eq!(serving(&[Some(p), Some(p), Some(r)], 0, false), None);
        assert_eq!(serving(&[Some(r), None, Some(r)], 0, false), None);
        let async_p = PgRole::parse("f,1,0").unwrap();
        assert_eq!(serving(&[Some(async_p), Some(r), None], 2, false), None);
        assert_eq!(serving(&[Some(async_p), Some(r), None], 1, false), Some(0));
        assert_eq!(serving(&[Some(async_p), Some(r), None], 1, true), None);
    }
}
