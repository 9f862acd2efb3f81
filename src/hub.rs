//! A Hugging Face Hub model id → its `config.json` and the exact size and data types of its stored weights,
//! read from the safetensors headers (never the weights themselves). Pure: no I/O and no browser crate.
//! [`Loader`] names the files and byte ranges to fetch, round by round, and reads what comes back, so the
//! page (`web::hub`, the browser's `fetch`) and the CLI (`hub_client`, plain HTTP/1.1) run the same code.
//!
//! Sources (facts, not code):
//! - file layout `{base}/{owner}/{name}/resolve/{revision}/{file}`, the `X-Repo-Commit` response header, and
//!   what 401 means without a token (a private or gated repo, or one that does not exist) next to 403:
//!   huggingface_hub `constants.py` (`HUGGINGFACE_HEADER_X_REPO_COMMIT`, `SAFETENSORS_SINGLE_FILE`,
//!   `SAFETENSORS_INDEX_FILE`) and `utils/_http.py` (`hf_raise_for_status`);
//! - repo id rules (letters, digits, `-`, `_`, `.`; name 1–96 characters; no `--` or `..`; not ending in
//!   `.git`): huggingface_hub `utils/_validators.py` (`REPO_ID_REGEX`, `validate_repo_id`);
//! - the safetensors format: 8 bytes little-endian `N`, then an `N`-byte JSON header
//!   `{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}` whose offsets
//!   index the byte buffer without holes, headers capped at 100,000,000 bytes, and the dtype names with their
//!   bit widths: huggingface/safetensors `README.md` ("Format") and `safetensors/src/tensor.rs`
//!   (`MAX_HEADER_SIZE`, `Dtype`, `Dtype::bitsize`);
//! - sharded checkpoints: `model.safetensors.index.json` = `{"metadata": {"total_size": bytes,
//!   "total_parameters": n (newer transformers)}, "weight_map": {tensor: file}}`, written by transformers
//!   `PreTrainedModel.save_pretrained`;
//! - Python's `json` module reads the non-standard literals `NaN`, `Infinity` and `-Infinity` (Python docs,
//!   `json` "Infinite and NaN Number Values"), which transformers writes into some configs (Mamba-2 style
//!   `time_step_limit: [0.0, Infinity]`): [`python_json`].

use crate::catalog::import::{self, ImportError, Imported};
use crate::model::weights::StoredCheckpoint;
use crate::model::WeightFormat;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::rc::Rc;

/// Where the page and the CLI fetch from (huggingface_hub's default `ENDPOINT`).
pub const DEFAULT_BASE: &str = "https://huggingface.co";
/// The revision fetched: the default branch.
pub const REVISION: &str = "main";
/// How long a whole load may take before the page gives up and says so.
pub const TIMEOUT_MS: u32 = 10_000;
/// The model's configuration.
pub const CONFIG_FILE: &str = "config.json";
/// The shard index of a sharded checkpoint.
pub const INDEX_FILE: &str = "model.safetensors.index.json";
/// The weights of an unsharded checkpoint.
pub const SINGLE_FILE: &str = "model.safetensors";
/// Largest safetensors header read: the format's own cap (`MAX_HEADER_SIZE` in the safetensors crate). A
/// larger declared length is refused before anything is requested or allocated.
pub const MAX_HEADER_BYTES: u64 = 100_000_000;
/// Largest shard index read (DeepSeek-V3's, with ~90k tensors in 163 files, is about 9 MB).
pub const MAX_INDEX_BYTES: u64 = 16 << 20;
/// Largest config.json read (the importer's own limit).
pub const MAX_CONFIG_BYTES: u64 = import::MAX_CONFIG_BYTES as u64;
/// Shard headers read at most; beyond them the index's `total_size` gives the bytes and the headers read give
/// the mix of data types.
pub const MAX_SHARD_HEADERS: usize = 32;

/// A model repository id, `owner/name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HubId {
    owner: String,
    name: String,
}

impl fmt::Display for HubId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// One part of an id: ASCII letters, digits, `-`, `_`, `.`, starting and ending with a letter, digit or `_`,
/// without `--` or `..` (huggingface_hub `validate_repo_id`).
fn valid_part(s: &str, max: usize) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter().all(|&c| word(c) || c == b'-' || c == b'.')
        && word(b[0])
        && word(b[b.len() - 1])
        && !s.contains("--")
        && !s.contains("..")
}

/// Reads `owner/name`, or a model page address (`https://huggingface.co/owner/name`, with or without the
/// scheme, `www.` or `hf.co`, and with any `/tree/…`, `/blob/…`, `?…` or `#…` after it).
pub fn parse_id(input: &str) -> Result<HubId, HubError> {
    let bad = || HubError::BadId(input.chars().take(80).collect());
    let s = input.trim();
    let s = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .unwrap_or(s);
    let (s, is_url) = match ["huggingface.co/", "www.huggingface.co/", "hf.co/"]
        .iter()
        .find_map(|host| s.strip_prefix(host))
    {
        Some(rest) => (rest, true),
        None => (s, false),
    };
    let s = s.split(['?', '#']).next().unwrap_or("");
    let mut parts = s.split('/');
    let (owner, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let rest: Vec<&str> = parts.filter(|p| !p.is_empty()).collect();
    // A page address may go on (`/tree/main`, `/blob/main/config.json`); a bare id may not.
    if !is_url && !rest.is_empty() {
        return Err(bad());
    }
    if matches!(owner, "datasets" | "spaces" | "models" | "api")
        || !valid_part(owner, 96)
        || !valid_part(name, 96)
        || name.ends_with(".git")
    {
        return Err(bad());
    }
    Ok(HubId {
        owner: owner.to_string(),
        name: name.to_string(),
    })
}

/// The address of one file of a repository at a revision.
pub fn file_url(base: &str, id: &HubId, revision: &str, file: &str) -> String {
    format!(
        "{}/{}/resolve/{revision}/{file}",
        base.trim_end_matches('/'),
        id
    )
}

/// Why a model could not be loaded (or, in [`HubModel::weights`], why its weights could not be read). Stored
/// (in the cache of loaded models) as one flat record, [`StoredError`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "StoredError", try_from = "StoredError")]
pub enum HubError {
    /// The text is not a model id or model address.
    BadId(String),
    /// 401 (private, gated or missing, when no token is sent) or 403 (gated, access not granted).
    Gated { id: String, status: u16 },
    /// 404 for a file that must exist.
    NotFound { id: String, file: String },
    /// Any other HTTP status.
    Http { file: String, status: u16 },
    /// No answer at all: offline, blocked (CORS, an extension) or a refused connection.
    Unreachable,
    /// The whole load took longer than its limit.
    Timeout { seconds: u32 },
    /// `https://` asked of a client without TLS (the native CLI).
    NeedsTls,
    /// config.json is not a config the importer can read.
    BadConfig(String),
    /// A file is larger than what is read of it.
    TooLarge { file: String, limit: u64 },
    /// A safetensors header claims more than [`MAX_HEADER_BYTES`].
    HeaderTooLarge { file: String, length: u64 },
    /// Fewer bytes came back than the header needs.
    Truncated {
        file: String,
        expected: u64,
        got: u64,
    },
    /// The header is not valid safetensors.
    BadHeader { file: String, reason: String },
    /// The shard index is not valid.
    BadIndex(String),
    /// The server sent a whole file where a byte range was asked for.
    RangeIgnored { file: String },
    /// Neither `model.safetensors` nor its index exists (weights in `.bin`, GGUF or elsewhere).
    NoSafetensors,
}

/// A [`HubError`] as stored: its kind and the fields its kinds use (`text`: the id, a message or a reason;
/// `a`, `b`: sizes and limits). One flat record serializes every kind, where a tagged enum cannot hold the
/// kinds that carry a bare string, and its code is a fraction of an enum's.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct StoredError {
    kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    text: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    file: String,
    #[serde(skip_serializing_if = "is_zero_u16")]
    status: u16,
    #[serde(skip_serializing_if = "is_zero_u64")]
    a: u64,
    #[serde(skip_serializing_if = "is_zero_u64")]
    b: u64,
}

