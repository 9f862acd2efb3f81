//! The CLI's Hub client: [`crate::hub::Loader`] driven by a minimal HTTP/1.1 client over `std::net`, so the
//! native build needs no HTTP or TLS crate. It speaks plain `http://` (a local mirror, the tests' fixture
//! server) and refuses `https://` with [`HubError::NeedsTls`] rather than pulling in a TLS stack: against the
//! real Hub, download config.json and use `--config`, or point `--hub-base` (or `HF_ENDPOINT`, as
//! huggingface_hub reads it) at an http mirror. Native only.
//!
//! HTTP/1.1 as used here (RFC 9112): one `GET` per connection (`Connection: close`), `Range` for byte ranges
//! (RFC 9110 §14), `Content-Length` or chunked bodies, redirects (301/302/303/307/308) followed up to 5 times.

use crate::hub::{self, HubError, HubId, HubModel, Request, Response, Version};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Loads `id` from `base` within `timeout` (the whole load, every request included).
pub fn load(base: &str, id: &HubId, timeout: Duration) -> Result<HubModel, HubError> {
    let deadline = Instant::now() + timeout;
    let seconds = timeout.as_secs().max(1) as u32;
    hub::load_with(id, |req| {
        let url = hub::file_url(base, id, hub::REVISION, &req.file);
        get(&url, req, deadline).map_err(|e| match e {
            Failure::Hub(e) => e,
            Failure::Late => HubError::Timeout { seconds },
        })
    })
}

/// `vramfit estimate --hub ID [--hub-base URL]`: loads the model from `base` (else `$HF_ENDPOINT`, else
/// [`hub::DEFAULT_BASE`]) within [`hub::TIMEOUT_MS`], says on stderr what was read, and returns its import
/// with its stored weights ([`hub::WeightSummary::stored`]) when the headers were read.
pub fn import(
    id: &str,
    base: Option<&str>,
) -> Result<
    (
        crate::catalog::import::Imported,
        Option<crate::model::weights::StoredCheckpoint>,
    ),
    String,
> {
    let endpoint = std::env::var("HF_ENDPOINT").ok();
    let base = base.or(endpoint.as_deref()).unwrap_or(hub::DEFAULT_BASE);
    let hub_id = hub::parse_id(id).map_err(|e| e.to_string())?;
    let timeout = Duration::from_millis(u64::from(hub::TIMEOUT_MS));
    let model = load(base, &hub_id, timeout).map_err(|e| format!("--hub {id}: {e}"))?;
    let imported = model.imported().map_err(|e| format!("--hub {id}: {e}"))?;
    eprintln!("vramfit: {}", describe(&model, &imported));
    Ok((imported, model.stored()))
}

/// One line on what a load read: commit, stored weights, parameters, quantization.
pub fn describe(model: &HubModel, imported: &crate::catalog::import::Imported) -> String {
    use crate::bytes::fmt_gib;
    let version = match &model.version {
        Some(v @ Version::Commit(_)) => format!("commit {}", v.short()),
        Some(v @ Version::Etag(_)) => format!("ETag {}", v.short()),
        None => "version not given".into(),
    };
    let mut out = format!("{} ({version})", model.id);
    match &model.weights {
        Ok(w) => {
            let exact = if w.complete() {
                "exact"
            } else {
                "from the index"
            };
            out.push_str(&format!(
                ": stored weights {} ({exact}; {}; {} tensors in {} of {} files)",
                fmt_gib(w.bytes as f64),
                hub::dtype_list(&w.by_dtype),
                w.tensors,
                w.files_read,
                w.files
            ));
            if let Some(p) = w.parameters {
                out.push_str(&format!(", {p} parameters"));
            }
        }
        Err(e) => out.push_str(&format!(": weights not read ({e})")),
    }
    if let Some(q) = &imported.quantization {
        let format = q.format.map_or("none", |f| f.id());
        let how = if q.approximate {
            "approximated as"
        } else {
            "as"
        };
        out.push_str(&format!("; quantization {} {how} {format}", q.method));
    }
    out
}

enum Failure {
    Hub(HubError),
    Late,
}

impl From<HubError> for Failure {
    fn from(e: HubError) -> Failure {
        Failure::Hub(e)
    }
}

fn io_failure(e: std::io::Error) -> Failure {
    use std::io::ErrorKind::*;
    match e.kind() {
        TimedOut | WouldBlock => Failure::Late,
        _ => Failure::Hub(HubError::Unreachable),
    }
}

/// `http://host[:port]/path` → (host, port, path).
fn split_url(url: &str) -> Result<(String, u16, String), HubError> {
    if url.starts_with("https://") {
        return Err(HubError::NeedsTls);
    }
    let rest = url.strip_prefix("http://").ok_or(HubError::Unreachable)?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().map_err(|_| HubError::Unreachable)?),
        None => (authority, 80),
    };
    if host.is_empty() {
        return Err(HubError::Unreachable);
    }
    let path = if path.is_empty() { "/" } else { path };
    Ok((host.to_string(), port, path.to_string()))
}

