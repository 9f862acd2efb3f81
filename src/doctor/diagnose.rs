//! OOM doctor: classify a pasted log or traceback (GPU memory, host memory, disk, not a memory problem, or
//! not recognised), pull out the figures it states, and explain them. Pure; linear in the text's length.
//!
//! Message formats follow the emitting code: PyTorch's CUDA caching allocator (`c10/cuda/CUDACachingAllocator.cpp`,
//! both the ≤ 2.0 "(GPU 0; X total capacity; …)" form and the ≥ 2.1 "GPU 0 has a total capacity of …" form,
//! shared by HIP and XPU), the MPS allocator, `c10/core/impl/alloc_cpu.cpp` (DefaultCPUAllocator), vLLM's
//! `raise_if_cache_size_invalid`, llama.cpp's `ggml_backend_cuda_buffer_type_alloc_buffer`, XLA's
//! RESOURCE_EXHAUSTED, TensorFlow's ResourceExhaustedError, the Linux OOM killer, and torch.distributed's
//! exit-code reports.

use crate::bytes::GIB;
use serde::Serialize;

/// What kind of failure the text shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// GPU (device) memory ran out.
    Gpu,
    /// Host memory ran out (allocation failure, OOM killer).
    Host,
    /// The disk is full.
    Disk,
    /// A failure that only looks like a memory problem.
    NotMemory,
    /// Nothing recognised.
    Unrecognised,
}

/// Which runtime reported it (for the explanation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    PytorchCuda,
    PytorchHip,
    PytorchXpu,
    PytorchMps,
    Cublas,
    Vllm,
    LlamaCpp,
    Xla,
    Tensorflow,
    CpuAllocator,
    PythonMemoryError,
    OomKiller,
    DataLoaderWorker,
    PinnedMemory,
    DiskFull,
    DeviceAssert,
    IllegalAccess,
    Nccl,
    WrongDevice,
    NoKernelImage,
    CorruptCheckpoint,
    Unknown,
}

/// Figures stated in the text, GiB (`None` where absent).
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize)]
pub struct Numbers {
    /// "Tried to allocate X".
    pub tried_gib: Option<f64>,
    /// The device's total capacity.
    pub total_gib: Option<f64>,
    /// Free at the time of the failure.
    pub free_gib: Option<f64>,
    /// Allocated by PyTorch (tensors).
    pub allocated_gib: Option<f64>,
    /// Reserved by PyTorch in total (old format).
    pub reserved_gib: Option<f64>,
    /// Reserved by PyTorch but unallocated (new format): cached, fragmented blocks.
    pub reserved_unallocated_gib: Option<f64>,
    /// Memory in use by this process, including non-PyTorch memory (CUDA context, other libraries).
    pub process_in_use_gib: Option<f64>,
}

/// Advice attached to a diagnosis, as data (the page words it in both languages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hint {
    /// Much memory is reserved but unallocated: set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
    Fragmentation,
    /// Less was in use by PyTorch than the card holds: another process (or another GPU) holds memory.
    OtherProcess,
    /// The reported capacity differs from the GPU chosen on the page.
    CapacityMismatch,
    /// One very large allocation (logits, attention scores): fused loss, FlashAttention, shorter sequences.
    HugeAllocation,
    /// Lower micro-batch / sequence length, checkpointing, QLoRA… (see the advisor).
    ReduceMemory,
    /// vLLM: lower `max_model_len`, raise `gpu_memory_utilization`, or quantize the KV cache.
    VllmKvCache,
    /// llama.cpp: offload fewer layers (`-ngl`), a smaller context (`-c`) or a smaller quantization.
    LlamaCppLayers,
    /// MPS: the watermark caps what macOS lets PyTorch take.
    MpsWatermark,
    /// Host: fewer DataLoader workers, streaming datasets, less CPU offload, or more RAM.
    HostMemory,
    /// Disk: free space where checkpoints and the HF cache go (`save_total_limit`, `HF_HOME`).
    DiskSpace,
    /// Device-side assert: usually a label or token id out of range; rerun with `CUDA_LAUNCH_BLOCKING=1`.
    IndexOutOfRange,
    /// Illegal memory access: a kernel bug or a broken install, not a lack of memory.
    KernelFault,
    /// NCCL: network/interface/driver problem between ranks (`NCCL_DEBUG=INFO`).
    Communication,
    /// Tensors on different devices: move the model and inputs to one device.
    DeviceMismatch,
    /// The installed binaries lack kernels for this GPU's architecture.
    WrongBuild,
    /// The checkpoint file is truncated or corrupt: download it again.
    Redownload,
    /// Paste the whole traceback, including its last line.
    PasteMore,
}