fn is_zero_u16(n: &u16) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl From<HubError> for StoredError {
    fn from(e: HubError) -> StoredError {
        let r = |kind: &str| StoredError {
            kind: kind.into(),
            ..StoredError::default()
        };
        match e {
            HubError::BadId(text) => StoredError {
                text,
                ..r("bad-id")
            },
            HubError::Gated { id, status } => StoredError {
                text: id,
                status,
                ..r("gated")
            },
            HubError::NotFound { id, file } => StoredError {
                text: id,
                file,
                ..r("not-found")
            },
            HubError::Http { file, status } => StoredError {
                file,
                status,
                ..r("http")
            },
            HubError::Unreachable => r("unreachable"),
            HubError::Timeout { seconds } => StoredError {
                a: u64::from(seconds),
                ..r("timeout")
            },
            HubError::NeedsTls => r("needs-tls"),
            HubError::BadConfig(text) => StoredError {
                text,
                ..r("bad-config")
            },
            HubError::TooLarge { file, limit } => StoredError {
                file,
                a: limit,
                ..r("too-large")
            },
            HubError::HeaderTooLarge { file, length } => StoredError {
                file,
                a: length,
                ..r("header-too-large")
            },
            HubError::Truncated {
                file,
                expected,
                got,
            } => StoredError {
                file,
                a: expected,
                b: got,
                ..r("truncated")
            },
            HubError::BadHeader { file, reason } => StoredError {
                file,
                text: reason,
                ..r("bad-header")
            },
            HubError::BadIndex(text) => StoredError {
                text,
                ..r("bad-index")
            },
            HubError::RangeIgnored { file } => StoredError {
                file,
                ..r("range-ignored")
            },
            HubError::NoSafetensors => r("no-safetensors"),
        }
    }
}

impl TryFrom<StoredError> for HubError {
    type Error = String;
    fn try_from(s: StoredError) -> Result<HubError, String> {
        let StoredError {
            kind,
            text,
            file,
            status,
            a,
            b,
        } = s;
        Ok(match kind.as_str() {
            "bad-id" => HubError::BadId(text),
            "gated" => HubError::Gated { id: text, status },
            "not-found" => HubError::NotFound { id: text, file },
            "http" => HubError::Http { file, status },
            "unreachable" => HubError::Unreachable,
            "timeout" => HubError::Timeout {
                seconds: u32::try_from(a).unwrap_or(u32::MAX),
            },
            "needs-tls" => HubError::NeedsTls,
            "bad-config" => HubError::BadConfig(text),
            "too-large" => HubError::TooLarge { file, limit: a },
            "header-too-large" => HubError::HeaderTooLarge { file, length: a },
            "truncated" => HubError::Truncated {
                file,
                expected: a,
                got: b,
            },
            "bad-header" => HubError::BadHeader { file, reason: text },
            "bad-index" => HubError::BadIndex(text),
            "range-ignored" => HubError::RangeIgnored { file },
            "no-safetensors" => HubError::NoSafetensors,
            other => return Err(format!("unknown Hub error kind '{other}'")),
        })
    }
}

impl HubError {
    /// A failure of the network rather than of the model: worth falling back to a cached copy.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            HubError::Unreachable | HubError::Timeout { .. } | HubError::Http { .. }
        )
    }
}

impl fmt::Display for HubError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HubError::BadId(s) => write!(
                f,
                "'{s}' is not a model id: expected owner/name or a huggingface.co address"
            ),
            HubError::Gated { id, status: 401 } => write!(
                f,
                "{id} is private or gated, or does not exist (HTTP 401); no token is sent: download its config.json and pass it with --config"
            ),
            HubError::Gated { id, status } => write!(
                f,
                "{id} is gated (HTTP {status}): access needs accepted terms and a token, which is not sent; pass its config.json with --config"
            ),
            HubError::NotFound { id, file } => write!(f, "{id}: {file} not found (HTTP 404)"),
            HubError::Http { file, status } => write!(f, "HTTP {status} for {file}"),
            HubError::Unreachable => write!(f, "the Hub could not be reached"),
            HubError::Timeout { seconds } => write!(f, "no answer within {seconds} s"),
            HubError::NeedsTls => write!(
                f,
                "https:// needs TLS, which this build does not include: use an http:// mirror (--hub-base) or --config"
            ),
            HubError::BadConfig(e) => write!(f, "config.json: {e}"),
            HubError::TooLarge { file, limit } => {
                write!(f, "{file} is larger than {limit} bytes: not read")
            }
            HubError::HeaderTooLarge { file, length } => write!(
                f,
                "{file} declares a {length}-byte header, above the safetensors limit of {MAX_HEADER_BYTES}: not a valid safetensors file"
            ),
            HubError::Truncated {
                file,
                expected,
                got,
            } => write!(
                f,
                "the header of {file} is truncated: {got} of {expected} bytes"
            ),
            HubError::BadHeader { file, reason } => {
                write!(f, "the header of {file} is not valid safetensors: {reason}")
            }
            HubError::BadIndex(reason) => write!(f, "{INDEX_FILE}: {reason}"),
            HubError::RangeIgnored { file } => {
                write!(f, "the server ignored the byte-range request for {file}")
            }
            HubError::NoSafetensors => write!(
                f,
                "no safetensors weights ({SINGLE_FILE} or {INDEX_FILE}) in the repository"
            ),
        }
    }
}

/// A safetensors element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(into = "&'static str", try_from = "String")]
pub enum Dtype {
    Bool,
    F4,
    F6E2M3,
    F6E3M2,
    U8,
    I8,
    F8E5M2,
    F8E4M3,
    F8E8M0,
    F8E4M3Fnuz,
    F8E5M2Fnuz,
    I16,
    U16,
    F16,
    Bf16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

/// Each dtype's name in a header and its width in bits (safetensors `Dtype` and `Dtype::bitsize`). `F4` is
/// the E2M1 float of the OCP microscaling formats; `F8_E8M0` their power-of-two scale.
const DTYPES: [(Dtype, &str, u64); 22] = [
    (Dtype::Bool, "BOOL", 8),
    (Dtype::F4, "F4", 4),
    (Dtype::F6E2M3, "F6_E2M3", 6),
    (Dtype::F6E3M2, "F6_E3M2", 6),
    (Dtype::U8, "U8", 8),
    (Dtype::I8, "I8", 8),
    (Dtype::F8E5M2, "F8_E5M2", 8),
    (Dtype::F8E4M3, "F8_E4M3", 8),
    (Dtype::F8E8M0, "F8_E8M0", 8),
    (Dtype::F8E4M3Fnuz, "F8_E4M3FNUZ", 8),
    (Dtype::F8E5M2Fnuz, "F8_E5M2FNUZ", 8),
    (Dtype::I16, "I16", 16),
    (Dtype::U16, "U16", 16),
    (Dtype::F16, "F16", 16),
    (Dtype::Bf16, "BF16", 16),
    (Dtype::I32, "I32", 32),
    (Dtype::U32, "U32", 32),
    (Dtype::F32, "F32", 32),
    (Dtype::C64, "C64", 64),
    (Dtype::F64, "F64", 64),
    (Dtype::I64, "I64", 64),
    (Dtype::U64, "U64", 64),
];

impl Dtype {
    /// The dtype a header names, if safetensors knows it.
    pub fn from_name(name: &str) -> Option<Dtype> {
        DTYPES
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(d, _, _)| *d)
    }

