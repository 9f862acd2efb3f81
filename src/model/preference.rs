//! Preference and RL fine-tuning on top of a training job: what each objective adds to plain SFT. The
//! conventions are TRL's (`DPOTrainer`, `ORPOTrainer`, `CPOTrainer` (SimPO), `KTOTrainer`, `RewardTrainer`,
//! `GRPOTrainer`, `PPOTrainer`), which LLaMA-Factory and OpenRLHF follow for the same objectives.
//!
//! The RL objectives (GRPO, PPO) alternate two phases on the same GPU: generation (rollouts, with a KV
//! cache, by HF `model.generate` or a colocated vLLM engine) and a training pass over prompt + completion.
//! The job's `seq_len` is then the prompt length and its `micro_batch` counts completions (sequences), as
//! TRL's `per_device_train_batch_size` does for both trainers.

use super::arch::ParamCounts;
use super::job::{Job, Mode, Parallelism};
use super::stack::Stack;
use serde::{Deserialize, Serialize};

/// The training objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Next-token prediction (SFT, continued pre-training).
    #[default]
    Sft,
    /// DPO/IPO: chosen and rejected sequences in one concatenated forward, against a reference model.
    Dpo,
    /// ORPO: chosen and rejected, no reference model.
    Orpo,
    /// SimPO / CPO: chosen and rejected, no reference model.
    Simpo,
    /// KTO: unpaired examples against a reference model.
    Kto,
    /// Reward modelling: chosen and rejected through a scalar head instead of the LM head.
    RewardModel,
    /// GRPO: `generations` completions per prompt are generated, then trained on.
    Grpo,
    /// PPO: one completion per prompt is generated, scored by a frozen reward model, and trained on with a
    /// value model (critic) beside the policy (TRL `PPOTrainer`, OpenRLHF `train_ppo`).
    Ppo,
}

/// Where the reference model of DPO, KTO, GRPO and PPO comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Reference {
    /// A second, frozen copy of the model on the GPU (TRL's default without PEFT).
    #[default]
    Copy,
    /// With PEFT, the base model with the adapters disabled is the reference: no copy (TRL's default when a
    /// `peft_config` is given).
    DisabledAdapters,
    /// Reference log-probabilities computed once before training (`precompute_ref_log_probs=True`): none.
    Precomputed,
    /// No reference at all (GRPO with `beta = 0`, TRL's default since 0.19).
    None,
}

/// GRPO settings (TRL `GRPOConfig`); `completion_tokens` is also PPO's response length
/// (`PPOConfig.response_length`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Grpo {
    /// Completions per prompt (`num_generations`).
    pub generations: u32,
    /// Longest completion (`max_completion_length`).
    pub completion_tokens: u32,
    /// GPU memory a colocated vLLM engine takes, GiB (`vllm_mode="colocate"`: its
    /// `vllm_gpu_memory_utilization` share of the GPU); 0 with a separate vLLM server or HF generation.
    pub vllm_gib: f64,
    /// The colocated engine sleeps during the training step (`vllm_enable_sleep_mode=True`).
    pub vllm_sleep: bool,
}

impl Default for Grpo {
    /// TRL `GRPOConfig` defaults: 8 generations, 256 completion tokens; no colocated engine.
    fn default() -> Self {
        Grpo {
            generations: 8,
            completion_tokens: 256,
            vllm_gib: 0.0,
            vllm_sleep: false,
        }
    }
}

impl Objective {
    /// Sequences the policy runs per example: 2 for paired objectives (TRL `concatenated_forward` stacks
    /// chosen and rejected into one batch), 1 otherwise.
    ///
    /// GRPO and PPO count completions, not prompts: since TRL 0.15 (huggingface/trl#2776, "redefining
    /// `per_device_batch_size` as generations per device") `per_device_train_batch_size` is the number of
    /// completions per GPU per forward, and `GRPOConfig.num_generations` only has to divide the effective batch
    /// (`num_processes × per_device_train_batch_size × gradient_accumulation_steps`); TRL 0.14 counted prompts
    /// and trained `batch × num_generations`. TRL's `PPOTrainer` generates one response per query, so its batch
    /// counts both.
    pub fn sequences_per_example(self) -> u32 {
        match self {
            Objective::Dpo | Objective::Orpo | Objective::Simpo | Objective::RewardModel => 2,
            Objective::Sft | Objective::Kto | Objective::Grpo | Objective::Ppo => 1,
        }
    }

