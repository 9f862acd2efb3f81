//! The loss: logits and cross-entropy buffers at the loss's backward.

use super::activations::autocast;
use super::job::{Job, LossImpl, Mode, Precision};
use super::preference::{self, Objective};
use super::shapes::Shapes;

/// Bytes per (token × vocab) element at the loss's backward peak.
///
/// HF upcasts the logits to fp32 for the loss; the HF Trainer drops the model outputs before backward, and
/// `log_softmax` saves only its output, so the 16-bit logits and their fp32 copy are freed in forward. At
/// `LogSoftmaxBackward` the saved fp32 output (4), the incoming gradient (4) and the outgoing one (4) are
/// alive: 12 B (the oracle's peak op on every grid job that keeps full logits). Kept in 16-bit: 2 + 2 + 2 + 2
/// and an fp32 reduction buffer, ≈ 9 B. Chunked (torchtune, litgpt): only the upcast chunk is live, but the
/// 16-bit logits of all chunks and their gradient remain: ≈ 4 B. Fused linear + cross-entropy (Liger,
/// Unsloth): no logits tensor at all. Sources: transformers `loss_utils.py`, torchtune
/// `CEWithChunkedOutputLoss`, `shared/design/memory-model.md` §11.
pub fn loss_bytes_per_logit(loss: LossImpl) -> f64 {
    match loss {
        // Where TRL's fused head does not run, the model's own loss does ([`runs_trl_fused_head`]).
        LossImpl::Fp32Logits | LossImpl::TrlFusedHead => 12.0,
        LossImpl::Bf16Logits => 9.0,
        LossImpl::Chunked => 4.0,
        LossImpl::Fused => 0.0,
    }
}

/// The loss's bytes on the busiest GPU of a training step: [`loss_bytes_per_logit`] × tokens × vocabulary,
/// split by tensor parallelism (a vocabulary-parallel LM head). A reward model's scalar head makes no
/// vocabulary logits; GRPO computes the completion's only (`preference::logit_share`); TRL's DPO never
/// builds the logits, nor do its GRPO and KTO ([`trl_fused_head_bytes`]); TRL's SimPO keeps 8 B per logit ([`TRL_SIMPO_PER_LOGIT`]).
pub fn loss_bytes(job: &Job, s: &Shapes) -> f64 {
    if !job.objective.has_vocab_logits() {
        return 0.0;
    }
    if runs_trl_fused_head(job) {
        return trl_fused_head_bytes(job, s);
    }
    let trl_unlabelled = matches!(job.objective, Objective::Orpo | Objective::Simpo)
        && matches!(job.loss, LossImpl::Fp32Logits | LossImpl::TrlFusedHead)
        && job.stack.runs_trl_preference_trainers();
    let per_logit = if trl_unlabelled && job.objective == Objective::Simpo {
        TRL_SIMPO_PER_LOGIT
    } else if job.stack == super::stack::Stack::Torchtune && job.loss == LossImpl::Chunked {
        torchtune_chunked_per_logit(job)
    } else {
        loss_bytes_per_logit(job.loss) + softcap_bytes_per_logit(job)
    };
    let per_logit = if trl_unlabelled && !autocast(job) && job.precision != Precision::Fp32 {
        per_logit * TRL_UNLABELLED_16BIT_SHARE
    } else {
        per_logit
    };
    let chunk = litgpt_chunk_gradients(job);
    (per_logit * s.tokens * preference::logit_share(job) + chunk) * f64::from(job.arch.vocab)
        / s.tensor_split
}

/// The output chunks torchtune's `CEWithChunkedOutputLoss` splits the logits into (`num_output_chunks=8`,
/// `torchtune/modules/loss/ce_chunked_output_loss.py`; the recipes call `model.set_num_output_chunks` with it).
pub const TORCHTUNE_OUTPUT_CHUNKS: f64 = 8.0;

/// Bytes per logit of torchtune's chunked loss at its peak, the forward's last chunk. The model returns the
/// logits as a list of chunks in the compute dtype, which the recipe holds until `del logits` after the loss
/// (`recipes/lora_finetune_single_device.py` `_loss_step`); each chunk's `cross_entropy(chunk.float())` keeps
/// its fp32 `log_softmax` output for backward, and the last chunk's fp32 copy is alive while its loss is
/// taken: `ab + 4 + 4 / 8` (2 + 4 + 0.5 = 6.5 B in bf16; in fp32 `.float()` copies nothing: 8 B). Every
/// saved activation is alive then too, so this moment outweighs the loss's backward (4 B and one chunk's
/// gradients). The oracle running torchtune 0.6.1's recipes peaks at `nll_loss_forward` in
/// `CEWithChunkedOutputLoss` on every LoRA job (`tests/golden_torchtune.rs`).
fn torchtune_chunked_per_logit(job: &Job) -> f64 {
    if job.precision == Precision::Fp32 {
        8.0
    } else {
        2.0 + 4.0 + 4.0 / TORCHTUNE_OUTPUT_CHUNKS
    }
}

