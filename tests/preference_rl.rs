//! The RL objectives (GRPO, PPO) and the preference levers of the advisor, with every figure worked out by
//! hand in the comments (Llama 3.1 8B: 32 layers, hidden 4096, 8 KV heads of 128, intermediate 14,336,
//! vocabulary 128,256, untied LM head; 8,030,261,248 parameters).
#![cfg(not(target_arch = "wasm32"))]

use vramfit::advice::remedies::{rank_single, single_changes, Change};
use vramfit::form::Form;
use vramfit::model::preference::{Objective, Reference};
use vramfit::model::*;

const GIB: f64 = 1_073_741_824.0;

/// KV cache of one token over the 32 layers, bf16: 32 × 2 (K, V) × 8 × 128 × 2 B = 131,072 B.
const KV_PER_TOKEN: f64 = 131_072.0;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1.0
}

fn grpo(micro_batch: u32, grad_accum: u32, prompt: u32, completion: u32) -> Job {
    let mut job = Job {
        objective: Objective::Grpo,
        reference: Reference::None,
        micro_batch,
        grad_accum,
        seq_len: prompt,
        ..Job::default()
    };
    job.grpo.completion_tokens = completion;
    job
}

/// GRPO with HF generation (no vLLM): micro-batch 1 × accumulation 16 generates 16 completions at once,
/// each 1024 prompt + 256 completion tokens.
/// - KV cache: 131,072 B × 1280 tokens × 16 = 2,684,354,560 B (2.5 GiB).
/// - Prefill over 16 × 1024 = 16,384 tokens, the MLP's working set the larger: 2 B × 16,384 × (2 × 4096 +
///   3 × 14,336) = 1,677,721,600 B (attention: 2 × 16,384 × (2 × 4096 + 3 × 4096) = 671,088,640 B), plus
///   the last position's logits, 16 × 128,256 × (2 + 4) = 12,312,576 B: 1,690,034,176 B.
///
/// The training pass runs one sequence at a time, so the rollout is the peak.
#[test]
fn grpo_rollout_kv_cache_and_prefill_by_hand() {
    let e = estimate(&grpo(1, 16, 1024, 256));
    assert_eq!(e.phase, Phase::Generation);
    assert!(close(e.gpu_bytes(Component::KvCache), 2_684_354_560.0));
    assert!(close(2_684_354_560.0, KV_PER_TOKEN * 1280.0 * 16.0));
    assert!(close(e.gpu_bytes(Component::Temporary), 1_690_034_176.0));
    assert_eq!(e.gpu_bytes(Component::ServingEngine), 0.0);
    // A group is generated whole: micro-batch 1 × accumulation 1 with 8 generations still generates 8
    // completions: 131,072 × 1280 × 8 = 1,342,177,280 B.
    let e = estimate(&grpo(1, 1, 1024, 256));
    assert_eq!(e.phase, Phase::Generation);
    assert!(close(e.gpu_bytes(Component::KvCache), 1_342_177_280.0));
    // A colocated vLLM engine generates instead: no HF cache anywhere.
    let mut vllm = grpo(1, 16, 1024, 256);
    vllm.grpo.vllm_gib = 20.0;
    let e = estimate(&vllm);
    assert_eq!(e.gpu_bytes(Component::KvCache), 0.0);
    assert!(close(e.gpu_bytes(Component::ServingEngine), 20.0 * GIB));
}

/// Under ZeRO-3 over 4 GPUs, generation gathers the whole policy (TRL `ds3_gather_for_generation`): each
/// GPU holds its quarter, 16,060,522,496 / 4 = 4,015,130,624 B, and gathers the other three quarters,
/// 12,045,391,872 B, so the rollout sees the full 16,060,522,496 B of bf16 weights.
#[test]
fn zero3_gathers_the_policy_for_generation() {
    let job = Job {
        gpus: 4,
        parallelism: Parallelism::Zero3,
        ..grpo(1, 16, 1024, 256)
    };
    let e = estimate(&job);
    assert_eq!(e.phase, Phase::Generation);
    assert!(close(e.gpu_bytes(Component::Weights), 16_060_522_496.0));
}

