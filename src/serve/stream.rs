//! Response bodies made on blocking threads into bounded channels: a file
//! in [`CHUNK_BYTES`] pieces, a history converted op by op; the
//! [`ChannelWriter`] that `archive.rs` writes through too.

use super::{CHUNK_BYTES, CONVERSION_AHEAD_CHUNKS};
use axum::body::{Body, Bytes};
use std::io::Read;
use std::path::PathBuf;
use tokio::sync::OwnedSemaphorePermit;

/// A file streamed in [`CHUNK_BYTES`] pieces from a blocking thread (one
/// piece in flight; the thread ends when the client goes away).
pub(super) fn file_body(file: std::io::Take<std::fs::File>) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(1);
    tokio::task::spawn_blocking(move || {
        let mut file = file;
        loop {
            let mut buf = vec![0u8; CHUNK_BYTES];
            let item = match file.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => {
                    buf.truncate(n);
                    Ok(Bytes::from(buf))
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Err(e),
            };
            let failed = item.is_err();
            if tx.blocking_send(item).is_err() || failed {
                return;
            }
        }
    });
    stream_body(rx)
}

pub(super) fn stream_body(rx: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>) -> Body {
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }))
}

/// Sends what it is given to a channel in [`CHUNK_BYTES`] pieces; fails
/// (`BrokenPipe`) once the receiver is gone, which stops the conversion.
pub(super) struct ChannelWriter {
    pub(super) tx: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
    pub(super) buf: Vec<u8>,
}

impl ChannelWriter {
    fn send_buf(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx
            .blocking_send(Ok(Bytes::from(chunk)))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "client gone"))
    }
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.send_buf()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send_buf()
    }
}

/// `gz` converted to `format` op by op on a blocking thread that holds
/// `permit` until it ends (finished, failed, or the client went away). A
/// failure mid-way ends the body with an error, so the client sees a
/// broken transfer, never a silently short history.
pub(super) fn conversion_body(
    gz: PathBuf,
    format: store::Format,
    permit: OwnedSemaphorePermit,
) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel(CONVERSION_AHEAD_CHUNKS);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let err_tx = tx.clone();
        let run = || -> anyhow::Result<()> {
            let out = ChannelWriter {
                tx,
                buf: Vec::with_capacity(CHUNK_BYTES),
            };
            let mut w = store::format::OpWriter::new(out, format);
            for op in store::format::OpReader::open(&gz)? {
                w.write(&op?)?;
            }
            let mut out = w.finish()?;
            std::io::Write::flush(&mut out)?;
            Ok(())
        };
        if let Err(e) = run() {
            let _ = err_tx.blocking_send(Err(std::io::Error::other(format!("{e:#}"))));
        }
    });
    stream_body(rx)
}
