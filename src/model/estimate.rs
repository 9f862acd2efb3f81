//! The estimate as a pipeline: shapes → terms → a timeline of the step → the allocator's totals.
//!
//! 1. [`Shapes::of`] derives what every term needs from the normalized job (parameter counts, division over
//!    GPUs, working dtype, tokens).
//! 2. Each term is a pure function of the job and its shapes, in its own file with its formula and source:
//!    [`weights`](super::weights), [`adapters`](super::adapters), [`gradients`](super::gradients),
//!    [`optimizer`](super::optimizer), [`activations`](super::activations), [`loss`](super::loss),
//!    [`cache`](super::cache) (KV and recurrent state), [`temporaries`](super::temporaries), the
//!    [`vision`](super::vision) tower and the [`side_models`](super::side_models) of preference and RL jobs.
//! 3. [`timeline`] places the terms in the moments of a step (backward, end of backward, optimizer step,
//!    the vision encoder, prefill, an RL rollout), each with what is alive in it.
//! 4. [`allocator::replay`] turns the timeline into `max_memory_allocated`, `max_memory_reserved` and the
//!    moment that needs the most; its parts are the breakdown. Host RAM is [`host::host`].

use super::activations::{backward_peak, BackwardPeak};
use super::adapters::adapter_bytes;
use super::alloc_program::{replay_training, LayerTensors, Replayed, TrainingProgram};
use super::allocator::{self, Replay};
use super::arch::ParamCounts;
use super::band::{band, Band};
use super::cache::{generation, Generation};
use super::full_tuning;
use super::gradients::{grad_bytes, gradients, tied_embedding_sum, Gradients};
use super::host::{self, VisionParams};
use super::job::{Job, Parallelism, Precision};
use super::loss::{loss_bytes, retained_logits_bytes};
use super::optimizer::{optimizer, OptimizerBytes};
use super::shapes::Shapes;
use super::side_models::{rollout_extras, side_models, Policy, SideModels};
use super::temporaries::backward_temporaries;
use super::timeline::{merge, Moment, Timeline};
use super::vision::{self, VisionBytes};
use super::weights::{weight_bytes, WeightBytes};
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
    /// MXFP4 weights cannot be trained as stored; the run was estimated on bf16 weights
    /// (`Mxfp4Config(dequantize=True)`).
    Mxfp4TrainsDequantized,
    /// The checkpoint's safetensors headers store much more or less than the shape does in that format
    /// ([`super::weights::CHECKPOINT_MATCH_SHARE`]); the weights were counted from the shape.
    CheckpointDiffersFromShape,
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
    /// Live tensors at each moment of the step, bytes, in the timeline's order (an RL job's rollout and its
    /// training pass apart, for instance).
    #[serde(default)]
    pub phases: Vec<(Phase, f64)>,
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

/// Estimates GPU and host memory for a job. Total: every input, including zeros and absurd sizes, gives
/// finite, non-negative numbers.
pub fn estimate(job: &Job) -> Estimate {
    let (job, warnings) = super::normalize::normalize(job);
    let job = &job;
    let s = Shapes::of(job);
    let terms = Terms::of(job, &s);
    let timeline = timeline(job, &s, &terms);
    let replay = allocator::replay(&timeline);
    let context = CUDA_CONTEXT_GIB * GIB;
    let outside: f64 = timeline.outside.iter().map(|p| p.bytes).sum();
    let device_total = replay.peak_reserved + context + outside;
    let followed = timeline
        .moments
        .get(replay.moment)
        .map_or(Phase::Prefill, |m| m.phase);
    let phases = timeline
        .moments
        .iter()
        .map(|m| (m.phase, m.allocated()))
        .collect();
    let gpu = breakdown(timeline, &replay, context);
    let fit_need = device_total - replay.cache;
    let vision = &terms.vision;
    let host = host_ram(job, &s, &terms);
    let host_total = host.iter().map(|part| part.bytes).sum();
    Estimate {
        gpu,
        peak_allocated: replay.peak_allocated,
        peak_reserved: replay.peak_reserved,
        device_total,
        fit_need,
        fit_band: band(job, fit_need),
        phase: followed,
        phases,
        host,
        host_total,
        params: s.params,
        trainable_params: s.trainable + vision.trainable,
        vision_params: vision.params,
        warnings,
    }
}

