//! The history log the runner (client ops) and the nemesis task share,
//! through a mutex: nemesis ops land in the same `history.jsonl` as client
//! ops, in the order they happened.

use super::*;

/// The history log shared by the runner (client ops) and the nemesis task.
#[derive(Clone)]
pub struct SharedLog {
    inner: Arc<Mutex<Option<store::run::HistoryLog>>>,
    started: Instant,
}

impl SharedLog {
    /// Shares `log`; nemesis op times count from now.
    pub fn new(log: store::run::HistoryLog) -> SharedLog {
        SharedLog {
            inner: Arc::new(Mutex::new(Some(log))),
            started: Instant::now(),
        }
    }

    /// Closes the log (later appends fail).
    ///
    /// # Errors
    /// The final sync failed, or the log was already closed.
    pub fn finish(self) -> anyhow::Result<()> {
        let log = self.inner.lock().unwrap_or_else(|p| p.into_inner()).take();
        match log {
            Some(l) => Ok(l.finish()?),
            None => anyhow::bail!("history log already closed"),
        }
    }

    fn with_log<T>(
        &self,
        f: impl FnOnce(&mut store::run::HistoryLog) -> Result<T, store::RunError>,
    ) -> anyhow::Result<T> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        match g.as_mut() {
            Some(l) => Ok(f(l)?),
            None => anyhow::bail!("history log already closed"),
        }
    }

    /// Appends and writes at once (the nemesis task's ops; lines the runner
    /// buffered before it are written with it, in index order).
    fn append_op(&self, op: Op) -> anyhow::Result<OpIndex> {
        self.with_log(|l| l.append(op))
    }
}

impl HistorySink for store::run::HistoryLog {
    fn append(&mut self, op: store::Op) -> anyhow::Result<OpIndex> {
        Ok(self.push(op)?)
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        Ok(store::run::HistoryLog::flush(self)?)
    }
}

impl HistorySink for SharedLog {
    fn append(&mut self, op: Op) -> anyhow::Result<OpIndex> {
        self.with_log(|l| l.push(op))
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.with_log(store::run::HistoryLog::flush)
    }
}

impl Recorder for SharedLog {
    fn record(&self, op_type: OpType, f: F, value: Data, error: Option<String>) {
        // harness.log tells the fault story too: what each nemesis op did.
        if op_type != OpType::Invoke {
            let mut text = String::new();
            crate::report::spans::data_text(&value, &mut text, 300);
            match &error {
                Some(e) => tracing::info!(
                    "nemesis {} {}: {text}; error: {e}",
                    f.as_str(),
                    op_type.as_str()
                ),
                None => tracing::info!("nemesis {} {}: {text}", f.as_str(), op_type.as_str()),
            }
        }
        let op = Op {
            index: OpIndex(0),
            time_ns: Some(i64::try_from(self.started.elapsed().as_nanos()).unwrap_or(i64::MAX)),
            op_type,
            process: Some(Process::Nemesis),
            f: Some(f),
            value: OpValue::Data(Box::new(value)),
            error: error.map(|e| Box::new(Data::Str(e))),
            extra: store::Extra::new(),
        };
        if let Err(e) = self.append_op(op) {
            tracing::error!("writing a nemesis op: {e}");
        }
    }
}
