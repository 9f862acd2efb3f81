//! Assembles a job's per-GPU breakdown, the three measured totals and host RAM.

use super::activations::{
    act_bytes, adapter_bytes_per_layer, eager_scores_per_token, final_norm_bytes_per_token,
    largest_layer_bytes_per_token, layer_backward_bytes_per_token, layer_bytes_per_token,
    loss_bytes_per_logit, residual_bytes,
};
use super::arch::{AttentionKind, ParamCounts};
use super::band::{band, Band};
use super::full_tuning;
use super::job::{
    Checkpointing, FrozenSharding, Job, Mode, Offload, OffloadDevice, Optimizer, Parallelism,
    Precision, WeightFormat,
};
use super::peft;
use crate::bytes::GIB;
use serde::{Deserialize, Serialize};

/// One named part of GPU memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    /// Quantized base weights (4/8-bit linear layers).
    WeightsQuantized,
    /// Weights kept in 16-bit (or fp32): everything when unquantized, else embeddings, LM head, norms.
    Weights,
    /// LoRA/DoRA adapter weights (fp32, PEFT's default `autocast_adapter_dtype`).
    Adapters,
    /// Gradients of trainable parameters.
    Gradients,
    /// fp32 master copy of trainable weights (mixed precision with 16-bit working weights).
    MasterWeights,
    /// Optimizer states (Adam moments etc.).
    OptimizerStates,
    /// Activations that decoder layers keep for backward.
    Activations,
    /// Eager-attention score/probability matrices.
    AttentionScores,
    /// Logits and the cross-entropy loss buffers.
    Logits,
    /// Inference key/value cache.
    KvCache,
    /// Fixed-size state of a hybrid model's recurrent layers (Mamba, Gated DeltaNet): per sequence, a
    /// convolution window and the SSM state, in place of a KV cache (`recurrent::Hybrid`).
    RecurrentState,
    /// Short-lived buffers: optimizer-step temporaries, ZeRO-3 gathers, 4-bit dequantization, prefill.
    Temporary,
    /// CUDA context, cuBLAS/cuDNN workspaces and kernels: seen by nvidia-smi, not by PyTorch.
    CudaContext,
    /// The frozen reference model of DPO, KTO or GRPO (a second copy of the weights).
    ReferenceModel,
    /// A colocated inference engine's share of the GPU (GRPO with vLLM in `colocate` mode).
    ServingEngine,
    /// PPO's value model (critic): its weights, gradients, optimizer states and activations, or a value head
    /// on the policy's backbone with PEFT.
    ValueModel,
    /// PPO's frozen reward model: a model of its own, or a reward adapter on the policy's backbone with PEFT.
    RewardModel,
    /// A vision-language model's vision tower and projector (`vision::bytes`): their weights, the batch's
    /// pixels, and what the tower keeps while it runs or trains (activations, gradients, optimizer states).
    VisionTower,
    /// Memory PyTorch's caching allocator holds but no tensor uses (fragmentation, cached blocks).
    AllocatorReserve,
    /// Cached blocks left by tensors of other shapes (variable-length batches, a growing KV cache). A roomy
    /// GPU shows them in `max_memory_reserved`, but before reporting out-of-memory the allocator frees every
    /// unused cached block and retries (`c10/cuda/CUDACachingAllocator.cpp`, `release_cached_blocks`), so
    /// they do not decide whether a job fits.
    AllocatorCache,
}

impl Component {
    /// Every component, in display order (bottom of the stacked bar first).
    pub const ALL: [Component; 15] = [
        Component::WeightsQuantized,
        Component::Weights,
        Component::Adapters,
        Component::MasterWeights,
        Component::Gradients,
        Component::OptimizerStates,
        Component::Activations,
        Component::AttentionScores,
        Component::Logits,
        Component::KvCache,
        Component::RecurrentState,
        Component::Temporary,
        Component::AllocatorReserve,
        Component::AllocatorCache,
        Component::CudaContext,
    ];
}

/// Where the peak happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Start of backward: every saved activation and the loss buffers alive.
    Backward,
    /// End of backward: every gradient stored, a tied embedding's two gradients being summed.
    EndOfBackward,
    /// Optimizer step: gradients, states and step temporaries alive.
    OptimizerStep,
    /// Inference prefill (prompt processing).
    Prefill,
    /// Decoding with a full KV cache: an RL job's rollout (GRPO, PPO) before its training pass.
    Generation,
    /// A vision-language model's vision tower encoding the batch's images, before the language model runs.
    VisionEncoder,
}

/// One named part of host RAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostComponent {
    /// Python, PyTorch and CUDA libraries, per process.
    Runtime,
    /// Reading the checkpoint while loading weights.
    WeightLoading,
    /// Optimizer states and master weights offloaded to the CPU (pinned).
    OffloadedOptimizer,
    /// Parameters offloaded to the CPU.
    OffloadedParams,
    /// Checkpointed activations offloaded to the CPU.
    OffloadedActivations,
    /// The dataset held in memory.
    Dataset,
    /// Gathering a full state dict to save a checkpoint.
    CheckpointSave,
}

/// A warning about the job itself, as data (the page translates it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Warning {
    /// QLoRA needs a quantized base (bitsandbytes NF4/FP4/int8, GPTQ, AWQ); a 16-bit format was taken as NF4.
    QloraNeedsQuantizedBase,
    /// ZeRO/FSDP with one GPU shards nothing.
    ShardingNeedsGpus,
    /// Parameter offload needs ZeRO-3.
    ParamOffloadNeedsZero3,
    /// Training GPTQ/AWQ weights directly is not supported; they are trained as frozen bases.
    QuantizedFullTraining,
    /// A size was zero and was treated as one.
    ZeroSize,
    /// The sequence is longer than the model's learned position table; it was cut to that length.
    SeqBeyondPositions,
    /// A sample's image tokens do not fit in its sequence; the sequence was lengthened to hold them.
    ImagesBeyondSequence,
}

/// An amount of one component.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Part<C> {
    pub component: C,
    pub bytes: f64,
}

/// The model's answer for one job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The busiest GPU's memory at its peak, by component (components of 0 bytes omitted).
    pub gpu: Vec<Part<Component>>,
    /// Peak of live tensors (`torch.cuda.max_memory_allocated`), bytes.
    pub peak_allocated: f64,
    /// Peak held by PyTorch's caching allocator (`torch.cuda.max_memory_reserved`), bytes.
    pub peak_reserved: f64,
    /// What nvidia-smi shows for the process: reserved + CUDA context (+ paged optimizer states), bytes.
    pub device_total: f64,
    /// What one GPU must have for the job to run, bytes: the device total less the cached blocks of other
    /// shapes ([`Component::AllocatorCache`]), which the allocator frees and retries with before it
    /// reports out-of-memory.
    pub fit_need: f64,
    /// The likely range of `fit_need`: the spread of measured peaks around the model's predictions on
    /// reference runs of this kind of job (see [`super::band`]).
    pub fit_band: Band,
    /// When the peak happens.
    pub phase: Phase,
    /// Host RAM for the whole machine (all ranks), by component.
    pub host: Vec<Part<HostComponent>>,
    /// Host RAM total, bytes.
    pub host_total: f64,
    /// Parameter counts of the model.
    pub params: ParamCounts,
    /// Trainable parameters (the vision tower's included).
    pub trainable_params: f64,
    /// Parameters of the vision tower and projector (0 for a text model; not in `params`).
    #[serde(default)]
    pub vision_params: f64,
    /// Problems with the job as given.
    pub warnings: Vec<Warning>,
}

