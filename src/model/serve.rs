//! Serving planner: with this GPU and engine, what `max_model_len` and how many concurrent sequences can a
//! model serve?
//!
//! vLLM sizes its paged KV cache once, at startup: it loads the weights, runs one dummy forward pass of
//! `max_num_batched_tokens` tokens, and gives the KV cache what is left of `gpu_memory_utilization × total`
//! after the weights, that pass's activation peak and the memory PyTorch does not see (CUDA context, NCCL).
//! The bytes become blocks of `block_size` tokens per layer; the blocks decide how many sequences of
//! `max_model_len` tokens fit at once ("Maximum concurrency for N tokens per request: X.XXx"). This module
//! redoes that arithmetic from the architecture alone, with the terms vLLM measures modelled:
//!
//! - weights: vramfit's weights model (`weights.rs`, the rule `estimate.rs` applies), divided by
//!   tensor parallelism;
//! - weights of a vision-language model's vision tower and projector ([`vision_weights_bytes_per_gpu`]: vLLM
//!   loads the whole checkpoint);
//! - activation peak of the profiling pass: derived from the shape (sampler logits, one layer's MLP and
//!   attention, MoE workspace) and checked against the logs (`tests/serve.rs`); for a VLM, the encoder's
//!   dummy pass and the pixels and encoder outputs it keeps beside the language model's
//!   ([`vllm_encoder_profile`], from `profile_run` and `MultiModalBudget` in vLLM's sources);
//! - non-torch memory and the CUDA-graph pool: constants and a per-layer rule read off real startup logs;
//! - KV bytes per token per layer, pages, blocks, hybrid (sliding-window + full) groups, the printed token
//!   count, the concurrency and the startup check: vLLM's own formulas;
//! - hybrid stacks with recurrent layers (Mamba, Gated DeltaNet): vLLM's `MambaSpec` pages (one padded page
//!   per request and recurrent layer, the attention block size raised to hold it: [`hybrid_block_size`]) and
//!   SGLang's separate state pool (`paged_plan`).
//!
//! Sources are the Python sources of released vLLM wheels (the file, lines and release are named at each
//! formula) and 61 startup logs of vLLM 0.19.0 on H100 80GB committed to
//! `github.com/llm-d-incubation/llm-d-planner` at `d3121e0` (`accuracy/results/v0.19.0/logs/`), plus logs
//! quoted in vLLM issues (`tests/data/vllm-startup-logs.jsonl` keeps each one with its address). Every
//! figure vLLM prints in "GiB" (or "GB") is bytes / 2^30.
//!
//! SGLang and plain transformers are planned more roughly: SGLang's `--mem-fraction-static` covers weights and
//! the KV pool only; transformers has no pool, so its plan is vramfit's inference estimate searched for the
//! largest batch.
//!
//! Pure: no I/O, no browser; every input the limits allow gives finite figures.

use super::arch::{Architecture, AttentionKind, MlpKind};
use super::estimate::{estimate, Component};
use super::job::{Inference, Job, KvDtype, Mode, Parallelism, Precision, WeightFormat};
use super::limits::{in_range, MAX_BATCH, MAX_GPUS, MAX_MEMORY_GIB, MAX_TOKENS};
use super::vision::{VisionFamily, VisionSettings, VisionTower};
use crate::bytes::GIB;
use serde::{Deserialize, Serialize};

/// The serving engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// vLLM, V1 engine (0.10 and later; the formulas of 0.11.0 and 0.19.0).
    #[default]
    Vllm,
    /// SGLang: `gpu_memory_utilization` is read as `--mem-fraction-static`.
    Sglang,
    /// Hugging Face transformers `generate` (no paged pool; the cache grows with each token).
    Transformers,
}

/// The dtype the model runs in (vLLM `--dtype`; `auto` takes the checkpoint's, usually bf16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ModelDtype {
    #[default]
    #[serde(rename = "bf16", alias = "bfloat16", alias = "auto")]
    Bf16,
    #[serde(rename = "fp16", alias = "float16", alias = "half")]
    Fp16,
    #[serde(rename = "fp32", alias = "float32", alias = "float")]
    Fp32,
}

impl ModelDtype {
    /// Bytes per element.
    pub fn bytes(self) -> f64 {
        match self {
            ModelDtype::Bf16 | ModelDtype::Fp16 => 2.0,
            ModelDtype::Fp32 => 4.0,
        }
    }

    /// The unquantized weight format of this dtype.
    pub fn weights(self) -> WeightFormat {
        match self {
            ModelDtype::Bf16 => WeightFormat::Bf16,
            ModelDtype::Fp16 => WeightFormat::Fp16,
            ModelDtype::Fp32 => WeightFormat::Fp32,
        }
    }
}

/// KV-cache element type (vLLM `--kv-cache-dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum ServeKvDtype {
    /// The model dtype.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    #[serde(rename = "bf16", alias = "bfloat16")]
    Bf16,
    /// One byte per element (`fp8`, `fp8_e4m3`, `fp8_e5m2`).
    #[serde(rename = "fp8", alias = "fp8_e4m3", alias = "fp8_e5m2")]
    Fp8,
}

/// A serving setup. Every field is optional; what is left out takes the engine's default (vLLM's for
/// `vllm serve`), resolved in [`ServePlan`]'s echo of the settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServeRequest {
    /// Engine (default vLLM).
    pub engine: Option<Engine>,
    /// Memory of one GPU as CUDA reports its total (`torch.cuda.mem_get_info()[1]`, the total vLLM prints),
    /// GiB. Required.
    pub gpu_gib: Option<f64>,
    /// GPU name; vLLM picks larger batch defaults on GPUs of ≥ 70 GiB unless the name says A100.
    pub gpu_name: Option<String>,
    /// GPUs the model is split over (`--tensor-parallel-size`, default 1).
    #[serde(alias = "tensor_parallel_size")]
    pub tensor_parallel: Option<u32>,
    /// Fraction of each GPU's total memory the engine may use (default 0.9; SGLang: `--mem-fraction-static`).
    #[serde(alias = "mem_fraction_static")]
    pub gpu_memory_utilization: Option<f64>,
    /// Longest sequence (prompt + output) one request may have. Default: `max_position_embeddings`.
    pub max_model_len: Option<u32>,
    /// The model's `max_position_embeddings` (filled in from the catalog or config when known).
    pub max_position_embeddings: Option<u32>,
    /// Most sequences scheduled at once (`--max-num-seqs`; vLLM default 1024 on ≥ 70 GiB non-A100 GPUs, else
    /// 256).
    pub max_num_seqs: Option<u32>,
    /// Most tokens in one forward pass (`--max-num-batched-tokens`; vLLM default for `vllm serve` 8192 on
    /// ≥ 70 GiB non-A100 GPUs, else 2048). The profiling pass runs this many tokens.
    pub max_num_batched_tokens: Option<u32>,
    /// KV-cache dtype (`auto` = the model dtype, or `fp8`).
    #[serde(alias = "kv_cache_dtype")]
    pub kv_dtype: Option<ServeKvDtype>,
    /// Tokens per KV block (default 16; SGLang's page size is 1).
    pub block_size: Option<u32>,
    /// No CUDA graphs (`--enforce-eager`).
    pub enforce_eager: Option<bool>,
    /// The dtype the model computes in (default bf16).
    pub dtype: Option<ModelDtype>,
    /// Stored weight format (default: the dtype's; `fp8`, `int8` (w8a8), `gptq-int4`, `awq-int4`, `mxfp4`, …).
    pub weights: Option<WeightFormat>,
    /// Measured weights per GPU, GiB ("Model loading took X GiB"), instead of the weights model.
    pub weights_gib: Option<f64>,
    /// Measured activation peak of the profiling pass, GiB, instead of the activation model.
    pub activation_peak_gib: Option<f64>,
    /// Measured non-torch memory per GPU, GiB, instead of the constants.
    pub non_torch_gib: Option<f64>,
    /// A fixed KV-cache size per GPU, GiB (vLLM `--kv-cache-memory`: profiling is skipped and this is used).
    pub kv_cache_memory_gib: Option<f64>,
}

/// What the engine would do with a setup, per GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServePlan {
    /// Settings as resolved (defaults filled in).
    pub engine: Engine,
    pub tensor_parallel: u32,
    pub gpu_gib: f64,
    pub gpu_memory_utilization: f64,
    pub max_model_len: u32,
    pub max_num_seqs: u32,
    pub max_num_batched_tokens: u32,
    pub block_size: u32,
    pub enforce_eager: bool,
    /// Bytes per KV element.
    pub kv_dtype_bytes: f64,
    /// `gpu_memory_utilization × gpu_gib`: what the engine may use (transformers: the whole GPU), GiB.
    pub requested_gib: f64,
    /// Weights on one GPU, GiB.
    pub weights_gib: f64,
    /// Peak of the profiling forward pass (vLLM "PyTorch activation peak memory"), GiB.
    pub activation_peak_gib: f64,
    /// Memory outside PyTorch's allocator: CUDA context, cuBLAS workspaces, NCCL buffers, GiB.
    pub non_torch_gib: f64,
    /// CUDA-graph pool, captured after the KV cache and outside the budget, GiB (0 with `enforce_eager`).
    pub cuda_graph_gib: f64,
    /// Memory given to the KV cache ("Available KV cache memory"), GiB; negative when nothing is left.
    pub kv_cache_gib: f64,
    /// What the process ends up holding on one GPU: the budget plus the CUDA graphs, GiB.
    pub process_gib: f64,
    /// KV bytes one token takes on one GPU, summed over layers (a sliding-window layer counted as full; a
    /// hybrid stack's attention layers only).
    pub kv_bytes_per_token: f64,
    /// Recurrent-state bytes one sequence holds on one GPU, summed over a hybrid stack's recurrent layers
    /// (before vLLM pads each layer's state to the attention page); 0 without recurrent layers.
    pub state_bytes_per_sequence: f64,
    /// Bytes of one block of one layer (vLLM's page).
    pub page_bytes: f64,
    /// KV-cache groups (1, or more for sliding-window + full hybrids).
    pub kv_groups: u32,
    /// Layers per group: how many pool tensors share the blocks.
    pub layers_per_group: u32,
    /// Blocks in the pool (`num_gpu_blocks`).
    pub gpu_blocks: u64,
    /// The "GPU KV cache size: N tokens" vLLM prints: blocks ÷ groups × block size (for hybrids not the
    /// tokens that fit; see [`KvLayout::reported_tokens`]).
    pub kv_tokens: u64,
    /// Blocks one request of `max_model_len` tokens needs, over all groups.
    pub blocks_per_request: u64,
    /// Requests of `max_model_len` tokens the pool holds at once ("Maximum concurrency … X.XXx").
    pub max_concurrency: f64,
    /// Longest context one request can have in this pool (capped at `max_position_embeddings` when known).
    pub max_model_len_that_fits: u32,
    /// Whether the engine starts and can hold one request of `max_model_len`.
    pub fits: bool,
    /// When it does not: what the engine would say.
    pub reason: Option<String>,
    /// Things that may still go wrong.
    pub warnings: Vec<String>,
}

/// vLLM's default `block_size` on CUDA: `CacheConfig.DEFAULT_BLOCK_SIZE` (`vllm/config/cache.py`, 0.19.0).
pub const DEFAULT_BLOCK_SIZE: u32 = 16;

/// Default `gpu_memory_utilization` (vLLM `CacheConfig`, every release read).
pub const DEFAULT_GPU_MEMORY_UTILIZATION: f64 = 0.9;