fn get(url: &str, req: &Request, deadline: Instant) -> Result<Response, Failure> {
    let mut url = url.to_string();
    for _ in 0..=5 {
        let (status, headers, mut reader) = send(&url, req, deadline)?;
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        if matches!(status, 301 | 302 | 303 | 307 | 308) {
            let location = header("location").ok_or(HubError::Http {
                file: req.file.clone(),
                status,
            })?;
            url = if location.starts_with('/') {
                let (host, port, _) = split_url(&url)?;
                format!("http://{host}:{port}{location}")
            } else {
                location
            };
            continue;
        }
        let version = header("x-repo-commit")
            .map(Version::Commit)
            .or_else(|| header("etag").map(Version::Etag));
        if !(200..300).contains(&status) {
            return Ok(Response {
                status,
                body: Vec::new(),
                version,
            });
        }
        let too_large = || {
            Failure::Hub(HubError::TooLarge {
                file: req.file.clone(),
                limit: req.max_bytes,
            })
        };
        let chunked = header("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        let body = if chunked {
            read_chunked(&mut reader, req.max_bytes).map_err(|e| match e {
                None => too_large(),
                Some(e) => io_failure(e),
            })?
        } else {
            let length = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
            if length.is_some_and(|n| n > req.max_bytes) {
                return Err(too_large());
            }
            let mut body = Vec::new();
            let cap = length.unwrap_or(req.max_bytes + 1).min(req.max_bytes + 1);
            (&mut reader)
                .take(cap)
                .read_to_end(&mut body)
                .map_err(io_failure)?;
            if body.len() as u64 > req.max_bytes {
                return Err(too_large());
            }
            body
        };
        return Ok(Response {
            status,
            body,
            version,
        });
    }
    Err(Failure::Hub(HubError::Http {
        file: req.file.clone(),
        status: 310,
    }))
}

type Head = (u16, Vec<(String, String)>, BufReader<TcpStream>);

/// Sends the request and reads the status line and headers.
fn send(url: &str, req: &Request, deadline: Instant) -> Result<Head, Failure> {
    let (host, port, path) = split_url(url)?;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or(Failure::Late)
    };
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|_| HubError::Unreachable)?
        .next()
        .ok_or(HubError::Unreachable)?;
    let stream = TcpStream::connect_timeout(&addr, left()?).map_err(io_failure)?;
    // Each read and write may take what is left of the whole load.
    stream.set_read_timeout(Some(left()?)).map_err(io_failure)?;
    stream
        .set_write_timeout(Some(left()?))
        .map_err(io_failure)?;
    let range = req
        .range_header()
        .map(|r| format!("Range: {r}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: vramfit/{}\r\nAccept: */*\r\n{range}Connection: close\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    );
    (&stream)
        .write_all(request.as_bytes())
        .map_err(io_failure)?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    let mut head_bytes = 0;
    let mut read_line = |reader: &mut BufReader<TcpStream>, line: &mut String| {
        line.clear();
        let n = reader
            .by_ref()
            .take(8192)
            .read_line(line)
            .map_err(io_failure)?;
        head_bytes += n;
        if n == 0 || head_bytes > 65_536 {
            return Err(Failure::Hub(HubError::Unreachable));
        }
        Ok(line.trim_end().to_string())
    };
    let status_line = read_line(&mut reader, &mut line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or(HubError::Unreachable)?;
    let mut headers = Vec::new();
    loop {
        let h = read_line(&mut reader, &mut line)?;
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok((status, headers, reader))
}

/// A chunked body (RFC 9112 §7.1), at most `max` bytes; `Err(None)` when it is longer.
fn read_chunked(reader: &mut impl BufRead, max: u64) -> Result<Vec<u8>, Option<std::io::Error>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.by_ref().take(1024).read_line(&mut size)?;
        let size = size.split(';').next().unwrap_or("").trim();
        let n = u64::from_str_radix(size, 16)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
        if n == 0 {
            return Ok(body);
        }
        if body.len() as u64 + n > max {
            return Err(None);
        }
        let mut chunk = vec![0; n as usize];
        reader.read_exact(&mut chunk)?;
        body.extend(chunk);
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_and_https_is_refused_clearly() {
        assert_eq!(
            split_url("http://127.0.0.1:8080/a/b").unwrap(),
            ("127.0.0.1".into(), 8080, "/a/b".into())
        );
        assert_eq!(
            split_url("http://example.org").unwrap(),
            ("example.org".into(), 80, "/".into())
        );
        assert_eq!(
            split_url("https://huggingface.co/x"),
            Err(HubError::NeedsTls)
        );
        assert!(split_url("ftp://x").is_err());
        let id = hub::parse_id("a/b").unwrap();
        assert_eq!(
            load("https://huggingface.co", &id, Duration::from_secs(1)),
            Err(HubError::NeedsTls)
        );
    }

    #[test]
    fn chunked_bodies_are_read_and_capped() {
        let mut r = &b"4\r\nWiki\r\n5;x=y\r\npedia\r\n0\r\n\r\n"[..];
        assert_eq!(read_chunked(&mut r, 100).unwrap(), b"Wikipedia");
        let mut r = &b"4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n"[..];
        assert!(matches!(read_chunked(&mut r, 6), Err(None)));
    }

    #[test]
    fn a_refused_connection_is_unreachable() {
        // Port 9 (discard) on loopback is closed on any sane test machine.
        let id = hub::parse_id("a/b").unwrap();
        assert_eq!(
            load("http://127.0.0.1:9", &id, Duration::from_secs(2)),
            Err(HubError::Unreachable)
        );
    }
}
