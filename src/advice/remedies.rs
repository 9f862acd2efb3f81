//! What-if remedies: each single change a practitioner would try, and the best pairs, evaluated by the same
//! memory model, with what each saves and costs. Works on the page's [`Form`], so a remedy is directly the
//! form to apply.

use super::speed::{speed, Speed};
use super::{verdict, Fit, Verdict};
use crate::bytes::GIB;
use crate::catalog::{self, GpuEntry};
use crate::form::Form;
use crate::model::{
    estimate, AttentionImpl, Checkpointing, Estimate, KvDtype, LossImpl, Mode, Module, Offload,
    Optimizer, Parallelism, Precision, WeightFormat,
};

/// One change to the setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Change {
    /// Halve the micro-batch and double gradient accumulation (same effective batch).
    HalveBatch,
    /// Halve the sequence length.
    ShorterSequence,
    /// Turn on per-layer gradient checkpointing.
    Checkpointing,
    /// Offload checkpointed layer inputs to host RAM (Unsloth style).
    OffloadCheckpoints,
    /// FlashAttention-2 instead of eager/SDPA.
    FlashAttention,
    /// Fused linear + cross-entropy loss (Liger kernel).
    FusedLoss,
    /// SFT through TRL ≥ 1.15, whose `SFTTrainer` computes the loss with its fused LM head (no full logits).
    TrlFusedHead,
    /// 8-bit AdamW (bitsandbytes).
    Optimizer8bit,
    /// LoRA instead of full fine-tuning.
    Lora,
    /// QLoRA (NF4 base) instead of 16-bit LoRA.
    Qlora,
    /// Halve the LoRA rank.
    LowerRank,
    /// LoRA on attention projections only (q, k, v, o).
    AttentionTargetsOnly,
    /// Pure bf16 weights, gradients and states instead of fp32 master weights.
    PureBf16,
    /// ZeRO-2 over the GPUs present.
    Zero2,
    /// ZeRO-3 / FSDP full shard over the GPUs present.
    Zero3,
    /// Offload optimizer states to the CPU.
    CpuOffload,
    /// Generation: split every layer over the GPUs present (tensor parallel).
    TensorParallel,
    /// Generation: fp8 KV cache.
    Fp8KvCache,
    /// Generation: half the concurrent sequences.
    FewerSequences,
    /// Generation: 4-bit weights (AWQ/GPTQ).
    Int4Weights,
    /// A smaller model of the same family.
    SmallerModel,
    /// A GPU with more memory.
    BiggerGpu,
    /// GRPO: half the completions per prompt (`num_generations`), and half the completions per step, so
    /// each step still sees as many prompts.
    FewerGenerations,
    /// GRPO/PPO: half the completion length (`max_completion_length`, PPO `response_length`).
    ShorterCompletions,
    /// DPO/KTO: reference log-probabilities computed once before training (`precompute_ref_log_probs`).
    PrecomputeReference,
    /// LoRA/QLoRA: the base with the adapters disabled as the reference, instead of a copy.
    DisabledAdapterReference,
    /// GRPO with a colocated vLLM engine: sleep mode during the training step (`vllm_enable_sleep_mode`).
    VllmSleep,
    /// GRPO with a colocated vLLM engine: half its share of the GPU (`vllm_gpu_memory_utilization`).
    SmallerVllmShare,
}

impl Change {
    /// Swapping the GPU or the model, rather than a setting.
    pub fn swaps_hardware_or_model(self) -> bool {
        matches!(self, Change::BiggerGpu | Change::SmallerModel)
    }
}

