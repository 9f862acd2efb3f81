//! Host RAM of the whole machine (every rank): the runtime, loading, offloaded state, the dataset and
//! checkpoint saving.

use super::estimate::{HostComponent, Part};
use super::job::{Checkpointing, Job, Mode, OffloadDevice, Parallelism};
use super::optimizer::OptimizerBytes;
use super::shapes::Shapes;
use crate::bytes::GIB;

/// Host RAM of one training/inference process: Python, PyTorch with its CUDA libraries (cuBLAS, cuDNN,
/// NCCL are several GiB of mapped code, mostly resident) and the tokenizer. Typical RSS, ≈ 3 GiB.
pub const HOST_RUNTIME_GIB: f64 = 3.0;

/// What the vision tower adds to host RAM.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VisionParams {
    /// Parameters of tower and projector.
    pub params: f64,
    /// Of them, the trained ones.
    pub trainable: f64,
}

/// Host RAM by component (components of 0 bytes omitted).
///
/// - Runtime: [`HOST_RUNTIME_GIB`] per process.
/// - Loading: `from_pretrained` memory-maps safetensors shards and copies them to the GPU one at a time:
///   about one 5 GB shard per process (transformers `max_shard_size` default "5GB").
/// - ZeRO-Offload: fp32 master weights, Adam states (and fp32 gradients) on the CPU, pinned (Ren et al.
///   2021, ZeRO-Offload; DeepSpeed `estimate_zero3_model_states_mem_needs`: 18 B/param with optimizer
///   offload). NVMe keeps them on disk behind pinned staging buffers (≤ 4 GiB; parameters ≤ 2 GiB).
/// - Offloaded checkpoints: every layer's input, per rank.
/// - ZeRO-3 full fine-tunes gather a full 16-bit state dict to save a checkpoint.
pub fn host(
    job: &Job,
    s: &Shapes,
    opt: &OptimizerBytes,
    vision: VisionParams,
) -> Vec<Part<HostComponent>> {
    let arch = &job.arch;
    let ranks = f64::from(job.gpus.max(1));
    let mut host = vec![Part {
        component: HostComponent::Runtime,
        bytes: HOST_RUNTIME_GIB * GIB * ranks,
    }];
    let sixteen_bit = (s.params.total + vision.params) * 2.0;
    host.push(Part {
        component: HostComponent::WeightLoading,
        bytes: sixteen_bit.min(5e9) * ranks,
    });
    if s.optimizer_offloaded {
        let offloaded =
            (s.trainable + vision.trainable) * (opt.per_param + 4.0 + 4.0) + opt.master_whole;
        let bytes = match job.offload_device {
            OffloadDevice::Cpu => offloaded,
            OffloadDevice::Nvme => offloaded.min(4.0 * GIB),
        };
        host.push(Part {
            component: HostComponent::OffloadedOptimizer,
            bytes,
        });
    }
    if s.param_offloaded {
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
            bytes: f64::from(arch.layers) * s.act_bytes * f64::from(arch.hidden) * s.tokens * ranks,
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
    host
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One GPU, Llama-3.2-1B (2.47 GB in bf16): 3 GiB of runtime plus the whole checkpoint loading.
    #[test]
    fn one_process_loading_a_small_model() {
        let job = Job {
            arch: crate::model::catalog_arch("llama-3.2-1b"),
            mode: Mode::Lora,
            ..Job::default()
        };
        let s = Shapes::of(&job);
        let h = host(
            &job,
            &s,
            &OptimizerBytes::default(),
            VisionParams::default(),
        );
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].bytes, 3.0 * GIB);
        assert_eq!(h[1].bytes, s.params.total * 2.0);
    }
}