/// Whether TRL's fused LM head computes the loss: TRL's DPO, GRPO and KTO trainers always use it (the HF
/// Trainer stacks that run TRL's preference trainers), and its `SFTTrainer` from TRL 1.15 on
/// (`trl/trainer/sft_trainer.py`: `add_fused_lm_head(..., outputs=("log_probs", "entropy", "is_top1"))` in
/// `__init__`, `model(**inputs, fused_lm_head=True)` in `compute_loss`; TRL 1.14 and earlier built the full
/// logits), which the job says by its loss, [`LossImpl::TrlFusedHead`].
pub fn runs_trl_fused_head(job: &Job) -> bool {
    let preference = matches!(
        job.objective,
        Objective::Dpo | Objective::Grpo | Objective::Kto
    ) && job.stack.runs_trl_preference_trainers();
    preference || (job.objective == Objective::Sft && job.loss == LossImpl::TrlFusedHead)
}

/// litgpt's LM head runs in 128-token chunks (`lm_head_chunk_size=128`, `litgpt/finetune/*.py`) and
/// `chunked_cross_entropy` takes one `cross_entropy` per chunk (`litgpt/utils.py`); at each chunk's
/// `LogSoftmaxBackward0` the incoming and the outgoing gradient of that chunk are alive beside the saved
/// outputs of all chunks: 2 × 2 B × micro-batch × min(128, sequence) tokens, per vocabulary entry (the
/// oracle's `backward_temp` at that op: 0.105 GiB for phi-1.5 at 4 × 1044 tokens × 51,200). Returned in
/// token-bytes, to be multiplied by the vocabulary. Other stacks: 0.
fn litgpt_chunk_gradients(job: &Job) -> f64 {
    if job.stack != super::stack::Stack::Litgpt || job.loss != LossImpl::Chunked {
        return 0.0;
    }
    let bytes = if job.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    2.0 * bytes * f64::from(job.micro_batch) * f64::from(job.seq_len.min(128))
}

/// The model's output logits a training loop keeps bound through backward and the optimizer step
/// ([`super::stack::Stack::keeps_logits_through_backward`]): tokens × vocabulary in the compute dtype
/// (16-bit, or fp32 for an fp32 run), split by tensor parallelism. The fake-tensor oracle running litgpt's
/// loop (`scripts/golden-litgpt.py`) holds exactly 2 · 4 · 1304 · 32000 B = 0.31 GiB more at Llama-2-7B's
/// `LogSoftmaxBackward0` (batch 4) than with the list dropped. A fused head makes no logits.
pub fn retained_logits_bytes(job: &Job, s: &Shapes) -> f64 {
    if !job.stack.keeps_logits_through_backward()
        || job.loss == LossImpl::Fused
        || runs_trl_fused_head(job)
        || !job.objective.has_vocab_logits()
    {
        return 0.0;
    }
    let bytes = if job.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    };
    bytes * s.tokens * preference::logit_share(job) * f64::from(job.arch.vocab) / s.tensor_split
}

/// Gemma 2 caps its final logits, `cap · tanh(logits / cap)`, in the 16-bit dtype before the loss upcasts
/// them (`Gemma2ForCausalLM.forward`); `tanh` saves its output for backward, so one more 16-bit copy of the
/// logits lives until the loss's backward: 2 B per logit (the oracle's Gemma 2 2B jobs at
/// `LogSoftmaxBackward0`: 0.98 GiB at 2,048 tokens × 256,000). A fused linear + cross-entropy kernel
/// applies the cap inside its tiles, and litgpt's and torchtune's own model code is not transformers'.
fn softcap_bytes_per_logit(job: &Job) -> f64 {
    let full_logits = matches!(
        job.loss,
        LossImpl::Fp32Logits | LossImpl::Bf16Logits | LossImpl::TrlFusedHead
    ) && !runs_trl_fused_head(job);
    if job.arch.softcap && full_logits && !job.stack.runs_own_model_code() {
        2.0
    } else {
        0.0
    }
}

/// Bytes per logit of TRL's SimPO (`CPOTrainer` with `loss_type="simpo"` and `cpo_alpha=0`): no NLL term
/// (`trl/experimental/cpo/cpo_trainer.py`), so the only logit work is TRL's Triton log-softmax
/// (`trl/kernels/logprob_entropy.py`), which keeps the fp32 logits and one fp32 gradient: 4 + 4. Measured
/// by the fake-tensor oracle running TRL 1.16 (`tests/golden_preference.rs`).
pub const TRL_SIMPO_PER_LOGIT: f64 = 8.0;

