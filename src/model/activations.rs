//! Activation memory: what autograd keeps for backward, per token, and the logits/loss buffers.
//!
//! Derived by walking Hugging Face `LlamaDecoderLayer` (and its GPT-2/Falcon/MoE relatives) and listing the
//! tensors each op saves, as in Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
//! Transformer Models", sec. 4.1), but for the modern block: RMSNorm with an fp32 upcast, GQA, RoPE, SwiGLU,
//! no dropout. PyTorch saves an op's input for backward only when a gradient must flow to a tensor that
//! needs it (autograd codegen's `should_compute_output`), so frozen LoRA base weights save less.

use super::arch::{Architecture, MlpKind};
use super::job::{AttentionImpl, Job, LossImpl, Mode, Module, Precision};

/// Bytes of one activation element: 2 under bf16/fp16 compute, 4 in fp32.
pub fn act_bytes(job: &Job) -> f64 {
    if job.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    }
}

/// Whether layer weights (not just adapters) get gradients in this job's trained layers.
fn weights_trained(job: &Job) -> bool {
    matches!(job.mode, Mode::Full | Mode::Freeze)
}

fn adapted(job: &Job, m: Module) -> bool {
    matches!(job.mode, Mode::Lora | Mode::Qlora) && job.lora.targets.contains(&m)
}

/// Bytes one decoder layer keeps for backward, per token, excluding the eager `s × s` attention matrices.
///
/// With `ab` the activation element size:
/// - each norm (HF `LlamaRMSNorm`): the fp32 copy of its input, 4h (ab·h when already fp32), plus the
///   normalized 16-bit tensor ab·h when the norm weight is trained; LayerNorm keeps its input, ab·h;
/// - a linear layer keeps its input when its weight is trained or it carries a LoRA adapter; q/k/v share one
///   input (the norm output, ab·h); `o` takes a contiguous copy of the attention output (ab·q);
/// - LoRA dropout (`lora_dropout > 0`) keeps a dropped copy (ab) and a mask (1 B) of each adapted input;
/// - attention kernel: SDPA/FlashAttention keep q, k, v and the output; HF's SDPA and eager paths first
///   expand K/V to all query heads (`repeat_kv`), the FlashAttention-2 path does not;
/// - gated MLP: gate output, up output and activation output (3·ab·i), the product when `down` is trained or
///   adapted; plain MLP: the pre-activation (ab·i) and the activation output when `down` needs it;
/// - MoE: the MLP part once per active expert, plus shared experts.
pub fn layer_bytes_per_token(arch: &Architecture, job: &Job) -> f64 {
    let ab = act_bytes(job);
    let h = f64::from(arch.hidden);
    let q = arch.q_width();
    let kv = arch.kv_width();
    let trained = weights_trained(job);
    let needs = |m: Module| trained || adapted(job, m);

    let norm = if arch.layer_norm {
        ab * h
    } else {
        (if ab < 4.0 { 4.0 * h } else { ab * h }) + if trained { ab * h } else { 0.0 }
    };
    let norms = norm * f64::from(arch.norms_per_layer.clamp(1, 4));

    // Attention block.
    let mut attn = 0.0;
    if needs(Module::Q) || needs(Module::K) || needs(Module::V) {
        attn += ab * h;
    }
    let kv_kept = match job.attention {
        AttentionImpl::Flash2 => kv,
        AttentionImpl::Sdpa | AttentionImpl::Eager => q.max(kv),
    };
    attn += ab * (q + 2.0 * kv_kept) + ab * q; // q, k, v and the kernel output
    if needs(Module::O) {
        attn += ab * q;
    }

    // MLP block, per expert pass.
    let mlp_width = |i: f64, down: bool| match arch.mlp {
        MlpKind::Gated => 3.0 * ab * i + if down { ab * i } else { 0.0 },
        MlpKind::Plain => ab * i + if down { ab * i } else { 0.0 },
    };
    let mut mlp = if needs(Module::Gate) || needs(Module::Up) {
        ab * h
    } else {
        0.0
    };
    let down = needs(Module::Down);
    mlp += match arch.moe {
        None => mlp_width(f64::from(arch.intermediate), down),
        Some(moe) => {
            let routed = f64::from(moe.active.min(moe.experts))
                * (mlp_width(f64::from(moe.expert_intermediate), down) + ab * h);
            routed + mlp_width(f64::from(moe.shared_intermediate), down)
        }
    };

    // LoRA dropout copies, one per adapted module's input.
    let mut dropout = 0.0;
    if matches!(job.mode, Mode::Lora | Mode::Qlora) && job.lora.dropout {
        for (m, d_in, _) in arch.linear_modules() {
            if adapted(job, m) {
                let per_expert = match (arch.moe, m) {
                    (Some(moe), Module::Gate | Module::Up | Module::Down) => {
                        d_in / (f64::from(moe.experts) + 1.0) * f64::from(moe.active)
                    }
                    _ => d_in,
                };
                dropout += (ab + 1.0) * per_expert;
            }
        }
    }
    // DoRA recomputes the weight norm and scales the output: about one more output copy per module.
    let dora = if matches!(job.mode, Mode::Lora | Mode::Qlora) && job.lora.dora {
        ab * (q + 2.0 * kv + 3.0 * h)
    } else {
        0.0
    };
    norms + attn + mlp + dropout + dora
}

/// Eager attention keeps, per token and layer, the fp32 softmax output and its 16-bit copy (HF
/// `eager_attention_forward`: `softmax(..., dtype=float32).to(query.dtype)`): `(4 + ab) · heads · s` bytes.
pub fn eager_scores_per_token(arch: &Architecture, job: &Job, seq: f64) -> f64 {
    if job.attention == AttentionImpl::Eager {
        (4.0 + act_bytes(job)) * f64::from(arch.heads) * seq
    } else {
        0.0
    }
}

/// Bytes per (token × vocab) element at the loss's backward peak.
///
/// HF upcasts logits to fp32 for the loss: the 16-bit logits (2), their fp32 copy (4), the log-softmax
/// output (4) and, in backward, its fp32 gradient (4): 14 B. Kept in 16-bit: 2 + 2 + 2 + 2 and an fp32
/// reduction buffer, ≈ 9 B. Chunked (torchtune, litgpt): only the upcast chunk is live, but the 16-bit
/// logits of all chunks and their gradient remain: ≈ 4 B. Fused linear + cross-entropy (Liger, Unsloth):
/// no logits tensor at all. Source: `shared/design/memory-model.md` §11, checked against the transformers
/// loss code (`loss_utils.py`) and torchtune `CEWithChunkedOutputLoss`.
pub fn loss_bytes_per_logit(loss: LossImpl, job: &Job) -> f64 {
    match loss {
        LossImpl::Fp32Logits => {
            if job.precision == Precision::Fp32 {
                12.0
            } else {
                14.0
            }
        }
        LossImpl::Bf16Logits => 9.0,
        LossImpl::Chunked => 4.0,
        LossImpl::Fused => 0.0,
    }
}