/// What a change costs besides time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Caveat {
    /// 4-bit quantized base weights (QLoRA/AWQ): small quality loss.
    Quantized4bit,
    /// A smaller model is a different, weaker model.
    SmallerModel,
    /// Shorter sequences truncate or split training examples.
    Truncation,
    /// LoRA adapts fewer parameters than full fine-tuning.
    FewerTrainable,
    /// Lower rank or fewer targets: less adapter capacity.
    LessCapacity,
    /// No fp32 master weights: tiny updates can round away in bf16.
    NoMasterWeights,
    /// 8-bit optimizer states or KV cache: usually no measurable loss.
    EightBit,
    /// Needs new hardware.
    Purchase,
    /// Fewer sequences served at once.
    LessConcurrency,
    /// Fewer completions per prompt: a noisier group baseline for GRPO's advantages.
    FewerSamples,
    /// Completions longer than the new limit are cut off (and usually score worse).
    TruncatedCompletions,
    /// The reference log-probabilities need a pass over the whole dataset before training.
    PrecomputePass,
    /// Waking the engine each step moves its weights back and rebuilds its cache.
    WakeLatency,
    /// A smaller engine share holds fewer sequences at once: slower generation.
    LessEngineCache,
    /// Needs a newer library release than the one assumed.
    NewerRelease,
}

impl Caveat {
    /// Penalty used to rank remedies, in "equivalent slowdown" units: quality and money weigh more than
    /// time. A ranking choice, not a measurement.
    fn penalty(self) -> f64 {
        match self {
            Caveat::EightBit => 0.02,
            Caveat::NoMasterWeights => 0.05,
            Caveat::LessCapacity => 0.1,
            Caveat::LessConcurrency => 0.2,
            Caveat::Quantized4bit => 0.25,
            Caveat::FewerTrainable => 0.3,
            Caveat::Truncation => 0.4,
            Caveat::SmallerModel => 0.6,
            Caveat::Purchase => 1.0,
            Caveat::PrecomputePass => 0.05,
            Caveat::WakeLatency => 0.1,
            Caveat::LessEngineCache => 0.15,
            Caveat::FewerSamples => 0.3,
            Caveat::TruncatedCompletions => 0.4,
            // An upgrade of one library, no change to the training itself.
            Caveat::NewerRelease => 0.02,
        }
    }
}

/// One evaluated remedy.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Remedy {
    /// The changes applied (one, or a combination).
    pub changes: Vec<Change>,
    /// The form with the changes applied.
    pub form: Form,
    /// Per-GPU need after the change, bytes (device total).
    pub need: f64,
    /// GPU memory saved per GPU, bytes (negative: costs memory).
    pub saved: f64,
    /// Host RAM needed after the change, bytes.
    pub ram_need: f64,
    /// Whether the job then fits (VRAM and RAM).
    pub fits: bool,
    /// Time per trained (or generated) token relative to now, minus one: 0.25 = 25% slower. `None` when the
    /// speed model has nothing to say (no throughput figure for the GPU).
    pub slowdown: Option<f64>,
    /// Quality or money caveats.
    pub caveats: Vec<Caveat>,
    /// Ranking score: slowdown plus caveat penalties (lower is better).
    pub cost: f64,
}

/// The GPU used for speed ratios: the chosen one, or an RTX 4090 stand-in for a custom GPU (only ratios
/// between setups are used, so the stand-in's absolute speed does not matter).
fn speed_gpu(form: &Form) -> &'static GpuEntry {
    catalog::gpu(&form.gpu)
        .filter(|g| g.tflops_16bit().is_some() && g.memory_bandwidth_gbps.is_some())
        .or_else(|| catalog::gpu("rtx-4090"))
        .expect("rtx-4090 is in the catalog")
}

/// The estimate, verdict and speed of a form.
pub fn evaluate(form: &Form) -> (Estimate, Verdict, Option<Speed>) {
    let job = form.job();
    let est = estimate(&job);
    let v = verdict(
        &est,
        form.gpu_usable_gib() * GIB,
        f64::from(form.ram_gib) * GIB,
    );
    let sp = speed(&job, speed_gpu(form), est.trainable_params);
    (est, v, sp)
}