    /// Whether the objective compares with a reference model.
    pub fn uses_reference(self) -> bool {
        matches!(
            self,
            Objective::Dpo | Objective::Kto | Objective::Grpo | Objective::Ppo
        )
    }

    /// Whether the objective generates its training sequences (a rollout phase before each training pass):
    /// GRPO and PPO. Their `seq_len` is the prompt, trained on with `completion_tokens` more.
    pub fn generates(self) -> bool {
        matches!(self, Objective::Grpo | Objective::Ppo)
    }

    /// Whether the LM head produces vocabulary logits (a reward model has a 1-wide scalar head instead:
    /// `AutoModelForSequenceClassification` with `num_labels=1`).
    pub fn has_vocab_logits(self) -> bool {
        self != Objective::RewardModel
    }
}

/// TRL `PPOConfig.local_rollout_forward_batch_size` (default 64): queries generated (and scored by the
/// reference, value and reward models) at once during a PPO rollout (`batch_generation` in
/// `trl/experimental/ppo/ppo_trainer.py`).
pub const PPO_ROLLOUT_FORWARD_BATCH: u32 = 64;

/// Sequences per GPU of one RL rollout: `(generated at once, rolled out per step)`.
///
/// - GRPO (TRL ≥ 0.17; 0.18 added `steps_per_generation`, huggingface/trl#3388): `_prepare_inputs` calls
///   `_generate_and_score_completions` once per optimizer step on the local generation batch,
///   `per_device_train_batch_size × steps_per_generation` completions, `steps_per_generation` defaulting to
///   `gradient_accumulation_steps`, and `model.generate` runs them in one call. The generation batch holds
///   whole groups (`generation_batch_size` must be a multiple of `num_generations`), so it is at least
///   `⌈num_generations / replicas⌉` per GPU. TRL 0.15–0.16 generated each micro-batch on its own.
/// - PPO (TRL `PPOTrainer`): the rollout batch is `local_batch_size = per_device_train_batch_size ×
///   gradient_accumulation_steps` queries, generated [`PPO_ROLLOUT_FORWARD_BATCH`] at a time.
///
/// `job` is normalized (its micro-batch already counts sequences); `(0, 0)` for objectives that do not
/// generate.
pub fn rollout_batch(job: &Job) -> (u32, u32) {
    let step = job.micro_batch.max(1).saturating_mul(job.grad_accum.max(1));
    match job.objective {
        Objective::Grpo => {
            let replicas = match job.parallelism {
                Parallelism::Pipeline | Parallelism::Tensor => 1,
                _ => job.gpus.max(1),
            };
            let batch = step.max(job.grpo.generations.max(1).div_ceil(replicas));
            (batch, batch)
        }
        Objective::Ppo => (step.min(PPO_ROLLOUT_FORWARD_BATCH), step),
        _ => (0, 0),
    }
}

/// One HF `model.generate` call on a GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Generate {
    /// Sequences generated together.
    pub batch: f64,
    /// Prompt tokens per sequence (prefilled at once).
    pub prompt: f64,
    /// Tokens generated per sequence.
    pub new_tokens: f64,
    /// Bytes per cached key/value element.
    pub kv_bytes: f64,
}

