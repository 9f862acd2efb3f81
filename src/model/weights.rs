//! Weights: bytes per parameter of each stored format, and the base weights' bytes on the busiest GPU.

use super::arch::ParamCounts;
use super::job::{Job, Parallelism, WeightFormat};
use super::shapes::Shapes;
use serde::{Deserialize, Serialize};

/// A checkpoint's weights as its safetensors headers store them (the Hub loader's sum over its headers,
/// [`crate::hub::WeightSummary`]): exact bytes instead of bytes derived from the parameter count and the
/// format, for the format the checkpoint is stored in.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredCheckpoint {
    /// The format the checkpoint is stored in (its `quantization_config`, else its floating dtype).
    pub format: WeightFormat,
    /// Bytes of integer and 8-, 6- and 4-bit float tensors: packed quantized weights, their zero-points,
    /// FP8 weights, MX blocks and scales.
    pub quantized: f64,
    /// Bytes of 16- and 32-bit float tensors: everything else (embeddings, norms, unquantized layers, GPTQ
    /// and AWQ scales, FP8 scales).
    pub plain: f64,
}

impl StoredCheckpoint {
    /// Every stored byte.
    pub fn total(&self) -> f64 {
        self.quantized + self.plain
    }
}

/// The largest share by which a checkpoint's stored bytes may differ from what the shape stores in that
/// format ([`stored_bytes`]) and still be taken as the shape's weights. Formats' own overheads stay far
/// inside it (GPTQ's group-32 scales add 6%, MXFP4's bf16 attention and FP8's block scales less); a
/// checkpoint beyond it holds tensors the shape does not describe (multi-token-prediction layers kept beside
/// the decoder, an adapter merged in another shape, another model), so its total says nothing about the
/// shape's weights.
pub const CHECKPOINT_MATCH_SHARE: f64 = 0.25;

/// Whether the checkpoint's stored total is within [`CHECKPOINT_MATCH_SHARE`] of what the job's shape stores
/// in the checkpoint's format.
pub fn checkpoint_fits_shape(job: &Job, c: &StoredCheckpoint) -> bool {
    let derived = stored_bytes(&job.arch.params(), c.format);
    (c.total() - derived).abs() <= CHECKPOINT_MATCH_SHARE * derived
}

/// The stored checkpoint the job's weights are read from: when the job holds them in the checkpoint's own
/// format, as loaded (a trainer that upcasts the non-quantized weights to fp32 for k-bit training, or
/// Q-GaLore's int8 re-quantization, changes them), for a text-only shape (a vision-language checkpoint also
/// stores the tower, which is counted on its own), and when the stored total is within
/// [`CHECKPOINT_MATCH_SHARE`] of what the shape stores in that format.
pub fn checkpoint_in_use(job: &Job) -> Option<&StoredCheckpoint> {
    // Byte counts from outside (a job's JSON) that no header could give are not taken.
    let c = job.checkpoint.as_ref().filter(|c| {
        [c.quantized, c.plain]
            .iter()
            .all(|b| b.is_finite() && *b >= 0.0)
    })?;
    let upcast = job.weights.is_quantized() && job.upcast_non_quantized && job.is_training();
    (c.format == job.weights
        && !upcast
        && !super::full_tuning::int8_projected_weights(job)
        && job.arch.vision.is_none()
        && checkpoint_fits_shape(job, c)
        && (c.quantized > 0.0) == job.weights.is_quantized())
    .then_some(c)
}

/// The base model's weights.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WeightBytes {
    /// Quantized linear layers on the busiest GPU.
    pub quantized: f64,
    /// Weights kept unquantized (all of them in a 16/32-bit model; else embeddings, LM head and norms, and
    /// under MXFP4 every linear layer outside the experts).
    pub plain: f64,
    /// One whole copy of the model as stored (what a ZeRO-3 gather of every layer brings together).
    pub whole: f64,
}