/// The single changes that apply to this form (each changes something), with their caveats.
pub fn single_changes(form: &Form) -> Vec<(Change, Form, Vec<Caveat>)> {
    let mut out = Vec::new();
    let mut add = |change: Change, f: Form, caveats: Vec<Caveat>| {
        if f != *form {
            out.push((change, f, caveats));
        }
    };
    let training = form.mode != Mode::Inference;
    let lora = matches!(form.mode, Mode::Lora | Mode::Qlora);
    if training {
        if form.micro_batch > 1 {
            add(
                Change::HalveBatch,
                Form {
                    micro_batch: form.micro_batch / 2,
                    grad_accum: form.grad_accum.saturating_mul(2),
                    ..form.clone()
                },
                vec![],
            );
        }
        if form.seq_len >= 256 {
            add(
                Change::ShorterSequence,
                Form {
                    seq_len: form.seq_len / 2,
                    ..form.clone()
                },
                vec![Caveat::Truncation],
            );
        }
        if form.checkpointing == Checkpointing::Off {
            add(
                Change::Checkpointing,
                Form {
                    checkpointing: Checkpointing::Layer,
                    ..form.clone()
                },
                vec![],
            );
        } else {
            add(
                Change::OffloadCheckpoints,
                Form {
                    checkpointing: Checkpointing::Offload,
                    ..form.clone()
                },
                vec![],
            );
        }
        let fa2 = catalog::gpu(&form.gpu).is_none_or(|g| g.flash_attention2_support);
        if fa2 {
            add(
                Change::FlashAttention,
                Form {
                    attention: AttentionImpl::Flash2,
                    ..form.clone()
                },
                vec![],
            );
        }
        add(
            Change::FusedLoss,
            Form {
                loss: LossImpl::Fused,
                ..form.clone()
            },
            vec![],
        );
        // TRL's SFTTrainer from 1.15 on: the same job with the fused LM head (`loss::runs_trl_fused_head`).
        if form.stack == crate::model::Stack::HfTrainer
            && form.objective == crate::model::preference::Objective::Sft
            && form.loss == LossImpl::Fp32Logits
        {
            add(
                Change::TrlFusedHead,
                Form {
                    loss: LossImpl::TrlFusedHead,
                    ..form.clone()
                },
                vec![Caveat::NewerRelease],
            );
        }
        if matches!(
            form.optimizer,
            Optimizer::Adamw | Optimizer::PagedAdamw | Optimizer::Adamw16
        ) {
            add(
                Change::Optimizer8bit,
                Form {
                    optimizer: Optimizer::Adamw8bit,
                    ..form.clone()
                },
                vec![Caveat::EightBit],
            );
        }
        if matches!(form.mode, Mode::Full | Mode::Freeze) {
            add(
                Change::Lora,
                Form {
                    mode: Mode::Lora,
                    ..form.clone()
                },
                vec![Caveat::FewerTrainable],
            );
        }
        if form.mode == Mode::Lora {
            add(
                Change::Qlora,
                Form {
                    mode: Mode::Qlora,
                    weights: WeightFormat::Nf4,
                    ..form.clone()
                },
                vec![Caveat::Quantized4bit],
            );
        }
        // Rank and targets mean nothing to the prompt methods and trainable tokens, which adapt no module.
        let modules = lora && form.peft_method.adapts_modules();
        if modules && form.lora_rank > 4 {
            add(
                Change::LowerRank,
                Form {
                    lora_rank: form.lora_rank / 2,
                    ..form.clone()
                },
                vec![Caveat::LessCapacity],
            );
        }
        if modules
            && form
                .lora_targets
                .iter()
                .any(|m| matches!(m, Module::Gate | Module::Up | Module::Down))
        {
            let mut f = form.clone();
            f.lora_targets
                .retain(|m| matches!(m, Module::Q | Module::K | Module::V | Module::O));
            add(Change::AttentionTargetsOnly, f, vec![Caveat::LessCapacity]);
        }
        if form.precision != Precision::Pure16 {
            add(
                Change::PureBf16,
                Form {
                    precision: Precision::Pure16,
                    ..form.clone()
                },
                vec![Caveat::NoMasterWeights],
            );
        }
        if form.gpus > 1 {
            for (change, par) in [
                (Change::Zero2, Parallelism::Zero2),
                (Change::Zero3, Parallelism::Zero3),
            ] {
                add(
                    change,
                    Form {
                        parallelism: par,
                        ..form.clone()
                    },
                    vec![],
                );
            }
        }
        if form.offload == Offload::None {
            let par = if form.gpus > 1 || form.parallelism == Parallelism::Zero3 {
                Parallelism::Zero3
            } else {
                Parallelism::Zero2
            };
            add(
                Change::CpuOffload,
                Form {
                    offload: Offload::Optimizer,
                    parallelism: par,
                    ..form.clone()
                },
                vec![],
            );
        }
        for (change, f, caveats) in objective_changes(form) {
            add(change, f, caveats);
        }
    } else {
        if form.kv_dtype == KvDtype::Bf16 {
            add(
                Change::Fp8KvCache,
                Form {
                    kv_dtype: KvDtype::Fp8,
                    ..form.clone()
                },
                vec![Caveat::EightBit],
            );
        }
        if form.concurrent > 1 {
            add(
                Change::FewerSequences,
                Form {
                    concurrent: form.concurrent / 2,
                    ..form.clone()
                },
                vec![Caveat::LessConcurrency],
            );
        }
        if !form.weights.is_quantized() || form.weights == WeightFormat::Int8 {
            add(
                Change::Int4Weights,
                Form {
                    weights: WeightFormat::AwqInt4,
                    ..form.clone()
                },
                vec![Caveat::Quantized4bit],
            );
        }
        if form.gpus > 1 && form.parallelism != Parallelism::Tensor {
            add(
                Change::TensorParallel,
                Form {
                    parallelism: Parallelism::Tensor,
                    ..form.clone()
                },
                vec![],
            );
        }
    }
    if let Some(f) = smaller_model(form) {
        add(Change::SmallerModel, f, vec![Caveat::SmallerModel]);
    }
    if let Some(f) = bigger_gpu(form) {
        add(Change::BiggerGpu, f, vec![Caveat::Purchase]);
    }
    out
}

