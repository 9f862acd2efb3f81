//! The models a preference or RL job holds beside the policy: DPO/KTO/GRPO/PPO's frozen reference, PPO's
//! value and reward models, GRPO's colocated vLLM engine, and what an RL rollout adds.

use super::arch::ParamCounts;
use super::job::{Job, Mode, Parallelism};
use super::optimizer::OptimizerBytes;
use super::preference::{self, Objective};
use super::shapes::Shapes;
use super::weights::WeightBytes;
use crate::bytes::GIB;

/// The policy's own terms the other models are sized from.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    pub weights: WeightBytes,
    pub optimizer: OptimizerBytes,
    /// Stored gradients.
    pub grads: f64,
    /// Adapter bytes.
    pub adapters: f64,
    /// Activations and attention scores at backward's peak.
    pub saved: f64,
}

/// The other models' bytes on the busiest GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SideModels {
    /// The frozen reference model.
    pub reference: f64,
    /// PPO's critic, always alive: weights, master copy and allocator-held optimizer states.
    pub value_static: f64,
    /// The critic's paged optimizer states.
    pub value_paged: f64,
    /// The critic's gradients.
    pub value_grads: f64,
    /// The critic's optimizer-step temporaries.
    pub value_step: f64,
    /// The critic's activations at backward's peak.
    pub value_acts: f64,
    /// The critic's weights (what a ZeRO-3 gather for generation brings in beside the policy's).
    pub value_weights: f64,
    /// PPO's frozen reward model.
    pub reward: f64,
    /// GRPO's colocated vLLM engine while it generates.
    pub engine: f64,
    /// The engine during the training step (0 when it sleeps).
    pub engine_training: f64,
}

/// The reference, value, reward and engine bytes of a job.
///
/// - Reference (DPO/KTO/GRPO/PPO): a frozen second copy of the base weights in their stored format, unless
///   the PEFT base with adapters disabled, precomputed log-probabilities or beta = 0 stand in for it
///   (`preference::reference_copy`).
/// - PPO without PEFT: the critic and the reward model are the policy's architecture with a scalar head
///   (`preference::scalar_head_params`), stored like the policy and sharded like it (TRL `PPOTrainer`
///   prepares them with the same DeepSpeed/FSDP config; OpenRLHF's critic and reward model likewise): the
///   policy's weight bytes with the head swapped. The reward model is frozen, forward only. The critic is
///   trained by the same optimizer on the same micro-batch (TRL `PolicyAndValueWrapper`: one loss
///   `pg_loss + vf_coef · vf_loss`, one backward), so per parameter it holds what the policy holds
///   (gradients, master weights, optimizer states, step temporaries: the policy's scaled by the critic's
///   share of parameters, `r = N_v / N` in full fine-tuning, 1 when both train the same layers), and in
///   backward it keeps the activations of its own forward over the micro-batch, the policy's without the
///   vocabulary logits.
/// - PPO with PEFT under LLaMA-Factory (`preference::value_shares_backbone`): the critic is a value head
///   `Linear(h, 1)` on the shared backbone, trained in fp32 (weight, gradient and optimizer states: 4 + 4 +
///   the optimizer's bytes per parameter), and the reward model a second adapter of the policy's size plus
///   its head, in fp32 (PEFT's adapter dtype); neither adds activations (one forward gives logits and
///   values).
/// - PPO with PEFT elsewhere (TRL ≥ 0.12): only the policy carries adapters; the critic is a whole model
///   trained in full and the reward model a whole frozen one ([`separate_critic`]).
/// - GRPO's colocated vLLM engine holds its share of the GPU (weights and KV cache) while it generates.
///   With sleep mode TRL puts it to sleep after each generation (`llm.sleep(level=2)`,
///   `trl/generation/vllm_generation.py`, woken with `wake_up` before the next), and level 2 "discards both
///   the model weights and the KV cache" (vLLM docs, "Sleep Mode"), so the training step runs without it.
pub fn side_models(job: &Job, s: &Shapes, policy: &Policy) -> SideModels {
    let p = &s.params;
    let arch = &job.arch;
    let w = &policy.weights;
    let mut out = SideModels::default();
    let training = job.is_training();
    let peft_job = matches!(job.mode, Mode::Lora | Mode::Qlora);
    if training && preference::reference_copy(job.objective, job.reference, peft_job) {
        out.reference = w.quantized + w.plain;
    }
    let ppo = training && job.objective == Objective::Ppo;
    if ppo && preference::value_shares_backbone(job.mode, job.stack) {
        let head = f64::from(arch.hidden) + 1.0;
        out.value_static = head * (4.0 + policy.optimizer.per_param);
        out.value_grads = head * 4.0;
        out.reward = policy.adapters + head * 4.0;
    } else if ppo && peft_job {
        let critic = separate_critic(job);
        out.value_weights = critic.weights;
        out.value_static = critic.weights + critic.resident;
        out.value_paged = critic.paged;
        out.value_grads = critic.grads;
        out.value_step = critic.step_temp;
        out.value_acts = critic.saved;
        out.reward = critic.weights;
    } else if ppo {
        let v = preference::scalar_head_params(p, arch.hidden);
        let plain = |c: &ParamCounts| if s.quantized { c.non_linear } else { c.total };
        out.value_weights = w.quantized + w.plain * plain(&v) / plain(p).max(1.0);
        let r = if job.mode == Mode::Full {
            v.total / p.total.max(1.0)
        } else {
            1.0
        };
        let o = &policy.optimizer;
        out.value_static = out.value_weights + (o.master + o.states_allocated()) * r;
        out.value_paged = o.states_paged() * r;
        out.value_grads = policy.grads * r;
        out.value_step = o.step_temp * r;
        out.value_acts = policy.saved;
        out.reward = out.value_weights;
    }
    if training && job.objective == Objective::Grpo {
        out.engine = job.grpo.vllm_gib.max(0.0) * GIB;
    }
    out.engine_training = if job.grpo.vllm_sleep { 0.0 } else { out.engine };
    out
}