/// GRPO through TRL's own trainer scores the completion with TRL's fused LM head (`add_fused_lm_head`; the
/// labels mask the prompt, and the head keeps only labelled positions): with 4 completions of 256 tokens after a
/// 2048-token prompt it scores N = 4 × 256 = 1,024 tokens: one logit tile, 1,024 × 32,768 × 2 B =
/// 67,108,864 B, and the compact hidden states with their fp32 gradient and its 16-bit cast, 1,024 × 4,096 ×
/// (2 + 4 + 2) B = 33,554,432 B: 100,663,296 B, where the model's own loss would have kept 12 B for each of
/// the 4 × 257 × 128,256 completion logits (1,582,166,016 B). The loss setting does not change it: TRL
/// refuses Liger's fused linear cross-entropy beside its own head (`GRPOTrainer.__init__` raises).
#[test]
fn grpo_scores_the_completion_through_trls_fused_head() {
    let job = Job {
        checkpointing: Checkpointing::Off,
        ..grpo(4, 1, 2048, 256)
    };
    let loss = |job: &Job| {
        let (job, _) = vramfit::model::normalize::normalize(job);
        vramfit::model::loss::loss_bytes(&job, &vramfit::model::shapes::Shapes::of(&job))
    };
    assert!(close(loss(&job), 100_663_296.0));
    let fused = Job {
        loss: LossImpl::Fused,
        ..job.clone()
    };
    assert!(close(loss(&fused), 100_663_296.0));
    // So small a loss leaves the peak to a decoder layer's backward.
    assert_eq!(estimate(&job).gpu_bytes(Component::Logits), 0.0);
}

/// Full PPO, pure bf16 with AdamW (16-bit moments, 4 B per parameter), one GPU, reference copy, no
/// accumulation. The value and reward models are Llama with a 1-wide head: 8,030,261,248 − 525,336,576 +
/// 4096 = 7,504,928,768 parameters.
/// - reference: 8,030,261,248 × 2 = 16,060,522,496 B;
/// - reward model (frozen, bf16): 7,504,928,768 × 2 = 15,009,857,536 B;
/// - value model at the optimizer step: weights 15,009,857,536 + moments 7,504,928,768 × 4 =
///   30,019,715,072 + gradients 15,009,857,536 + the foreach step temporary 15,009,857,536 =
///   75,049,287,680 B.
///
/// The step (policy: 16,060,522,496 B of gradients and as much of step temporary) beats backward over one
/// sequence of 512 tokens.
#[test]
fn ppo_full_model_shares_by_hand() {
    let mut job = Job {
        mode: Mode::Full,
        objective: Objective::Ppo,
        reference: Reference::Copy,
        micro_batch: 1,
        grad_accum: 1,
        seq_len: 256,
        ..Job::default()
    };
    job.grpo.completion_tokens = 256;
    let e = estimate(&job);
    assert_eq!(e.phase, Phase::OptimizerStep);
    assert!(close(
        e.gpu_bytes(Component::ReferenceModel),
        16_060_522_496.0
    ));
    assert!(close(e.gpu_bytes(Component::RewardModel), 15_009_857_536.0));
    assert!(close(e.gpu_bytes(Component::ValueModel), 75_049_287_680.0));
    assert!(close(e.gpu_bytes(Component::Gradients), 16_060_522_496.0));
}

/// PPO with LoRA r = 16 on all linear modules under LLaMA-Factory: one backbone. Adapters per layer: q 16 × (4096 + 4096) =
/// 131,072, k and v 16 × (4096 + 1024) = 81,920 each, o 131,072, gate/up/down 16 × (4096 + 14,336) =
/// 294,912 each: 1,310,720 per layer, 41,943,040 in all, 167,772,160 B in fp32.
/// - reward model: a second adapter (167,772,160 B) and its head, (4096 + 1) × 4 = 16,388 B: 167,788,548 B;
/// - value model: the head (4097 parameters) with its fp32 weight and AdamW moments, 4097 × 12 = 49,164 B,
///   and its fp32 gradient, 16,388 B, in the phases that hold gradients;
/// - reference: the base with adapters disabled, nothing.
///
/// The rollout of 32 queries (micro-batch 1 × accumulation 32, under TRL's 64 at a time) keeps every
/// step's fp32 scores: 32 × 64 completion tokens × 128,256 × 4 B = 1,050,673,152 B, beside a KV cache of
/// 131,072 × (512 + 64) × 32 = 2,415,919,104 B; it outweighs training on one sequence (its logits:
/// 576 × 128,256 × 12 B = 886,505,472 B).
#[test]
fn ppo_lora_shares_the_backbone_by_hand() {
    let mut job = Job {
        stack: Stack::LlamaFactory,
        objective: Objective::Ppo,
        reference: Reference::DisabledAdapters,
        micro_batch: 1,
        grad_accum: 32,
        seq_len: 512,
        ..Job::default()
    };
    job.grpo.completion_tokens = 64;
    let e = estimate(&job);
    assert_eq!(e.gpu_bytes(Component::ReferenceModel), 0.0);
    assert!(close(e.gpu_bytes(Component::RewardModel), 167_788_548.0));
    let value = e.gpu_bytes(Component::ValueModel);
    assert!(close(value, 49_164.0) || close(value, 65_552.0), "{value}");
    assert_eq!(e.phase, Phase::Generation);
    assert!(close(e.gpu_bytes(Component::Logits), 1_050_673_152.0));
    assert!(close(e.gpu_bytes(Component::KvCache), 2_415_919_104.0));
}