/// The share of [`loss_bytes_per_logit`] (ORPO) or [`TRL_SIMPO_PER_LOGIT`] that TRL's ORPO and CPO/SimPO
/// keep when no autocast runs: they call the model without labels (`trl/experimental/orpo/orpo_trainer.py`
/// `concatenated_forward`), so the logits are fp32 only because accelerate's bf16 wrapper converts every
/// output (`convert_outputs_to_fp32`, accelerate/accelerator.py `prepare_model`). A loop without that wrapper
/// over 16-bit weights keeps every logit-sized tensor of the loss, and each gradient, in 16-bit: half the
/// bytes. The oracle's ORPO jobs with `bf16=False` hold exactly half the logit-sized backward buffers of
/// their `bf16=True` twins (Qwen2.5-0.5B 13.91 → 6.96 GiB, Llama-3.2-1B 11.74 → 5.87 GiB at 2 × 2 × 2048
/// tokens).
pub const TRL_UNLABELLED_16BIT_SHARE: f64 = 0.5;

/// TRL ≥ 1.0 `DPOTrainer`, `GRPOTrainer` and `KTOTrainer`: the policy (and the reference) run with a fused LM
/// head (`add_fused_lm_head`, `model(..., fused_lm_head=True)` in `_compute_loss`, `trl/trainer/dpo_trainer.py`
/// and `kto_trainer.py`; GRPO's `_get_per_token_logps_and_entropies`, `trl/trainer/grpo_trainer.py`), whose
/// `ChunkedLogProbFunction` (`trl/kernels/chunked_logprob.py`) projects 4096-token × 32768-vocabulary tiles
/// into one reused buffer and keeps per-token fp32 statistics only: no `[2B, S, V]` logits. At its backward
/// (the oracle's peak op on DPO jobs without checkpointing) it holds, over the N tokens it scores (DPO: the
/// 2B·S tokens of the chosen and rejected sequences; KTO: the B·S tokens of its examples; GRPO: the B·C
/// completion tokens, as its labels mask the prompt and the head keeps only labelled positions):
/// - the tile buffer, min(N, 4096) × 32768 × 2 B;
/// - the compact hidden states saved for backward (`hidden_states[mask]`, `trl/trainer/utils.py`), N·H·2 B;
/// - the hidden states' fp32 gradient and its 16-bit cast, N·H·(4 + 2) B;
/// - when the LM head trains (full fine-tuning, `modules_to_save` on the head), its fp32 gradient and the
///   cast, V·H·(4 + 2) B.
///
/// A tensor-parallel rank holds its vocabulary share of the tile and of the head's gradient.
pub fn trl_fused_head_bytes(job: &Job, s: &Shapes) -> f64 {
    let n = if job.objective == Objective::Grpo {
        f64::from(job.micro_batch) * f64::from(job.grpo.completion_tokens.min(job.seq_len))
    } else {
        s.tokens
    };
    let h = f64::from(job.arch.hidden);
    let v = f64::from(job.arch.vocab);
    let tile = n.min(4096.0) * v.min(32768.0) * 2.0 / s.tensor_split;
    let hidden = n * h * (2.0 + 4.0 + 2.0);
    let head_trains = job.mode == Mode::Full
        || (matches!(job.mode, Mode::Lora | Mode::Qlora) && job.lora.train_lm_head);
    let head = if head_trains {
        v * h * (4.0 + 2.0) / s.tensor_split
    } else {
        0.0
    };
    tile + hidden + head
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TRL's fused head for SFT (TRL ≥ 1.15) on Llama-3.2-1B (hidden 2048), LoRA, 2 × 1024 tokens: the
    /// 2048 × 32768 tile in 16-bit, 134,217,728 B, and the hidden states with their fp32 gradient and its cast,
    /// 2048 × 2048 × 8 = 33,554,432 B; the frozen head has no gradient. ORPO, which TRL computes without the
    /// head, keeps the full logits under the same loss setting.
    #[test]
    fn trl_fused_head_for_sft() {
        let job = Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode: crate::model::Mode::Lora,
            stack: crate::model::Stack::HfTrainer,
            micro_batch: 2,
            seq_len: 1024,
            loss: LossImpl::TrlFusedHead,
            ..Job::default()
        };
        let s = Shapes::of(&job);
        assert!(runs_trl_fused_head(&job));
        assert_eq!(loss_bytes(&job, &s), 134_217_728.0 + 33_554_432.0);
        let orpo = Job {
            objective: Objective::Orpo,
            ..job.clone()
        };
        assert!(!runs_trl_fused_head(&orpo));
        assert_eq!(
            loss_bytes(&orpo, &Shapes::of(&orpo)),
            12.0 * 2048.0 * 128_256.0
        );
    }

    /// Llama-3.2-1B (vocabulary 128256), 2 × 1024 tokens, fp32 loss: 12 B × 2048 × 128256 = 2.94 GiB.
    #[test]
    fn fp32_loss_of_llama_1b() {
        let job = Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode: crate::model::Mode::Lora,
            micro_batch: 2,
            seq_len: 1024,
            loss: LossImpl::Fp32Logits,
            ..Job::default()
        };
        let s = Shapes::of(&job);
        assert_eq!(loss_bytes(&job, &s), 12.0 * 2048.0 * 128_256.0);
        let fused = Job {
            loss: LossImpl::Fused,
            ..job.clone()
        };
        assert_eq!(loss_bytes(&fused, &Shapes::of(&fused)), 0.0);
    }
}
