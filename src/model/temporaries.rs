//! Short-lived buffers of a training step's backward: autocast's 16-bit weight casts, bitsandbytes'
//! dequantized weights and ZeRO-3/FSDP's gathered layers.

use super::activations::{kept_layers, recomputed_layers};
use super::job::{Checkpointing, Job, Mode, Parallelism, WeightFormat};
use super::shapes::Shapes;

/// Temporaries alive at backward's peak, on the busiest GPU.
///
/// - Autocast on fp32 weights casts each weight to 16-bit for its matmul. The cast of a weight that
///   requires grad is cached for the whole autocast region (`aten/src/ATen/autocast_mode.cpp` `cached_cast`:
///   leaf, `requires_grad`, fp32 → lower precision), and autograd saves the cast for backward; a frozen
///   weight's cast is not cached, but is saved for backward in every layer that keeps its activations (one
///   layer at a time under checkpointing). 2 B per cast parameter.
/// - bitsandbytes 4-bit and LLM.int8() matmuls dequantize each weight to 16-bit on the fly (forward and
///   backward): about twice the largest linear layer in 16-bit.
/// - ZeRO-3/FSDP gather the full weights of the current and the prefetched layer in their stored format
///   (FSDP + QLoRA gathers the packed 4-bit storage, not dequantized weights: bitsandbytes
///   `bnb_4bit_quant_storage` docs); parameter offload brings each layer in the same way. An MXFP4 layer
///   is its packed experts plus its bf16 attention and router.
pub fn backward_temporaries(job: &Job, s: &Shapes) -> f64 {
    let p = &s.params;
    let mut bytes = 0.0;
    if job.is_training() {
        if s.autocast_fp32 {
            let per_layer_linear = p.linear / f64::from(job.arch.layers.max(1));
            bytes += 2.0
                * match (job.mode, job.checkpointing) {
                    (Mode::Full, _) => s.cast_params * s.layer_share,
                    (_, Checkpointing::Off) => per_layer_linear * kept_layers(job, s),
                    _ => per_layer_linear * recomputed_layers(job, s),
                };
        }
        if job.weights.is_bnb_4bit() || job.weights == WeightFormat::Int8 {
            bytes += 2.0 * s.largest_dequant * 2.0 * s.layer_share;
        }
    }
    if job.parallelism == Parallelism::Zero3 && job.gpus > 1 || s.param_offloaded {
        let layer = if job.weights == WeightFormat::Mxfp4 {
            // MXFP4 stores a layer's experts packed and the rest of it in bf16.
            let experts = p.expert_linear / f64::from(job.arch.layers.max(1));
            experts * job.weights.linear_bytes() + (p.per_layer - experts) * 2.0
        } else if s.quantized {
            p.per_layer * job.weights.linear_bytes()
        } else {
            p.per_layer * s.working
        };
        bytes += 2.0 * layer;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Precision;

    fn job() -> Job {
        Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode: Mode::Lora,
            ..Job::default()
        }
    }

    /// Pure bf16 LoRA on one GPU holds no backward temporaries.
    #[test]
    fn plain_lora_has_none() {
        let j = job();
        assert_eq!(backward_temporaries(&j, &Shapes::of(&j)), 0.0);
    }

    /// NF4: two 16-bit copies of the largest linear (Llama-3.2-1B's 2048 × 8192 MLP matrices; its tied
    /// 128256 × 2048 LM head stays 16-bit in transformers).
    #[test]
    fn nf4_dequantizes_the_largest_linear() {
        let j = Job {
            mode: Mode::Qlora,
            weights: WeightFormat::Nf4,
            ..job()
        };
        let s = Shapes::of(&j);
        assert_eq!(backward_temporaries(&j, &s), 2.0 * 2048.0 * 8192.0 * 2.0);
    }

    /// FSDP over 4 GPUs in bf16 gathers two whole layers: 2 × per-layer parameters × 2 B.
    #[test]
    fn zero3_gathers_two_layers() {
        let j = Job {
            parallelism: Parallelism::Zero3,
            gpus: 4,
            precision: Precision::Pure16,
            ..job()
        };
        let s = Shapes::of(&j);
        assert_eq!(backward_temporaries(&j, &s), 2.0 * s.params.per_layer * 2.0);
    }
}