    /// The name headers use (`BF16`, `F8_E4M3`, …).
    pub fn name(self) -> &'static str {
        DTYPES
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or("?", |e| e.1)
    }

    /// Width of one element in bits.
    pub fn bits(self) -> u64 {
        DTYPES
            .iter()
            .find(|(d, _, _)| *d == self)
            .map_or(8, |e| e.2)
    }
}

impl From<Dtype> for &'static str {
    fn from(d: Dtype) -> &'static str {
        d.name()
    }
}

impl TryFrom<String> for Dtype {
    type Error = String;
    fn try_from(s: String) -> Result<Dtype, String> {
        Dtype::from_name(&s).ok_or_else(|| format!("unknown dtype {s}"))
    }
}

/// Elements and bytes of one dtype.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DtypeTotal {
    pub dtype: Dtype,
    pub elements: u64,
    pub bytes: u64,
}

/// What one safetensors header describes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct HeaderSummary {
    pub tensors: u64,
    /// Per dtype, in [`Dtype`] order.
    pub by_dtype: Vec<DtypeTotal>,
}

impl HeaderSummary {
    /// Stored bytes of every tensor: Σ elements × bits / 8 (equal to the byte buffer's length).
    pub fn bytes(&self) -> u64 {
        self.by_dtype.iter().map(|d| d.bytes).sum()
    }

    /// Elements of every tensor.
    pub fn elements(&self) -> u64 {
        self.by_dtype.iter().map(|d| d.elements).sum()
    }

    fn add(&mut self, dtype: Dtype, elements: u64, bytes: u64) {
        match self.by_dtype.iter_mut().find(|d| d.dtype == dtype) {
            Some(d) => {
                d.elements = d.elements.saturating_add(elements);
                d.bytes = d.bytes.saturating_add(bytes);
            }
            None => {
                self.by_dtype.push(DtypeTotal {
                    dtype,
                    elements,
                    bytes,
                });
                self.by_dtype.sort_by_key(|d| d.dtype);
            }
        }
    }

    fn merge(&mut self, other: &HeaderSummary) {
        self.tensors = self.tensors.saturating_add(other.tensors);
        for d in &other.by_dtype {
            self.add(d.dtype, d.elements, d.bytes);
        }
    }
}

/// The header length a safetensors file starts with (its first 8 bytes, little-endian). Refuses a length
/// above [`MAX_HEADER_BYTES`] (nothing of that size is ever requested) and one too short to hold `{}`.
pub fn header_len(prefix: &[u8], file: &str) -> Result<u64, HubError> {
    let first: [u8; 8] = prefix
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| HubError::Truncated {
            file: file.to_string(),
            expected: 8,
            got: prefix.len() as u64,
        })?;
    let n = u64::from_le_bytes(first);
    if n > MAX_HEADER_BYTES {
        return Err(HubError::HeaderTooLarge {
            file: file.to_string(),
            length: n,
        });
    }
    if n < 2 {
        return Err(HubError::BadHeader {
            file: file.to_string(),
            reason: format!("a header of {n} bytes cannot hold a JSON object"),
        });
    }
    Ok(n)
}

/// Reads a safetensors JSON header (the `N` bytes after the length) and checks it as the format requires:
/// it starts with `{`, every tensor has a known dtype, a shape and `data_offsets` whose span is exactly
/// elements × bits / 8 bytes (a whole number of bytes), and the spans tile the byte buffer from 0 with no hole
/// or overlap. Trailing spaces (the format's padding) are allowed.
pub fn parse_header(bytes: &[u8], file: &str) -> Result<HeaderSummary, HubError> {
    let bad = |reason: String| HubError::BadHeader {
        file: file.to_string(),
        reason,
    };
    if bytes.first() != Some(&b'{') {
        return Err(bad("it does not start with '{'".into()));
    }
    let map: serde_json::Map<String, Value> =
        serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let mut summary = HeaderSummary::default();
    let mut spans: Vec<(u64, u64)> = Vec::with_capacity(map.len());
    for (name, entry) in &map {
        if name == "__metadata__" {
            let strings = entry
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string));
            if !strings {
                return Err(bad("__metadata__ must map strings to strings".into()));
            }
            continue;
        }
        let short: String = name.chars().take(80).collect();
        let dtype = entry
            .get("dtype")
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("{short}: no dtype")))?;
        let dtype = Dtype::from_name(dtype)
            .ok_or_else(|| bad(format!("{short}: unknown dtype {dtype}")))?;
        let shape = entry
            .get("shape")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(format!("{short}: no shape")))?;
        let mut elements: u64 = 1;
        for d in shape {
            let d = d
                .as_u64()
                .ok_or_else(|| bad(format!("{short}: a dimension is not a whole number")))?;
            elements = elements
                .checked_mul(d)
                .ok_or_else(|| bad(format!("{short}: the shape overflows")))?;
        }
        let offsets = entry
            .get("data_offsets")
            .and_then(Value::as_array)
            .filter(|o| o.len() == 2)
            .and_then(|o| Some((o[0].as_u64()?, o[1].as_u64()?)))
            .ok_or_else(|| bad(format!("{short}: data_offsets must be [begin, end]")))?;
        let bits = elements
            .checked_mul(dtype.bits())
            .ok_or_else(|| bad(format!("{short}: the shape overflows")))?;
        if bits % 8 != 0 {
            return Err(bad(format!("{short}: not a whole number of bytes")));
        }
        let (begin, end) = offsets;
        if end < begin || end - begin != bits / 8 {
            return Err(bad(format!(
                "{short}: data_offsets span {} bytes, the shape needs {}",
                end.saturating_sub(begin),
                bits / 8
            )));
        }
        spans.push(offsets);
        summary.tensors += 1;
        summary.add(dtype, elements, bits / 8);
    }
    spans.sort_unstable();
    let mut at = 0;
    for (begin, end) in spans {
        if begin != at {
            return Err(bad(format!(
                "the tensors leave a hole or overlap at byte {at}"
            )));
        }
        at = end;
    }
    Ok(summary)
}

/// What `model.safetensors.index.json` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardIndex {
    /// `metadata.total_size`: stored bytes of every tensor.
    pub total_size: Option<u64>,
    /// `metadata.total_parameters` (transformers ≥ 4.56 writes it).
    pub total_parameters: Option<u64>,
    /// The shard files, sorted.
    pub files: Vec<String>,
    /// Tensors in the weight map.
    pub tensors: u64,
}

/// A shard name that is safe to put in a URL: one path segment of letters, digits, `.`, `_`, `-`, ending in
/// `.safetensors`.
fn safe_file(name: &str) -> bool {
    name.len() <= 255
        && name.ends_with(".safetensors")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Reads a shard index.
pub fn parse_index(text: &str) -> Result<ShardIndex, HubError> {
    let bad = |r: &str| HubError::BadIndex(r.to_string());
    let v: Value = serde_json::from_str(text).map_err(|e| HubError::BadIndex(e.to_string()))?;
    let map = v
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no weight_map object"))?;
    let mut files: Vec<String> = Vec::new();
    for file in map.values() {
        let file = file
            .as_str()
            .ok_or_else(|| bad("a weight_map value is not a file name"))?;
        if !safe_file(file) {
            let short: String = file.chars().take(80).collect();
            return Err(HubError::BadIndex(format!(
                "'{short}' is not a safetensors file name"
            )));
        }
        files.push(file.to_string());
    }
    files.sort_unstable();
    files.dedup();
    if files.is_empty() {
        return Err(bad("the weight_map is empty"));
    }
    let meta = v.get("metadata");
    let number = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_u64);
    Ok(ShardIndex {
        total_size: number("total_size"),
        total_parameters: number("total_parameters"),
        files,
        tensors: map.len() as u64,
    })
}