/// The levers of the preference and RL objectives, each only where it applies (the form is a training one).
///
/// - Fewer generations (GRPO, `num_generations ≥ 2`): TRL generates `per_device_train_batch_size ×
///   steps_per_generation` completions at once (`preference::rollout_batch`); halving `num_generations` while
///   keeping the prompts per step halves the completions per step (gradient accumulation halved, or the
///   micro-batch when there is no accumulation), and with them the rollout's KV cache.
/// - Shorter completions (GRPO, PPO): `max_completion_length` bounds both the rollout's cache and the
///   trained sequence.
/// - Precomputed reference (DPO, KTO, with a reference copy on the GPU): `precompute_ref_log_probs=True`
///   (TRL `DPOConfig`, `KTOConfig`) scores the dataset with the reference once, before training, and frees it.
///   GRPO and PPO score fresh completions every step, so they cannot.
/// - Disabled adapters (LoRA/QLoRA with a reference copy): TRL's default with a `peft_config` (`DPOTrainer`,
///   `GRPOTrainer`, `PPOTrainer` set `ref_model = None` and disable the adapter for the reference pass).
/// - vLLM sleep mode (GRPO with a colocated engine): `vllm_enable_sleep_mode=True`, "offload weights/cache
///   during the optimizer step" (TRL `GRPOConfig`).
/// - A smaller vLLM share (GRPO with a colocated engine): half `vllm_gpu_memory_utilization`, offered only
///   while the half still holds what vLLM needs before any KV cache (its weights, profiling peak and
///   non-torch memory, `model::serve::vllm_kv_budget_bytes`) plus one rollout sequence's cache, without
///   which vLLM refuses to start.
fn objective_changes(form: &Form) -> Vec<(Change, Form, Vec<Caveat>)> {
    use crate::model::preference::{reference_copy, Objective, Reference};
    let mut out = Vec::new();
    let obj = form.objective;
    if obj == Objective::Grpo && form.generations >= 2 {
        let mut f = Form {
            generations: form.generations / 2,
            ..form.clone()
        };
        if form.grad_accum >= 2 {
            f.grad_accum = form.grad_accum / 2;
        } else if form.micro_batch >= 2 {
            f.micro_batch = form.micro_batch / 2;
        }
        out.push((Change::FewerGenerations, f, vec![Caveat::FewerSamples]));
    }
    if obj.generates() && form.completion_tokens >= 64 {
        out.push((
            Change::ShorterCompletions,
            Form {
                completion_tokens: form.completion_tokens / 2,
                ..form.clone()
            },
            vec![Caveat::TruncatedCompletions],
        ));
    }
    let peft = matches!(form.mode, Mode::Lora | Mode::Qlora);
    let copy = form.mode != Mode::Inference && reference_copy(obj, form.reference, peft);
    if copy && matches!(obj, Objective::Dpo | Objective::Kto) {
        out.push((
            Change::PrecomputeReference,
            Form {
                reference: Reference::Precomputed,
                ..form.clone()
            },
            vec![Caveat::PrecomputePass],
        ));
    }
    if copy && peft {
        out.push((
            Change::DisabledAdapterReference,
            Form {
                reference: Reference::DisabledAdapters,
                ..form.clone()
            },
            vec![],
        ));
    }
    if obj == Objective::Grpo && form.vllm_gib > 0 {
        if !form.vllm_sleep {
            out.push((
                Change::VllmSleep,
                Form {
                    vllm_sleep: true,
                    ..form.clone()
                },
                vec![Caveat::WakeLatency],
            ));
        }
        let half = form.vllm_gib / 2;
        if half > 0 && vllm_starts(form, half) {
            out.push((
                Change::SmallerVllmShare,
                Form {
                    vllm_gib: half,
                    ..form.clone()
                },
                vec![Caveat::LessEngineCache],
            ));
        }
    }
    out
}