/// SGLang's default `--mamba-full-memory-ratio`: the recurrent-state pool's memory over the KV pool's
/// (`server_args.py` `mamba_full_memory_ratio: float = 0.9`).
pub const SGLANG_MAMBA_FULL_MEMORY_RATIO: f64 = 0.9;

/// vLLM's `vllm serve` batch defaults (`EngineArgs.get_batch_defaults`, `vllm/engine/arg_utils.py`; the 0.19.0
/// logs print "Defaulting max_num_batched_tokens to 8192 … Defaulting max_num_seqs to 1024" from lines
/// 2232/2242): on a GPU with ≥ 70 GiB whose name does not contain "a100", 8192 batched tokens and 1024
/// sequences; elsewhere 2048 and 256. `(max_num_batched_tokens, max_num_seqs)`.
pub fn vllm_batch_defaults(gpu_gib: f64, gpu_name: Option<&str>) -> (u32, u32) {
    let a100 = gpu_name.is_some_and(|n| n.to_ascii_lowercase().contains("a100"));
    if gpu_gib >= 70.0 && !a100 {
        (8192, 1024)
    } else {
        (2048, 256)
    }
}

/// Non-torch memory of one GPU without tensor parallelism, GiB: the median of the 43 single-GPU logs of vLLM
/// 0.19.0 on H100 80GB in llm-d-planner `accuracy/results/v0.19.0/logs/` (spread 0.24–0.27, and 0.46 for the
/// three granite models). Older releases on other GPUs printed 0.03–0.35 (vLLM issues #13882, #14447,
/// #10517).
pub const NON_TORCH_TP1_GIB: f64 = 0.25;

/// Non-torch memory per GPU at tensor parallel 2, GiB: median of the 11 TP=2 logs of the same set (2.06–2.11).
/// NCCL and the custom all-reduce buffers; measured on NVLink H100s. Without peer-to-peer access (PCIe
/// consumer cards) the custom all-reduce is off and the figure stays near the single-GPU one (0.25 GiB on
/// 2 × RTX 4090, vLLM issue #13061).
pub const NON_TORCH_TP2_GIB: f64 = 2.07;

/// Non-torch memory per GPU at tensor parallel ≥ 4, GiB: median of the 5 TP=4 logs of the same set
/// (2.13–2.21). No TP=8 log is in the data; TP=8 uses this value.
pub const NON_TORCH_TP4_GIB: f64 = 2.17;

/// The non-torch constant for a tensor-parallel degree.
pub fn non_torch_gib(tp: u32) -> f64 {
    match tp {
        0 | 1 => NON_TORCH_TP1_GIB,
        2 | 3 => NON_TORCH_TP2_GIB,
        _ => NON_TORCH_TP4_GIB,
    }
}

/// Bytes per vocabulary entry of one sampled position at the sampler's peak, beyond the logits themselves
/// (which are in the model dtype). Fitted, with [`ACTIVATION_FIXED_GIB`], on the 17 vLLM 0.19.0 H100 logs of
/// dense text-only models whose peak is the sampler (Llama 3.1 8B bf16/fp32 at TP 1/2/4, Llama 3.x 70B at
/// TP 2/4, Qwen2.5 7B at TP 1/2/4 and 72B, Qwen3 8B, Gemma 7B, Gemma 2 2B/9B/27B, Phi-2, Phi-4):
/// residuals −0.015…+0.016 GiB. The size is consistent with an fp32 copy of the logits (4 B) and 8-byte
/// indices of a sort for top-k/top-p, but it is a fit, not read from the sampler's source. The vocabulary is
/// not split by tensor parallelism (every rank holds the full logits: the TP 1/2/4 logs print the same
/// peak).
pub const SAMPLER_EXTRA_BYTES: f64 = 12.46;

/// Fixed part of the profiling pass's activation peak, GiB (same fit as [`SAMPLER_EXTRA_BYTES`]): input ids,
/// positions, attention metadata and sampler tensors of the dummy batch.
pub const ACTIVATION_FIXED_GIB: f64 = 0.06;

/// CUDA-graph pool, fixed part, GiB: least squares of the pool size vLLM 0.19.0 reports ("CUDA graph pool
/// memory: A GiB (actual)") on 24 llm-d-planner logs with the default 51 capture sizes (1…512), against the
/// decoder layers on one GPU (dense and MoE, TP 1/2/4). Residual rms 0.21 GiB, worst +0.76 GiB
/// (DeepSeek-V2-Lite) and −0.36 GiB (Gemma 3). Every one of these logs captured the same 51 sizes (1…512,
/// with `max_num_seqs` 1024; only gpt-oss captured 83, up to 1024), so the data shows no dependence on
/// `max_num_seqs` or the capture sizes, and none is modelled.
pub const CUDA_GRAPH_BASE_GIB: f64 = 0.40;

/// CUDA-graph pool per decoder layer, GiB (same fit as [`CUDA_GRAPH_BASE_GIB`]).
pub const CUDA_GRAPH_PER_LAYER_GIB: f64 = 0.0153;

/// `ceil(a / b)` for positive `b`.
fn cdiv(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// KV heads one GPU holds: `max(1, kv_heads // tp)`, so heads are replicated when there are fewer KV heads
/// than GPUs (`vllm/worker/cache_engine.py:101-119` in 0.6.6; the same rule in V1's model config).
pub fn kv_heads_per_gpu(arch: &Architecture, tp: u32) -> u32 {
    (arch.kv_heads / tp.max(1)).max(1)
}

/// KV bytes of one token in one layer on one GPU.
///
/// - Standard attention: `2 · kv_heads_per_gpu · head_dim · bytes` (K and V; `FullAttentionSpec`
///   page = `2 · block_size · num_kv_heads · head_size · dtype_size`, `vllm/v1/kv_cache_interface.py`,
///   0.11.0 lines 58–245).
/// - MLA (DeepSeek-V2/V3, Kimi): the joint latent and the RoPE key, `(kv_lora_rank + qk_rope_head_dim) ·
///   bytes`, no factor 2, and the same on every GPU: vLLM sets one KV head under any TP for MLA
///   (`MLAAttentionSpec`; `vllm/config/model.py:1217-1221`, 0.19.0), so MLA's KV does not shrink with TP.
pub fn kv_bytes_per_token_layer(arch: &Architecture, tp: u32, kv_bytes: f64) -> f64 {
    match arch.attention {
        AttentionKind::Standard => {
            2.0 * f64::from(kv_heads_per_gpu(arch, tp)) * f64::from(arch.head_dim) * kv_bytes
        }
        AttentionKind::Mla => {
            (f64::from(arch.mla.kv_lora_rank) + f64::from(arch.mla.qk_rope_head_dim)) * kv_bytes
        }
    }
}

/// Layers that attend over the full context and layers limited to the sliding window. Gemma 2 alternates
/// (⌊L/2⌋ full), Gemma 3 has one full layer in six (⌊L/6⌋), Mistral v0.1 slides in every layer: ⌊L·(1 −
/// fraction)⌋ full layers covers them all (`Architecture::sliding_fraction`). A hybrid stack's recurrent
/// layers cache no keys and values: only its attention layers count ([`attention_layers`]).
pub fn layer_kinds(arch: &Architecture) -> (u32, u32) {
    let layers = attention_layers(arch);
    if arch.sliding_window == 0 || arch.sliding_fraction <= 0.0 {
        return (layers, 0);
    }
    let share_full = (1.0 - arch.sliding_fraction.clamp(0.0, 1.0)).max(0.0);
    let full = ((f64::from(layers) * share_full + 1e-9).floor() as u32).min(layers);
    (full, layers - full)
}

/// Layers that keep a KV cache: every layer, or a hybrid stack's attention layers.
pub fn attention_layers(arch: &Architecture) -> u32 {
    arch.stack()
        .map_or(arch.layers, |hy| hy.attention_layers.min(arch.layers))
}

/// Recurrent (Mamba, Gated DeltaNet) layers of a hybrid stack, 0 otherwise.
pub fn recurrent_layers(arch: &Architecture) -> u32 {
    arch.stack()
        .map_or(0, |hy| hy.recurrent_layers.min(arch.layers))
}

/// Bytes of one sequence's recurrent state in one recurrent layer on one of `tp` GPUs, the conv state in the
/// model dtype (`--mamba-cache-dtype auto`) and the SSM state as [`super::recurrent::Hybrid::ssm_state_bytes`]
/// says: vLLM's `MambaSpec.page_size_bytes` before padding. 0 without recurrent layers.
pub fn mamba_page_bytes(arch: &Architecture, tp: u32, model_bytes: f64) -> f64 {
    match arch.stack() {
        Some(hy) if hy.recurrent_layers > 0 => hy.state_bytes_per_sequence_on(model_bytes, tp),
        _ => 0.0,
    }
}

/// vLLM's attention block size for a hybrid model: the smallest multiple of 16 tokens whose attention page
/// holds one recurrent layer's state, `16 · cdiv(mamba_page, 16 · attn_page_per_token)`, used unless the
/// requested `block_size` is at least that; the mamba page is then padded to the attention page
/// (`HybridAttentionMambaModelConfig.verify_and_update_config`, `vllm/model_executor/models/config.py`,
/// without prefix caching; the alignment is 16 for FlashAttention-style backends).
pub fn hybrid_block_size(attn_page_per_token: f64, mamba_page: f64, requested: Option<u32>) -> u32 {
    const ALIGN: f64 = 16.0;
    let needed = if attn_page_per_token > 0.0 && mamba_page > 0.0 {
        (ALIGN * (mamba_page / (ALIGN * attn_page_per_token)).ceil()).min(f64::from(MAX_TOKENS))
            as u32
    } else {
        DEFAULT_BLOCK_SIZE
    };
    match requested {
        Some(b) if b >= needed => b,
        _ => needed.max(1),
    }
}

/// How vLLM V1 lays the KV cache out on one GPU: one page per layer and block, layers of one kind in groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KvLayout {
    /// Bytes of one block of one layer.
    pub page_bytes: f64,
    /// Full-attention layers.
    pub full_layers: u32,
    /// Sliding-window layers.
    pub sliding_layers: u32,
    /// The sliding window, tokens.
    pub window: u32,
    /// Tokens per block.
    pub block_size: u32,
    /// Recurrent (Mamba, Gated DeltaNet) layers: each holds one page per running request, its state padded
    /// to the attention page (`MambaSpec` with `mamba_cache_mode` "none": `max_memory_usage_bytes` is one
    /// page, `vllm/v1/kv_cache_interface.py`), in groups of their own.
    pub mamba_layers: u32,
}

impl KvLayout {
    /// The layout of `arch` on one of `tp` GPUs with `kv_bytes` per element.
    pub fn new(arch: &Architecture, tp: u32, kv_bytes: f64, block_size: u32) -> KvLayout {
        let (full_layers, sliding_layers) = layer_kinds(arch);
        KvLayout {
            page_bytes: f64::from(block_size.max(1)) * kv_bytes_per_token_layer(arch, tp, kv_bytes),
            full_layers,
            sliding_layers,
            window: arch.sliding_window,
            block_size: block_size.max(1),
            mamba_layers: 0,
        }
    }