/// The doctor's answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diagnosis {
    pub kind: Kind,
    pub source: Source,
    pub numbers: Numbers,
    pub hints: Vec<Hint>,
    /// The line the diagnosis rests on (trimmed, at most 300 characters).
    pub evidence: String,
}

/// Texts longer than this are cut to their last part (tracebacks end with the error).
pub const MAX_TEXT: usize = 200_000;

/// Signatures in priority order: the first that occurs decides. Memory failures come before the errors they
/// commonly trigger elsewhere (an OOM on one rank makes the others report NCCL failures).
const SIGNATURES: &[(&str, Kind, Source)] = &[
    ("hip out of memory", Kind::Gpu, Source::PytorchHip),
    ("xpu out of memory", Kind::Gpu, Source::PytorchXpu),
    ("mps backend out of memory", Kind::Gpu, Source::PytorchMps),
    ("cuda out of memory", Kind::Gpu, Source::PytorchCuda),
    ("cuda error: out of memory", Kind::Gpu, Source::PytorchCuda),
    ("cublas_status_alloc_failed", Kind::Gpu, Source::Cublas),
    (
        "no available memory for the cache blocks",
        Kind::Gpu,
        Source::Vllm,
    ),
    (
        "larger than the maximum number of tokens that can be stored in kv cache",
        Kind::Gpu,
        Source::Vllm,
    ),
    (
        "cudamalloc failed: out of memory",
        Kind::Gpu,
        Source::LlamaCpp,
    ),
    (
        "unable to allocate cuda0 buffer",
        Kind::Gpu,
        Source::LlamaCpp,
    ),
    ("resource_exhausted: out of memory", Kind::Gpu, Source::Xla),
    (
        "resource_exhausted: failed to allocate",
        Kind::Gpu,
        Source::Xla,
    ),
    ("resource exhausted: out of memory", Kind::Gpu, Source::Xla),
    ("oom when allocating tensor", Kind::Gpu, Source::Tensorflow),
    ("hip_error_outofmemory", Kind::Gpu, Source::PytorchHip),
    ("no space left on device", Kind::Disk, Source::DiskFull),
    ("disk quota exceeded", Kind::Disk, Source::DiskFull),
    ("storagefull", Kind::Disk, Source::DiskFull),
    ("defaultcpuallocator", Kind::Host, Source::CpuAllocator),
    ("cachinghostallocator", Kind::Host, Source::PinnedMemory),
    ("of pinned memory", Kind::Host, Source::PinnedMemory),
    (
        "is killed by signal: killed",
        Kind::Host,
        Source::DataLoaderWorker,
    ),
    (
        "out of memory: killed process",
        Kind::Host,
        Source::OomKiller,
    ),
    ("invoked oom-killer", Kind::Host, Source::OomKiller),
    ("exitcode: -9", Kind::Host, Source::OomKiller),
    ("signal 9 (sigkill)", Kind::Host, Source::OomKiller),
    ("exit code 137", Kind::Host, Source::OomKiller),
    ("cannot allocate memory", Kind::Host, Source::CpuAllocator),
    ("memoryerror", Kind::Host, Source::PythonMemoryError),
    (
        "device-side assert triggered",
        Kind::NotMemory,
        Source::DeviceAssert,
    ),
    (
        "illegal memory access",
        Kind::NotMemory,
        Source::IllegalAccess,
    ),
    (
        "no kernel image is available",
        Kind::NotMemory,
        Source::NoKernelImage,
    ),
    (
        "expected all tensors to be on the same device",
        Kind::NotMemory,
        Source::WrongDevice,
    ),
    (
        "pytorchstreamreader failed",
        Kind::NotMemory,
        Source::CorruptCheckpoint,
    ),
    (
        "error while deserializing header",
        Kind::NotMemory,
        Source::CorruptCheckpoint,
    ),
    ("nccl error", Kind::NotMemory, Source::Nccl),
    ("ncclsystemerror", Kind::NotMemory, Source::Nccl),
    ("ncclinternalerror", Kind::NotMemory, Source::Nccl),
];

/// Lower-cases ASCII only (keeps byte offsets identical to the original text).
fn ascii_lower(s: &str) -> String {
    s.chars().map(|c| c.to_ascii_lowercase()).collect()
}