/// Rewrites the literals Python's `json` accepts and JSON does not (`NaN`, `Infinity`, `-Infinity`, outside
/// strings) as strings (`"NaN"`, …), so a strict parser reads the rest of the file; a field that needed a
/// number then says it got a string. Text without them is returned as is.
pub fn python_json(text: &str) -> Cow<'_, str> {
    if !text.contains("NaN") && !text.contains("Infinity") {
        return Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let (mut i, mut copied, mut in_string) = (0, 0, false);
    while i < b.len() {
        if in_string {
            match b[i] {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                _ => i += 1,
            }
            continue;
        }
        let token = ["NaN", "Infinity", "-Infinity"]
            .into_iter()
            .find(|t| b[i..].starts_with(t.as_bytes()));
        match (b[i], token) {
            (b'"', _) => {
                in_string = true;
                i += 1;
            }
            (_, Some(t)) => {
                // Every token is ASCII, so `copied..i` lies on character boundaries.
                out.push_str(&text[copied..i]);
                out.push('"');
                out.push_str(t);
                out.push('"');
                i += t.len();
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    Cow::Owned(out)
}

/// The weights of a checkpoint, as its safetensors headers describe them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightSummary {
    /// Safetensors files in the checkpoint.
    pub files: u32,
    /// Files whose headers were read (at most [`MAX_SHARD_HEADERS`]).
    pub files_read: u32,
    /// Tensors in the headers read.
    pub tensors: u64,
    /// Elements and stored bytes per dtype, over the headers read.
    pub by_dtype: Vec<DtypeTotal>,
    /// Stored bytes of all the weights: the headers' sum when every file was read (exact), else the index's
    /// `total_size`.
    pub bytes: u64,
    /// The index's `metadata.total_size`, when there is an index.
    pub index_total_size: Option<u64>,
    /// Parameters: the index's `total_parameters`, else the element count when every file was read and the
    /// checkpoint is not quantized (packed quantized tensors hold several weights per element, plus scales).
    pub parameters: Option<u64>,
}

impl WeightSummary {
    /// Every file's header was read, so `bytes` and `by_dtype` cover the whole checkpoint.
    pub fn complete(&self) -> bool {
        self.files_read == self.files
    }

    /// The stored weights as the estimate takes them ([`StoredCheckpoint`]): `bytes` split into quantized
    /// tensors (integer and 8-, 6- and 4-bit float dtypes) and 16/32-bit float ones, in the headers' proportion
    /// (all of them when every header was read; else those read, scaled to the index's `total_size`). The
    /// format is `quantized` (what the config's `quantization_config` maps to), else the floating dtype that
    /// holds most bytes. `None` when the headers contradict that: a quantized format with no quantized
    /// tensors, or more than 1% of the bytes in quantized tensors with no `quantization_config` to read them.
    pub fn stored(&self, quantized: Option<WeightFormat>) -> Option<StoredCheckpoint> {
        let float = |d: Dtype| matches!(d, Dtype::F16 | Dtype::Bf16 | Dtype::F32 | Dtype::F64);
        let sum = |keep: &dyn Fn(Dtype) -> bool| -> u64 {
            self.by_dtype
                .iter()
                .filter(|t| keep(t.dtype))
                .map(|t| t.bytes)
                .sum()
        };
        let (q, p) = (sum(&|d| !float(d)), sum(&float));
        let read = q + p;
        if read == 0 || self.bytes == 0 {
            return None;
        }
        let scale = self.bytes as f64 / read as f64;
        let (q, p) = (q as f64 * scale, p as f64 * scale);
        let format = match quantized {
            Some(f) if f.is_quantized() && q == 0.0 => return None,
            Some(f) => f,
            None if q > 0.01 * (q + p) => return None,
            None => {
                let most = [
                    (Dtype::Bf16, WeightFormat::Bf16),
                    (Dtype::F16, WeightFormat::Fp16),
                    (Dtype::F32, WeightFormat::Fp32),
                ]
                .into_iter()
                .max_by_key(|(d, _)| sum(&|x| x == *d))?;
                most.1
            }
        };
        Some(StoredCheckpoint {
            format,
            quantized: q,
            plain: p,
        })
    }
}

/// A model read from the Hub.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HubModel {
    /// `owner/name`.
    pub id: String,
    /// The revision asked for ([`REVISION`]).
    pub revision: String,
    /// Which version of the repository was served: the commit of its `X-Repo-Commit` header, else the ETag
    /// of config.json.
    pub version: Option<Version>,
    /// config.json as served (kept as text: the cache stays readable when the importer changes).
    pub config: String,
    /// The weights, or why they could not be read (the shape still loads).
    pub weights: Result<WeightSummary, HubError>,
}

impl HubModel {
    /// The shape and quantization config.json describes.
    pub fn imported(&self) -> Result<Imported, ImportError> {
        import::parse_config_text(&self.config)
    }

    /// The stored weights as the estimate takes them ([`WeightSummary::stored`]), in the format the config's
    /// `quantization_config` names; `None` when the headers were not read.
    pub fn stored(&self) -> Option<StoredCheckpoint> {
        let format = self.imported().ok().and_then(|i| i.weights);
        self.weights.as_ref().ok()?.stored(format)
    }
}

/// Which version of a repository an answer came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Version {
    /// `X-Repo-Commit`: the commit the revision resolved to.
    Commit(String),
    /// `ETag`, when no commit was given (the file's hash on the Hub).
    Etag(String),
}

impl Version {
    /// For display: a commit's first 7 hex digits (as git abbreviates), an ETag's first 12 characters.
    pub fn short(&self) -> String {
        let (text, keep) = match self {
            Version::Commit(c) => (c.as_str(), 7),
            Version::Etag(e) => (e.trim_start_matches("W/").trim_matches('"'), 12),
        };
        text.chars().take(keep).collect()
    }
}

/// The bytes of a cached model: `{"v": 1, "model": …}`.
pub fn cache_encode(model: &HubModel) -> String {
    serde_json::json!({ "v": 1, "model": model }).to_string()
}

/// A cached model, if `text` is one of this version for `id` whose config still reads.
pub fn cache_decode(text: &str, id: &str) -> Option<HubModel> {
    let v: Value = serde_json::from_str(text).ok()?;
    if v.get("v")?.as_u64()? != 1 {
        return None;
    }
    let model: HubModel = serde_json::from_value(v.get("model")?.clone()).ok()?;
    (model.id == id && model.imported().is_ok()).then_some(model)
}

/// One file (or byte range of one) to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub file: String,
    /// First and last byte, inclusive (`Range: bytes=first-last`).
    pub range: Option<(u64, u64)>,
    /// The most bytes to read of the body; a larger body is refused ([`HubError::TooLarge`]) unread.
    pub max_bytes: u64,
}

impl Request {
    /// The value of a `Range` header, for a ranged request.
    pub fn range_header(&self) -> Option<String> {
        self.range.map(|(a, b)| format!("bytes={a}-{b}"))
    }
}

/// What came back for a [`Request`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Response {
    pub status: u16,
    /// The body (left empty for an error status).
    pub body: Vec<u8>,
    /// `X-Repo-Commit`, else `ETag`.
    pub version: Option<Version>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Start,
    Lengths,
    Headers,
    Done,
}

