//! A Galera member's state as the server reports it, and the read of it.
//!
//! Key decision: the member count comes from the provider's view
//! (`wsrep_incoming_addresses`, one address per member of the node's
//! component), not from `wsrep_cluster_size`. MariaDB 10.11 keeps
//! `wsrep_cluster_size` and `wsrep_cluster_conf_id` in the server and sets
//! them when it logs a view; a member that rejoined by IST after a plain
//! restart can serve on with `wsrep_cluster_size` 0 (conf id −1), or 1
//! from a non-primary view, until the next view change, while the
//! provider lists every member (read back on a 3-node cluster: size 0 or
//! 1, incoming addresses 3, weight 3). CI's heal waited for that 0 to
//! become 3 until it gave up. The other way round too: after all three
//! members crashed on the lossy filesystem, one came back by SST and
//! served as `Primary / Synced` in a view of 3 members (the donor's log) with
//! `wsrep_cluster_size` 3 but two incoming addresses, for over two
//! minutes, and CI's heal gave up on that 2. Each count lags only low
//! (until the next view change), so a member counts the larger of the two
//! ([`WsrepStatus::members`]); both are kept, and the display names the
//! server's count and the addresses when the two differ.
//!
//! The read runs with `wsrep_sync_wait=0` ([`STATUS_SQL`]): a run's
//! `--db-conf wsrep_sync_wait=1` makes every SELECT wait for causality,
//! which a member outside the primary component refuses at once
//! (`ER_LOCK_WAIT_TIMEOUT`), so its state read as "no answer" and the
//! repair restarted a member that only had to wait.

/// The statement [`parse_status`] reads: `name<TAB>value` rows.
pub const STATUS_SQL: &str = "SET SESSION wsrep_sync_wait=0; \
     SELECT variable_name, variable_value FROM information_schema.global_status \
     WHERE variable_name IN ('WSREP_CLUSTER_SIZE','WSREP_CLUSTER_STATUS',\
     'WSREP_LOCAL_STATE_COMMENT','WSREP_READY','WSREP_INCOMING_ADDRESSES')";

/// A node's state as Galera reports it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WsrepStatus {
    /// Members of the node's component in the provider's view: the
    /// entries of `wsrep_incoming_addresses`.
    pub size: u32,
    /// `wsrep_cluster_size` as the server keeps it (can lag the provider:
    /// see the module header).
    pub server_size: u32,
    /// `wsrep_incoming_addresses` as read.
    pub addresses: String,
    /// `wsrep_cluster_status` (`Primary`, `non-Primary`, …).
    pub status: String,
    /// `wsrep_local_state_comment` (`Synced`, `Donor/Desynced`, …).
    pub state: String,
    /// `wsrep_ready`.
    pub ready: bool,
}

impl WsrepStatus {
    /// A status whose two member counts agree (tests and plans).
    pub fn new(size: u32, status: &str, state: &str, ready: bool) -> Self {
        WsrepStatus {
            size,
            server_size: size,
            addresses: String::new(),
            status: status.to_string(),
            state: state.to_string(),
            ready,
        }
    }

    /// Members of the node's component: the larger of the provider's and
    /// the server's counts, each of which can lag low (module header).
    pub fn members(&self) -> u32 {
        self.size.max(self.server_size)
    }

    /// Serving: in the primary component, synced and ready.
    pub fn serving(&self) -> bool {
        self.in_primary() && self.state == "Synced" && self.ready
    }

    /// In the primary component, serving or on its way there (a donor, a
    /// joiner catching up): a member the heal's repair must not restart.
    pub fn in_primary(&self) -> bool {
        self.status == "Primary"
    }
}

impl std::fmt::Display for WsrepStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} / {}, cluster size {}",
            self.status, self.state, self.size
        )?;
        if self.server_size != self.size {
            write!(
                f,
                " (the server's wsrep_cluster_size: {}; incoming addresses {:?})",
                self.server_size, self.addresses
            )?;
        }
        write!(f, ", ready {}", self.ready)
    }
}

