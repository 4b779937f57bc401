//! How much memory a check may take, read from the machine: the smallest
//! of the memory available (`MemAvailable`), the address-space limit
//! (`ulimit -v`) and the cgroup's limit less what it uses, halved to leave
//! room for the history and everything else. `--memory` overrides it.

/// The bytes the linearizability search may take here, if the machine
/// says (`None`: nothing readable).
pub fn machine_memory() -> Option<u64> {
    let limits = [mem_available(), address_space_limit(), cgroup_left()];
    limits.into_iter().flatten().min().map(|b| b / 2)
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// `RLIMIT_AS` (what `ulimit -v` sets), bytes.
fn address_space_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, nothing else.
    #[allow(unsafe_code)]
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &raw mut r) } == 0;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
}

/// The cgroup v2 `memory.max` less `memory.current` of this process's
/// cgroup, bytes.
fn cgroup_left() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let current: u64 = read("memory.current")?.trim().parse().unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// `bytes` in GiB or MiB, for messages.
pub fn gib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
    } else {
        format!("{:.0} MiB", bytes as f64 / f64::from(1u32 << 20))
    }
}

/// Parses a size: bytes, or a number with K, M, G or T (powers of 1024;
/// `KiB`, `MB`, … read the same).
///
/// # Errors
/// Names the text and the forms accepted.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size: e.g. 4G, 512M, 1073741824"))?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (K, M, G or T)")),
    };
    let bytes = n * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("{s:?}: the size must be at least one byte"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_the_machine_has_some() {
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("4Q").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("0").is_err());
        assert!(machine_memory().is_some_and(|b| b > 0));
    }
}
