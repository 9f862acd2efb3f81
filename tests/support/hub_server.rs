//! A static file server that plays the Hugging Face Hub for tests: `tests/data/hub/{owner}/{name}/{file}`
//! answers `GET /{owner}/{name}/resolve/{revision}/{file}`, with `Range: bytes=a-b` (206 +
//! `Content-Range`, as the Hub's storage does), CORS for the browser tests (any origin, `Range` allowed,
//! `X-Repo-Commit`/`ETag`/`Content-Range` exposed), and the per-repository `_status`, `_delay_ms` and
//! `_commit` files of `tests/data/hub/README.md`. One thread per connection, `Connection: close`, 127.0.0.1
//! only. Used in-process by `tests/hub.rs` and as a process by `scripts/wasm-run` (`examples/hub_server.rs`).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Binds 127.0.0.1 on `port` (0: any free one), serves `root` from a background thread; returns the port.
pub fn start(root: PathBuf, port: u16) -> std::io::Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let _ = answer(&root, stream);
            });
        }
    });
    Ok(port)
}

fn answer(root: &Path, mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let mut range = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("range") {
                range = parse_range(v.trim());
            }
        }
    }
    let cors = "Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Headers: Range\r\n\
                Access-Control-Expose-Headers: X-Repo-Commit, ETag, Content-Range, Content-Length, X-Error-Code\r\n";
    if method == "OPTIONS" {
        let head = format!("HTTP/1.1 204 No Content\r\n{cors}Access-Control-Allow-Methods: GET\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return stream.write_all(head.as_bytes());
    }
    let path = target.split('?').next().unwrap_or("");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // owner / name / resolve / revision / file
    let (repo, file) = match segments.as_slice() {
        [owner, name, "resolve", _rev, file]
            if [owner, name, file]
                .iter()
                .all(|s| !s.starts_with('.') && !s.contains('\\')) =>
        {
            (root.join(owner).join(name), *file)
        }
        _ => return reply(&mut stream, cors, 404, "", b"not found"),
    };
    let read = |f: &str| std::fs::read_to_string(repo.join(f)).ok();
    if let Some(ms) = read("_delay_ms").and_then(|s| s.trim().parse().ok()) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    if let Some(status) = read("_status").and_then(|s| s.trim().parse().ok()) {
        let body = br#"{"error":"Access to this model is restricted."}"#;
        return reply(
            &mut stream,
            cors,
            status,
            "X-Error-Code: GatedRepo\r\n",
            body,
        );
    }
    let Ok(bytes) = std::fs::read(repo.join(file))
        .map_err(|_| ())
        .and_then(|b| {
            if file.starts_with('_') {
                Err(())
            } else {
                Ok(b)
            }
        })
    else {
        let body = br#"{"error":"Entry not found"}"#;
        return reply(
            &mut stream,
            cors,
            404,
            "X-Error-Code: EntryNotFound\r\n",
            body,
        );
    };
    let mut extra = format!("ETag: \"{:016x}\"\r\n", fnv(&bytes));
    if let Some(commit) = read("_commit") {
        extra.push_str(&format!("X-Repo-Commit: {}\r\n", commit.trim()));
    }
    match range {
        None => reply(&mut stream, cors, 200, &extra, &bytes),
        Some((a, b)) if (a as usize) < bytes.len() => {
            let end = (b as usize).min(bytes.len() - 1);
            extra.push_str(&format!(
                "Content-Range: bytes {a}-{end}/{}\r\n",
                bytes.len()
            ));
            reply(&mut stream, cors, 206, &extra, &bytes[a as usize..=end])
        }
        Some(_) => {
            extra.push_str(&format!("Content-Range: bytes */{}\r\n", bytes.len()));
            reply(&mut stream, cors, 416, &extra, b"")
        }
    }
}

/// `bytes=a-b` (one range; `bytes=a-` to the end).
fn parse_range(v: &str) -> Option<(u64, u64)> {
    let (a, b) = v.strip_prefix("bytes=")?.split_once('-')?;
    let a = a.trim().parse().ok()?;
    let b = if b.trim().is_empty() {
        u64::MAX
    } else {
        b.trim().parse().ok()?
    };
    (a <= b).then_some((a, b))
}

fn reply(
    stream: &mut TcpStream,
    cors: &str,
    status: u16,
    extra: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        206 => "Partial Content",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        416 => "Range Not Satisfiable",
        _ => "Status",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\n{cors}{extra}Content-Length: {}\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// FNV-1a, for ETags.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}
