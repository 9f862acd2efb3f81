//! The loss: logits and cross-entropy buffers at the loss's backward.

use super::job::{Job, LossImpl};
use super::preference;
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
        LossImpl::Fp32Logits => 12.0,
        LossImpl::Bf16Logits => 9.0,
        LossImpl::Chunked => 4.0,
        LossImpl::Fused => 0.0,
    }
}

/// The loss's bytes on the busiest GPU of a training step: [`loss_bytes_per_logit`] × tokens × vocabulary,
/// split by tensor parallelism (a vocabulary-parallel LM head). A reward model's scalar head makes no
/// vocabulary logits; GRPO computes the completion's only (`preference::logit_share`).
pub fn loss_bytes(job: &Job, s: &Shapes) -> f64 {
    if !job.objective.has_vocab_logits() {
        return 0.0;
    }
    loss_bytes_per_logit(job.loss)
        * s.tokens
        * preference::logit_share(job)
        * f64::from(job.arch.vocab)
        / s.tensor_split
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama-3.2-1B (vocabulary 128256), 2 × 1024 tokens, fp32 loss: 12 B × 2048 × 128256 = 2.94 GiB.
    #[test]
    fn fp32_loss_of_llama_1b() {
        let job = Job {
            arch: crate::catalog::model("llama-3.2-1b")
                .unwrap()
                .arch()
                .clone(),
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
