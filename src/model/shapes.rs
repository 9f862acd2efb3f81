//! What every term needs to know about a job before any memory is counted: its parameter counts, how the
//! model is divided over the GPUs, the working dtype of the weights and the tokens of one micro-batch.
//!
//! The first stage of the estimate (`shapes → terms → timeline → totals`, see [`super::estimate`]): plain
//! numbers derived once from a normalized [`Job`], read by every term.

use super::activations::act_bytes;
use super::adapters;
use super::arch::ParamCounts;
use super::job::{Job, Offload, Parallelism, Precision, WeightFormat};
use super::preference::{self, Objective};

/// The shapes of one normalized job.
#[derive(Clone, Copy, Debug)]
pub struct Shapes {
    /// Parameter counts; a reward model's with its scalar head in place of the LM head
    /// (`preference::scalar_head_params`).
    pub params: ParamCounts,
    /// GPUs one model copy is spread over (sharding, pipeline and tensor parallelism).
    pub gpus: f64,
    /// Bytes of one activation element (`activations::act_bytes`).
    pub act_bytes: f64,
    /// Trainable parameters of the language model (adapters and trained base weights).
    pub trainable: f64,
    /// Of [`Self::trainable`], the adapters' (`adapters::trainable`).
    pub adapter: f64,
    /// Share of layer-proportional memory on the busiest GPU: a pipeline stage's layers (the largest stage:
    /// `⌈L/n⌉/L`), a tensor-parallel rank's `1/n`, else all of it.
    pub layer_share: f64,
    /// Share of the layers on the busiest pipeline stage (1 without pipeline parallelism). Activations use
    /// it: tensor parallelism divides within a layer instead (`LayerBytes::per_rank`).
    pub stage_share: f64,
    /// Share of the trainable state (gradients, optimizer states) on the busiest GPU from pipeline or tensor
    /// parallelism (ZeRO's sharding is [`Self::shard`]).
    pub train_share: f64,
    /// Divisor of what tensor parallelism splits inside a layer (heads, MLP intermediate, vocabulary,
    /// the KV cache): the GPU count under tensor parallelism, else 1 (Megatron layout).
    pub tensor_split: f64,
    /// ZeRO stage (0 without ZeRO/FSDP).
    zero_stage: u8,
    /// Bytes of an unquantized working weight: fp32 under AMP over fp32 weights (HF Trainer on an
    /// fp32-loaded model, Lightning `bf16-mixed`) unless DeepSpeed/FSDP keep 16-bit working copies; 2 in pure
    /// 16-bit.
    pub working: f64,
    /// The base's linear layers are stored quantized.
    pub quantized: bool,
    /// Autocast runs over fp32 weights (HF Trainer AMP on an fp32-loaded model, Lightning `bf16-mixed`).
    pub autocast_fp32: bool,
    /// Parameters autocast casts to 16-bit for their matmuls: the decoder's linears and the LM head (the
    /// embedding when tied).
    pub cast_params: f64,
    /// Parameters of an LM head the stack quantizes with the decoder (`Stack::quantizes_lm_head`; 0 else).
    pub head_quantized: f64,
    /// The largest matrix a quantized matmul dequantizes at once.
    pub largest_dequant: f64,
    /// ZeRO-3 parameter offload: weights live on the host.
    pub param_offloaded: bool,
    /// Optimizer states (and master weights) live on the host or NVMe.
    pub optimizer_offloaded: bool,
    /// Tokens of one micro-batch (batch × sequence).
    pub tokens: f64,
    /// Sequence length.
    pub seq: f64,
    /// Gradients are alive at the start of backward: they persist between micro-batches (accumulation) or
    /// sit in DDP/ZeRO buckets.
    pub grads_persist: bool,
}

impl Shapes {
    /// The shapes of a job that [`super::normalize::normalize`] has already made consistent.
    pub fn of(job: &Job) -> Shapes {
        let arch = &job.arch;
        let params = if job.objective == Objective::RewardModel {
            preference::scalar_head_params(&arch.params(), arch.hidden)
        } else {
            arch.params()
        };
        let gpus = f64::from(job.gpus.max(1));
        let zero_stage = match job.parallelism {
            Parallelism::Zero1 => 1,
            Parallelism::Zero2 => 2,
            Parallelism::Zero3 => 3,
            _ => 0,
        };
        let layer_share = match job.parallelism {
            Parallelism::Pipeline => {
                let l = f64::from(arch.layers.max(1));
                (l / gpus).ceil() / l
            }
            Parallelism::Tensor => 1.0 / gpus,
            _ => 1.0,
        };
        let stage_share = if job.parallelism == Parallelism::Pipeline {
            layer_share
        } else {
            1.0
        };
        let train_share = match job.parallelism {
            Parallelism::Pipeline | Parallelism::Tensor => layer_share,
            _ => 1.0,
        };
        let tensor_split = if job.parallelism == Parallelism::Tensor {
            gpus
        } else {
            1.0
        };
        let sharded = zero_stage > 0;
        let working = match (job.precision, job.weights) {
            (Precision::Fp32, _) | (_, WeightFormat::Fp32) => 4.0,
            (Precision::Mixed, _) if !sharded && job.is_training() => 4.0,
            (Precision::Mixed, _) if !job.is_training() => 4.0,
            _ => 2.0,
        };
        let quantized = job.weights.is_quantized();
        let cast_params = params.linear
            + if params.lm_head > 0.0 {
                params.lm_head
            } else {
                params.embedding
            };
        // A stack that quantizes the LM head does so with the decoder's linears; MXFP4 quantizes only the
        // experts and leaves `lm_head` bf16 (`WeightFormat::quantizes_every_linear`).
        let head_quantized =
            if job.weights.quantizes_every_linear() && job.stack.quantizes_lm_head() {
                params.lm_head
            } else {
                0.0
            };
        let (trainable, adapter) = adapters::trainable(job, &params);
        Shapes {
            params,
            gpus,
            act_bytes: act_bytes(job),
            trainable,
            adapter,
            layer_share,
            stage_share,
            train_share,
            tensor_split,
            zero_stage,
            working,
            quantized,
            autocast_fp32: job.precision == Precision::Mixed && working >= 4.0 && !quantized,
            cast_params,
            head_quantized,
            largest_dequant: params.largest_linear.max(head_quantized),
            param_offloaded: job.offload == Offload::ParamOptimizer,
            optimizer_offloaded: job.offload != Offload::None,
            tokens: f64::from(job.micro_batch.max(1)) * f64::from(job.seq_len.max(1)),
            seq: f64::from(job.seq_len.max(1)),
            grads_persist: job.grad_accum > 1 || job.gpus > 1,
        }
    }

    /// Share on the busiest GPU of what ZeRO stage `stage` partitions (1: optimizer states, 2: gradients,
    /// 3: parameters; Rajbhandari et al. 2020): `1/n` from that stage on, else all of it.
    pub fn shard(&self, stage: u8) -> f64 {
        if self.zero_stage >= stage {
            1.0 / self.gpus
        } else {
            1.0
        }
    }

    /// Trainable base (non-adapter) parameters.
    pub fn base_trainable(&self) -> f64 {
        self.trainable - self.adapter
    }
}
