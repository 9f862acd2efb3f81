//! OOM doctor: classify a pasted log or traceback (GPU memory, host memory, disk, not a memory problem, or
//! not recognised), pull out the figures it states, and explain them. Pure; linear in the text's length.
//!
//! Each rule below is written from the emitting runtime's own message format and names the file that prints
//! it. Rules are tried in priority order and the first that matches decides: memory failures come before the
//! errors they commonly trigger elsewhere (an OOM on one rank makes the others report NCCL failures), host
//! shared memory comes before "disk full" (`/dev/shm` is RAM), and a mention inside advice ("If you
//! encounter CUDA out of memory, …") does not count. Matching runs on the text with every run of
//! whitespace collapsed to one space, so messages wrapped by a terminal or an e-mail client still match.

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
    /// Huawei Ascend NPUs (CANN, `torch_npu`).
    Ascend,
    Cublas,
    /// cuDNN status codes.
    Cudnn,
    Vllm,
    /// SGLang's memory-pool sizing.
    Sglang,
    /// Hugging Face text-generation-inference warm-up.
    Tgi,
    LlamaCpp,
    /// Ollama's own pre-load memory check.
    Ollama,
    /// Apple Metal (ggml-metal, command buffers).
    Metal,
    /// Apple MLX.
    Mlx,
    Xla,
    Tensorflow,
    CpuAllocator,
    PythonMemoryError,
    OomKiller,
    DataLoaderWorker,
    /// `/dev/shm` (shared memory between processes) is full.
    SharedMemory,
    /// Ray's worker-death and memory-monitor reports.
    Ray,
    PinnedMemory,
    DiskFull,
    Paddle,
    OnnxRuntime,
    DeviceAssert,
    IllegalAccess,
    /// Another CUDA runtime error that is not about memory size (misaligned address, invalid argument, …).
    CudaError,
    /// The NVIDIA driver is older than the CUDA runtime needs.
    DriverTooOld,
    Nccl,
    WrongDevice,
    NoKernelImage,
    CorruptCheckpoint,
    /// A tokenizer warning about input length.
    Tokenizer,
    /// NVIDIA TensorRT's builder and runtime logger.
    TensorRt,
    /// tiny-cuda-nn's `GPUMemory` (instant-ngp and other NeRF code).
    TinyCudaNn,
    /// HAMi-core, the GPU-sharing layer that caps each container's device memory.
    Hami,
    /// HeavyDB's buffer managers.
    HeavyDb,
    /// MindSpore's runtime.
    MindSpore,
    /// Sophgo's `bmlib` (Sophon TPUs).
    Sophon,
    /// OpenCV's `cv::fastMalloc`.
    OpenCv,
    /// A CPU instruction the processor lacks (SIGILL).
    IllegalInstruction,
    /// CuPy's memory pool (Chainer and other CuPy users).
    Cupy,
    /// Numba's CUDA driver bindings.
    Numba,
    /// OpenBLAS's thread buffers.
    OpenBlas,
    /// Node.js / V8's JavaScript heap.
    V8,
    /// bitsandbytes' own CUDA calls.
    Bitsandbytes,
    /// DirectML (Windows), through PyTorch or ONNX Runtime.
    DirectMl,
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
    /// SGLang: the KV pool got no room; raise `--mem-fraction-static` or shorten `--context-length`.
    SglangMemFraction,
    /// TGI warm-up: lower `--max-batch-prefill-tokens` / `--max-total-tokens`, or quantize.
    TgiPrefill,
    /// llama.cpp: offload fewer layers (`-ngl`), a smaller context (`-c`) or a smaller quantization.
    LlamaCppLayers,
    /// Ollama refused to load: the model needs more free RAM than the system has.
    OllamaMemory,
    /// MPS: the watermark caps what macOS lets PyTorch take.
    MpsWatermark,
    /// Apple GPU (Metal/MLX) memory: the working-set limit of unified memory was reached.
    MetalMemory,
    /// XLA/JAX: preallocation, sharding, batch; on TPU the program must fit the core's HBM.
    XlaMemory,
    /// Host: fewer DataLoader workers, streaming datasets, less CPU offload, or more RAM.
    HostMemory,
    /// Killed while loading weights: `low_cpu_mem_usage=True`, safetensors, one loader per node, more RAM.
    LoadingRam,
    /// `/dev/shm` is full: raise Docker `--shm-size` (or `--ipc=host`), lower DataLoader `num_workers`.
    SharedMemory,
    /// Disk: free space where checkpoints and the HF cache go (`save_total_limit`, `HF_HOME`).
    DiskSpace,
    /// Device-side assert: usually a label or token id out of range; rerun with `CUDA_LAUNCH_BLOCKING=1`.
    IndexOutOfRange,
    /// Illegal memory access: a kernel bug or a broken install, not a lack of memory.
    KernelFault,
    /// Another CUDA/cuBLAS/cuDNN error that is not about memory size: kernel bug, bad argument, broken install.
    CudaFault,
    /// The NVIDIA driver is too old for the installed CUDA runtime: update the driver or install an older build.
    UpdateDriver,
    /// A convolution workspace limit below what the algorithm needs: raise the framework's workspace setting.
    WorkspaceLimit,
    /// Allocations of a few bytes "failing": a broken allocator or build, not a full device.
    BrokenAllocator,
    /// NCCL: network/interface/driver problem between ranks (`NCCL_DEBUG=INFO`).
    Communication,
    /// Tensors on different devices: move the model and inputs to one device.
    DeviceMismatch,
    /// The installed binaries lack kernels for this GPU's architecture.
    WrongBuild,
    /// The checkpoint file is truncated or corrupt: download it again.
    Redownload,
    /// Only a tokenizer warning about input length: inputs are truncated or must be; no memory problem.
    TokenLength,
    /// Paste the whole traceback, including its last line.
    PasteMore,
    /// A kernel needs more on-chip shared memory per block than the GPU has (Triton `OutOfResources`).
    KernelResources,
    /// llama.cpp's context is full of tokens: a larger `-c`, fewer `--parallel` slots, shorter prompts.
    ContextFull,
    /// A CUDA library, the driver or the CUDA build itself is missing: install the matching build or library.
    MissingLibrary,
    /// The device or backend cannot run this data type or operation (bf16 before compute capability 8.0, an
    /// operator MPS lacks, a query XPU lacks).
    UnsupportedOnDevice,
    /// The files do not fit the code: a checkpoint for another model, an architecture the library does not
    /// know, a pickle `torch.load` refuses, an input buffer smaller than its shape.
    ModelMismatch,
    /// The accelerator is held by another process or not visible to this one (a TPU's `/dev/accel*`).
    DeviceBusy,
    /// SIGILL: the binary uses CPU instructions this processor lacks (AVX on an older CPU, x86 under Rosetta).
    CpuInstructions,
    /// MLX hit macOS's cap on the number of live Metal buffers (`iogpu.rsrc_limit`), a count, not bytes.
    MetalBufferCount,
    /// A ggml context's fixed-size pool, sized by the program itself, was too small.
    GgmlContextPool,
    /// A request longer than the server's maximum context length (`max_model_len`): rejected, not out of memory.
    ContextLength,
    /// The process ran out of file descriptors (`ulimit -n`), e.g. DataLoader workers sharing tensors.
    OpenFiles,
    /// A connection between processes closed (a peer died or the network failed): look for the first rank's error.
    PeerGone,
    /// An allocation of an impossible size (petabytes): a size computed wrong (an overflow, a bad shape).
    ImpossibleSize,
    /// A buffer the configuration sizes (DeepSpeed's swap buffers) is smaller than what it must hold.
    ConfiguredBuffer,
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

/// The pasted text prepared for matching: `flat` has every run of whitespace collapsed to one space (so
/// wrapped messages match), `low` is its ASCII lower-case (same byte offsets), `offs` maps a byte of `flat`
/// back to the original text (for the evidence line).
struct Scan<'a> {
    text: &'a str,
    flat: String,
    low: String,
    offs: Vec<usize>,
}

impl<'a> Scan<'a> {
    fn new(text: &'a str) -> Self {
        let mut flat = String::with_capacity(text.len());
        let mut offs = Vec::with_capacity(text.len() + 1);
        let mut in_space = false;
        let mut skip_to = 0;
        let mut line_start = true;
        for (i, c) in text.char_indices() {
            if i < skip_to {
                continue;
            }
            // torch.distributed's per-rank log prefix ("[rank5]: "), which splits one message over lines.
            if line_start {
                skip_to = i + rank_prefix_len(&text[i..]);
                line_start = false;
                if i < skip_to {
                    continue;
                }
            }
            line_start = c == '\n';
            if c.is_ascii_whitespace() {
                if !in_space {
                    flat.push(' ');
                    offs.push(i);
                }
                in_space = true;
            } else {
                flat.push(c);
                offs.extend(i..i + c.len_utf8());
                in_space = false;
            }
        }
        offs.push(text.len());
        let low = ascii_lower(&flat);
        Scan {
            text,
            flat,
            low,
            offs,
        }
    }

    /// The original byte offset of byte `i` of `flat`.
    fn orig(&self, i: usize) -> usize {
        self.offs.get(i).copied().unwrap_or(self.text.len())
    }

    /// Whether the occurrence at `flat` offset `i` sits in a conditional sentence on its line ("If you
    /// encounter CUDA out of memory, …", "If out-of-memory error occurs …"): advice, not the error.
    fn conditional(&self, i: usize) -> bool {
        let orig = self.orig(i);
        let mut from = orig.saturating_sub(160);
        while !self.text.is_char_boundary(from) {
            from += 1;
        }
        let before = &self.text[from..orig];
        let line = before.rsplit('\n').next().unwrap_or(before);
        let line = ascii_lower(line);
        let bytes = line.as_bytes();
        // An error printed after the clause ("… quit if disk full: Uncaught Exception: Error: ENOSPC …", a
        // title pasted before its log on one line) is the error itself, not advice.
        line.match_indices("if ").any(|(j, _)| {
            let after = &line[j..];
            // A parenthetical "(if applicable)" closes before the phrase.
            let closed = j > 0 && bytes[j - 1] == b'(' && after.contains(')');
            (j == 0 || !bytes[j - 1].is_ascii_alphanumeric())
                && !closed
                && !after.contains("error:")
                && !after.contains("exception:")
        })
    }

    /// The first occurrence of `needle` (lower-case) in `low` that is not inside advice, as a `flat` offset.
    fn find(&self, needle: &str) -> Option<usize> {
        self.low
            .match_indices(needle)
            .map(|(i, _)| i)
            .find(|&i| !self.conditional(i))
    }

    /// Whether `needle` occurs anywhere (advice included).
    fn has(&self, needle: &str) -> bool {
        self.low.contains(needle)
    }
}

/// Lower-cases ASCII only (keeps byte offsets identical to the original text).
fn ascii_lower(s: &str) -> String {
    s.chars().map(|c| c.to_ascii_lowercase()).collect()
}

/// How a rule recognises its message.
#[derive(Clone, Copy)]
enum Pat {
    /// Any of these lower-case phrases (matched on the whitespace-collapsed text, outside advice).
    Any(&'static [&'static str]),
    /// A check of its own; returns the byte offset of the evidence in the original text.
    Check(fn(&Scan) -> Option<usize>),
}

/// One recognised message: what it means, who prints it, and (where the source does not say) the advice.
#[derive(Clone, Copy)]
struct Rule {
    pat: Pat,
    kind: Kind,
    source: Source,
    hint: Option<Hint>,
}

const fn any(phrases: &'static [&'static str], kind: Kind, source: Source) -> Rule {
    Rule {
        pat: Pat::Any(phrases),
        kind,
        source,
        hint: None,
    }
}

const fn check(f: fn(&Scan) -> Option<usize>, kind: Kind, source: Source) -> Rule {
    Rule {
        pat: Pat::Check(f),
        kind,
        source,
        hint: None,
    }
}

impl Rule {
    const fn with(self, hint: Hint) -> Rule {
        Rule {
            hint: Some(hint),
            ..self
        }
    }

    /// The original byte offset of the first match, if any.
    fn find(&self, s: &Scan) -> Option<usize> {
        match self.pat {
            Pat::Any(phrases) => phrases
                .iter()
                .filter_map(|p| s.find(p))
                .min()
                .map(|i| s.orig(i)),
            Pat::Check(f) => f(s),
        }
    }
}

// ---- GPU memory: PyTorch allocators ----

/// PyTorch `c10/cuda/CUDACachingAllocator.cpp`, hipified for ROCm: "HIP out of memory. Tried to allocate …".
const PT_HIP: Rule = any(&["hip out of memory"], Kind::Gpu, Source::PytorchHip);
/// PyTorch `c10/xpu/XPUCachingAllocator.cpp`: "XPU out of memory. Tried to allocate …".
const PT_XPU: Rule = any(&["xpu out of memory"], Kind::Gpu, Source::PytorchXpu);
/// PyTorch `aten/src/ATen/mps/MPSAllocator.mm`: "MPS backend out of memory (MPS allocated: …, other
/// allocations: …, max allowed: …). Tried to allocate … on private pool."
const PT_MPS: Rule = any(
    &["mps backend out of memory"],
    Kind::Gpu,
    Source::PytorchMps,
);
/// spconv's and mmdet3d's CUDA check ("cuda execution failed with error N", `cudaError_t` N): any code but 2
/// (`cudaErrorMemoryAllocation`) is a kernel's or a launch's fault, not memory.
const SPCONV_CUDA_ERROR: Rule =
    check(spconv_cuda_error, Kind::NotMemory, Source::CudaError).with(Hint::CudaFault);
/// PyTorch's message asking for more than 64 TiB ("Tried to allocate 1048475.67 GiB"): no device has that; the
/// size was computed wrong.
const PT_ABSURD: Rule =
    check(pytorch_absurd, Kind::NotMemory, Source::PytorchCuda).with(Hint::ImpossibleSize);