/// Whether a colocated vLLM engine given `share_gib` of the GPU can start: its KV budget
/// (`model::serve::vllm_kv_budget_bytes`: the share less its weights, the profiling pass's activation peak
/// and the non-torch memory) must hold one sequence of prompt + completion, since vLLM refuses to start when
/// the cache cannot hold one request of `max_model_len` (TRL's `vllm_max_model_length`, assumed set to
/// prompt + completion). The weights are the model's 16-bit dtype, or bitsandbytes 4-bit under QLoRA (TRL
/// passes `quantization="bitsandbytes"`); the profiling pass runs TRL's `max_num_batched_tokens=4096` over
/// `max_num_seqs = per_device_train_batch_size × steps_per_generation` sequences.
fn vllm_starts(form: &Form, share_gib: u32) -> bool {
    use crate::model::serve;
    let arch = form.arch();
    let weights = if form.mode == Mode::Qlora && form.weights.is_bnb_4bit() {
        form.weights
    } else {
        WeightFormat::Bf16
    };
    let seqs = form
        .micro_batch
        .max(1)
        .saturating_mul(form.grad_accum.max(1));
    let one_sequence = serve::kv_bytes_per_token_layer(&arch, 1, 2.0)
        * f64::from(arch.layers)
        * (f64::from(form.seq_len) + f64::from(form.completion_tokens));
    let budget = serve::vllm_kv_budget_bytes(
        f64::from(share_gib),
        1.0,
        serve::weights_bytes_per_gpu(&arch, weights, 1),
        serve::vllm_activation_peak_bytes(&arch, 1, 2.0, 4096, seqs),
        serve::non_torch_gib(1) * GIB,
    );
    budget >= one_sequence
}

/// The largest catalog model of the same family that is smaller than the current one and fits (else the
/// smallest of the family).
fn smaller_model(form: &Form) -> Option<Form> {
    let current = catalog::model(&form.model)?;
    let size = current.arch().params().total;
    let mut family: Vec<_> = catalog::models()
        .iter()
        .filter(|m| m.family == current.family && m.arch().params().total < size * 0.9)
        .collect();
    family.sort_by(|a, b| b.arch().params().total.total_cmp(&a.arch().params().total));
    let candidates: Vec<Form> = family
        .iter()
        .map(|m| Form {
            model: m.id.clone(),
            ..form.clone()
        })
        .collect();
    candidates
        .iter()
        .find(|f| evaluate(f).1.fit != Fit::VramShort)
        .or(candidates.last())
        .cloned()
}