/// What `model.generate` runs in a (normalized) job, if anything: the inference request (`Job::inference`),
/// or an RL job's rollout when no colocated vLLM engine generates (GRPO with `vllm_gib = 0`, i.e. TRL
/// `use_vllm=False`, and PPO, whose TRL trainer always calls `generate`): [`rollout_batch`]'s sequences at
/// once, each the prompt (`seq_len − completion_tokens`, the prompt length the job was given) growing by
/// `completion_tokens`. A rollout's cache holds what the attention layers produce, in the compute dtype
/// (transformers `DynamicCache.update` concatenates the layer's key/value states): `working_bytes`, the
/// working weights' width (outside the training step there is no autocast), or 2 under a quantized base,
/// whose matmuls compute in 16-bit.
pub fn hf_generate(job: &Job, working_bytes: f64) -> Option<Generate> {
    if !job.is_training() {
        let inf = job.inference;
        return Some(Generate {
            batch: f64::from(inf.batch.max(1)),
            prompt: f64::from(inf.prompt_tokens.max(1)),
            new_tokens: f64::from(inf.new_tokens),
            kv_bytes: inf.kv_dtype.bytes(),
        });
    }
    let vllm = job.objective == Objective::Grpo && job.grpo.vllm_gib > 0.0;
    if !job.objective.generates() || vllm {
        return None;
    }
    let (batch, _) = rollout_batch(job);
    let completion = job.grpo.completion_tokens;
    Some(Generate {
        batch: f64::from(batch.max(1)),
        prompt: f64::from(job.seq_len.saturating_sub(completion).max(1)),
        new_tokens: f64::from(completion),
        kv_bytes: if job.weights.is_quantized() {
            2.0
        } else {
            working_bytes
        },
    })
}

/// Share of a training sequence's positions whose vocabulary logits are computed. GRPO asks the model for
/// the completion's logits only (`_get_per_token_logps_and_entropies` passes `logits_to_keep =
/// completion_length + 1`, `trl/trainer/grpo_trainer.py`), so `(C + 1) / (P + C)`; every other objective,
/// PPO included (TRL `PPOTrainer` takes `output.logits[:, context_length - 1 : -1]` of the full-length
/// logits), computes them everywhere. `job` is normalized (`seq_len = P + C` for GRPO).
pub fn logit_share(job: &Job) -> f64 {
    if job.objective == Objective::Grpo && job.is_training() {
        let seq = f64::from(job.seq_len.max(1));
        ((f64::from(job.grpo.completion_tokens) + 1.0) / seq).min(1.0)
    } else {
        1.0
    }
}

/// Parameter counts of the same architecture with its LM head replaced by a 1-wide scalar head, as
/// `AutoModelForSequenceClassification` with `num_labels=1` builds a reward or value model (HF
/// `LlamaForSequenceClassification`: the decoder plus `score = nn.Linear(hidden, 1, bias=False)`; TRL
/// `RewardTrainer` and `PPOTrainer` load reward and value models this way): `N − N_lm_head + h`. A tied
/// model keeps its embedding and gains the `h`-wide head.
pub fn scalar_head_params(p: &ParamCounts, hidden: u32) -> ParamCounts {
    let h = f64::from(hidden);
    ParamCounts {
        total: p.total - p.lm_head + h,
        non_linear: p.non_linear - p.lm_head + h,
        active: p.active - p.lm_head + h,
        lm_head: h,
        ..*p
    }
}

/// Whether PPO's value model (critic) shares the policy's backbone: with LoRA/QLoRA under LLaMA-Factory. Its
/// PPO stage puts a scalar value head on the policy's backbone (`create_model(..., add_valuehead=True)`, TRL's
/// `AutoModelForCausalLMWithValueHead`, `ValueHead.summary = nn.Linear(hidden, 1)`, which TRL ≤ 0.11's
/// `PPOTrainer` also used); the reward model is a second adapter on that backbone (LLaMA-Factory
/// `reward_model_type: lora`, its default) and the reference is the base with adapters disabled. One forward
/// gives logits and values, so the critic adds no activations.
///
/// Everywhere else the critic is a model of its own: TRL ≥ 0.12's `PPOTrainer` takes a separate
/// `value_model` and `reward_model` (`trl/trainer/ppo_trainer.py`; with a `peft_config` only the policy is
/// wrapped in adapters, `PolicyAndValueWrapper` still trains the whole value model), as does OpenRLHF's
/// critic (see `side_models::side_models`).
pub fn value_shares_backbone(mode: Mode, stack: Stack) -> bool {
    matches!(mode, Mode::Lora | Mode::Qlora) && stack == Stack::LlamaFactory
}