    /// Layers per group, which is also the number of pool tensors the blocks are shared by. One kind of layer:
    /// every layer. Hybrids: the smallest kind's count, each kind split into `cdiv(n, group_size)` groups and
    /// the last one padded (the "Add N padding layers" warning), `_get_kv_cache_groups_uniform_page_size`,
    /// `vllm/v1/core/kv_cache_utils.py:894-1001` (0.11.0).
    pub fn layers_per_group(&self) -> u32 {
        [self.full_layers, self.sliding_layers, self.mamba_layers]
            .into_iter()
            .filter(|n| *n > 0)
            .min()
            .unwrap_or(1)
    }

    /// `(full groups, sliding groups)`.
    pub fn groups(&self) -> (u32, u32) {
        let g = u64::from(self.layers_per_group());
        (
            cdiv(u64::from(self.full_layers), g) as u32,
            cdiv(u64::from(self.sliding_layers), g) as u32,
        )
    }

    /// Groups of recurrent layers.
    pub fn mamba_groups(&self) -> u32 {
        cdiv(
            u64::from(self.mamba_layers),
            u64::from(self.layers_per_group()),
        ) as u32
    }

    /// Number of KV-cache groups.
    pub fn group_count(&self) -> u32 {
        let (f, s) = self.groups();
        (f + s + self.mamba_groups()).max(1)
    }

    /// Blocks a KV budget buys: `budget // page_size // layers_per_group`, at least 0 (`get_num_blocks`,
    /// `vllm/v1/core/kv_cache_utils.py:813-827`, 0.11.0; v0: `available // cache_block_size`,
    /// `vllm/worker/worker.py`).
    pub fn num_blocks(&self, budget_bytes: f64) -> u64 {
        let per_block = self.page_bytes * f64::from(self.layers_per_group());
        if budget_bytes.is_nan() || budget_bytes <= 0.0 || per_block.is_nan() || per_block <= 0.0 {
            return 0;
        }
        let blocks = (budget_bytes / per_block).floor();
        if blocks >= u64::MAX as f64 {
            u64::MAX
        } else {
            blocks as u64
        }
    }

    /// The token count vLLM prints ("GPU KV cache size: N tokens"): `num_blocks // groups × block_size`
    /// (`kv_cache_utils.py:1079-1087` in 0.11.0, `_report_kv_cache_config` `:1287-1319` in 0.19.0; the uniform
    /// path of 0.10 prints `num_blocks × block_size`, the same with one group). For a hybrid this is not the
    /// tokens that fit: Gemma 3 27B's 15,997 blocks in 7 groups print 36,560.
    pub fn reported_tokens(&self, blocks: u64) -> u64 {
        (blocks / u64::from(self.group_count())).saturating_mul(u64::from(self.block_size))
    }

    /// Blocks one full-attention layer needs per request: `cdiv(max_model_len, block_size)`.
    fn full_blocks(&self, max_model_len: u32) -> u64 {
        cdiv(u64::from(max_model_len), u64::from(self.block_size))
    }

    /// Blocks one sliding-window layer needs per request: `cdiv(min(window − 1 + max_num_batched_tokens,
    /// max_model_len), block_size) + 1` (`SlidingWindowSpec.max_memory_usage_bytes`,
    /// `vllm/v1/kv_cache_interface.py`, 0.11.0): the window, the tokens of one scheduling step, and one block
    /// the window may straddle.
    fn sliding_blocks(&self, max_model_len: u32, max_num_batched_tokens: u32) -> u64 {
        let span = (u64::from(self.window.max(1)) - 1 + u64::from(max_num_batched_tokens))
            .min(u64::from(max_model_len));
        cdiv(span, u64::from(self.block_size)) + 1
    }

    /// Blocks one request of `max_model_len` tokens needs over all groups: each group needs its layer kind's
    /// blocks (`get_max_concurrency_for_kv_cache_config`, `kv_cache_utils.py:780-795` in 0.11.0, `:802-820` in
    /// 0.19.0: `L · Σ_groups max_memory_usage / (page · L)`, which is this sum).
    pub fn blocks_per_request(&self, max_model_len: u32, max_num_batched_tokens: u32) -> u64 {
        let (fg, sg) = self.groups();
        u64::from(fg) * self.full_blocks(max_model_len)
            + u64::from(sg) * self.sliding_blocks(max_model_len, max_num_batched_tokens)
            + u64::from(self.mamba_groups())
    }

    /// "Maximum concurrency for `max_model_len` tokens per request": `num_blocks / blocks_per_request`.
    pub fn max_concurrency(
        &self,
        blocks: u64,
        max_model_len: u32,
        max_num_batched_tokens: u32,
    ) -> f64 {
        let per = self.blocks_per_request(max_model_len, max_num_batched_tokens);
        if per == 0 {
            0.0
        } else {
            blocks as f64 / per as f64
        }
    }

    /// KV bytes one request of `max_model_len` tokens needs, summed over layers: what vLLM's startup check
    /// compares with the budget (`check_enough_kv_cache_memory`, `kv_cache_utils.py:678-723`, 0.11.0).
    pub fn bytes_for_one_request(&self, max_model_len: u32, max_num_batched_tokens: u32) -> f64 {
        self.page_bytes
            * (f64::from(self.full_layers) * self.full_blocks(max_model_len) as f64
                + f64::from(self.sliding_layers)
                    * self.sliding_blocks(max_model_len, max_num_batched_tokens) as f64
                + f64::from(self.mamba_layers))
    }

    /// Largest context in `1..=cap` whose single request fits in `budget_bytes`, or 0: the binary search of
    /// `estimate_max_model_len` (`kv_cache_utils.py:633-675`, 0.11.0).
    pub fn max_model_len_that_fits(
        &self,
        budget_bytes: f64,
        max_num_batched_tokens: u32,
        cap: u32,
    ) -> u32 {
        let fits =
            |len: u32| self.bytes_for_one_request(len, max_num_batched_tokens) <= budget_bytes;
        largest_true(cap, fits)
    }
}

/// Largest `n` in `1..=cap` with `ok(n)` for a predicate that holds up to some point and fails after; 0 if
/// `ok(1)` fails.
fn largest_true(cap: u32, ok: impl Fn(u32) -> bool) -> u32 {
    if cap == 0 || !ok(1) {
        return 0;
    }
    let (mut lo, mut hi) = (1u32, cap);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Weights on one GPU, bytes: vramfit's weights model ([`super::weights::stored_bytes`]: quantized formats store
/// the decoder's linear layers, or MXFP4 the routed experts, at [`WeightFormat::linear_bytes`] and keep the
/// rest in 16-bit; unquantized formats store everything at their width, the rule of `estimate.rs`), divided
/// by tensor parallelism. vLLM also splits the
/// embedding and LM head over the GPUs (vocab-parallel) and keeps small buffers (rotary tables): Llama 3.1 8B
/// predicts 14.96 GiB, vLLM 0.19 loads 14.99.
pub fn weights_bytes_per_gpu(arch: &Architecture, weights: WeightFormat, tp: u32) -> f64 {
    super::weights::stored_bytes(&arch.params(), weights) / f64::from(tp.max(1))
}

/// Peak of vLLM's profiling pass on one GPU, bytes: one dummy forward of `T = max_num_batched_tokens` tokens in
/// `N = min(max_num_seqs, T)` requests, then the sampler on the `N` last positions (`profile_run` in
/// `vllm/v1/worker/gpu_model_runner.py`; measured as the increase of `torch.cuda.max_memory_allocated`,
/// `vllm/utils/__init__.py:2851-2859` in 0.11.0). With `b` the compute dtype's bytes, `h` hidden, `V` vocab:
///
/// - the sampler: `N · V · (b + 12.46)` (logits, their fp32 copy and the sorted top-k/top-p buffers,
///   [`SAMPLER_EXTRA_BYTES`]) plus the `T · h · b` hidden states of the pass, still alive;
/// - the forward pass, one layer at a time: `T · b · (3h + w)`, three h-wide tensors (residual, normed input,
///   layer output) beside the widest per-GPU intermediate `w` of the layer: gated MLP `3i/tp` (gate and up
///   outputs and their product), plain MLP `2i/tp`, attention `(2·q + 2·kv)/tp`, a hybrid stack's recurrent
///   mixer `(in_proj_width + conv_dim + inner)/tp` (not checked against a log: none of a hybrid is in the
///   data);
/// - MoE layers add `T · top_k · (max(2I/tp, h) + max(I/tp, h)) · b`, alive at the sampler too. Read as the
///   Triton fused-MoE workspaces kept between calls; the shape is the one that fits the four MoE logs
///   (Mixtral at TP 2, Qwen3-30B-A3B, DeepSeek-V2-Lite, Qwen1.5-MoE: ±0.03 GiB), not read from the source;
/// - plus [`ACTIVATION_FIXED_GIB`].
///
/// The peak is `fixed + max(forward, sampler) + moe`. Checked in `tests/serve.rs` against the "PyTorch
/// activation peak memory" of the 0.19.0 logs: dense text-only models within ±0.02 GiB whether the sampler
/// (large vocabularies) or the forward pass (CodeLlama, 32k vocabulary: 0.76 vs 0.77) is the peak; MoE models
/// within ±0.03 GiB (Mixtral, Qwen3-30B-A3B, DeepSeek-V2-Lite, Qwen1.5-MoE); not modelled here: the mxfp4 MoE
/// path (gpt-oss keeps no workspace). This is the language model's pass only: a vision-language model's
/// encoder pass and the encoder outputs and pixels it keeps alive are added by [`vllm_profile_peak_bytes`]
/// ([`vllm_encoder_profile`]), for the towers `vision.rs` knows (Gemma 3, Qwen2.5-VL, Qwen3-VL, Llama 4);
/// other towers (Pixtral in Mistral Small 3.1: +0.08 GiB, MoonViT in Kimi-VL, granite-vision's LLaVA-Next)
/// are not in vramfit's `VisionTower` and stay unmodelled. vLLM v0 ran `max_num_batched_tokens =
/// max_model_len` without chunked prefill, so the forward term dominated: 2.12 vs 2.07 GiB at 20,000 tokens
/// on Llama 3.1 8B (#10517).
pub fn vllm_activation_peak_bytes(
    arch: &Architecture,
    tp: u32,
    act_bytes: f64,
    max_num_batched_tokens: u32,
    max_num_seqs: u32,
) -> f64 {
    let tpf = f64::from(tp.max(1));
    let t = f64::from(max_num_batched_tokens.max(1));
    let n = f64::from(max_num_seqs.max(1).min(max_num_batched_tokens.max(1)));
    let h = f64::from(arch.hidden);
    let sampler = n * f64::from(arch.vocab) * (act_bytes + SAMPLER_EXTRA_BYTES) + t * h * act_bytes;
    let mlp_of = |width: u32| match arch.mlp {
        MlpKind::Gated => 3.0 * f64::from(width) / tpf,
        MlpKind::Plain => 2.0 * f64::from(width) / tpf,
    };
    let (dense_mlp, moe_ws) = match arch.moe {
        None => (mlp_of(arch.intermediate), 0.0),
        Some(m) => {
            let dense_width = if m.dense_layers > 0 {
                arch.intermediate.max(m.shared_intermediate)
            } else {
                m.shared_intermediate
            };
            let i = f64::from(m.expert_intermediate) / tpf;
            let ws = t * f64::from(m.active.max(1)) * ((2.0 * i).max(h) + i.max(h)) * act_bytes;
            (mlp_of(dense_width), ws)
        }
    };
    let attn = match arch.attention {
        AttentionKind::Standard => (2.0 * arch.q_width() + 2.0 * arch.kv_width()) / tpf,
        AttentionKind::Mla => {
            (2.0 * arch.q_width()
                + f64::from(arch.heads)
                    * (f64::from(arch.mla.qk_nope_head_dim) + f64::from(arch.mla.v_head_dim)))
                / tpf
        }
    };
    // A recurrent layer's widest moment: the projection output, the convolution output and the scan output
    // (`recurrent::Hybrid::prefill_bytes_per_token` without the h-wide terms counted above).
    let mixer = arch
        .stack()
        .filter(|hy| hy.recurrent_layers > 0)
        .map_or(0.0, |hy| {
            (hy.in_proj_width() + hy.conv_dim() + f64::from(hy.inner)) / tpf
        });
    let forward = t * act_bytes * (3.0 * h + dense_mlp.max(attn).max(mixer));
    ACTIVATION_FIXED_GIB * GIB + forward.max(sampler) + moe_ws
}

/// vLLM's default `--limit-mm-per-prompt` for a modality the user does not name: 999 items
/// (`MultiModalConfig.get_limit_per_prompt`, `vllm/config/multimodal.py`: "Unspecified modality is set to 999
/// by default"; V0 used 1). It only bounds the profiling batch through `max_model_len // tokens_per_item`,
/// which is far smaller for every tower here.
pub const VLLM_DEFAULT_MM_LIMIT_PER_PROMPT: u32 = 999;

/// Pixels of the largest image vLLM's dummy-input builder makes for a tower: the image "with most features"
/// (`get_image_size_with_most_features` of each model's `ProcessingInfo`, `vllm/model_executor/models/`),
/// which `profile_run` feeds the encoder. As [`super::vision::VisionTower::image_tokens`] reads it:
/// - Gemma 3: any size, the processor resizes to `image_size`² (pan-and-scan off, `get_num_crops` 0 in
///   `gemma3_mm.py`);
/// - Qwen2.5-VL: the image processor's `max_pixels`, 12,845,056 (3584², 16,384 tokens);
/// - Qwen3-VL: its `longest_edge`, 16,777,216 (4096², 16,384 tokens with patch 16);
/// - Llama 4: 16 tiles (`max_patches`) and the global one: a 4 × 4 canvas of `image_size` tiles.
pub fn vllm_largest_image_pixels(v: &VisionTower) -> u32 {
    match v.family {
        VisionFamily::Gemma3 => v.image_size.max(1).saturating_mul(v.image_size.max(1)),
        VisionFamily::Qwen25Vl => 12_845_056,
        VisionFamily::Qwen3Vl => 16_777_216,
        VisionFamily::Llama4 => {
            let side = v.image_size.max(1).saturating_mul(4);
            side.saturating_mul(side)
        }
    }
}

/// Weights of a vision-language model's vision tower and projector on one of `tp` GPUs, bytes; 0 for a
/// text model. vLLM builds and loads the whole checkpoint (`Gemma3ForConditionalGeneration`,
/// `Qwen2_5_VLForConditionalGeneration`, … construct `vision_tower`/`visual` and the projector beside the
/// language model; "Model loading took" counts them), so the tower is part of the weights. Its linear layers
/// are vLLM's tensor-parallel linears (`QKVParallelLinear`, `ColumnParallelLinear`, `RowParallelLinear` in
/// `siglip.py`, `qwen2_5_vl.py`; `mm_encoder_tp_mode` "weights" by default) and are split over the GPUs; the
/// rest (patch and position embeddings, norms, Gemma 3's projector matrix, an `nn.Parameter`) is replicated:
/// `(linear / tp + other) · bytes` with [`super::vision::VisionParams::linear`]. Unquantized formats store
/// the tower at their width; quantized checkpoints keep it in 16-bit (AWQ/GPTQ/compressed-tensors checkpoints
/// list the vision modules in `modules_to_not_convert` / `ignore`, as vision.rs notes).
///
/// Qwen3-VL also allocates, while the model is built, one `max_num_batched_tokens × text hidden` buffer per
/// deepstack level (`deepstack_input_embeds` in `Qwen3VLForConditionalGeneration.__init__`,
/// `vllm/model_executor/models/qwen3_vl.py`), counted here with the weights (no Qwen3-VL log checks it).
pub fn vision_weights_bytes_per_gpu(
    arch: &Architecture,
    weights: WeightFormat,
    tp: u32,
    model_bytes: f64,
    max_num_batched_tokens: u32,
) -> f64 {
    let Some(v) = arch.vision.as_ref() else {
        return 0.0;
    };
    let p = v.params();
    let bytes = if weights.is_quantized() {
        2.0
    } else {
        weights.linear_bytes()
    };
    let tower = (p.linear / f64::from(tp.max(1)) + (p.total() - p.linear)) * bytes;
    let deepstack = if v.family == VisionFamily::Qwen3Vl {
        f64::from(v.deepstack)
            * f64::from(max_num_batched_tokens)
            * f64::from(arch.hidden)
            * model_bytes
    } else {
        0.0
    };
    tower + deepstack
}

/// What vLLM's profiling pass spends on the vision encoder of a multimodal model, per GPU (see
/// [`vllm_encoder_profile`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EncoderProfile {
    /// Dummy images the encoder runs on at once (`max_mm_items_per_batch` of the image modality).
    pub items: u32,
    /// Encoder-cache units (embeddings handed to the language model) of one image.
    pub tokens_per_item: u32,
    /// Tokens every encoder layer processes over the whole dummy batch.
    pub tower_tokens: f64,
    /// The batch's pixel values on the GPU, in the model dtype, bytes.
    pub pixel_bytes: f64,
    /// The encoder outputs kept in the encoder cache through the language model's dummy pass, bytes.
    pub output_bytes: f64,
    /// The tower's working set while it runs (one layer at a time, every image at once), bytes.
    pub forward_bytes: f64,
}