/// The base weights on the busiest GPU.
///
/// - Unquantized: every parameter at the working dtype ([`Shapes::working`]).
/// - Quantized: the linears the format quantizes ([`WeightFormat::quantized_params`]: the decoder's linears,
///   or MXFP4's routed experts only, and an LM head the stack quantizes) at the format's
///   [`WeightFormat::linear_bytes`]; the other linears (MXFP4's attention and routers) and the rest in
///   16-bit, or fp32 where a trainer upcasts non-quantized weights for training (`upcast_non_quantized`: PEFT
///   `prepare_model_for_kbit_training` casts them to fp32).
/// - A checkpoint whose safetensors headers were read ([`checkpoint_in_use`]): its stored bytes.
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
        let decoder_quantized = job.weights.quantized_params(p);
        (
            (decoder_quantized + s.head_quantized) * job.weights.linear_bytes(),
            (p.linear - decoder_quantized) * non_linear_bytes,
            (p.non_linear - s.head_quantized) * non_linear_bytes,
        )
    } else if super::full_tuning::int8_projected_weights(job) {
        // Q-GaLore's `QGaLoreLinear` holds each decoder linear in int8 with per-group scales; the rest stays
        // in the working dtype.
        (
            p.linear * super::full_tuning::Q_GALORE_WEIGHT_BYTES,
            0.0,
            (p.total - p.linear) * s.working,
        )
    } else {
        (0.0, p.linear * s.working, (p.total - p.linear) * s.working)
    };
    // A checkpoint read from its safetensors headers gives the exact totals: its quantized and its 16/32-bit
    // bytes, each spread over the shape's linears and the rest as the shape's own bytes are.
    let (w_quant, lin_plain, rest_plain) = match checkpoint_in_use(job) {
        Some(c) => {
            let plain = lin_plain + rest_plain;
            let f = if plain > 0.0 { c.plain / plain } else { 0.0 };
            (
                c.quantized + if plain > 0.0 { 0.0 } else { c.plain },
                lin_plain * f,
                rest_plain * f,
            )
        }
        None => (w_quant, lin_plain, rest_plain),
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

/// One whole copy of the base weights as stored, bytes, with no division over GPUs: the quantized linears
/// ([`WeightFormat::quantized_params`]) at [`WeightFormat::linear_bytes`] and every other parameter in 16-bit;
/// an unquantized format stores every parameter at its width. What a checkpoint of this format holds (the
/// serving planner's weights, [`super::serve::weights_bytes_per_gpu`]).
pub fn stored_bytes(p: &ParamCounts, weights: WeightFormat) -> f64 {
    if weights.is_quantized() {
        let q = weights.quantized_params(p);
        q * weights.linear_bytes() + (p.total - q) * 2.0
    } else {
        p.total * weights.linear_bytes()
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
    /// - MXFP4: 4-bit E2M1 values, two per byte, plus one E8M0 (8-bit exponent) scale per block of 32:
    ///   (4 + 8/32)/8 = 0.53125 B (OCP Microscaling Formats (MX) v1.0 spec, MXFP4: E2M1 elements, E8M0
    ///   shared scale, block size 32; transformers `integrations/mxfp4.py` `Mxfp4GptOssExperts`:
    ///   `*_blocks` of `[E, rows, cols/32, 16]` uint8 and `*_scales` of `[E, rows, cols/32]` uint8). It
    ///   applies to the routed experts only ([`WeightFormat::quantized_params`]).
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
            WeightFormat::Mxfp4 => (4.0 + 8.0 / 32.0) / 8.0,
        }
    }

    /// Parameters this format stores at [`WeightFormat::linear_bytes`] (an LM head a stack quantizes
    /// aside, [`Shapes::head_quantized`]):
    /// - bitsandbytes, GPTQ, AWQ and FP8 replace every `nn.Linear` of the decoder: [`ParamCounts::linear`];
    /// - MXFP4 quantizes the routed experts only: transformers' `Mxfp4HfQuantizer.param_needs_quantization`
    ///   is true for `Mxfp4GptOssExperts` parameters except their biases, and the gpt-oss model card lists
    ///   attention, router, embedding and unembedding weights in BF16 ([`ParamCounts::expert_linear`]);
    /// - unquantized formats: none.
    pub fn quantized_params(self, p: &ParamCounts) -> f64 {
        match self {
            WeightFormat::Mxfp4 => p.expert_linear,
            w if w.is_quantized() => p.linear,
            _ => 0.0,
        }
    }

    /// Whether the format quantizes every linear layer of the decoder (so a stack that quantizes the LM head
    /// with them quantizes it too): every quantized format but MXFP4, whose checkpoints quantize the experts
    /// alone and keep `lm_head` in bf16.
    pub fn quantizes_every_linear(self) -> bool {
        self.is_quantized() && self != WeightFormat::Mxfp4
    }

    /// Whether this is a quantized format that keeps embeddings, LM head and norms in 16-bit
    /// (bitsandbytes and GPTQ/AWQ replace only the decoder's `nn.Linear` layers; MXFP4 only the experts).
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
            WeightFormat::Mxfp4 => "mxfp4",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored bytes count only where they can be the shape's: a negative or non-finite figure, another
    /// format than the job holds, or an fp32 upcast for k-bit training leaves the shape's own bytes.
    #[test]
    fn stored_bytes_apply_only_where_they_describe_the_weights() {
        let arch = crate::catalog::model("llama-3.2-1b")
            .unwrap()
            .arch()
            .clone();
        let bf16 = stored_bytes(&arch.params(), WeightFormat::Bf16);
        let job = |format: WeightFormat, quantized: f64, plain: f64| Job {
            arch: arch.clone(),
            mode: super::super::job::Mode::Inference,
            checkpoint: Some(StoredCheckpoint {
                format,
                quantized,
                plain,
            }),
            ..Job::default()
        };
        assert!(checkpoint_in_use(&job(WeightFormat::Bf16, 0.0, bf16 * 1.01)).is_some());
        assert!(checkpoint_in_use(&job(WeightFormat::Bf16, -1e9, bf16 + 1e9)).is_none());
        assert!(checkpoint_in_use(&job(WeightFormat::Bf16, 0.0, f64::NAN)).is_none());
        assert!(checkpoint_in_use(&job(WeightFormat::Bf16, 0.0, bf16 * 1.3)).is_none());
        let mut other = job(WeightFormat::Bf16, 0.0, bf16);
        other.weights = WeightFormat::Fp32;
        assert!(checkpoint_in_use(&other).is_none());
        let nf4 = stored_bytes(&arch.params(), WeightFormat::Nf4);
        let mut qlora = job(WeightFormat::Nf4, nf4 * 0.6, nf4 * 0.4);
        qlora.weights = WeightFormat::Nf4;
        assert!(checkpoint_in_use(&qlora).is_some());
        qlora.mode = super::super::job::Mode::Qlora;
        qlora.upcast_non_quantized = true;
        assert!(checkpoint_in_use(&qlora).is_none());
    }

    #[test]
    fn qlora_paper_bits_per_parameter() {
        // QLoRA sec. 3: double quantization brings the constants from 0.5 to 0.127 bits per parameter.
        assert!((WeightFormat::Nf4.linear_bytes() * 8.0 - 4.5).abs() < 1e-9);
        assert!((WeightFormat::Nf4Dq.linear_bytes() * 8.0 - 4.127).abs() < 1e-3);
        assert_eq!(WeightFormat::Bf16.linear_bytes(), 2.0);
        assert!(!WeightFormat::Fp16.is_quantized());
        assert!(WeightFormat::GptqInt4.is_quantized());
    }

    /// MXFP4: 4 bits per E2M1 value plus one 8-bit E8M0 scale per 32 values = 4.25 bits (OCP MX spec).
    #[test]
    fn mxfp4_is_four_and_a_quarter_bits() {
        assert_eq!(WeightFormat::Mxfp4.linear_bytes() * 8.0, 4.25);
        assert!(WeightFormat::Mxfp4.is_quantized());
        assert!(!WeightFormat::Mxfp4.quantizes_every_linear());
        assert_eq!(WeightFormat::Mxfp4.id(), "mxfp4");
        assert_eq!(crate::settings::enum_id(&WeightFormat::Mxfp4), "mxfp4");
    }

    fn inference(id: &str, weights: WeightFormat) -> Job {
        Job {
            arch: crate::catalog::model(id).unwrap().arch().clone(),
            mode: crate::model::Mode::Inference,
            weights,
            ..Job::default()
        }
    }

    /// gpt-oss-20b in MXFP4, worked out by hand from its config.json (24 layers, 32 experts, hidden 2880,
    /// expert width 2880, 64 query heads and 8 KV heads of 64, vocabulary 201,088, untied, q/k/v biases):
    /// - experts: 3 · 2880 · 2880 = 24,883,200 weights each (gate_up 2880 × 5760, down 2880 × 2880), × 32
    ///   experts × 24 layers = 19,110,297,600; at 4.25 bits, × 0.53125 = 10,152,345,600 B. That is exactly
    ///   the U8 bytes (blocks and scales) of the published safetensors (`tests/hub.rs`, openai/gpt-oss-20b).
    /// - bf16: embedding and LM head 201,088 · 2880 = 579,133,440 each; per layer q 2880 · 4096 =
    ///   11,796,480, k and v 2880 · 512 = 1,474,560 each, o 4096 · 2880 = 11,796,480, q/k/v biases 5,120,
    ///   two norms 5,760, router 2880 · 32 = 92,160: 26,645,120, × 24 = 639,482,880; final norm 2,880.
    ///   Together 1,797,752,640 × 2 B = 3,595,505,280 B.
    /// - total 13,747,850,880 B = 12.80 GiB. The published checkpoint is 13,761,264,768 B (12.82 GiB;
    ///   Hub safetensors of openai/gpt-oss-20b, `tests/hub.rs`): 13,413,888 B more, the bf16 biases and
    ///   attention sinks the catalog leaves out (per layer o_proj bias 2,880, sinks 64, router bias 32,
    ///   expert biases 32 · (5,760 + 2,880); × 24 = 6,706,944 parameters × 2 B).
    #[test]
    fn gpt_oss_20b_mxfp4_weights_by_hand() {
        let job = inference("gpt-oss-20b", WeightFormat::Mxfp4);
        let s = Shapes::of(&job);
        assert_eq!(s.params.expert_linear, 19_110_297_600.0);
        let w = weight_bytes(&job, &s);
        assert_eq!(w.quantized, 10_152_345_600.0);
        assert_eq!(w.plain, 3_595_505_280.0);
        assert_eq!(w.whole, 13_747_850_880.0);
        assert_eq!(stored_bytes(&s.params, WeightFormat::Mxfp4), w.whole);
        let published = 13_761_264_768.0;
        assert!((published - w.whole) / published < 0.001);
    }

    /// A dense model has no experts: MXFP4 quantizes nothing and every weight stays bf16.
    #[test]
    fn mxfp4_on_a_dense_model_is_bf16() {
        let mx = inference("llama-3.2-1b", WeightFormat::Mxfp4);
        let bf = inference("llama-3.2-1b", WeightFormat::Bf16);
        let (sm, sb) = (Shapes::of(&mx), Shapes::of(&bf));
        let w = weight_bytes(&mx, &sm);
        assert_eq!(w.quantized, 0.0);
        assert_eq!(w.whole, weight_bytes(&bf, &sb).whole);
        assert_eq!(w.whole, sm.params.total * 2.0);
    }
}