/// Whether a reference copy of the weights sits on the GPU.
pub fn reference_copy(objective: Objective, reference: Reference, peft: bool) -> bool {
    objective.uses_reference()
        && match reference {
            Reference::Copy => true,
            // Disabling adapters only works when there are adapters.
            Reference::DisabledAdapters => !peft,
            Reference::Precomputed | Reference::None => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_pairs() {
        assert_eq!(Objective::Dpo.sequences_per_example(), 2);
        assert_eq!(Objective::Kto.sequences_per_example(), 1);
        assert!(reference_copy(Objective::Dpo, Reference::Copy, true));
        assert!(!reference_copy(
            Objective::Dpo,
            Reference::DisabledAdapters,
            true
        ));
        assert!(reference_copy(
            Objective::Dpo,
            Reference::DisabledAdapters,
            false
        ));
        assert!(!reference_copy(Objective::Orpo, Reference::Copy, false));
        assert!(!Objective::RewardModel.has_vocab_logits());
        assert!(reference_copy(Objective::Ppo, Reference::Copy, false));
        assert!(!reference_copy(
            Objective::Ppo,
            Reference::DisabledAdapters,
            true
        ));
        assert_eq!(Objective::Ppo.sequences_per_example(), 1);
        assert!(Objective::Ppo.generates() && Objective::Grpo.generates());
        assert!(!Objective::Dpo.generates());
    }

    /// Rollout batches worked by hand. GRPO, micro-batch 4 × accumulation 4 on one GPU: one generation batch
    /// of 16 completions (2 prompts × 8). Micro-batch 2 × accumulation 1 with 8 generations: a group of 8 must
    /// be generated whole, 8 > 2. The same over 4 GPUs: ⌈8 / 4⌉ = 2 per GPU. PPO, 4 × 32 = 128 queries per
    /// step, generated 64 at a time.
    #[test]
    fn rollout_batches_by_hand() {
        let grpo = Job {
            objective: Objective::Grpo,
            micro_batch: 4,
            grad_accum: 4,
            ..Job::default()
        };
        assert_eq!(rollout_batch(&grpo), (16, 16));
        let small = Job {
            micro_batch: 2,
            grad_accum: 1,
            ..grpo.clone()
        };
        assert_eq!(rollout_batch(&small), (8, 8));
        let spread = Job {
            gpus: 4,
            ..small.clone()
        };
        assert_eq!(rollout_batch(&spread), (2, 2));
        let ppo = Job {
            objective: Objective::Ppo,
            micro_batch: 4,
            grad_accum: 32,
            ..Job::default()
        };
        assert_eq!(rollout_batch(&ppo), (64, 128));
        assert_eq!(rollout_batch(&Job::default()), (0, 0));
    }

    /// GRPO computes logits for the completion and one more position: prompt 2048 + completion 256 is a
    /// 2304-token sequence with 257 logit positions, 257 / 2304.
    #[test]
    fn grpo_logits_cover_the_completion_only() {
        let mut job = Job {
            objective: Objective::Grpo,
            seq_len: 2304,
            ..Job::default()
        };
        job.grpo.completion_tokens = 256;
        assert_eq!(logit_share(&job), 257.0 / 2304.0);
        job.objective = Objective::Ppo;
        assert_eq!(logit_share(&job), 1.0);
    }

    /// Llama 3.1 8B as a reward/value model: 8,030,261,248 − 525,336,576 (LM head, 128,256 × 4096) + 4096 =
    /// 7,504,928,768 parameters.
    #[test]
    fn a_scalar_head_replaces_the_lm_head() {
        let arch = crate::catalog::model("llama-3.1-8b")
            .unwrap()
            .arch()
            .clone();
        let p = arch.params();
        assert_eq!(p.total, 8_030_261_248.0);
        let v = scalar_head_params(&p, arch.hidden);
        assert_eq!(v.total, 7_504_928_768.0);
        assert_eq!(v.lm_head, 4096.0);
        assert_eq!(v.linear, p.linear);
    }
}