/// Loads a model, round by round, without doing I/O: [`Loader::round`] says what to fetch next (the
/// requests of a round are independent: a driver may run them at once), [`Loader::feed`] reads the answers.
///
/// 1. config.json and the shard index; 2. the 8-byte length of each safetensors file (the index's shards, at
///    most [`MAX_SHARD_HEADERS`], else `model.safetensors`); 3. each header. A failure after config.json is
///    read is kept in [`HubModel::weights`]: the shape loads without them.
#[derive(Clone, Debug)]
pub struct Loader {
    id: HubId,
    stage: Stage,
    config: Option<String>,
    version: Option<Version>,
    quantized: bool,
    index: Option<ShardIndex>,
    /// Files whose headers are read, with their header lengths once known.
    shards: Vec<(String, u64)>,
    summary: HeaderSummary,
    weights: Option<Result<WeightSummary, HubError>>,
}

impl Loader {
    pub fn new(id: HubId) -> Loader {
        Loader {
            id,
            stage: Stage::Start,
            config: None,
            version: None,
            quantized: false,
            index: None,
            shards: Vec::new(),
            summary: HeaderSummary::default(),
            weights: None,
        }
    }

    /// The requests of the next round; empty when the load is done.
    pub fn round(&self) -> Vec<Request> {
        match self.stage {
            Stage::Start => vec![
                Request {
                    file: CONFIG_FILE.into(),
                    range: None,
                    max_bytes: MAX_CONFIG_BYTES,
                },
                Request {
                    file: INDEX_FILE.into(),
                    range: None,
                    max_bytes: MAX_INDEX_BYTES,
                },
            ],
            Stage::Lengths => self
                .shards
                .iter()
                .map(|(file, _)| Request {
                    file: file.clone(),
                    range: Some((0, 7)),
                    max_bytes: 8,
                })
                .collect(),
            Stage::Headers => self
                .shards
                .iter()
                .map(|(file, len)| Request {
                    file: file.clone(),
                    range: Some((8, 8 + len - 1)),
                    max_bytes: *len,
                })
                .collect(),
            Stage::Done => Vec::new(),
        }
    }

    /// Reads the answers to [`Loader::round`]'s requests, in their order. `Err` only when config.json could
    /// not be had: nothing was loaded.
    pub fn feed(&mut self, responses: Vec<Result<Response, HubError>>) -> Result<(), HubError> {
        let requests = self.round();
        if responses.len() != requests.len() {
            return Err(HubError::Unreachable);
        }
        let mut responses = responses.into_iter();
        match self.stage {
            Stage::Start => {
                let config = responses.next().unwrap_or(Err(HubError::Unreachable))?;
                let index = responses.next().unwrap_or(Err(HubError::Unreachable));
                self.read_config(config)?;
                self.read_index(index);
            }
            Stage::Lengths => {
                for (i, r) in responses.enumerate() {
                    let file = self.shards[i].0.clone();
                    let single = self.index.is_none();
                    match ok_body(r, &file, single).and_then(|b| header_len(&b, &file)) {
                        Ok(len) => self.shards[i].1 = len,
                        Err(e) => return self.fail(e),
                    }
                }
                self.stage = Stage::Headers;
            }
            Stage::Headers => {
                for (i, r) in responses.enumerate() {
                    let (file, len) = self.shards[i].clone();
                    let header =
                        ok_body(r, &file, false).and_then(|b| match b.get(..len as usize) {
                            Some(header) => parse_header(header, &file),
                            None => Err(HubError::Truncated {
                                file: file.clone(),
                                expected: len,
                                got: b.len() as u64,
                            }),
                        });
                    match header {
                        Ok(h) => self.summary.merge(&h),
                        Err(e) => return self.fail(e),
                    }
                }
                self.weights = Some(Ok(self.summarize()));
                self.stage = Stage::Done;
            }
            Stage::Done => {}
        }
        Ok(())
    }

    /// The model, once [`Loader::round`] is empty.
    pub fn finish(self) -> Result<HubModel, HubError> {
        self.interrupt(HubError::Unreachable)
    }

    /// The model as far as it was loaded when the load had to stop for `why` (a timeout, say): the shape
    /// with `why` for its weights if config.json was read, else `why`.
    pub fn interrupt(self, why: HubError) -> Result<HubModel, HubError> {
        let config = self.config.ok_or_else(|| why.clone())?;
        Ok(HubModel {
            id: self.id.to_string(),
            revision: REVISION.to_string(),
            version: self.version,
            config,
            weights: self.weights.unwrap_or(Err(why)),
        })
    }

    fn fail(&mut self, e: HubError) -> Result<(), HubError> {
        self.weights = Some(Err(e));
        self.stage = Stage::Done;
        Ok(())
    }

    fn read_config(&mut self, r: Response) -> Result<(), HubError> {
        let id = self.id.to_string();
        match r.status {
            200..=299 => {}
            401 | 403 => {
                return Err(HubError::Gated {
                    id,
                    status: r.status,
                })
            }
            404 => {
                return Err(HubError::NotFound {
                    id,
                    file: CONFIG_FILE.into(),
                })
            }
            s => {
                return Err(HubError::Http {
                    file: CONFIG_FILE.into(),
                    status: s,
                })
            }
        }
        let text =
            String::from_utf8(r.body).map_err(|_| HubError::BadConfig("not UTF-8 text".into()))?;
        let imported =
            import::parse_config_text(&text).map_err(|e| HubError::BadConfig(e.to_string()))?;
        self.quantized = imported.quantization.is_some();
        self.config = Some(text);
        self.version = r.version;
        Ok(())
    }

    fn read_index(&mut self, r: Result<Response, HubError>) {
        let r = match r {
            Ok(r) if r.status == 404 => {
                self.shards = vec![(SINGLE_FILE.into(), 0)];
                self.stage = Stage::Lengths;
                return;
            }
            other => ok_body(other, INDEX_FILE, false),
        };
        let index = r.and_then(|b| {
            parse_index(
                std::str::from_utf8(&b).map_err(|_| HubError::BadIndex("not UTF-8".into()))?,
            )
        });
        match index {
            Ok(index) => {
                self.shards = index
                    .files
                    .iter()
                    .take(MAX_SHARD_HEADERS)
                    .map(|f| (f.clone(), 0))
                    .collect();
                self.index = Some(index);
                self.stage = Stage::Lengths;
            }
            Err(e) => {
                let _ = self.fail(e);
            }
        }
    }

    fn summarize(&self) -> WeightSummary {
        let files = self.index.as_ref().map_or(1, |i| i.files.len()) as u32;
        let files_read = self.shards.len() as u32;
        let complete = files_read == files;
        let index_total_size = self.index.as_ref().and_then(|i| i.total_size);
        let headers = self.summary.bytes();
        let bytes = if complete {
            headers
        } else {
            index_total_size.unwrap_or(headers)
        };
        let elements = (complete && !self.quantized).then(|| self.summary.elements());
        WeightSummary {
            files,
            files_read,
            tensors: self.summary.tensors,
            by_dtype: self.summary.by_dtype.clone(),
            bytes,
            index_total_size,
            parameters: self
                .index
                .as_ref()
                .and_then(|i| i.total_parameters)
                .or(elements),
        }
    }
}

/// The body of a successful answer for `file`; a 404 of the single-file checkpoint means it has no
/// safetensors weights at all.
fn ok_body(r: Result<Response, HubError>, file: &str, single: bool) -> Result<Vec<u8>, HubError> {
    let r = r.map_err(|e| match e {
        HubError::TooLarge { file, .. } if file != INDEX_FILE => HubError::RangeIgnored { file },
        e => e,
    })?;
    match r.status {
        200..=299 => Ok(r.body),
        404 if single => Err(HubError::NoSafetensors),
        416 => Err(HubError::Truncated {
            file: file.to_string(),
            expected: 8,
            got: 0,
        }),
        status => Err(HubError::Http {
            file: file.to_string(),
            status,
        }),
    }
}

