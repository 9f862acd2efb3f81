//! Rough step time and throughput, so that remedies' costs are numbers. A FLOP count divided by the GPU's
//! dense 16-bit throughput at a stated utilisation; decoding is bound by memory bandwidth instead.

use crate::catalog::GpuEntry;
use crate::model::{Checkpointing, Job, Mode, Offload, Parallelism};

/// Model FLOPs utilisation assumed for training and prefill: well-tuned dense fine-tuning reaches 35–50%
/// of peak (PaLM paper, Chowdhery et al. 2022, table 3: 46% MFU; small-batch fine-tunes usually less).
pub const MFU: f64 = 0.40;

/// Share of peak bandwidth decoding achieves (weights and KV cache are streamed once per token).
pub const BANDWIDTH_EFFICIENCY: f64 = 0.70;

/// bitsandbytes 4-bit matmuls dequantize every weight on each use; QLoRA steps are commonly reported
/// ~30% slower than 16-bit LoRA (QLoRA paper discussion; Unsloth/HF benchmarks). Rough factor.
pub const QLORA_SLOWDOWN: f64 = 1.3;

/// Host↔GPU bandwidth assumed for offloaded optimizer traffic, bytes/s (PCIe 4.0 x16 ≈ 25 GB/s in practice).
pub const PCIE_BYTES_PER_S: f64 = 25e9;

/// GPU-to-GPU bandwidth assumed for data-parallel traffic, bytes/s: between PCIe (~25 GB/s) and
/// NVLink (~300 GB/s); a rough middle that makes sharding cost visible without pretending to know the box.
pub const INTERCONNECT_BYTES_PER_S: f64 = 100e9;

/// A rough speed estimate.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Speed {
    /// Seconds per optimizer step (training) or per generated token (inference).
    pub seconds: f64,
    /// Tokens per second over the whole job (training: trained tokens; inference: generated tokens).
    pub tokens_per_s: f64,
}

/// Training FLOPs per token: forward 2·N, backward 2·N for activation gradients plus 2·N_trained for weight
/// gradients (Kaplan et al. 2020, 6·N per token when everything trains), attention 6·L·s·q_width
/// (2·L·s·q forward for QKᵀ and PV, tripled with backward; Narayanan et al. 2021 eq. 3), and one more
/// forward when layers are recomputed (gradient checkpointing).
pub fn training_flops_per_token(job: &Job, trainable: f64) -> f64 {
    let p = job.arch.params();
    let n = p.active;
    let trained_weights = match job.mode {
        Mode::Full => n,
        Mode::Freeze => trainable,
        _ => 0.0,
    };
    let attn =
        2.0 * f64::from(job.arch.layers) * f64::from(job.seq_len.max(1)) * job.arch.q_width();
    let forward = 2.0 * n + attn;
    let recompute = if job.checkpointing == Checkpointing::Off {
        0.0
    } else {
        forward
    };
    forward + (2.0 * n + 2.0 * attn) + 2.0 * trained_weights + recompute
}

/// Estimates speed for a job on `gpus` GPUs of one kind. `None` when the GPU has no throughput figure.
pub fn speed(job: &Job, gpu: &GpuEntry, trainable: f64) -> Option<Speed> {
    let gpus = f64::from(job.gpus.max(1));
    let flops = gpu.tflops_16bit()? * 1e12 * MFU;
    if job.mode == Mode::Inference {
        let bw = gpu.memory_bandwidth_gbps? * 1e9 * BANDWIDTH_EFFICIENCY;
        let est = crate::model::estimate(job);
        let streamed = est.gpu_bytes(crate::model::Component::Weights)
            + est.gpu_bytes(crate::model::Component::WeightsQuantized)
            + est.gpu_bytes(crate::model::Component::KvCache);
        let per_token = streamed / bw;
        let batch = f64::from(job.inference.batch.max(1));
        return Some(Speed {
            seconds: per_token,
            tokens_per_s: batch / per_token,
        });
    }
    let tokens_per_gpu = f64::from(job.micro_batch.max(1))
        * f64::from(job.seq_len.max(1))
        * f64::from(job.grad_accum.max(1));
    // Model and tensor parallelism split one sequence's work; naive layer splitting runs GPUs in turn.
    let work_share = match job.parallelism {
        Parallelism::Tensor => 1.0 / gpus,
        _ => 1.0,
    };
    let mut seconds =
        training_flops_per_token(job, trainable) * tokens_per_gpu * work_share / flops;
    if job.weights.is_bnb_4bit() {
        seconds *= QLORA_SLOWDOWN;
    }
    if job.offload != Offload::None {
        // fp32 gradients down and 16-bit weights up once per step, and the Adam step on the CPU.
        seconds += trainable * (4.0 + 2.0) / PCIE_BYTES_PER_S + trainable * 16.0 / 20e9;
    }
    // Data-parallel traffic per step, not overlapped: DDP and ZeRO-1/2 move gradients twice (reduce-scatter
    // + all-gather = all-reduce); ZeRO-3 also gathers the 16-bit weights in forward and backward: 1.5× DDP
    // (Rajbhandari et al. 2020, ZeRO, sec. 7).
    if gpus > 1.0 {
        let grads = trainable * 2.0;
        let traffic = match job.parallelism {
            Parallelism::Zero3 => 1.5 * 2.0 * grads,
            Parallelism::Ddp | Parallelism::Zero1 | Parallelism::Zero2 => 2.0 * grads,
            Parallelism::Pipeline | Parallelism::Tensor => 0.0,
        };
        seconds += traffic * (gpus - 1.0) / gpus / INTERCONNECT_BYTES_PER_S;
    }
    let replicas = match job.parallelism {
        Parallelism::Pipeline | Parallelism::Tensor => 1.0,
        _ => gpus,
    };
    Some(Speed {
        seconds,
        tokens_per_s: tokens_per_gpu * replicas / seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_training_is_about_six_n_per_token() {
        let job = Job {
            mode: Mode::Full,
            checkpointing: Checkpointing::Off,
            seq_len: 1,
            ..Job::default()
        };
        let n = job.arch.params().active;
        let f = training_flops_per_token(&job, n);
        assert!((f / (6.0 * n) - 1.0).abs() < 0.01, "{}", f / n);
        let ckpt = Job {
            checkpointing: Checkpointing::Layer,
            ..job.clone()
        };
        assert!((training_flops_per_token(&ckpt, n) / f - 4.0 / 3.0).abs() < 0.01);
    }
}