/// Parses a size such as "20.00 MiB", "1.2 GB", "0 bytes", "7406166528 bytes", "144817.04 MiB", "4GB" into
/// GiB. Decimal units (GB, MB) are 10^9/10^6 bytes, binary (GiB, MiB) 2^30/2^20 (PyTorch prints binary).
fn parse_size(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let num_len = s
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit() || *c == '.' || *c == ',')
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    let number: f64 = s[..num_len].replace(',', "").parse().ok()?;
    let unit: String = s[num_len..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    let bytes = match unit.as_str() {
        "b" | "bytes" | "byte" => 1.0,
        "kib" => 1024.0,
        "kb" => 1e3,
        "mib" => 1_048_576.0,
        "mb" => 1e6,
        "m" => 1_048_576.0,
        "gib" => GIB,
        "gb" => 1e9,
        "g" => GIB,
        "tib" => GIB * 1024.0,
        "tb" => 1e12,
        _ => return None,
    };
    let gib = number * bytes / GIB;
    gib.is_finite().then_some(gib)
}

/// The size that follows the first occurrence of `phrase` (case-insensitive), if one does.
fn size_after(text: &str, lower: &str, phrase: &str) -> Option<f64> {
    let at = lower.find(phrase)? + phrase.len();
    parse_size(&text[at..])
}

/// The size that ends right before the first occurrence of `phrase` ("15.78 GiB total capacity").
fn size_before(text: &str, lower: &str, phrase: &str) -> Option<f64> {
    let end = lower.find(phrase)?;
    let head = text[..end].trim_end();
    // Walk back over the unit and the number.
    let start = head
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphanumeric() || *c == '.' || *c == ',' || *c == ' ')
        .take(24)
        .last()
        .map(|(i, _)| i)?;
    let candidate = head[start..].trim_start();
    // Skip leading words ("GPU 0;") until a number starts.
    let from = candidate.find(|c: char| c.is_ascii_digit())?;
    let mut tail = &candidate[from..];
    // If several numbers are present (e.g. "0; 15.78 GiB"), keep the last number+unit pair.
    while let Some(next) = tail.find(' ').and_then(|sp| {
        tail[sp..]
            .find(|c: char| c.is_ascii_digit())
            .map(|d| sp + d)
    }) {
        if parse_size(&tail[next..]).is_some() {
            tail = &tail[next..];
        } else {
            break;
        }
    }
    parse_size(tail)
}

/// Extracts every figure the PyTorch allocator messages state (both formats) and the other runtimes'.
fn numbers(text: &str, lower: &str, source: Source) -> Numbers {
    let mut n = Numbers {
        tried_gib: size_after(text, lower, "tried to allocate")
            .or_else(|| size_after(text, lower, "out of memory while trying to allocate"))
            .or_else(|| size_after(text, lower, "failed to allocate request for"))
            .or_else(|| size_after(text, lower, "out of memory allocating"))
            .or_else(|| size_after(text, lower, "_alloc_buffer: allocating")),
        // ≥ 2.1: "GPU 0 has a total capacity of 23.65 GiB of which 1.66 GiB is free." (older builds: "capacty").
        total_gib: size_after(text, lower, "total capacity of")
            .or_else(|| size_after(text, lower, "total capacty of"))
            .or_else(|| size_before(text, lower, "total capacity")),
        free_gib: size_after(text, lower, "of which")
            .or_else(|| size_before(text, lower, " free;")),
        allocated_gib: size_after(text, lower, "of the allocated memory")
            .or_else(|| size_before(text, lower, "already allocated"))
            .or_else(|| size_after(text, lower, "mps allocated:")),
        reserved_gib: size_before(text, lower, "reserved in total by pytorch"),
        reserved_unallocated_gib: lower
            .find("is allocated by pytorch, and")
            .and_then(|i| parse_size(&text[i + "is allocated by pytorch, and".len()..])),
        process_in_use_gib: size_after(text, lower, "this process has").or_else(|| {
            lower.find("process ").and_then(|i| {
                let rest = &lower[i..];
                rest.find(" has ")
                    .filter(|j| *j < 24)
                    .and_then(|j| parse_size(&text[i + j + 5..]))
            })
        }),
    };
    if source == Source::PytorchMps {
        n.total_gib = size_after(text, lower, "max allowed:");
        n.process_in_use_gib = size_after(text, lower, "other allocations:");
    }
    if source == Source::CpuAllocator && n.tried_gib.is_none() {
        n.tried_gib = size_after(text, lower, "you tried to allocate");
    }
    n
}

/// The line containing byte offset `at`, trimmed and capped.
fn line_at(text: &str, at: usize) -> String {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line = text[start..end].trim();
    line.chars().take(300).collect()
}