/// The caching allocator's totals for a training step replayed block by block
/// ([`super::alloc_program`]), where the job is one the step's program describes ([`training_program`]);
/// `None` elsewhere. Its reserve and cache come from `CUDACachingAllocator.cpp`'s rules run on the estimate's
/// own tensors rather than from the fitted shares of [`allocator::replay`]; it costs two steps' allocations
/// (0.3–4 ms), so the page's interactive estimate keeps the fitted reserve and this is the CLI's.
pub fn block_replay(job: &Job) -> Option<BlockReplay> {
    let (job, _) = super::normalize::normalize(job);
    let job = &job;
    let s = Shapes::of(job);
    let terms = Terms::of(job, &s);
    let program = training_program(job, &s, &terms)?;
    let blocks: Replayed = replay_training(&program);
    let timeline = timeline(job, &s, &terms);
    let fitted = allocator::replay(&timeline);
    let peak_allocated = fitted.peak_allocated;
    let reserve = (blocks.peak_needed - blocks.peak_allocated).max(0.0);
    // The replay runs one batch shape; batches of varying length keep the fitted cache of other shapes.
    let other_shapes = if timeline.varying_shapes {
        fitted.cache
    } else {
        0.0
    };
    let cache = (blocks.peak_reserved - blocks.peak_needed).max(0.0) + other_shapes;
    Some(BlockReplay {
        peak_allocated,
        reserve,
        cache,
        peak_reserved: peak_allocated + reserve + cache,
    })
}

/// [`block_replay`]'s figures, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct BlockReplay {
    /// `max_memory_allocated` (the estimate's).
    pub peak_allocated: f64,
    /// Reserved beyond the tensors that the allocator could not give back before an out-of-memory error
    /// (segments split between live and free blocks).
    pub reserve: f64,
    /// Wholly free cached segments at the peak, which the allocator frees and retries with before failing
    /// (with batches of varying length, the fitted cache of their other shapes too).
    pub cache: f64,
    /// `max_memory_reserved`: the estimate's tensors, the reserve and the cache.
    pub peak_reserved: f64,
}

/// Every term of a job, each from its own file.
struct Terms {
    weights: WeightBytes,
    adapters: f64,
    gradients: Gradients,
    optimizer: OptimizerBytes,
    /// Backward's peak (training only).
    backward: BackwardPeak,
    /// Backward's temporaries (training only).
    temporaries: f64,
    /// Output logits the training loop keeps bound through backward and the step (training only).
    retained_logits: f64,
    /// `model.generate`'s cache and prefill (inference, an RL rollout with HF generation).
    generation: Option<Generation>,
    side: SideModels,
    /// An RL rollout's gathered weights and kept scores.
    rollout: (f64, f64),
    vision: VisionBytes,
}

impl Terms {
    fn of(job: &Job, s: &Shapes) -> Terms {
        let weights = weight_bytes(job, s);
        let adapters = adapter_bytes(job, s);
        let gradients = gradients(job, s);
        let optimizer = optimizer(job, s);
        let (backward, temporaries, retained_logits) = if job.is_training() {
            let retained = retained_logits_bytes(job, s);
            (
                backward_peak(job, s, loss_bytes(job, s), retained),
                backward_temporaries(job, s),
                retained,
            )
        } else {
            (BackwardPeak::default(), 0.0, 0.0)
        };
        let hf_generate = super::preference::hf_generate(job, s.working);
        let generation = hf_generate.map(|g| generation(job, s, &g));
        let side = side_models(
            job,
            s,
            &Policy {
                weights,
                optimizer,
                grads: gradients.stored,
                adapters,
                saved: backward.activations + backward.scores,
            },
        );
        let hf_rollout = job.is_training() && job.objective.generates() && generation.is_some();
        let rollout = if hf_rollout {
            rollout_extras(job, s, &weights, &side)
        } else {
            (0.0, 0.0)
        };
        let vision = vision::bytes(job, &vision_rates(job, s, &optimizer));
        Terms {
            weights,
            adapters,
            gradients,
            optimizer,
            backward,
            temporaries,
            retained_logits,
            generation,
            side,
            rollout,
            vision,
        }
    }
}

