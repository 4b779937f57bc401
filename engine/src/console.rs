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

/// How a warning or error logged during a run reads on the terminal:
/// `warning: MESSAGE` (or `error: …`), like every other message harness
/// prints, not a log line with a timestamp, level and module path
/// (`harness.log` keeps those).
pub struct PlainWarnings;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainWarnings
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let what = if *event.metadata().level() == tracing::Level::ERROR {
            "error"
        } else {
            "warning"
        };
        write!(w, "{what}: ")?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
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

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn warnings_read_as_plain_messages_not_log_lines() {
        use tracing_subscriber::prelude::*;
        let buf = Buf::default();
        let out = buf.clone();
        let sub = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || out.clone())
                .with_ansi(false)
                .event_format(super::PlainWarnings),
        );
        tracing::subscriber::with_default(sub, || {
            tracing::warn!("the database took {} s to start", 3);
            tracing::error!(node = "n1", "kill failed");
        });
        let text = String::from_utf8_lossy(
            &buf.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
        .into_owned();
        assert_eq!(
            text,
            "warning: the database took 3 s to start\nerror: kill failed node=\"n1\"\n"
        );
    }
}