/// Reads [`STATUS_SQL`]'s rows (`mariadb -N` output). An error names the
/// variable that is missing or unreadable; no value is assumed.
pub fn parse_status(out: &str) -> Result<WsrepStatus, String> {
    let mut vars: Vec<(String, &str)> = Vec::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let (name, value) = line
            .split_once('\t')
            .ok_or_else(|| format!("not a name and a value: {line:?}"))?;
        vars.push((name.trim().to_ascii_uppercase(), value.trim()));
    }
    let get = |name: &str| {
        vars.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("no {name} in {out:?}"))
    };
    let server_size = get("WSREP_CLUSTER_SIZE")?;
    let server_size = server_size
        .parse()
        .map_err(|_| format!("WSREP_CLUSTER_SIZE is {server_size:?}, not a count"))?;
    let addresses = get("WSREP_INCOMING_ADDRESSES")?;
    // One entry per member, `AUTO` for a member that set none (read back).
    let size = match addresses.trim() {
        "" => 0,
        list => list.split(',').count(),
    };
    Ok(WsrepStatus {
        size: u32::try_from(size).map_err(|_| format!("{size} incoming addresses"))?,
        server_size,
        addresses: addresses.trim().to_string(),
        status: get("WSREP_CLUSTER_STATUS")?.to_string(),
        state: get("WSREP_LOCAL_STATE_COMMENT")?.to_string(),
        ready: get("WSREP_READY")? == "ON",
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn rows(size: &str, status: &str, state: &str, ready: &str, addrs: &str) -> String {
        format!(
            "WSREP_CLUSTER_SIZE\t{size}\nWSREP_CLUSTER_STATUS\t{status}\n\
             WSREP_INCOMING_ADDRESSES\t{addrs}\nWSREP_LOCAL_STATE_COMMENT\t{state}\nWSREP_READY\t{ready}\n"
        )
    }

    #[test]
    fn a_member_back_by_ist_counts_the_providers_members_not_the_servers_zero() {
        // Read off MariaDB 10.11.19 + Galera 26.4: n1 killed, started
        // plainly, back by IST.
        let three = "10.99.0.11:3306,10.99.0.13:3306,10.99.0.12:3306";
        let s = parse_status(&rows("0", "Primary", "Synced", "ON", three)).unwrap();
        assert!(s.serving());
        assert_eq!((s.size, s.server_size, s.members()), (3, 0, 3));
        assert_eq!(
            s.to_string(),
            format!(
                "Primary / Synced, cluster size 3 (the server's wsrep_cluster_size: 0; \
                 incoming addresses {three:?}), ready true"
            )
        );
        let agree = parse_status(&rows("3", "Primary", "Synced", "ON", three)).unwrap();
        assert_eq!(
            agree.to_string(),
            "Primary / Synced, cluster size 3, ready true"
        );
        // A member without wsrep_node_incoming_address is listed as AUTO;
        // the server's count read 1 there (its last non-primary view).
        let auto = parse_status(&rows(
            "1",
            "Primary",
            "Synced",
            "ON",
            "10.99.0.11:3306,AUTO,10.99.0.12:3306",
        ));
        assert_eq!(auto.unwrap().size, 3);
    }

    #[test]
    fn a_member_back_by_sst_counts_the_servers_members_when_the_addresses_lag() {
        // CI, MariaDB 10.11.19 + Galera 26.4 on the lossy filesystem: all
        // three killed, n1 back by SST in a view of 3 members, serving,
        // with two incoming addresses for over two minutes.
        let two = "10.99.0.2:3306,10.99.0.3:3306";
        let s = parse_status(&rows("3", "Primary", "Synced", "ON", two)).unwrap();
        assert!(s.serving());
        assert_eq!((s.size, s.server_size, s.members()), (2, 3, 3));
        assert!(s.to_string().contains(two), "{s}");
    }

    #[test]
    fn a_member_outside_the_primary_component_reads_as_such() {
        let s = parse_status(&rows(
            "1",
            "non-Primary",
            "Initialized",
            "OFF",
            "10.99.0.11:3306",
        ))
        .unwrap();
        assert!(!s.in_primary() && !s.serving());
        assert_eq!(s.size, 1);
        let gone = parse_status(&rows("0", "Disconnected", "Initialized", "OFF", "")).unwrap();
        assert_eq!(gone.size, 0);
    }

    #[test]
    fn a_missing_or_unreadable_variable_is_an_error_naming_it() {
        let e = parse_status("WSREP_CLUSTER_SIZE\t3\n").unwrap_err();
        assert!(e.contains("WSREP_INCOMING_ADDRESSES"), "{e}");
        let e = parse_status(&rows("x", "Primary", "Synced", "ON", "a")).unwrap_err();
        assert!(e.contains("WSREP_CLUSTER_SIZE is \"x\""), "{e}");
        let e = parse_status("WSREP_READY ON\n").unwrap_err();
        assert!(e.contains("not a name and a value"), "{e}");
    }
}
