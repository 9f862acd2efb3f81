//! Gradients of the trainable parameters on the busiest GPU.

use super::full_tuning;
use super::job::{FrozenSharding, Job, Mode, Parallelism, Precision, Version};
use super::shapes::Shapes;

/// Bytes of gradient per trainable base parameter.
///
/// Pure 16-bit training keeps 16-bit gradients (autograd makes a gradient in its parameter's dtype). AMP on
/// fp32 weights (HF Trainer) and DeepSpeed's fp32 gradient partitions both hold fp32 grads (DeepSpeed
/// `estimate_zero2_model_states_mem_needs` counts 4 B).
///
/// BAdam steps an fp32 copy of the active block: each 16-bit gradient is converted to that copy's `.grad` and
/// cleared (`badam/block_optim.py` `_grad_to_hp`), so the block's stored gradients are fp32.
pub fn grad_bytes(job: &Job) -> f64 {
    match job.precision {
        _ if job.mode == Mode::Badam => 4.0,
        Precision::Pure16 => 2.0,
        Precision::Mixed | Precision::Fp32 => 4.0,
    }
}

/// The gradients a job stores.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gradients {
    /// Every stored gradient on the busiest GPU.
    pub stored: f64,
    /// Frozen weights an FSDP1 shared FlatParameter leaves unsharded after backward, alive at the optimizer
    /// step (counted with the weights there).
    pub unresharded: f64,
    /// Gradients not yet stored while the bottom decoder layer runs its backward, the last layer reached:
    /// that layer's own weights' (they arrive one by one as its ops run backward) and an untied, trained
    /// input embedding's, which the lookup's backward forms after every layer's (a tied one has the LM
    /// head's share early, in autograd's input buffer until the lookup's is added).
    pub last_to_arrive: f64,
}

/// The gradients on the busiest GPU.
///
/// - Adapters' gradients are fp32 (PEFT keeps adapters in fp32), a trained base's [`grad_bytes`]; ZeRO-2
///   shards them, pipeline and tensor parallelism divide them with the layers.
/// - LOMO-style fused updates (and optimizers stepped in backward) free each gradient as soon as it is
///   used: only the largest single gradient is ever alive (Lv et al. 2023, LOMO).
/// - FSDP1 LoRA with frozen and adapter weights in one `FlatParameter` (`use_orig_params`): the flat
///   gradient covers the frozen decoder weights too (sharded, in the working dtype), and with
///   `SharedFlatNoReshard` or PyTorch ≤ 2.1 the frozen weights stay unsharded after backward, so by the
///   optimizer step each GPU holds them whole.
pub fn gradients(job: &Job, s: &Shapes) -> Gradients {
    let p = &s.params;
    let main = if full_tuning::fused_update(job) && job.is_training() {
        p.largest_linear.max(p.embedding).min(s.trainable) * grad_bytes(job)
    } else {
        (s.adapter * super::adapters::adapter_param_bytes(job, s)
            + s.base_trainable() * grad_bytes(job))
            * s.shard(2)
            * s.train_share
    };
    let shared_flat = job.parallelism == Parallelism::Zero3
        && job.gpus > 1
        && job.mode == Mode::Lora
        && !s.quantized
        && job.frozen_sharding != FrozenSharding::Separate;
    // Only where they surely train: a full fine-tune trains both; LISA always trains the embedding; BAdam,
    // LISA and freeze train chosen layers, which need not include the bottom one, and BAdam's blocks hold no
    // embedding.
    let embedding_trained = matches!(job.mode, Mode::Full | Mode::Lisa)
        || (matches!(job.mode, Mode::Lora | Mode::Qlora) && job.lora.train_embed);
    let layers_trained = job.mode == Mode::Full;
    let last_to_arrive = if full_tuning::fused_update(job) {
        0.0
    } else {
        let embedding = if embedding_trained && !job.arch.tied_embeddings {
            p.embedding
        } else {
            0.0
        };
        let bottom_layer = if layers_trained { p.per_layer } else { 0.0 };
        ((embedding + bottom_layer) * grad_bytes(job) * s.shard(2) * s.train_share).min(main)
    };
    if !shared_flat {
        return Gradients {
            stored: main,
            unresharded: 0.0,
            last_to_arrive,
        };
    }
    let frozen_decoder = p.per_layer * f64::from(job.arch.layers) * s.working;
    let no_reshard = job.frozen_sharding == FrozenSharding::SharedFlatNoReshard
        || job.versions.torch <= Version::new(2, 1);
    Gradients {
        last_to_arrive,
        stored: main + frozen_decoder / s.gpus,
        unresharded: if no_reshard {
            frozen_decoder * (1.0 - 1.0 / s.gpus)
        } else {
            0.0
        },
    }
}