impl EncoderProfile {
    /// The peak while the encoder runs: the pixels and one layer's working set.
    pub fn encoder_peak_bytes(&self) -> f64 {
        self.pixel_bytes + self.forward_bytes
    }

    /// What stays alive beside the language model's dummy pass and the sampler: the pixels and the outputs.
    pub fn held_bytes(&self) -> f64 {
        self.pixel_bytes + self.output_bytes
    }
}

/// The multimodal part of vLLM V1's profiling pass for a model with a vision tower, or `None` for a text
/// model. Read from vLLM's sources (main branch as stored, the mechanism the 0.19.0 logs show):
///
/// - `GPUModelRunner.profile_run` (`vllm/v1/worker/gpu_model_runner.py`): before the dummy language-model
///   pass it takes the modality with the most tokens per item (`get_modality_with_max_tokens`), builds a
///   batch of `max_mm_items_per_batch` copies of the largest dummy item (`_get_mm_dummy_batch`: one item from
///   `get_dummy_mm_inputs`, replicated and batched onto the GPU by `group_and_batch_mm_kwargs`), runs
///   `embed_multimodal` on it at once, and stores every output in `self.encoder_cache`; then it runs
///   `_dummy_run(max_num_tokens)` and the sampler, and only afterwards clears the encoder cache. The dummy
///   batch's tensors stay referenced by the local `batched_dummy_mm_inputs` until the function returns, so
///   the pixels are alive through the language-model pass too.
/// - The pixels are in the model dtype: `InputProcessingContext.call_hf_processor` casts every floating
///   tensor the HF processor returns to `model_config.dtype` (`_postprocess_output`,
///   `vllm/multimodal/processing/context.py`).
/// - Items: `MultiModalBudget._get_max_items` (`vllm/multimodal/encoder_budget.py`):
///   `max(1, min(encoder_budget // tokens_per_item, max_num_seqs · max(1, min(limit, max_model_len //
///   tokens_per_item))))` with chunked prefill on (the V1 default); `encoder_budget` = min(compute budget,
///   cache size), both `max(max_num_batched_tokens, tokens_per_item)` unless set
///   (`compute_mm_encoder_budget`, `_get_max_num_batched_encoder_embeds`/`_get_encoder_cache_size`,
///   `vllm/v1/core/encoder_cache_manager.py`; older releases call them `max_num_encoder_input_tokens` and
///   `encoder_cache_size`, same defaults). `limit` is [`VLLM_DEFAULT_MM_LIMIT_PER_PROMPT`].
/// - `tokens_per_item`: the embeddings of the largest image (`get_mm_max_toks_per_item` sums
///   `get_num_embeds` of the dummy item's placeholders): [`super::vision::ImageTokens::llm`] of
///   [`vllm_largest_image_pixels`] (Gemma 3: `(num_crops + 1) · image_seq_length` = 256).
/// - Encoder outputs: `items · tokens_per_item · width · b`, `width` the projector's output
///   (`out_hidden`; Qwen3-VL concatenates its deepstack features: `out_hidden · (1 + deepstack)`,
///   `visual_dim`/`multiscale_dim` in `qwen3_vl.py`). Every GPU holds all of them.
/// - The tower's working set: [`super::vision::bytes`]'s `forward` for an inference job of `items` images at
///   the largest size (one layer's live tensors over every patch, SDPA/flash attention: vLLM's encoders use
///   `MMEncoderAttention` without score matrices), with the MLP width split over the GPUs (the attention
///   widths are left whole: an upper bound at TP > 1); the pixels from its `pixels` (float32 there) at the
///   model dtype.
///
/// Checked on the three Gemma 3 logs of vLLM 0.19.0 (4B, 12B, 27B on H100 at 8,192 batched tokens and 1,024
/// sequences; `tests/serve.rs`): 32 images of 896² pixels, 0.1436 GiB of pixels and 0.039/0.059/0.082 GiB of
/// outputs beside the language model's pass account for the logged peak within 0.01 GiB; the encoder's own
/// peak (2.81 GiB) is below it there. Not modelled: video inputs (Qwen's video modality is profiled instead
/// when its per-item tokens are larger, which needs a long `max_model_len`), a `--limit-mm-per-prompt` below
/// the default (0 skips the tower and its profiling) and `--mm-encoder-tp-mode data`.
pub fn vllm_encoder_profile(
    arch: &Architecture,
    tp: u32,
    act_bytes: f64,
    max_num_batched_tokens: u32,
    max_num_seqs: u32,
    max_model_len: u32,
) -> Option<EncoderProfile> {
    let v = arch.vision.as_ref()?;
    let largest = vllm_largest_image_pixels(v);
    let tokens = v.image_tokens(largest);
    let tok = (tokens.llm.round().max(1.0)).min(f64::from(u32::MAX)) as u32;
    let budget = max_num_batched_tokens.max(tok);
    let by_encoder = budget / tok;
    let per_prompt = VLLM_DEFAULT_MM_LIMIT_PER_PROMPT
        .min(max_model_len / tok)
        .max(1);
    let by_decoder = max_num_seqs.max(1).saturating_mul(per_prompt);
    let items = by_encoder.min(by_decoder).max(1);
    let tpf = f64::from(tp.max(1));
    let split = VisionTower {
        intermediate: ((f64::from(v.intermediate) / tpf).ceil() as u32).max(1),
        ..v.clone()
    };
    let job = Job {
        arch: Architecture {
            vision: Some(split),
            ..arch.clone()
        },
        mode: Mode::Inference,
        precision: if act_bytes >= 4.0 {
            Precision::Fp32
        } else {
            Precision::Pure16
        },
        inference: Inference {
            batch: 1,
            ..Inference::default()
        },
        vision: VisionSettings {
            images: items,
            train_tower: false,
            max_pixels: largest,
        },
        ..Job::default()
    };
    let b = super::vision::bytes(&job, &super::vision::Rates::default());
    let width = f64::from(v.out_hidden)
        * if v.family == VisionFamily::Qwen3Vl {
            1.0 + f64::from(v.deepstack)
        } else {
            1.0
        };
    Some(EncoderProfile {
        items,
        tokens_per_item: tok,
        tower_tokens: f64::from(items) * tokens.tower,
        pixel_bytes: b.pixels * act_bytes / 4.0,
        output_bytes: f64::from(items) * f64::from(tok) * width * act_bytes,
        forward_bytes: b.forward,
    })
}

