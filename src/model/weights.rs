//! Weights: bytes per parameter of each stored format, and the base weights' bytes on the busiest GPU.

use super::job::{Job, Parallelism, WeightFormat};
use super::shapes::Shapes;

/// The base model's weights.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WeightBytes {
    /// Quantized linear layers on the busiest GPU.
    pub quantized: f64,
    /// Weights kept unquantized (all of them in a 16/32-bit model; else embeddings, LM head and norms).
    pub plain: f64,
    /// One whole copy of the model as stored (what a ZeRO-3 gather of every layer brings together).
    pub whole: f64,
}

/// The base weights on the busiest GPU.
///
/// - Unquantized: every parameter at the working dtype ([`Shapes::working`]).
/// - Quantized: the decoder's linears (and an LM head the stack quantizes) at the format's
///   [`WeightFormat::linear_bytes`]; the rest in 16-bit, or fp32 where a trainer upcasts non-quantized
///   weights for training (`upcast_non_quantized`: PEFT `prepare_model_for_kbit_training` casts them to fp32).
/// - Division over GPUs: a pipeline stage holds its layers' share of the linears plus the embedding and
///   LM head (the first and last stage; the busiest holds them); tensor parallelism splits everything
///   `1/n`; ZeRO-3/FSDP shards everything `1/n`; ZeRO-3 parameter offload keeps none on the GPU.
pub fn weight_bytes(job: &Job, s: &Shapes) -> WeightBytes {
    let p = &s.params;
    let (w_quant, lin_plain, rest_plain) = if s.quantized {
        let non_linear_bytes = if job.upcast_non_quantized && job.is_training() {
            4.0
        } else {
            2.0
        };
        (
            (p.linear + s.head_quantized) * job.weights.linear_bytes(),
            0.0,
            (p.non_linear - s.head_quantized) * non_linear_bytes,
        )
    } else {
        (0.0, p.linear * s.working, (p.total - p.linear) * s.working)
    };
    let split = |linear: f64, rest: f64| -> f64 {
        if s.param_offloaded {
            return 0.0;
        }
        match job.parallelism {
            Parallelism::Pipeline => linear * s.layer_share + rest,
            Parallelism::Tensor => (linear + rest) / s.gpus,
            _ => (linear + rest) * s.shard(3),
        }
    };
    WeightBytes {
        quantized: split(w_quant, 0.0),
        plain: split(lin_plain, rest_plain),
        whole: w_quant + lin_plain + rest_plain,
    }
}

impl WeightFormat {
    /// Bytes per parameter of a quantizable linear weight in this format, including quantization constants.
    ///
    /// - fp32 4, bf16/fp16 2, fp8 1 (+ per-tensor scale, negligible).
    /// - bitsandbytes LLM.int8(): 1 byte plus one fp32 scale per row (`Int8Params`, `SCB`); ≈ 1 B.
    /// - NF4/FP4: 4 bits plus one fp32 absmax per 64-weight block = 0.5 + 4/64 = 0.5625 B.
    /// - NF4 with double quantization: absmax in 8 bits plus one fp32 constant per 256 blocks:
    ///   4 + 8/64 + 32/(64·256) ≈ 4.127 bits ≈ 0.516 B (Dettmers et al. 2023, QLoRA, sec. 3).
    /// - GPTQ/AWQ with group size 128: packed 4 (or 8) bits, an fp16 scale and a packed zero-point per group:
    ///   bits/8 + (2 + bits/8)/128 B (AutoGPTQ `QuantLinear` qweight/qzeros/scales; AWQ `WQLinear_GEMM`).
    pub fn linear_bytes(self) -> f64 {
        match self {
            WeightFormat::Fp32 => 4.0,
            WeightFormat::Bf16 | WeightFormat::Fp16 => 2.0,
            WeightFormat::Fp8 => 1.0,
            WeightFormat::Int8 => 1.0,
            WeightFormat::Nf4 | WeightFormat::Fp4 => 0.5 + 4.0 / 64.0,
            WeightFormat::Nf4Dq => (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0)) / 8.0,
            WeightFormat::GptqInt4 | WeightFormat::AwqInt4 => 0.5 + (2.0 + 0.5) / 128.0,
            WeightFormat::GptqInt8 => 1.0 + (2.0 + 1.0) / 128.0,
        }
    }

    /// Whether this is a quantized format that keeps embeddings, LM head and norms in 16-bit
    /// (bitsandbytes and GPTQ/AWQ replace only the decoder's `nn.Linear` layers).
    pub fn is_quantized(self) -> bool {
        !matches!(
            self,
            WeightFormat::Fp32 | WeightFormat::Bf16 | WeightFormat::Fp16
        )
    }

    /// 4-bit bitsandbytes formats (what QLoRA trains on).
    pub fn is_bnb_4bit(self) -> bool {
        matches!(
            self,
            WeightFormat::Nf4 | WeightFormat::Nf4Dq | WeightFormat::Fp4
        )
    }

    /// Stable id used in URLs and JSON.
    pub fn id(self) -> &'static str {
        match self {
            WeightFormat::Fp32 => "fp32",
            WeightFormat::Bf16 => "bf16",
            WeightFormat::Fp16 => "fp16",
            WeightFormat::Fp8 => "fp8",
            WeightFormat::Int8 => "int8",
            WeightFormat::Nf4 => "nf4",
            WeightFormat::Nf4Dq => "nf4-dq",
            WeightFormat::Fp4 => "fp4",
            WeightFormat::GptqInt4 => "gptq-int4",
            WeightFormat::GptqInt8 => "gptq-int8",
            WeightFormat::AwqInt4 => "awq-int4",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qlora_paper_bits_per_parameter() {
        // QLoRA sec. 3: double quantization brings the constants from 0.5 to 0.127 bits per parameter.
        assert!((WeightFormat::Nf4.linear_bytes() * 8.0 - 4.5).abs() < 1e-9);
        assert!((WeightFormat::Nf4Dq.linear_bytes() * 8.0 - 4.127).abs() < 1e-3);
        assert_eq!(WeightFormat::Bf16.linear_bytes(), 2.0);
        assert!(!WeightFormat::Fp16.is_quantized());
        assert!(WeightFormat::GptqInt4.is_quantized());
    }
}