/// The vision tower's parameters at the rates of the language model's.
fn vision_rates(job: &Job, s: &Shapes, opt: &OptimizerBytes) -> vision::Rates {
    vision::Rates {
        working: s.working,
        bnb: vision::bnb_quantized(job.weights).then(|| {
            let other = if job.upcast_non_quantized && job.is_training() {
                4.0
            } else {
                2.0
            };
            (job.weights.linear_bytes(), other)
        }),
        weight_share: match job.parallelism {
            _ if s.param_offloaded => 0.0,
            Parallelism::Tensor => 1.0 / s.gpus,
            Parallelism::Pipeline => 1.0,
            _ => s.shard(3),
        },
        grad: if full_tuning::fused_update(job) {
            0.0
        } else {
            grad_bytes(job)
        },
        grad_share: s.shard(2),
        base_state: opt.base_per_param,
        adapter_state: opt.per_param,
        master: if job.precision == Precision::Mixed && s.working < 4.0 {
            4.0
        } else {
            0.0
        },
        state_share: if s.optimizer_offloaded {
            0.0
        } else {
            s.shard(1)
        },
        paged: opt.paged,
        step_temp: opt.step_temp > 0.0 && !super::full_tuning::uses_svd(job.optimizer),
    }
}

/// The step's tensors for the block-level allocator replay ([`super::alloc_program`]), where the job is
/// one the program describes: a plain decoder (no recurrent layers, no vision tower) trained on one GPU or
/// under DDP, full or LoRA/QLoRA, with its logits in full (upcast for the loss) or none (a fused loss),
/// no side models, no offload and no in-backward update. Elsewhere the estimate keeps the allocator's
/// fitted reserve ([`allocator::replay`]).
fn training_program(job: &Job, s: &Shapes, t: &Terms) -> Option<TrainingProgram> {
    use super::activations as act;
    use super::job::{LossImpl, Mode};
    let arch = &job.arch;
    let side = &t.side;
    let plain_loss = match job.loss {
        LossImpl::Fp32Logits => true,
        LossImpl::TrlFusedHead => !super::loss::runs_trl_fused_head(job),
        LossImpl::Fused => true,
        _ => false,
    };
    let in_scope = job.is_training()
        && matches!(job.mode, Mode::Full | Mode::Lora | Mode::Qlora)
        && job.parallelism == Parallelism::Ddp
        && job.objective == super::preference::Objective::Sft
        && plain_loss
        && s.tensor_split == 1.0
        && s.stage_share == 1.0
        && !s.param_offloaded
        && !s.optimizer_offloaded
        && arch.stack().is_none()
        && t.vision.params == 0.0
        && side.reference + side.value_static + side.reward + side.engine_training == 0.0
        && !full_tuning::fused_update(job)
        && job.checkpointing != super::job::Checkpointing::Offload
        && arch.layers > 0;
    if !in_scope {
        return None;
    }
    let layers = f64::from(arch.layers);
    let h = f64::from(arch.hidden);
    let p = &s.params;
    let w = &t.weights;
    // Weight matrices of a layer, by shape, scaled to the layer's stored bytes.
    let (q, kv) = (arch.q_width(), arch.kv_width());
    let mut shapes: Vec<f64> = vec![h * q, h * kv, h * kv, q * h];
    match arch.moe {
        Some(m) => {
            let ei = f64::from(m.expert_intermediate) * h * f64::from(m.experts);
            shapes.extend([2.0 * ei, ei]);
            if m.shared_intermediate > 0 {
                shapes.extend([f64::from(m.shared_intermediate) * h; 3]);
            }
        }
        None => {
            let i = f64::from(arch.intermediate) * h;
            let n = if arch.mlp == super::arch::MlpKind::Gated {
                3
            } else {
                2
            };
            shapes.extend(std::iter::repeat_n(i, n));
        }
    }
    let shape_sum: f64 = shapes.iter().sum();
    let embedding = p.embedding * s.working;
    let head = if s.head_quantized > 0.0 {
        0.0
    } else {
        p.lm_head * s.working
    };
    let layer_weights = ((w.quantized + w.plain - embedding - head) / layers).max(0.0);
    let weights: Vec<f64> = shapes
        .iter()
        .map(|x| layer_weights * x / shape_sum)
        .collect();
    let adapters_per_layer = t.adapters / layers;
    let adapter_tensors: Vec<f64> = if adapters_per_layer > 0.0 {
        vec![adapters_per_layer / 14.0; 14]
    } else {
        Vec::new()
    };
    let stored = t.gradients.stored;
    let (layer_grads, outer_grads) = if job.mode == Mode::Full {
        let per_param = if s.trainable > 0.0 {
            stored / s.trainable
        } else {
            0.0
        };
        let layer_params = (p.total - p.embedding - p.lm_head) / layers;
        (
            shapes
                .iter()
                .map(|x| per_param * layer_params * x / shape_sum)
                .collect(),
            [p.embedding, p.lm_head]
                .iter()
                .filter(|n| **n > 0.0)
                .map(|n| n * per_param)
                .collect(),
        )
    } else if t.adapters > 0.0 {
        let ratio = stored / t.adapters;
        (
            adapter_tensors.iter().map(|a| a * ratio).collect(),
            Vec::new(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let o = &t.optimizer;
    let tokens = s.tokens;
    let ckpt = job.checkpointing == super::job::Checkpointing::Layer;
    let scores = act::score_matrices_per_token(arch, job, s.seq) * tokens;
    let adapters_saved = act::adapter_bytes_per_layer(job, arch);
    let saved =
        act::layer_bytes_per_token(arch, job).per_rank(1.0) * tokens + adapters_saved + scores;
    let recomputed = act::largest_layer_bytes_per_token(arch, job).per_rank(1.0) * tokens
        + adapters_saved
        + scores;
    let layer = LayerTensors {
        weights,
        grads: layer_grads,
        adapters: adapter_tensors,
        saved,
        checkpoint: if ckpt {
            act::residual_bytes(job) * h * tokens
        } else {
            0.0
        },
        recomputed: if ckpt { recomputed } else { 0.0 },
        backward: act::layer_backward_bytes_per_token(arch, job).per_rank(1.0) * tokens,
    };
    let logits_elem = if job.loss == LossImpl::Fused || !job.objective.has_vocab_logits() {
        0.0
    } else if job.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    let mlp = match arch.moe {
        Some(m) => f64::from(m.expert_intermediate),
        None => f64::from(arch.intermediate),
    };
    Some(TrainingProgram {
        tokens,
        hidden_row: s.act_bytes * h,
        mlp_row: s.act_bytes * mlp,
        layer_rows: layer_rows(job, s, mlp),
        embedding,
        head,
        layer,
        layers: arch.layers,
        final_norm: act::final_norm_bytes_per_token(arch, job) * tokens,
        logits_elem,
        logits: tokens * f64::from(arch.vocab),
        upcast: logits_elem < 4.0,
        keeps_logits: t.retained_logits > 0.0,
        outer_grads,
        state_ratio: if stored > 0.0 {
            o.states_allocated() / stored
        } else {
            0.0
        },
        temp_ratio: if stored > 0.0 {
            o.step_temp / stored
        } else {
            0.0
        },
        grads_persist: s.grads_persist,
    })
}

/// The tensors one decoder layer saves in forward, in the order it makes them, bytes per token (the
/// saved-tensor list of [`super::activations::layer_bytes_per_token`], tensor by tensor): the input norm's
/// fp32 input (and its normalized output when the weight trains), the projections' input (shared when the
/// weights train) and each adapter's own cast of it (fp32 for PEFT's fp32 adapters, 16-bit under
/// autocast), q, k, v and the attention output, the output projection's adapter input, the second norm, the
/// MLP's inputs, its gate, up and activation outputs (and their product when `down` trains), and the down
/// projection's adapter input.
fn layer_rows(job: &Job, s: &Shapes, mlp: f64) -> Vec<f64> {
    use super::job::{Mode, Module};
    let arch = &job.arch;
    let ab = s.act_bytes;
    let h = f64::from(arch.hidden);
    let (q, kv) = (arch.q_width(), arch.kv_width());
    let trained = job.mode == Mode::Full;
    let lora = matches!(job.mode, Mode::Lora | Mode::Qlora);
    let cast = if super::activations::autocast(job) || job.stack == super::stack::Stack::Torchtune {
        ab
    } else {
        4.0
    };
    let adapted = |m: Module| lora && arch.adapts(m, &job.lora.targets);
    let mut rows = Vec::with_capacity(24);
    let norm = |rows: &mut Vec<f64>| {
        rows.push(4.0 * h);
        if trained {
            rows.push(super::activations::residual_bytes(job) * h);
        }
    };
    norm(&mut rows);
    if trained {
        rows.push(ab * h);
    }
    for m in [Module::Q, Module::K, Module::V] {
        if adapted(m) {
            rows.push(cast * h);
        }
    }
    rows.extend([ab * q, ab * kv, ab * kv, ab * q]);
    if adapted(Module::O) {
        rows.push(cast * q);
    }
    norm(&mut rows);
    if trained {
        rows.push(ab * h);
    }
    for m in [Module::Gate, Module::Up] {
        if adapted(m) {
            rows.push(cast * h);
        }
    }
    rows.extend([ab * mlp; 3]);
    if trained {
        rows.push(ab * mlp);
    }
    if adapted(Module::Down) {
        rows.push(cast * mlp);
    }
    rows
}

/// The moments of the job's step, each with every term alive in it.
///
/// Training: backward (every saved activation and the loss buffers, or one layer's recomputation), the end
/// of backward (every gradient stored, a tied embedding's two gradients being summed), the optimizer step
/// (gradients, states and step temporaries); a vision-language model's tower encodes first; an RL job
/// generates its rollout before the training pass. Inference: the prefill with the whole KV cache.
///
/// - Gradients are alive at the start of backward only when they persist ([`Shapes::grads_persist`]).
/// - The optimizer's temporaries are parameter-sized tensors allocated and freed in the same order every
///   step, so each is served by the cached block of the same size its predecessor (or the previous step)
///   freed: best-fit reuse in `CUDACachingAllocator.cpp`. They add no fragmentation: on the fake-tensor
///   grid the allocator simulation of real AdamW foreach steps leaves 0.4–4 GiB reserved beyond allocated
///   at the optimizer peak, where 0.35 × the temporaries gave 5–61 GiB. The optimizer step is therefore
///   counted held, not transient.
/// - The vision tower: in training the batch's pixels and what the tower saved live through the language
///   model's forward and backward, its own backward comes last (every other gradient stored; beside a
///   tied embedding's gradient sum, counted together), its gradients are alive where the language model's
///   are; the Trainer's loop still holds the last micro-batch (`inputs`) while it steps; in inference the
///   pixels stay for the whole `generate`. Its forward is a moment of its own, before the language model
///   runs: beside it only the static memory and the gradients accumulation keeps.
/// - The previous optimizer step's `zero_grad(set_to_none=True)` freed the gradients: a rollout starts an
///   accumulation window, so no gradient is alive in it.
fn timeline(job: &Job, s: &Shapes, t: &Terms) -> Timeline {
    use Component as C;
    let w = &t.weights;
    let o = &t.optimizer;
    let side = &t.side;
    let vision = &t.vision;
    let grads = t.gradients.stored;
    let persist = s.grads_persist;
    let kept = |g: f64| if persist { g } else { 0.0 };
    // What every moment holds, before and after its own parts.
    let base = |phase: Phase, weights_extra: f64| {
        let mut m = Moment::new(phase);
        m.held(C::WeightsQuantized, w.quantized)
            .held(C::Weights, w.plain + weights_extra)
            .held(C::Adapters, t.adapters)
            .held(C::MasterWeights, o.master)
            .held(C::OptimizerStates, o.states_allocated());
        m
    };
    let models = |m: &mut Moment, engine: f64, value: f64| {
        m.held(C::ReferenceModel, side.reference)
            .held(C::ServingEngine, engine)
            .held(C::ValueModel, side.value_static + value)
            .held(C::RewardModel, side.reward);
    };
    let mut moments = Vec::with_capacity(5);
    let training = job.is_training();
    if training {
        let b = &t.backward;
        let mut backward = base(Phase::Backward, 0.0);
        if persist {
            backward.held(C::Gradients, grads);
        }
        backward
            .transient(C::Activations, b.activations)
            .transient(C::AttentionScores, b.scores)
            .transient(C::Logits, b.logits)
            .transient(C::Temporary, t.temporaries);
        models(&mut backward, side.engine_training, kept(side.value_grads));
        backward.transient(C::ValueModel, side.value_acts);
        backward
            .held(
                C::VisionTower,
                vision.resident + vision.pixels + kept(vision.grads),
            )
            .transient(C::VisionTower, vision.saved);
        moments.push(backward);

        // The bottom layer's backward: every gradient but the embedding's stored.
        let mut first_layer = base(Phase::Backward, 0.0);
        first_layer
            .held(C::Gradients, grads - t.gradients.last_to_arrive)
            .transient(C::Activations, b.first_layer)
            .transient(C::Logits, t.retained_logits)
            .transient(C::Temporary, t.temporaries);
        models(
            &mut first_layer,
            side.engine_training,
            kept(side.value_grads),
        );
        first_layer.held(
            C::VisionTower,
            vision.resident + vision.pixels + vision.saved + kept(vision.grads),
        );
        moments.push(first_layer);

        let tied = tied_embedding_sum(job, s);
        let mut end = base(Phase::EndOfBackward, 0.0);
        end.held(C::Gradients, grads)
            .transient(C::Temporary, tied)
            .transient(C::Logits, t.retained_logits);
        models(&mut end, side.engine_training, side.value_grads);
        end.held(
            C::VisionTower,
            vision.resident + vision.pixels + vision.saved + vision.grads,
        )
        .transient(C::VisionTower, vision.backward_tail);
        moments.push(end);

        let mut step = base(Phase::OptimizerStep, t.gradients.unresharded);
        step.held(C::Gradients, grads)
            .held(C::Temporary, o.step_temp)
            .transient(C::Logits, t.retained_logits);
        models(
            &mut step,
            side.engine_training,
            side.value_grads + side.value_step,
        );
        step.held(
            C::VisionTower,
            vision.resident + vision.pixels + vision.grads + vision.step_temp,
        );
        moments.push(step);
    } else if let Some(g) = &t.generation {
        let mut prefill = base(Phase::Prefill, 0.0);
        prefill
            .held(C::KvCache, g.kv_cache)
            .held(C::RecurrentState, g.recurrent_state)
            .transient(C::Temporary, g.prefill);
        models(&mut prefill, side.engine_training, 0.0);
        prefill.held(C::VisionTower, vision.resident + vision.pixels);
        if g.grows {
            prefill.growing = g.kv_cache;
        }
        moments.push(prefill);
    }
    if training && job.objective.generates() {
        let g = t.generation.unwrap_or_default();
        let (gathered, kept_scores) = t.rollout;
        let mut rollout = base(Phase::Generation, gathered);
        rollout
            .held(C::KvCache, g.kv_cache)
            .held(C::RecurrentState, g.recurrent_state)
            .transient(C::Temporary, g.prefill)
            .transient(C::Logits, kept_scores);
        models(&mut rollout, side.engine, 0.0);
        rollout.held(C::VisionTower, vision.resident);
        if g.grows {
            rollout.growing = g.kv_cache;
        }
        moments.push(rollout);
    }
    if vision.forward > 0.0 {
        let mut encoder = base(Phase::VisionEncoder, 0.0);
        if training && persist {
            encoder.held(C::Gradients, grads);
        }
        models(&mut encoder, side.engine_training, kept(side.value_grads));
        encoder
            .held(
                C::VisionTower,
                vision.resident + vision.pixels + kept(vision.grads),
            )
            .transient(C::VisionTower, vision.forward);
        moments.push(encoder);
    }
    let outside = vec![
        Part {
            component: C::OptimizerStates,
            bytes: o.states_paged(),
        },
        Part {
            component: C::ValueModel,
            bytes: side.value_paged,
        },
        Part {
            component: C::VisionTower,
            bytes: vision.paged,
        },
    ];
    Timeline {
        moments,
        outside,
        varying_shapes: job.variable_lengths && training,
        rank_by_need: training && job.objective.generates(),
    }
}

/// The followed moment's parts, the memory outside the allocator, the allocator's reserve and cache and
/// the CUDA context, one part per component.
fn breakdown(timeline: Timeline, replay: &Replay, context: f64) -> Vec<Part<Component>> {
    let parts = timeline
        .moments
        .into_iter()
        .nth(replay.moment)
        .map(|m| m.parts)
        .unwrap_or_default();
    merge(parts.into_iter().chain(timeline.outside).chain([
        Part {
            component: Component::AllocatorReserve,
            bytes: replay.reserve,
        },
        Part {
            component: Component::AllocatorCache,
            bytes: replay.cache,
        },
        Part {
            component: Component::CudaContext,
            bytes: context,
        },
    ]))
}

/// Host RAM, with the vision tower's parameters.
fn host_ram(job: &Job, s: &Shapes, t: &Terms) -> Vec<Part<HostComponent>> {
    host::host(
        job,
        s,
        &t.optimizer,
        VisionParams {
            params: t.vision.params,
            trainable: t.vision.trainable,
        },
    )
}