/// What an RL rollout (GRPO, PPO) generating with `model.generate` adds beside the KV cache and prefill.
///
/// - Under ZeRO-3 the whole policy, gathered for generation (TRL `ds3_gather_for_generation=True`, the
///   default: `unwrap_model_for_generation` enters `deepspeed.zero.GatheredParameters` on every parameter
///   of the wrapped model, PPO's critic included): the shards this GPU does not hold.
/// - In PPO the scores of every generated position of the rollout batch, kept to the end of the rollout
///   (TRL `generate(..., output_scores=True)` then `torch.stack(output.scores, 1)`): rollout × C × V in
///   fp32 (transformers `_sample` upcasts each step's `next_token_logits` to fp32).
///
/// Returns `(gathered weights, kept scores)`.
pub fn rollout_extras(
    job: &Job,
    s: &Shapes,
    weights: &WeightBytes,
    side: &SideModels,
) -> (f64, f64) {
    let held = weights.quantized + weights.plain;
    let gathered = if job.parallelism == Parallelism::Zero3 && (job.gpus > 1 || s.param_offloaded) {
        (weights.whole - held) * (1.0 + side.value_weights / held.max(1.0))
    } else {
        0.0
    };
    let kept_scores = if job.objective == Objective::Ppo {
        let (_, step) = preference::rollout_batch(job);
        f64::from(step) * f64::from(job.grpo.completion_tokens) * f64::from(job.arch.vocab) * 4.0
    } else {
        0.0
    };
    (gathered, kept_scores)
}

/// A PPO critic that is a model of its own, trained in full beside a PEFT policy, on the busiest GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Critic {
    /// Its weights (also the reward model's: the same architecture, frozen).
    weights: f64,
    /// Master copy and allocator-held optimizer states.
    resident: f64,
    /// Paged optimizer states.
    paged: f64,
    grads: f64,
    step_temp: f64,
    /// Activations at its backward's peak (no vocabulary logits).
    saved: f64,
}

/// TRL ≥ 0.12's `PPOTrainer` with a `peft_config`: the policy gets adapters, but `value_model` (an
/// `AutoModelForSequenceClassification` with `num_labels=1`, loaded like the policy without its
/// quantization) is trained whole by the same optimizer in the same backward (`PolicyAndValueWrapper`), and
/// `reward_model` is a whole frozen copy. Each is the policy's architecture with a scalar head
/// (`preference::scalar_head_params`); the critic's terms are a full fine-tune's of that architecture (the
/// same weight, gradient, optimizer and activation terms, with a full job's rates, scaled from the LM-head
/// model to the scalar-head one), and its activations those of its own forward over the micro-batch.
fn separate_critic(job: &Job) -> Critic {
    use super::job::WeightFormat;
    let full = Job {
        mode: Mode::Full,
        weights: if job.weights.is_quantized() {
            WeightFormat::Bf16
        } else {
            job.weights
        },
        ..job.clone()
    };
    let s = Shapes::of(&full);
    let v = preference::scalar_head_params(&s.params, full.arch.hidden);
    let r = v.total / s.params.total.max(1.0);
    let w = super::weights::weight_bytes(&full, &s);
    let o = super::optimizer::optimizer(&full, &s);
    let g = super::gradients::gradients(&full, &s);
    let b = super::activations::backward_peak(&full, &s, 0.0, 0.0);
    Critic {
        weights: (w.quantized + w.plain) * r,
        resident: (o.master + o.states_allocated()) * r,
        paged: o.states_paged() * r,
        grads: g.stored * r,
        step_temp: o.step_temp * r,
        saved: b.activations + b.scores,
    }
}