/// Diagnoses a pasted log. `gpu_usable_gib` is the GPU chosen on the page, if any, to compare capacities.
pub fn diagnose(text: &str, gpu_usable_gib: Option<f64>) -> Diagnosis {
    // Keep the tail of huge pastes; cut on a char boundary.
    let text = if text.len() > MAX_TEXT {
        let mut cut = text.len() - MAX_TEXT;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        &text[cut..]
    } else {
        text
    };
    let lower = ascii_lower(text);
    let hit = SIGNATURES
        .iter()
        .find_map(|(sig, kind, source)| lower.find(sig).map(|at| (at, *kind, *source)));
    let plain_killed = lower
        .lines()
        .any(|l| l.trim() == "killed" || l.trim() == "已杀死");
    let (at, kind, source) = match hit {
        Some(h) => h,
        None if plain_killed => (
            lower.find("killed").unwrap_or(0),
            Kind::Host,
            Source::OomKiller,
        ),
        None => {
            return Diagnosis {
                kind: Kind::Unrecognised,
                source: Source::Unknown,
                numbers: Numbers::default(),
                hints: vec![Hint::PasteMore],
                evidence: String::new(),
            }
        }
    };
    let numbers = numbers(text, &lower, source);
    let mut hints = Vec::new();
    match kind {
        Kind::Gpu => {
            let ru = numbers.reserved_unallocated_gib.unwrap_or(0.0);
            let old_gap = match (numbers.reserved_gib, numbers.allocated_gib) {
                (Some(r), Some(a)) => r - a,
                _ => 0.0,
            };
            let cached = ru.max(old_gap);
            // Fragmentation: the cache holds more than the request, or a large share of what is allocated.
            if cached > 0.5
                && (numbers.tried_gib.is_some_and(|t| cached >= t)
                    || cached > 0.2 * numbers.allocated_gib.unwrap_or(f64::INFINITY))
            {
                hints.push(Hint::Fragmentation);
            }
            if let (Some(total), Some(free)) = (numbers.total_gib, numbers.free_gib) {
                let used = total - free;
                let ours = numbers
                    .process_in_use_gib
                    .or(numbers.reserved_gib)
                    .or(numbers.allocated_gib.map(|a| a + ru));
                if ours.is_some_and(|o| used - o > 1.0) {
                    hints.push(Hint::OtherProcess);
                }
                if numbers.tried_gib.is_some_and(|t| t <= free) && free > 0.5 {
                    hints.push(Hint::Fragmentation);
                }
            }
            if let (Some(total), Some(chosen)) = (numbers.total_gib, gpu_usable_gib) {
                if chosen > 0.0 && (total - chosen).abs() / chosen > 0.1 {
                    hints.push(Hint::CapacityMismatch);
                }
            }
            if let (Some(t), Some(total)) = (numbers.tried_gib, numbers.total_gib) {
                if t > 0.1 * total {
                    hints.push(Hint::HugeAllocation);
                }
            }
            hints.push(match source {
                Source::Vllm => Hint::VllmKvCache,
                Source::LlamaCpp => Hint::LlamaCppLayers,
                Source::PytorchMps => Hint::MpsWatermark,
                _ => Hint::ReduceMemory,
            });
        }
        Kind::Host => hints.push(Hint::HostMemory),
        Kind::Disk => hints.push(Hint::DiskSpace),
        Kind::NotMemory => hints.push(match source {
            Source::DeviceAssert => Hint::IndexOutOfRange,
            Source::IllegalAccess => Hint::KernelFault,
            Source::Nccl => Hint::Communication,
            Source::WrongDevice => Hint::DeviceMismatch,
            Source::NoKernelImage => Hint::WrongBuild,
            _ => Hint::Redownload,
        }),
        Kind::Unrecognised => hints.push(Hint::PasteMore),
    }
    hints.dedup();
    Diagnosis {
        kind,
        source,
        numbers,
        hints,
        evidence: line_at(text, at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn near(got: Option<f64>, want: f64) {
        let g = got.unwrap_or_else(|| panic!("missing, wanted {want}"));
        assert!((g - want).abs() < 1e-3, "got {g}, wanted {want}");
    }

    #[test]
    fn sizes_parse_with_units() {
        near(parse_size("20.00 MiB"), 20.0 / 1024.0);
        near(parse_size("15.78 GiB"), 15.78);
        near(parse_size("4000000000 bytes"), 4e9 / GIB);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }

    #[test]
    fn size_before_a_phrase() {
        let t = "(GPU 0; 15.78 GiB total capacity; 14.56 GiB already allocated; 3.19 MiB free; 14.74 GiB reserved in total by PyTorch)";
        let l = ascii_lower(t);
        near(size_before(t, &l, "total capacity"), 15.78);
        near(size_before(t, &l, "already allocated"), 14.56);
        near(size_before(t, &l, " free;"), 3.19 / 1024.0);
        near(size_before(t, &l, "reserved in total by pytorch"), 14.74);
    }
}