impl Estimate {
    /// Bytes of one GPU component (0 when absent).
    pub fn gpu_bytes(&self, c: Component) -> f64 {
        self.gpu
            .iter()
            .filter(|p| p.component == c)
            .map(|p| p.bytes)
            .sum()
    }
}

/// CUDA context, cuBLAS workspace and loaded kernels: what nvidia-smi shows beyond PyTorch's reserved
/// memory. ~0.5 GiB with CUDA ≥ 11.7 lazy module loading on an A100/H100, 0.7–1.3 GiB without it
/// (PyTorch "CUDA semantics" notes; `shared/design/memory-model.md` §7). One constant, fit once.
pub const CUDA_CONTEXT_GIB: f64 = 0.9;

/// Fixed part of the caching allocator's unused reserve (rounding to 2 MiB blocks, cached small-block
/// pools, the 20 MiB large-block split granularity). Fit once on the shared reference cases.
pub const ALLOCATOR_FIXED_GIB: f64 = 0.3;

/// Share of short-lived memory (activations, logits, temporaries) that the caching allocator keeps reserved
/// but unused at the peak: freed blocks are cached and split, so reserved exceeds allocated by a fraction of
/// what churns. Fit once on the shared reference cases (`memory-model.md` §11: "about half").
pub const ALLOCATOR_TRANSIENT_SHARE: f64 = 0.35;

/// Share of the short-lived memory kept reserved but unused when batches vary in length. The caching allocator
/// keeps the blocks it carved for earlier, differently shaped batches; a block cached for one size is split
/// for a smaller request but never merged across segments for a larger one, so new segments are allocated
/// (PyTorch "CUDA semantics" notes on `expandable_segments`: changing allocation sizes fragment the cache).
/// About one more copy of the transient working set. Set from that argument, then checked once on the
/// reference runs with variable-length data and a reserved-memory reading (0.7, 1.0 and 1.3 were tried; the
/// tier A/B 90th-percentile error moved by about one point between them).
pub const ALLOCATOR_VARIABLE_SHARE: f64 = 1.0;

/// Host RAM of one training/inference process: Python, PyTorch with its CUDA libraries (cuBLAS, cuDNN,
/// NCCL are several GiB of mapped code, mostly resident) and the tokenizer. Typical RSS, ≈ 3 GiB.
pub const HOST_RUNTIME_GIB: f64 = 3.0;

/// Bytes of gradient per trainable parameter.
fn grad_bytes(job: &Job) -> f64 {
    match job.precision {
        Precision::Pure16 => 2.0,
        // AMP on fp32 weights (HF Trainer) and DeepSpeed's fp32 gradient partitions both hold fp32 grads
        // (DeepSpeed `estimate_zero2_model_states_mem_needs` counts 4 B).
        Precision::Mixed | Precision::Fp32 => 4.0,
    }
}

/// Optimizer state bytes per trainable parameter stepped in fp32, and whether they live in paged (managed)
/// memory.
///
/// AdamW: two fp32 moments, 8 B (Loshchilov & Hutter; torch `AdamW` `exp_avg`, `exp_avg_sq`). 16-bit states: 4 B.
/// bitsandbytes 8-bit Adam: two uint8 states + fp32 absmax per 2048-element block ≈ 2.004 B, only for
/// tensors of ≥ 4096 elements (`bnb.optim.Adam8bit`, `min_8bit_size`). Paged variants keep the same states in
/// CUDA managed memory that PyTorch's allocator does not count. SGD momentum and Lion: one buffer, 4 B.
/// Adafactor (HF default `beta1=None`): factored second moment, `rows + cols` floats per matrix ≈ 4·2/h B.
fn optimizer_bytes(job: &Job) -> (f64, bool) {
    let h = f64::from(job.arch.hidden.max(1));
    match job.optimizer {
        Optimizer::Adamw => (8.0, false),
        Optimizer::Adamw16 => (4.0, false),
        Optimizer::Adamw8bit => (2.0 + 8.0 / 2048.0, false),
        Optimizer::PagedAdamw => (8.0, true),
        Optimizer::PagedAdamw8bit => (2.0 + 8.0 / 2048.0, true),
        Optimizer::Adafactor => (8.0 / h, false),
        Optimizer::SgdMomentum | Optimizer::Lion => (4.0, false),
        Optimizer::Sgd | Optimizer::None | Optimizer::Lomo => (0.0, false),
        // GaLore/APOLLO: full AdamW for what they do not project (embeddings, norms, LM head); the decoder
        // weights' projected states are added in `estimate` (`full_tuning::projected_state_elements`).
        Optimizer::Galore | Optimizer::Apollo => (8.0, false),
        // Adam-mini keeps Adam's first moment and one second-moment value per block (a head, a neuron):
        // Zhang et al. 2024, sec. 2; the second moment is negligible.
        Optimizer::AdamMini => (4.0, false),
        // AdaLomo: Adafactor's factored second moment, no first moment (Lv et al. 2023, "AdaLomo").
        Optimizer::AdaLomo => (8.0 / h, false),
    }
}

/// Optimizer state bytes per trainable parameter when the optimizer steps 16-bit parameters directly (pure
/// 16-bit training, no fp32 master copy).
///
/// torch optimizers create their states with `torch.zeros_like(p)` (`torch/optim/adamw.py` `_init_group`,
/// `sgd.py`, HF `Adafactor` `.to(grad)`), so the moments take the parameter's dtype: AdamW's two moments are
/// 2 × 2 B on bf16 weights, half the fp32 figure. bitsandbytes' 8-bit states are uint8 whatever the
/// parameter dtype, so they do not shrink.
fn optimizer_bytes_16bit(job: &Job) -> f64 {
    let (fp32, _) = optimizer_bytes(job);
    match job.optimizer {
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => fp32,
        Optimizer::Adamw16 => 4.0,
        _ => fp32 / 2.0,
    }
}