/// The catalog GPU with the least memory that fits the job, if the current GPU does not.
fn bigger_gpu(form: &Form) -> Option<Form> {
    let have = form.gpu_usable_gib();
    let mut gpus: Vec<_> = catalog::gpus()
        .iter()
        .filter(|g| g.usable_gib > have && same_memory_kind(form, g))
        .collect();
    gpus.sort_by(|a, b| a.usable_gib.total_cmp(&b.usable_gib));
    gpus.iter()
        .map(|g| Form {
            gpu: g.id.clone(),
            ..form.clone()
        })
        .find(|f| matches!(evaluate(f).1.fit, Fit::Fits | Fit::Tight | Fit::RamShort))
}

/// Whether a GPU's memory is the host's RAM (Apple silicon, DGX Spark, Strix Halo, Jetson: the catalog's
/// `segment` says "unified memory" or SoC): such a box is not an upgrade card to buy for a discrete GPU's job,
/// and its share of RAM competes with the host side of the same job.
pub(crate) fn shares_host_memory(g: &catalog::GpuEntry) -> bool {
    let segment = g.segment.to_ascii_lowercase();
    g.vendor == "Apple" || segment.contains("unified") || segment.contains("soc")
}

/// Whether `g` is the same kind of machine as the form's GPU: a discrete card for a discrete card's job, a
/// unified-memory box for one that already runs on such a box (an unknown GPU counts as discrete).
pub(crate) fn same_memory_kind(form: &Form, g: &catalog::GpuEntry) -> bool {
    let unified_now = catalog::gpu(&form.gpu).is_some_and(shares_host_memory);
    shares_host_memory(g) == unified_now
}

fn tokens_per_s(s: Option<Speed>) -> Option<f64> {
    s.map(|s| s.tokens_per_s)
        .filter(|t| t.is_finite() && *t > 0.0)
}

fn build(
    base: &(Estimate, Verdict, Option<Speed>),
    changes: Vec<Change>,
    new: Form,
    caveats: Vec<Caveat>,
) -> Remedy {
    let (_, v, sp) = evaluate(&new);
    let slowdown = match (tokens_per_s(base.2), tokens_per_s(sp)) {
        (Some(old), Some(now)) => Some(old / now - 1.0),
        _ => None,
    };
    let fits = matches!(v.fit, Fit::Fits | Fit::Tight);
    let cost = slowdown.unwrap_or(0.0).max(-0.5) + caveats.iter().map(|c| c.penalty()).sum::<f64>();
    Remedy {
        changes,
        need: v.vram_need,
        saved: base.1.vram_need - v.vram_need,
        ram_need: v.ram_need,
        fits,
        slowdown,
        caveats,
        cost,
        form: new,
    }
}

/// Every single change, evaluated; those that fit first (cheapest first), then the rest by memory saved.
pub fn rank_single(form: &Form) -> Vec<Remedy> {
    let base = evaluate(form);
    let mut out: Vec<Remedy> = single_changes(form)
        .into_iter()
        .map(|(c, f, cav)| build(&base, vec![c], f, cav))
        // A change that moves memory by less than 0.005 GiB and does not make the job fit (FlashAttention
        // on a job that already uses a fused kernel, say) is no remedy.
        .filter(|r| r.saved.abs() >= 0.005 * crate::bytes::GIB || (r.fits && !base_fits(&base)))
        .collect();
    sort(&mut out);
    out
}

/// Whether the unchanged job fits the GPU.
fn base_fits(base: &(Estimate, Verdict, Option<Speed>)) -> bool {
    !matches!(base.1.fit, Fit::VramShort | Fit::BothShort)
}