/// The whole profiling peak of vLLM V1 on one GPU, bytes: for a text model [`vllm_activation_peak_bytes`];
/// with a vision tower the larger of the encoder's own peak and the language-model pass with the encoder's
/// pixels and outputs still held ([`vllm_encoder_profile`]; `profile_run` runs them one after the other and
/// vLLM measures the peak of the whole function).
pub fn vllm_profile_peak_bytes(
    arch: &Architecture,
    tp: u32,
    act_bytes: f64,
    max_num_batched_tokens: u32,
    max_num_seqs: u32,
    max_model_len: u32,
) -> f64 {
    let text =
        vllm_activation_peak_bytes(arch, tp, act_bytes, max_num_batched_tokens, max_num_seqs);
    match vllm_encoder_profile(
        arch,
        tp,
        act_bytes,
        max_num_batched_tokens,
        max_num_seqs,
        max_model_len,
    ) {
        Some(e) => (text + e.held_bytes()).max(e.encoder_peak_bytes()),
        None => text,
    }
}

/// CUDA-graph pool on one GPU, GiB: [`CUDA_GRAPH_BASE_GIB`] + [`CUDA_GRAPH_PER_LAYER_GIB`] × layers, 0 with
/// `enforce_eager`. vLLM captures the graphs after allocating the KV cache, so the pool comes out of the
/// `1 − gpu_memory_utilization` headroom (`gpu_model_runner.py:3476-3482` in 0.11.0; 0.19.0 estimates it
/// first but subtracts the estimate from the KV budget only with `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`,
/// off by default, `envs.py:1654-1656`).
pub fn cuda_graph_gib(arch: &Architecture, enforce_eager: bool) -> f64 {
    if enforce_eager {
        0.0
    } else {
        CUDA_GRAPH_BASE_GIB + CUDA_GRAPH_PER_LAYER_GIB * f64::from(arch.layers)
    }
}

/// vLLM's KV budget on one GPU, bytes: `total × gpu_memory_utilization − (weights + activation peak +
/// non-torch)` (V1: `vllm/v1/worker/gpu_worker.py:279-280` in 0.11.0, `:332-440` in 0.19.0, where the request
/// is `ceil(total × utilization)`, `v1/worker/utils.py:403-410`; v0 0.6.5–0.8: `vllm/worker/worker.py:225-290`
/// in 0.8.5). The total is the whole device, so memory other processes hold still counts against it.
pub fn vllm_kv_budget_bytes(
    total_gib: f64,
    utilization: f64,
    weights: f64,
    activation: f64,
    non_torch: f64,
) -> f64 {
    (total_gib * GIB * utilization).ceil() - (weights + activation + non_torch)
}

impl ServeRequest {
    /// Checks every size against `crate::model::limits`; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        let gib = |name: &str, v: Option<f64>, positive: bool| -> Result<(), String> {
            match v {
                Some(x)
                    if !x.is_finite()
                        || x < 0.0
                        || (positive && x <= 0.0)
                        || x > f64::from(MAX_MEMORY_GIB) =>
                {
                    Err(format!("{name}: {x} is outside 0…{MAX_MEMORY_GIB}"))
                }
                _ => Ok(()),
            }
        };
        gib("gpu_gib", self.gpu_gib, true)?;
        gib("weights_gib", self.weights_gib, false)?;
        gib("activation_peak_gib", self.activation_peak_gib, false)?;
        gib("non_torch_gib", self.non_torch_gib, false)?;
        gib("kv_cache_memory_gib", self.kv_cache_memory_gib, false)?;
        if let Some(u) = self.gpu_memory_utilization {
            if !(u > 0.0 && u <= 1.0) {
                return Err(format!("gpu_memory_utilization: {u} is outside 0…1"));
            }
        }
        let opt =
            |name: &str, v: Option<u32>, hi: u32| v.map_or(Ok(()), |v| in_range(name, v, 1, hi));
        opt("tensor_parallel", self.tensor_parallel, MAX_GPUS)?;
        opt("max_model_len", self.max_model_len, MAX_TOKENS)?;
        opt(
            "max_position_embeddings",
            self.max_position_embeddings,
            MAX_TOKENS,
        )?;
        opt("max_num_seqs", self.max_num_seqs, MAX_BATCH)?;
        opt(
            "max_num_batched_tokens",
            self.max_num_batched_tokens,
            MAX_TOKENS,
        )?;
        opt("block_size", self.block_size, 1 << 16)?;
        if self.gpu_name.as_ref().is_some_and(|n| n.len() > 256) {
            return Err("gpu_name: longer than 256 characters".into());
        }
        Ok(())
    }
}

/// Settings with the defaults filled in.
struct Resolved {
    engine: Engine,
    tp: u32,
    gpu_gib: f64,
    util: f64,
    max_model_len: u32,
    cap: u32,
    max_num_seqs: u32,
    mnbt: u32,
    block_size: u32,
    enforce_eager: bool,
    dtype: ModelDtype,
    weights: WeightFormat,
    kv_bytes: f64,
}

fn resolve(req: &ServeRequest) -> Result<Resolved, String> {
    req.check()?;
    let engine = req.engine.unwrap_or_default();
    let gpu_gib = req
        .gpu_gib
        .ok_or("gpu_gib: the GPU's memory is needed (give `gpu` or `gpu_gib`)")?;
    let max_model_len = req.max_model_len.or(req.max_position_embeddings).ok_or(
        "max_model_len: the model's max_position_embeddings is not known; give max_model_len",
    )?;
    let (default_mnbt, default_seqs) = vllm_batch_defaults(gpu_gib, req.gpu_name.as_deref());
    let mnbt = req.max_num_batched_tokens.unwrap_or(default_mnbt);
    // `max_num_seqs` never exceeds `max_num_batched_tokens` (`vllm/engine/arg_utils.py`).
    let max_num_seqs = req.max_num_seqs.unwrap_or(default_seqs).min(mnbt);
    let dtype = req.dtype.unwrap_or_default();
    let kv_bytes = match req.kv_dtype.unwrap_or_default() {
        ServeKvDtype::Auto => dtype.bytes(),
        ServeKvDtype::Bf16 => 2.0,
        ServeKvDtype::Fp8 => 1.0,
    };
    let block_size = req.block_size.unwrap_or(match engine {
        Engine::Sglang | Engine::Transformers => 1,
        Engine::Vllm => DEFAULT_BLOCK_SIZE,
    });
    Ok(Resolved {
        engine,
        tp: req.tensor_parallel.unwrap_or(1),
        gpu_gib,
        util: req
            .gpu_memory_utilization
            .unwrap_or(DEFAULT_GPU_MEMORY_UTILIZATION),
        max_model_len,
        cap: req.max_position_embeddings.unwrap_or(MAX_TOKENS),
        max_num_seqs,
        mnbt,
        block_size,
        enforce_eager: req.enforce_eager.unwrap_or(false),
        dtype,
        weights: req.weights.unwrap_or(dtype.weights()),
        kv_bytes,
    })
}

/// Why vLLM refuses a tensor-parallel degree for this shape, if it does (attention heads are split evenly;
/// KV heads too when there are at least as many as GPUs).
fn tp_refusal(arch: &Architecture, tp: u32) -> Option<String> {
    if arch.heads % tp != 0 {
        return Some(format!(
            "vLLM refuses the model: its {} attention heads are not divisible by tensor_parallel_size {tp}",
            arch.heads
        ));
    }
    if arch.attention == AttentionKind::Standard && arch.kv_heads >= tp && arch.kv_heads % tp != 0 {
        return Some(format!(
            "vLLM refuses the model: its {} KV heads are not divisible by tensor_parallel_size {tp}",
            arch.kv_heads
        ));
    }
    // A hybrid stack's recurrent heads are split too (`divide(num_heads, tp_world_size)` in
    // `MambaStateShapeCalculator`, `mamba_utils.py`; Mamba-1 splits its inner width).
    if let Some(hy) = arch.stack().filter(|hy| hy.recurrent_layers > 0) {
        let (what, n) = match hy.mixer {
            super::recurrent::Mixer::Mamba1 => ("Mamba channels", hy.inner),
            _ => ("recurrent heads", hy.heads),
        };
        if n % tp != 0 {
            return Some(format!(
                "vLLM refuses the model: its {n} {what} are not divisible by tensor_parallel_size {tp}"
            ));
        }
    }
    None
}

/// Plans serving `arch` with `req`. Errors only for missing or out-of-range inputs; a setup that does not fit
/// is a plan with `fits: false` and the engine's reason.
pub fn plan(arch: &Architecture, req: &ServeRequest) -> Result<ServePlan, String> {
    arch.check().map_err(|e| format!("arch.{e}"))?;
    let r = resolve(req)?;
    match r.engine {
        Engine::Vllm | Engine::Sglang => Ok(paged_plan(arch, req, &r)),
        Engine::Transformers => Ok(transformers_plan(arch, req, &r)),
    }
}