/// PPO with LoRA under TRL (≥ 0.12, the generic stack): only the policy has adapters; the value model is a
/// whole Llama with a 1-wide head (7,504,928,768 parameters, as in the full PPO case above) trained in full
/// in pure bf16, and the reward model a whole frozen copy:
/// - reward model: 7,504,928,768 × 2 = 15,009,857,536 B;
/// - value model at the optimizer step: weights 15,009,857,536 + 16-bit AdamW moments 30,019,715,072 +
///   gradients 15,009,857,536 + the foreach temporary 15,009,857,536 = 75,049,287,680 B;
/// - reference: the base with adapters disabled, nothing.
///
/// The critic's step (30 GB of gradients and temporary) outweighs backward over 512 tokens.
#[test]
fn ppo_lora_under_trl_trains_a_separate_critic_by_hand() {
    let mut job = Job {
        objective: Objective::Ppo,
        reference: Reference::DisabledAdapters,
        micro_batch: 1,
        grad_accum: 1,
        seq_len: 256,
        ..Job::default()
    };
    job.grpo.completion_tokens = 256;
    assert_eq!(job.stack, Stack::Generic);
    let e = estimate(&job);
    assert_eq!(e.phase, Phase::OptimizerStep);
    assert_eq!(e.gpu_bytes(Component::ReferenceModel), 0.0);
    assert!(close(e.gpu_bytes(Component::RewardModel), 15_009_857_536.0));
    assert!(close(e.gpu_bytes(Component::ValueModel), 75_049_287_680.0));
}

/// vLLM sleep mode takes the engine's share out of the training step and leaves it in the rollout. With
/// a training step larger than the share (full fine-tuning, 8 × 2048 tokens without checkpointing), the
/// step is the peak either way and the engine's 24 GiB is the whole difference.
#[test]
fn sleep_mode_frees_the_engine_during_training() {
    let mut awake = Job {
        mode: Mode::Full,
        checkpointing: Checkpointing::Off,
        micro_batch: 8,
        grad_accum: 1,
        ..grpo(8, 1, 2048, 256)
    };
    awake.grpo.vllm_gib = 24.0;
    let asleep = Job {
        grpo: vramfit::model::preference::Grpo {
            vllm_sleep: true,
            ..awake.grpo
        },
        ..awake.clone()
    };
    let (a, s) = (estimate(&awake), estimate(&asleep));
    assert!(close(a.gpu_bytes(Component::ServingEngine), 24.0 * GIB));
    assert_eq!(s.gpu_bytes(Component::ServingEngine), 0.0);
    assert_eq!(a.phase, s.phase);
    assert!(close(a.fit_need - s.fit_need, 24.0 * GIB));
    // With a small training step the rollout (engine awake) becomes the peak.
    let small = Job {
        mode: Mode::Lora,
        micro_batch: 1,
        seq_len: 128,
        ..asleep
    };
    let e = estimate(&small);
    assert_eq!(e.phase, Phase::Generation);
    assert!(close(e.gpu_bytes(Component::ServingEngine), 24.0 * GIB));
}

const NEW: [Change; 6] = [
    Change::FewerGenerations,
    Change::ShorterCompletions,
    Change::PrecomputeReference,
    Change::DisabledAdapterReference,
    Change::VllmSleep,
    Change::SmallerVllmShare,
];

fn offered(form: &Form) -> Vec<Change> {
    single_changes(form)
        .into_iter()
        .map(|(c, _, _)| c)
        .filter(|c| NEW.contains(c))
        .collect()
}

/// The remedy `c`, ranked, with the memory it saves.
fn saved(form: &Form, c: Change) -> f64 {
    rank_single(form)
        .into_iter()
        .find(|r| r.changes == [c])
        .map(|r| r.saved)
        .unwrap_or_else(|| panic!("{c:?} not ranked"))
}