/// The cheapest combinations of setting changes that make the job fit (at most `limit`). Hardware and model
/// swaps are left out: they stand on their own in [`rank_single`]. Pairs first; three-way combinations only
/// when no pair fits, among the six changes that save the most; then a greedy chain of biggest savers.
pub fn best_combinations(form: &Form, limit: usize) -> Vec<Remedy> {
    let base = evaluate(form);
    // TRL's fused head saves what the fused loss saves, from the same setting: the combinations take the
    // fused loss alone, and TRL's stands among the single changes.
    let mut singles: Vec<(Change, Form, Vec<Caveat>)> = single_changes(form)
        .into_iter()
        .filter(|(c, _, _)| !c.swaps_hardware_or_model() && *c != Change::TrlFusedHead)
        .collect();
    let mut out = combine(&base, form, &singles, 2);
    if out.is_empty() {
        // Keep the six biggest savers for the three-way search.
        let saved = |f: &Form| base.1.vram_need - evaluate(f).1.vram_need;
        singles.sort_by(|a, b| saved(&b.1).total_cmp(&saved(&a.1)));
        singles.truncate(6);
        out = combine(&base, form, &singles, 3);
    }
    if out.is_empty() {
        out.extend(greedy(&base, form));
    }
    sort(&mut out);
    out.dedup_by(|a, b| a.form == b.form);
    out.truncate(limit);
    out
}

/// Applies, one after another, the setting change that saves the most memory, until the job fits (at most
/// six steps); `None` if it never does.
fn greedy(base: &(Estimate, Verdict, Option<Speed>), form: &Form) -> Option<Remedy> {
    let mut f = form.clone();
    let mut changes = Vec::new();
    let mut caveats = Vec::new();
    for _ in 0..6 {
        let need = evaluate(&f).1.vram_need;
        let (c, next, cav) = single_changes(&f)
            .into_iter()
            .filter(|(c, _, _)| {
                !c.swaps_hardware_or_model() && *c != Change::TrlFusedHead && !changes.contains(c)
            })
            .map(|(c, next, cav)| {
                let saved = need - evaluate(&next).1.vram_need;
                (saved, c, next, cav)
            })
            .filter(|(saved, ..)| *saved > 0.0)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, c, next, cav)| (c, next, cav))?;
        f = next;
        changes.push(c);
        caveats.extend(cav);
        let r = build(base, changes.clone(), f.clone(), caveats.clone());
        if r.fits {
            return Some(r);
        }
    }
    None
}

/// Every fitting combination of `k` distinct changes from `singles`, applied in order (each change is
/// re-derived from the already-changed form, so halving a batch twice is not a combination).
fn combine(
    base: &(Estimate, Verdict, Option<Speed>),
    form: &Form,
    singles: &[(Change, Form, Vec<Caveat>)],
    k: usize,
) -> Vec<Remedy> {
    let mut out = Vec::new();
    let n = singles.len();
    let mut idx: Vec<usize> = (0..k).collect();
    if n < k {
        return out;
    }
    loop {
        let mut f = form.clone();
        let mut changes = Vec::new();
        let mut caveats = Vec::new();
        let mut applied = true;
        for &i in &idx {
            let (c, _, cav) = &singles[i];
            match single_changes(&f).into_iter().find(|(x, _, _)| x == c) {
                Some((_, next, _)) => {
                    f = next;
                    changes.push(*c);
                    caveats.extend(cav.iter().copied());
                }
                None => applied = false,
            }
        }
        if applied {
            let r = build(base, changes, f, caveats);
            if r.fits {
                out.push(r);
            }
        }
        // Next k-combination in lexicographic order.
        let mut i = k;
        while i > 0 && idx[i - 1] == n - k + i - 1 {
            i -= 1;
        }
        if i == 0 {
            return out;
        }
        idx[i - 1] += 1;
        for j in i..k {
            idx[j] = idx[j - 1] + 1;
        }
    }
}