/// Trainable parameters, and the share of them that are adapters (rather than base weights).
///
/// LoRA on a `d_in × d_out` module adds `r·(d_in + d_out)` (Hu et al. 2021); DoRA adds a magnitude vector of
/// `d_out` (Liu et al. 2024). `modules_to_save` trains full copies of the embedding / LM head.
/// Freeze-tuning trains the last n decoder layers (LLaMA-Factory `freeze_trainable_layers`).
fn trainable(job: &Job, p: &ParamCounts) -> (f64, f64) {
    let layers = f64::from(job.arch.layers);
    match job.mode {
        Mode::Inference => (0.0, 0.0),
        Mode::Full => (p.total, 0.0),
        Mode::Freeze => {
            let n = f64::from(job.freeze_trainable_layers.min(job.arch.layers));
            (n * p.per_layer, 0.0)
        }
        Mode::Badam | Mode::Lisa => (full_tuning::active_params(job, p), 0.0),
        Mode::Lora | Mode::Qlora => {
            let method = job.lora.method;
            let mut adapters = 0.0;
            for (m, d_in, d_out) in job.arch.linear_modules() {
                if method.is_prompt() || !job.lora.targets.contains(&m) || d_in <= 0.0 {
                    continue;
                }
                // PEFT adapts every expert of an MoE layer's gate/up/down (and the shared expert).
                let copies = job.arch.expert_copies(m);
                let per_copy_in = d_in / copies;
                let dora = if job.lora.dora && method == peft::Method::Lora {
                    d_out
                } else {
                    0.0
                };
                let ff = peft::is_feed_forward(m);
                adapters += copies
                    * (peft::module_params(method, job.lora.rank, per_copy_in, d_out, ff) + dora);
            }
            adapters *= layers;
            adapters += peft::prompt_params(job, &job.arch);
            let mut full = 0.0;
            if job.lora.train_embed {
                full += p.embedding;
            }
            if job.lora.train_lm_head {
                full += if p.lm_head > 0.0 {
                    p.lm_head
                } else {
                    p.embedding
                };
            }
            (adapters + full, adapters)
        }
    }
}

/// Adapter parameters that are stored but not trained: LoRA-FA's frozen `lora_A` (`r·d_in` per module) and
/// VeRA's `vera_A`/`vera_B`, one pair shared by every adapted module and sized by the largest input and
/// output widths among them (PEFT `vera/model.py` `_find_dim`).
fn frozen_adapter_params(job: &Job) -> f64 {
    if !matches!(job.mode, Mode::Lora | Mode::Qlora) {
        return 0.0;
    }
    let r = f64::from(job.lora.rank);
    let targeted = job
        .arch
        .linear_modules()
        .into_iter()
        .filter(|(m, d_in, _)| job.lora.targets.contains(m) && *d_in > 0.0);
    match job.lora.method {
        peft::Method::LoraFa => {
            targeted.map(|(_, d_in, _)| r * d_in).sum::<f64>() * f64::from(job.arch.layers)
        }
        peft::Method::Vera => {
            let (max_in, max_out) = targeted
                .fold((0.0_f64, 0.0_f64), |(i, o), (_, d_in, d_out)| {
                    (i.max(d_in), o.max(d_out))
                });
            r * (max_in + max_out)
        }
        _ => 0.0,
    }
}

/// GPUs one model copy is spread over for sharding (ZeRO/FSDP), pipeline and tensor parallelism.
fn degree(job: &Job) -> f64 {
    f64::from(job.gpus.max(1))
}

