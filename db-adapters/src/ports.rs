//! Loopback ports for the throwaway servers harness starts on this machine
//! (`--local` PostgreSQL, the local etcd cluster): in the crate root
//! because both draw them.
//!
//! Key decision: a port is drawn *below* the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`, 32768–60999 by default) and
//! checked by binding it. Asking the kernel for port 0 hands out an
//! ephemeral port, and between releasing it and the server binding it any
//! outgoing connection on the machine may take it as its source port — with
//! many clients connecting at once (two test streams, a run's workers), a
//! server then fails to start. Below the range only another server picking
//! the same port can collide, which the bind check and a random draw make
//! unlikely.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

/// The lowest port drawn.
const LOW: u16 = 20_000;

/// The first port of the kernel's ephemeral range (32768 when unreadable).
fn ephemeral_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

/// A free TCP port on 127.0.0.1 outside the ephemeral range (see the
/// module doc).
///
/// # Errors
/// No port of the range could be bound after 200 draws, or the kernel's
/// own choice failed too.
pub fn free_port() -> std::io::Result<u16> {
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    let high = ephemeral_start().max(LOW + 100);
    let span = u64::from(high - LOW);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
        ^ (u64::from(std::process::id()) << 32);
    for _ in 0..200 {
        // splitmix64 of (seed, draw number): distinct per process and call.
        let mut z = seed.wrapping_add(
            DRAWS
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15),
        );
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let port = LOW + (z % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_bindable_below_the_ephemeral_range_and_vary() {
        let start = ephemeral_start();
        let ports: Vec<u16> = (0..50).map(|_| free_port().unwrap()).collect();
        for p in &ports {
            assert!((LOW..start).contains(p), "{p} outside {LOW}..{start}");
            assert!(TcpListener::bind(("127.0.0.1", *p)).is_ok(), "{p}");
        }
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(distinct.len() > 40, "{ports:?}");
    }

    #[test]
    fn a_taken_port_is_never_returned() {
        // Hold many ports of the range; none of them may come back.
        let held: Vec<TcpListener> = (0..100)
            .filter_map(|_| {
                let p = free_port().ok()?;
                TcpListener::bind(("127.0.0.1", p)).ok()
            })
            .collect();
        let taken: Vec<u16> = held
            .iter()
            .map(|l| l.local_addr().unwrap().port())
            .collect();
        for _ in 0..100 {
            let p = free_port().unwrap();
            assert!(!taken.contains(&p), "{p} is held");
        }
    }
}