fn paged_plan(arch: &Architecture, req: &ServeRequest, r: &Resolved) -> ServePlan {
    let sglang = r.engine == Engine::Sglang;
    // The whole checkpoint is loaded: the language model and, for a VLM, its vision tower and projector.
    let weights = req.weights_gib.map_or_else(
        || {
            weights_bytes_per_gpu(arch, r.weights, r.tp)
                + vision_weights_bytes_per_gpu(arch, r.weights, r.tp, r.dtype.bytes(), r.mnbt)
        },
        |g| g * GIB,
    );
    let activation = req.activation_peak_gib.map_or_else(
        || {
            vllm_profile_peak_bytes(
                arch,
                r.tp,
                r.dtype.bytes(),
                r.mnbt,
                r.max_num_seqs,
                r.max_model_len,
            )
        },
        |g| g * GIB,
    );
    let non_torch = req.non_torch_gib.unwrap_or(non_torch_gib(r.tp)) * GIB;
    let graphs = cuda_graph_gib(arch, r.enforce_eager) * GIB;
    let requested = (r.gpu_gib * GIB * r.util).ceil();
    // SGLang: `--mem-fraction-static` of the total holds the weights and the KV pool; activations and CUDA
    // graphs live in the rest (`vllm-notes.md` §5; `python/sglang/srt/mem_cache/memory_pool.py`).
    let budget = match (req.kv_cache_memory_gib, sglang) {
        (Some(g), _) => g * GIB,
        (None, false) => vllm_kv_budget_bytes(r.gpu_gib, r.util, weights, activation, non_torch),
        (None, true) => requested - weights - non_torch,
    };
    // A hybrid stack's recurrent layers: vLLM keeps one page per running request in each, the attention
    // block size raised until an attention page holds a layer's state (`hybrid_block_size`).
    let recurrent = recurrent_layers(arch);
    let mamba_page = mamba_page_bytes(arch, r.tp, r.dtype.bytes());
    let block_size = if recurrent > 0 && !sglang {
        hybrid_block_size(
            kv_bytes_per_token_layer(arch, r.tp, r.kv_bytes),
            mamba_page,
            req.block_size,
        )
    } else {
        r.block_size
    };
    let mut layout = KvLayout::new(arch, r.tp, r.kv_bytes, block_size);
    if sglang {
        // SGLang's default pools keep every layer at full length (the hybrid sliding-window pool is opt-in).
        layout.full_layers = attention_layers(arch);
        layout.sliding_layers = 0;
    } else {
        layout.mamba_layers = recurrent;
    }
    // SGLang keeps recurrent states in a pool of their own (`MambaPool`): with its radix cache on (the
    // default) the memory left after the weights is split between that pool and the KV pool in the ratio
    // `mamba_full_memory_ratio` (0.9), each slot one request's conv state (model dtype) and SSM state
    // (`--mamba-ssm-dtype`, float32 by default), and it runs at most a third of the slots' requests
    // (`ModelRunnerKVCacheMixin.handle_max_mamba_cache`, `calculate_mamba_ratio`:
    // `MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3`, `python/sglang/srt/model_executor/
    // model_runner_kv_cache_mixin.py`; defaults in `server_args.py`).
    let (budget, sglang_mamba_slots) = match arch.stack() {
        Some(hy) if sglang && recurrent > 0 && req.kv_cache_memory_gib.is_none() => {
            let per_request = f64::from(recurrent)
                * super::recurrent::Hybrid {
                    fp32_state: true,
                    ..hy
                }
                .state_bytes_per_sequence_on(r.dtype.bytes(), r.tp);
            let pool = budget.max(0.0) * SGLANG_MAMBA_FULL_MEMORY_RATIO
                / (1.0 + SGLANG_MAMBA_FULL_MEMORY_RATIO);
            let slots = if per_request > 0.0 {
                (pool / per_request).floor()
            } else {
                0.0
            };
            (budget - slots * per_request, Some(slots))
        }
        _ => (budget, None),
    };
    let per_token =
        kv_bytes_per_token_layer(arch, r.tp, r.kv_bytes) * f64::from(attention_layers(arch));
    let (blocks, kv_tokens, kv_cache) = if sglang {
        // SGLang allocates `tokens + page_size` rows per layer: one padded slot.
        let tokens = if budget > per_token && per_token > 0.0 {
            ((budget / per_token).floor() as u64).saturating_sub(1)
        } else {
            0
        };
        (tokens, tokens, (tokens as f64 + 1.0) * per_token)
    } else {
        let blocks = layout.num_blocks(budget);
        (blocks, layout.reported_tokens(blocks), budget)
    };
    let blocks_per_request = layout.blocks_per_request(r.max_model_len, r.mnbt);
    let max_concurrency = layout.max_concurrency(blocks, r.max_model_len, r.mnbt);
    let max_concurrency = match sglang_mamba_slots {
        Some(slots) => max_concurrency.min((slots / 3.0).floor()),
        None => max_concurrency,
    };
    let fit_len = if sglang {
        // SGLang holds a request as long as its pool.
        kv_tokens.min(u64::from(r.cap)) as u32
    } else {
        layout.max_model_len_that_fits(budget.max(0.0), r.mnbt, r.cap)
    };
    let one_request = layout.bytes_for_one_request(r.max_model_len, r.mnbt);

    let engine_name = if sglang { "SGLang" } else { "vLLM" };
    let reason = if let Some(why) = tp_refusal(arch, r.tp) {
        Some(why)
    } else if r.max_model_len > r.cap {
        Some(format!(
            "{engine_name} refuses max_model_len {}: the model's max_position_embeddings is {} \
             (vLLM: 'User-specified max_model_len … is greater than the derived max_model_len'; \
             VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 overrides)",
            r.max_model_len, r.cap
        ))
    } else if weights + non_torch > r.gpu_gib * GIB {
        Some(format!(
            "the weights ({:.2} GiB per GPU) do not fit on the GPU ({:.2} GiB): torch.OutOfMemoryError \
             (CUDA out of memory) while loading the model",
            weights / GIB,
            r.gpu_gib
        ))
    } else if sglang && kv_tokens == 0 {
        Some(format!(
            "SGLang stops at startup: no memory is left for the KV pool under mem-fraction-static {} \
             ({:.2} GiB of weights and {:.2} GiB of other memory in {:.2} GiB)",
            r.util,
            weights / GIB,
            non_torch / GIB,
            requested / GIB
        ))
    } else if sglang && kv_tokens < u64::from(r.max_model_len) {
        Some(format!(
            "SGLang starts, but its KV pool holds {kv_tokens} tokens, fewer than one request of \
             max_model_len {}",
            r.max_model_len
        ))
    } else if !sglang && budget <= 0.0 {
        Some(format!(
            "vLLM stops at startup with ValueError: No available memory for the cache blocks \
             (check_enough_kv_cache_memory): the budget is {:.2} GiB after {:.2} GiB of weights, {:.2} GiB \
             of activations and {:.2} GiB of non-torch memory; raise gpu_memory_utilization",
            budget / GIB,
            weights / GIB,
            activation / GIB,
            non_torch / GIB
        ))
    } else if !sglang && one_request > budget {
        Some(format!(
            "vLLM stops at startup with ValueError: To serve at least one request with the models's max \
             seq len ({}), ({:.2} GiB KV cache is needed, which is larger than the available KV cache \
             memory ({:.2} GiB). Based on the available memory, the estimated maximum model length is {}. \
             Raise gpu_memory_utilization or lower max_model_len",
            r.max_model_len,
            one_request / GIB,
            budget / GIB,
            fit_len
        ))
    } else {
        None
    };

    let mut warnings = Vec::new();
    let process = requested + if sglang { 0.0 } else { graphs };
    if !sglang && process > r.gpu_gib * GIB {
        warnings.push(format!(
            "CUDA graphs (about {:.2} GiB) are captured after the KV cache, outside the gpu_memory_utilization \
             budget, and need more than the {:.2} GiB left on the GPU: capture may run out of memory; lower \
             gpu_memory_utilization or set enforce_eager",
            graphs / GIB,
            r.gpu_gib * (1.0 - r.util)
        ));
    }
    if sglang {
        let outside = activation + graphs;
        if outside > r.gpu_gib * GIB - requested {
            warnings.push(format!(
                "SGLang keeps activations and CUDA graphs (about {:.2} GiB) outside mem-fraction-static, but \
                 only {:.2} GiB is left: lower mem-fraction-static or --cuda-graph-max-bs",
                outside / GIB,
                r.gpu_gib * (1.0 - r.util)
            ));
        }
        if req.gpu_memory_utilization.is_none() {
            warnings.push(
                "SGLang picks mem-fraction-static from the GPU size and parallelism when it is not given; \
                 0.9 was assumed"
                    .to_string(),
            );
        }
    }
    let kinds = [
        layout.full_layers,
        layout.sliding_layers,
        layout.mamba_layers,
    ]
    .iter()
    .filter(|n| **n > 0)
    .count();
    if !sglang && kinds > 1 {
        let g = layout.layers_per_group();
        let (fg, sg) = layout.groups();
        let padded = (fg * g - layout.full_layers)
            + (sg * g - layout.sliding_layers)
            + (layout.mamba_groups() * g - layout.mamba_layers);
        if padded > 0 {
            warnings.push(format!(
                "vLLM pads the hybrid KV groups with {padded} empty layers (its 'Add {padded} padding layers' \
                 warning): that share of the pool is never used"
            ));
        }
    }

    ServePlan {
        engine: r.engine,
        tensor_parallel: r.tp,
        gpu_gib: r.gpu_gib,
        gpu_memory_utilization: r.util,
        max_model_len: r.max_model_len,
        max_num_seqs: r.max_num_seqs,
        max_num_batched_tokens: r.mnbt,
        block_size: layout.block_size,
        enforce_eager: r.enforce_eager,
        kv_dtype_bytes: r.kv_bytes,
        requested_gib: requested / GIB,
        weights_gib: weights / GIB,
        activation_peak_gib: activation / GIB,
        non_torch_gib: non_torch / GIB,
        cuda_graph_gib: graphs / GIB,
        kv_cache_gib: kv_cache / GIB,
        process_gib: process / GIB,
        kv_bytes_per_token: per_token,
        state_bytes_per_sequence: f64::from(recurrent) * mamba_page,
        page_bytes: layout.page_bytes,
        kv_groups: layout.group_count(),
        layers_per_group: layout.layers_per_group(),
        gpu_blocks: blocks,
        kv_tokens,
        blocks_per_request,
        max_concurrency,
        max_model_len_that_fits: fit_len,
        fits: reason.is_none(),
        reason,
        warnings,
    }
}

/// transformers `generate`: vramfit's inference estimate (`estimate.rs`: weights, prefill working set, a KV
/// cache that grows by concatenation, allocator reserve, CUDA context), searched for the largest batch of
/// `max_model_len`-token sequences (the whole context as prompt, one token generated) that fits the GPU.
fn transformers_plan(arch: &Architecture, req: &ServeRequest, r: &Resolved) -> ServePlan {
    let job_for = |len: u32, batch: u32| Job {
        arch: arch.clone(),
        mode: Mode::Inference,
        weights: r.weights,
        precision: if r.dtype == ModelDtype::Fp32 {
            Precision::Fp32
        } else {
            Precision::Pure16
        },
        gpus: r.tp,
        parallelism: if r.tp > 1 {
            Parallelism::Tensor
        } else {
            Parallelism::Ddp
        },
        inference: Inference {
            prompt_tokens: len.saturating_sub(1).max(1),
            new_tokens: u32::from(len > 1),
            batch,
            kv_dtype: if r.kv_bytes < 2.0 {
                KvDtype::Fp8
            } else {
                KvDtype::Bf16
            },
        },
        ..Job::default()
    };
    let have = r.gpu_gib * GIB;
    let fits = |len: u32, batch: u32| estimate(&job_for(len, batch)).fit_need <= have;
    let batch = largest_true(MAX_BATCH, |b| fits(r.max_model_len, b));
    let fit_len = largest_true(r.cap, |len| fits(len, 1));
    let one = estimate(&job_for(r.max_model_len, batch.max(1)));
    let at_one = estimate(&job_for(r.max_model_len, 1));
    let weights = req.weights_gib.map_or_else(
        || at_one.gpu_bytes(Component::Weights) + at_one.gpu_bytes(Component::WeightsQuantized),
        |g| g * GIB,
    );
    let non_torch =
        at_one.gpu_bytes(Component::CudaContext) + at_one.gpu_bytes(Component::AllocatorReserve);
    let kv = one.gpu_bytes(Component::KvCache);
    let per_token =
        kv_bytes_per_token_layer(arch, r.tp, r.kv_bytes) * f64::from(attention_layers(arch));
    let reason = if let Some(why) = tp_refusal(arch, r.tp) {
        Some(why)
    } else if batch == 0 {
        Some(format!(
            "transformers runs out of memory (torch.OutOfMemoryError: CUDA out of memory) on one sequence of \
             {} tokens: it needs about {:.2} GiB of the GPU's {:.2} GiB; the longest that fits is {fit_len}",
            r.max_model_len,
            at_one.fit_need / GIB,
            r.gpu_gib
        ))
    } else {
        None
    };
    ServePlan {
        engine: Engine::Transformers,
        tensor_parallel: r.tp,
        gpu_gib: r.gpu_gib,
        gpu_memory_utilization: 1.0,
        max_model_len: r.max_model_len,
        max_num_seqs: batch,
        max_num_batched_tokens: r.max_model_len,
        block_size: 1,
        enforce_eager: true,
        kv_dtype_bytes: r.kv_bytes,
        requested_gib: r.gpu_gib,
        weights_gib: weights / GIB,
        activation_peak_gib: at_one.gpu_bytes(Component::Temporary) / GIB,
        non_torch_gib: non_torch / GIB,
        cuda_graph_gib: 0.0,
        kv_cache_gib: kv / GIB,
        process_gib: one.fit_need / GIB,
        kv_bytes_per_token: per_token,
        state_bytes_per_sequence: f64::from(recurrent_layers(arch))
            * mamba_page_bytes(arch, r.tp, r.dtype.bytes()),
        page_bytes: per_token / f64::from(attention_layers(arch).max(1)),
        kv_groups: 1,
        layers_per_group: arch.layers,
        gpu_blocks: u64::from(batch) * u64::from(r.max_model_len),
        kv_tokens: u64::from(batch) * u64::from(r.max_model_len),
        blocks_per_request: u64::from(r.max_model_len),
        max_concurrency: f64::from(batch),
        max_model_len_that_fits: fit_len,
        fits: reason.is_none(),
        reason,
        warnings: vec![
            "transformers has no paged pool: this is the largest batch of full-length sequences generated \
             together (vramfit's inference estimate)"
                .to_string(),
        ],
    }
}