/// Estimates GPU and host memory for a job. Total: every input, including zeros and absurd sizes, gives
/// finite, non-negative numbers.
pub fn estimate(job: &Job) -> Estimate {
    let (job, warnings) = super::normalize::normalize(job);
    let sharded = matches!(
        job.parallelism,
        Parallelism::Zero1 | Parallelism::Zero2 | Parallelism::Zero3
    );
    let arch = &job.arch;
    // A reward model has a scalar head in place of the LM head (`preference::scalar_head_params`).
    let p = if job.objective == super::preference::Objective::RewardModel {
        super::preference::scalar_head_params(&arch.params(), arch.hidden)
    } else {
        arch.params()
    };
    let n = degree(&job);
    let ab = act_bytes(&job);
    let (trainable_params, adapter_params) = trainable(&job, &p);
    let base_trainable = trainable_params - adapter_params;

    // ---- how the model is divided over GPUs -------------------------------------------------------
    // Share of layer-proportional memory on the busiest GPU.
    let layer_share = match job.parallelism {
        Parallelism::Pipeline => {
            let l = f64::from(arch.layers.max(1));
            (l / n).ceil() / l
        }
        Parallelism::Tensor => 1.0 / n,
        _ => 1.0,
    };
    // Share of the layers on the busiest pipeline stage (activations: tensor parallelism divides within a
    // layer instead, see `LayerBytes::per_rank`).
    let stage_share = if job.parallelism == Parallelism::Pipeline {
        layer_share
    } else {
        1.0
    };
    let shard = |stage: u8| -> f64 {
        let s = match job.parallelism {
            Parallelism::Zero1 => 1,
            Parallelism::Zero2 => 2,
            Parallelism::Zero3 => 3,
            _ => 0,
        };
        if s >= stage {
            1.0 / n
        } else {
            1.0
        }
    };

    // ---- weights ----------------------------------------------------------------------------------
    // Working dtype of unquantized weights: fp32 under AMP (HF Trainer on an fp32-loaded model, Lightning
    // `bf16-mixed`) unless DeepSpeed/FSDP keep 16-bit working copies; 2 B in pure 16-bit.
    let working = match (job.precision, job.weights) {
        (Precision::Fp32, _) | (_, WeightFormat::Fp32) => 4.0,
        (Precision::Mixed, _) if !sharded && job.is_training() => 4.0,
        (Precision::Mixed, _) if !job.is_training() => 4.0,
        _ => 2.0,
    };
    let quantized = job.weights.is_quantized();
    // Autocast runs over fp32 weights (HF Trainer AMP on an fp32-loaded model, Lightning `bf16-mixed`).
    let autocast_fp32 = job.precision == Precision::Mixed && working >= 4.0 && !quantized;
    let cast_params = p.linear
        + if p.lm_head > 0.0 {
            p.lm_head
        } else {
            p.embedding
        };
    // An LM head the stack quantizes with the decoder (`Stack::quantizes_lm_head`) moves from the 16-bit
    // weights to the quantized ones, and becomes the largest matrix a matmul dequantizes at once.
    let head_quantized = if quantized && job.stack.quantizes_lm_head() {
        p.lm_head
    } else {
        0.0
    };
    let largest_dequant = p.largest_linear.max(head_quantized);
    let (w_quant, w_plain) = if quantized {
        let non_linear_bytes = if job.upcast_non_quantized && job.is_training() {
            4.0
        } else {
            2.0
        };
        (
            (p.linear + head_quantized) * job.weights.linear_bytes(),
            (p.non_linear - head_quantized) * non_linear_bytes,
        )
    } else {
        (0.0, p.total * working)
    };
    // Busiest GPU: layer share of the decoder, plus the embedding/LM head on one GPU for pipelines.
    let weight_split = |bytes_linear: f64, bytes_rest: f64| -> f64 {
        match job.parallelism {
            Parallelism::Pipeline => bytes_linear * layer_share + bytes_rest,
            Parallelism::Tensor => (bytes_linear + bytes_rest) / n,
            _ => (bytes_linear + bytes_rest) * shard(3),
        }
    };
    let (lin_plain, rest_plain) = if quantized {
        (0.0, w_plain)
    } else {
        (p.linear * working, (p.total - p.linear) * working)
    };
    let param_offloaded = job.offload == Offload::ParamOptimizer;
    let weights_q = if param_offloaded {
        0.0
    } else {
        weight_split(w_quant, 0.0)
    };
    let weights_plain = if param_offloaded {
        0.0
    } else {
        weight_split(lin_plain, rest_plain)
    };

    // ---- trainable state ----------------------------------------------------------------------------
    let train_share = match job.parallelism {
        Parallelism::Pipeline | Parallelism::Tensor => layer_share,
        _ => 1.0,
    };
    // PEFT keeps adapter weights in fp32 (`autocast_adapter_dtype=True`, `peft/tuners/tuners_utils.py`), so
    // their gradients and optimizer states are fp32 whatever the base precision.
    // Frozen adapter parts PEFT keeps in fp32 beside the trained ones (LoRA-FA's `lora_A`, VeRA's shared
    // random projections).
    let adapters = (adapter_params + frozen_adapter_params(&job)) * 4.0 * train_share;
    // LOMO-style fused updates (and optimizers stepped in backward) free each gradient as soon as it is used:
    // only the largest single gradient is ever alive.
    let grads = if full_tuning::fused_update(&job) && job.is_training() {
        p.largest_linear.max(p.embedding).min(trainable_params) * grad_bytes(&job)
    } else {
        (adapter_params * 4.0 + base_trainable * grad_bytes(&job)) * shard(2) * train_share
    };
    // FSDP1 LoRA with frozen and adapter weights in one FlatParameter: the flat gradient covers the frozen
    // decoder weights too (sharded, in the working dtype); on PyTorch ≤ 2.1 the frozen weights also stay
    // unsharded after backward, so by the optimizer step each GPU holds them whole.
    let shared_flat = job.parallelism == Parallelism::Zero3
        && job.gpus > 1
        && job.mode == Mode::Lora
        && !quantized
        && job.frozen_sharding != FrozenSharding::Separate;
    let frozen_decoder = p.per_layer * f64::from(arch.layers) * working;
    let (flat_grads, unresharded) = if shared_flat {
        let no_reshard = job.frozen_sharding == FrozenSharding::SharedFlatNoReshard
            || job.versions.torch <= super::job::Version::new(2, 1);
        let unresharded = if no_reshard {
            frozen_decoder * (1.0 - 1.0 / n)
        } else {
            0.0
        };
        (frozen_decoder / n, unresharded)
    } else {
        (0.0, 0.0)
    };
    let grads = grads + flat_grads;
    let (opt_b, paged) = optimizer_bytes(&job);
    // Base parameters stepped directly in 16-bit (pure 16-bit, no master copy) get 16-bit states.
    let base_opt_b = if job.precision == Precision::Pure16 && working < 4.0 {
        optimizer_bytes_16bit(&job)
    } else {
        opt_b
    };
    let optimizer_offloaded = job.offload != Offload::None;
    // A separate fp32 master copy exists when the working weights are 16-bit but the run is mixed precision:
    // DeepSpeed/FSDP mixed precision for full training (the optimizer holds fp32 params).
    // BAdam converts the active block to fp32 and steps that copy (Luo et al. 2024, sec. 3: "the active block
    // is kept in FP32"), whatever the precision of the rest.
    let master = if (job.precision == Precision::Mixed || job.mode == Mode::Badam)
        && working < 4.0
        && base_trainable > 0.0
    {
        base_trainable * 4.0
    } else {
        0.0
    };
    // GaLore/APOLLO: the decoder's linear weights keep projected states (`full_tuning`), the rest full ones.
    let base_states = if full_tuning::is_projected(job.optimizer) && base_trainable > 0.0 {
        let state_bytes = base_opt_b / 2.0; // one moment's bytes per element
        let projected =
            full_tuning::projected_state_elements(arch, job.projection_rank, job.optimizer);
        let decoder_linear = p.linear.min(base_trainable);
        (base_trainable - decoder_linear) * base_opt_b + projected * state_bytes
    } else {
        base_trainable * base_opt_b
    };
    let (states_gpu, master_gpu) = if optimizer_offloaded {
        (0.0, 0.0)
    } else {
        (
            (adapter_params * opt_b + base_states) * shard(1) * train_share,
            master * shard(1) * train_share,
        )
    };
    let (states_alloc, states_paged) = if paged {
        (0.0, states_gpu)
    } else {
        (states_gpu, 0.0)
    };

    // ---- activations --------------------------------------------------------------------------------
    let tokens = f64::from(job.micro_batch.max(1)) * f64::from(job.seq_len.max(1));
    let seq = f64::from(job.seq_len.max(1));
    let mut activations = 0.0;
    let mut scores = 0.0;
    let mut logits = 0.0;
    let mut temporary_bwd = 0.0;
    if job.is_training() {
        // Tensor parallelism splits the heads and the MLP intermediate, not the residual stream.
        let tp = if job.parallelism == Parallelism::Tensor {
            n
        } else {
            1.0
        };
        let per_layer = layer_bytes_per_token(arch, &job).per_rank(tp) * tokens
            + adapter_bytes_per_layer(&job, arch) / tp;
        // The layer a checkpointed backward recomputes: the largest kind of a hybrid stack (the average
        // layer otherwise). The busiest GPU holds at least one such layer, so without checkpointing it keeps no
        // less than that layer's share either.
        let largest_layer = largest_layer_bytes_per_token(arch, &job).per_rank(tp) * tokens
            + adapter_bytes_per_layer(&job, arch) / tp;
        let scores_layer = eager_scores_per_token(arch, &job, seq) * tokens / tp;
        // Layers that keep activations: all, except below the first trained layer in freeze mode.
        let total_layers = f64::from(arch.layers);
        let kept_layers = match job.mode {
            Mode::Freeze => f64::from(job.freeze_trainable_layers.min(arch.layers)),
            _ => total_layers,
        } * stage_share;
        // Checkpointed layers keep their input, in the residual stream's dtype (fp32 under autocast over
        // fp32 weights), whole on every tensor-parallel rank.
        let resid = residual_bytes(&job);
        let layer_input = resid * f64::from(arch.hidden) * tokens;
        // Recomputation runs one layer at a time, and only in layers that keep activations: where fewer than
        // one layer does (a pipeline stage's share of the trained layers), that share is what is recomputed.
        let recomputed_layers = kept_layers.min(1.0);
        // What every layer keeps through the whole backward, and what one layer adds while it is recomputed
        // (HF `gradient_checkpointing`: each layer's input is kept; in backward one layer at a time is
        // recomputed; Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost").
        let (saved_acts, saved_scores, recomputed_acts, recomputed_scores) = match job.checkpointing
        {
            Checkpointing::Off => (
                (kept_layers * per_layer).max(recomputed_layers * largest_layer),
                kept_layers * scores_layer,
                0.0,
                0.0,
            ),
            Checkpointing::Layer => (
                kept_layers * layer_input,
                0.0,
                recomputed_layers * largest_layer,
                recomputed_layers * scores_layer,
            ),
            Checkpointing::Offload => (
                2.0 * layer_input * recomputed_layers,
                0.0,
                recomputed_layers * largest_layer,
                recomputed_layers * scores_layer,
            ),
        };
        let final_norm = final_norm_bytes_per_token(arch, &job) * tokens;
        // A reward model's scalar head makes no vocabulary logits; GRPO computes the completion's only.
        let loss = if job.objective.has_vocab_logits() {
            loss_bytes_per_logit(job.loss)
                * tokens
                * super::preference::logit_share(&job)
                * f64::from(arch.vocab)
                / tp
        } else {
            0.0
        };
        // Backward meets two peaks in turn: the loss's backward with every saved activation alive, then each
        // layer's backward (after the logits are freed) with its recomputed activations and gradient buffers.
        let layer_work = layer_backward_bytes_per_token(arch, &job).per_rank(tp) * tokens;
        let loss_phase = saved_acts + saved_scores + final_norm + loss;
        let layer_phase =
            saved_acts + saved_scores + recomputed_acts + recomputed_scores + layer_work;
        if loss_phase >= layer_phase {
            activations = saved_acts + final_norm;
            scores = saved_scores;
            logits = loss;
        } else {
            activations = saved_acts + recomputed_acts + layer_work;
            scores = saved_scores + recomputed_scores;
        }
        // Autocast on fp32 weights casts each weight to 16-bit for its matmul. The cast of a weight that
        // requires grad is cached for the whole autocast region (`aten/src/ATen/autocast_mode.cpp`
        // `cached_cast`: leaf, `requires_grad`, fp32 → lower precision), and autograd saves the cast for
        // backward; a frozen weight's cast is not cached, but is saved for backward in every layer that
        // keeps its activations (one layer at a time under checkpointing).
        if autocast_fp32 {
            let per_layer_linear = p.linear / f64::from(arch.layers.max(1));
            temporary_bwd += 2.0
                * match (job.mode, job.checkpointing) {
                    (Mode::Full, _) => cast_params * layer_share,
                    (_, Checkpointing::Off) => per_layer_linear * kept_layers,
                    _ => per_layer_linear * recomputed_layers,
                };
        }
        // bitsandbytes 4-bit matmuls dequantize each weight to 16-bit on the fly (forward and backward):
        // a transient of about twice the largest linear layer.
        if job.weights.is_bnb_4bit() || job.weights == WeightFormat::Int8 {
            temporary_bwd += 2.0 * largest_dequant * 2.0 * layer_share;
        }
    }
    // ZeRO-3/FSDP gather the full weights of the current and the prefetched layer, in their stored format
    // (FSDP + QLoRA gathers the packed 4-bit storage, not dequantized weights: bitsandbytes
    // `bnb_4bit_quant_storage` docs).
    if job.parallelism == Parallelism::Zero3 && job.gpus > 1 || param_offloaded {
        let stored = if quantized {
            job.weights.linear_bytes()
        } else {
            working
        };
        temporary_bwd += 2.0 * p.per_layer * stored;
    }

    // Gradients are live at the start of backward when they persist between micro-batches (accumulation)
    // or in DDP/ZeRO buckets.
    let grads_persist = job.grad_accum > 1 || job.gpus > 1;
    // PyTorch foreach AdamW: one parameter-sized temporary list in the parameter dtype during `step()`.
    let step_temp = if full_tuning::fused_update(&job) || !job.is_training() || optimizer_offloaded
    {
        // Stepped inside backward, one parameter at a time: no step of its own.
        0.0
    } else if job.optimizer == Optimizer::Galore && base_trainable > 0.0 {
        // GaLore steps weight by weight; its peak is the SVD of the largest gradient when the projector
        // is refreshed.
        full_tuning::svd_transient_bytes(&p, arch)
    } else if job.optimizer_step_temp && !matches!(job.optimizer, Optimizer::None | Optimizer::Sgd)
    {
        let param_bytes = if adapter_params > 0.0 { 4.0 } else { working };
        trainable_params * param_bytes * shard(1) * train_share
    } else {
        0.0
    };

    // ---- inference ----------------------------------------------------------------------------------
    let mut kv_cache = 0.0;
    let mut recurrent_state = 0.0;
    let mut prefill = 0.0;
    // `model.generate` runs in an inference job, and in an RL job's rollout when no colocated vLLM engine
    // generates (`preference::hf_generate`): the same cache and prefill either way.
    let hf_generate = super::preference::hf_generate(&job, working);
    if let Some(gen) = hf_generate {
        let batch = gen.batch;
        let prompt = gen.prompt;
        let total = prompt + gen.new_tokens;
        // KV cache = 2 · layers · kv_heads · head_dim · tokens · batch · bytes (GQA-aware). MLA caches the
        // latent and the RoPE key: (kv_lora_rank + qk_rope_head_dim) per layer and token (DeepSeek-V2 paper
        // sec. 2.1.2). Sliding-window layers cache at most the window (Mistral v0.1, Gemma 2/3).
        let per_token_layer = match arch.attention {
            AttentionKind::Standard => 2.0 * arch.kv_width(),
            AttentionKind::Mla => {
                f64::from(arch.mla.kv_lora_rank) + f64::from(arch.mla.qk_rope_head_dim)
            }
        };
        let window = f64::from(arch.sliding_window);
        let cached = if window > 0.0 {
            let frac = arch.sliding_fraction.clamp(0.0, 1.0);
            frac * total.min(window) + (1.0 - frac) * total
        } else {
            total
        };
        // A hybrid stack caches keys and values in its attention layers only.
        let attention_layers = super::recurrent::layer_shares(arch).0 * f64::from(arch.layers);
        let tp_split = if job.parallelism == Parallelism::Tensor {
            n
        } else {
            1.0
        };
        kv_cache = attention_layers * per_token_layer * cached * batch * gen.kv_bytes * layer_share
            / tp_split;
        // Its recurrent layers hold a fixed state per sequence instead, whatever the length: the conv window
        // and the SSM state of every recurrent layer as transformers' cache allocates them
        // (`recurrent::Hybrid::hf_state_bytes_per_sequence`; the fp8 KV option does not apply).
        if let Some(hy) = arch.stack() {
            recurrent_state = f64::from(hy.recurrent_layers.min(arch.layers))
                * hy.hf_state_bytes_per_sequence(ab)
                * batch
                * layer_share
                / tp_split;
        }
        // Prefill working set of one layer over the prompt: the residual, q/k/v/output and, in the MLP, the
        // activation, up projection and their product alive together (3·i: without autograd the gate output
        // is freed as soon as the activation consumes it, HF `LlamaMLP.forward`); eager attention adds the
        // fp32 and 16-bit score matrices.
        let h = f64::from(arch.hidden);
        let i = match arch.moe {
            Some(m) => f64::from(m.expert_intermediate) * f64::from(m.active.max(1)),
            None => f64::from(arch.intermediate),
        };
        let t = batch * prompt;
        let attn_work = ab * t * (2.0 * h + arch.q_width() + 2.0 * arch.q_width());
        let mlp_work = ab * t * (2.0 * h + 3.0 * i);
        let scores_work = if job.attention == super::job::AttentionImpl::Eager {
            (4.0 + ab) * f64::from(arch.heads) * prompt * prompt * batch
        } else {
            0.0
        };
        // Only the last position's logits (transformers ≥ 4.45 `logits_to_keep`), upcast to fp32; older
        // releases compute and upcast them for every prompt position.
        let positions = if job.versions.prefill_logits_all_positions() {
            prompt
        } else {
            1.0
        };
        let last_logits = batch * positions * f64::from(arch.vocab) * (2.0 + 4.0);
        // A recurrent layer's prefill working set (`recurrent::Hybrid::prefill_bytes_per_token`).
        let mixer_work = arch
            .stack()
            .filter(|hy| hy.recurrent_layers > 0)
            .map_or(0.0, |hy| hy.prefill_bytes_per_token(h, ab) * t);
        prefill = (attn_work + scores_work).max(mlp_work).max(mixer_work) + last_logits;
        // Weights require grad by default, so autocast keeps every 16-bit cast for the whole region. (An RL
        // rollout generates outside the training step's autocast region.)
        if autocast_fp32 && !job.is_training() {
            prefill += 2.0 * cast_params * layer_share;
        }
        if job.weights.is_bnb_4bit() || job.weights == WeightFormat::Int8 {
            prefill += 2.0 * largest_dequant * 2.0;
        }
    }

    // ---- peak -----------------------------------------------------------------------------------------
    use super::preference::Objective;
    // The reference model of DPO/KTO/GRPO/PPO: a frozen second copy of the base weights in their stored
    // format, unless the PEFT base with adapters disabled, precomputed log-probabilities or beta = 0 stand in
    // for it.
    let peft_job = matches!(job.mode, Mode::Lora | Mode::Qlora);
    let reference = if job.is_training()
        && super::preference::reference_copy(job.objective, job.reference, peft_job)
    {
        weights_q + weights_plain
    } else {
        0.0
    };
    // PPO's critic (value model) and reward model, per GPU (`preference::value_shares_backbone`).
    // - Without PEFT both are the policy's architecture with a scalar head (`preference::scalar_head_params`),
    //   stored like the policy and sharded like it (TRL `PPOTrainer` prepares them with the same
    //   DeepSpeed/FSDP config; OpenRLHF's critic and reward model likewise): the policy's weight bytes with the
    //   head swapped. The reward model is frozen, forward only. The critic is trained by the same optimizer on
    //   the same micro-batch (TRL `PolicyAndValueWrapper`: one loss `pg_loss + vf_coef · vf_loss`, one
    //   backward), so per parameter it holds what the policy holds (gradients, master weights, optimizer
    //   states, step temporaries: the policy's scaled by the critic's share of parameters, `r = N_v / N` in
    //   full fine-tuning, 1 when both train the same layers), and in backward it keeps the activations of
    //   its own forward over the micro-batch, the policy's without the vocabulary logits.
    // - With PEFT the critic is a value head `Linear(h, 1)` on the shared backbone, trained in fp32 (weight,
    //   gradient and optimizer states: 4 + 4 + the optimizer's bytes per parameter), and the reward model a
    //   second adapter of the policy's size plus its head, in fp32 (PEFT's adapter dtype); neither adds
    //   activations (one forward gives logits and values).
    let ppo = job.is_training() && job.objective == Objective::Ppo;
    let mut value_static = 0.0;
    let mut value_paged = 0.0;
    let mut value_grads = 0.0;
    let mut value_step = 0.0;
    let mut value_acts = 0.0;
    let mut value_weights = 0.0;
    let mut reward = 0.0;
    if ppo && super::preference::value_shares_backbone(job.mode) {
        let head = f64::from(arch.hidden) + 1.0;
        value_static = head * (4.0 + opt_b);
        value_grads = head * 4.0;
        reward = adapters + head * 4.0;
    } else if ppo {
        let v = super::preference::scalar_head_params(&p, arch.hidden);
        let plain = |c: &ParamCounts| if quantized { c.non_linear } else { c.total };
        value_weights = weights_q + weights_plain * plain(&v) / plain(&p).max(1.0);
        let r = if job.mode == Mode::Full {
            v.total / p.total.max(1.0)
        } else {
            1.0
        };
        value_static = value_weights + (master_gpu + states_alloc) * r;
        value_paged = states_paged * r;
        value_grads = grads * r;
        value_step = step_temp * r;
        value_acts = activations + scores;
        reward = value_weights;
    }
    // GRPO's colocated vLLM engine holds its share of the GPU (weights and KV cache) while it generates. With
    // sleep mode TRL puts it to sleep after each generation (`llm.sleep(level=2)`,
    // `trl/generation/vllm_generation.py`, woken with `wake_up` before the next), and level 2 "discards both
    // the model weights and the KV cache" (vLLM docs, "Sleep Mode"), so the training step runs without it.
    let engine = if job.is_training() && job.objective == Objective::Grpo {
        job.grpo.vllm_gib.max(0.0) * GIB
    } else {
        0.0
    };
    let engine_training = if job.grpo.vllm_sleep { 0.0 } else { engine };
    // The rollout of GRPO/PPO (`Phase::Generation`): the static memory beside the awake engine, or HF
    // generation's KV cache and prefill (computed above from `preference::hf_generate`), plus
    // - under ZeRO-3 the whole policy, gathered for generation (TRL `ds3_gather_for_generation=True`, the
    //   default: `unwrap_model_for_generation` enters `deepspeed.zero.GatheredParameters` on every parameter
    //   of the wrapped model, PPO's critic included): the shards this GPU does not hold;
    // - in PPO the scores of every generated position of the rollout batch, kept to the end of the rollout
    //   (TRL `generate(..., output_scores=True)` then `torch.stack(output.scores, 1)`): rollout × C × V in
    //   fp32 (transformers `_sample` upcasts each step's `next_token_logits` to fp32).
    // The previous optimizer step's `zero_grad(set_to_none=True)` freed the gradients: a rollout starts an
    // accumulation window.
    let rollout = job.is_training() && job.objective.generates();
    let hf_rollout = rollout && hf_generate.is_some();
    let gathered =
        if hf_rollout && job.parallelism == Parallelism::Zero3 && (job.gpus > 1 || param_offloaded)
        {
            let policy = w_quant + lin_plain + rest_plain - (weights_q + weights_plain);
            let held = (weights_q + weights_plain).max(1.0);
            policy * (1.0 + value_weights / held)
        } else {
            0.0
        };
    let kept_scores = if hf_rollout && ppo {
        let (_, step) = super::preference::rollout_batch(&job);
        f64::from(step) * f64::from(job.grpo.completion_tokens) * f64::from(arch.vocab) * 4.0
    } else {
        0.0
    };
    let rollout_live = kv_cache + recurrent_state + prefill + gathered + kept_scores + engine;
    // ---- vision tower (`vision::bytes`): its parameters at the rates of the language model's --------
    let vision = super::vision::bytes(
        &job,
        &super::vision::Rates {
            working,
            bnb: super::vision::bnb_quantized(job.weights).then(|| {
                let other = if job.upcast_non_quantized && job.is_training() {
                    4.0
                } else {
                    2.0
                };
                (job.weights.linear_bytes(), other)
            }),
            weight_share: match job.parallelism {
                _ if param_offloaded => 0.0,
                Parallelism::Tensor => 1.0 / n,
                Parallelism::Pipeline => 1.0,
                _ => shard(3),
            },
            grad: if full_tuning::fused_update(&job) {
                0.0
            } else {
                grad_bytes(&job)
            },
            grad_share: shard(2),
            base_state: base_opt_b,
            adapter_state: opt_b,
            master: if job.precision == Precision::Mixed && working < 4.0 {
                4.0
            } else {
                0.0
            },
            state_share: if optimizer_offloaded { 0.0 } else { shard(1) },
            paged,
            step_temp: step_temp > 0.0 && job.optimizer != Optimizer::Galore,
        },
    );
    let static_bytes = weights_q
        + weights_plain
        + adapters
        + master_gpu
        + states_alloc
        + reference
        + value_static
        + reward
        + vision.resident;
    let backward_live = activations
        + scores
        + logits
        + temporary_bwd
        + value_acts
        + engine_training
        + if grads_persist {
            grads + value_grads
        } else {
            0.0
        };
    let step_live = grads + value_grads + step_temp + value_step + unresharded + engine_training;
    // The last op of backward: a tied embedding's second gradient (from the embedding lookup) is summed with
    // the one the LM head produced, out of place (`AccumulateGrad`: `variable.grad + new_grad`), so old, new
    // and sum coexist while every other gradient is already stored (the oracle's peak op,
    // `aten.add.Tensor` under `EmbeddingBackward0`, on full fine-tunes of tied models).
    let tied_sum = if arch.tied_embeddings && job.mode == Mode::Full {
        2.0 * grad_bytes(&job) * p.embedding * shard(2) * train_share
    } else {
        0.0
    };
    let embedding_live = grads + value_grads + tied_sum + engine_training;
    // Each phase with what is alive in it and its short-lived part (what the caching allocator leaves
    // reserved but unused around it).
    let mut candidates = if job.is_training() {
        vec![
            (
                Phase::Backward,
                backward_live,
                activations + scores + logits + temporary_bwd + value_acts,
            ),
            (Phase::EndOfBackward, embedding_live, tied_sum),
            // The optimizer's temporaries are parameter-sized tensors allocated and freed in the same order
            // every step, so each is served by the cached block of the same size its predecessor (or the
            // previous step) freed: best-fit reuse in `CUDACachingAllocator.cpp`. They add no fragmentation:
            // on the fake-tensor grid the allocator simulation of real AdamW foreach steps leaves 0.4–4 GiB
            // reserved beyond allocated at the optimizer peak, where 0.35 × the temporaries gave 5–61 GiB.
            (Phase::OptimizerStep, step_live, 0.0),
        ]
    } else {
        vec![(
            Phase::Prefill,
            prefill + kv_cache + recurrent_state,
            prefill,
        )]
    };
    if rollout {
        candidates.push((Phase::Generation, rollout_live, prefill + kept_scores));
    }
    // The vision tower in each phase, `(alive, short-lived)`: in training the batch's pixels and what the
    // tower saved live through the language model's forward and backward, its own backward comes last (every
    // other gradient stored; beside a tied embedding's gradient sum, counted together), its gradients are
    // alive where the language model's are; in inference the pixels stay for the whole `generate`. Its forward is a phase of its own, before the language model runs:
    // beside it only the static memory and the gradients accumulation keeps.
    let vision_in = |phase: Phase| -> (f64, f64) {
        let kept = |g: f64| if grads_persist { g } else { 0.0 };
        match phase {
            Phase::Backward => (
                vision.pixels + vision.saved + kept(vision.grads),
                vision.saved,
            ),
            Phase::EndOfBackward => (
                vision.pixels + vision.saved + vision.backward_tail + vision.grads,
                vision.backward_tail,
            ),
            // The Trainer's loop still holds the last micro-batch (`inputs`) while it steps.
            Phase::OptimizerStep => (vision.pixels + vision.grads + vision.step_temp, 0.0),
            Phase::VisionEncoder => (
                vision.pixels + vision.forward + kept(vision.grads),
                vision.forward,
            ),
            Phase::Prefill if !job.is_training() => (vision.pixels, 0.0),
            Phase::Prefill | Phase::Generation => (0.0, 0.0),
        }
    };
    for c in candidates.iter_mut() {
        let (alive, short) = vision_in(c.0);
        c.1 += alive;
        c.2 += short;
    }
    if vision.forward > 0.0 {
        let (alive, short) = vision_in(Phase::VisionEncoder);
        let beside = if job.is_training() && grads_persist {
            grads + value_grads
        } else {
            0.0
        } + engine_training;
        candidates.push((Phase::VisionEncoder, alive + beside, short));
    }
    // Blocks cached for other shapes: the variable-length excess over the fixed-shape share.
    let other_shapes = |transient: f64| {
        if job.variable_lengths && job.is_training() {
            (ALLOCATOR_VARIABLE_SHARE - ALLOCATOR_TRANSIENT_SHARE).max(0.0) * transient
        } else {
            0.0
        }
    };
    // Generation grows the KV cache by concatenation (transformers `DynamicCache.update`: `torch.cat` of the
    // old cache and the new token's keys/values, every step): each layer's cache is re-allocated one token
    // longer, and the freed, shorter blocks never fit a later request. The allocator ends up holding about
    // one more cache's worth: shapes that change every step, as with variable-length batches.
    // (Only the phases that generate hold it: inference, and an RL job's rollout.)
    let growing_cache = if hf_generate.is_some_and(|g| g.new_tokens > 0.0) {
        ALLOCATOR_VARIABLE_SHARE * kv_cache
    } else {
        0.0
    };
    let cache_of = |phase: Phase, transient: f64| {
        other_shapes(transient)
            + if matches!(phase, Phase::Prefill | Phase::Generation) {
                growing_cache
            } else {
                0.0
            }
    };
    let reserve_of =
        |transient: f64| ALLOCATOR_FIXED_GIB * GIB + ALLOCATOR_TRANSIENT_SHARE * transient;
    let reserved_of = |phase: Phase, live: f64, transient: f64| {
        static_bytes + live + reserve_of(transient) + cache_of(phase, transient)
    };
    // `max_memory_allocated` is the largest live total over the phases; the caching allocator never gives
    // memory back, so `max_memory_reserved` is the largest reserved total, which may come from another
    // phase (a small optimizer-step peak after a backward that fragmented more). The breakdown and the
    // verdict follow the phase that needs the most device memory.
    let peak_allocated = static_bytes + candidates.iter().map(|c| c.1).fold(0.0_f64, f64::max);
    // An RL job's rollout leaves a cache's worth of stale KV blocks (`growing_cache`) that make it the most
    // reserved phase without being the one that needs the most: the allocator frees them before it reports
    // out-of-memory, in the rollout and in the training step after it alike. Its phases are therefore ranked
    // by what each needs (reserved less its freeable cache), and the followed phase's freeable cache includes
    // what the more reserved phase left behind (the allocator never gives memory back), so the breakdown
    // still adds up to the device total.
    let rank = |c: &(Phase, f64, f64)| {
        reserved_of(c.0, c.1, c.2) - if rollout { cache_of(c.0, c.2) } else { 0.0 }
    };
    let (phase, live, transient) = candidates
        .iter()
        .copied()
        .reduce(|best, c| if rank(&c) > rank(&best) { c } else { best })
        .unwrap_or((Phase::Prefill, 0.0, 0.0));
    let reserve = reserve_of(transient);
    let peak_reserved = candidates
        .iter()
        .map(|c| reserved_of(c.0, c.1, c.2))
        .fold(0.0_f64, f64::max);
    let cache =
        cache_of(phase, transient) + (peak_reserved - reserved_of(phase, live, transient)).max(0.0);
    let context = CUDA_CONTEXT_GIB * GIB;
    let device_total = peak_reserved + context + states_paged + value_paged + vision.paged;

    let mut gpu = vec![
        Part {
            component: Component::WeightsQuantized,
            bytes: weights_q,
        },
        Part {
            component: Component::Weights,
            bytes: weights_plain
                + match phase {
                    Phase::OptimizerStep => unresharded,
                    Phase::Generation => gathered,
                    _ => 0.0,
                },
        },
        Part {
            component: Component::Adapters,
            bytes: adapters,
        },
        Part {
            component: Component::MasterWeights,
            bytes: master_gpu,
        },
        Part {
            component: Component::OptimizerStates,
            bytes: states_gpu,
        },
    ];
    match phase {
        Phase::Backward => {
            if grads_persist {
                gpu.push(Part {
                    component: Component::Gradients,
                    bytes: grads,
                });
            }
            gpu.extend([
                Part {
                    component: Component::Activations,
                    bytes: activations,
                },
                Part {
                    component: Component::AttentionScores,
                    bytes: scores,
                },
                Part {
                    component: Component::Logits,
                    bytes: logits,
                },
                Part {
                    component: Component::Temporary,
                    bytes: temporary_bwd,
                },
            ]);
        }
        Phase::OptimizerStep | Phase::EndOfBackward => gpu.extend([
            Part {
                component: Component::Gradients,
                bytes: grads,
            },
            Part {
                component: Component::Temporary,
                bytes: if phase == Phase::OptimizerStep {
                    step_temp
                } else {
                    tied_sum
                },
            },
        ]),
        Phase::VisionEncoder => {
            if grads_persist && job.is_training() {
                gpu.push(Part {
                    component: Component::Gradients,
                    bytes: grads,
                });
            }
        }
        Phase::Prefill | Phase::Generation => gpu.extend([
            Part {
                component: Component::KvCache,
                bytes: kv_cache,
            },
            Part {
                component: Component::RecurrentState,
                bytes: recurrent_state,
            },
            Part {
                component: Component::Temporary,
                bytes: prefill,
            },
            Part {
                component: Component::Logits,
                bytes: kept_scores,
            },
        ]),
    }
    gpu.push(Part {
        component: Component::AllocatorReserve,
        bytes: reserve,
    });
    gpu.push(Part {
        component: Component::AllocatorCache,
        bytes: cache,
    });
    gpu.push(Part {
        component: Component::CudaContext,
        bytes: context,
    });
    gpu.push(Part {
        component: Component::ReferenceModel,
        bytes: reference,
    });
    gpu.push(Part {
        component: Component::ServingEngine,
        bytes: if phase == Phase::Generation {
            engine
        } else {
            engine_training
        },
    });
    gpu.push(Part {
        component: Component::ValueModel,
        bytes: value_static
            + value_paged
            + match phase {
                Phase::Backward if grads_persist => value_acts + value_grads,
                Phase::Backward => value_acts,
                Phase::EndOfBackward => value_grads,
                Phase::OptimizerStep => value_grads + value_step,
                Phase::VisionEncoder if grads_persist => value_grads,
                Phase::Prefill | Phase::Generation | Phase::VisionEncoder => 0.0,
            },
    });
    gpu.push(Part {
        component: Component::RewardModel,
        bytes: reward,
    });
    gpu.push(Part {
        component: Component::VisionTower,
        bytes: vision.resident + vision.paged + vision_in(phase).0,
    });
    gpu.retain(|part| part.bytes > 0.0);

    // ---- host RAM (whole machine) ----------------------------------------------------------------------
    let ranks = f64::from(job.gpus.max(1));
    let mut host = vec![Part {
        component: HostComponent::Runtime,
        bytes: HOST_RUNTIME_GIB * GIB * ranks,
    }];
    // from_pretrained memory-maps safetensors shards and copies them to the GPU one at a time: about one
    // 5 GB shard per process (transformers `max_shard_size` default "5GB").
    let sixteen_bit = (p.total + vision.params) * 2.0;
    host.push(Part {
        component: HostComponent::WeightLoading,
        bytes: sixteen_bit.min(5e9) * ranks,
    });
    if optimizer_offloaded {
        // ZeRO-Offload: fp32 master weights, Adam states (and fp32 gradients) on the CPU, pinned
        // (Ren et al. 2021, ZeRO-Offload; DeepSpeed `estimate_zero3_model_states_mem_needs`: 18 B/param with
        // optimizer offload). NVMe keeps them on disk behind pinned staging buffers.
        let offloaded = (trainable_params + vision.trainable) * (opt_b + 4.0 + 4.0) + master;
        let bytes = match job.offload_device {
            OffloadDevice::Cpu => offloaded,
            OffloadDevice::Nvme => offloaded.min(4.0 * GIB),
        };
        host.push(Part {
            component: HostComponent::OffloadedOptimizer,
            bytes,
        });
    }
    if param_offloaded {
        host.push(Part {
            component: HostComponent::OffloadedParams,
            bytes: match job.offload_device {
                OffloadDevice::Cpu => sixteen_bit,
                OffloadDevice::Nvme => sixteen_bit.min(2.0 * GIB),
            },
        });
    }
    if job.checkpointing == Checkpointing::Offload && job.is_training() {
        host.push(Part {
            component: HostComponent::OffloadedActivations,
            bytes: f64::from(arch.layers) * ab * f64::from(arch.hidden) * tokens * ranks,
        });
    }
    if job.dataset_gib > 0.0 && job.dataset_gib.is_finite() {
        host.push(Part {
            component: HostComponent::Dataset,
            bytes: job.dataset_gib * GIB,
        });
    }
    if job.is_training() && job.parallelism == Parallelism::Zero3 && job.mode == Mode::Full {
        host.push(Part {
            component: HostComponent::CheckpointSave,
            bytes: sixteen_bit,
        });
    }
    host.retain(|part| part.bytes > 0.0);
    let host_total = host.iter().map(|part| part.bytes).sum();

    Estimate {
        gpu,
        peak_allocated,
        peak_reserved,
        device_total,
        fit_need: device_total - cache,
        fit_band: band(&job, device_total - cache),
        phase,
        host,
        host_total,
        params: p,
        trainable_params: trainable_params + vision.trainable,
        vision_params: vision.params,
        warnings,
    }
}