#[test]
fn objective_remedies_are_offered_only_where_they_apply() {
    assert!(offered(&Form::default()).is_empty());
    let full_dpo = Form {
        mode: Mode::Full,
        objective: Objective::Dpo,
        reference: Reference::Copy,
        gpu: "a100-80gb".into(),
        ..Form::default()
    };
    assert_eq!(offered(&full_dpo), [Change::PrecomputeReference]);
    let lora_dpo = Form {
        mode: Mode::Lora,
        ..full_dpo.clone()
    };
    assert_eq!(
        offered(&lora_dpo),
        [
            Change::PrecomputeReference,
            Change::DisabledAdapterReference
        ]
    );
    // No copy to drop: nothing.
    let disabled = Form {
        reference: Reference::DisabledAdapters,
        ..lora_dpo.clone()
    };
    assert!(offered(&disabled).is_empty());
    // GRPO cannot precompute; without an engine the engine's levers do not apply.
    let grpo = Form {
        objective: Objective::Grpo,
        reference: Reference::Copy,
        ..lora_dpo.clone()
    };
    assert_eq!(
        offered(&grpo),
        [
            Change::FewerGenerations,
            Change::ShorterCompletions,
            Change::DisabledAdapterReference
        ]
    );
    let engine = Form {
        vllm_gib: 40,
        reference: Reference::None,
        ..grpo.clone()
    };
    assert_eq!(
        offered(&engine),
        [
            Change::FewerGenerations,
            Change::ShorterCompletions,
            Change::VllmSleep,
            Change::SmallerVllmShare
        ]
    );
    // Half of 20 GiB cannot hold Llama 3.1 8B's 15 GiB of weights and its working memory: not offered.
    let tight = Form {
        vllm_gib: 20,
        ..engine.clone()
    };
    assert!(!offered(&tight).contains(&Change::SmallerVllmShare));
    // Asleep already.
    let asleep = Form {
        vllm_sleep: true,
        ..engine.clone()
    };
    assert!(!offered(&asleep).contains(&Change::VllmSleep));
    // PPO has one completion per prompt and no engine: only the completion length (and the reference).
    let ppo = Form {
        objective: Objective::Ppo,
        reference: Reference::DisabledAdapters,
        ..grpo.clone()
    };
    assert_eq!(offered(&ppo), [Change::ShorterCompletions]);
}

#[test]
fn objective_remedies_lower_the_peak() {
    // GRPO with HF generation on an 80 GB card: micro-batch 2 × accumulation 8 generates 16 completions of
    // 2048 + 256 tokens at once (a 4.5 GiB cache), and the rollout is the peak.
    let grpo = Form {
        objective: Objective::Grpo,
        reference: Reference::Copy,
        gpu: "a100-80gb".into(),
        micro_batch: 2,
        grad_accum: 8,
        ..Form::default()
    };
    assert_eq!(
        vramfit::advice::remedies::evaluate(&grpo).0.phase,
        Phase::Generation
    );
    for c in [
        Change::FewerGenerations,
        Change::ShorterCompletions,
        Change::DisabledAdapterReference,
    ] {
        assert!(saved(&grpo, c) > 0.0, "{c:?}");
    }
    // The reference copy of the bf16 weights is 16,060,522,496 B ≈ 14.96 GiB.
    assert!(saved(&grpo, Change::DisabledAdapterReference) > 14.0 * GIB);
    let full_dpo = Form {
        mode: Mode::Full,
        objective: Objective::Dpo,
        reference: Reference::Copy,
        gpu: "a100-80gb".into(),
        ..Form::default()
    };
    assert!(saved(&full_dpo, Change::PrecomputeReference) > 14.0 * GIB);
    let engine = Form {
        vllm_gib: 40,
        reference: Reference::None,
        ..grpo.clone()
    };
    assert!(saved(&engine, Change::VllmSleep) > 0.0);
    assert!(saved(&engine, Change::SmallerVllmShare) > 0.0);
    let ppo = Form {
        objective: Objective::Ppo,
        reference: Reference::DisabledAdapters,
        ..grpo.clone()
    };
    assert!(saved(&ppo, Change::ShorterCompletions) > 0.0);
}

/// Every new remedy and caveat has a label in both languages.
#[test]
fn objective_remedies_have_labels() {
    use vramfit::i18n::{caveat, change, Lang};
    let engine = Form {
        objective: Objective::Grpo,
        vllm_gib: 40,
        gpu: "a100-80gb".into(),
        ..Form::default()
    };
    for (c, f, caveats) in single_changes(&engine) {
        for lang in [Lang::En, Lang::Zh] {
            assert!(!change(lang, c, &f).trim().is_empty());
            for cv in &caveats {
                assert!(!caveat(lang, *cv).trim().is_empty());
            }
        }
    }
}