/// PyTorch `c10/cuda/CUDACachingAllocator.cpp`: "CUDA out of memory. Tried to allocate …" (also inside the
/// wrappers of vLLM "CUDA out of memory occurred when warming up sampler" and SGLang "Capture cuda graph
/// failed: CUDA out of memory").
const PT_CUDA: Rule = any(
    &[
        "cuda out of memory",
        "cuda out-of-memory",
        // The same message machine-translated into Chinese ("内存溢出错误：CUDA 内存不足。尝试分配 108.00 MiB").
        "cuda 内存不足。尝试分配",
        // A game engine's own report of VRAM running out ("out of video memory trying to allocate a rendering
        // resource").
        "out of video memory trying to allocate",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// The same allocator's message with its first words cut off: "Tried to allocate X (GPU 0; Y total capacity;
/// Z already allocated; …)" (≤ 2.0) or "Tried to allocate X. GPU 0 has a total capacity of Y …" (≥ 2.1).
const PT_CUDA_TAIL: Rule = check(pytorch_tail, Kind::Gpu, Source::PytorchCuda);
/// The same message's statistics alone, quoted without "Tried to allocate": "(GPU 0; 7.78 GiB total
/// capacity; 5.87 GiB already allocated; 13.69 MiB free; 6.08 GiB reserved in total by PyTorch)" (≤ 2.0) or
/// "… of which X is reserved by PyTorch but unallocated" (≥ 2.1). Only the caching allocator's out-of-memory
/// report prints them.
const PT_CUDA_STATS: Rule = any(
    &[
        "reserved in total by pytorch",
        "reserved by pytorch but unallocated",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// DeepSpeed inference kernels, `csrc/transformer/inference/includes/inference_context.h`
/// (`GenWorkSpace`): "Workspace can't be allocated, no enough memory." after `cudaMemGetInfo` shows too
/// little free device memory for the attention workspace.
const DS_WORKSPACE: Rule = any(
    &[
        "workspace can't be allocated, no enough memory",
        // Later releases (`inference_context.h`): "Allocatable workspace available (N tokens) is less than
        // minimum requested workspace (M tokens)", "Workspace can't be allocated, not enough memory".
        "workspace can't be allocated, not enough memory",
        "is less than minimum requested workspace",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// Vulkan `VkResult` codes as drivers and engines print them (TVM `vulkan_buffer.cc`, MLC LLM, ncnn, …):
/// `VK_ERROR_OUT_OF_DEVICE_MEMORY` (-2) is the device's memory; `VK_ERROR_OUT_OF_HOST_MEMORY` (-1) the host's.
/// ggml-vulkan's allocation failure in its shorter form ("ggml_vulkan: Memory allocation of size N failed.").
const VK_DEVICE_OOM: Rule = any(
    &[
        "vk_error_out_of_device_memory",
        "ggml_vulkan: memory allocation of size",
    ],
    Kind::Gpu,
    Source::LlamaCpp,
);
const VK_HOST_OOM: Rule = any(
    // vulkan-hpp's exception names the same code `ErrorOutOfHostMemory` (`vk::OutOfHostMemoryError`).
    &["vk_error_out_of_host_memory", "erroroutofhostmemory"],
    Kind::Host,
    Source::CpuAllocator,
);
/// A failed `vkAllocateMemory` reported by its numeric `VkResult` (`ErrCode=-2`, `result -2`): -2 is
/// `VK_ERROR_OUT_OF_DEVICE_MEMORY` (`vulkan_core.h`).
const VK_ALLOC_CODE: Rule = check(vk_allocate_device_code, Kind::Gpu, Source::LlamaCpp);
/// CuPy `cupy/cuda/memory.pyx` (`OutOfMemoryError.__init__`): "Out of memory allocating N bytes (allocated
/// so far: M bytes)."; CuPy < 6: "out of memory to allocate N bytes (total M bytes)". Device memory.
const CUPY_OOM: Rule = any(
    &["out of memory allocating ", "out of memory to allocate "],
    Kind::Gpu,
    Source::Cupy,
);
/// Device memory on other accelerators: PyCUDA (`pycuda._driver.MemoryError: cuMemAlloc failed: out of
/// memory`, the driver API's device allocation); OpenVINO's GPU plugin ("[GPU] CL_OUT_OF_RESOURCES exception", and its
/// advice "reduce memory consumption … to avoid CL_OUT_OF_RESOURCES exception"); Qualcomm's Adreno driver
/// ("ioctl … (IOCTL_KGSL_GPUOBJ_ALLOC) failed: errno 12 Out of memory").
const OTHER_DEVICE_OOM: Rule = any(
    &[
        "cumemalloc failed: out of memory",
        // PhysX's GPU pipeline (Isaac Gym/Sim): "PxgCudaDeviceMemoryAllocator fail to allocate memory N bytes!!
        // Result = 2" (`cudaErrorMemoryAllocation`).
        "pxgcudadevicememoryallocator fail to allocate memory",
        // Rockchip's NPU runtime ("E RKNN: failed to malloc npu memory"); Qualcomm QNN ("Could not allocate
        // persistent weights buffer"); Xilinx XRT ("bo_ != XRT_NULL_BO allocation failure"); ggml's cuBLAS
        // handle with `CUBLAS_STATUS_ALLOC_FAILED`'s text ("CUDA error: the resource allocation failed").
        "failed to malloc npu memory",
        "could not allocate persistent weights buffer",
        "!= xrt_null_bo",
        "cuda error: the resource allocation failed",
        "[gpu] cl_out_of_resources",
        "to avoid cl_out_of_resources exception",
        "(ioctl_kgsl_gpuobj_alloc) failed: errno 12",
    ],
    Kind::Gpu,
    Source::Unknown,
);
/// Host memory as other runtimes name it: SYCL's `PI_ERROR_OUT_OF_HOST_MEMORY`; a browser's or Node's
/// `ArrayBuffer` ("RangeError: Array buffer allocation failed") and WebAssembly memory ("WebAssembly.instantiate():
/// Out of memory: wasm memory"); Android's low-memory killer (`lmkd`, "lowmemorykiller … Kill '…'"); SageMaker's
/// "move to an instance type with more memory".
const OTHER_HOST_OOM: Rule = any(
    &[
        "pi_error_out_of_host_memory",
        // The JVM's circuit breakers guarding its heap (Elasticsearch/OpenSearch "circuit_breaking_exception …
        // Data too large"); Milvus refusing a load its query node's memory would not hold ("OOM if load"); Ray's
        // old memory monitor ("RayOutOfMemoryError: More than 95% of the memory on node … is used").
        "circuit_breaking_exception",
        "circuitbreakingexception",
        "oom if load",
        "rayoutofmemoryerror",
        // gcc's driver: "c++: fatal error: Killed signal terminated program cc1plus"; a pod's restart reason
        // ("OOMKill (memory exceeded limit, SIGKILL)").
        "killed signal terminated program",
        "oomkill (memory exceeded limit",
        // MSVC (C1060) "compiler is out of heap space"; MATLAB's array limit, set from the RAM ("exceeds maximum
        // array size preference"); OpenVINO's CPU plugin ("intel_cpu/src/cpu_memory.cpp … Failed to allocate N
        // bytes of memory"); Ray's object store ("System memory request exceeds memory available in /dev/shm");
        // LM Studio's load guard in its other wording; MPI's report of a rank killed by SIGKILL ("exited on
        // signal 9 (Killed)").
        "compiler is out of heap space",
        "exceeds maximum array size preference",
        "intel_cpu/src/cpu_memory.cpp",
        "exceeds memory available in /dev/shm",
        "model loading aborted due to insufficient system resources",
        "exited on signal 9 (killed)",
        "rangeerror: array buffer allocation failed",
        "out of memory: wasm memory",
        "lowmemorykiller",
        "instance type with more memory",
    ],
    Kind::Host,
    Source::CpuAllocator,
);
/// A message that names memory as one possible cause among others, answered as such (paste more): cuBLAS
/// failing to create its handle (`CUBLAS_STATUS_INTERNAL_ERROR when calling cublasCreate(handle)`), which an
/// exhausted GPU shows as often as a broken install.
const AMBIGUOUS: Rule = any(
    &["cublas_status_internal_error when calling `cublascreate(handle)`"],
    Kind::Unrecognised,
    Source::Unknown,
)
.with(Hint::PasteMore);
/// Unreal Engine's platform allocator (`GenericPlatformMemory.cpp`, `OnOutOfMemory`): "Ran out of memory
/// allocating N bytes with alignment A. Last error msg: The paging file is too small …": the process's commit
/// charge, host RAM and page file, whatever thread asked.
const ENGINE_COMMIT: Rule = any(
    &["last error msg: the paging file is too small"],
    Kind::Host,
    Source::CpuAllocator,
);
/// A CUDA driver call's `CUresult` 2 (`CUDA_ERROR_OUT_OF_MEMORY`, `cuda.h`) as wrappers print it:
/// torch_memory_saver "CUresult error result=2 … func=cu_mem_create", Numba "Call to cuMemAlloc results in
/// CUDA_ERROR_OUT_OF_MEMORY".
/// vllm.rs (`src/core/kvcache_allocator.rs`): "KVCache allocation failed: Insufficient GPU memory for KVCache
/// allocation. Available: X MB, Required: Y MB".
const VLLM_RS_KV: Rule = any(
    &["insufficient gpu memory for kvcache"],
    Kind::Gpu,
    Source::Vllm,
)
.with(Hint::VllmKvCache);
/// The small serving engines that size their KV cache from the free memory and assert that it holds more than
/// one page or block: mini-SGLang-style runners (`assert num_pages > 1, "Not enough memory for KV cache, try
/// reducing --num-pages"`), nano-vLLM-style ones (`assert config.num_kvcache_blocks > 0, "Not enough memory for
/// KV cache. Free: …"`) and vLLM's Gaudi estimator (`ValueError("Not enough memory for kv cache. …")`). An
/// assertion or an exception, not the warning some engines log before falling back to a minimal pool.
const ENGINE_KV_ASSERT: Rule =
    check(engine_kv_assert, Kind::Gpu, Source::Vllm).with(Hint::VllmKvCache);
/// TensorRT-LLM's PyTorch executor (`tensorrt_llm/_torch/pyexecutor/py_executor_creator.py`,
/// `_maybe_explain_if_oom`): "Executor creation failed due to insufficient GPU memory.", raised when a
/// component (the model, the KV cache, the drafter) hit `torch.OutOfMemoryError` or "out of memory" while the
/// executor was built.
const TRTLLM_EXECUTOR_OOM: Rule = any(
    &["executor creation failed due to insufficient gpu memory"],
    Kind::Gpu,
    Source::TensorRt,
);
/// Mesa's RADV Vulkan driver (`src/amd/vulkan/winsys/amdgpu/radv_amdgpu_bo.c`, `radv_amdgpu_winsys_bo_create`):
/// "radv/amdgpu: Failed to allocate a buffer:" followed by its size, alignment and domains, when the kernel
/// driver refuses a buffer object (VRAM or, on APUs such as Strix Halo, the GTT share of system memory the GPU
/// may map): what llama.cpp's Vulkan backend and Ollama print beneath their own allocation error.
const RADV_BO_ALLOC: Rule = any(
    &["radv/amdgpu: failed to allocate a buffer"],
    Kind::Gpu,
    Source::LlamaCpp,
);
/// NVIDIA's kernel driver (`open-gpu-kernel-modules`, `nvstatuscodes.h`: `NV_ERR_NO_MEMORY`, "Out of memory"),
/// as the resource manager logs a failed check: "NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory
/// [NV_ERR_NO_MEMORY]" — the driver could not back a device allocation (on DGX Spark's GB10 and other
/// unified-memory parts, out of the shared pool).
/// Where the kernel's OOM killer fired in the same paste (DGX Spark, Jetson: the driver's memory is the
/// system's), the host rules decide instead.
const NVRM_NO_MEMORY: Rule = check(nvrm_no_memory, Kind::Gpu, Source::CudaError);
/// Inference engines' own out-of-memory wording, each from its source: SGLang's token and request pools
/// (`managers/schedule_batch.py` `alloc_token_slots`: "Decode out of memory. Try to lower your batch size.",
/// `alloc_req_slots` "… runs out of memory", `model_runner.py` "Not enough GPU memory for hybrid state
/// cache"); DeepSpeed-FastGen (`inference/v2/ragged/kv_cache.py`: "Insufficient memory to allocate KV-caches")
/// and ZeRO's contiguous buffer (`runtime/zero/contiguous_memory_allocator.py`: "Not enough memory in buffer.
/// Allocation failed"); mistral.rs (`paged_attention/mod.rs`: "Num GPU blocks is 0. This means there is not
/// enough memory", `auto_device_map.rs`: "The model does not fit on this system", "does not fit on the
/// devices"); ExLlamaV2/V3 (`model.py`: "Insufficient VRAM for model and cache"); lmdeploy (`pytorch/engine/
/// executor/base.py`: "No enough gpu memory for kv cache." / "for runtime.", `paging/block_manager`: "No
/// enough free memory blocks." raised as `MemoryError`, TurboMind's "cache out of memory, no request can be
/// admitted"); TensorRT-LLM's KV-cache manager (`kvCacheManager.cpp`: "Can't allocate new blocks. No free
/// blocks left."); Ollama (`ml/device.go`: "insufficient memory - required allocations", `llm/server.go`:
/// "memory layout cannot be allocated with num_gpu", "insufficient memory for image generation", its MLX
/// runner's "model requires X but only Y are available (after Z overhead)"); ggml-SYCL (`dpct/helper.hpp`:
/// "dpct_malloc: out of memory for virtual memory pool"); NCCL's device buffers (`include/alloc.h`: "Failed
/// to CUDA calloc N bytes").
const ENGINE_OOM: Rule = any(
    &[
        "alloc_req_slots runs out of memory",
        "not enough gpu memory for",
        "insufficient memory to allocate kv-caches",
        "not enough memory in buffer. allocation failed",
        "this means there is not enough memory",
        "the model does not fit on this system",
        "this model does not fit on the devices",
        "insufficient vram",
        "no enough gpu memory for",
        "no enough free memory blocks",
        "cache out of memory, no request can be admitted",
        "can't allocate new blocks. no free blocks left",
        "memory layout cannot be allocated with num_gpu",
        "insufficient memory for image generation",
        "are available (after",
        "out of memory for virtual memory pool",
        "failed to cuda calloc",
        // SGLang ≥ 0.5 (`model_executor/model_runner.py`): "Loaded weights leave no GPU memory for the KV cache
        // under --mem-fraction-static=X".
        "leave no gpu memory for the kv cache",
        // SGLang's decode retraction (`managers/schedule_batch.py` `retract_decode`): "No space left for only
        // one request, … available_size()=0" — the KV pool, not a disk.
        "no space left for only one request",
        // xinference's KV budget: "Remaining N kvcache tokens, but your prompt requires M new tokens".
        "kvcache tokens, but your prompt requires",
        // DirectML's heap allocator (`dml_heap_allocator.cc`): "DML allocator out of memory!".
        "dml allocator out of memory",
        // The Chinese words for "not enough video memory" and "the video memory blew up", as Chinese-language
        // runtimes, logs and their users write them.
        "显存不足",
        "爆显存",
    ],
    Kind::Gpu,
    Source::Vllm,
);
/// SGLang's token pool (`managers/schedule_batch.py` `alloc_token_slots`, `mem_cache/common.py`): "Decode out
/// of memory. Try to lower your batch size. Try to allocate N tokens. Available tokens: M …". When the pool it
/// prints holds at least the N tokens asked for, the failure is the allocator's own bookkeeping (a page-size
/// or leak bug), not a full pool: not memory.
const SGLANG_TOKENS: Rule = check(sglang_token_pool, Kind::Gpu, Source::Sglang);
const SGLANG_TOKENS_FREE: Rule = check(sglang_tokens_left, Kind::NotMemory, Source::Sglang);
/// Ollama's scheduler (`ml/device.go` `ErrNoMem`): "insufficient memory - required allocations: {…
/// GPUs:[…]}" — the GPUs' memory, or the host's when the list of GPUs is empty (`GPUs:[]`: every layer on
/// the CPU).
const OLLAMA_NO_MEM: Rule = check(ollama_no_mem_gpu, Kind::Gpu, Source::Ollama);
const OLLAMA_NO_MEM_CPU: Rule = check(ollama_no_mem_cpu, Kind::Host, Source::Ollama);
/// AMD's MIOpen (`src/hip/handlehip.cpp`, `Handle::Create` / workspace allocation): "Memory not available to
/// allocate buffer: N" — `hipMalloc` refused a device buffer.
const MIOPEN_ALLOC: Rule = any(
    &["memory not available to allocate buffer"],
    Kind::Gpu,
    Source::PytorchHip,
);
/// Tenstorrent's tt-metal allocator (`tt_metal/impl/allocator/bank_manager.cpp`): "Out of Memory: Not enough
/// space to allocate N B DRAM buffer across K banks" (or an `L1` buffer): the accelerator's own memory.
const TT_BANK_OOM: Rule = any(
    &["b dram buffer across", "b l1 buffer across"],
    Kind::Gpu,
    Source::CudaError,
);
/// tinygrad's device allocators (`tinygrad/runtime/ops_amd.py`, `ops_nv.py`): a failed device allocation
/// (`ENOMEM` from the kernel driver's ioctl) is raised as Python's `MemoryError("Cannot allocate N bytes: no
/// memory is available.")`; the traceback's `runtime/ops_…` frames say it was the device's.
const TINYGRAD_DEVICE: Rule = check(tinygrad_device_oom, Kind::Gpu, Source::CudaError);
/// bitsandbytes `csrc/common.cuh` (`CUDA_CHECK_RETURN`): "Error out of memory at line N in file
/// …/csrc/ops.cu" (or `pythonInterface.c`): a CUDA call of its own (its paged optimizer's `cudaMallocManaged`,
/// a kernel's buffer) got `cudaErrorMemoryAllocation`.
const BNB_CUDA_OOM: Rule = any(
    &["error out of memory at line"],
    Kind::Gpu,
    Source::Bitsandbytes,
);
/// DirectML: PyTorch's `torch-directml` "Could not allocate tensor with N bytes. There is not enough GPU video
/// memory available!", and ONNX Runtime's DirectML provider failing with `E_OUTOFMEMORY`.
const DML_VIDEO_MEMORY: Rule = any(
    &["not enough gpu video memory available"],
    Kind::Gpu,
    Source::DirectMl,
);
const DML_OOM: Rule = check(dml_out_of_memory, Kind::Gpu, Source::DirectMl);
/// Caffe2's `CUDA_ENFORCE` (`caffe2/core/common_gpu.h`): "[enforce fail at event_gpu.cc:17] error ==
/// cudaSuccess. 2 vs 0. Error at: …: out of memory": error 2 is `cudaErrorMemoryAllocation`.
const CAFFE2_CUDA_OOM: Rule = any(
    &["error == cudasuccess. 2 vs 0"],
    Kind::Gpu,
    Source::CudaError,
);
/// A sample's own CUDA check printing `cudaGetErrorString` ("cuda failure: file:line: 'out of memory'", the
/// TensorRT samples' `CHECK` macro).
const CUDA_FAILURE_OOM: Rule = check(cuda_failure_oom, Kind::Gpu, Source::PytorchCuda);
/// MindSpore's device memory pool (`ccsrc/backend/common/mem_reuse/mem_dynamic_allocator.cc`): "… plus alloc
/// size : N is more than total mem size : M", and its kernel launch (`runtime/device`): "Malloc for kernel
/// output failed, Memory isn't enough". Both are the device's (GPU or Ascend) memory.
const MINDSPORE_DEVICE: Rule = any(
    &[
        "is more than total mem size",
        "malloc for kernel output failed, memory isn't enough",
        "malloc for kernel input failed, memory isn't enough",
    ],
    Kind::Gpu,
    Source::MindSpore,
);
/// ComfyUI `comfy/sd.py`: "Ran out of memory when regular VAE encoding (decoding), retrying with tiled VAE
/// …", printed when the torch OOM exception (`model_management.OOM_EXCEPTION`) is caught; AUTOMATIC1111
/// `modules/sd_hijack_optimizations.py` (split attention): "Not enough memory, use lower resolution (max
/// approx. NxN). Need: X GB free, Have: Y GB free", from the device's free memory.
const DIFFUSION_UI_OOM: Rule = any(
    &[
        "ran out of memory when regular vae",
        "not enough memory, use lower resolution",
        // ComfyUI `execution.py`: an OOM exception is reported with "This error means you ran out of memory
        // on your GPU." and the allocator's figures.
        "this error means you ran out of memory on your gpu",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// RAPIDS Memory Manager (`rmm/mr/device/cuda_memory_resource.hpp`, raised as `rmm::out_of_memory`, a
/// `std::bad_alloc`): "std::bad_alloc: out_of_memory: CUDA error at: …cuda_memory_resource.hpp" (XGBoost,
/// cuDF, cuML) is device memory, not the host's `bad_alloc`.
/// Jittor `src/mem/allocator/cuda_device_allocator.cc`: "Unable to alloc cuda device memory, use unify memory
/// instead" before its memory table: the device ran out and it falls back to managed memory.
const JITTOR_DEVICE: Rule = any(
    &["unable to alloc cuda device memory"],
    Kind::Gpu,
    Source::PytorchCuda,
);
const RMM_OOM: Rule = any(
    &["out_of_memory: cuda error", "out_of_memory: rmm failure"],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// RMM's `cuda_memory_resource` raising `std::bad_alloc` for a CUDA error that is not an allocation failure
/// ("MemoryError: std::bad_alloc: CUDA error at: …cuda_memory_resource.hpp:70: cudaErrorIllegalAddress an
/// illegal memory access was encountered"): an earlier kernel's fault, reported at the next allocation.
const RMM_CUDA_FAULT: Rule =
    check(rmm_cuda_fault, Kind::NotMemory, Source::IllegalAccess).with(Hint::CudaFault);
/// vLLM `v1/worker/gpu_worker.py` (`determine_available_memory` log): "Available KV cache memory: -X GiB",
/// negative when the weights and the profiled activations already exceed `gpu_memory_utilization`.
const VLLM_NEGATIVE_KV: Rule =
    any(&["available kv cache memory: -"], Kind::Gpu, Source::Vllm).with(Hint::VllmKvCache);
const CU_RESULT_OOM: Rule = any(
    &[
        "curesult error result=2 ",
        "results in cuda_error_out_of_memory",
    ],
    Kind::Gpu,
    Source::Numba,
);
/// PyTorch `c10/core/impl/alloc_cpu.cpp`: "DefaultCPUAllocator: not enough memory: you tried to allocate
/// N bytes" quoted without its first word; Apache Arrow `cpp/src/arrow/memory_pool.cc`: "malloc of size N
/// failed" / "realloc of size N failed", raised in Python as `pyarrow.lib.ArrowMemoryError` (pandas, Hugging
/// Face datasets). Both are host RAM.
const CPU_ALLOC_TAIL: Rule = any(
    &[
        // The same failure seen only in its C++ stack trace: `c10::alloc_cpu` beside the enforce that threw.
        "c10::alloc_cpu(",
        "allocator: not enough memory: you tried to allocate",
        "can't allocate memory: you tried to allocate",
        "arrowmemoryerror",
    ],
    Kind::Host,
    Source::CpuAllocator,
);
/// A Jupyter kernel (Colab, Kaggle) restarted right after tcmalloc's "large alloc N bytes" report
/// (gperftools `tcmalloc.cc`, printed above `large_alloc_report_threshold`): the kernel was killed for
/// using all the machine's RAM ("Your session crashed after using all available RAM").
const KERNEL_RESTART_RAM: Rule = check(
    kernel_restart_after_large_alloc,
    Kind::Host,
    Source::OomKiller,
);

/// PyTorch `c10/cuda/CUDAMallocAsyncAllocator.cpp` and the caching allocator's memory-fraction limit:
/// "Allocation on device N would exceed allowed memory. (out of memory)\nCurrently allocated : …\nRequested
/// : …\nDevice limit : …\nFree (according to CUDA): …" (ComfyUI shows "torch.OutOfMemoryError: Allocation on
/// device").
const PT_FRACTION: Rule = any(
    &[
        "would exceed allowed memory",
        "outofmemoryerror: allocation on device",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);

// ---- Host pinned memory (before the CUDA error texts it carries) ----

/// PyTorch `torch/utils/data/_utils/pin_memory.py`: an error "Caught … in pin memory thread for device N"
/// wrapping a CUDA "out of memory" — page-locked host RAM ran out, not the device.
const PIN_THREAD: Rule = check(pin_thread_oom, Kind::Host, Source::PinnedMemory);

/// TensorFlow `core/common_runtime/device/device_host_allocator.h`: "could not allocate pinned host memory
/// of size: N"; stream executor `cuda/cuda_driver.cc`: "failed to alloc N bytes on host:
/// CUDA_ERROR_OUT_OF_MEMORY" (cuMemHostAlloc: page-locked host RAM).
const TF_PINNED: Rule = any(
    &[
        "could not allocate pinned host memory",
        "bytes on host: cuda_error_out_of_memory",
    ],
    Kind::Host,
    Source::PinnedMemory,
);
/// PyTorch `aten/src/ATen/cuda/CachingHostAllocator.cpp` (pinned host buffers) and ggml-cuda
/// `ggml_cuda_host_malloc`: "failed to allocate X MiB of pinned memory".
/// MindSpore `plugin/device/gpu/hal/device/cuda_driver.cc` (`AllocHostPinnedMem`, also its dataset arena
/// `minddata/dataset/util/arena.cc`): "cudaHostAlloc failed, ret[2], out of memory" (2 =
/// `cudaErrorMemoryAllocation`).
/// A mention of the host allocator on a line that reports another CUDA error (THC's "THCudaCheck FAIL
/// file=…/THCCachingHostAllocator.cpp … error=4 : unspecified launch failure") is that error, not memory.
const PINNED: Rule = check(pinned_host, Kind::Host, Source::PinnedMemory);

// ---- GPU memory: CUDA runtime and libraries ----

/// CUDA runtime `cudaErrorMemoryAllocation` ("out of memory") as PyTorch `c10/cuda/CUDAException.cpp`
/// prints it ("CUDA error: out of memory", also in `torch.AcceleratorError` and Ollama's runner), HIP's
/// `hipErrorOutOfMemory`, and ggml's `CUDA_CHECK` ("CUDA error 2 at …: out of memory", "ROCm error: out of
/// memory").
const CUDA_RT_OOM: Rule = any(
    &[
        "cuda error: out of memory",
        "cudaerrormemoryallocation",
        "hip_error_outofmemory",
        "hiperroroutofmemory",
        "hip error: out of memory",
        "rocm error: out of memory",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// Old THC (PyTorch ≤ 0.4, Lua cutorch): "THCudaCheck FAIL file=… error=2 : out of memory", "cuda runtime
/// error (2) : out of memory".
const THC_OOM: Rule = any(
    &[
        "error=2 : out of memory",
        "cuda runtime error (2) : out of memory",
    ],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// Intel oneAPI Unified Runtime `ur_api.h` / Level Zero `ze_api.h`: `UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY`,
/// `ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY` (XPU device memory).
const XPU_RT_OOM: Rule = any(
    &[
        "ur_result_error_out_of_device_memory",
        "ze_result_error_out_of_device_memory",
    ],
    Kind::Gpu,
    Source::PytorchXpu,
);
/// TensorRT's logger (`libnvinfer`, closed source; the "Error Code N:" prefix is `ErrorCode` in
/// `include/NvInferRuntimeBase.h`): "Requested amount of GPU memory (N bytes) could not be allocated. There may
/// not be enough free memory for allocation to succeed." (TensorRT 7: "Requested amount of memory (N bytes)
/// …"), "[virtualMemoryBuffer.cpp::resizePhysical::N] Error Code 2: OutOfMemory (no further information)",
/// TensorRT 7's "OutOfMemory Error in allocate" / "Out of memory error during getBestTactic", and its default
/// allocator's "Cuda Error in nvinfer1::internal::DefaultAllocator::allocate: 2 (out of memory)".
const TRT_OOM: Rule = any(
    &[
        "could not be allocated. there may not be enough free memory",
        "error code 2: outofmemory",
        "outofmemory error in allocate",
        "out of memory error during getbesttactic",
        // TensorRT 7's builder (`builder/tacticOptimizer.cpp`): "GPU memory allocation error during
        // getBestTactic: <layer>".
        "gpu memory allocation error during getbesttactic",
        // TensorRT ≥ 8 builder: "Skipping tactic N due to insufficient memory on requested size of X detected
        // for tactic …" (the device's free memory is below the tactic's workspace).
        "due to insufficient memory on requested size",
        "defaultallocator::allocate: 2 (out of memory)",
    ],
    Kind::Gpu,
    Source::TensorRt,
);
/// tiny-cuda-nn `include/tiny-cuda-nn/gpu_memory.h` (`GPUMemory::allocate_memory`) through `CUDA_CHECK_THROW`
/// (`common_host.h`): "Could not allocate memory: …/gpu_memory.h:N cudaMalloc((void**)&rawptr,
/// n_bytes+DEBUG_GUARD_SIZE*2) failed: out of memory" (older: "… failed with error out of memory"). The
/// call's argument list puts the CUDA name too far back for [`CUDA_NEAR_OOM`].
const TCNN_OOM: Rule = check(tcnn_oom, Kind::Gpu, Source::TinyCudaNn);
/// HAMi-core `src/allocator/allocator.c`: "Device N OOM <would-be usage> / <limit>" (`oom_check`, the
/// container's device-memory cap) and "cuMemoryAllocate failed res=2" (the driver's `CUresult` 2,
/// `CUDA_ERROR_OUT_OF_MEMORY`).
const HAMI_OOM: Rule = check(hami_oom, Kind::Gpu, Source::Hami);
/// HeavyDB `DataMgr/BufferMgr/BufferMgr.cpp`: "ALLOCATION failed to find NB throwing out of memory GPU_MGR:N"
/// (the manager type from `AbstractBufferMgr.h`: `GPU_MGR` is device memory, `CPU_MGR` host memory).
const HEAVYDB_GPU: Rule = any(
    &["throwing out of memory gpu_mgr"],
    Kind::Gpu,
    Source::HeavyDb,
);
/// See [`HEAVYDB_GPU`]: the CPU buffer manager.
const HEAVYDB_CPU: Rule = any(
    &["throwing out of memory cpu_mgr"],
    Kind::Host,
    Source::HeavyDb,
);
/// Sophgo libsophon `bmlib/src/bmlib_memory.cpp`: "bm_alloc_gmem failed, dev_id = N, size = 0x…" — the
/// Sophon TPU's global (device) memory.
const SOPHON_GMEM: Rule = any(&["bm_alloc_gmem failed"], Kind::Gpu, Source::Sophon);
/// OpenCV `modules/core/src/alloc.cpp` (`cv::fastMalloc` → `OutOfMemoryError`): `CV_Error_(StsNoMem, "Failed
/// to allocate N bytes")`, printed "(-4:Insufficient memory) Failed to allocate N bytes in function
/// 'OutOfMemoryError'" — host RAM.
const OPENCV_ALLOC: Rule = any(
    &["(-4:insufficient memory) failed to allocate"],
    Kind::Host,
    Source::OpenCv,
);
/// The same OpenCV message asking for more than 64 TiB, beyond any single machine's RAM (the largest servers
/// hold 32 TiB): a size computed wrong, not memory.
const OPENCV_ABSURD: Rule =
    check(opencv_absurd, Kind::NotMemory, Source::OpenCv).with(Hint::ImpossibleSize);
/// ggml's aligned allocator (`ggml.c` `ggml_aligned_malloc`: "insufficient memory (attempted to allocate X
/// MB)") asking for more than 64 TiB: a size that wrapped around (a negative size read as unsigned, 16 EiB),
/// not memory.
const GGML_ABSURD: Rule =
    check(ggml_absurd, Kind::NotMemory, Source::LlamaCpp).with(Hint::ImpossibleSize);
/// macOS's `malloc: *** mach_vm_map(size=N) failed` and Kokkos' `HostSpace::allocate[…]( N ) FAILED` asking for
/// more than 64 TiB: a size computed wrong.
const VM_ABSURD: Rule =
    check(vm_absurd, Kind::NotMemory, Source::CpuAllocator).with(Hint::ImpossibleSize);
/// Rust's allocation failure handler (`std::alloc::handle_alloc_error`, as tokenizers, candle or polars abort
/// with it): "memory allocation of N bytes failed" — the host's heap.
const RUST_ALLOC: Rule = check(rust_alloc_failure, Kind::Host, Source::CpuAllocator);
/// The same handler asked for more than 64 TiB ("memory allocation of 18446744071841293701 bytes failed", a
/// negative size read as unsigned): a size computed wrong.
const RUST_ABSURD: Rule =
    check(rust_absurd, Kind::NotMemory, Source::CpuAllocator).with(Hint::ImpossibleSize);
/// gperftools' tcmalloc reporting a request over 64 TiB ("tcmalloc: large alloc 140113840283648 bytes ==
/// (nil)") before the `std::bad_alloc` it ends in: a size computed wrong.
const TCMALLOC_ABSURD: Rule =
    check(tcmalloc_absurd, Kind::NotMemory, Source::CpuAllocator).with(Hint::ImpossibleSize);
/// cuBLAS `cublas_api.h` `CUBLAS_STATUS_ALLOC_FAILED`: the handle or workspace could not be allocated.
const CUBLAS_ALLOC: Rule = any(&["cublas_status_alloc_failed"], Kind::Gpu, Source::Cublas);
/// cuDNN `CUDNN_STATUS_ALLOC_FAILED` and `CUDNN_STATUS_NOT_ENOUGH_WORKSPACE` (cudnn status codes).
const CUDNN_ALLOC: Rule = any(
    &[
        "cudnn_status_alloc_failed",
        "cudnn_status_not_enough_workspace",
    ],
    Kind::Gpu,
    Source::Cudnn,
);

/// PyTorch `torch/cuda/__init__.py` (`_check_capability`, `incompatible_device_warn`): "<GPU> with CUDA
/// capability sm_NN is not compatible with the current PyTorch installation. The current PyTorch install
/// supports CUDA capabilities …". No kernel of that build runs on the card, so a kernel or cuDNN failure
/// that follows (cuDNN's "Unable to find a valid cuDNN algorithm", which otherwise means its workspaces did
/// not fit) is the build's, not the memory's.
const TORCH_ARCH_UNSUPPORTED: Rule = any(
    &["is not compatible with the current pytorch installation"],
    Kind::NotMemory,
    Source::NoKernelImage,
);
/// PyTorch `aten/src/ATen/native/cudnn/Conv_v7.cpp`: "Unable to find a valid cuDNN algorithm to run
/// convolution" — every algorithm's workspace failed to allocate.
const CUDNN_NO_ALGO: Rule = any(
    &["unable to find a valid cudnn algorithm"],
    Kind::Gpu,
    Source::Cudnn,
);
/// transformers `quantizers/quantizer_bnb_4bit.py` / `quantizer_bnb_8bit.py`: "Some modules are dispatched on
/// the CPU or the disk. Make sure you have enough GPU RAM to fit the quantized model."
const BNB_DISPATCH: Rule = any(
    &["make sure you have enough gpu ram to fit"],
    Kind::Gpu,
    Source::PytorchCuda,
);

// ---- GPU memory: serving engines ----

/// vLLM `vllm/worker/worker.py` (`raise_if_cache_size_invalid`) and `vllm/v1/core/kv_cache_utils.py`
/// (`check_enough_kv_cache_memory`): "No available memory for the cache blocks", "The model's max seq len (N)
/// is larger than the maximum number of tokens that can be stored in KV cache (M)", "(X GiB KV cache is
/// needed, which is larger than the available KV cache memory (Y GiB)".
const VLLM_KV: Rule = any(
    &[
        "no available memory for the cache blocks",
        "larger than the maximum number of tokens that can be stored in kv cache",
        "is needed, which is larger than the available kv cache memory",
    ],
    Kind::Gpu,
    Source::Vllm,
);
/// vLLM `vllm/v1/worker/gpu_worker.py` (`init_device`): "Free memory on device cuda:N (F/T GiB) on startup is
/// less than desired GPU memory utilization (U, R GiB)".
const VLLM_STARTUP: Rule = any(
    &["is less than desired gpu memory utilization"],
    Kind::Gpu,
    Source::Vllm,
);
/// SGLang `python/sglang/srt/model_executor/model_runner.py` (memory pool): "Not enough memory. Please try to
/// increase --mem-fraction-static."
const SGLANG_POOL: Rule = any(
    &["please try to increase --mem-fraction-static"],
    Kind::Gpu,
    Source::Sglang,
);
/// TGI `server/text_generation_server/models/flash_causal_lm.py` (`warmup`): "Not enough memory to handle N
/// prefill tokens. You need to decrease `--max-batch-prefill-tokens`".
const TGI_WARMUP: Rule = any(&["not enough memory to handle"], Kind::Gpu, Source::Tgi);

// ---- GPU memory: llama.cpp / ggml, Metal, MLX ----

/// ggml `ggml-cuda.cu` (`ggml_backend_cuda_buffer_type_alloc_buffer`): "allocating X MiB on device N:
/// cudaMalloc failed: out of memory".
const GGML_CUDA: Rule = any(
    &["cudamalloc failed: out of memory"],
    Kind::Gpu,
    Source::LlamaCpp,
);
/// ggml `ggml-vulkan.cpp`: "ggml_vulkan: Device memory allocation of size N failed." and Vulkan's
/// `vk::Result::eErrorOutOfDeviceMemory` ("ErrorOutOfDeviceMemory").
const GGML_VULKAN: Rule = any(
    &["device memory allocation of size", "erroroutofdevicememory"],
    Kind::Gpu,
    Source::LlamaCpp,
);
/// ggml `ggml-backend.cpp` (`ggml_backend_cpu_buffer_type_alloc_buffer`): "failed to allocate buffer of size
/// N" — host RAM.
/// Before February 2024 the same function asserted instead (`GGML_ASSERT(data != NULL && "failed to allocate
/// buffer")` after `malloc`, ggml `ggml-backend.c`): the quoted reason is host RAM too.
const GGML_CPU_ALLOC: Rule = any(
    &[
        "cpu_buffer_type_alloc_buffer: failed to allocate",
        "&& \"failed to allocate buffer\"",
    ],
    Kind::Host,
    Source::LlamaCpp,
);
/// ggml `ggml-alloc.c` (`ggml_gallocr_reserve_n`, `alloc_tensor_range`): "failed to allocate <buffer type>
/// buffer of size N"; llama.cpp `llama-model.cpp`: "unable to allocate <buffer type> buffer" (older "unable
/// to allocate backend buffer"). A CPU (or `_Host`) buffer type is host memory, any other a device's.
const GGML_HOST_BUFFER: Rule = check(ggml_host_buffer, Kind::Host, Source::LlamaCpp);
/// See [`GGML_HOST_BUFFER`]: a device buffer type (CUDA0, ROCm0, Metal, Vulkan0, backend, …).
const GGML_DEVICE_BUFFER: Rule = check(ggml_device_buffer, Kind::Gpu, Source::LlamaCpp);
/// Apple IOGPU `kIOGPUCommandBufferCallbackErrorOutOfMemory` ("Insufficient Memory (00000008:…)") as MLX
/// `mlx/backend/metal` ("[METAL] Command buffer execution failed: Insufficient Memory") and ggml-metal report it;
/// Metal `MTLCommandBuffer.h` `MTLCommandBufferErrorOutOfMemory` (= 8) as an `NSError` prints it:
/// `Error Domain=MTLCommandBufferErrorDomain Code=8 "Insufficient Memory (IOAF code 8)"`.
const METAL_CMDBUF: Rule = any(
    &[
        "kiogpucommandbuffercallbackerroroutofmemory",
        "command buffer execution failed: insufficient memory",
        "mtlcommandbuffererroroutofmemory",
        "mtlcommandbuffererrordomain code=8 ",
        "insufficient memory (ioaf code 8)",
    ],
    Kind::Gpu,
    Source::Metal,
);
/// ggml `ggml-metal.m`: "ggml_metal_get_buffer: error: buffer is nil" after "warning: current allocated size
/// is greater than the recommended max working set size".
const METAL_GGML: Rule = any(
    &[
        "ggml_metal_get_buffer: error: buffer is nil",
        // `ggml_metal_add_buffer`: "buffer '%s' size %zu is larger than buffer maximum of %zu".
        "is larger than buffer maximum of",
    ],
    Kind::Gpu,
    Source::Metal,
);
/// MLX `mlx/backend/metal/allocator.cpp`: "[metal::malloc] Attempting to allocate N bytes which is greater
/// than the maximum allowed buffer size of M bytes." (older: "[malloc_or_wait] Unable to allocate N bytes.").
const MLX_MALLOC: Rule = any(
    &[
        "[metal::malloc] attempting to allocate",
        "[malloc_or_wait] unable to allocate",
        // MLX ≥ 0.25 (`mlx/backend/metal/allocator.cpp`, `cuda/allocator.cpp`): "[malloc] Unable to allocate N
        // bytes."
        "[malloc] unable to allocate",
        // The same message rethrown without its prefix (`std::runtime_error` through libc++abi).
        "which is greater than the maximum allowed buffer size",
        // Metal's per-buffer cap as people quote it (`MTLDevice.maxBufferLength`).
        "maxbufferlength",
    ],
    Kind::Gpu,
    Source::Mlx,
);

// ---- GPU / accelerator memory: XLA, JAX, TensorFlow ----

/// XLA's out-of-memory status for a request of a few bytes ("Out of memory while trying to allocate 24
/// bytes"): no device is full at that size; the allocator or a self-built jaxlib is broken.
const XLA_TINY: Rule = check(xla_tiny, Kind::NotMemory, Source::Xla).with(Hint::BrokenAllocator);
/// XLA / PJRT (`xla/pjrt`, `xla/stream_executor`): "RESOURCE_EXHAUSTED: Out of memory while trying to
/// allocate N bytes", "Out of memory allocating N bytes", "Failed to allocate request for X (NB) on device
/// ordinal N" (older Status text: "Resource exhausted: …").
const XLA_OOM: Rule = any(
    &[
        "resource_exhausted: out of memory",
        "resource exhausted: out of memory",
        "resource_exhausted: failed to allocate",
        "resource exhausted: failed to allocate",
        "out of memory while trying to allocate",
    ],
    Kind::Gpu,
    Source::Xla,
);
/// XLA:TPU compiler: "Ran out of memory in memory space hbm. Used X of Y hbm. Exceeded hbm capacity by Z."
/// (also memory space "vmem"); the TPU runtime: "Attempting to reserve X at the bottom of memory. That was not
/// possible. There are Y free, …".
const XLA_TPU: Rule = any(
    &[
        // XLA's TPU error catalogue (`docs/errors/error_1001.md`, `error_1002.md`): "Allocation (size=N) would
        // exceed memory (size=M) :: … space=hbm", "TPU TensorCore Hbm usage: X, SparseCore Hbm usage Y,
        // exceeding available bytes: Z"; the compiler's "Ran out of memory on HBM, the total memory required
        // for HLO temporaries (X) exceeds available HBM (Y)".
        "would exceed memory (size=",
        "exceeding available bytes:",
        "ran out of memory on hbm",
        // The TPU compiler's report beside its RESOURCE_EXHAUSTED error: "Total hbm usage >= 11.47G: reserved
        // … program … arguments …", "Program hbm requirement 10.96G", "Largest program allocations in hbm".
        "total hbm usage >=",
        "program hbm requirement",
        "ran out of memory in memory space",
        "that was not possible. there are",
        // The TPU runtime's allocator: "RESOURCE_EXHAUSTED: Could not allocate N bytes in memory 0x0x0_HBM0;
        // X bytes allocatable, Y bytes available".
        "bytes allocatable, ",
        "at the bottom of memory. that was not possible",
    ],
    Kind::Gpu,
    Source::Xla,
);
/// TensorFlow's OOM on the CPU allocator ("… on /job:…/device:CPU:0 by allocator cpu", "Allocator (cpu) ran
/// out of memory"): host RAM.
const TF_CPU: Rule = check(tf_cpu_oom, Kind::Host, Source::Tensorflow);
/// TensorFlow `core/framework/op_kernel.cc` / `common_runtime/bfc_allocator.cc`: "OOM when allocating tensor
/// with shape[…]", "Allocator (GPU_0_bfc) ran out of memory trying to allocate X"; stream executor
/// `cuda/cuda_driver.cc`: "failed to allocate X (N bytes) from device: CUDA_ERROR_OUT_OF_MEMORY", "failed to
/// alloc N bytes unified memory; result: CUDA_ERROR_OUT_OF_MEMORY"; its ROCm build (`rocm/rocm_driver.cc`):
/// "failed to allocate X (N bytes) from device: hipError_t(1002)" (`hipErrorMemoryAllocation`, HIP's
/// out-of-memory code in `hip_runtime_api.h`).
const TF_OOM: Rule = any(
    &[
        "oom when allocating tensor",
        "ran out of memory trying to allocate",
        "cuda_error_out_of_memory",
        "from device: hiperror_t(1002)",
    ],
    Kind::Gpu,
    Source::Tensorflow,
);

// ---- Host shared memory (/dev/shm is RAM), before "disk full" ----

/// PyTorch `aten/src/ATen/MapAllocator.cpp` (tensors shared between processes through `/dev/shm/torch_*`):
/// "unable to write to file </torch_…>".
const TORCH_SHM: Rule = any(
    &["unable to write to file </torch_"],
    Kind::Host,
    Source::SharedMemory,
);
/// PyTorch `torch/csrc/DataLoader.cpp` (SIGBUS handler): "Unexpected bus error encountered in worker. This
/// might be caused by insufficient shared memory (shm)."; `torch/utils/data/_utils/signal_handling.py`:
/// "DataLoader worker (pid N) is killed by signal: Bus error. It is possible that dataloader's workers are out
/// of shared memory."
const LOADER_SHM: Rule = any(
    &[
        "insufficient shared memory (shm)",
        // The same as a person retypes it ("insufficient shared memery (shm)").
        "insufficient shared memery",
        "is killed by signal: bus error",
        "workers are out of shared memory",
    ],
    Kind::Host,
    Source::SharedMemory,
);
/// NCCL `src/misc/shmutils.cc` (`ncclShmOpen`): "NCCL WARN Cuda failure 'out of memory'" while registering a
/// segment is device memory.
const NCCL_CUDA_OOM: Rule = check(nccl_cuda_failure_oom, Kind::Gpu, Source::Nccl);
/// The same NCCL warning with any other CUDA error ("Cuda failure 'invalid argument'"): not memory, even
/// though "Error while creating shared memory segment" follows it.
const NCCL_CUDA_FAILURE: Rule = check(nccl_cuda_failure_other, Kind::NotMemory, Source::Nccl);
/// NCCL `src/misc/shmutils.cc` / `src/include/shm.h`: "Error while creating shared memory segment …", "Call
/// to posix_fallocate failed : No space left on device", "failed to extend /dev/shm/nccl-… to N bytes".
/// NCCL `src/include/shm.h`: "Call to shm_open failed : Permission denied" before "Error while creating shared
/// memory segment": `/dev/shm` refused the file (permissions, a read-only mount), not a lack of space.
/// CPython `Modules/_multiprocessing/semaphore.c`: `SemLock` creates a POSIX semaphore with `sem_open`, which
/// Linux keeps in `/dev/shm`, so "OSError: [Errno 28] No space left on device" from `_multiprocessing.SemLock`
/// is a full `/dev/shm` (a container's 64 MB default), RAM rather than disk.
const SEMLOCK_SHM: Rule =
    check(semlock_enospc, Kind::Host, Source::SharedMemory).with(Hint::SharedMemory);
const NCCL_SHM_DENIED: Rule = any(
    &["shm_open failed : permission denied"],
    Kind::NotMemory,
    Source::Nccl,
)
.with(Hint::Communication);
const NCCL_SHM: Rule = any(
    &[
        "error while creating shared memory segment",
        "posix_fallocate failed",
        "failed to extend /dev/shm",
    ],
    Kind::Host,
    Source::SharedMemory,
);
/// errno 28 ENOSPC on a line naming shared memory (`/dev/shm`, `shm`, "shared memory"): RAM, not disk.
const SHM_ENOSPC: Rule = check(enospc_on_shm, Kind::Host, Source::SharedMemory);
/// `inotify_add_watch` returns ENOSPC when the per-user watch limit (`fs.inotify.max_user_watches`) is reached,
/// with the disk far from full: Omniverse's "Failed to create change watch for `…`: errno=28/No space left on
/// device".
const INOTIFY_LIMIT: Rule = any(
    &["failed to create change watch"],
    Kind::NotMemory,
    Source::Unknown,
);

// ---- Disk ----

/// errno 28 ENOSPC "No space left on device" (Python "[Errno 28]", Rust `ErrorKind::StorageFull` / "os error
/// 28"), errno 122 EDQUOT "Disk quota exceeded", Windows ERROR_DISK_FULL (112) "There is not enough space on
/// the disk".
const ENOSPC: Rule = any(
    &[
        "no space left on device",
        // glibc's `strerror(ENOSPC)` in the zh_CN locale.
        "设备上没有空间",
        // SQLite `SQLITE_FULL` (`sqlite3ErrStr`): "database or disk is full".
        "database or disk is full",
        "disk quota exceeded",
        "storagefull",
        "not enough space on the disk",
        "os error 112",
        // NumPy `ndarray.tofile` (`numpy/_core/src/multiarray/convert.c`): "Not enough free space to write N
        // bytes".
        "not enough free space to write",
        // A tool's or a framework's own short report, "error: no disk space".
        "error: no disk space",
    ],
    Kind::Disk,
    Source::DiskFull,
);
/// Unsloth `save.py` (GGUF export on Kaggle): "Kaggle only provides 20GB of disk space. … will use too much
/// disk space."; raylet `file_system_monitor.cc`: "/tmp/ray/session_… is over 95% full, Object creation will
/// fail if spilling is required."
/// Hugging Face Spaces: "Workload evicted, storage limit exceeded (50G)".
const TOOL_DISK: Rule = any(
    &[
        "will use too much disk space",
        "of disk space. merging to",
        "storage limit exceeded (",
        // Elasticsearch's disk allocator: "flood stage disk watermark [95%] exceeded".
        "flood stage disk watermark",
        // Japanese: "容量不足で失敗" (failed for lack of storage capacity).
        "容量不足",
        // An installer's free-space check ("requires 78.0GiB disk space, has 17.8GiB").
        "disk space, has ",
    ],
    Kind::Disk,
    Source::DiskFull,
);
const RAY_DISK: Rule = check(ray_disk_full, Kind::Disk, Source::DiskFull);
/// huggingface_hub `file_download.py` (`_check_disk_space`): "Not enough free disk space to download the
/// file. The expected file size is: X MB. The target location … only has Y MB free disk space."
const HF_DISK: Rule = any(
    &["not enough free disk space", "mb free disk space"],
    Kind::Disk,
    Source::DiskFull,
);
/// PyTorch `caffe2/serialize/inline_container.cc` (`torch.save`): "PytorchStreamWriter failed writing file
/// data/N: file write failed", and its "[enforce fail at inline_container.cc:N] . unexpected pos A vs B" when
/// a write came up short.
const STREAM_WRITER: Rule = check(stream_writer, Kind::Disk, Source::DiskFull);
/// Hugging Face datasets `builder.py` (`_check_disk_space`): "Not enough disk space. Needed: X (download: …".
const DATASETS_DISK: Rule = any(&["not enough disk space"], Kind::Disk, Source::DiskFull);
/// Ray's object store spilling to a full disk (`python/ray/exceptions.py` `OutOfDiskError`: "Local disk is
/// full"); kubelet's eviction for local storage (`pkg/kubelet/eviction/helpers.go`: "The node was low on
/// resource: ephemeral-storage.").
const STORE_DISK: Rule = any(
    &[
        "outofdiskerror",
        // Quotas as tools word them: "OS disk quota error", CodaLab's "Requested more disk (X) than user disk
        // quota left (Y)"; "No Space left on the device" (wandb's CLI).
        "disk quota error",
        "than user disk quota left",
        "no space left on the device",
        "disk quota is exceeded",
        // dmlc-core's file stream (`src/io/local_filesys.cc`): "FileStream.Write incomplete" — a short
        // `fwrite`, the disk full while MXNet or XGBoost saves.
        "filestream.write incomplete",
        // kubelet's node condition behind an eviction (`DiskPressure`); conda's installer, "Ensure there is
        // enough space in /tmp and that the installation package is not corrupt".
        "[diskpressure]",
        "ensure there is enough space in",
        // wandb's `DiskQuotaError` (EDQUOT writing its staging files); SageMaker's training-job failure
        // reason "Artifact upload failed:Insufficient disk space".
        "diskquotaerror",
        "insufficient disk space",
        // "Not enough disk space" in Chinese, as Chinese-language tools print it.
        "磁盘空间不足",
        "the node was low on resource: ephemeral-storage",
        // kubelet's other eviction wording (`pkg/kubelet/eviction`): "Pod ephemeral local storage usage exceeds
        // the total limit of containers N".
        "ephemeral local storage usage exceeds",
    ],
    Kind::Disk,
    Source::DiskFull,
);
/// TensorFlow's file systems map ENOSPC to RESOURCE_EXHAUSTED with the path as message ("Error writing (tmp)
/// checkpoint file: …: Resource exhausted: /path/…").
const TF_DISK: Rule = check(tf_exhausted_path, Kind::Disk, Source::DiskFull);

// ---- Host memory ----

/// PyTorch `c10/core/impl/alloc_cpu.cpp`: "DefaultCPUAllocator: can't allocate memory: you tried to allocate
/// N bytes" (Windows: "not enough memory"); old TH `THGeneral.cpp`: "$ Torch: not enough memory: you tried to
/// allocate 0GB. Buy new RAM!"; C++ `<new>`: `std::bad_alloc`.
const CPU_ALLOC: Rule = any(
    &[
        "defaultcpuallocator",
        "torch: not enough memory",
        "std::bad_alloc",
    ],
    Kind::Host,
    Source::CpuAllocator,
);
/// CTranslate2 `src/cpu/allocator.cc` (faster-whisper, …): "mkl_malloc: failed to allocate memory",
/// "aligned_alloc: failed to allocate memory" — its CPU allocators when `mkl_malloc` / `posix_memalign` fail.
const CT2_CPU_ALLOC: Rule = any(
    &[
        "mkl_malloc: failed to allocate memory",
        "aligned_alloc: failed to allocate memory",
    ],
    Kind::Host,
    Source::CpuAllocator,
);
/// Windows `ERROR_COMMITMENT_LIMIT` (1455): "The paging file is too small for this operation to complete"
/// (commit charge = RAM + page file exhausted, typically while loading DLLs or weights).
/// Rust's `std::io::Error` shows it as "(os error 1455)" (safetensors), with the message in the system's
/// language (Chinese Windows: "页面文件太小，无法完成操作。").
const WIN_COMMIT: Rule = any(
    &[
        "paging file is too small",
        "winerror 1455",
        "(os error 1455)",
        "页面文件太小",
    ],
    Kind::Host,
    Source::CpuAllocator,
);
/// Ollama `llm/server.go`: "model requires more system memory (X GiB) than is available (Y GiB)".
const OLLAMA_RAM: Rule = any(
    &["model requires more system memory"],
    Kind::Host,
    Source::Ollama,
);
/// `torch/utils/data/_utils/signal_handling.py`: "DataLoader worker (pid N) is killed by signal: Killed."
const LOADER_KILLED: Rule = any(
    &["is killed by signal: killed"],
    Kind::Host,
    Source::DataLoaderWorker,
);
/// Linux `mm/oom_kill.c`: "Out of memory: Killed process N (python) total-vm:…kB, anon-rss:…", "… invoked
/// oom-killer", "oom-kill:constraint=…", "oom_reaper: reaped process N"; cgroups: "Memory cgroup out of memory"; Kubernetes container status reason
/// `OOMKilled`; Slurm `task/cgroup`: "Detected 1 oom-kill event(s) in StepId=…" / "… oom_kill event …", "Some
/// of your processes may have been killed by the cgroup out-of-memory handler"; Colab: "Your session crashed
/// after using all available RAM".
const OOM_KILLER: Rule = any(
    &[
        "out of memory: killed process",
        // Kernels before 4.x (`mm/oom_kill.c`): "Out of memory: Kill process N (name) score N or sacrifice
        // child".
        "or sacrifice child",
        "invoked oom-killer",
        "oom-kill:",
        "total-vm:",
        "oom_reaper: reaped process",
        // kubelet's eviction message (`pkg/kubelet/eviction/helpers.go`): "The node was low on resource:
        // memory."
        "the node was low on resource: memory",
        // The kubelet's pod rejection or eviction under its node condition (`pkg/kubelet/lifecycle`): "The node
        // had condition: [MemoryPressure]".
        "the node had condition: [memorypressure]",
        // DuckDB's buffer manager at its memory limit (`OutOfMemoryException`): "Out of Memory Error: Failed to
        // allocate block of N bytes", "Out of Memory Error: failed to allocate data of size 4.0 MiB (93.7
        // MiB/95.3 MiB used)".
        "out of memory error: failed to allocate",
        // Arrow's memory pool (`cpp/src/arrow/memory_pool.cc`): "Out of memory: malloc of size N failed".
        "out of memory: malloc of size",
        // iceoryx zeroing a new shared-memory segment (`posix_shared_memory.cpp`): "a fatal SIGBUS signal
        // appeared caused by memset … maybe requires more memory than it is currently available in the system".
        "requires more memory than it is currently available in the system",
        "memory cgroup out of memory",
        "oom-kill event",
        "oom_kill event",
        "cgroup out-of-memory handler",
        "after using all available ram",
        // systemd `service_result_to_string(SERVICE_FAILURE_OOM_KILL)`: "Failed with result 'oom-kill'".
        "failed with result 'oom-kill'",
        // Slurm's `jobacct_gather` memory enforcement (`slurmstepd`): "Job N exceeded memory limit (X > Y),
        // being killed", "Exceeded job memory limit".
        "exceeded job memory limit",
        // Slurm's `jobacct_gather` for a step: "Exceeded step memory limit at some point."
        "exceeded step memory limit",
        // PBS/Torque's MOM: "PBS: job killed: mem job total N kb exceeded limit N kb", "Job exceeded a memory
        // resource limit (vmem, pvmem, etc.). Job was aborted".
        "pbs: job killed: mem",
        "job exceeded a memory resource limit",
        "exceeded memory limit (",
        // Hugging Face Spaces' runtime error when a Space's container passes its RAM: "Memory limit exceeded
        // (16Gi)".
        "memory limit exceeded (",
        // systemd-oomd (`src/oom/oomd-manager.c`): "Killed <cgroup> due to memory pressure for <cgroup> being
        // X% > Y%", "… due to memory used (N) / total (M) and swap used …"; Ray's raylet (`node_manager.cc`):
        // "N Workers (tasks / actors) killed due to memory pressure (OOM)".
        "due to memory pressure",
        "due to memory used (",
        // containerd's event for a container the kernel's OOM killer hit (`TaskOOM`).
        "taskoom event",
        // macOS jetsam (`bsd/kern/kern_memorystatus.c`): "memorystatus: killing_top_process pid N …",
        // "killing_specific_process … (per-process-limit)", "low swap: killing largest compressed process";
        // and its Force Quit dialog, "Your system has run out of application memory."
        "memorystatus: killing",
        "low swap: killing largest compressed process",
        "your system has run out of application memory",
        // WSL2's VM creation refused by Hyper-V's compute service: "Wsl/Service/CreateInstance/CreateVm/HCS/
        // E_OUTOFMEMORY".
        "hcs/e_outofmemory",
        // SGLang's hierarchical cache (`mem_cache/memory_pool_host.py`): "Not enough host memory available.
        // Requesting X GB but only have Y GB free"; torch_npu's pinned host allocator
        // (`CachingHostAllocator.cpp`): "Malloc pin memory failed, host out of memory"; ggml's CPU allocator
        // (`ggml.c` `ggml_malloc`): "ggml_malloc: failed to allocate X MB"; Ray's object store
        // (`ObjectStoreFullError`, in `/dev/shm`): "in object store because it is full"; Paddle's CPU allocator
        // (`cpu_allocator.cc`): "Fail to alloc memory of N size".
        "not enough host memory",
        "host out of memory",
        // LLVM's `report_bad_alloc_error` (Triton, TorchInductor, Mesa compiling on the host): "LLVM ERROR: out
        // of memory".
        "llvm error: out of memory",
        // jetson-utils (`cudaMappedMemory.h`): "cudaAllocMapped() failed to allocate memory" — mapped, pinned
        // host memory; the kernel's contiguous memory allocator, "cma_alloc: … alloc failed".
        "cudaallocmapped() failed to allocate memory",
        "cma_alloc: linux,cma: alloc failed",
        // The kernel's kill report ("Killed process N (…) total-vm:…kB, anon-rss:…kB") quoted by its field;
        // macOS jetsam's kill reasons ("vm-pageshortage", "vm-compressor-space-shortage").
        "anon-rss",
        "vm-compressor-space-shortage",
        "vm-pageshortage",
        // A user's own "run out of RAM" / "ran out of RAM": RAM is the host's. Chinese "被kill" / "被杀死"
        // ("was killed"), as users report the OOM killer's SIGKILL.
        "run out of ram",
        "ran out of ram",
        "被kill",
        "被杀死",
        // "爆内存" / "占满内存": RAM blown / filled; Wan2GP's own "you have unsufficient RAM"; "out of space on
        // /dev/shm" (shared memory is RAM).
        "爆内存",
        "占满内存",
        "内存爆了",
        // "超内存" (RAM exceeded; VRAM is 显存), and "dmesg发现OOM" (the kernel log showed the OOM killer).
        "超内存",
        "dmesg发现oom",
        "unsufficient ram",
        "insufficient ram",
        "out of space on /dev/shm",
        "ggml_malloc: failed to allocate",
        // MSVC's `std::bad_alloc::what()` is "bad allocation" (ONNX Runtime on Windows: "Exception during
        // initialization: bad allocation").
        ": bad allocation",
        "in object store because it is full",
        "fail to alloc memory of",
    ],
    Kind::Host,
    Source::OomKiller,
);
/// The container runtime's verdict `OOMKilled` (containerd CRI `oomExitReason`, as Kubernetes shows it in
/// "Reason: OOMKilled" and `kubectl get pods`; Docker's `State.OOMKilled: true`), but not Docker's
/// "OOMKilled: false", which says the opposite.
const OOMKILLED: Rule = check(oomkilled_true, Kind::Host, Source::OomKiller);
/// SIGKILL (what the OOM killer sends) as launchers report it: torch.distributed.elastic
/// `multiprocessing/api.py` ("failed (exitcode: -9)", the ChildFailedError table "exitcode : -9", "Signal 9
/// (SIGKILL) received by PID"), DeepSpeed `launcher/launch.py` ("exits with return code = -9"), Python
/// `subprocess` ("died with <Signals.SIGKILL: 9>", "exit status -9"), Go `os/exec` as Ollama shows it
/// ("signal: killed"), shells and Docker (exit code 137 = 128 + 9), Flyte's pod report ("terminated with
/// exit code (137)"). Not when the container runtime states the kill was not the OOM killer's: containerd CRI
/// (`pkg/cri/server/helpers.go`) sets the reason `OOMKilled` for an OOM kill and `Error` for any other
/// non-zero exit, so "Reason: Error" (Kubernetes) / "Reason [Error]" (Flyte) beside 137, or Docker's
/// "OOMKilled: false", is a SIGKILL from something else (a probe, a timeout, `docker stop`).
const SIGKILL: Rule = check(sigkill, Kind::Host, Source::OomKiller);
const SIGKILL_PHRASES: &[&str] = &[
    "exitcode: -9",
    "exitcode : -9",
    // The same launcher field retyped by a person without its colon ("exitcode -9").
    "exitcode -9",
    "signal 9 (sigkill)",
    "exits with return code = -9",
    "<signals.sigkill: 9>",
    "exit status -9",
    "signal: killed",
    "exit code 137",
    "return code: 137",
    "exit code: 137",
    "exited with code 137",
    "exit status 137",
    "exit code (137)",
    // A task runner's "exit with status code 137" (Taskcluster's worker, CI launchers); "exit with code 137".
    "status code 137",
    "exit with code 137",
    // Docker's container state ("Exited (137)") and people's "exited 137".
    "exited (137)",
    "exited 137",
    // Kubernetes' container status (`ContainerStateTerminated.exitCode`) and KServe's `lastFailureInfo`
    // in YAML: "exitCode: 137".
    "exitcode: 137",
    // joblib/loky `process_executor.py` (`TerminatedWorkerError`): "The exit codes of the workers are
    // {SIGKILL(-9)}" (one per worker: "{SIGKILL(-9), SIGKILL(-9)}"); gunicorn `arbiter.py`: "Worker (pid:N) was sent SIGKILL! Perhaps out of memory?".
    "sigkill(-9)",
    "was sent sigkill!",
    // gunicorn ≥ 20.1 `arbiter.py` (`reap_workers`): "Worker with pid N was terminated due to signal 9".
    "was terminated due to signal 9",
    // gdb: "Program terminated with signal SIGKILL, Killed."; a launcher's "exit code -9" (SIGKILL's
    // negative return code from `subprocess`).
    "terminated with signal sigkill",
    // gcc's driver (`collect2`, `gcc.c`): "ld terminated with signal 9 [Killed]", a linker the OOM killer hit.
    "terminated with signal 9 [killed]",
    "exit code -9 ",
    "exit code -9.",
    "exit code: -9 ",
];
/// SIGBUS as the same launchers report it (torch.distributed.elastic "exitcode: -7", "Signal 7 (SIGBUS)"): a
/// worker touched shared memory that `/dev/shm` could not back.
const SIGBUS: Rule = any(
    &["exitcode: -7", "exitcode : -7", "signal 7 (sigbus)"],
    Kind::Host,
    Source::SharedMemory,
);
/// Ray worker death (`python/ray/_private/...`): "(1) The process is killed by SIGKILL by OOM killer due to
/// high memory usage"; Ray's memory monitor: "Task was killed due to the node running low on memory",
/// `ray.exceptions.OutOfMemoryError`.
const RAY_OOM: Rule = any(
    &[
        "killed by sigkill by oom killer",
        // The actor-death wording of the same list ("Some common causes include: (1) the process was killed by
        // the OOM killer due to high memory usage, …"): read as the raylet's list is, the OOM killer first.
        "the process was killed by the oom killer due to high memory usage",
        "node running low on memory",
        "ray.exceptions.outofmemoryerror",
        // The memory monitor's advice line links its OOM-prevention docs.
        "ray-oom-prevention",
        // The memory monitor's kill report: "Memory on the node … was X / Y (0.95…), which exceeds the memory
        // usage threshold of 0.95. Ray killed this worker …".
        "which exceeds the memory usage threshold of",
    ],
    Kind::Host,
    Source::Ray,
);
/// errno 12 ENOMEM "Cannot allocate memory" (`fork()` "OSError: [Errno 12]", mmap "… (12)").
/// V8 `src/heap/heap.cc` (`Heap::FatalProcessOutOfMemory`): "FATAL ERROR: Reached heap limit Allocation
/// failed - JavaScript heap out of memory" (also "… Ineffective mark-compacts near heap limit …"): the Node
/// process's heap, host RAM up to `--max-old-space-size`.
const V8_HEAP: Rule = any(&["javascript heap out of memory"], Kind::Host, Source::V8);
/// Kaggle's notebook runner: "Your notebook tried to allocate more memory than is available. It has
/// restarted." (the kernel was killed at the VM's RAM limit).
const NOTEBOOK_RAM: Rule = any(
    &["tried to allocate more memory than is available"],
    Kind::Host,
    Source::OomKiller,
);
/// CPython `Objects/bytesobject.c` via PyTorch's `torch/csrc/serialization.cpp` / pickling: "Could not
/// allocate bytes object!" — a `bytes` buffer the size of a storage could not be allocated in host RAM.
const BYTES_OBJECT: Rule = any(
    &["could not allocate bytes object"],
    Kind::Host,
    Source::CpuAllocator,
);
/// `mlock` failing with ENOMEM: llama.cpp `llama-mmap.cpp` ("warning: failed to mlock N-byte buffer …: Cannot
/// allocate memory\nTry increasing RLIMIT_MLOCK ('ulimit -l' as root).") — the locked-memory limit, a warning
/// the load survives, not a lack of RAM.
const MLOCK_LIMIT: Rule = any(
    &["failed to mlock", "rlimit_mlock"],
    Kind::NotMemory,
    Source::LlamaCpp,
);
/// OpenBLAS `driver/others/memory.c`: "Program is Terminated. Because you tried to allocate too many memory
/// regions." — more threads than `NUM_THREADS` the library was built with, a thread-count limit.
const OPENBLAS_REGIONS: Rule = any(
    &["too many memory regions"],
    Kind::NotMemory,
    Source::OpenBlas,
);
const ENOMEM: Rule = any(
    &["cannot allocate memory", "[errno 12]"],
    Kind::Host,
    Source::CpuAllocator,
);
/// NumPy `numpy/_core/_exceptions.py` (`_ArrayMemoryError`): "Unable to allocate X GiB for an array with
/// shape … and data type …"; Python's built-in `MemoryError` (as a word, not inside `OutOfMemoryError`).
const PY_MEMORY_ERROR: Rule = check(memory_error, Kind::Host, Source::PythonMemoryError);
/// NumPy `numpy/_core/_exceptions.py` (`_ArrayMemoryError`): "Unable to allocate X for an array with shape
/// (…) and data type …", shown without its class name: host RAM.
const NUMPY_ARRAY: Rule = any(
    &["for an array with shape"],
    Kind::Host,
    Source::PythonMemoryError,
);
/// Java's `java.lang.OutOfMemoryError` (heap space, GC overhead, …): host RAM (Spark, Elasticsearch, …).
/// The JVM's other heap exhaustion (`OutOfMemoryError: GC overhead limit exceeded`: the collector ran almost
/// all the time and freed almost nothing), as Spark and Databricks show it.
const JAVA_OOM: Rule = any(
    &["java.lang.outofmemoryerror", "gc overhead limit exceeded"],
    Kind::Host,
    Source::CpuAllocator,
);
/// The shell's report of a job killed by SIGKILL (the OOM killer): "Killed" alone on a line, right after a
/// progress bar ("…it/s]Killed") or after the prompt it was printed beside ("$  Killed"), bash "line N: PID Killed cmd" / "[1]+ Killed cmd", zsh "[1] PID killed
/// cmd"; Chinese locales "已杀死".
const KILLED_LINE: Rule = check(killed_line, Kind::Host, Source::OomKiller);
/// TensorFlow `core/framework/allocator.cc` (`Allocator::AllocateRaw` warning): "Allocation of N exceeds 10% of
/// system memory." — single host allocations a tenth of the RAM each; with no other failure in the paste,
/// host RAM is what the job is pressing on.
const TF_SYSTEM_MEMORY: Rule = any(
    &["exceeds 10% of system memory"],
    Kind::Host,
    Source::Tensorflow,
);

// ---- GPU memory: last resorts ----

/// PyTorch's `torch.OutOfMemoryError` / `torch.cuda.OutOfMemoryError` (raised by device allocators only)
/// when the message itself is cut off.
const TORCH_OOM_CLASS: Rule = any(
    &["torch.outofmemoryerror", "torch.cuda.outofmemoryerror"],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// The same class as a notebook names it: IPython's verbose traceback header prints the exception's bare
/// class name before "Traceback (most recent call last)" (`IPython/core/ultratb.py`), "OutOfMemoryError
/// Traceback (most recent call last)". No other runtime's exception class is called `OutOfMemoryError`
/// (Python's is `MemoryError`, TensorFlow's `ResourceExhaustedError`, JAX's `XlaRuntimeError`), and PyTorch
/// raises it from device allocators only.
const NOTEBOOK_OOM_CLASS: Rule = any(
    &["outofmemoryerror traceback (most recent call last)"],
    Kind::Gpu,
    Source::PytorchCuda,
);
/// PyTorch's device out-of-memory named by its class alone, as people quote it ("a false `OutOfMemoryError`",
/// "a Cuda OutOfMemory error"): after Java's, Ray's and the other runtimes' classes of that name (earlier
/// rules), the name is torch's, which device allocators raise.
const TORCH_OOM_NAME: Rule = check(torch_oom_name, Kind::Gpu, Source::PytorchCuda);
/// TensorFlow's `ResourceExhaustedError` with its OOM line cut off (after the disk rules: a full disk raises
/// it too).
const TF_EXHAUSTED: Rule = any(&["resourceexhaustederror"], Kind::Gpu, Source::Tensorflow);
/// `torch/utils/data/dataloader.py`: "DataLoader worker (pid(s) N) exited unexpectedly" without a signal
/// named: a worker died for want of RAM or `/dev/shm` (a segmentation fault is not counted).
const LOADER_EXITED: Rule = check(loader_exited, Kind::Host, Source::DataLoaderWorker);
/// `cudaGetErrorString(cudaErrorMemoryAllocation)` ("out of memory") right after another binding's CUDA
/// prefix ("CUDA Exception: out of memory", "CUDA error 2 at ggml-cuda.cu:N: out of memory").
const CUDA_NEAR_OOM: Rule = check(cuda_near_oom, Kind::Gpu, Source::PytorchCuda);

// ---- Not memory ----

/// CUDA `cudaErrorAssert` ("device-side assert triggered") and the device printf before it: "…: block:
/// [x,y,z], thread: [x,y,z] Assertion `srcIndex < srcSelectDimSize` failed."
const DEVICE_ASSERT: Rule = any(
    // The indexing kernels' assertion (`IndexKernel.cu`), also pasted alone and with a full-width "＜".
    &["device-side assert triggered", "srcselectdimsize failed"],
    Kind::NotMemory,
    Source::DeviceAssert,
);
/// See [`DEVICE_ASSERT`]: the per-thread assertion lines alone.
const DEVICE_ASSERT_LINE: Rule = check(device_assert_line, Kind::NotMemory, Source::DeviceAssert);
/// CUDA `cudaErrorIllegalAddress`: "an illegal memory access was encountered".
const ILLEGAL_ACCESS: Rule = any(
    &["illegal memory access"],
    Kind::NotMemory,
    Source::IllegalAccess,
);
/// CUDA `cudaErrorMisalignedAddress` "misaligned address", `cudaErrorInvalidValue` "invalid argument" (e.g. a
/// pinned request over cudaHostAlloc's size limit), `cudaErrorLaunchFailure` "unspecified launch failure",
/// `cudaErrorNoDevice` "no CUDA-capable device is detected", `cudaErrorDevicesUnavailable` "CUDA-capable
/// device(s) is/are busy or unavailable", `cudaErrorInvalidDevice` "invalid device ordinal".
const CUDA_FAULT: Rule = any(
    &[
        "misaligned address",
        "cuda error: invalid argument",
        "unspecified launch failure",
        "no cuda-capable device is detected",
        "is/are busy or unavailable",
        "invalid device ordinal",
        // `cudaErrorStreamCaptureUnsupported`, `cudaErrorNotSupported`.
        "operation not permitted when stream is capturing",
        "the requested functionality is not supported",
        // The driver's view of a failing link or card (Linux AER "PCIe Bus Error", NVRM Xid 79).
        "pcie bus error",
        "has fallen off the bus",
        // `cudaErrorIllegalInstruction` (a kernel executed an invalid instruction) and `cudaErrorNotSupported`
        // ("operation not supported", e.g. `cudaMallocAsync` where the driver has no memory pools), as
        // PyTorch and lmdeploy's TurboMind (`[TM][ERROR] CUDA runtime error: …`) print them.
        "an illegal instruction was encountered",
        "cuda runtime error: operation not supported",
        "cuda error: operation not supported",
    ],
    Kind::NotMemory,
    Source::CudaError,
);
/// CUDA `cudaErrorNoKernelImageForDevice` "no kernel image is available for execution on the device",
/// `cudaErrorInvalidDeviceFunction` "invalid device function".
const NO_KERNEL: Rule = any(
    // `cudaErrorSymbolNotFound` / `CUDA_ERROR_NOT_FOUND`: "named symbol not found" (a kernel missing from the
    // build, e.g. bitsandbytes' `ops.cu` or candle's quantized kernels).
    &[
        "no kernel image is available",
        "invalid device function",
        "named symbol not found",
    ],
    Kind::NotMemory,
    Source::NoKernelImage,
);
/// CUDA `cudaErrorInsufficientDriver` "CUDA driver version is insufficient for CUDA runtime version",
/// `cudaErrorUnsupportedPtxVersion` "the provided PTX was compiled with an unsupported toolchain"; PyTorch
/// `torch/cuda/__init__.py` (`_check_driver`) / `c10/cuda/CUDAFunctions.cpp`: "The NVIDIA driver on your
/// system is too old".
const DRIVER: Rule = any(
    &[
        "driver version is insufficient",
        "nvidia driver on your system is too old",
        "compiled with an unsupported toolchain",
        // `cudaErrorCallRequiresNewerDriver` (36).
        "api call is not supported in the installed cuda driver",
        // XLA `stream_executor/cuda/cuda_dnn.cc`: "Loaded runtime CuDNN library: X but source was compiled
        // with: Y. CuDNN library needs to have matching major version and equal or higher minor version."
        "cudnn library needs to have matching major version",
        // `cudaErrorInsufficientDriver` (35) as CUDA 11+ spells it: "system has unsupported display driver /
        // cuda driver combination".
        "unsupported display driver / cuda driver combination",
    ],
    Kind::NotMemory,
    Source::DriverTooOld,
);
/// PyTorch `aten/src/ATen/core/op_registration/adaption.cpp` (`common_device_check_failure`): "Expected all tensors to be on the same device".
/// PyTorch's dtype checks (`aten/src/ATen/native/*`, `TensorIterator`): "expected scalar type Float but found
/// Half", "expected mat1 and mat2 to have the same dtype"; Windows error 1224 (`ERROR_USER_MAPPED_FILE`, "The
/// requested operation cannot be performed on a file with a user-mapped section open", safetensors writing
/// over a file another process maps). Neither is memory.
const DTYPE_OR_FILE_LOCK: Rule = any(
    &[
        "expected scalar type ",
        "to have the same dtype",
        "os { code: 1224",
        "winerror 1224",
        "使用用户映射区域打开的文件",
    ],
    Kind::NotMemory,
    Source::CudaError,
);
/// A CUDA extension built without the toolkit: flash-attn's `setup.py` (`raise_if_cuda_home_none`), PyTorch
/// `torch/utils/cpp_extension.py` ("CUDA_HOME environment variable is not set"): an install problem.
const CUDA_HOME_MISSING: Rule = any(
    &[
        "raise_if_cuda_home_none",
        "cuda_home environment variable is not set",
    ],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::WrongBuild);
/// TensorRT-LLM `cudaUtils.h` (`check`): "[TensorRT-LLM][ERROR] CUDA runtime error in cudaMemcpyAsync(…): invalid
/// argument" — any error but out of memory.
const CUDA_RT_OTHER: Rule =
    check(cuda_runtime_other, Kind::NotMemory, Source::CudaError).with(Hint::CudaFault);
/// Python's import failures ("ModuleNotFoundError: No module named …", "ImportError: …", kohya's "No
/// bitsandbytes"); Git LFS refusing a download because the repository "is over its data quota" (a bandwidth
/// quota); EBUSY renaming into a cache (`[Errno 16] Device or resource busy`, Triton's kernel cache on a
/// shared mount); Metal's watchdog stopping a command buffer that blocked the display
/// (`kIOGPUCommandBufferCallbackErrorImpactingInteractivity`). None is memory.
const SETUP_OR_IO: Rule = any(
    &[
        "modulenotfounderror: no module named",
        "importerror: ",
        "is over its data quota",
        "exceeded its lfs budget",
        "smudge filter lfs failed",
        // ComfyUI `folder_paths.py` (`get_save_image_path`): a save path outside the output folder.
        "saving image outside the output folder is not allowed",
        // Meta's llama reference code (`generation.py` `Llama.build`), and any loader's empty directory.
        "no checkpoint files found",
        // Windows `STATUS_ACCESS_VIOLATION` as a decimal exit status (0xC0000005): a native crash.
        "exit status 3221225477",
        // EIO (`strerror(5)`, Rust's `Os { code: 5 }`): a failing disk or mount, neither memory nor space.
        "input/output error",
        "exit code 3221225477",
        // The NVIDIA kernel driver's Xid report (`NVRM: Xid (PCI:…): N, …`): a GPU fault, reset or timeout.
        "nvrm: xid",
        "[errno 16] device or resource busy",
        // Other file-system errors that are not a full disk: ENOTEMPTY renaming a checkpoint folder ("[Errno 39]
        // Directory not empty"), EROFS ("[Errno 30] Read-only file system"), SQLite's corrupt file ("database
        // disk image is malformed").
        "[errno 39] directory not empty",
        // EEXIST ("[Errno 17] File exists", ranks racing to make one folder); Windows' `ERROR_INVALID_FUNCTION`
        // ("[WinError 1] "); NVML's permission error; a program's own "memory is corrupted".
        "[errno 17] file exists",
        // A library that cannot be loaded ("Library libcublas.so.12 is not found or cannot be loaded"),
        // torchaudio without a decoder ("Couldn't find appropriate backend"), libsndfile opening a file, a sample
        // rate ("40000 SR doesn't match target 48000 SR"), Chroma's embedding width, SQLite's lock, a connection
        // the other side closed (Windows' "forcibly closed by the remote host"), PhysX kernels that fail to launch,
        // Isaac's centre-of-mass rule and cuSolver's internal error: not memory.
        "is not found or cannot be loaded",
        "couldn't find appropriate backend",
        "libsndfileerror: error opening",
        "sr doesn't match target",
        "invaliddimensionexception",
        "database is locked",
        "forcibly closed by the remote host",
        "fail to launch kernel!!",
        "center of mass cannot be set with gpu pipeline",
        "cusolver internal error",
        "[winerror 1] ",
        "nvmlerror_nopermission",
        "memory is corrupted",
        // CUDA's driver-API name for an illegal address; Triton Inference Server's shared-memory registration (a
        // named POSIX region that does not exist); TensorRT's "FAILED_ALLOCATION: basic_string::_S_construct null
        // not valid" (a null string, not memory); Kokkos' cudaMalloc refused as `cudaErrorNotSupported`;
        // TensorRT's unsupported SM; a meta tensor moved without data; a truncated image; decord's EOF retries;
        // xFormers without an operator for these inputs; a chat template's Jinja error.
        "cuda_error_illegal_address",
        "failed to register input shared memory region",
        "basic_string::_s_construct null not valid",
        "cudaerrornotsupported",
        "is not supported by this tensorrt release",
        "cannot copy out of meta tensor",
        "image file is truncated",
        "unable to handle eof",
        "no operator found for `memory_efficient_attention_forward`",
        "value is not callable: null at row",
        // DirectX devices lost or hung (`DXGI_ERROR_DEVICE_HUNG` 0x887A0006, `DXGI_ERROR_DEVICE_REMOVED`, DirectML
        // asking `GetDeviceRemovedReason`); Metal's per-array limit ("total bytes of NDArray > 2**32"); rocBLAS
        // without kernels for this GPU ("Cannot read …/TensileLibrary.dat"); `cudaErrorUnknown` ("CUDA error:
        // unknown error", the old "cuda runtime error (30) : unknown error"): faults and limits, not memory.
        "887a0006",
        "getdeviceremovedreason",
        "dxgi_error_device_removed",
        "total bytes of ndarray > 2**32",
        "tensilelibrary.dat",
        "cuda error: unknown error",
        "cuda runtime error (30)",
        // Capacity, quota and permission refusals of cloud platforms and schedulers: no job ran out of memory.
        "insufficientcapacityerror",
        "insufficient nvidia.com/gpu",
        "insufficient aliyun.com/gpu-mem",
        "exceed quota limits",
        "accessdeniedexception",
        "insufficient cluster resources to launch trial",
        // Vulkan's `VK_ERROR_DEVICE_LOST`: the GPU hung or reset (a driver fault, not memory); Hugging Face
        // Spaces' "Scheduling failure: not enough hardware capacity" (no machine free to start on).
        "vk_error_device_lost",
        "scheduling failure: not enough hardware capacity",
        "[errno 30] read-only file system",
        "database disk image is malformed",
        // A port taken (EADDRINUSE: c10d's "failed to bind to [::]:29500 (errno: 98 - Address already in use)").
        "address already in use",
        // Slurm's wall-clock limit: "CANCELLED AT … DUE TO TIME LIMIT".
        "due to time limit",
        // llama.cpp's old GGML file notice: "can't use mmap because tensors are not aligned".
        "can't use mmap because tensors are not aligned",
        // The browser's `localStorage` quota (`QuotaExceededError`: "Failed to execute 'setItem' on 'Storage':
        // Setting the value of 'x' exceeded the quota"): a web page's key-value store, not RAM or disk.
        "failed to execute 'setitem' on 'storage'",
        // TVM's memory manager (`src/runtime/memory/memory_manager.cc`) asked for bytes in a planned region of 0
        // bytes: "storage allocation failure, attempted to allocate N at offset 0 in region that is 0bytes".
        "in region that is 0bytes",
        // Unsloth's "currently does not support multi GPU setups".
        "does not support multi gpu",
        // torch.distributed.elastic `SignalException` for SIGHUP/SIGTERM: "Process N got signal: 1" / "15".
        "got signal: 1",
        "errorimpactinginteractivity",
    ],
    Kind::NotMemory,
    Source::Unknown,
);
/// Numba `cuda/cudadrv/driver.py` (`_check_error`): "Call to cuX results in CUDA_ERROR_Y" with any error but
/// `CUDA_ERROR_OUT_OF_MEMORY` ([`CU_RESULT_OOM`]), even on a memory call (`cuMemAlloc` failing with
/// `CUDA_ERROR_LAUNCH_FAILED` reports an earlier kernel's fault).
const NUMBA_CUDA_ERROR: Rule =
    check(numba_cuda_error, Kind::NotMemory, Source::Numba).with(Hint::CudaFault);
const WRONG_DEVICE: Rule = any(
    // `torch/_prims_common` / meta-device dispatch: "Tensor on device cuda:0 is not on the expected device meta!"
    // (a module left on the meta device by offloading or `init_empty_weights`).
    &[
        "expected all tensors to be on the same device",
        "is not on the expected device",
        // PyTorch's MPS backend (`aten/src/ATen/native/mps/OperationUtils.mm`): "Placeholder storage has not
        // been allocated on MPS device!" — a tensor left on the CPU.
        "placeholder storage has not been allocated on mps device",
    ],
    Kind::NotMemory,
    Source::WrongDevice,
);
/// PyTorch `caffe2/serialize/inline_container.cc`: "PytorchStreamReader failed reading zip archive: failed
/// finding central directory", `torch/serialization.py`: "unexpected EOF, expected N more bytes. The file
/// might be corrupted."; safetensors `safetensors/src/tensor.rs`: "Error while deserializing header:
/// MetadataIncompleteBuffer" / "HeaderTooLarge" / "header too large"; Python `pickle` on a Git LFS pointer or
/// an HTML page: "invalid load key", on an empty file: "EOFError: Ran out of input".
const CORRUPT: Rule = any(
    &[
        // mmcv `runner/checkpoint.py` (`load_checkpoint`): "<path> is not a checkpoint file".
        "is not a checkpoint file",
        "pytorchstreamreader failed",
        // `torch.load` on a TorchScript archive: "… is a zip archive (did you mean to use torch.jit.load()?)".
        "did you mean to use torch.jit.load()",
        "failed finding central directory",
        "the file might be corrupted",
        "error while deserializing header",
        "metadataincompletebuffer",
        "headertoolarge",
        "invalid load key",
        "eoferror: ran out of input",
        // A C++ reader (sentencepiece, torch's JIT) hitting the end of a truncated file.
        "unexpectedly reached end of file",
    ],
    Kind::NotMemory,
    Source::CorruptCheckpoint,
);
/// cuBLAS status codes other than an allocation failure (`cublas_api.h`): execution failed, not initialized,
/// internal error, not supported, invalid value, arch mismatch.
const CUBLAS_FAULT: Rule = any(
    &[
        "cublas_status_execution_failed",
        "cublas_status_not_initialized",
        "cublas_status_internal_error",
        "cublas_status_not_supported",
        "cublas_status_invalid_value",
        "cublas_status_arch_mismatch",
    ],
    Kind::NotMemory,
    Source::Cublas,
);
/// cuDNN status codes other than an allocation failure: internal error, execution failed, not supported, bad
/// param, mapping error, not initialized, arch mismatch.
const CUDNN_FAULT: Rule = any(
    &[
        "cudnn_status_internal_error",
        "cudnn_status_execution_failed",
        "cudnn_status_not_supported",
        "cudnn_status_bad_param",
        "cudnn_status_mapping_error",
        "cudnn_status_not_initialized",
        "cudnn_status_arch_mismatch",
    ],
    Kind::NotMemory,
    Source::Cudnn,
);
/// MXNet `src/operator/convolution-inl.h`: "Check failed: (param_.workspace) >= (required_size) … Minimum
/// workspace size: N Bytes Given: M Bytes" — a configured cap, not a full device.
const MXNET_WORKSPACE: Rule =
    any(&["minimum workspace size:"], Kind::NotMemory, Source::Cudnn).with(Hint::WorkspaceLimit);
/// PyTorch `torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp`: "NCCL error in: …, unhandled system error",
/// "Watchdog caught collective operation timeout"; NCCL `ncclSystemError`, `ncclInternalError`.
const NCCL: Rule = any(
    &[
        "nccl error",
        // `ncclGetErrorString(ncclUnhandledCudaError)` (NCCL `src/misc/argcheck.cc` / `init.cc`), as
        // nccl-tests prints it: "NCCL failure common.cu:908 'unhandled cuda error'". A CUDA out-of-memory
        // inside NCCL is logged first as "NCCL WARN Cuda failure 'out of memory'" ([`NCCL_CUDA_OOM`]).
        "'unhandled cuda error'",
        "ncclsystemerror",
        "ncclinternalerror",
        "watchdog caught collective operation timeout",
        // `ProcessGroupNCCL.cpp` when the watchdog tears the process down.
        "some nccl operations have failed or timed out",
        "ncclremoteerror",
        "ncclinvalidusage",
        // NCCL `ncclUnhandledCudaError` as PyTorch `NCCLUtils` prints it ("ncclUnhandledCudaError: Call to
        // CUDA function failed."); a CUDA out-of-memory beside it is taken first ([`CUDA_NEAR_OOM`]).
        "ncclunhandledcudaerror",
        // The watchdog's own stack frames (`ProcessGroupNCCL::WorkNCCL::checkTimeout` throws the timeout).
        "worknccl::checktimeout",
        // `ProcessGroupNCCL.cpp`'s heartbeat monitor aborting a stuck watchdog.
        "heartbeat monitor timed out",
        // The watchdog's verdict line, which survives a terminal wrap of the timeout text.
        "process group watchdog thread terminated with exception",
        "watchdog got stuck for",
    ],
    Kind::NotMemory,
    Source::Nccl,
);
/// PaddlePaddle's allocator (`paddle/phi/core/memory/allocation`, `ResourceExhaustedError`): "Out of memory
/// error on GPU N. Cannot allocate X memory on GPU N, Y memory has been allocated and available memory is only
/// Z."
const PADDLE_OOM: Rule = any(
    &[
        "out of memory error on gpu",
        "memory has been allocated and available memory is only",
    ],
    Kind::Gpu,
    Source::Paddle,
);
/// PaddlePaddle `paddle/fluid/platform/gpu_info.cc` (`GpuMaxChunkSize`): `PADDLE_ENFORCE_LE(allocating,
/// available, "Insufficient GPU memory to allocation.")` — the share of GPU memory Paddle is set to take
/// (`FLAGS_fraction_of_gpu_memory_to_use`) is more than is free. Its `enforce.h` prints the check as "enforce
/// allocating <= available failed, A > B" (older) or "Expected allocating <= available, but received
/// allocating:A > available:B." (bytes).
const PADDLE_ENFORCE_ALLOC: Rule = any(
    &[
        "enforce allocating <= available failed",
        "expected allocating <= available",
        "insufficient gpu memory to allocation",
    ],
    Kind::Gpu,
    Source::Paddle,
);
/// ONNX Runtime's arena (`onnxruntime/core/framework/bfc_arena.cc`): "Failed to allocate memory for
/// requested buffer of size N": device memory under the CUDA execution provider, host memory on the CPU.
/// A request beyond 1 PiB is a corrupted size (an overflow in the model or the runtime), not memory.
const ORT_ARENA_ABSURD: Rule = check(ort_arena_absurd, Kind::NotMemory, Source::OnnxRuntime);
const ORT_ARENA_GPU: Rule = check(ort_arena_gpu, Kind::Gpu, Source::OnnxRuntime);
const ORT_ARENA_CPU: Rule = check(ort_arena_cpu, Kind::Host, Source::OnnxRuntime);
/// NVML (`nvidia-smi`, `pynvml`): "Failed to initialize NVML: Driver/library version mismatch": a driver
/// updated under a running kernel module, not memory.
const NVML_MISMATCH: Rule = any(
    &["failed to initialize nvml: driver/library version mismatch"],
    Kind::NotMemory,
    Source::DriverTooOld,
)
.with(Hint::UpdateDriver);
/// ROCm's HSA runtime: "Memory access fault by GPU node-N (Agent handle: …) on address …": an invalid access,
/// like CUDA's illegal memory access.
const HSA_FAULT: Rule = any(
    &["memory access fault by gpu node"],
    Kind::NotMemory,
    Source::IllegalAccess,
)
.with(Hint::KernelFault);
/// A ggml assertion (`GGML_ASSERT(…) failed`, as Ollama's "llama runner process has terminated" reports
/// it) or a Windows illegal-instruction exit (0xc000001d, a CPU without the instructions the build needs).
/// Older builds print "GGML_ASSERT: file:line: condition", llamafile "GGML_ASSERT(file:line): condition".
/// An assertion of the literal `false` is not counted: ggml used `GGML_ASSERT(false)` as its abort for
/// unrelated causes (an op Metal lacks, and in `ggml-metal.m` a command buffer that failed, "needed to
/// detect if the device ran out-of-memory"), so the line alone says nothing.
const GGML_ASSERT: Rule =
    check(ggml_assert, Kind::NotMemory, Source::LlamaCpp).with(Hint::WrongBuild);
/// NCCL `misc/shmutils.cc`: "Error while attaching to shared memory segment … error: No such file or
/// directory": the segment a peer created is gone (the peer died first, or `/dev/shm` was cleaned), not full.
const NCCL_SHM_GONE: Rule =
    check(nccl_shm_gone, Kind::NotMemory, Source::Nccl).with(Hint::Communication);
/// A bare segmentation fault ("Segmentation fault (core dumped)", the shell's report of SIGSEGV): a crash
/// in native code, not a memory shortage; any allocation failure printed before it wins (earlier rules).
/// Windows reports the same crash as exit code 0xC0000005 (`STATUS_ACCESS_VIOLATION`, -1073741819 signed).
const SEGFAULT: Rule = any(
    &[
        "segmentation fault",
        // The same in a Chinese locale (glibc's `strsignal`): "段错误 (核心已转储)".
        "段错误",
        "sigsegv",
        // torch.distributed.elastic's report of a child killed by SIGSEGV (`multiprocessing/api.py`);
        // DeepSpeed's launcher (`launcher/launch.py`): "exits with return code = -11"; the DataLoader's
        // "is killed by signal: Aborted." (SIGABRT).
        "return code = -11",
        // TGI's launcher: "Shard process was signaled to shutdown with signal 11".
        "signaled to shutdown with signal 11",
        "is killed by signal: aborted",
        "exitcode: -11)",
        // Exit code 139 = 128 + SIGSEGV (SageMaker's "AlgorithmError: Exit Code: 139", shells, Docker).
        "exit code: 139",
        "exit code 139",
        "exitcode: -11 ",
        "exitcode : -11 ",
        "exit code -1073741819",
        "(0xc0000005)",
    ],
    Kind::NotMemory,
    Source::IllegalAccess,
)
.with(Hint::PasteMore);
/// transformers `tokenization_utils_base.py`: "Token indices sequence length is longer than the specified
/// maximum sequence length for this model (N > M)" — a warning; last, so any real error wins.
const TOKENIZER: Rule = any(
    &["token indices sequence length is longer than the specified maximum"],
    Kind::NotMemory,
    Source::Tokenizer,
);

/// CUDA `cudaErrorDevicesUnavailable` (46) as old THC printed it from any call site, the host allocator's
/// included: "error=46 : all CUDA-capable devices are busy or unavailable" (a GPU in exclusive-process mode
/// held by another job), and Intel XPU's per-allocation cap (IPEX/`torch.xpu`: "Current platform can NOT
/// allocate memory block with size larger than 4GB"): limits on a device or a single block, not a full device.
/// Before the pinned-memory and XPU rules, whose words these texts also contain.
const DEVICE_UNAVAILABLE: Rule = any(
    &[
        "all cuda-capable devices are busy or unavailable",
        "can not allocate memory block with size larger than",
    ],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::CudaFault);
/// The OpenAI-compatible servers' length check (vLLM `entrypoints/openai/serving_engine.py`
/// `_validate_input`, OpenAI's API): "This model's maximum context length is N tokens. However, you requested M
/// tokens (…)". The request was refused before anything was allocated.
const CONTEXT_LENGTH: Rule = any(
    &["maximum context length is"],
    Kind::NotMemory,
    Source::Tokenizer,
)
.with(Hint::ContextLength);
/// Too many open files: `EMFILE` ("[Errno 24] Too many open files", "Too many open files. Communication with
/// the workers is no longer possible", PyTorch `torch/utils/data/dataloader.py`): a descriptor limit.
const OPEN_FILES: Rule = any(
    &[
        "too many open files",
        // `multiprocessing.reduction.recvfds` ("received 0 items of ancdata"): a DataLoader worker could not
        // pass a descriptor, the descriptor limit again (PyTorch's multiprocessing notes: file_system sharing).
        "received 0 items of ancdata",
    ],
    Kind::NotMemory,
    Source::Unknown,
)
.with(Hint::OpenFiles);
/// A peer's connection closed: NCCL `include/socket.h` "NCCL WARN Net : Connection closed by remote peer",
/// gloo `gloo/transport/tcp/pair.cc` ("Connection closed by peer", "Connection reset by peer"). Another
/// process died or the network failed; its own log holds the cause.
const PEER_CLOSED: Rule = any(
    &[
        "connection closed by remote peer",
        // The socket's `ECONNRESET` ("Connection reset by peer", NCCL's "Call to recv failed", c10d's
        // rendezvous): the other rank or host went away.
        "connection reset by peer",
        "gloo/transport/tcp/pair.cc",
    ],
    Kind::NotMemory,
    Source::Nccl,
)
.with(Hint::PeerGone);
/// HIP `hipErrorNoBinaryForGpu` ("Unable to find code object for all current devices", "Couldn't find
/// binary for current devices"): the ROCm build has no kernels for this GPU's architecture.
const HIP_NO_BINARY: Rule = any(
    &["hiperrornobinaryforgpu"],
    Kind::NotMemory,
    Source::NoKernelImage,
);
/// A file that is not there: the C library's `ENOENT` "No such file or directory" (Python `FileNotFoundError`,
/// Go's `os` errors in Ollama). Last but one: any memory report in the same text wins.
/// Not Python's `tempfile` failing in every candidate folder ("FileNotFoundError: [Errno 2] No usable temporary
/// directory found in ['/tmp', …]"), which a full disk and a permission problem both cause.
const NO_SUCH_FILE: Rule = check(
    |s| {
        if s.has("no usable temporary directory found") {
            return None;
        }
        ["no such file or directory", "filenotfounderror"]
            .iter()
            .filter_map(|p| s.find(p))
            .min()
            .map(|i| s.orig(i))
    },
    Kind::NotMemory,
    Source::Unknown,
)
.with(Hint::ModelMismatch);

/// Triton `triton/runtime/errors.py` (`OutOfResources`): "out of resource: shared memory, Required: N,
/// Hardware limit: M. Reducing block sizes or `num_stages` may help." A kernel's tile configuration needs
/// more on-chip shared memory (or registers) per block than this GPU has: a per-kernel limit, not device
/// memory; another kernel config, a newer GPU or a library build that knows this GPU.
const TRITON_RESOURCES: Rule = any(
    &[
        "out of resource: shared memory",
        "outofresources: out of resource",
        // CUDA `cudaErrorLaunchOutOfResources` (registers or shared memory per block): the same kind of
        // per-kernel limit.
        "too many resources requested for launch",
    ],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::KernelResources);
/// llama.cpp `llama-context.cpp` / `tools/server/server.cpp`: "decode: failed to find a memory slot for batch
/// of size N", "failed to find free space in the KV cache, retrying with smaller batch size": the context
/// (`-c`, split over `--parallel` slots) is full of tokens. A configured context size, not device memory.
const GGML_KV_SLOTS: Rule = any(
    &[
        "failed to find free space in the kv cache",
        "failed to find a memory slot for batch",
    ],
    Kind::NotMemory,
    Source::LlamaCpp,
)
.with(Hint::ContextFull);
/// bitsandbytes `cuda_setup/main.py` / `cextension.py`: "CUDA Setup failed despite GPU being available"
/// (older: "… despite CUDA being available"): its native library did not load — an install problem.
const BNB_SETUP: Rule = any(
    // Its CPU-only library loaded instead: "libbitsandbytes_cpu.so: undefined symbol: cadam32bit_grad_fp32".
    &[
        "cuda setup failed despite",
        "libbitsandbytes_cpu.so: undefined symbol",
    ],
    Kind::NotMemory,
    Source::DriverTooOld,
)
.with(Hint::WrongBuild);
/// Metal `MTLCommandBufferError` as MLX reports it: "Command buffer execution failed: Invalid Resource
/// (…kIOGPUCommandBufferCallbackErrorInvalidResource)": a resource the GPU could not use (a driver or
/// framework bug), unlike the `…OutOfMemory` code [`METAL_CMDBUF`] reads.
const METAL_INVALID: Rule = any(
    &["kiogpucommandbuffercallbackerrorinvalidresource"],
    Kind::NotMemory,
    Source::Metal,
)
.with(Hint::KernelFault);
/// Rust `std::io::Error` display of ENODEV (19) and EOPNOTSUPP (95), as safetensors prints them
/// ("OSError: No such device (os error 19)" when a file system cannot be memory-mapped, "Operation not
/// supported (os error 95)"): the file system, not space or memory.
const FS_UNSUPPORTED: Rule = any(
    &["(os error 19)", "(os error 95)"],
    Kind::NotMemory,
    Source::CorruptCheckpoint,
)
.with(Hint::PasteMore);

/// Huawei Ascend (CANN / `torch_npu`): "NPU out of memory. Tried to allocate …" and the graph engine's
/// "Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by GE module." (CANN error code
/// EL0004, "Available memory is insufficient"): NPU device memory.
/// The same code as the runtime's log prints it: "EL0004: [PID: N] … Failed to allocate memory."
const ASCEND_OOM: Rule = any(
    &[
        "npu out of memory",
        "memory_allocation_failure(el0004)",
        "el0004: [pid",
    ],
    Kind::Gpu,
    Source::Ascend,
)
.with(Hint::ReduceMemory);

/// PyTorch `torch/cuda/__init__.py` (`_lazy_init`): "Torch not compiled with CUDA enabled" (a CPU-only build);
/// `c10/cuda/CUDAFunctions.cpp` (`device_count_impl`): "Found no NVIDIA driver on your system"; bitsandbytes and
/// other extensions loading CUDA libraries. An install problem, not memory.
const NO_CUDA: Rule = any(
    &[
        "torch not compiled with cuda enabled",
        "found no nvidia driver on your system",
        // `torch/cuda/__init__.py` `_lazy_init` (`cudaErrorNoDevice`).
        "no cuda gpus are available",
        // `cudaErrorNoDevice`'s own string, as ggml and others print it.
        "no cuda-capable device is detected",
    ],
    Kind::NotMemory,
    Source::DriverTooOld,
)
.with(Hint::MissingLibrary);
/// A shared library that did not load: glibc `dlerror()` "libcudart.so.12: cannot open shared object file: No
/// such file or directory" (`elf/dl-load.c`, also in "error while loading shared libraries: …"), and cuDNN 8's
/// own loader "Could not load library libcudnn_cnn_infer.so.8. Error: …" (Windows: "Could not load library
/// cudnn_ops_infer64_8.dll. Error code 126"). Late in the order: a memory failure or a more specific error
/// printed beside the warning wins.
const SHARED_LIB: Rule = any(
    &[
        "cannot open shared object file",
        "could not load library libcudnn",
        "could not load library cudnn",
    ],
    Kind::NotMemory,
    Source::DriverTooOld,
)
.with(Hint::MissingLibrary);
/// vLLM `vllm/worker/worker.py` / `vllm/platforms/cuda.py` (`_check_if_gpu_supports_dtype`, copied by
/// TensorRT-LLM's and NIM's launchers): "Bfloat16 is only supported on GPUs with compute capability of at least
/// 8.0. Your … GPU has compute capability 7.5."; PyTorch `torch/amp/autocast_mode.py`: "Current CUDA Device
/// does not support bfloat16. Please switch dtype to float16." (also "Current NPU Device …").
const BF16_UNSUPPORTED: Rule = any(
    &[
        "bfloat16 is only supported on gpus with compute capability",
        "device does not support bfloat16",
    ],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::UnsupportedOnDevice);
/// PyTorch `aten/src/ATen/mps/MPSFallback.mm` (`mps_error_fallback`): "The operator 'aten::…' is not currently
/// implemented for the MPS device. If you want this op to be added in priority …" (early builds: "is not
/// current implemented").
const MPS_NOT_IMPLEMENTED: Rule = any(
    &["implemented for the mps device"],
    Kind::NotMemory,
    Source::PytorchMps,
)
.with(Hint::UnsupportedOnDevice);
/// PyTorch `c10/xpu/XPUCachingAllocator.cpp` / `torch/csrc/xpu/Module.cpp` (`_xpu_getMemoryInfo`): "The device
/// (…) doesn't support querying the available free memory." — a SYCL device without the `ext_intel_free_memory`
/// aspect; a missing query, not a lack of memory.
const XPU_NO_MEMINFO: Rule = any(
    &["doesn't support querying the available free memory"],
    Kind::NotMemory,
    Source::PytorchXpu,
)
.with(Hint::UnsupportedOnDevice);
/// PyTorch `torch/nn/modules/module.py` (`load_state_dict`): "Error(s) in loading state_dict for X:\n\tsize
/// mismatch for …: copying a param with shape … from checkpoint, the shape in current model is …" (also
/// "Missing key(s) in state_dict", "Unexpected key(s) in state_dict"); `torch/serialization.py`: "Weights only
/// load failed. … WeightsUnpickler error: …" (PyTorch ≥ 2.6 loads with `weights_only=True`); transformers
/// `models/auto/configuration_auto.py`: "The checkpoint you are trying to load has model type `X` but
/// Transformers does not recognize this architecture."
const MODEL_MISMATCH: Rule = any(
    &[
        "error(s) in loading state_dict for",
        "copying a param with shape",
        "weights only load failed",
        "transformers does not recognize this architecture",
        // An older transformers' `AutoConfig` meeting a newer model type: `CONFIG_MAPPING[config_dict["model_type"]]`
        // raising `KeyError: 'qwen2'`.
        "config_mapping[config_dict[\"model_type\"]]",
        // `F.linear` on a weight of the wrong shape (a LoRA built for another model, a packed 4-bit weight
        // used unpacked): "mat1 and mat2 shapes cannot be multiplied (AxB and CxD)".
        "mat1 and mat2 shapes cannot be multiplied",
    ],
    Kind::NotMemory,
    Source::CorruptCheckpoint,
)
.with(Hint::ModelMismatch);
/// ONNX Runtime `onnxruntime/core/session/onnxruntime_c_api.cc` (`CreateTensorWithDataAsOrtValue`): "not
/// enough space: expected N, got M" (`ORT_INVALID_ARGUMENT`, "error 2"): the caller's buffer is smaller than
/// the tensor's shape needs — a shape or dtype mismatch, not memory.
const ORT_BUFFER_SHAPE: Rule = any(
    &["not enough space: expected"],
    Kind::NotMemory,
    Source::OnnxRuntime,
)
.with(Hint::ModelMismatch);

/// NVIDIA's PTX assembler (`ptxas`, run by nvcc or Triton while building a kernel) reporting an error: "ptxas
/// … error   : Instruction 'tensormap.replace' not supported on .target 'sm_120'", "ptxas fatal   : …". A
/// build failure, not a memory problem (ptxas's own register and shared-memory limits are compile errors too).
const PTXAS_ERROR: Rule = check(ptxas_error, Kind::NotMemory, Source::NoKernelImage);
/// The dynamic loader refusing a compiled extension built against another release ("….so: undefined symbol:
/// _ZN3c10…", flash-attn or a CUDA extension against a different torch): a build mismatch.
const UNDEFINED_SYMBOL: Rule = any(
    // Windows' loader: "LoadLibrary failed with error 126" (a DLL, or one it needs, is missing).
    &[".so: undefined symbol", "loadlibrary failed with error 126"],
    Kind::NotMemory,
    Source::NoKernelImage,
)
.with(Hint::WrongBuild);
/// The TPU held by another process or not reachable: TensorFlow/XLA `tpu_initializer_helper.cc` (libtpu's
/// loader) "libtpu.so already in use by another process … Not attempting to load libtpu.so in this process",
/// JAX's "Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid N", and
/// libtpu's device open failures, "Couldn't open device: /dev/accel0 (…)" (matched by PyTorch/XLA's
/// `computation_client.cc`) and "No ba16c7433 device found" (no TPU chip visible, or a libtpu too old for it).
const TPU_BUSY: Rule = any(
    &[
        "libtpu.so already in use by another process",
        "the tpu is already in use by",
        "couldn't open device: /dev/accel",
        "no ba16c7433 device found",
        // libtpu on VFIO-attached chips (TPU v5e/v6e VMs): "Failed to initialize TPU system with error:
        // FAILED_PRECONDITION: open(/dev/vfio/0): Device or resource busy".
        "open(/dev/vfio/",
    ],
    Kind::NotMemory,
    Source::Xla,
)
.with(Hint::DeviceBusy);
/// SIGILL as shells and Python report it: zsh "illegal hardware instruction", bash (glibc `strsignal`)
/// "Illegal instruction (core dumped)", Python `faulthandler` "Fatal Python error: Illegal instruction",
/// torch.distributed.elastic "Signal 4 (SIGILL)": a CPU instruction-set mismatch, not memory.
/// The shell's one-word report of SIGILL on its own line, "Illegal instruction" (bash, `strsignal(SIGILL)`).
const SIGILL_LINE: Rule = check(
    |s| {
        let mut at = 0;
        for line in s.text.split('\n') {
            if line.trim().eq_ignore_ascii_case("illegal instruction") {
                return Some(at);
            }
            at += line.len() + 1;
        }
        None
    },
    Kind::NotMemory,
    Source::IllegalInstruction,
)
.with(Hint::CpuInstructions);
const SIGILL: Rule = any(
    &[
        "illegal hardware instruction",
        "illegal instruction (core dumped)",
        "fatal python error: illegal instruction",
        // gdb: "Program received signal SIGILL, Illegal instruction."
        "received signal sigill",
        "signal 4 (sigill)",
        "<signals.sigill: 4>",
    ],
    Kind::NotMemory,
    Source::IllegalInstruction,
)
.with(Hint::CpuInstructions);
/// MLX `mlx/backend/metal/allocator.cpp` (`MetalAllocator::malloc`): "[metal::malloc] Resource limit (N)
/// exceeded." — the number of live Metal buffers reached `resource_limit` (`device_info.cpp`: sysctl
/// `iogpu.rsrc_limit`, 499000 by default), a count of buffers, not bytes.
const MLX_RESOURCE_LIMIT: Rule = any(
    &["[metal::malloc] resource limit ("],
    Kind::NotMemory,
    Source::Mlx,
)
.with(Hint::MetalBufferCount);
/// ggml `ggml.c` (`ggml_new_object`): "not enough space in the context's memory pool (needed N, available M)"
/// (older `ggml_new_tensor_impl`): a context's fixed `mem_size`, chosen by the program, was too small.
const GGML_CONTEXT_POOL: Rule = any(
    &["not enough space in the context's memory pool"],
    Kind::NotMemory,
    Source::LlamaCpp,
)
.with(Hint::GgmlContextPool);

/// Every rule in priority order: the first that matches decides.
/// Python's `struct` module: "struct.error: unpack requires a buffer of N bytes" (a file or stream shorter
/// than its header says: a truncated or pointer-only checkpoint), "struct.error: 'i' format requires
/// -2147483648 <= number <= 2147483647" (a value too large for its field, e.g. `multiprocessing`'s 32-bit
/// message length before Python 3.8). Neither is memory exhaustion.
const STRUCT_ERROR: Rule = any(
    &["struct.error:"],
    Kind::NotMemory,
    Source::CorruptCheckpoint,
);
/// hnswlib `hnswlib/hnswalg.h` / `bruteforce.h`: `throw std::runtime_error("Not enough memory")` when `malloc`
/// of the index's storage fails, which pybind11 raises as "RuntimeError: Not enough memory": host RAM.
const HNSWLIB_HOST: Rule = check(hnswlib_not_enough, Kind::Host, Source::CpuAllocator);
/// Hadoop YARN's NodeManager (`ContainersMonitorImpl`): "Container killed by YARN for exceeding memory limits.
/// X GB of Y GB physical (or virtual) memory used" (Spark shows it as the executor's loss reason): host RAM,
/// as the container's limit counts it.
const YARN_MEMORY: Rule = any(
    &[
        "container killed by yarn for exceeding memory limits",
        "is running beyond physical memory limits",
        "is running beyond virtual memory limits",
    ],
    Kind::Host,
    Source::OomKiller,
);
/// Dask distributed's memory monitor (`distributed/worker_memory.py`): "Memory use is high but worker has no
/// data to store to disk. Perhaps some other process is leaking memory?", "Worker is at N% memory usage",
/// and the nanny's "Worker exceeded 95% memory budget. Restarting": host RAM at the worker's limit.
const DASK_MEMORY: Rule = any(
    &[
        "memory use is high but worker has no data to store to disk",
        "exceeded 95% memory budget",
        "worker is at 8",
        "worker is at 9",
    ],
    Kind::Host,
    Source::OomKiller,
);
/// HTTP 507 "Insufficient Storage" (RFC 4918 §11.5), as `requests` raises it ("507 Server Error: Insufficient
/// Storage for url: …"): the server has no room to store the upload (a W&B or artifact server's disk).
const HTTP_507: Rule = any(
    &[
        "507 server error: insufficient storage",
        "507 insufficient storage",
    ],
    Kind::Disk,
    Source::DiskFull,
);
/// PaddlePaddle's allocator message ([`PADDLE_OOM`]) asking for petabytes or more ("Cannot allocate
/// 655.142555PB memory on GPU 0"): no device has that; the size was computed wrong.
const PADDLE_ABSURD: Rule =
    check(paddle_absurd, Kind::NotMemory, Source::Paddle).with(Hint::ImpossibleSize);
/// DeepSpeed's swap buffers for NVMe offload (`runtime/swap_tensor/partitioned_param_swapper.py`: "Not enough
/// buffers N for swapping M"; `runtime/swap_tensor/utils.py`: "More elements N than buffer size M"): the
/// configured `buffer_count` / `buffer_size` is too small, whatever the device holds.
const DS_SWAP_BUFFERS: Rule =
    check(ds_swap_buffers, Kind::NotMemory, Source::Unknown).with(Hint::ConfiguredBuffer);
/// CUDA `cudaErrorCudartUnloading` (29) "driver shutting down", as Caffe's `CUDA_CHECK` prints it ("Check
/// failed: error == cudaSuccess (29 vs. 0) driver shutting down"): a call after the runtime began to unload.
const CUDART_UNLOADING: Rule = any(
    &["driver shutting down"],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::CudaFault);

/// Intel Gaudi's PyTorch bridge (`habana_frameworks`, its device-memory module): "FATAL ERROR :: MODULE:PT_DEVMEM
/// Allocation failed for size::N (M)MB": the accelerator's HBM.
const GAUDI_DEVMEM: Rule = any(
    &["module:pt_devmem allocation failed"],
    Kind::Gpu,
    Source::Unknown,
);
/// CUDA `cudaErrorCompatNotSupportedOnDevice` (804): "forward compatibility was attempted on non supported HW"
/// — a container's CUDA forward-compatibility libraries on a GPU or driver that does not take them.
const CUDA_FORWARD_COMPAT: Rule = any(
    &["forward compatibility was attempted on non supported hw"],
    Kind::NotMemory,
    Source::DriverTooOld,
)
.with(Hint::UpdateDriver);

/// CUDA `cudaErrorECCUncorrectable` / `CUDA_ERROR_ECC_UNCORRECTABLE`: "uncorrectable ECC error encountered" —
/// a hardware memory fault on the card (retire it or reset it), not memory exhaustion.
const ECC_UNCORRECTABLE: Rule = any(
    &["uncorrectable ecc error encountered"],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::CudaFault);
/// safetensors `torch.py` (`_remove_duplicate_names` / `save_file`): "Some tensors share memory, this will lead
/// to duplicate memory on disk…": tied weights refused by the file format when saving, not memory.
const SHARED_TENSORS_SAVE: Rule = any(
    &["some tensors share memory, this will lead to duplicate memory on disk"],
    Kind::NotMemory,
    Source::CorruptCheckpoint,
)
.with(Hint::ModelMismatch);
/// Numerical or format errors that name memory or sizes without any exhaustion: `torch.multinomial`'s
/// "probability tensor contains either `inf`, `nan` or element < 0"; Arrow's "negative malloc size" (an
/// overflowed size) and `datasets`' "There was an overflow in the <class 'pyarrow.lib.ListArray'>" (a batch
/// over Arrow's 2 GB list offsets); llama.cpp's "mmap failed: No such device" (a file system that cannot map
/// files); transformers' "Trying to set a tensor of shape … (which has shape torch.Size([0]))" (weights
/// loaded into a sharded or meta placeholder).
const NOT_EXHAUSTION: Rule = any(
    &[
        "probability tensor contains either `inf`, `nan` or element < 0",
        "probability tensor contains either inf, nan or element < 0",
        "negative malloc size",
        "there was an overflow in the <class 'pyarrow.lib.listarray'>",
        "mmap failed: no such device",
        "(which has shape torch.size([0])), this look incorrect",
        // Arrow `cpp/src/arrow/array/builder_binary.h` (`ArrowCapacityError`): "array cannot contain more
        // than 2147483646 bytes": one binary array's 32-bit offsets, not memory.
        "array cannot contain more than 2147483646 bytes",
        // Arrow's integer conversion (`ArrowInvalid`): "Value N too large to fit in C integer type".
        "too large to fit in c integer type",
        // Shape errors: `torch.mv`'s "size mismatch, got input (…), mat (…), vec (…)"; `torch.cat`'s "expected a
        // non-empty list of Tensors".
        "size mismatch, got input",
        "expected a non-empty list of tensors",
        // The network, not memory: urllib3's "Read timed out." and `ConnectTimeoutError`.
        "read timed out",
        "connecttimeouterror",
        // A dtype check (`torch/nn/functional.py` embedding): "Expected tensor for argument #1 'indices' to have
        // one of the following scalar types: Long, Int".
        "to have one of the following scalar types",
        // An API changed between releases: "__init__() got an unexpected keyword argument".
        "got an unexpected keyword argument",
        // NumPy's shape errors: "need at least one array to concatenate", "operands could not be broadcast
        // together with shapes".
        "need at least one array to concatenate",
        "operands could not be broadcast together",
        // transformers' batched generation/classification without a pad token: "Cannot handle batch sizes > 1
        // if no padding token is defined."
        "cannot handle batch sizes > 1 if no padding token is defined",
        // A download cut short (hyper `IncompleteBody` through the Hub's Rust client): a network error.
        "incompletebody",
        // PyTorch's writer (`caffe2/serialize/inline_container.cc`): "PytorchStreamWriter failed opening
        // archive" — the path cannot be opened (a missing folder, no permission); a full disk fails the writes
        // ("failed writing file") instead.
        "pytorchstreamwriter failed opening archive",
        // TensorFlow's sparse matmul on the GPU (`sparse_tensor_dense_matmul_op.cc`): "Cannot use GPU when
        // output.shape[1] * nnz(a) > 2^31", a 32-bit index limit.
        "cannot use gpu when output.shape[1] * nnz(a) > 2^31",
        // LM Studio's loader with no engine for the file's format: "No LM Runtime found for model format".
        "no lm runtime found for model format",
        // llama.cpp's loader (`llama-model-loader.cpp`): "tensor '…' data is not within the file bounds, model
        // is corrupted or incomplete" — a truncated download.
        "data is not within the file bounds",
    ],
    Kind::NotMemory,
    Source::Unknown,
)
.with(Hint::ModelMismatch);
/// Device faults that are not memory shortages: Metal's command-buffer watchdog ("Caused GPU Timeout Error",
/// ggml-metal and MLX), DirectML's device removal (`0x887A0005`, "The GPU device instance has been
/// suspended"), a TPU core's on-device check failure ("Core halted unexpectedly", XLA `error_0200.md`), NVML
/// failing inside PyTorch's allocator (`CUDACachingAllocator.cpp`: "NVML_SUCCESS == r INTERNAL ASSERT
/// FAILED"), a CUDA-graph capture touching pageable host memory ("Cannot copy between CPU and CUDA tensors
/// during CUDA graph capture"), and SGLang's own leak check ("memory leak detected!", a bookkeeping assert).
const DEVICE_FAULTS: Rule = any(
    &[
        "caused gpu timeout error",
        "the gpu device instance has been suspended",
        "core halted unexpectedly",
        "nvml_success == r internal assert failed",
        "during cuda graph capture unless the cpu tensor is pinned",
        "token_to_kv_pool_allocator memory leak detected",
        // SGLang's own bookkeeping assert (`mem_cache`): "Committed KV cache already freed".
        "committed kv cache already freed",
        // CUDA `CUDA_ERROR_ILLEGAL_INSTRUCTION` (715), as TVM / MLC LLM print it.
        "cuda_error_illegal_instruction",
        // llama.cpp's scheduler (`ggml-backend.cpp`): "layer N is assigned to device CPU but … is assigned to
        // device CUDA0 (usually due to missing support)" — an operator without a GPU kernel.
        "(usually due to missing support)",
        // The NVIDIA driver's Xid 79 ("NVRM: … has fallen off the bus"), nvidia-smi's "GPU is lost. Reboot the
        // system to recover this GPU", and macOS's IOGPU panic "completeMemory() prepare count underflow".
        "fallen off the bus",
        "gpu is lost",
        "prepare count underflow",
        // XLA's launch failure on the GPU: "INTERNAL: the function failed to launch on the GPU".
        "failed to launch on the gpu",
        // PyTorch's size overflow (`c10/core/StorageImpl`): "Storage size calculation overflowed".
        "storage size calculation overflowed",
        // TurboMind's own assertions (`src/turbomind/utils/cuda_utils.h` `FT_CHECK`): "[TM][ERROR] Assertion
        // fail: <file>:<line>".
        "[tm][error] assertion fail",
        // Ascend's device exceptions (`torch_npu`, ACL error 507035 and its kin): "The vector core execution is
        // abnormal", "The aicore execution is abnormal".
        "core execution is abnormal",
        // Triton's launcher rejecting a kernel's arguments: "Triton Error [CUDA]: invalid argument", "Pointer
        // argument (at N) cannot be accessed from Triton (cpu tensor?)".
        "triton error [cuda]: invalid argument",
        "cannot be accessed from triton",
    ],
    Kind::NotMemory,
    Source::CudaError,
)
.with(Hint::CudaFault);
/// LM Studio's loading guardrail: "Model loading was stopped due to insufficient system resources. … this model
/// requires approximately X GB of memory": the machine's RAM (unified memory on a Mac) would not hold it.
/// Unsloth's loader refuses the same way: "About X GB of this model does not fit in GPU memory and would run
/// from system RAM. Only about Y GB is available …": the part beyond the GPU would live in host RAM.
const LMSTUDIO_GUARDRAIL: Rule = any(
    &[
        "model loading was stopped due to insufficient system resources",
        "run from system ram. only about",
    ],
    Kind::Host,
    Source::CpuAllocator,
);

const RULES: &[Rule] = &[
    AMBIGUOUS,
    DEVICE_UNAVAILABLE,
    PT_HIP,
    PT_XPU,
    PT_MPS,
    ASCEND_OOM,
    GAUDI_DEVMEM,
    PT_ABSURD,
    PT_CUDA,
    SPCONV_CUDA_ERROR,
    PT_CUDA_TAIL,
    PT_CUDA_STATS,
    PT_FRACTION,
    PIN_THREAD,
    TF_PINNED,
    PINNED,
    CUDA_RT_OOM,
    THC_OOM,
    XPU_RT_OOM,
    TRT_OOM,
    TCNN_OOM,
    HAMI_OOM,
    HEAVYDB_GPU,
    HEAVYDB_CPU,
    SOPHON_GMEM,
    OPENCV_ABSURD,
    TCMALLOC_ABSURD,
    GGML_ABSURD,
    RUST_ABSURD,
    VM_ABSURD,
    OPENCV_ALLOC,
    RUST_ALLOC,
    CUBLAS_ALLOC,
    CUDNN_ALLOC,
    TORCH_ARCH_UNSUPPORTED,
    CUDNN_NO_ALGO,
    DS_WORKSPACE,
    VK_DEVICE_OOM,
    VK_HOST_OOM,
    VK_ALLOC_CODE,
    ENGINE_COMMIT,
    OTHER_DEVICE_OOM,
    OTHER_HOST_OOM,
    CUPY_OOM,
    JITTOR_DEVICE,
    RMM_OOM,
    RMM_CUDA_FAULT,
    VLLM_NEGATIVE_KV,
    BNB_CUDA_OOM,
    DML_VIDEO_MEMORY,
    DML_OOM,
    CUDA_FAILURE_OOM,
    CAFFE2_CUDA_OOM,
    MINDSPORE_DEVICE,
    DIFFUSION_UI_OOM,
    VLLM_RS_KV,
    ENGINE_KV_ASSERT,
    TRTLLM_EXECUTOR_OOM,
    RADV_BO_ALLOC,
    NVRM_NO_MEMORY,
    MIOPEN_ALLOC,
    OLLAMA_NO_MEM_CPU,
    OLLAMA_NO_MEM,
    SGLANG_TOKENS_FREE,
    SGLANG_TOKENS,
    ENGINE_OOM,
    TT_BANK_OOM,
    TINYGRAD_DEVICE,
    CU_RESULT_OOM,
    BNB_DISPATCH,
    VLLM_KV,
    VLLM_STARTUP,
    SGLANG_POOL,
    TGI_WARMUP,
    GGML_CUDA,
    GGML_VULKAN,
    GGML_CPU_ALLOC,
    GGML_HOST_BUFFER,
    GGML_DEVICE_BUFFER,
    METAL_CMDBUF,
    METAL_INVALID,
    METAL_GGML,
    MLX_MALLOC,
    PADDLE_ABSURD,
    PADDLE_OOM,
    PADDLE_ENFORCE_ALLOC,
    ORT_ARENA_ABSURD,
    ORT_ARENA_GPU,
    ORT_ARENA_CPU,
    XLA_TINY,
    XLA_OOM,
    XLA_TPU,
    TF_CPU,
    TF_OOM,
    TORCH_SHM,
    LOADER_SHM,
    NCCL_CUDA_OOM,
    NCCL_CUDA_FAILURE,
    NCCL_SHM_DENIED,
    SEMLOCK_SHM,
    NCCL_SHM,
    INOTIFY_LIMIT,
    SHM_ENOSPC,
    ENOSPC,
    HTTP_507,
    TOOL_DISK,
    RAY_DISK,
    HF_DISK,
    STREAM_WRITER,
    DATASETS_DISK,
    STORE_DISK,
    TF_DISK,
    CPU_ALLOC,
    CPU_ALLOC_TAIL,
    CT2_CPU_ALLOC,
    WIN_COMMIT,
    OLLAMA_RAM,
    LMSTUDIO_GUARDRAIL,
    LOADER_KILLED,
    OOM_KILLER,
    OOMKILLED,
    SIGKILL,
    SIGBUS,
    RAY_OOM,
    YARN_MEMORY,
    DASK_MEMORY,
    V8_HEAP,
    NOTEBOOK_RAM,
    BYTES_OBJECT,
    MLOCK_LIMIT,
    OPENBLAS_REGIONS,
    ENOMEM,
    PY_MEMORY_ERROR,
    HNSWLIB_HOST,
    NUMPY_ARRAY,
    JAVA_OOM,
    KILLED_LINE,
    KERNEL_RESTART_RAM,
    TORCH_OOM_CLASS,
    NOTEBOOK_OOM_CLASS,
    TORCH_OOM_NAME,
    TF_EXHAUSTED,
    LOADER_EXITED,
    CUDA_NEAR_OOM,
    DEVICE_ASSERT,
    DEVICE_ASSERT_LINE,
    ILLEGAL_ACCESS,
    CUDA_FAULT,
    NO_KERNEL,
    HIP_NO_BINARY,
    DRIVER,
    DTYPE_OR_FILE_LOCK,
    CUDA_HOME_MISSING,
    NUMBA_CUDA_ERROR,
    CUDA_RT_OTHER,
    WRONG_DEVICE,
    NO_CUDA,
    BF16_UNSUPPORTED,
    MPS_NOT_IMPLEMENTED,
    XPU_NO_MEMINFO,
    MODEL_MISMATCH,
    ORT_BUFFER_SHAPE,
    CORRUPT,
    SHARED_TENSORS_SAVE,
    NOT_EXHAUSTION,
    STRUCT_ERROR,
    CUBLAS_FAULT,
    CUDNN_FAULT,
    MXNET_WORKSPACE,
    NCCL_SHM_GONE,
    NVML_MISMATCH,
    ECC_UNCORRECTABLE,
    CUDA_FORWARD_COMPAT,
    HSA_FAULT,
    GGML_ASSERT,
    GGML_KV_SLOTS,
    GGML_CONTEXT_POOL,
    MLX_RESOURCE_LIMIT,
    PTXAS_ERROR,
    UNDEFINED_SYMBOL,
    DEVICE_FAULTS,
    TPU_BUSY,
    SIGILL,
    SIGILL_LINE,
    BNB_SETUP,
    TRITON_RESOURCES,
    FS_UNSUPPORTED,
    CONTEXT_LENGTH,
    OPEN_FILES,
    PEER_CLOSED,
    NCCL,
    DS_SWAP_BUFFERS,
    CUDART_UNLOADING,
    SHARED_LIB,
    SEGFAULT,
    NO_SUCH_FILE,
    TOKENIZER,
    SETUP_OR_IO,
    TF_SYSTEM_MEMORY,
    PROSE_GPU,
    PROSE_HOST,
    PROSE_DISK,
];

/// Last of all, what a person writes when no runtime's message was pasted, read one statement at a time
/// (questions and conditions are not statements): a statement that GPU memory ran out ("a CUDA OOM occurred
/// on the GPU", "显存不足"-like words with a device), that the process was killed for memory ("my process is
/// killed due to insufficient memory"), or that the disk filled ("the disk filling up"). Every runtime's own
/// format is tried before, so these only speak where nothing else does.
const PROSE_GPU: Rule = check(prose_gpu, Kind::Gpu, Source::Unknown).with(Hint::PasteMore);
const PROSE_HOST: Rule = check(prose_host, Kind::Host, Source::Unknown).with(Hint::PasteMore);
const PROSE_DISK: Rule = check(prose_disk, Kind::Disk, Source::Unknown).with(Hint::PasteMore);

/// The text's statements: pieces between sentence ends, without questions, conditions or negations.
fn statements(low: &str) -> impl Iterator<Item = (usize, &str)> {
    const HEDGES: &[&str] = &[
        "if ",
        "whether",
        "is it ",
        "not ",
        "n't ",
        " no ",
        "without ",
        // Possibilities, not statements ("This can happen due to insufficient memory or other GPU constraints").
        "can happen",
        "might ",
        "possibly",
        "could be",
    ];
    // "not enough memory" states a shortage; it is no negation.
    let statement = |piece: &str| {
        let piece = piece.replace("not enough", "");
        !piece.contains('吗') && !HEDGES.iter().any(|w| piece.contains(w))
    };
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in low.char_indices() {
        // A '.' inside a word ("ivrit.ai", "model.py", "3.5") ends no sentence.
        let next = low[i + c.len_utf8()..].chars().next();
        let ends = matches!(c, '。' | '！' | '？' | '；')
            || (matches!(c, '.' | '!' | '?' | ';') && next.is_none_or(char::is_whitespace));
        if ends {
            let piece = &low[start..i];
            if !matches!(c, '?' | '？') && statement(piece) {
                out.push((start, piece));
            }
            start = i + c.len_utf8();
        }
    }
    if statement(&low[start..]) {
        out.push((start, &low[start..]));
    }
    out.into_iter()
}

/// `word` in `text` as a word of its own (not inside another ASCII word).
fn has_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        before.is_none_or(|c| !word(c)) && after.is_none_or(|c| !word(c))
    })
}

/// Whether a statement names the host's memory ("system memory", RAM, 内存).
fn names_host_memory(st: &str) -> bool {
    st.contains("system memory") || has_word(st, "ram") || st.contains("内存")
}

/// Whether a statement names an accelerator or its memory.
fn names_device(st: &str) -> bool {
    // A C++ namespace ("cuda::std::complex<float>") names a type, not a device.
    let st = &st.replace("cuda::", "");
    [
        "gpu", "gpus", "vram", "cuda", "tpu", "hbm", "hip", "rocm", "xpu", "npu", "mps", "metal",
        "vulkan", "opencl", "directml", "adreno", "wgpu",
    ]
    .iter()
    .any(|p| has_word(st, p))
        || st.contains("显存")
        || st.contains("device memory")
        || st.contains("video memory")
        || st.contains("out_of_device_memory")
}

/// Whether a statement says an allocation failed or memory ran out, in the words runtimes print: the
/// prose readers' test, which a runtime's message not yet in the rules also meets.
fn says_ran_out(st: &str) -> bool {
    [
        "out of memory",
        "out-of-memory",
        "out_of_memory",
        "ran out of vram",
        "out of hbm",
        "out of cuda memory",
        "memory allocation fails",
        "out of device memory",
        "out_of_device_memory",
        "out of video memory",
        "out of host memory",
        "out_of_host_memory",
        "out of gpu memory",
        "not enough memory left",
        "out of system memory",
        "insufficient memory",
        "not enough memory",
        "memory allocation of size",
        "memory allocation failed",
        "failed to allocate memory",
        "unable to allocate memory",
        "cannot allocate memory",
    ]
    .iter()
    .any(|p| st.contains(p))
        || has_word(st, "oom")
}

/// Whether a statement names host memory in a runtime's words: the host's own allocator or memory.
fn names_host_allocator(st: &str) -> bool {
    names_host_memory(st)
        || [
            "host memory",
            "out_of_host_memory",
            "cpu memory",
            "malloc",
            "heap",
        ]
        .iter()
        .any(|p| st.contains(p))
}

/// [`PROSE_GPU`].
fn prose_gpu(s: &Scan) -> Option<usize> {
    statements(&s.low)
        .find(|(_, st)| {
            let ran_out = says_ran_out(st);
            // Pinned host memory is the host's, whatever the device named beside it; a warning before a
            // fallback ("Out of memory on cuda:0, trying CPU fallback") is not the failure; "system memory"
            // or RAM named is the host's ([`prose_host`]).
            let pinned = st.contains("mallochost") || st.contains("pinned");
            let recovered = ["fallback", "falling back", "moving to"]
                .iter()
                .any(|p| st.contains(p));
            ran_out && names_device(st) && !pinned && !recovered && !names_host_memory(st)
        })
        .map(|(i, _)| s.orig(i))
}

/// [`PROSE_HOST`].
fn prose_host(s: &Scan) -> Option<usize> {
    statements(&s.low)
        .find(|(_, st)| {
            let killed =
                has_word(st, "killed") || st.contains("被kill") || st.contains("oom killer");
            let memory = ["memory", "oom"].iter().any(|p| has_word(st, p)) || names_host_memory(st);
            // "The RAM (64 GBs) is full and so is the swap": the host's memory named full.
            let ram_full = names_host_memory(st)
                && ["is full", "was full", "filled up", "ran out"]
                    .iter()
                    .any(|p| st.contains(p));
            // A runtime's allocation failure naming the host's allocator or memory and no device ("Out of memory:
            // malloc of size N failed", "PI_ERROR_OUT_OF_HOST_MEMORY").
            // `cudaMallocHost` (pinned memory) is left to the pinned-memory rules.
            let host_alloc = says_ran_out(st)
                && names_host_allocator(st)
                && !names_device(st)
                && !st.contains("mallochost");
            (killed && memory && (names_host_memory(st) || !names_device(st)))
                || ram_full
                || host_alloc
        })
        .map(|(i, _)| s.orig(i))
}

/// [`PROSE_DISK`].
fn prose_disk(s: &Scan) -> Option<usize> {
    statements(&s.low)
        .find(|(_, st)| {
            let disk = ["disk", "storage", "磁盘", "硬盘"]
                .iter()
                .any(|p| st.contains(p));
            let full = [
                "is full",
                "was full",
                "filling up",
                "filled up",
                "reached 100%",
                "out of space",
                "out of disk",
            ]
            .iter()
            .any(|p| st.contains(p))
                || st.contains("满了");
            disk && full
        })
        .map(|(i, _)| s.orig(i))
}

/// The text on the same original line around byte `at`, at most `reach` bytes either side.
fn line_around(text: &str, at: usize, reach: usize) -> &str {
    let mut from = at.saturating_sub(reach);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let mut to = (at + reach).min(text.len());
    while !text.is_char_boundary(to) {
        to -= 1;
    }
    let at = at.clamp(from, to);
    let start = text[from..at].rfind('\n').map_or(from, |i| from + i + 1);
    let end = text[at..to].find('\n').map_or(to, |i| at + i);
    &text[start..end]
}

/// `low[i..]` capped at `len` bytes, cut on a char boundary.
fn window(low: &str, i: usize, len: usize) -> &str {
    let mut end = (i + len).min(low.len());
    while !low.is_char_boundary(end) {
        end -= 1;
    }
    low.get(i..end).unwrap_or("")
}

/// `low[..i]`'s last `len` bytes, cut on a char boundary.
fn window_before(low: &str, i: usize, len: usize) -> &str {
    let mut from = i.saturating_sub(len);
    while !low.is_char_boundary(from) {
        from += 1;
    }
    low.get(from..i).unwrap_or("")
}

/// [`PT_CUDA_TAIL`]: "tried to allocate" followed by the allocator's capacity clause.
fn pytorch_tail(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("tried to allocate")
        .map(|(i, _)| i)
        .find(|&i| {
            let w = window(&s.low, i, 120);
            w.contains("total capacity")
                || w.contains("total capacty")
                || w.contains("already allocated")
        })
        .map(|i| s.orig(i))
}

/// The buffer type named in ggml's "failed to allocate <type> buffer of size" / llama.cpp's "unable to
/// allocate <type> buffer", with its `flat` offset.
fn ggml_buffers<'s>(s: &'s Scan) -> impl Iterator<Item = (usize, &'s str)> + 's {
    ["failed to allocate ", "unable to allocate "]
        .into_iter()
        .flat_map(move |p| s.low.match_indices(p).map(move |(i, _)| (i, i + p.len())))
        .filter_map(move |(i, after)| {
            let rest = s.low.get(after..)?;
            let mut words = rest.split(' ');
            let name = words.next()?;
            // The word may carry the quote or bracket that closes the message ("… CUDA_Host buffer\"").
            let next = words
                .next()?
                .trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
            (next == "buffer" && !name.is_empty()).then_some((i, name))
        })
}

fn is_host_buffer(name: &str) -> bool {
    name.starts_with("cpu") || name.ends_with("_host")
}

/// [`GGML_HOST_BUFFER`].
fn ggml_host_buffer(s: &Scan) -> Option<usize> {
    ggml_buffers(s)
        .filter(|(_, n)| is_host_buffer(n))
        .map(|(i, _)| s.orig(i))
        .next()
}

/// [`GGML_DEVICE_BUFFER`].
fn ggml_device_buffer(s: &Scan) -> Option<usize> {
    ggml_buffers(s)
        .filter(|(_, n)| !is_host_buffer(n))
        .map(|(i, _)| s.orig(i))
        .next()
}

/// [`XLA_TINY`]: every XLA out-of-memory request in the text is under 1 KiB.
fn xla_tiny(s: &Scan) -> Option<usize> {
    let mut first = None;
    for p in [
        "out of memory while trying to allocate",
        "out of memory allocating",
    ] {
        for (i, _) in s.low.match_indices(p) {
            let gib = parse_size(s.flat.get(i + p.len()..).unwrap_or(""))?;
            if gib * GIB >= 1024.0 {
                return None;
            }
            first = Some(first.map_or(i, |f: usize| f.min(i)));
        }
    }
    first.map(|i| s.orig(i))
}

/// [`TF_CPU`]: TensorFlow's OOM naming the CPU allocator.
fn tf_cpu_oom(s: &Scan) -> Option<usize> {
    let tensor = s
        .low
        .match_indices("oom when allocating tensor")
        .find(|(i, _)| {
            let w = window(&s.low, *i, 400);
            let w = w.split("oom when allocating tensor").nth(1).unwrap_or(w);
            let w = w.split("]]").next().unwrap_or(w);
            w.contains("by allocator cpu") || w.contains("/device:cpu:")
        });
    let bfc = s
        .low
        .match_indices("ran out of memory trying to allocate")
        .find(|(i, _)| window_before(&s.low, *i, 24).contains("(cpu)"));
    tensor.or(bfc).map(|(i, _)| s.orig(i))
}

/// [`NCCL_CUDA_OOM`] / [`NCCL_CUDA_FAILURE`]: NCCL's "Cuda failure '<error string>'".
fn nccl_cuda_failures<'s>(s: &'s Scan) -> impl Iterator<Item = (usize, bool)> + 's {
    s.low.match_indices("nccl warn cuda failure").map(|(i, _)| {
        let w = window(&s.low, i, 80);
        (i, w.contains("out of memory"))
    })
}

fn nccl_cuda_failure_oom(s: &Scan) -> Option<usize> {
    nccl_cuda_failures(s)
        .find(|(_, oom)| *oom)
        .map(|(i, _)| s.orig(i))
}

fn nccl_cuda_failure_other(s: &Scan) -> Option<usize> {
    nccl_cuda_failures(s)
        .find(|(_, oom)| !*oom)
        .map(|(i, _)| s.orig(i))
}

/// [`SHM_ENOSPC`]: ENOSPC on a line that names shared memory.
fn enospc_on_shm(s: &Scan) -> Option<usize> {
    ["no space left on device", "os error 28", "errno 28"]
        .iter()
        .flat_map(|p| s.low.match_indices(p).map(|(i, _)| i))
        .map(|i| s.orig(i))
        .filter(|&at| {
            let line = ascii_lower(line_around(s.text, at, 400));
            // The line before may name the mount ("… fill all /run/shm.\n… no space left on device").
            let mut from = at.saturating_sub(200);
            while !s.text.is_char_boundary(from) {
                from += 1;
            }
            let before = ascii_lower(&s.text[from..at]);
            line.contains("shm")
                || line.contains("shared memory")
                || before.contains("/dev/shm")
                || before.contains("/run/shm")
        })
        .min()
}

/// [`TF_DISK`]: "resource exhausted: " followed by a file path.
fn tf_exhausted_path(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("resource exhausted: ")
        .find(|(i, p)| {
            let rest = s.low.as_bytes().get(i + p.len()..).unwrap_or(&[]);
            match rest {
                [b'/', ..] => true,
                [d, b':', b'\\' | b'/', ..] => d.is_ascii_alphabetic(),
                _ => false,
            }
        })
        .map(|(i, _)| s.orig(i))
}

/// [`PIN_THREAD`]: the pin-memory thread's error, when what it wraps is an out-of-memory.
fn pin_thread_oom(s: &Scan) -> Option<usize> {
    let at = s.find("in pin memory thread")?;
    s.has("out of memory").then(|| s.orig(at))
}

/// [`STREAM_WRITER`]: torch.save's zip writer failing to write.
fn stream_writer(s: &Scan) -> Option<usize> {
    s.find("pytorchstreamwriter failed writing file")
        .or_else(|| {
            s.low
                .match_indices("unexpected pos ")
                .map(|(i, _)| i)
                .find(|&i| window_before(&s.low, i, 80).contains("inline_container"))
        })
        .map(|i| s.orig(i))
}

/// [`LOADER_EXITED`]: a DataLoader worker that died without a named signal (a segfault is not memory).
fn loader_exited(s: &Scan) -> Option<usize> {
    if s.has("segmentation fault") || s.has("sigsegv") {
        return None;
    }
    s.low
        .match_indices(") exited unexpectedly")
        .map(|(i, _)| i)
        .find(|&i| window_before(&s.low, i, 60).contains("dataloader worker (pid"))
        .map(|i| s.orig(i))
}

/// [`PY_MEMORY_ERROR`]: NumPy's `_ArrayMemoryError` or `MemoryError` as a word.
fn memory_error(s: &Scan) -> Option<usize> {
    let bytes = s.low.as_bytes();
    s.low
        .match_indices("memoryerror")
        .map(|(i, _)| i)
        .find(|&i| s.low[..i].ends_with("array") || i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
        .map(|i| s.orig(i))
}

/// [`KERNEL_RESTART_RAM`]: "kernel … restarted" after a tcmalloc "large alloc" report.
fn kernel_restart_after_large_alloc(s: &Scan) -> Option<usize> {
    s.find("tcmalloc: large alloc")?;
    s.low
        .match_indices("restarted")
        .map(|(i, _)| i)
        .find(|&i| window_before(&s.low, i, 60).contains("kernel "))
        .map(|i| s.orig(i))
}

/// [`KILLED_LINE`]: a shell's "Killed" job report.
/// [`HNSWLIB_HOST`]: hnswlib's message as the whole of its line.
fn hnswlib_not_enough(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("runtimeerror: not enough memory")
        .find_map(|(i, _)| {
            let rest = s.low[i + "runtimeerror: not enough memory".len()..]
                .split('\n')
                .next()
                .unwrap_or("");
            rest.trim().is_empty().then(|| s.orig(i))
        })
}

fn killed_line(s: &Scan) -> Option<usize> {
    let mut start = 0;
    for line in s.text.split('\n') {
        let here = start;
        start += line.len() + 1;
        // Markdown pastes wrap the line in backticks or bold asterisks.
        let t = line.trim().trim_matches(['`', '*']).trim();
        // zh_CN's `strsignal(SIGKILL)`, alone or right after a progress line it was printed beside.
        if t == "已杀死" || (t.ends_with("已杀死") && t.contains("eta")) || t.ends_with("s已杀死")
        {
            return Some(here);
        }
        // The shell's word quoted by the person who saw it: 'I get a "Killed" message'.
        if t.contains("\"Killed\"") || t.contains("“Killed”") || t.contains("'Killed'") {
            return Some(here);
        }
        // macOS's `strsignal(SIGKILL)` is "Killed: 9" (bash there prints "line 33: 22631 Killed: 9  cmd").
        let low = ascii_lower(t).replace("killed: 9", "killed");
        let low = low.trim_end_matches('.');
        if low == "killed" {
            return Some(here);
        }
        // The shell's "Killed" written at the start of a tqdm line that the progress bar had drawn with a
        // carriage return, keeping the rest of the bar: "Killedng 9 files:   0%|      | 0/9 [00:00<?, ?it/s]".
        if low.starts_with("killed") && low.contains("%|") && low.contains("it/s") {
            return Some(here);
        }
        // zsh's report of a foreground job (`Src/jobs.c`, SIGKILL's name from `signames`): "zsh: killed  cmd".
        // A spinner or progress line that zsh's report overwrote: "importing safetensors model ⠧ zsh: killed  cmd".
        let zsh_after_bar = low
            .match_indices("zsh: killed ")
            .any(|(i, _)| low[..i].ends_with([' ', ']', '|', '%']));
        if low == "zsh: killed" || low.starts_with("zsh: killed ") || zsh_after_bar {
            return Some(here);
        }
        // Right after a progress bar or a shell prompt: "…it/s]Killed", "… 0% 。。。 Killed", "$  Killed".
        if let Some(head) = low.strip_suffix("killed") {
            // tqdm draws its bar with the Unicode block elements (U+2580–U+259F: "…█████▎Killed").
            let bar = head.ends_with(|c: char| ('\u{2580}'..='\u{259F}').contains(&c));
            if bar || head.ends_with([']', '|', '%', ')']) || head.trim_end().ends_with(['$', '>'])
            {
                return Some(here);
            }
        }
        // The same inside a sentence: "Loading checkpoint shards:   0%| Killed，…" (a progress bar quoted in
        // prose, the word followed by punctuation, not by more of a word).
        let after_bar = low.match_indices("killed").any(|(i, _)| {
            let before = low[..i].trim_end();
            let next = low[i + "killed".len()..].chars().next();
            before.ends_with(['|', ']', '%']) && next.is_none_or(|c| !c.is_alphanumeric())
        });
        if after_bar {
            return Some(here);
        }
        // bash "line 28:  7 Killed  cmd", "[1]+  Killed  cmd"; zsh "[1]  26478 killed  cmd".
        let words: Vec<&str> = low.split_whitespace().collect();
        let job = |w: &str| {
            !w.is_empty()
                && w.trim_start_matches('[')
                    .trim_end_matches(['+', '-'])
                    .trim_end_matches(']')
                    .bytes()
                    .all(|b| b.is_ascii_digit())
        };
        // A script's own report with its pid elided ("run_server.sh: line 39: xxx Killed").
        if let [.., l, n, _, last] = words.as_slice() {
            if *l == "line"
                && n.ends_with(':')
                && *last == "killed"
                && n[..n.len() - 1].bytes().all(|b| b.is_ascii_digit())
            {
                return Some(here);
            }
        }
        // (The command after "Killed" may be cut off: "cli_demo.sh: line 5: 12989 Killed".)
        if words
            .windows(2)
            .any(|w| w[1] == "killed" && job(w[0]) && w[0].bytes().any(|b| b.is_ascii_digit()))
        {
            return Some(here);
        }
    }
    None
}

/// [`OOMKILLED`]: the runtime's `OOMKilled` reason, unless it is Docker's `OOMKilled: false`.
fn oomkilled_true(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("oomkilled")
        .map(|(i, p)| (i, i + p.len()))
        .find(|&(_, end)| {
            let rest = s.low[end..].trim_start_matches(['"', '\'', ':', ' ', '=']);
            !rest.starts_with("false")
        })
        .map(|(i, _)| s.orig(i))
}

/// Whether the container runtime said the exit was not an OOM kill (see [`SIGKILL`]).
fn runtime_says_not_oom(s: &Scan) -> bool {
    let bytes = s.low.as_bytes();
    ["reason: error", "reason [error]"].iter().any(|p| {
        s.low.match_indices(p).any(|(i, _)| {
            let end = i + p.len();
            // "Reason: Error", not "Reason: ErrorImagePull" (the bracketed form is closed already).
            p.ends_with(']') || bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric())
        })
    }) || s.low.match_indices("oomkilled").any(|(i, p)| {
        s.low[i + p.len()..]
            .trim_start_matches(['"', '\'', ':', ' ', '='])
            .starts_with("false")
    })
}

/// [`SIGKILL`].
fn sigkill(s: &Scan) -> Option<usize> {
    let at = SIGKILL_PHRASES.iter().filter_map(|p| s.find(p)).min()?;
    (!runtime_says_not_oom(s) && !gunicorn_timeout_kill(s)).then(|| s.orig(at))
}

/// gunicorn's arbiter (`arbiter.py` `murder_workers`) logs "WORKER TIMEOUT (pid:N)" and then kills the worker
/// itself (SIGABRT, then SIGKILL past the graceful timeout), after which the reaper prints its "was sent
/// SIGKILL! Perhaps out of memory?" guess: the kill is gunicorn's own, for a worker that did not answer.
fn gunicorn_timeout_kill(s: &Scan) -> bool {
    s.has("was sent sigkill!") && s.has("worker timeout (pid:")
}

/// The length of a leading `[rankN]:` (torch.distributed elastic's `--tee`/`local_ranks_filter` prefix) or
/// of Docker Compose's `service-1  | ` (its log multiplexer pads the service name and adds `| `), 0 when the
/// line has none.
fn rank_prefix_len(line: &str) -> usize {
    let name = line
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        .count();
    if name > 0 {
        let rest = &line[name..];
        let pad = rest.bytes().take_while(|b| *b == b' ').count();
        if pad > 0 && rest[pad..].starts_with("| ") {
            return name + pad + 2;
        }
    }
    let Some(rest) = line.strip_prefix("[rank") else {
        return 0;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && rest[digits..].starts_with("]:") {
        "[rank".len() + digits + 2
    } else {
        0
    }
}

/// [`PINNED`]: a pinned-allocation phrase on a line that names no other CUDA error.
fn pinned_host(s: &Scan) -> Option<usize> {
    const OTHER: &[&str] = &[
        "launch failure",
        "illegal memory access",
        "device-side assert",
        "misaligned address",
        // ggml `ggml_cuda_host_malloc` prints `cudaGetErrorString`: with no GPU the pinned buffer fails for
        // want of a device ("no CUDA-capable device is detected"), not of memory.
        "no cuda-capable device",
    ];
    [
        "cachinghostallocator",
        "of pinned memory",
        "cudahostalloc failed, ret[2]",
        // An application's own report of a failed `pin_memory()` / `cudaHostAlloc`: "pinned-RAM allocation
        // failed", "pinned memory allocation failed".
        "pinned-ram allocation failed",
        "pinned memory allocation failed",
    ]
    .iter()
    .flat_map(|p| s.low.match_indices(p).map(|(i, _)| i))
    .filter(|&i| {
        let line = ascii_lower(line_around(s.text, s.orig(i), 300));
        !OTHER.iter().any(|o| line.contains(o))
    })
    .min()
    .map(|i| s.orig(i))
}

/// [`ENGINE_KV_ASSERT`]: "not enough memory for kv cache" raised as an `AssertionError` or a `ValueError` on
/// its line (an engine's warning before a fallback pool is not a failure).
fn engine_kv_assert(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("not enough memory for kv cache")
        .map(|(i, _)| i)
        .find(|&i| {
            let line = ascii_lower(line_around(s.text, s.orig(i), 200));
            line.contains("assertionerror")
                || line.contains("valueerror")
                || line.contains("assert ")
        })
        .map(|i| s.orig(i))
}

/// [`SGLANG_TOKENS`]: SGLang's "out of memory. Try to lower your batch size".
fn sglang_token_pool(s: &Scan) -> Option<usize> {
    s.low
        .find("out of memory. try to lower your batch size")
        .map(|i| s.orig(i))
}

/// [`SGLANG_TOKENS_FREE`]: that message with "Available tokens: M" (SGLang spells it "Avaliable" in some
/// releases) at least the "Try to allocate N tokens" it asked for.
fn sglang_tokens_left(s: &Scan) -> Option<usize> {
    let at = sglang_token_pool(s)?;
    let number_after = |key: &str| -> Option<u64> {
        let i = s.low.find(key)? + key.len();
        let digits: String = s.low[i..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    let asked = number_after("try to allocate")?;
    let left = number_after("available tokens:").or_else(|| number_after("avaliable tokens:"))?;
    (left >= asked).then_some(at)
}

/// [`TORCH_OOM_NAME`]: "OutOfMemoryError" standing alone (not `java.lang.`/`ray.exceptions.` and the like, a
/// word of its own) or "CUDA OutOfMemory".
fn torch_oom_name(s: &Scan) -> Option<usize> {
    if let Some(i) = s.find("cuda outofmemory") {
        return Some(s.orig(i));
    }
    s.low
        .match_indices("outofmemoryerror")
        .map(|(i, _)| i)
        .find(|&i| {
            let before = s.low[..i].chars().next_back();
            // A source line quoted in a traceback ("raise OutOfMemoryError", "except OutOfMemoryError:")
            // names the class without raising it.
            let code = ["raise", "except", "import", "class", "def", "isinstance("]
                .iter()
                .any(|w| s.low[..i].trim_end().ends_with(w));
            before.is_none_or(|c| !c.is_alphanumeric() && c != '.' && c != '_')
                && !code
                && !s.conditional(i)
        })
        .map(|i| s.orig(i))
}

/// [`NVRM_NO_MEMORY`]: the driver's `NV_ERR_NO_MEMORY` without the kernel's OOM killer beside it.
fn nvrm_no_memory(s: &Scan) -> Option<usize> {
    let at = s.find("[nv_err_no_memory]")?;
    (!s.has("invoked oom-killer") && !s.has("out of memory: killed process")).then_some(at)
}

/// [`OLLAMA_NO_MEM`]: Ollama's `ErrNoMem` with GPUs in its allocation list.
fn ollama_no_mem_gpu(s: &Scan) -> Option<usize> {
    let at = s.find("insufficient memory - required allocations")?;
    (!s.has("gpus:[]")).then(|| s.orig(at))
}

/// [`OLLAMA_NO_MEM_CPU`]: the same with `GPUs:[]`.
fn ollama_no_mem_cpu(s: &Scan) -> Option<usize> {
    let at = s.find("insufficient memory - required allocations")?;
    s.has("gpus:[]").then(|| s.orig(at))
}

/// [`TINYGRAD_DEVICE`]: tinygrad's "no memory is available" beside one of its device runtimes' frames.
fn tinygrad_device_oom(s: &Scan) -> Option<usize> {
    let at = s.low.find("bytes: no memory is available")?;
    [
        "tinygrad/runtime/ops_amd",
        "tinygrad/runtime/ops_nv",
        "tinygrad/runtime/ops_cuda",
    ]
    .iter()
    .any(|f| s.low.contains(f))
    .then(|| s.orig(at))
}

/// [`PTXAS_ERROR`]: a line that starts with `ptxas` and reports an error or a fatal error.
fn ptxas_error(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("ptxas")
        .map(|(i, _)| i)
        .find(|&i| {
            let line = ascii_lower(line_around(s.text, s.orig(i), 400));
            let line = line.trim_start();
            line.starts_with("ptxas") && (line.contains(" error") || line.contains(" fatal"))
        })
        .map(|i| s.orig(i))
}

/// [`CUDA_FAILURE_OOM`]: a "cuda failure:" report whose line ends in "out of memory".
fn cuda_failure_oom(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("cuda failure:")
        .map(|(i, _)| i)
        .find(|&i| ascii_lower(line_around(s.text, s.orig(i), 300)).contains("out of memory"))
        .map(|i| s.orig(i))
}

/// [`CUDA_RT_OTHER`]: TensorRT-LLM's "CUDA runtime error in <call>: <error>" naming an error other than out
/// of memory.
fn cuda_runtime_other(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("cuda runtime error in ")
        .map(|(i, _)| i)
        .find(|&i| !ascii_lower(line_around(s.text, s.orig(i), 400)).contains("out of memory"))
        .map(|i| s.orig(i))
}

/// [`DML_OOM`]: DirectML's execution provider with Windows' `E_OUTOFMEMORY` (0x8007000E, "Not enough memory
/// resources are available to complete this operation").
fn dml_out_of_memory(s: &Scan) -> Option<usize> {
    let at = s.find("dmlexecutionprovider")?;
    ["8007000e", "800 7000e", "enough memory resources"]
        .iter()
        .any(|c| s.low.contains(c))
        .then(|| s.orig(at))
}

/// [`RAY_DISK`]: raylet's file-system monitor ("… is over 95% full").
fn ray_disk_full(s: &Scan) -> Option<usize> {
    let at = s.find("file_system_monitor")?;
    window(&s.low, at, 200)
        .contains("% full")
        .then(|| s.orig(at))
}

/// [`SEMLOCK_SHM`]: `SemLock` beside errno 28.
fn semlock_enospc(s: &Scan) -> Option<usize> {
    let at = s.find("semlock")?;
    let near = window(&s.low, at, 200);
    (near.contains("errno 28") || near.contains("no space left on device")).then(|| s.orig(at))
}

/// [`VK_ALLOC_CODE`]: "vkAllocateMemory" with the code -2 on the same line.
fn vk_allocate_device_code(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("vkallocatememory")
        .map(|(i, _)| i)
        .find(|&i| {
            let w = window(&s.low, i, 160);
            let w = w.split('\n').next().unwrap_or("");
            // ncnn `gpu.cpp` / `allocator.cpp`: "vkAllocateMemory failed %d".
            [
                "errcode=-2",
                "error code -2",
                "result -2",
                "= -2",
                "(-2)",
                "failed -2",
            ]
            .iter()
            .any(|c| w.contains(c))
        })
        .map(|i| s.orig(i))
}

/// [`RUST_ALLOC`]: "memory allocation of N bytes failed".
fn rust_alloc_failure(s: &Scan) -> Option<usize> {
    const KEY: &str = "memory allocation of ";
    s.low.match_indices(KEY).map(|(i, _)| i).find(|&at| {
        let rest = &s.low[at + KEY.len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(" bytes failed")
    })
}

/// [`RUST_ABSURD`]: Rust's "memory allocation of N bytes failed" with N over 64 TiB.
fn rust_absurd(s: &Scan) -> Option<usize> {
    const KEY: &str = "memory allocation of ";
    s.low.match_indices(KEY).map(|(i, _)| i).find(|&at| {
        let rest = &s.low[at + KEY.len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        rest[digits.len()..].starts_with(" bytes failed")
            && digits
                .parse::<f64>()
                .is_ok_and(|n| n > 70_368_744_177_664.0)
    })
}

/// [`TCMALLOC_ABSURD`]: tcmalloc's "large alloc N bytes" with N over 64 TiB.
fn tcmalloc_absurd(s: &Scan) -> Option<usize> {
    const KEY: &str = "tcmalloc: large alloc ";
    s.low.match_indices(KEY).map(|(i, _)| i).find(|&at| {
        let digits: String = s.low[at + KEY.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse::<f64>()
            .is_ok_and(|n| n > 70_368_744_177_664.0)
    })
}

/// [`RMM_CUDA_FAULT`]: RMM's `std::bad_alloc: CUDA error` naming an illegal address.
fn rmm_cuda_fault(s: &Scan) -> Option<usize> {
    let at = s.find("std::bad_alloc: cuda error")?;
    (s.has("cudaerrorillegaladdress") || s.has("illegal memory access")).then(|| s.orig(at))
}

/// [`VM_ABSURD`]: macOS's `mach_vm_map(size=N) failed` or Kokkos' `allocate[ … ]( N ) FAILED` with N over 64 TiB.
fn vm_absurd(s: &Scan) -> Option<usize> {
    for key in ["mach_vm_map(size=", "::allocate[", "allocate( "] {
        for (at, _) in s.low.match_indices(key) {
            let rest = &s.low[at + key.len()..];
            let rest = rest
                .find(|c: char| c.is_ascii_digit())
                .filter(|i| *i <= 24)
                .map_or("", |i| &rest[i..]);
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits
                .parse::<f64>()
                .is_ok_and(|n| n > 70_368_744_177_664.0)
            {
                return Some(s.orig(at));
            }
        }
    }
    None
}

/// [`GGML_ABSURD`]: ggml's "attempted to allocate X MB" with X over 64 TiB (67,108,864 MB).
fn ggml_absurd(s: &Scan) -> Option<usize> {
    const KEY: &str = "insufficient memory (attempted to allocate ";
    let at = s.find(KEY)?;
    let number: String = s.low[at + KEY.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mb: f64 = number.parse().ok()?;
    (mb > 67_108_864.0).then(|| s.orig(at))
}

/// [`OPENCV_ABSURD`]: OpenCV's "Failed to allocate N bytes" with N over 64 TiB.
fn opencv_absurd(s: &Scan) -> Option<usize> {
    const KEY: &str = "(-4:insufficient memory) failed to allocate";
    let at = s.find(KEY)?;
    let digits: String = s.low[at + KEY.len()..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: f64 = digits.parse().ok()?;
    (n > 70_368_744_177_664.0).then_some(at)
}

/// [`SPCONV_CUDA_ERROR`]: "cuda execution failed with error N" with N other than 2.
fn spconv_cuda_error(s: &Scan) -> Option<usize> {
    const KEY: &str = "cuda execution failed with error ";
    let at = s.find(KEY)?;
    let digits: String = s.low[at + KEY.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!digits.is_empty() && digits != "2").then(|| s.orig(at))
}

/// [`PT_ABSURD`]: "Tried to allocate X" with X over 64 TiB.
fn pytorch_absurd(s: &Scan) -> Option<usize> {
    let at = s.find("tried to allocate ")?;
    let gib = parse_size(&s.text[s.orig(at) + "tried to allocate ".len()..])?;
    (gib > 65_536.0).then(|| s.orig(at))
}

/// [`PADDLE_ABSURD`]: Paddle's "Cannot allocate X" with X of a petabyte or more.
fn paddle_absurd(s: &Scan) -> Option<usize> {
    let at = s.find("cannot allocate ")?;
    let gib = parse_size(&s.text[s.orig(at) + "cannot allocate ".len()..])?;
    (gib >= 1_048_576.0).then(|| s.orig(at))
}

/// [`DS_SWAP_BUFFERS`]: DeepSpeed's two swap-buffer assertions.
fn ds_swap_buffers(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("not enough buffers")
        .find(|(i, _)| window(&s.low, *i, 60).contains("for swapping"))
        .or_else(|| {
            s.low
                .match_indices("more elements ")
                .find(|(i, _)| window(&s.low, *i, 80).contains("than buffer size"))
        })
        .map(|(i, _)| s.orig(i))
}

/// [`NUMBA_CUDA_ERROR`]: Numba's "call to cu… results in cuda_error_…" naming an error other than out of
/// memory.
fn numba_cuda_error(s: &Scan) -> Option<usize> {
    s.low
        .match_indices(" results in cuda_error_")
        .map(|(i, _)| i)
        .find(|&i| !window(&s.low, i, 60).contains("cuda_error_out_of_memory"))
        .map(|i| s.orig(i))
}

/// [`GGML_ASSERT`]: a ggml assertion whose condition is not the literal `false`.
fn ggml_assert(s: &Scan) -> Option<usize> {
    if let Some(i) = s.find("exit status 0xc000001d") {
        return Some(s.orig(i));
    }
    ["ggml_assert(", "ggml_assert: "]
        .iter()
        .flat_map(|p| s.low.match_indices(p).map(|(i, _)| i))
        .filter(|&i| {
            let line = ascii_lower(line_around(s.text, s.orig(i), 300));
            let line = line
                .trim_end()
                .trim_end_matches(['"', '\\', '`'])
                .trim_end();
            let from = line.find("ggml_assert").unwrap_or(0);
            let line = &line[from..];
            !(line.starts_with("ggml_assert(false)") || line.ends_with(": false"))
        })
        .min()
        .map(|i| s.orig(i))
}

/// [`TCNN_OOM`]: tiny-cuda-nn's `CUDA_CHECK_THROW` failure text for a `cudaMalloc` (not a host allocation).
fn tcnn_oom(s: &Scan) -> Option<usize> {
    ["failed with error out of memory", ") failed: out of memory"]
        .iter()
        .flat_map(|p| s.low.match_indices(p).map(|(i, _)| i))
        .filter(|&i| {
            let w = window_before(&s.low, i, 120);
            w.contains("cudamalloc") && !w.contains("host")
        })
        .min()
        .map(|i| s.orig(i))
}

/// [`HAMI_OOM`]: HAMi-core's `oom_check` ("Device N OOM A / B") or its failed allocation with `CUresult` 2.
fn hami_oom(s: &Scan) -> Option<usize> {
    if let Some(i) = s.find("cumemoryallocate failed res=2") {
        let after = s
            .low
            .as_bytes()
            .get(i + "cumemoryallocate failed res=2".len());
        if after.is_none_or(|b| !b.is_ascii_digit()) {
            return Some(s.orig(i));
        }
    }
    s.low
        .match_indices("hami-core error")
        .map(|(i, _)| i)
        .find(|&i| {
            let w = window(&s.low, i, 160);
            let Some(d) = w.find("]: device ") else {
                return false;
            };
            let rest = &w[d + "]: device ".len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with(" oom ")
        })
        .map(|i| s.orig(i))
}

/// [`CUDA_NEAR_OOM`]: "out of memory" with a CUDA/HIP prefix shortly before it.
fn cuda_near_oom(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("out of memory")
        .map(|(i, _)| i)
        .filter(|&i| !s.conditional(i))
        .find(|&i| {
            let w = window_before(&s.low, i, 60);
            (w.contains("cuda") || w.contains("hip") || w.contains("rocm")) && !w.contains("host")
        })
        .map(|i| s.orig(i))
}

/// [`DEVICE_ASSERT_LINE`]: CUDA's device printf "block: [...], thread: [...] Assertion `…` failed".
/// A CUDA kernel `assert` line, `file.cu:N: kernel: block: [x,y,z], thread: [x,y,z] Assertion `cond`
/// failed.` (the backticks are lost in some pastes).
fn device_assert_line(s: &Scan) -> Option<usize> {
    s.low
        .match_indices("assertion ")
        .map(|(i, _)| i)
        .find(|&i| {
            window_before(&s.low, i, 60).contains("thread: [")
                && window(&s.low, i, 200).contains("failed")
        })
        .map(|i| s.orig(i))
}

/// Parses a size such as "20.00 MiB", "1.2 GB", "0 bytes", "7406166528 bytes", "144817.04 MiB", "4GB" into
/// GiB. Decimal units (GB, MB) are 10^9/10^6 bytes, binary (GiB, MiB) 2^30/2^20 (PyTorch prints binary).
fn parse_size(s: &str) -> Option<f64> {
    parse_size_as(s, false)
}

/// [`parse_size`]; with `binary_decimal`, "KB", "MB", "GB" mean 2^10, 2^20, 2^30 (PyTorch's MPS allocator
/// divides by 1024 but prints the decimal names).
fn parse_size_as(s: &str, binary_decimal: bool) -> Option<f64> {
    let (number, rest) = parse_number(s)?;
    let unit: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    let bytes = match unit.as_str() {
        "b" | "bytes" | "byte" => 1.0,
        "kib" | "k" => 1024.0,
        "kb" if binary_decimal => 1024.0,
        "kb" => 1e3,
        "mib" | "m" => 1_048_576.0,
        "mb" if binary_decimal => 1_048_576.0,
        "mb" => 1e6,
        "gib" | "g" => GIB,
        "gb" if binary_decimal => GIB,
        "gb" => 1e9,
        "tib" | "t" => GIB * 1024.0,
        "tb" => 1e12,
        "pib" | "p" => GIB * 1_048_576.0,
        "pb" => 1e15,
        _ => return None,
    };
    let gib = number * bytes / GIB;
    gib.is_finite().then_some(gib)
}

/// A leading number ("1,024.5", "1900,00" is read as 190000 — callers only need the usual forms) and the rest.
fn parse_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim_start();
    let num_len = s
        .char_indices()
        .take_while(|(_, c)| c.is_ascii_digit() || *c == '.' || *c == ',')
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    let number: f64 = s[..num_len].replace(',', "").parse().ok()?;
    Some((number, &s[num_len..]))
}

/// A size with a unit, or a bare count of bytes ("of size: 34359738368", "buffer of size 8891928576").
fn parse_size_or_bytes(s: &str) -> Option<f64> {
    parse_size(s).or_else(|| {
        let (n, rest) = parse_number(s)?;
        let next = rest.chars().next();
        next.is_none_or(|c| !c.is_ascii_alphabetic())
            .then_some(n / GIB)
    })
}

/// The size that follows the first occurrence of `phrase` (case-insensitive), if one does.
fn size_after(text: &str, lower: &str, phrase: &str) -> Option<f64> {
    let at = lower.find(phrase)? + phrase.len();
    parse_size(&text[at..])
}

/// [`size_after`], allowing a bare count of bytes.
fn bytes_after(text: &str, lower: &str, phrase: &str) -> Option<f64> {
    let at = lower.find(phrase)? + phrase.len();
    parse_size_or_bytes(&text[at..])
}

/// The size after "phrase :" (aligned tables: "Requested : 4.83 GiB").
fn size_after_colon(text: &str, lower: &str, phrase: &str) -> Option<f64> {
    let at = lower.find(phrase)? + phrase.len();
    let rest = text[at..].trim_start().strip_prefix(':')?;
    parse_size(rest)
}

/// The size that ends right before the first occurrence of `phrase` ("15.78 GiB total capacity").
fn size_before(text: &str, lower: &str, phrase: &str) -> Option<f64> {
    size_ending_at(text, lower.find(phrase)?)
}

/// The size (number and unit) that ends at byte `end` of `text` (see [`size_before`]).
fn size_ending_at(text: &str, end: usize) -> Option<f64> {
    let head = text.get(..end)?.trim_end();
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

/// vLLM v1's "max seq len (N), (X GiB KV cache is needed": the size after the length's parenthesis.
fn vllm_kv_needed(text: &str, lower: &str) -> Option<f64> {
    let at = lower.find("max seq len (")?;
    let close = at + lower[at..].find(')')? + 1;
    let rest = text[close..].trim_start().strip_prefix(',')?.trim_start();
    parse_size(rest.strip_prefix('(').unwrap_or(rest))
}

/// vLLM's "Free memory on device cuda:1 (19.77/22.05 GiB)": (free, total).
fn vllm_free_total(text: &str, lower: &str) -> Option<(f64, f64)> {
    let at = lower.find("free memory on device")?;
    let open = at + lower[at..].find('(')? + 1;
    let (free, rest) = parse_number(&text[open..])?;
    let after = rest.strip_prefix('/')?;
    let (total_number, _) = parse_number(after)?;
    let total = parse_size(after)?;
    (total_number > 0.0).then(|| (free * total / total_number, total))
}

/// vLLM ≥ 0.8's startup check: "… is less than desired GPU memory utilization (0.9, 42.64 GiB)": the GiB it
/// wanted.
fn vllm_desired(text: &str, lower: &str) -> Option<f64> {
    let at = lower.find("desired gpu memory utilization (")?;
    let comma = at + lower[at..].find(',')? + 1;
    parse_size(text[comma..].trim_start())
}

/// XLA:TPU's "Used X of Y hbm": Y.
fn xla_space_total(text: &str, lower: &str) -> Option<f64> {
    let at = lower.find("ran out of memory in memory space")?;
    let used = at + lower[at..].find(" used ")? + " used ".len();
    let (_, rest) = parse_number(&text[used..])?;
    let of = rest.find(" of ")? + " of ".len();
    parse_size(&rest[of..])
}

/// ggml-metal's last "(allocated / recommended max working set)" pair, MiB: (allocated, limit).
fn metal_working_set(text: &str, lower: &str) -> Option<(f64, f64)> {
    if !lower.contains("recommended max working set size") {
        return None;
    }
    lower.rmatch_indices(", (").take(64).find_map(|(i, p)| {
        let (a, rest) = parse_number(&text[i + p.len()..])?;
        let (b, rest) = parse_number(rest.trim_start().strip_prefix('/')?)?;
        rest.trim_start()
            .starts_with(')')
            .then_some((a / 1024.0, b / 1024.0))
    })
}

const ORT_ARENA: &str = "failed to allocate memory for requested buffer of size";

/// ONNX Runtime's arena failure under the CUDA execution provider (the text names CUDA or the GPU).
fn ort_arena_gpu(s: &Scan) -> Option<usize> {
    let at = s.find(ORT_ARENA)?;
    (s.has("cuda") || s.has("gpu")).then_some(at)
}

/// ONNX Runtime's arena failure on the CPU (the text names the CPU or its `nchwc` layout); without a device,
/// nothing says which memory it was.
fn ort_arena_cpu(s: &Scan) -> Option<usize> {
    let at = s.find(ORT_ARENA)?;
    (s.has("cpu") || s.has("nchwc")).then_some(at)
}

/// ONNX Runtime's arena asked for more than 1 PiB (see [`ORT_ARENA_ABSURD`]).
fn ort_arena_absurd(s: &Scan) -> Option<usize> {
    let at = s.find(ORT_ARENA)?;
    let rest = &s.low[at + ORT_ARENA.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    let n: f64 = digits.parse().ok()?;
    (n > 1_125_899_906_842_624.0).then_some(at)
}

/// NCCL's shared-memory attach failing with ENOENT (see [`NCCL_SHM_GONE`]).
fn nccl_shm_gone(s: &Scan) -> Option<usize> {
    let at = s.find("error while attaching to shared memory segment")?;
    let line = s.text[s.orig(at)..].lines().next()?;
    ascii_lower(line)
        .contains("no such file or directory")
        .then_some(at)
}

/// "Free memory on device (110.37/121.69 GiB) on startup." (vLLM v1 `gpu_worker.py`): free and total, in
/// the unit after the second number.
fn free_over_total(text: &str, lower: &str) -> Option<(f64, f64)> {
    let at = lower.find("free memory on device (")? + "free memory on device (".len();
    let (free, rest) = parse_number(&text[at..])?;
    let rest = rest.trim_start().strip_prefix('/')?;
    let (total_n, _) = parse_number(rest)?;
    let total = parse_size(rest)?;
    (total_n > 0.0).then(|| (free * total / total_n, total))
}

/// ggml-metal's "size N is larger than buffer maximum of M" (bytes): the size asked for.
fn metal_buffer_size(lower: &str) -> Option<f64> {
    let end = lower.find(" is larger than buffer maximum of")?;
    let n: f64 = lower[..end].split_whitespace().last()?.parse().ok()?;
    Some(n / 1073741824.0)
}

/// TensorFlow/XLA `tsl/framework/bfc_allocator.cc`: the size after "ran out of memory trying to allocate".
/// Its warning form ("… with freed_by_count=0. The caller indicates that this is not a failure, but …") is a
/// request the caller retries; where XLA's own status states the failed size ("Out of memory while trying to
/// allocate N bytes"), that one is the figure, so the warning is skipped.
fn bfc_failure_size(text: &str, lower: &str) -> Option<f64> {
    let p = "ran out of memory trying to allocate";
    let mut sizes = lower.match_indices(p).map(|(i, _)| {
        let at = i + p.len();
        let warning =
            window(lower, at, 200).contains("the caller indicates that this is not a failure");
        (at, warning)
    });
    let xla_states_it = lower.contains("out of memory while trying to allocate");
    let at = if xla_states_it {
        sizes.find(|&(_, warning)| !warning)?.0
    } else {
        sizes.next()?.0
    };
    parse_size(&text[at..])
}

/// The size after `squeezed` (a phrase without its spaces) matched with all spaces removed: a message whose
/// words a fixed-width wrap cut in two ("to\ntal capacity of 23.67 GiB").
fn size_after_unwrapped(text: &str, lower: &str, squeezed: &str) -> Option<f64> {
    let mut packed = String::with_capacity(lower.len());
    let mut ends = Vec::with_capacity(lower.len());
    for (i, c) in lower.char_indices() {
        if c != ' ' {
            packed.push(c);
            ends.extend(std::iter::repeat_n(i + c.len_utf8(), c.len_utf8()));
        }
    }
    let at = packed.find(squeezed)? + squeezed.len();
    parse_size(&text[*ends.get(at - 1)?..])
}

/// [`size_before`] for a phrase that a line wrap may have cut inside a word: `squeezed` is the phrase without
/// spaces, matched on the text without them.
fn size_before_unwrapped(text: &str, lower: &str, squeezed: &str) -> Option<f64> {
    let mut packed = String::with_capacity(lower.len());
    let mut starts = Vec::with_capacity(lower.len());
    for (i, c) in lower.char_indices() {
        if c != ' ' {
            packed.push(c);
            starts.extend(std::iter::repeat_n(i, c.len_utf8()));
        }
    }
    size_ending_at(text, *starts.get(packed.find(squeezed)?)?)
}

/// Paddle's `PADDLE_ENFORCE_LE(allocating, available)`: "… failed, A > B" or "received allocating:A >
/// available:B" (bytes): (allocating, available).
fn paddle_enforce_pair(text: &str, lower: &str) -> Option<(f64, f64)> {
    let after = |p: &str| lower.find(p).map(|i| i + p.len());
    let (a, rest) = if let Some(at) = after("allocating <= available failed,") {
        parse_number(&text[at..])?
    } else {
        parse_number(&text[after("received allocating:")?..])?
    };
    let rest = rest.trim_start().strip_prefix('>')?.trim_start();
    let rest = rest.strip_prefix("available:").unwrap_or(rest);
    let (b, _) = parse_number(rest)?;
    Some((a, b))
}

/// Extracts every figure the PyTorch allocator messages state (both formats) and the other runtimes'.
fn numbers(text: &str, lower: &str, source: Source) -> Numbers {
    let mut n = Numbers {
        tried_gib: size_after(text, lower, "tried to allocate")
            .or_else(|| bfc_failure_size(text, lower))
            .or_else(|| bytes_after(text, lower, "pinned host memory of size:"))
            .or_else(|| size_after(text, lower, "out of memory while trying to allocate"))
            .or_else(|| size_after(text, lower, "failed to allocate request for"))
            .or_else(|| size_after(text, lower, "out of memory allocating"))
            .or_else(|| size_after(text, lower, "_alloc_buffer: allocating"))
            .or_else(|| size_after(text, lower, "failed to alloc "))
            .or_else(|| bytes_after(text, lower, "buffer of size "))
            .or_else(|| size_after(text, lower, "[metal::malloc] attempting to allocate"))
            .or_else(|| size_after(text, lower, "unable to mmap"))
            .or_else(|| size_after(text, lower, "unable to allocate"))
            .or_else(|| size_after_colon(text, lower, "requested"))
            .or_else(|| size_after(text, lower, "model requires more system memory ("))
            .or_else(|| bytes_after(text, lower, "attempting to allocate "))
            .or_else(|| bytes_after(text, lower, "requested buffer of size "))
            .or_else(|| size_after(text, lower, "cannot allocate "))
            .or_else(|| metal_buffer_size(lower))
            // TensorFlow's stream executor: "failed to allocate 7.35G (7889485824 bytes) from device".
            .or_else(|| size_after(text, lower, "failed to allocate "))
            // ggml-vulkan: "Device memory allocation of size 118497280 failed."
            .or_else(|| bytes_after(text, lower, "device memory allocation of size "))
            // XLA:TPU: "Attempting to reserve 6.48G at the bottom of memory."
            .or_else(|| size_after(text, lower, "attempting to reserve "))
            // TensorRT: "Requested amount of GPU memory (4294967296 bytes) could not be allocated."
            .or_else(|| size_after(text, lower, "requested amount of gpu memory ("))
            .or_else(|| size_after(text, lower, "requested amount of memory ("))
            // HeavyDB: "ALLOCATION failed to find 2452160512B throwing out of memory GPU_MGR:0".
            .or_else(|| size_after(text, lower, "allocation failed to find "))
            // PyTorch's message as a browser or IDE translates it into Chinese: "尝试分配 13.28 GiB".
            .or_else(|| size_after(text, lower, "尝试分配")),
        // ≥ 2.1: "GPU 0 has a total capacity of 23.65 GiB of which 1.66 GiB is free." (older builds: "capacty").
        total_gib: size_after(text, lower, "total capacity of")
            // PyTorch's older form, read at its last occurrence (a user's own "8 GB total capacity" may come
            // first).
            .or_else(|| {
                lower
                    .rfind("gib total capacity")
                    .and_then(|i| size_ending_at(text, i + 3))
            })
            .or_else(|| size_after(text, lower, "total capacty of"))
            // The same clause with a word cut by a fixed-width wrap ("has a to\ntal capacity of").
            .or_else(|| size_after_unwrapped(text, lower, "totalcapacityof"))
            .or_else(|| size_before(text, lower, "total capacity"))
            .or_else(|| size_after_colon(text, lower, "device limit"))
            .or_else(|| xla_space_total(text, lower))
            .or_else(|| size_after(text, lower, "total_gpu_memory ("))
            // vLLM 0.6: "Memory profiling results: total_gpu_memory=23.58GiB …".
            .or_else(|| size_after(text, lower, "total_gpu_memory="))
            .or_else(|| free_over_total(text, lower).map(|(_, t)| t))
            // Translated: "GPU 0 总容量为 23.65 GiB，其中 4.29 GiB 是空闲的"; "GPU 0 的总内存容量为 23.68 GiB".
            .or_else(|| size_after(text, lower, "总容量为"))
            .or_else(|| size_after(text, lower, "总内存容量为")),
        free_gib: size_after(text, lower, "of which")
            // Translated: "其中空闲内存为 34.88 MiB".
            .or_else(|| size_after(text, lower, "空闲内存为"))
            .or_else(|| size_before(text, lower, " free;"))
            .or_else(|| size_after_colon(text, lower, "free (according to cuda)"))
            .or_else(|| size_after(text, lower, "available kv cache memory ("))
            .or_else(|| size_after(text, lower, "than is available ("))
            .or_else(|| free_over_total(text, lower).map(|(f, _)| f))
            .or_else(|| size_after(text, lower, "available memory is only"))
            // XLA/PJRT: "Attempting to allocate 15.65G. That was not possible. There are 11.08G free."
            .or_else(|| size_after(text, lower, "that was not possible. there are"))
            .or_else(|| {
                lower
                    .contains("总容量为")
                    .then(|| size_after(text, lower, "其中"))
                    .flatten()
            })
            // PyTorch ≥ 2.1's clause with "of which" garbled by a wrap ("of whi ich 43.61 GiB is free"),
            // read at its own "is free" only beside its "total capacity of".
            .or_else(|| {
                lower
                    .contains("total capacity of")
                    .then(|| size_before(text, lower, " is free"))
                    .flatten()
            }),
        allocated_gib: size_before(text, lower, "memory has been allocated")
            .or_else(|| size_after(text, lower, "of the allocated memory"))
            .or_else(|| size_before(text, lower, "already allocated"))
            .or_else(|| size_after(text, lower, "mps allocated:"))
            .or_else(|| size_after_colon(text, lower, "currently allocated"))
            // Translated: "18.82 GiB 由 PyTorch 分配".
            .or_else(|| size_before(text, lower, "由 pytorch 分配")),
        reserved_gib: size_before(text, lower, "reserved in total by pytorch")
            // The same clause with a word cut by a fixed-width wrap ("reserved i\nn total by PyTorch").
            .or_else(|| size_before_unwrapped(text, lower, "reservedintotalbypytorch")),
        // "…, and X is reserved by PyTorch but unallocated" (vLLM builds add ", with Y allocated in private
        // pools (e.g., CUDA Graphs)" before it).
        reserved_unallocated_gib: size_before(
            text,
            lower,
            "is reserved by pytorch but unallocated",
        )
        // Translated: "73.26 MiB 由 PyTorch 保留但未分配".
        .or_else(|| size_before(text, lower, "由 pytorch 保留但未分配")),
        process_in_use_gib: size_after(text, lower, "this process has").or_else(|| {
            lower.find("process ").and_then(|i| {
                let rest = &lower[i..];
                rest.find(" has ")
                    .filter(|j| *j < 24)
                    .and_then(|j| parse_size(&text[i + j + 5..]))
            })
        }),
    };
    match source {
        // Paddle prints sizes with 1024-based units under "MB"/"GB" (its `HumanReadableSize`).
        Source::Paddle if paddle_enforce_pair(text, lower).is_some() => {
            if let Some((allocating, available)) = paddle_enforce_pair(text, lower) {
                n.tried_gib = Some(allocating / GIB);
                n.free_gib = Some(available / GIB);
            }
        }
        Source::Paddle => {
            let bin = |p: &str, before: bool| {
                if before {
                    let end = lower.find(p)?;
                    let head = text[..end].trim_end();
                    let start = head.rfind(' ').map_or(0, |i| i + 1);
                    parse_size_as(&text[start..end], true)
                } else {
                    let at = lower.find(p)? + p.len();
                    parse_size_as(&text[at..], true)
                }
            };
            n.tried_gib = bin("cannot allocate ", false).or(n.tried_gib);
            n.allocated_gib = bin(" memory has been allocated", true).or(n.allocated_gib);
            n.free_gib = bin("available memory is only", false).or(n.free_gib);
        }
        Source::PytorchMps => {
            let mps = |p: &str| {
                let at = lower.find(p)? + p.len();
                parse_size_as(&text[at..], true)
            };
            n.tried_gib = mps("tried to allocate");
            n.allocated_gib = mps("mps allocated:");
            n.total_gib = mps("max allowed:");
            n.process_in_use_gib = mps("other allocations:");
        }
        Source::CpuAllocator if n.tried_gib.is_none() => {
            n.tried_gib = size_after(text, lower, "you tried to allocate");
        }
        Source::Vllm => {
            if let Some(t) = vllm_kv_needed(text, lower).or_else(|| vllm_desired(text, lower)) {
                n.tried_gib = Some(t);
            }
            if let Some((free, total)) = vllm_free_total(text, lower) {
                n.free_gib = Some(free);
                n.total_gib = Some(total);
            }
        }
        Source::Metal | Source::LlamaCpp => {
            if let Some((allocated, limit)) = metal_working_set(text, lower) {
                n.allocated_gib = Some(allocated);
                n.total_gib = Some(limit);
            }
        }
        _ => {}
    }
    n
}

/// The line containing byte offset `at`, trimmed and capped.
fn line_at(text: &str, at: usize) -> String {
    let at = at.min(text.len());
    let line = line_around(text, at, 2000);
    line.trim().chars().take(300).collect()
}

/// Words that say the process was loading weights when it died.
const LOADING: &[&str] = &[
    "loading checkpoint shards",
    "loading weights",
    "load_state_dict",
    "from_pretrained",
    "loading model",
    "model_loader",
];

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
    let scan = Scan::new(text);
    let hit = RULES
        .iter()
        .find_map(|rule| rule.find(&scan).map(|at| (at, rule)));
    let Some((at, rule)) = hit else {
        return Diagnosis {
            kind: Kind::Unrecognised,
            source: Source::Unknown,
            // Figures stated outside an error (a vLLM profiling summary) are still worth showing.
            numbers: numbers(&scan.flat, &scan.low, Source::Unknown),
            hints: vec![Hint::PasteMore],
            evidence: String::new(),
        };
    };
    let (kind, source) = (rule.kind, rule.source);
    let numbers = numbers(&scan.flat, &scan.low, source);
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
                Source::Sglang => Hint::SglangMemFraction,
                Source::Tgi => Hint::TgiPrefill,
                Source::LlamaCpp => Hint::LlamaCppLayers,
                Source::PytorchMps => Hint::MpsWatermark,
                Source::Metal | Source::Mlx => Hint::MetalMemory,
                Source::Xla => Hint::XlaMemory,
                _ => Hint::ReduceMemory,
            });
        }
        Kind::Host => {
            match source {
                Source::SharedMemory => hints.push(Hint::SharedMemory),
                Source::DataLoaderWorker if scan.has("exited unexpectedly") => {
                    hints.push(Hint::SharedMemory)
                }
                Source::Ollama => hints.push(Hint::OllamaMemory),
                Source::OomKiller | Source::Ray | Source::CpuAllocator
                    if LOADING.iter().any(|w| scan.has(w)) =>
                {
                    hints.push(Hint::LoadingRam)
                }
                _ => {}
            }
            if source != Source::SharedMemory {
                hints.push(Hint::HostMemory);
            }
        }
        Kind::Disk => hints.push(Hint::DiskSpace),
        Kind::NotMemory => hints.push(rule.hint.unwrap_or(match source {
            Source::DeviceAssert => Hint::IndexOutOfRange,
            Source::IllegalAccess => Hint::KernelFault,
            Source::CudaError | Source::Cublas | Source::Cudnn => Hint::CudaFault,
            Source::DriverTooOld => Hint::UpdateDriver,
            Source::Nccl => Hint::Communication,
            Source::WrongDevice => Hint::DeviceMismatch,
            Source::NoKernelImage => Hint::WrongBuild,
            Source::Tokenizer => Hint::TokenLength,
            _ => Hint::Redownload,
        })),
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

    #[test]
    fn formats_of_the_seventh_batch() {
        let cases = [
            ("(GPU 0; 7.78 GiB total capacity; 5.87 GiB already allocated; 13.69 MiB free; 6.08 GiB reserved in total by PyTorch)", Kind::Gpu),
            ("RuntimeError: Workspace can't be allocated, no enough memory.", Kind::Gpu),
            ("vulkan_buffer.cc:61: InternalError: Check failed: (__e == VK_SUCCESS) is false: Vulkan Error, code=-2: VK_ERROR_OUT_OF_DEVICE_MEMORY", Kind::Gpu),
            ("Vulkan Error, code=-1: VK_ERROR_OUT_OF_HOST_MEMORY", Kind::Host),
            ("pyarrow.lib.ArrowMemoryError: realloc of size 2172846080 failed", Kind::Host),
            ("ERROR: Unable to allocate 3.60 GiB for an array with shape (1, 1200623, 201) and data type complex128", Kind::Host),
            ("Allocator: not enough memory: you tried to allocate 35389440 bytes.", Kind::Host),
            ("tcmalloc: large alloc 2400002048 bytes == 0x99a00000 @ 0x7fb5f9f8c1e7\nWARNING:root:kernel 4222e7b2-aca5 restarted", Kind::Host),
            ("hip_code_object.cpp:92: guarantee(false && \"hipErrorNoBinaryForGpu: Coudn't find binary for current devices!\")", Kind::NotMemory),
            ("openai.error.InvalidRequestError: This model's maximum context length is 4097 tokens. However, you requested 4203 tokens", Kind::NotMemory),
            ("RuntimeError: Too many open files. Communication with the workers is no longer possible.", Kind::NotMemory),
            ("server1:6601:6625 [0] include/socket.h:385 NCCL WARN Net : Connection closed by remote peer\nNCCL failure common.cu:921 'unhandled system error'", Kind::NotMemory),
            ("RuntimeError: Tensor on device cuda:0 is not on the expected device meta!", Kind::NotMemory),
            ("Error: remove /Users/a/.ollama/models/blobs/sha256-ef31-partial-0: no such file or directory", Kind::NotMemory),
        ];
        for (text, kind) in cases {
            assert_eq!(diagnose(text, None).kind, kind, "{text}");
        }
        // A memory report beside a missing file is still the memory report.
        let d = diagnose("FileNotFoundError: cache.json\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", None);
        assert_eq!(d.kind, Kind::Gpu);
        // The statistics alone carry their figures.
        let d = diagnose(cases[0].0, None);
        near(d.numbers.total_gib, 7.78);
        near(d.numbers.reserved_gib, 6.08);
        // A tcmalloc report alone is a warning, not a crash.
        assert_ne!(
            diagnose("tcmalloc: large alloc 2400002048 bytes == 0x99a00000", None).kind,
            Kind::Host
        );
    }

    #[test]
    fn metal_mlx_systemd_nccl_and_segfault_formats() {
        // ggml-metal: "buffer '%s' size %zu is larger than buffer maximum of %zu".
        let d = diagnose("ggml_metal_add_buffer: buffer 'data' size 21474836480 is larger than buffer maximum of 17179869184", None);
        assert_eq!(d.kind, Kind::Gpu);
        near(d.numbers.tried_gib, 20.0);
        // MLX rethrown without its "[metal::malloc]" prefix.
        let d = diagnose("std::runtime_error: Attempting to allocate 10737418240 bytes which is greater than the maximum allowed buffer size of 8589934592 bytes.", None);
        assert_eq!(d.kind, Kind::Gpu);
        near(d.numbers.tried_gib, 10.0);
        // systemd unit result.
        assert_eq!(
            diagnose("trainer.service: Failed with result 'oom-kill'.", None).kind,
            Kind::Host
        );
        // NCCL shm attach ENOENT is not a full /dev/shm.
        let d = diagnose("misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory segment /dev/shm/nccl-abc (size 1024), error: No such file or directory (2)", None);
        assert_eq!(d.kind, Kind::NotMemory);
        assert_eq!(
            diagnose("Segmentation fault (core dumped)", None).kind,
            Kind::NotMemory
        );
        // An allocation failure before the crash still wins.
        let d = diagnose("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: cudaMalloc failed: out of memory\nSegmentation fault (core dumped)", None);
        assert_eq!(d.kind, Kind::Gpu);
    }

    #[test]
    fn tensorrt_hami_heavydb_tpu_sigill_and_mlx_count_formats() {
        let d = diagnose("[TRT] [W] Requested amount of GPU memory (4294967296 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.", None);
        assert_eq!((d.kind, d.source), (Kind::Gpu, Source::TensorRt));
        near(d.numbers.tried_gib, 4.0);
        assert_eq!(diagnose("[HAMI-core ERROR (pid:7 thread=1 allocator.c:52)]: Device 0 OOM 25769803776 / 17179869184", None).kind, Kind::Gpu);
        assert_eq!(diagnose("[HAMI-core ERROR (pid:7 thread=1 allocator.c:126)]: cuMemoryAllocate failed res=217", None).kind, Kind::Unrecognised);
        assert_eq!(
            diagnose(
                "ALLOCATION failed to find 1024B throwing out of memory CPU_MGR:0",
                None
            )
            .kind,
            Kind::Host
        );
        let d = diagnose("RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid 12.", None);
        assert_eq!(d.hints, vec![Hint::DeviceBusy]);
        assert_eq!(
            diagnose("Illegal instruction (core dumped)", None).hints,
            vec![Hint::CpuInstructions]
        );
        assert_eq!(
            diagnose(
                "RuntimeError: [metal::malloc] Resource limit (499000) exceeded.",
                None
            )
            .kind,
            Kind::NotMemory
        );
        // A pinned-memory failure is not a tiny-cuda-nn device allocation.
        assert_eq!(
            diagnose(
                "gpu_memory.h:1 cudaMallocHost(&rawptr, n_bytes) failed: out of memory",
                None
            )
            .kind,
            Kind::Unrecognised
        );
        assert_eq!(diagnose("Killed: 9", None).kind, Kind::Host);
    }

    #[test]
    fn paddle_onnxruntime_nvml_hsa_and_ggml_formats() {
        let d = diagnose("ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 512.000000MB memory on GPU 0, 10.000000GB memory has been allocated and available memory is only 256.000000MB.", None);
        assert_eq!(d.kind, Kind::Gpu);
        near(d.numbers.tried_gib, 0.5);
        near(d.numbers.allocated_gib, 10.0);
        near(d.numbers.free_gib, 0.25);
        let ort = "onnxruntime::BFCArena::AllocateRawInternal Failed to allocate memory for requested buffer of size 1073741824";
        assert_eq!(
            diagnose(&format!("CUDAExecutionProvider {ort}"), None).kind,
            Kind::Gpu
        );
        assert_eq!(
            diagnose(&format!("CPUExecutionProvider {ort}"), None).kind,
            Kind::Host
        );
        assert_eq!(
            diagnose(ort, None).kind,
            Kind::Unrecognised,
            "no device named"
        );
        let absurd =
            "CUDA Failed to allocate memory for requested buffer of size 4611686018427387904";
        assert_eq!(diagnose(absurd, None).kind, Kind::NotMemory);
        assert_eq!(
            diagnose(
                "Failed to initialize NVML: Driver/library version mismatch",
                None
            )
            .kind,
            Kind::NotMemory
        );
        assert_eq!(diagnose("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x2. Reason: Page not present", None).kind, Kind::NotMemory);
        assert_eq!(
            diagnose(
                "llama runner process has terminated: GGML_ASSERT(x) failed",
                None
            )
            .kind,
            Kind::NotMemory
        );
    }

    #[test]
    fn vllm_startup_figures() {
        let d = diagnose(
            "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB",
            None,
        );
        near(d.numbers.total_gib, 23.58);
        let d = diagnose("ValueError: Free memory on device (10.5/40.0 GiB) on startup is less than desired GPU memory utilization (0.9, 36.0 GiB).", None);
        near(d.numbers.free_gib, 10.5);
        near(d.numbers.total_gib, 40.0);
    }

    #[test]
    fn install_dtype_checkpoint_and_container_formats() {
        // Install problems, unsupported types and ops, mismatched files: not memory, each with its hint.
        for (text, hint) in [
            ("AssertionError: Torch not compiled with CUDA enabled", Hint::MissingLibrary),
            ("RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx", Hint::MissingLibrary),
            ("ImportError: libcudart.so.11.0: cannot open shared object file: No such file or directory", Hint::MissingLibrary),
            ("Could not load library cudnn_ops_infer64_8.dll. Error code 126", Hint::MissingLibrary),
            ("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has compute capability 7.5.", Hint::UnsupportedOnDevice),
            ("RuntimeError: Current CUDA Device does not support bfloat16. Please switch dtype to float16.", Hint::UnsupportedOnDevice),
            ("NotImplementedError: The operator 'aten::upsample_bicubic2d.out' is not currently implemented for the MPS device.", Hint::UnsupportedOnDevice),
            ("RuntimeError: The device (Intel(R) Arc(TM) Graphics) doesn't support querying the available free memory.", Hint::UnsupportedOnDevice),
            ("RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: \"fc.weight\".", Hint::ModelMismatch),
            ("_pickle.UnpicklingError: Weights only load failed. WeightsUnpickler error: Unsupported global: GLOBAL numpy.core.multiarray.scalar", Hint::ModelMismatch),
            ("ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not recognize this architecture.", Hint::ModelMismatch),
            ("onnx runtime error 2: not enough space: expected 602112, got 196608", Hint::ModelMismatch),
        ] {
            let d = diagnose(text, None);
            assert_eq!((d.kind, d.hints.as_slice()), (Kind::NotMemory, &[hint][..]), "{text}");
        }
        // A real OOM beside a missing-library warning still wins.
        let d = diagnose("WARNING Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared object file')\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", None);
        assert_eq!(d.kind, Kind::Gpu);
        // CTranslate2's CPU allocators, ggml's old CPU-buffer assert, Metal's NSError code 8.
        assert_eq!(
            diagnose("RuntimeError: mkl_malloc: failed to allocate memory", None).kind,
            Kind::Host
        );
        assert_eq!(
            diagnose(
                "GGML_ASSERT: ggml-backend.c:402: data != NULL && \"failed to allocate buffer\"",
                None
            )
            .kind,
            Kind::Host
        );
        assert_eq!(diagnose("Error Domain=MTLCommandBufferErrorDomain Code=8 \"Insufficient Memory (IOAF code 8)\"", None).kind, Kind::Gpu);
        // ggml's abort-by-assert of `false` says nothing by itself; a real condition is a bug, not memory.
        assert_eq!(
            diagnose("GGML_ASSERT(ggml-metal.m:1645): false", None).kind,
            Kind::Unrecognised
        );
        assert_eq!(
            diagnose("GGML_ASSERT: ggml.c:123: false", None).kind,
            Kind::Unrecognised
        );
        assert_eq!(
            diagnose("ggml.c:1: GGML_ASSERT(n_dims <= 4) failed", None).kind,
            Kind::NotMemory
        );
        // Paddle's fraction check, in bytes.
        let d = diagnose("paddle.fluid.core.EnforceNotMet: enforce allocating <= available failed, 2147483648 > 1073741824", None);
        assert_eq!(d.kind, Kind::Gpu);
        near(d.numbers.tried_gib, 2.0);
        near(d.numbers.free_gib, 1.0);
        let d = diagnose("Expected allocating <= available, but received allocating:3221225472 > available:1073741824.", None);
        near(d.numbers.tried_gib, 3.0);
        // The container runtime's own verdict decides a 137.
        assert_eq!(
            diagnose("Reason: OOMKilled\nExit Code: 137", None).kind,
            Kind::Host
        );
        assert_eq!(diagnose("Job failed: exit code 137", None).kind, Kind::Host);
        for text in [
            "Last State: Terminated\n Reason: Error\n Exit Code: 137",
            "[pod-n0-0] terminated with exit code (137). Reason [Error]. Message:",
            "State:{ExitCode:137, OOMKilled:false}",
            "\"ExitCode\": 137, \"OOMKilled\": false",
        ] {
            assert_eq!(diagnose(text, None).kind, Kind::Unrecognised, "{text}");
        }
        assert_eq!(
            diagnose("\"OOMKilled\": true, \"ExitCode\": 137", None).kind,
            Kind::Host
        );
        // A shell prompt before the kill report.
        assert_eq!(diagnose("$ ./run\n$  Killed", None).kind, Kind::Host);
    }

    #[test]
    fn wrapped_capacity_and_bfc_warning_figures() {
        // A fixed-width wrap cutting "total" in two.
        let d = diagnose("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU  has a to\ntal capacity of 23.67 GiB of which 1.59 GiB is free.", None);
        near(d.numbers.total_gib, 23.67);
        // A wrap that repeats letters inside "of which": the free figure is still read at "is free".
        let d = diagnose("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 84.20 GiB. GPU 0 has a total capacity of 47.54 GiB of whi ich 43.61 GiB is free.", None);
        near(d.numbers.free_gib, 43.61);
        // The BFC allocator's "not a failure" warning is not the failed request.
        let d = diagnose("XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1073741824 bytes.\nW bfc_allocator.cc:310] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.37GiB with freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there could be performance gains if more memory were available.", None);
        assert_eq!(d.kind, Kind::Gpu);
        near(d.numbers.tried_gib, 1.0);
    }

    #[track_caller]
    fn near(got: Option<f64>, want: f64) {
        let g = got.unwrap_or_else(|| panic!("missing, wanted {want}"));
        assert!((g - want).abs() < 1e-3, "got {g}, wanted {want}");
    }

    #[track_caller]
    fn is(text: &str, kind: Kind, source: Source) -> Diagnosis {
        let d = diagnose(text, None);
        assert_eq!((d.kind, d.source), (kind, source), "{text}");
        d
    }

    /// One message a runtime prints in its own source, per rule written from it (the format with plausible
    /// figures filled in), and the kind it says.
    #[test]
    fn runtime_formats_from_their_source() {
        use Kind::*;
        let cases: &[(&str, Kind)] = &[
            ("Executor creation failed due to insufficient GPU memory.", Gpu),
            ("radv/amdgpu: Failed to allocate a buffer:\nradv/amdgpu:    size      : 4269813760 bytes", Gpu),
            ("NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]", Gpu),
            ("AssertionError: Not enough memory for KV cache, try reducing --num-pages", Gpu),
            ("MIOpen Error: handlehip.cpp:70: Memory not available to allocate buffer: 655360000", Gpu),
            ("Out of Memory: Not enough space to allocate 71999488 B DRAM buffer across 12 banks", Gpu),
            ("RuntimeError: Decode out of memory. Try to lower your batch size.\nTry to allocate 4 tokens.\nAvailable tokens: 3", Gpu),
            ("RuntimeError: Decode out of memory. Try to lower your batch size.\nTry to allocate 148 tokens.\nAvaliable tokens: 2048", NotMemory),
            ("RuntimeError: Not enough GPU memory for hybrid state cache", Gpu),
            ("Insufficient memory to allocate KV-caches. Required: 4096, Available: 1024", Gpu),
            ("AssertionError: Not enough memory in buffer. Allocation failed", Gpu),
            ("Error: Num GPU blocks is 0. This means there is not enough memory.", Gpu),
            ("ValueError: Insufficient VRAM for model and cache", Gpu),
            ("RuntimeError: No enough gpu memory for kv cache.", Gpu),
            ("MemoryError: No enough free memory blocks.", Gpu),
            ("[TM][WARNING] dp0 ID 17: cache out of memory, no request can be admitted; failing head-of-line request", Gpu),
            ("Can't allocate new blocks. No free blocks left.", Gpu),
            ("Error: insufficient memory - required allocations: {InputWeights:1.2 GiB}", Gpu),
            ("dpct_malloc: out of memory for virtual memory pool", Gpu),
            ("include/alloc.h:493 NCCL WARN Failed to CUDA calloc 4194304 bytes", Gpu),
            ("RuntimeError: [malloc] Unable to allocate 8589934592 bytes.", Gpu),
            ("RuntimeError: Workspace can't be allocated, not enough memory", Gpu),
            ("RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 34.82G, SparseCore Hbm usage 174.10G, exceeding available bytes: 95.74G", Gpu),
            ("RESOURCE_EXHAUSTED: Allocation (size=21474836480) would exceed memory (size=17179869184) :: space=hbm", Gpu),
            ("XLA:TPU compile permanent error. Ran out of memory on HBM, the total memory required for HLO temporaries (64.00G) exceeds available HBM (31.25G).", Gpu),
            ("ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfHostMemory", Host),
            ("ggml_malloc: failed to allocate 2048.00 MB", Host),
            ("RuntimeError: Malloc pin memory failed, host out of memory, Rried to allocate size: 4294967296", Host),
            ("ValueError: Not enough host memory available. Requesting 64.00 GB but only have 31.20 GB free.", Host),
            ("ResourceExhaustedError: Fail to alloc memory of 17179869184 size, error code is 12.", Host),
            ("10 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons", Host),
            ("systemd-oomd[581]: Killed /user.slice/app.scope due to memory pressure for /user.slice being 86.80% > 50.00%", Host),
            ("level=info msg=\"TaskOOM event container_id:\\\"4c9f\\\"\"", Host),
            ("memorystatus: killing_top_process pid 8123 [python3.11] (vm-pageshortage 1 4512s rf:high) 48211456KB", Host),
            ("Your system has run out of application memory.", Host),
            ("Error code: Wsl/Service/CreateInstance/CreateVm/HCS/E_OUTOFMEMORY", Host),
            ("ray.exceptions.ObjectStoreFullError: Failed to put object ff01 in object store because it is full.", Host),
            ("ray.exceptions.OutOfDiskError: Local disk is full", Disk),
            ("The node was low on resource: ephemeral-storage. Container was using 1498072868Ki", Disk),
            ("ptxas /tmp/x.ptx, line 10531; error   : Instruction 'tensormap.replace' not supported on .target 'sm_120'", NotMemory),
            ("error: Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)", NotMemory),
            ("887A0005 The GPU device instance has been suspended. Use GetDeviceRemovedReason", NotMemory),
            ("RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at \"CUDACachingAllocator.cpp\":830", NotMemory),
            ("llama_model_load: error loading model: tensor 'blk.47.ffn_down.weight' data is not within the file bounds", NotMemory),
            ("Loaded runtime CuDNN library: 9.5.1 but source was compiled with: 9.8.0.  CuDNN library needs to have matching major version", NotMemory),
            ("ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88.", Gpu),
            ("训练到第九个 epoch 时出现显存不足", Gpu),
            ("any attempt to allocate a tensor on XPU fails with an `OutOfMemoryError`", Gpu),
            ("I run into a Cuda OutOfMemory error when running test_inference.py", Gpu),
            ("NVRM: Check failed: Out of memory [NV_ERR_NO_MEMORY]\nVLLM::Worker_TP invoked oom-killer: gfp_mask=0x102cc2", Host),
            ("LLVM ERROR: out of memory", Host),
            ("Exception: jetson.utils -- cudaAllocMapped() failed to allocate memory", Host),
            ("kernel: cma: cma_alloc: linux,cma: alloc failed, req-size: 62864 pages, ret: -12", Host),
            ("dmesg showed anon-rss climbing to 34.9 GB on one worker", Host),
            ("the process was killed under vm-compressor-space-shortage", Host),
            ("the container exit with code 137", Host),
            ("  0%|          | 0/2 [00:00<?, ?it/s]zsh: killed     python txt2image.py", Host),
            ("DiskQuotaError: [Errno 122] Disk quota exceeded", Disk),
            ("ClientError: Artifact upload failed:Insufficient disk space", Disk),
            ("App quit without notice if disk full: Uncaught Exception: Error: ENOSPC: no space left on device, write", Disk),
            ("error: (-4:Insufficient memory) Failed to allocate 117094104464640 bytes in function 'OutOfMemoryError'", NotMemory),
            ("NVRM: The NVIDIA GPU 0000:b3:00.0 has fallen off the bus and is not responding to commands.", NotMemory),
            ("Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU", NotMemory),
            ("\"completeMemory() prepare count underflow\" @IOGPUMemory.cpp:550", NotMemory),
            ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: the function failed to launch on the GPU", NotMemory),
            ("RuntimeError: Storage size calculation overflowed with sizes=[-2139761793]", NotMemory),
            ("RuntimeError: [TM][ERROR]  Assertion fail: /lmdeploy/src/turbomind/triton_backend/llama/LlamaTritonModel.cc:384", NotMemory),
            ("ImportError: flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", NotMemory),
            ("panic: insufficient memory - required allocations: {InputWeights:1158266880A GPUs:[{ID:0}]}", Gpu),
            ("panic: insufficient memory - required allocations: {InputWeights:1158266880A CPU:{Name:CPU} GPUs:[]}", Host),
            ("AssertionError: No space left for only one request, self.token_to_kv_pool_allocator.available_size()=0", Gpu),
            ("a CUDA out-of-memory error occurred while running propagate_in_video", Gpu),
            ("RuntimeError: DataLoader worker (pid 2256) is killed by signal: Aborted.", NotMemory),
            ("[launch.py:319:sigkill_handler] exits with return code = -11", NotMemory),
            ("RuntimeError: Placeholder storage has not been allocated on MPS device!", NotMemory),
            ("AssertionError: Committed KV cache already freed (self.kv_committed_len=1)", NotMemory),
            ("TVMError: CUDALaunch Error: CUDA_ERROR_ILLEGAL_INSTRUCTION", NotMemory),
            ("layer 0 is assigned to device CPU but fused Gated Delta Net (chunked) is assigned to device CUDA0 (usually due to missing support)", NotMemory),
            ("RuntimeError: [enforce fail at inline_container.cc:319] . PytorchStreamWriter failed opening archive.", NotMemory),
            ("*Error message received from Codalab (if applicable)*:failure_message\tRequested more disk (5.2g) than user disk quota left (5.2g)", Disk),
            ("[CLI]: wandb: ERROR Abnormal program exit & No Space left on the device", Disk),
            ("src/io/local_filesys.cc:39: Check failed: std::fwrite(ptr, 1, size, fp_) == size FileStream.Write incomplete", Disk),
            ("加载模型的时候一直被killed", Host),
            ("with the highest resolutions the program tends to fill all /run/shm.\nthen it stops with: no space left on device", Host),
            ("include/socket.h 398 NCCL WARN Call to recv failed : Connection reset by peer.", NotMemory),
            ("Evicted   Pod The node had condition: [DiskPressure].", Disk),
            ("Ensure there is enough space in /tmp and that the installation package is not corrupt", Disk),
            ("Hi, some images work, but with others I get a \"Killed\" message and nothing is outputted.", Host),
            ("tcmalloc: large alloc 140113840283648 bytes == (nil) @ 0x7f6e\nterminate called after throwing an instance of 'std::bad_alloc'", NotMemory),
            ("当进行多图推理时，会爆显存（单卡，32G显存）", Gpu),
            ("400M大小7小时音频文件，开始后中途飙内存，直到爆内存", Host),
            ("Warning   Evicted   pod/service-1   Pod ephemeral local storage usage exceeds the total limit of containers 1073741824.", Disk),
            ("RuntimeError: NPU function error: AclrtSynchronizeStreamWithTimeout, error code is 507035\n[Error]: The vector core execution is abnormal.", NotMemory),
            ("RuntimeError: Triton Error [CUDA]: invalid argument", NotMemory),
            ("pyarrow.lib.ArrowInvalid: Value 2147486084 too large to fit in C integer type", NotMemory),
            ("Shard process was signaled to shutdown with signal 11", NotMemory),
            ("[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 \"\" when trying to load onnxruntime_providers_cuda.dll", NotMemory),
            ("I've found even in Kaggle it runs out of CUDA memory when it gets to fine-tuning.", Gpu),
            ("Elasticsearch container docker exited 137", Host),
            ("tokenizer memory allocation of 1179664 bytes failed", Host),
            ("It turns out that the RAM (64 GBs) is full and so is the SWAP (6 GB) for some reason.", Host),
            ("it failed with error that it's out of memory with the ivrit.ai model though the card has 4GB vram.", Gpu),
            ("RuntimeError: size mismatch, got input (16), mat (16x4096), vec (307200)", NotMemory),
            ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='cdn-lfs.huggingface.co', port=443): Read timed out.", NotMemory),
            ("RuntimeError: torch.cat(): expected a non-empty list of Tensors", NotMemory),
        ];
        for (text, kind) in cases {
            assert_eq!(diagnose(text, None).kind, *kind, "{text}");
        }
    }

    /// A person's own statement, where no runtime's message was pasted; questions, conditions and negations
    /// are not statements.
    #[test]
    fn prose_statements_only() {
        use Kind::*;
        for (text, kind) in [
            ("When loading the dataset, my process is killed due to insufficient memory.", Host),
            ("I tried training on an RTX5090 first and got OOM.", Unrecognised),
            ("I tried training on the GPU first and got OOM.", Gpu),
            ("After a few hours the wandb folder grows until the disk filling up crashes the run.", Disk),
            ("Is it because the GPU ran out of memory?", Unrecognised),
            ("If you hit OOM on the GPU, lower the batch size.", Unrecognised),
            ("It did not run out of memory on the GPU.", Unrecognised),
            (" !! Out of memory on cuda:0, trying CPU fallback", Unrecognised),
        ] {
            assert_eq!(diagnose(text, None).kind, kind, "{text}");
        }
    }

    #[test]
    fn pytorch_allocator_messages() {
        // CUDACachingAllocator.cpp with the leading "CUDA out of memory." cut off (old and new forms).
        let d = is(
            "Tried to allocate 64.00 MiB (GPU 1; 10.00 GiB total capacity; 9.10 GiB already allocated; 12.00 MiB free; 9.30 GiB reserved in total by PyTorch)",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        near(d.numbers.total_gib, 10.0);
        is(
            "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 7.00 GiB of which 1.00 GiB is free.",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        // "…, with X allocated in private pools (e.g., CUDA Graphs), and Y is reserved by PyTorch but unallocated."
        let d = is(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 40.00 GiB of which 500.00 MiB is free. Of the allocated memory 30.00 GiB is allocated by PyTorch, with 64.00 MiB allocated in private pools (e.g., CUDA Graphs), and 2.00 GiB is reserved by PyTorch but unallocated.",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        near(d.numbers.reserved_unallocated_gib, 2.0);
        // CUDAMallocAsyncAllocator.cpp / memory fraction, lines aligned with spaces.
        let d = is(
            "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated     : 5.00 GiB\nRequested               : 1.50 GiB\nDevice limit            : 6.00 GiB\nFree (according to CUDA): 20.00 MiB",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        near(d.numbers.tried_gib, 1.5);
        near(d.numbers.allocated_gib, 5.0);
        near(d.numbers.total_gib, 6.0);
        near(d.numbers.free_gib, 20.0 / 1024.0);
        is(
            "torch.OutOfMemoryError: Allocation on device",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        // MPSAllocator.h format_size divides by 1024 but prints "MB"/"GB".
        let d = is(
            "MPS backend out of memory (MPS allocated: 3.00 GB, other allocations: 512.00 MB, max allowed: 4.00 GB). Tried to allocate 256.00 MB on private pool.",
            Kind::Gpu,
            Source::PytorchMps,
        );
        near(d.numbers.tried_gib, 0.25);
        near(d.numbers.allocated_gib, 3.0);
        near(d.numbers.total_gib, 4.0);
        // A message wrapped by an e-mail client still parses.
        let d = is(
            "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0;\n8.00 GiB total capacity; 6.00 GiB already allocated; 100.00 MiB free;\n6.50 GiB reserved in total by PyTorch)",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        near(d.numbers.total_gib, 8.0);
        near(d.numbers.reserved_gib, 6.5);
    }

    #[test]
    fn cuda_runtime_and_library_allocation_failures() {
        is(
            "RuntimeError: cuda runtime error (2) : out of memory at /x/THCStorage.cu:66",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        is(
            "THCudaCheck FAIL file=/x/THCCachingAllocator.cpp line=1 error=2 : out of memory",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        is(
            "CUDA error 2 at /src/ggml-cuda.cu:100: out of memory",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        is(
            "State.hs:1 (unhandled): CUDA Exception:\nout of memory",
            Kind::Gpu,
            Source::PytorchCuda,
        );
        is(
            "cuDNN failure 2: CUDNN_STATUS_ALLOC_FAILED ; GPU=0",
            Kind::Gpu,
            Source::Cudnn,
        );
        is(
            "Error in CuDNN: CUDNN_STATUS_NOT_ENOUGH_WORKSPACE",
            Kind::Gpu,
            Source::Cudnn,
        );
        is(
            "RuntimeError: Unable to find a valid cuDNN algorithm to run convolution",
            Kind::Gpu,
            Source::Cudnn,
        );
        is(
            "RuntimeError: UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
            Kind::Gpu,
            Source::PytorchXpu,
        );
    }

    #[test]
    fn serving_engine_messages() {
        // vLLM v1 kv_cache_utils.py, with a terminal line break inside a word.
        let d = is(
            "ValueError: To serve at least one request with the models's max seq len (32768), (8.00 GiB KV cach\ne is needed, which is larger than the available KV cache memory (3.50 GiB). Try increasing `gpu_memory_utilization`",
            Kind::Gpu,
            Source::Vllm,
        );
        near(d.numbers.tried_gib, 8.0);
        near(d.numbers.free_gib, 3.5);
        assert!(d.hints.contains(&Hint::VllmKvCache));
        // vLLM v1 gpu_worker.py.
        let d = is(
            "ValueError: Free memory on device cuda:0 (10.00/24.00 GiB) on startup is less than desired GPU memory utilization (0.9, 21.60 GiB).",
            Kind::Gpu,
            Source::Vllm,
        );
        near(d.numbers.free_gib, 10.0);
        near(d.numbers.total_gib, 24.0);
        let d = is(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
            Kind::Gpu,
            Source::Sglang,
        );
        assert!(d.hints.contains(&Hint::SglangMemFraction));
        let d = is(
            "RuntimeError: Not enough memory to handle 8192 prefill tokens. You need to decrease `--max-batch-prefill-tokens`",
            Kind::Gpu,
            Source::Tgi,
        );
        assert!(d.hints.contains(&Hint::TgiPrefill));
        let d = is(
            "Error: model requires more system memory (12.5 GiB) than is available (8.0 GiB)",
            Kind::Host,
            Source::Ollama,
        );
        near(d.numbers.tried_gib, 12.5);
        near(d.numbers.free_gib, 8.0);
        assert!(d.hints.contains(&Hint::OllamaMemory));
        is(
            "Error: llama runner process has terminated: signal: killed",
            Kind::Host,
            Source::OomKiller,
        );
    }

    #[test]
    fn ggml_metal_and_mlx_messages() {
        let d = is(
            "ggml_gallocr_reserve_n: failed to allocate Vulkan0 buffer of size 2147483648",
            Kind::Gpu,
            Source::LlamaCpp,
        );
        near(d.numbers.tried_gib, 2.0);
        is(
            "ggml_gallocr_reserve_n: failed to allocate CPU buffer of size 1073741824",
            Kind::Host,
            Source::LlamaCpp,
        );
        is(
            "llama_model_load: error loading model: unable to allocate ROCm0 buffer",
            Kind::Gpu,
            Source::LlamaCpp,
        );
        is(
            "llama_model_load: error loading model: unable to allocate CUDA_Host buffer",
            Kind::Host,
            Source::LlamaCpp,
        );
        is("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 4294967296", Kind::Host, Source::LlamaCpp);
        is(
            "ggml_vulkan: Device memory allocation of size 1073741824 failed.",
            Kind::Gpu,
            Source::LlamaCpp,
        );
        let d = is(
            "ggml_metal_add_buffer: allocated 'data' buffer, size = 2048.00 MiB, ( 6144.00 / 5461.34)ggml_metal_add_buffer: warning: current allocated size is greater than the recommended max working set size\nggml_metal_get_buffer: error: buffer is nil",
            Kind::Gpu,
            Source::Metal,
        );
        near(d.numbers.allocated_gib, 6.0);
        near(d.numbers.total_gib, 5461.34 / 1024.0);
        let d = is(
            "[METAL] Command buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
            Kind::Gpu,
            Source::Metal,
        );
        assert!(d.hints.contains(&Hint::MetalMemory));
        let d = is(
            "RuntimeError: [metal::malloc] Attempting to allocate 34359738368 bytes which is greater than the maximum allowed buffer size of 28991029248 bytes.",
            Kind::Gpu,
            Source::Mlx,
        );
        near(d.numbers.tried_gib, 32.0);
    }

    #[test]
    fn xla_tpu_and_tensorflow_messages() {
        let d = is(
            "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 bytes.",
            Kind::Gpu,
            Source::Xla,
        );
        near(d.numbers.tried_gib, 2.0);
        assert!(d.hints.contains(&Hint::XlaMemory));
        let d = is(
            "RuntimeError: Resource exhausted: Out of memory while trying to allocate 8 bytes.",
            Kind::NotMemory,
            Source::Xla,
        );
        assert_eq!(d.hints, vec![Hint::BrokenAllocator]);
        let d = is(
            "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 20.00G of 15.48G hbm. Exceeded hbm capacity by 4.52G.",
            Kind::Gpu,
            Source::Xla,
        );
        near(d.numbers.total_gib, 15.48);
        is("Resource exhausted: Failed to allocate request for 1.00GiB (1073741824B) on device ordinal 0", Kind::Gpu, Source::Xla);
        let d = is(
            "W bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.00GiB with freed_by_count=0.",
            Kind::Gpu,
            Source::Tensorflow,
        );
        near(d.numbers.tried_gib, 3.0);
        is("E cuda_driver.cc:1] failed to allocate 1.00G (1073741824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory", Kind::Gpu, Source::Tensorflow);
        is(
            "ResourceExhaustedError: OOM when allocating tensor with shape[1024,1024] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu",
            Kind::Host,
            Source::Tensorflow,
        );
        let d = is(
            "W device_host_allocator.h:1] could not allocate pinned host memory of size: 2147483648",
            Kind::Host,
            Source::PinnedMemory,
        );
        near(d.numbers.tried_gib, 2.0);
        is("E cuda_driver.cc:1] failed to alloc 1073741824 bytes on host: CUDA_ERROR_OUT_OF_MEMORY: out of memory", Kind::Host, Source::PinnedMemory);
        is("Error writing (tmp) checkpoint file: /ckpt/model.tempstate1: Resource exhausted: /ckpt/model.tempstate1", Kind::Disk, Source::DiskFull);
    }

    #[test]
    fn shared_memory_is_host_memory_not_disk() {
        for text in [
            "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
            "RuntimeError: DataLoader worker (pid 42) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
            "RuntimeError: unable to write to file </torch_1_2_3>: No space left on device (28)",
            "misc/shmutils.cc:1 NCCL WARN Error: failed to extend /dev/shm/nccl-abc to 9637892 bytes, error: No space left on device (28)",
            "include/shm.h:1 NCCL WARN Call to posix_fallocate failed : No space left on device",
            "NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)",
            "OSError: [Errno 28] No space left on device: '/dev/shm/psm_1'",
            "failed (exitcode: -7) local_rank: 0 (pid: 1) of binary: python",
        ] {
            let d = is(text, Kind::Host, Source::SharedMemory);
            assert_eq!(d.hints, vec![Hint::SharedMemory], "{text}");
        }
        // A CUDA failure while registering the segment is not memory, unless it is an OOM.
        is("NCCL WARN Cuda failure 'invalid argument'\nNCCL WARN Error while creating shared memory segment /dev/shm/nccl-x (size 1)", Kind::NotMemory, Source::Nccl);
        is(
            "NCCL WARN Cuda failure 'out of memory'",
            Kind::Gpu,
            Source::Nccl,
        );
        is(
            "OSError: [Errno 28] No space left on device: '/data/ckpt'",
            Kind::Disk,
            Source::DiskFull,
        );
        let d = is(
            "RuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly",
            Kind::Host,
            Source::DataLoaderWorker,
        );
        assert!(d.hints.contains(&Hint::SharedMemory));
        assert_eq!(
            diagnose("RuntimeError: DataLoader worker (pid 7) is killed by signal: Segmentation fault.\nRuntimeError: DataLoader worker (pid(s) 7) exited unexpectedly", None).kind,
            Kind::NotMemory,
            "a worker's segfault is a crash, not a memory shortage"
        );
    }

    #[test]
    fn disk_messages() {
        for text in [
            "RuntimeError: [enforce fail at inline_container.cc:1] . PytorchStreamWriter failed writing file data/3: file write failed",
            "RuntimeError: [enforce fail at inline_container.cc:1] . unexpected pos 1234 vs 1200",
            "UserWarning: Not enough free disk space to download the file. The expected file size is: 100.00 MB. The target location /cache only has 10.00 MB free disk space.",
            "OSError: Not enough disk space. Needed: 10.00 GiB (download: 5.00 GiB, generated: 5.00 GiB, post-processed: Unknown size)",
            "There is not enough space on the disk. (os error 112)",
            "OSError: [Errno 122] Disk quota exceeded",
        ] {
            let d = is(text, Kind::Disk, Source::DiskFull);
            assert_eq!(d.hints, vec![Hint::DiskSpace]);
        }
    }

    #[test]
    fn host_memory_and_the_oom_killer() {
        let d = is(
            "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 8.00 GiB for an array with shape (1024, 1024, 1024) and data type float64",
            Kind::Host,
            Source::PythonMemoryError,
        );
        near(d.numbers.tried_gib, 8.0);
        is("MemoryError", Kind::Host, Source::PythonMemoryError);
        is("terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc", Kind::Host, Source::CpuAllocator);
        is(
            "OSError: [WinError 1455] The paging file is too small for this operation to complete.",
            Kind::Host,
            Source::CpuAllocator,
        );
        is(
            "RuntimeError: $ Torch: not enough memory: you tried to allocate 0GB. Buy new RAM!",
            Kind::Host,
            Source::CpuAllocator,
        );
        let d = is(
            "RuntimeError: unable to mmap 2147483648 bytes from file </m/model.safetensors>: Cannot allocate memory (12)",
            Kind::Host,
            Source::CpuAllocator,
        );
        near(d.numbers.tried_gib, 2.0);
        for text in [
            "Killed",
            "Loading checkpoint shards:  50%|█████     | 1/2 [00:05<00:05,  5.00s/it]Killed",
            "./run.sh: line 3:  1234 Killed                  python train.py",
            "[1]    1234 killed     python train.py",
            "[1]+  Killed                  python train.py",
            "已杀死",
            "[ERROR] [launch.py:1:sigkill_handler] ['python', 'train.py'] exits with return code = -9",
            "subprocess.CalledProcessError: Command '['python']' died with <Signals.SIGKILL: 9>.",
            "app exited with code 137",
            "Last State: Terminated  Reason: OOMKilled",
            "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=1.0. Some of your processes may have been killed by the cgroup out-of-memory handler.",
        ] {
            assert_eq!(diagnose(text, None).kind, Kind::Host, "{text}");
        }
        let d = diagnose(
            "Loading checkpoint shards:   0%|          | 0/4 [00:00<?, ?it/s]\nKilled",
            None,
        );
        assert_eq!(d.hints, vec![Hint::LoadingRam, Hint::HostMemory]);
        is(
            "Worker exit detail: There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.",
            Kind::Host,
            Source::Ray,
        );
        is("RuntimeError: Caught RuntimeError in pin memory thread for device 0.\nRuntimeError: CUDA error: out of memory", Kind::Host, Source::PinnedMemory);
        is("RuntimeError: Caught RuntimeError in pin memory thread for device 0.\nRuntimeError: CUDA error: an illegal memory access was encountered", Kind::NotMemory, Source::IllegalAccess);
        is(
            "[12.3] Killed process 99 (python) total-vm:1000kB, anon-rss:900kB, file-rss:0kB",
            Kind::Host,
            Source::OomKiller,
        );
        // Not a job report.
        assert_eq!(
            diagnose("the process was killed", None).kind,
            Kind::Unrecognised
        );
    }

    #[test]
    fn not_memory_runtime_errors() {
        for (text, source, hint) in [
            ("RuntimeError: CUDA error: misaligned address", Source::CudaError, Hint::CudaFault),
            ("RuntimeError: CUDA error: invalid argument", Source::CudaError, Hint::CudaFault),
            ("RuntimeError: CUDA error: no CUDA-capable device is detected", Source::CudaError, Hint::CudaFault),
            ("RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle)`", Source::Cublas, Hint::CudaFault),
            ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", Source::Cublas, Hint::CudaFault),
            ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", Source::Cudnn, Hint::CudaFault),
            ("Check failed: (param_.workspace) >= (required_size) \nMinimum workspace size: 100 Bytes\nGiven: 50 Bytes", Source::Cudnn, Hint::WorkspaceLimit),
            ("RuntimeError: cuda runtime error (35) : CUDA driver version is insufficient for CUDA runtime version", Source::DriverTooOld, Hint::UpdateDriver),
            ("RuntimeError: The NVIDIA driver on your system is too old (found version 10010).", Source::DriverTooOld, Hint::UpdateDriver),
            ("x.cu:10: block: [1,0,0], thread: [2,0,0] Assertion `t >= 0 && t < n_classes` failed.", Source::DeviceAssert, Hint::IndexOutOfRange),
            ("[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800000 milliseconds before timing out.", Source::Nccl, Hint::Communication),
            ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge", Source::CorruptCheckpoint, Hint::Redownload),
            ("_pickle.UnpicklingError: invalid load key, 'v'.", Source::CorruptCheckpoint, Hint::Redownload),
            ("EOFError: Ran out of input", Source::CorruptCheckpoint, Hint::Redownload),
            ("Token indices sequence length is longer than the specified maximum sequence length for this model (600 > 512). Running this sequence through the model will result in indexing errors", Source::Tokenizer, Hint::TokenLength),
        ] {
            let d = is(text, Kind::NotMemory, source);
            assert_eq!(d.hints, vec![hint], "{text}");
        }
    }

    #[test]
    fn advice_that_mentions_memory_is_not_the_error() {
        let d = diagnose(
            "If you encounter CUDA out of memory, try to set --tile with a smaller number.",
            None,
        );
        assert_eq!(d.kind, Kind::Unrecognised);
        let d = diagnose(
            "Error code 12 (Cannot allocate memory)\nIf you encounter CUDA out of memory, try a smaller batch.",
            None,
        );
        assert_eq!(d.kind, Kind::Host);
        // `OutOfMemoryError` is not Python's `MemoryError`.
        assert_eq!(
            diagnose("torch.OutOfMemoryError: CUDA out of memory.", None).kind,
            Kind::Gpu
        );
        assert_eq!(
            diagnose("raise OutOfMemoryError", None).kind,
            Kind::Unrecognised
        );
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        for text in [
            "",
            " ",
            "\n\n",
            "Killed\n",
            "ran out of memory in memory space hbm. used",
            "free memory on device (",
            "max seq len (",
            "max seq len (5), (",
            "resource exhausted: ",
            "failed to allocate ",
            "unable to allocate  buffer",
            "Out of memory while trying to allocate",
            "( 1 / ",
            ", (1 / 2)",
            "é已杀死é",
            "tried to allocate ñ total capacity",
            "Requested : ",
            "DataLoader worker (pid) exited unexpectedly",
        ] {
            let _ = diagnose(text, Some(24.0));
        }
    }

    #[test]
    fn sizes_parse_with_units() {
        near(parse_size("20.00 MiB"), 20.0 / 1024.0);
        near(parse_size("15.78 GiB"), 15.78);
        near(parse_size("4000000000 bytes"), 4e9 / GIB);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size(""), None);
    }

    /// PyTorch's message as a browser translates it into Chinese: every figure still read.
    #[test]
    fn a_translated_pytorch_message() {
        let d = diagnose(
            "torch.OutOfMemoryError：CUDA 内存不足。尝试分配 13.28 GiB。GPU 0 总容量为 23.65 GiB，其中 4.29 GiB 是空闲的。进程 4102651 使用了 19.35 GiB 内存。在分配的内存中，18.82 GiB 由 PyTorch 分配，73.26 MiB 由 PyTorch 保留但未分配。",
            None,
        );
        assert_eq!(d.kind, Kind::Gpu);
        near(d.numbers.tried_gib, 13.28);
        near(d.numbers.total_gib, 23.65);
        near(d.numbers.free_gib, 4.29);
        near(d.numbers.allocated_gib, 18.82);
        near(d.numbers.reserved_unallocated_gib, 73.26 / 1024.0);
    }

    /// PyTorch's reserved figure with "in" cut by a fixed-width wrap ("reserved i\nn total by PyTorch").
    #[test]
    fn reserved_figure_across_a_wrap() {
        let d = diagnose(
            "RuntimeError: CUDA out of memory. Tried to allocate 456.00 MiB (GPU 0; 5.80 GiB\ntotal capacity; 3.24 GiB already allocated; 420.88 MiB free; 3.66 GiB reserved i\nn total by PyTorch)",
            None,
        );
        near(d.numbers.reserved_gib, 3.66);
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

    /// The last-resort reader takes a runtime's own words for running out where no rule knows the runtime: a
    /// failed allocation beside a device it names is the device's, beside the host's allocator the host's;
    /// a possibility ("can happen due to insufficient memory") and a C++ namespace (`cuda::std`) are neither.
    #[test]
    fn unknown_runtimes_are_read_by_their_words() {
        let kind = |t: &str| diagnose(t, None).kind;
        assert_eq!(
            kind("XYZ runtime: vulkan memory allocation failed for buffer 3"),
            Kind::Gpu
        );
        assert_eq!(
            kind("engine: insufficient memory on the OpenCL device"),
            Kind::Gpu
        );
        assert_eq!(
            kind("allocator: out of host memory while mapping the weights"),
            Kind::Host
        );
        assert_eq!(
            kind("pool: malloc of 4096 bytes failed, insufficient memory"),
            Kind::Host
        );
        assert_eq!(
            kind("Device was lost. This can happen due to insufficient memory or other GPU constraints."),
            Kind::Unrecognised
        );
        assert_eq!(
            kind("Run [T=cuda::std::complex<float>] Fail: failed to allocate memory"),
            Kind::Unrecognised
        );
    }
}
