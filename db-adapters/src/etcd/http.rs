//! A minimal HTTP/1.1 client for etcd's v3 JSON gateway (`POST /v3/kv/txn`
//! etc.; etcd ≥ 3.4 serves it on every client URL): one connection per
//! request (`Connection: close`), the body read to EOF. Keys and values
//! travel base64-encoded, 64-bit integers as JSON strings (proto3 JSON).
//!
//! Error classification starts here: a failed connect is [`HttpError::Connect`]
//! (nothing was sent), anything after the request went out is
//! [`HttpError::AfterSend`] (the request may have been applied).

use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The connection could not be opened: the request was never sent.
    #[error("connect to {addr}: {detail}")]
    Connect {
        /// `host:port`.
        addr: String,
        /// The OS error.
        detail: String,
    },
    /// The request was (perhaps partly) sent and no complete answer came back.
    #[error("{0}")]
    AfterSend(String),
    /// The request timed out (after it may have been sent).
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// A complete answer that is not HTTP + JSON.
    #[error("malformed answer: {0}")]
    Malformed(String),
}

/// `POST path` with a JSON body to `addr`; the HTTP status and the JSON answer.
///
/// # Errors
/// [`HttpError`], classified by whether the request may have been sent.
pub async fn post_json(
    addr: &str,
    path: &str,
    body: &Value,
    timeout: Duration,
) -> Result<(u16, Value), HttpError> {
    let connect = tokio::time::timeout(timeout, TcpStream::connect(addr)).await;
    let mut stream = match connect {
        Err(_) => {
            return Err(HttpError::Connect {
                addr: addr.to_string(),
                detail: "connect timed out".to_string(),
            });
        }
        Ok(Err(e)) => {
            return Err(HttpError::Connect {
                addr: addr.to_string(),
                detail: e.to_string(),
            });
        }
        Ok(Ok(s)) => s,
    };
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let exchange = async {
        stream
            .write_all(req.as_bytes())
            .await
            .map_err(|e| HttpError::AfterSend(format!("write: {e}")))?;
        let mut buf = Vec::new();
        stream
            .read_to_end(&mut buf)
            .await
            .map_err(|e| HttpError::AfterSend(format!("read: {e}")))?;
        Ok::<_, HttpError>(buf)
    };
    let buf = tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| HttpError::Timeout(timeout))??;
    parse_response(&buf)
}

/// Splits an HTTP/1.1 response (status line, headers, body; plain or
/// chunked) and parses its body as JSON.
///
/// # Errors
/// [`HttpError::AfterSend`] for an empty answer (the server closed the
/// connection), [`HttpError::Malformed`] otherwise.
pub fn parse_response(buf: &[u8]) -> Result<(u16, Value), HttpError> {
    if buf.is_empty() {
        return Err(HttpError::AfterSend(
            "connection closed without an answer".into(),
        ));
    }
    let text = String::from_utf8_lossy(buf);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return Err(HttpError::AfterSend(format!("truncated answer: {text:?}")));
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| HttpError::Malformed(format!("status line of {head:?}")))?;
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"));
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_string()
    };
    let json =
        serde_json::from_str(&body).map_err(|e| HttpError::Malformed(format!("{e}: {body:?}")))?;
    Ok((status, json))
}

fn dechunk(mut body: &str) -> Result<String, HttpError> {
    let mut out = String::new();
    loop {
        let (size, rest) = body
            .split_once("\r\n")
            .ok_or_else(|| HttpError::AfterSend("truncated chunk".into()))?;
        let n = usize::from_str_radix(size.trim(), 16)
            .map_err(|e| HttpError::Malformed(format!("chunk size {size:?}: {e}")))?;
        if n == 0 {
            return Ok(out);
        }
        let chunk = rest
            .get(..n)
            .ok_or_else(|| HttpError::AfterSend("truncated chunk".into()))?;
        out.push_str(chunk);
        body = rest.get(n..).unwrap_or("").trim_start_matches("\r\n");
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (what proto3 JSON uses for `bytes`).
pub fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional); `None` on a bad character.
pub fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for ch in s.bytes().filter(|&b| b != b'=') {
        let v = B64.iter().position(|&c| c == ch)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((acc >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

/// A proto3-JSON 64-bit integer (a string, or a number; absent = 0).
pub fn json_i64(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn base64_round_trips_and_matches_known_values() {
        assert_eq!(b64_encode(b"foo"), "Zm9v");
        assert_eq!(b64_encode(b"fo"), "Zm8=");
        assert_eq!(b64_encode(b"f"), "Zg==");
        assert_eq!(b64_encode(b""), "");
        for s in [&b"harness/k17"[..], b"1,2,3", b"\x00\xff\x10"] {
            assert_eq!(b64_decode(&b64_encode(s)).unwrap(), s);
        }
        assert_eq!(b64_decode("a$b"), None);
    }

    #[test]
    fn responses_plain_chunked_and_truncated() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":\"5\"}";
        let (st, v) = parse_response(plain).unwrap();
        assert_eq!((st, json_i64(v.get("a"))), (200, 5));
        let chunked =
            b"HTTP/1.1 503 X\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"b\"\r\n3\r\n:1}\r\n0\r\n\r\n";
        let (st, v) = parse_response(chunked).unwrap();
        assert_eq!((st, json_i64(v.get("b"))), (503, 1));
        assert!(matches!(parse_response(b""), Err(HttpError::AfterSend(_))));
        assert!(matches!(
            parse_response(b"HTTP/1.1 200 OK\r\nX: y"),
            Err(HttpError::AfterSend(_))
        ));
        assert_eq!(json_i64(None), 0);
    }
}