fn sort(v: &mut [Remedy]) {
    v.sort_by(|a, b| {
        b.fits.cmp(&a.fits).then(if a.fits {
            a.cost.total_cmp(&b.cost)
        } else {
            b.saved.total_cmp(&a.saved)
        })
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oom_form() -> Form {
        // Full fine-tune of an 8B model on one 24 GiB card: far too big.
        Form {
            mode: Mode::Full,
            ..Form::default()
        }
    }

    #[test]
    fn every_single_change_is_evaluated_by_the_model() {
        let form = Form::default();
        let base = evaluate(&form).1.vram_need;
        for r in rank_single(&form) {
            let (_, v, _) = evaluate(&r.form);
            assert_eq!(r.need, v.vram_need, "{:?}", r.changes);
            assert!((r.saved - (base - v.vram_need)).abs() < 1.0);
        }
    }

    #[test]
    fn checkpointing_saves_memory_and_costs_about_a_third() {
        // Full fine-tuning: one more forward (2N) on top of 6N per token ≈ +33%. (With LoRA the backward
        // has no weight gradients, so the same recomputation costs relatively more, ≈ +50%.)
        let form = Form {
            mode: Mode::Full,
            checkpointing: Checkpointing::Off,
            ..Form::default()
        };
        let r = rank_single(&form)
            .into_iter()
            .find(|r| r.changes == [Change::Checkpointing])
            .unwrap();
        assert!(r.saved > 0.0);
        let slow = r.slowdown.unwrap();
        assert!((0.25..0.40).contains(&slow), "{slow}");
    }

    #[test]
    fn fitting_remedies_come_first_and_cheapest_first() {
        let ranked = rank_single(&Form::default());
        let first_misfit = ranked.iter().position(|r| !r.fits).unwrap_or(ranked.len());
        assert!(ranked[first_misfit..].iter().all(|r| !r.fits));
        for w in ranked[..first_misfit].windows(2) {
            assert!(w[0].cost <= w[1].cost);
        }
    }

    #[test]
    fn a_hopeless_job_gets_a_bigger_gpu_or_combination() {
        let form = oom_form();
        assert_eq!(evaluate(&form).1.fit, Fit::VramShort);
        let singles = rank_single(&form);
        assert!(singles
            .iter()
            .any(|r| r.changes == [Change::BiggerGpu] && r.fits));
        let combos = best_combinations(&form, 5);
        assert!(!combos.is_empty());
        for r in &combos {
            assert!(
                r.fits && (2..=3).contains(&r.changes.len()),
                "{:?}",
                r.changes
            );
            assert!(!r.changes.iter().any(|c| c.swaps_hardware_or_model()));
            assert_eq!(evaluate(&r.form).1.vram_need, r.need);
        }
    }

    #[test]
    fn the_bigger_gpu_is_a_discrete_card_not_a_unified_memory_box() {
        // A job that needs more than 96 GiB: DGX Spark (128 GB) and Strix Halo (up to 96 GiB to the GPU)
        // offer more "GPU memory" than most cards, yet they are the host's RAM.
        for gpu in ["rtx-4090", "a100-80gb"] {
            let form = Form {
                gpu: gpu.into(),
                ..oom_form()
            };
            if let Some(bigger) = bigger_gpu(&form) {
                let g = catalog::gpu(&bigger.gpu).unwrap();
                assert!(!shares_host_memory(g), "{} proposed", g.id);
            }
        }
        // On a Mac the bigger machine is a bigger unified-memory box.
        let mac = Form {
            gpu: "apple-m4-pro".into(),
            ..oom_form()
        };
        if let Some(bigger) = bigger_gpu(&mac) {
            assert!(shares_host_memory(catalog::gpu(&bigger.gpu).unwrap()));
        }
        let spark = catalog::gpu("gb10-dgx-spark").unwrap();
        let halo = catalog::gpu("radeon-8060s-strix-halo").unwrap();
        let h100 = catalog::gpu("h100-sxm").unwrap();
        assert!(shares_host_memory(spark) && shares_host_memory(halo) && !shares_host_memory(h100));
    }
}
