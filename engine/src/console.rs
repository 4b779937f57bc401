//! Console output that outlives its reader.
//!
//! Key decision: `harness run … | head` must not panic (`println!` does on
//! a closed stdout) and must not stop a run half way: what a run records,
//! heals and reports does not depend on anyone reading its console. So
//! every line the commands print to stdout goes through [`say!`], which
//! drops what a closed stdout cannot take. (`check` and `history`, which
//! only read files and print, end quietly on SIGPIPE instead.)

/// `println!` that ignores a write error on stdout (a closed pipe).
#[macro_export]
macro_rules! say {
    () => {
        $crate::say!("")
    };
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `print!` that ignores a write error on stdout (a closed pipe).
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `n` with a comma every three digits.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