/// The last op of backward, the embedding's, when it makes a vocabulary-sized temporary:
/// - in a full fine-tune of a tied model the embedding's second gradient (from the lookup) is summed with
///   the one the LM head produced, out of place (`AccumulateGrad`: `variable.grad + new_grad`), so old, new
///   and sum coexist while every other gradient is already stored (the oracle's peak op, `aten.add.Tensor`
///   under `EmbeddingBackward0`, on full fine-tunes of tied models);
/// - with PEFT's trainable tokens the lookup ran on the merged weight (`W.index_copy(0, token_indices,
///   delta)`, `trainable_tokens/layer.py` `get_merged_weights`), which requires grad, so
///   `embedding_dense_backward` builds its dense `vocab × h` gradient in the weight's dtype (the working
///   one: `F.embedding` is not autocast) before `IndexCopyBackward` selects the `n` trained rows; the
///   vocabulary is split by tensor parallelism.
pub fn tied_embedding_sum(job: &Job, s: &Shapes) -> f64 {
    if job.arch.tied_embeddings && job.mode == Mode::Full {
        2.0 * grad_bytes(job) * s.params.embedding * s.shard(2) * s.train_share
    } else if matches!(job.mode, Mode::Lora | Mode::Qlora) && super::peft::token_rows(job) > 0 {
        s.working * f64::from(job.arch.vocab) * f64::from(job.arch.hidden) / s.tensor_split
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(mode: Mode, precision: Precision) -> Job {
        Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode,
            precision,
            ..Job::default()
        }
    }

    /// Full fine-tune in pure bf16: 2 B per parameter; mixed precision: 4 B.
    #[test]
    fn full_tuning_gradients_per_precision() {
        for (precision, bytes) in [(Precision::Pure16, 2.0), (Precision::Mixed, 4.0)] {
            let j = job(Mode::Full, precision);
            let s = Shapes::of(&j);
            assert_eq!(gradients(&j, &s).stored, s.params.total * bytes);
        }
    }

    /// ZeRO-2 over 4 GPUs stores a quarter of them.
    #[test]
    fn zero2_shards_gradients() {
        let mut j = job(Mode::Full, Precision::Pure16);
        j.parallelism = Parallelism::Zero2;
        j.gpus = 4;
        let s = Shapes::of(&j);
        assert_eq!(gradients(&j, &s).stored, s.params.total * 2.0 / 4.0);
    }

    /// Llama-3.2-1B ties its embedding (128256 × 2048): the sum holds two bf16 copies of it.
    #[test]
    fn tied_sum_is_two_embedding_gradients() {
        let j = job(Mode::Full, Precision::Pure16);
        let s = Shapes::of(&j);
        assert_eq!(tied_embedding_sum(&j, &s), 2.0 * 2.0 * 128_256.0 * 2048.0);
        assert_eq!(
            tied_embedding_sum(&job(Mode::Lora, Precision::Pure16), &s),
            0.0
        );
    }

    /// Trainable tokens: the embedding's backward builds one dense bf16 gradient of the merged
    /// 128256 × 2048 weight, 2 · 128,256 · 2048 = 525,336,576 B, whatever the token count.
    #[test]
    fn trainable_tokens_end_with_a_dense_embedding_gradient() {
        let mut j = job(Mode::Lora, Precision::Pure16);
        j.lora.method = crate::model::peft::Method::TrainableTokens;
        j.lora.trainable_tokens = 100;
        let s = Shapes::of(&j);
        assert_eq!(tied_embedding_sum(&j, &s), 525_336_576.0);
    }
}