/// Largest `max_model_len` at which `users` requests of that length fit at once (concurrency ≥ users and the
/// startup check passes), capped at the model's `max_position_embeddings` when known; `None` if not even one
/// token does.
pub fn max_model_len_for_users(
    arch: &Architecture,
    req: &ServeRequest,
    users: u32,
) -> Result<Option<u32>, String> {
    in_range("users", users, 1, MAX_BATCH)?;
    let mut probe = req.clone();
    probe.max_model_len = Some(1);
    let cap = resolve(&probe)?.cap;
    let ok = |len: u32| {
        let mut q = req.clone();
        q.max_model_len = Some(len);
        plan(arch, &q).is_ok_and(|p| p.fits && p.max_concurrency >= f64::from(users))
    };
    let len = largest_true(cap, ok);
    Ok((len > 0).then_some(len))
}

/// Tensor-parallel degrees the GPU-count solver tries.
pub const TP_CHOICES: [u32; 4] = [1, 2, 4, 8];

/// Fewest GPUs (tensor parallel 1, 2, 4 or 8) that serve `users` concurrent requests of `context` tokens:
/// the plan at that degree, or `None` if even 8 do not.
pub fn fewest_gpus(
    arch: &Architecture,
    req: &ServeRequest,
    context: u32,
    users: u32,
) -> Result<Option<ServePlan>, String> {
    in_range("users", users, 1, MAX_BATCH)?;
    in_range("context", context, 1, MAX_TOKENS)?;
    for tp in TP_CHOICES {
        let mut q = req.clone();
        q.tensor_parallel = Some(tp);
        q.max_model_len = Some(context);
        let p = plan(arch, &q)?;
        if p.fits && p.max_concurrency >= f64::from(users) {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Mla, Moe};

    const KIB: f64 = 1024.0;

    fn h100(mml: u32) -> ServeRequest {
        ServeRequest {
            gpu_gib: Some(79.19),
            gpu_memory_utilization: Some(0.95),
            max_model_len: Some(mml),
            ..ServeRequest::default()
        }
    }

    #[test]
    fn llama_3_1_8b_kv_bytes_blocks_and_tokens_by_hand() {
        // 2 (K, V) · 8 KV heads · 128 · 2 B = 4 KiB per token per layer; × 32 layers = 128 KiB per token.
        let arch = Architecture::default();
        assert_eq!(kv_bytes_per_token_layer(&arch, 1, 2.0) * 32.0, 128.0 * KIB);
        // An 80 GiB budget: blocks = floor(80 GiB / (16 tokens · 128 KiB)) = 40,960; tokens = 655,360.
        let layout = KvLayout::new(&arch, 1, 2.0, 16);
        assert_eq!(layout.page_bytes, 64.0 * KIB);
        let blocks = layout.num_blocks(80.0 * GIB);
        assert_eq!(blocks, 40_960);
        assert_eq!(layout.reported_tokens(blocks), 655_360);
        // Concurrency at 8192 tokens: 40,960 / cdiv(8192, 16) = 40,960 / 512 = 80.
        assert_eq!(layout.max_concurrency(blocks, 8192, 8192), 80.0);
        // The logged 0.19.0 run: 58.11 GiB → floor(58.11 · 2^30 / 2 MiB) = 29,752 (vLLM printed 29,751 from
        // the unrounded figure); 29,751 / 2,048 blocks per 32,768-token request = 14.53x.
        assert_eq!(layout.num_blocks(58.11 * GIB), 29_752);
        assert!((layout.max_concurrency(29_751, 32_768, 8192) - 14.527).abs() < 1e-3);
    }

    #[test]
    fn llama_3_1_8b_on_an_80_gib_gpu_end_to_end_by_hand() {
        // 80 GiB × 0.9 = 72 GiB; weights 8,030,261,248 × 2 B = 14.957 GiB; activation at the ≥ 70 GiB
        // defaults (8192 tokens, 1024 sequences) 1.89 GiB; non-torch 0.25 GiB → KV ≈ 54.90 GiB.
        let p = plan(
            &Architecture::default(),
            &ServeRequest {
                gpu_gib: Some(80.0),
                max_model_len: Some(8192),
                ..ServeRequest::default()
            },
        )
        .unwrap();
        assert!((p.weights_gib - 8_030_261_248.0 * 2.0 / GIB).abs() < 1e-9);
        let budget = 72.0 - p.weights_gib - p.activation_peak_gib - 0.25;
        assert!((p.kv_cache_gib - budget).abs() < 1e-6);
        assert!((p.kv_cache_gib - 54.90).abs() < 0.01, "{}", p.kv_cache_gib);
        // tokens = floor(kv_bytes / (16 · 128 KiB)) · 16; concurrency = blocks / 512.
        let blocks = (p.kv_cache_gib * GIB / (16.0 * 128.0 * KIB)).floor() as u64;
        assert_eq!(p.gpu_blocks, blocks);
        assert_eq!(p.kv_tokens, blocks * 16);
        assert_eq!(p.max_concurrency, blocks as f64 / 512.0);
        assert!(p.fits && p.reason.is_none());
    }

    #[test]
    fn tensor_parallel_splits_kv_heads_and_replicates_them_below_one_per_gpu() {
        let arch = Architecture::default(); // 8 KV heads
        assert_eq!(kv_heads_per_gpu(&arch, 2), 4);
        assert_eq!(kv_heads_per_gpu(&arch, 8), 1);
        assert_eq!(kv_heads_per_gpu(&arch, 16), 1);
        assert_eq!(
            kv_bytes_per_token_layer(&arch, 16, 2.0),
            kv_bytes_per_token_layer(&arch, 8, 2.0)
        );
    }

    fn deepseek_v2_lite() -> Architecture {
        Architecture {
            layers: 27,
            hidden: 2048,
            heads: 16,
            kv_heads: 16,
            head_dim: 128,
            intermediate: 10944,
            vocab: 102_400,
            attention: AttentionKind::Mla,
            mla: Mla {
                q_lora_rank: 0,
                kv_lora_rank: 512,
                qk_nope_head_dim: 128,
                qk_rope_head_dim: 64,
                v_head_dim: 128,
            },
            moe: Some(Moe {
                experts: 64,
                active: 6,
                expert_intermediate: 1408,
                shared_intermediate: 2816,
                dense_layers: 1,
                shared_gate: false,
                peft: Default::default(),
            }),
            ..Architecture::default()
        }
    }

    #[test]
    fn mla_caches_the_latent_once_on_every_gpu() {
        // (512 + 64) · 2 B = 1,152 B per token per layer, no factor 2, the same at TP 1 and 4; × 27 = 31,104.
        let arch = deepseek_v2_lite();
        assert_eq!(kv_bytes_per_token_layer(&arch, 1, 2.0), 1152.0);
        assert_eq!(kv_bytes_per_token_layer(&arch, 4, 2.0), 1152.0);
        // The 0.19.0 log: 43.61 GiB / (16 · 1,152 B · 27 layers) = 94,09x blocks (logged 94,097).
        let layout = KvLayout::new(&arch, 1, 2.0, 16);
        assert_eq!(layout.page_bytes, 18_432.0);
        let blocks = layout.num_blocks(43.61 * GIB);
        assert!((94_090..=94_100).contains(&blocks), "{blocks}");
    }

    fn gemma_3_27b() -> Architecture {
        Architecture {
            layers: 62,
            hidden: 5376,
            heads: 32,
            kv_heads: 16,
            head_dim: 128,
            intermediate: 21504,
            vocab: 262_208,
            tied_embeddings: true,
            sliding_window: 1024,
            sliding_fraction: 5.0 / 6.0,
            norms_per_layer: 4,
            qk_norm: true,
            ..Architecture::default()
        }
    }

    #[test]
    fn gemma_3_hybrid_groups_tokens_and_concurrency_by_hand() {
        // 62 layers: ⌊62/6⌋ = 10 full, 52 sliding. Groups of 10: 1 full + cdiv(52, 10) = 6 sliding = 7 groups,
        // 8 padding layers. The 0.19.0 log: 15,997 blocks print 15,997 // 7 · 16 = 36,560 tokens; a request of
        // 8,192 tokens needs 512 full blocks + 6 · (cdiv(min(1023 + 8192, 8192), 16) + 1 = 513) = 3,590
        // blocks: 15,997 / 3,590 = 4.46x.
        let layout = KvLayout::new(&gemma_3_27b(), 1, 2.0, 16);
        assert_eq!((layout.full_layers, layout.sliding_layers), (10, 52));
        assert_eq!(layout.layers_per_group(), 10);
        assert_eq!(layout.groups(), (1, 6));
        assert_eq!(layout.reported_tokens(15_997), 36_560);
        assert_eq!(layout.blocks_per_request(8192, 8192), 3_590);
        assert!((layout.max_concurrency(15_997, 8192, 8192) - 4.456).abs() < 1e-3);
        // Blocks: 19.53 GiB / (16 · 16 heads · 128 · 2 · 2 B = 128 KiB · 10 layers) = 15,998.
        assert_eq!(layout.num_blocks(19.53 * GIB), 15_998);
    }

    #[test]
    fn gemma_2_alternates_and_mistral_slides_everywhere() {
        let gemma2 = Architecture {
            layers: 42,
            sliding_window: 4096,
            sliding_fraction: 0.5,
            ..Architecture::default()
        };
        let l = KvLayout::new(&gemma2, 1, 2.0, 16);
        assert_eq!((l.full_layers, l.sliding_layers), (21, 21));
        // 512 + (cdiv(min(4095 + 8192, 8192), 16) + 1) = 1,025 blocks: 21,110 / 1,025 = 20.60x (logged).
        assert_eq!(l.blocks_per_request(8192, 8192), 1025);
        let mistral = Architecture {
            sliding_window: 4096,
            sliding_fraction: 1.0,
            ..Architecture::default()
        };
        let l = KvLayout::new(&mistral, 1, 2.0, 16);
        assert_eq!(
            (l.full_layers, l.sliding_layers, l.group_count()),
            (0, 32, 1)
        );
        // At 32k context with 2,048-token steps a request needs cdiv(4095 + 2048, 16) + 1 = 385 blocks per
        // layer, not 2,048.
        assert_eq!(l.blocks_per_request(32_768, 2048), 385);
    }

    #[test]
    fn the_budget_is_utilization_of_the_total_less_the_measured_terms() {
        // vLLM 0.19.0 Llama 3.1 8B on H100 (llm-d-planner run): 79.19 · 0.95 − (14.99 + 1.89 + 0.25) = 58.10.
        let b = vllm_kv_budget_bytes(79.19, 0.95, 14.99 * GIB, 1.89 * GIB, 0.25 * GIB) / GIB;
        assert!((b - 58.1005).abs() < 1e-3, "{b}");
        // The same through a plan with the measured terms given.
        let req = ServeRequest {
            weights_gib: Some(14.99),
            activation_peak_gib: Some(1.89),
            non_torch_gib: Some(0.25),
            ..h100(8192)
        };
        let p = plan(&Architecture::default(), &req).unwrap();
        assert!((p.kv_cache_gib - 58.1005).abs() < 1e-3);
        // floor(58.1005 · 2^30 / (64 KiB · 32 layers)) = floor(29,747.5).
        assert_eq!(p.gpu_blocks, 29_747);
        assert!(p.fits);
    }

    #[test]
    fn the_activation_model_at_the_logged_points() {
        // Llama 3.1 8B, 8192 tokens, 1024 sequences: sampler 1024 · 128,256 · 14.46 B + 8192 · 4096 · 2 B
        // = 1.77 + 0.0625 GiB, + 0.06 fixed = 1.89 GiB (logged 1.89); the same at TP 4 (logged 1.89).
        let arch = Architecture::default();
        let a = vllm_activation_peak_bytes(&arch, 1, 2.0, 8192, 1024) / GIB;
        assert!((a - 1.89).abs() < 0.01, "{a}");
        assert_eq!(
            a,
            vllm_activation_peak_bytes(&arch, 4, 2.0, 8192, 1024) / GIB
        );
        // vLLM v0, 20,000 tokens at once, 256 sequences: the forward pass wins, 20,000 · 2 · (3 · 4096 + 3 ·
        // 14,336) B = 2.06 GiB + 0.06 (#10517: 17.06 − 14.99 = 2.07).
        let a = vllm_activation_peak_bytes(&arch, 1, 2.0, 20_000, 256) / GIB;
        assert!((a - 2.12).abs() < 0.01, "{a}");
        // DeepSeek-V2-Lite: sampler 1.47 GiB + MoE workspace 8192 · 6 · (2816 + 2048) · 2 B = 0.45 GiB
        // (logged 1.93).
        let a = vllm_activation_peak_bytes(&deepseek_v2_lite(), 1, 2.0, 8192, 1024) / GIB;
        assert!((a - 1.93).abs() < 0.03, "{a}");
    }

    #[test]
    fn weights_follow_the_estimate_weights_model() {
        for (w, tp) in [
            (WeightFormat::Bf16, 1),
            (WeightFormat::Fp8, 2),
            (WeightFormat::GptqInt4, 4),
            (WeightFormat::Fp32, 1),
            (WeightFormat::Mxfp4, 2),
        ] {
            // MXFP4 on gpt-oss's experts too, not only on the dense default (where it quantizes nothing).
            for arch in [
                Architecture::default(),
                crate::catalog::model("gpt-oss-20b").unwrap().arch().clone(),
            ] {
                let job = Job {
                    arch,
                    mode: Mode::Inference,
                    weights: w,
                    precision: if w == WeightFormat::Fp32 {
                        Precision::Fp32
                    } else {
                        Precision::Pure16
                    },
                    gpus: tp,
                    parallelism: Parallelism::Tensor,
                    ..Job::default()
                };
                let e = estimate(&job);
                let from_estimate =
                    e.gpu_bytes(Component::Weights) + e.gpu_bytes(Component::WeightsQuantized);
                let mine = weights_bytes_per_gpu(&job.arch, w, tp);
                assert!(
                    (mine - from_estimate).abs() < 1.0,
                    "{w:?}: {mine} vs {from_estimate}"
                );
            }
        }
    }

    #[test]
    fn defaults_follow_vllm_serve() {
        assert_eq!(
            vllm_batch_defaults(79.19, Some("NVIDIA H100 80GB HBM3")),
            (8192, 1024)
        );
        assert_eq!(
            vllm_batch_defaults(79.15, Some("NVIDIA A100-SXM4-80GB")),
            (2048, 256)
        );
        assert_eq!(vllm_batch_defaults(23.6, None), (2048, 256));
        let p = plan(
            &Architecture::default(),
            &ServeRequest {
                gpu_gib: Some(23.58),
                max_position_embeddings: Some(131_072),
                ..ServeRequest::default()
            },
        )
        .unwrap();
        assert_eq!(
            (
                p.max_model_len,
                p.max_num_seqs,
                p.max_num_batched_tokens,
                p.block_size
            ),
            (131_072, 256, 2048, 16)
        );
        assert_eq!(p.gpu_memory_utilization, 0.9);
        assert!(plan(&Architecture::default(), &ServeRequest::default())
            .unwrap_err()
            .starts_with("gpu_gib"));
        let no_len = ServeRequest {
            gpu_gib: Some(80.0),
            ..ServeRequest::default()
        };
        assert!(plan(&Architecture::default(), &no_len)
            .unwrap_err()
            .starts_with("max_model_len"));
    }

    #[test]
    fn a_negative_budget_and_a_too_long_context_are_refused_as_vllm_would() {
        // Llama 3.1 8B in bf16 on a 16 GiB card: 14.4 GiB requested, 15 GiB of weights.
        let small = ServeRequest {
            gpu_gib: Some(16.0),
            max_model_len: Some(8192),
            ..ServeRequest::default()
        };
        let p = plan(&Architecture::default(), &small).unwrap();
        assert!(!p.fits && p.kv_cache_gib < 0.0);
        assert!(p
            .reason
            .as_ref()
            .unwrap()
            .contains("No available memory for the cache blocks"));
        // On a 24 GiB card at 131,072 tokens: 16 GiB of KV needed for one request, ~4.3 GiB available.
        let long = ServeRequest {
            gpu_gib: Some(23.58),
            max_model_len: Some(131_072),
            ..ServeRequest::default()
        };
        let p = plan(&Architecture::default(), &long).unwrap();
        assert!(!p.fits);
        let why = p.reason.unwrap();
        assert!(why.contains("To serve at least one request"), "{why}");
        // The estimated maximum length is what the budget holds: budget / 128 KiB, block-rounded down.
        let budget = p.kv_cache_gib * GIB;
        let expect = ((budget / (16.0 * 128.0 * KIB)).floor() as u32) * 16;
        assert_eq!(p.max_model_len_that_fits, expect);
        assert!(why.contains(&format!("is {expect}")), "{why}");
    }

    #[test]
    fn solvers_find_the_longest_context_and_the_fewest_gpus() {
        let arch = Architecture::default();
        let req = ServeRequest {
            max_position_embeddings: Some(131_072),
            ..h100(8192)
        };
        let len = max_model_len_for_users(&arch, &req, 32).unwrap().unwrap();
        let at = |l: u32| {
            let mut q = req.clone();
            q.max_model_len = Some(l);
            plan(&arch, &q).unwrap()
        };
        assert!(at(len).max_concurrency >= 32.0);
        assert!(at(len + 1).max_concurrency < 32.0);
        // Llama 3.1 70B in bf16 (131 GiB of weights) at 8k × 16 users: on 2 H100s 65.7 GiB of weights per
        // GPU leave ~5.5 GiB of KV (about 4 requests); on 4, ~38 GiB (about 60).
        let l70 = Architecture {
            layers: 80,
            hidden: 8192,
            heads: 64,
            kv_heads: 8,
            intermediate: 28672,
            ..Architecture::default()
        };
        let p = fewest_gpus(&l70, &req, 8192, 16).unwrap().unwrap();
        assert_eq!(p.tensor_parallel, 4);
        assert!(fewest_gpus(&l70, &req, 8192, 100_000).unwrap().is_none());
    }

    #[test]
    fn enforce_eager_drops_the_graphs_and_fp8_doubles_the_tokens() {
        let arch = Architecture::default();
        let eager = plan(
            &arch,
            &ServeRequest {
                enforce_eager: Some(true),
                ..h100(8192)
            },
        )
        .unwrap();
        assert_eq!(eager.cuda_graph_gib, 0.0);
        let graphs = plan(&arch, &h100(8192)).unwrap();
        assert!((graphs.cuda_graph_gib - (0.40 + 0.0153 * 32.0)).abs() < 1e-9);
        let fp8 = plan(
            &arch,
            &ServeRequest {
                kv_dtype: Some(ServeKvDtype::Fp8),
                ..h100(8192)
            },
        )
        .unwrap();
        assert!(
            fp8.gpu_blocks / 2 == graphs.gpu_blocks || fp8.gpu_blocks / 2 + 1 == graphs.gpu_blocks
        );
    }

    #[test]
    fn sglang_and_transformers_give_plans() {
        let arch = Architecture::default();
        let s = plan(
            &arch,
            &ServeRequest {
                engine: Some(Engine::Sglang),
                ..h100(8192)
            },
        )
        .unwrap();
        // No activation in SGLang's budget: more KV than vLLM's at the same fraction.
        let v = plan(&arch, &h100(8192)).unwrap();
        assert!(s.kv_cache_gib > v.kv_cache_gib && s.fits);
        assert_eq!(s.block_size, 1);
        let t = plan(
            &arch,
            &ServeRequest {
                engine: Some(Engine::Transformers),
                ..h100(8192)
            },
        )
        .unwrap();
        assert!(t.fits && t.max_concurrency >= 1.0 && t.max_concurrency < v.max_concurrency);
        assert!(t.max_model_len_that_fits > 8192);
    }

    #[test]
    fn out_of_range_requests_name_the_field_and_extremes_stay_finite() {
        let arch = Architecture::default();
        for (field, spoil) in [
            (
                "gpu_gib",
                ServeRequest {
                    gpu_gib: Some(f64::NAN),
                    ..h100(8)
                },
            ),
            (
                "gpu_memory_utilization",
                ServeRequest {
                    gpu_memory_utilization: Some(1.5),
                    ..h100(8)
                },
            ),
            (
                "tensor_parallel",
                ServeRequest {
                    tensor_parallel: Some(0),
                    ..h100(8)
                },
            ),
            (
                "max_model_len",
                ServeRequest {
                    max_model_len: Some(u32::MAX),
                    ..h100(8)
                },
            ),
            (
                "block_size",
                ServeRequest {
                    block_size: Some(0),
                    ..h100(8)
                },
            ),
        ] {
            let err = plan(&arch, &spoil).unwrap_err();
            assert!(err.starts_with(field), "{field}: {err}");
        }
        let huge = ServeRequest {
            gpu_gib: Some(f64::from(MAX_MEMORY_GIB)),
            max_model_len: Some(MAX_TOKENS),
            max_num_batched_tokens: Some(MAX_TOKENS),
            max_num_seqs: Some(MAX_BATCH),
            tensor_parallel: Some(MAX_GPUS),
            block_size: Some(1),
            ..ServeRequest::default()
        };
        let p = plan(&gemma_3_27b(), &huge).unwrap();
        assert!(p.kv_cache_gib.is_finite() && p.max_concurrency.is_finite());
        let tiny = ServeRequest {
            gpu_gib: Some(1e-6),
            ..h100(1)
        };
        let p = plan(&arch, &tiny).unwrap();
        assert!(!p.fits && p.max_concurrency == 0.0 && p.max_model_len_that_fits == 0);
    }
}