/// Runs a whole load with a blocking `fetch` (the CLI's, or a test's): each round's requests one after the
/// other.
pub fn load_with(
    id: &HubId,
    mut fetch: impl FnMut(&Request) -> Result<Response, HubError>,
) -> Result<HubModel, HubError> {
    let mut loader = Loader::new(id.clone());
    loop {
        let round = loader.round();
        if round.is_empty() {
            return loader.finish();
        }
        let answers = round.iter().map(&mut fetch).collect();
        loader.feed(answers)?;
    }
}

/// Where the page's Hub load stands.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum HubState {
    #[default]
    Idle,
    /// Waiting for this id.
    Fetching(String),
    /// Loaded, from the Hub or (`cached`) from this browser's copy.
    Loaded { model: Rc<HubModel>, cached: bool },
    /// Failed; `fallback` when the form already held this model (a shared link): its shape stays in use.
    Failed {
        id: String,
        error: HubError,
        fallback: bool,
    },
}

impl HubState {
    /// Whether a result for `id` is the one the page waits for (a late answer for an id the user has since
    /// replaced is dropped).
    pub fn awaits(&self, id: &str) -> bool {
        matches!(self, HubState::Fetching(waiting) if waiting == id)
    }
}

/// One line per dtype for display, largest first: `"BF16 2.30 GiB"`.
pub fn dtype_list(by_dtype: &[DtypeTotal]) -> String {
    let mut rows: Vec<&DtypeTotal> = by_dtype.iter().collect();
    rows.sort_by_key(|d| std::cmp::Reverse(d.bytes));
    rows.iter()
        .map(|d| {
            format!(
                "{} {}",
                d.dtype.name(),
                crate::bytes::fmt_gib(d.bytes as f64)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every error kind survives the cache: a model whose weights failed is stored and read back as it was
    /// (the kinds carrying a bare string made the tagged enum's serializer fail, and the cache write panic).
    #[test]
    fn every_error_kind_round_trips_through_the_cache() {
        let errors = vec![
            HubError::BadId("x".into()),
            HubError::Gated {
                id: "a/b".into(),
                status: 401,
            },
            HubError::NotFound {
                id: "a/b".into(),
                file: "config.json".into(),
            },
            HubError::Http {
                file: "f".into(),
                status: 500,
            },
            HubError::Unreachable,
            HubError::Timeout { seconds: 10 },
            HubError::NeedsTls,
            HubError::BadConfig("no model_type".into()),
            HubError::TooLarge {
                file: "f".into(),
                limit: 1 << 20,
            },
            HubError::HeaderTooLarge {
                file: "f".into(),
                length: 1 << 40,
            },
            HubError::Truncated {
                file: "f".into(),
                expected: 100,
                got: 7,
            },
            HubError::BadHeader {
                file: "f".into(),
                reason: "not JSON".into(),
            },
            HubError::BadIndex("no weight_map".into()),
            HubError::RangeIgnored { file: "f".into() },
            HubError::NoSafetensors,
        ];
        let config = r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}"#;
        for e in errors {
            let model = HubModel {
                id: "a/b".into(),
                revision: "main".into(),
                version: None,
                config: config.into(),
                weights: Err(e.clone()),
            };
            let text = cache_encode(&model);
            assert_eq!(cache_decode(&text, "a/b"), Some(model), "{e:?}: {text}");
        }
        // An unknown kind does not decode (the model is fetched again).
        let bad = r#"{"v":1,"model":{"id":"a/b","revision":"main","version":null,"config":"{}","weights":{"Err":{"kind":"nope"}}}}"#;
        assert_eq!(cache_decode(bad, "a/b"), None);
    }
    use std::collections::BTreeMap;

    /// A safetensors file's first bytes for `(name, dtype, shape)` tensors: length, JSON, space padding to 8
    /// bytes, offsets laid out in order.
    fn build_header(tensors: &[(String, Dtype, Vec<u64>)], metadata: &[(&str, &str)]) -> Vec<u8> {
        let mut map = serde_json::Map::new();
        if !metadata.is_empty() {
            let meta: BTreeMap<&str, &str> = metadata.iter().copied().collect();
            map.insert("__metadata__".into(), serde_json::json!(meta));
        }
        let mut at = 0u64;
        for (name, dtype, shape) in tensors {
            let bytes = shape.iter().product::<u64>() * dtype.bits() / 8;
            map.insert(
                name.clone(),
                serde_json::json!({ "dtype": dtype.name(), "shape": shape, "data_offsets": [at, at + bytes] }),
            );
            at += bytes;
        }
        let mut json = Value::Object(map).to_string().into_bytes();
        while json.len() % 8 != 0 {
            json.push(b' ');
        }
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend(json);
        out
    }

    #[track_caller]
    fn id(s: &str) -> String {
        parse_id(s)
            .map(|i| i.to_string())
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn ids_and_page_addresses_are_read() {
        assert_eq!(id("Qwen/Qwen3-0.6B"), "Qwen/Qwen3-0.6B");
        assert_eq!(id("  meta-llama/Llama-3.2-1B "), "meta-llama/Llama-3.2-1B");
        assert_eq!(
            id("https://huggingface.co/openai/gpt-oss-20b"),
            "openai/gpt-oss-20b"
        );
        assert_eq!(
            id("https://huggingface.co/openai/gpt-oss-20b/blob/main/config.json?x=1"),
            "openai/gpt-oss-20b"
        );
        assert_eq!(id("hf.co/google/gemma-3-1b-it#top"), "google/gemma-3-1b-it");
        assert_eq!(id("huggingface.co/a_b/c.d/tree/main"), "a_b/c.d");
        for bad in [
            "",
            "llama",
            "a/b/c",
            "a//b",
            "/b",
            "a/",
            "a--b/c",
            "a/b..c",
            "a/b.git",
            "-a/b",
            "a/b-",
            "a b/c",
            "ä/b",
            "https://huggingface.co/datasets/x/y",
            "https://example.com/a/b",
            &format!("a/{}", "x".repeat(97)),
        ] {
            assert!(matches!(parse_id(bad), Err(HubError::BadId(_))), "{bad}");
        }
        let i = parse_id("Qwen/Qwen3-0.6B").unwrap();
        assert_eq!(
            file_url("http://127.0.0.1:9/", &i, REVISION, CONFIG_FILE),
            "http://127.0.0.1:9/Qwen/Qwen3-0.6B/resolve/main/config.json"
        );
    }

    #[test]
    fn dtype_names_and_widths_are_the_safetensors_ones() {
        for (d, name, bits) in DTYPES {
            assert_eq!(Dtype::from_name(name), Some(d));
            assert_eq!((d.name(), d.bits()), (name, bits));
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{name}\""));
            assert_eq!(serde_json::from_str::<Dtype>(&json).unwrap(), d);
        }
        assert_eq!(Dtype::from_name("bf16"), None);
        assert_eq!(Dtype::F4.bits(), 4);
        assert_eq!(Dtype::F8E8M0.bits(), 8);
    }

    fn t(name: &str, dtype: Dtype, shape: &[u64]) -> (String, Dtype, Vec<u64>) {
        (name.to_string(), dtype, shape.to_vec())
    }

    #[test]
    fn a_header_gives_exact_bytes_per_dtype() {
        let bytes = build_header(
            &[
                t("a.weight", Dtype::Bf16, &[4, 8]),
                t("b.blocks", Dtype::U8, &[2, 3, 16]),
                t("c.packed", Dtype::F4, &[2, 3]),
                t("scalar", Dtype::U8, &[]),
                t("empty", Dtype::F32, &[0, 5]),
            ],
            &[("format", "pt")],
        );
        let n = header_len(&bytes, "x").unwrap();
        assert_eq!(n % 8, 0);
        assert_eq!(bytes.len() as u64, 8 + n);
        let h = parse_header(&bytes[8..], "x").unwrap();
        assert_eq!(h.tensors, 5);
        assert_eq!(h.bytes(), 64 + 96 + 3 + 1);
        assert_eq!(h.elements(), 32 + 96 + 6 + 1);
        let bf16 = h.by_dtype.iter().find(|d| d.dtype == Dtype::Bf16).unwrap();
        assert_eq!((bf16.elements, bf16.bytes), (32, 64));
        assert_eq!(
            dtype_list(&h.by_dtype),
            "U8 97 B, BF16 64 B, F4 3 B, F32 0.00 GiB"
        );
    }

    #[track_caller]
    fn header_err(json: &str) -> String {
        match parse_header(json.as_bytes(), "f") {
            Err(HubError::BadHeader { reason, .. }) => reason,
            other => panic!("{json}: {other:?}"),
        }
    }

    #[test]
    fn invalid_headers_say_why() {
        assert!(header_err(" {}").contains("'{'"));
        assert!(header_err("{").contains("EOF"));
        assert!(
            header_err(r#"{"a":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}}"#)
                .contains("unknown dtype Q9")
        );
        assert!(
            header_err(r#"{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,2]}}"#)
                .contains("span 2 bytes, the shape needs 4")
        );
        assert!(
            header_err(r#"{"a":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}}"#)
                .contains("hole")
        );
        assert!(
            header_err(r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}"#)
                .contains("whole number of bytes")
        );
        assert!(header_err(
            r#"{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,1]}}"#
        )
        .contains("overflows"));
        assert!(header_err(r#"{"__metadata__":{"a":1}}"#).contains("strings"));
        assert!(header_err(r#"{"a":{"dtype":"F16","shape":[1]}}"#).contains("data_offsets"));
        // Padding is allowed.
        assert!(parse_header(b"{}      ", "f").is_ok());
    }

    #[test]
    fn header_lengths_are_capped_before_anything_is_allocated() {
        assert_eq!(header_len(&64u64.to_le_bytes(), "f"), Ok(64));
        assert_eq!(
            header_len(&MAX_HEADER_BYTES.to_le_bytes(), "f"),
            Ok(MAX_HEADER_BYTES)
        );
        assert!(matches!(
            header_len(&(MAX_HEADER_BYTES + 1).to_le_bytes(), "f"),
            Err(HubError::HeaderTooLarge { length, .. }) if length == MAX_HEADER_BYTES + 1
        ));
        assert!(matches!(
            header_len(&u64::MAX.to_le_bytes(), "f"),
            Err(HubError::HeaderTooLarge { .. })
        ));
        assert!(matches!(
            header_len(&[1, 2, 3], "f"),
            Err(HubError::Truncated {
                expected: 8,
                got: 3,
                ..
            })
        ));
        assert!(matches!(
            header_len(&0u64.to_le_bytes(), "f"),
            Err(HubError::BadHeader { .. })
        ));
    }

    #[test]
    fn an_index_lists_its_shards() {
        let text = r#"{"metadata":{"total_size":10,"total_parameters":5},"weight_map":{
            "b":"model-00002-of-00002.safetensors","a":"model-00001-of-00002.safetensors",
            "c":"model-00001-of-00002.safetensors"}}"#;
        let i = parse_index(text).unwrap();
        assert_eq!(
            i.files,
            [
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"
            ]
        );
        assert_eq!(
            (i.total_size, i.total_parameters, i.tensors),
            (Some(10), Some(5), 3)
        );
        for bad in [
            r#"{"weight_map":{"a":"../secret.safetensors"}}"#,
            r#"{"weight_map":{"a":"x/y.safetensors"}}"#,
            r#"{"weight_map":{"a":"model.bin"}}"#,
            r#"{"weight_map":{"a":3}}"#,
            r#"{"weight_map":{}}"#,
            r#"{"metadata":{}}"#,
            "[",
        ] {
            assert!(
                matches!(parse_index(bad), Err(HubError::BadIndex(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn python_literals_outside_strings_become_strings() {
        assert!(matches!(python_json(r#"{"a":1}"#), Cow::Borrowed(_)));
        let text = r#"{"t":[0.0, Infinity], "n": NaN, "m": -Infinity, "s": "NaN Infinity \" NaN", "k":[NaN]}"#;
        let fixed = python_json(text);
        let v: Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["t"][1], "Infinity");
        assert_eq!(
            (v["n"].as_str(), v["m"].as_str()),
            (Some("NaN"), Some("-Infinity"))
        );
        assert_eq!(v["s"], "NaN Infinity \" NaN");
        assert_eq!(v["k"][0], "NaN");
        // Non-ASCII text around the tokens survives.
        let v: Value = serde_json::from_str(&python_json(r#"{"名":"é","x":Infinity}"#)).unwrap();
        assert_eq!(
            (v["名"].as_str(), v["x"].as_str()),
            (Some("é"), Some("Infinity"))
        );
    }

    /// A config with `time_step_limit: [0.0, Infinity]` (as transformers writes Mamba-2 style configs)
    /// imports; a dimension given as a bare literal is named.
    #[test]
    fn configs_with_python_literals_import() {
        let cfg = r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
            "intermediate_size":128,"vocab_size":100,"time_step_limit":[0.0, Infinity],"x":NaN}"#;
        assert_eq!(import::parse_config_text(cfg).unwrap().arch.layers, 2);
        let err =
            import::parse_config_text(&cfg.replace("\"vocab_size\":100", "\"vocab_size\":NaN"))
                .unwrap_err()
                .to_string();
        assert!(err.contains("vocab_size"), "{err}");
    }

    const CONFIG: &str = r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,
        "num_attention_heads":4,"intermediate_size":128,"vocab_size":100}"#;

    /// An in-memory repository: file → bytes, with per-file status overrides.
    fn serve(
        files: Vec<(&'static str, Vec<u8>)>,
    ) -> impl FnMut(&Request) -> Result<Response, HubError> {
        move |req: &Request| {
            let Some((_, body)) = files.iter().find(|(f, _)| *f == req.file) else {
                return Ok(Response {
                    status: 404,
                    ..Response::default()
                });
            };
            let body = match req.range {
                Some((a, b)) => body
                    .get(a as usize..body.len().min(b as usize + 1))
                    .unwrap_or(&[])
                    .to_vec(),
                None => body.clone(),
            };
            if body.len() as u64 > req.max_bytes {
                return Err(HubError::TooLarge {
                    file: req.file.clone(),
                    limit: req.max_bytes,
                });
            }
            Ok(Response {
                status: if req.range.is_some() { 206 } else { 200 },
                body,
                version: Some(Version::Commit(
                    "0123456789abcdef0123456789abcdef01234567".into(),
                )),
            })
        }
    }

    fn qid() -> HubId {
        parse_id("t/m").unwrap()
    }

    #[test]
    fn a_single_file_checkpoint_loads_with_exact_weights() {
        let weights = build_header(
            &[t("w", Dtype::Bf16, &[10, 10]), t("n", Dtype::F32, &[10])],
            &[],
        );
        let m = load_with(
            &qid(),
            serve(vec![(CONFIG_FILE, CONFIG.into()), (SINGLE_FILE, weights)]),
        )
        .unwrap();
        assert_eq!(
            m.version.as_ref().map(Version::short).as_deref(),
            Some("0123456")
        );
        assert_eq!(Version::Etag("W/\"abc\"".into()).short(), "abc");
        let w = m.weights.as_ref().unwrap();
        assert_eq!(
            (w.bytes, w.tensors, w.files, w.parameters),
            (240, 2, 1, Some(110))
        );
        assert!(w.complete());
        assert_eq!(m.imported().unwrap().arch.layers, 2);
        // The cache keeps it whole, for this id only.
        let text = cache_encode(&m);
        assert_eq!(cache_decode(&text, "t/m"), Some(m.clone()));
        assert_eq!(cache_decode(&text, "t/other"), None);
        assert_eq!(cache_decode("{\"v\":2}", "t/m"), None);
        assert_eq!(cache_decode("garbage", "t/m"), None);
    }

    #[test]
    fn a_sharded_checkpoint_sums_its_shards_and_bounds_what_it_reads() {
        let shard = |n: u64| build_header(&[(format!("w{n}"), Dtype::F16, vec![n, 4])], &[]);
        let index = r#"{"metadata":{"total_size":24},"weight_map":{"w1":"a.safetensors","w2":"b.safetensors"}}"#;
        let m = load_with(
            &qid(),
            serve(vec![
                (CONFIG_FILE, CONFIG.into()),
                (INDEX_FILE, index.into()),
                ("a.safetensors", shard(1)),
                ("b.safetensors", shard(2)),
            ]),
        )
        .unwrap();
        let w = m.weights.unwrap();
        assert_eq!(
            (w.bytes, w.files, w.files_read, w.index_total_size),
            (24, 2, 2, Some(24))
        );

        // More shards than are read: the index's total gives the bytes, the headers read the dtypes.
        let n = MAX_SHARD_HEADERS + 3;
        let map: serde_json::Map<String, Value> = (0..n)
            .map(|i| (format!("w{i}"), Value::from(format!("s{i:03}.safetensors"))))
            .collect();
        let index =
            serde_json::json!({"metadata": {"total_size": 999_999}, "weight_map": map}).to_string();
        let mut asked = 0;
        let mut inner = serve(vec![(CONFIG_FILE, CONFIG.into())]);
        let m = load_with(&qid(), |req| {
            if req.file == INDEX_FILE {
                return Ok(Response {
                    status: 200,
                    body: index.clone().into_bytes(),
                    version: None,
                });
            }
            if req.file.starts_with('s') {
                asked += 1;
                let body = shard(1);
                let (a, b) = req.range.unwrap();
                return Ok(Response {
                    status: 206,
                    body: body[a as usize..=b as usize].to_vec(),
                    version: None,
                });
            }
            inner(req)
        })
        .unwrap();
        assert_eq!(asked, 2 * MAX_SHARD_HEADERS);
        let w = m.weights.unwrap();
        assert_eq!(
            (w.bytes, w.files as usize, w.files_read as usize),
            (999_999, n, MAX_SHARD_HEADERS)
        );
        assert!(!w.complete());
        assert_eq!(w.parameters, None);
    }

    #[test]
    fn failures_name_the_file_and_keep_the_shape_when_they_can() {
        let cfg = (CONFIG_FILE, CONFIG.as_bytes().to_vec());
        let err = |files| load_with(&qid(), serve(files)).map(|m| m.weights);
        // No config: nothing loads.
        assert_eq!(
            err(vec![]),
            Err(HubError::NotFound {
                id: "t/m".into(),
                file: CONFIG_FILE.into()
            })
        );
        // No weights: the shape loads and says so.
        assert_eq!(err(vec![cfg.clone()]), Ok(Err(HubError::NoSafetensors)));
        // A header cut short.
        let mut cut = build_header(&[t("w", Dtype::Bf16, &[10, 10])], &[]);
        cut.truncate(20);
        assert!(matches!(
            err(vec![cfg.clone(), (SINGLE_FILE, cut)]),
            Ok(Err(HubError::Truncated { got: 12, .. }))
        ));
        // A bogus length: refused before any header is asked for.
        let mut bogus = (1u64 << 40).to_le_bytes().to_vec();
        bogus.extend(b"{}");
        let mut asked_header = false;
        let mut inner = serve(vec![cfg.clone(), (SINGLE_FILE, bogus)]);
        let m = load_with(&qid(), |r| {
            asked_header |= r.range.is_some_and(|(a, _)| a == 8);
            inner(r)
        })
        .unwrap();
        assert!(
            matches!(m.weights, Err(HubError::HeaderTooLarge { length, .. }) if length == 1 << 40)
        );
        assert!(!asked_header);
        // A server that ignores ranges and sends a whole file.
        let whole = |r: &Request| {
            if r.file == CONFIG_FILE {
                return Ok(Response {
                    status: 200,
                    body: CONFIG.into(),
                    version: None,
                });
            }
            if r.file == INDEX_FILE {
                return Ok(Response {
                    status: 404,
                    ..Response::default()
                });
            }
            Err(HubError::TooLarge {
                file: r.file.clone(),
                limit: r.max_bytes,
            })
        };
        assert!(matches!(
            load_with(&qid(), whole).unwrap().weights,
            Err(HubError::RangeIgnored { .. })
        ));
        // Gated, bad config.
        for (status, want) in [(401, 401), (403, 403)] {
            let r = load_with(&qid(), |_| {
                Ok(Response {
                    status,
                    ..Response::default()
                })
            });
            assert_eq!(
                r,
                Err(HubError::Gated {
                    id: "t/m".into(),
                    status: want
                })
            );
        }
        assert!(matches!(
            err(vec![(CONFIG_FILE, b"{\"hidden_size\":1}".to_vec())]),
            Err(HubError::BadConfig(_))
        ));
        // A timeout after config.json keeps the shape.
        let mut l = Loader::new(qid());
        l.feed(vec![
            Ok(Response {
                status: 200,
                body: CONFIG.into(),
                version: None,
            }),
            Ok(Response {
                status: 404,
                ..Response::default()
            }),
        ])
        .unwrap();
        let m = l.interrupt(HubError::Timeout { seconds: 10 }).unwrap();
        assert_eq!(m.weights, Err(HubError::Timeout { seconds: 10 }));
        assert_eq!(
            Loader::new(qid()).interrupt(HubError::Timeout { seconds: 1 }),
            Err(HubError::Timeout { seconds: 1 })
        );
    }

    #[test]
    fn a_late_result_is_only_taken_for_the_id_awaited() {
        let s = HubState::Fetching("a/b".into());
        assert!(s.awaits("a/b") && !s.awaits("a/c"));
        assert!(!HubState::Idle.awaits("a/b"));
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn header_parsing_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = header_len(&bytes, "f");
            let _ = parse_header(&bytes, "f");
        }

        #[test]
        fn json_like_headers_never_panic(s in r#"\{("[a-z_]{1,3}":\{"dtype":"(F16|BF16|F4|U8|X)","shape":\[[0-9,]{0,12}\],"data_offsets":\[[0-9]{1,4},[0-9]{1,4}\]\},?){0,4}\}"#) {
            let _ = parse_header(s.as_bytes(), "f");
        }

        #[test]
        fn index_and_id_parsing_never_panic(s in "\\PC{0,200}") {
            let _ = parse_index(&s);
            let _ = parse_id(&s);
            let fixed = python_json(&s);
            // Only the three literals change, each into a quoted copy of itself.
            proptest::prop_assert!(fixed.len() >= s.len());
        }

        #[test]
        fn a_loader_fed_any_bytes_never_panics(
            status in proptest::sample::select(vec![200u16, 206, 401, 403, 404, 416, 500]),
            bodies in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..64), 4),
        ) {
            let mut n = 0;
            let _ = load_with(&qid(), |r| {
                n += 1;
                let body = if r.file == CONFIG_FILE { CONFIG.as_bytes().to_vec() } else { bodies[n % 4].clone() };
                Ok(Response { status: if r.file == CONFIG_FILE { 200 } else { status }, body, version: None })
            });
        }
    }
}
