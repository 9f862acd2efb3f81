//! Generation with `model.generate`: the KV cache, a hybrid model's recurrent state and the prefill's
//! working set (inference, and an RL job's rollout).

use super::arch::AttentionKind;
use super::job::{AttentionImpl, Job, WeightFormat};
use super::preference::Generate;
use super::shapes::Shapes;

/// What a generation holds on the busiest GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Generation {
    /// Keys and values of every attention layer for the prompt and the new tokens.
    pub kv_cache: f64,
    /// The recurrent layers' fixed state per sequence.
    pub recurrent_state: f64,
    /// One layer's working set over the prompt, the last position's logits and the dequantization or
    /// autocast copies beside them.
    pub prefill: f64,
    /// Whether the cache grows by concatenation, a token at a time (there are new tokens to generate).
    pub grows: bool,
}

/// The KV cache, recurrent state and prefill of `model.generate` on the busiest GPU.
///
/// - KV cache = 2 · layers · kv_heads · head_dim · tokens · batch · bytes (GQA-aware). MLA caches the
///   latent and the RoPE key: (kv_lora_rank + qk_rope_head_dim) per layer and token (DeepSeek-V2 paper
///   sec. 2.1.2). Sliding-window layers cache at most the window (Mistral v0.1, Gemma 2/3). A hybrid stack
///   caches keys and values in its attention layers only.
/// - Its recurrent layers hold a fixed state per sequence instead, whatever the length: the conv window
///   and the SSM state of every recurrent layer as transformers' cache allocates them
///   (`recurrent::Hybrid::hf_state_bytes_per_sequence`; the fp8 KV option does not apply).
/// - Prefill working set of one layer over the prompt: the residual, q/k/v/output and, in the MLP, the
///   activation, up projection and their product alive together (3·i: without autograd the gate output is
///   freed as soon as the activation consumes it, HF `LlamaMLP.forward`); eager attention adds the 16-bit score matrix and,
///   at its softmax, the fp32 copy and the fp32 output; a recurrent layer its own (`recurrent::Hybrid::prefill_bytes_per_token`).
/// - Only the last position's logits (transformers ≥ 4.45 `logits_to_keep`), upcast to fp32; older releases
///   compute and upcast them for every prompt position.
/// - Weights require grad by default, so autocast over fp32 weights keeps every 16-bit cast for the whole
///   region (an RL rollout generates outside the training step's autocast region); bitsandbytes matmuls
///   dequantize the largest linear (two 16-bit copies).
pub fn generation(job: &Job, s: &Shapes, gen: &Generate) -> Generation {
    let arch = &job.arch;
    let ab = s.act_bytes;
    let batch = gen.batch;
    let prompt = gen.prompt;
    let total = prompt + gen.new_tokens;
    let per_token_layer = match arch.attention {
        AttentionKind::Standard => 2.0 * arch.kv_width(),
        AttentionKind::Mla => {
            f64::from(arch.mla.kv_lora_rank) + f64::from(arch.mla.qk_rope_head_dim)
        }
    };
    let window = f64::from(arch.sliding_window);
    let cached = if window > 0.0 {
        let frac = arch.sliding_fraction.clamp(0.0, 1.0);
        frac * total.min(window) + (1.0 - frac) * total
    } else {
        total
    };
    // transformers 5's dynamic cache keeps a sliding layer's last `window − 1` positions as a slice of the
    // prefill's keys and values (`DynamicSlidingWindowLayer.update`), and a slice keeps its whole storage: until
    // the first decode step replaces it, every layer holds the whole prompt (the oracle's Gemma 3 prefill peak
    // holds 2,048 positions in every layer, window 512). The moment that needs the most is then the prefill's
    // or the end of decoding's, whichever cache is larger.
    let cached = if window > 0.0 && job.versions.transformers >= super::job::Version::new(5, 0) {
        cached.max(prompt)
    } else {
        cached
    };
    let attention_layers = super::recurrent::layer_shares(arch).0 * f64::from(arch.layers);
    let kv_cache =
        attention_layers * per_token_layer * cached * batch * gen.kv_bytes * s.layer_share
            / s.tensor_split;
    let recurrent_state = arch.stack().map_or(0.0, |hy| {
        f64::from(hy.recurrent_layers.min(arch.layers))
            * hy.hf_state_bytes_per_sequence(ab)
            * batch
            * s.layer_share
            / s.tensor_split
    });
    let h = f64::from(arch.hidden);
    let i = match arch.moe {
        Some(m) => f64::from(m.expert_intermediate) * f64::from(m.active.max(1)),
        None => f64::from(arch.intermediate),
    };
    let t = batch * prompt;
    let attn_work = ab * t * (2.0 * h + arch.q_width() + 2.0 * arch.q_width());
    let mlp_work = ab * t * (2.0 * h + 3.0 * i);
    // At eager attention's softmax (`softmax(scores, dim=-1, dtype=torch.float32)`), ATen converts the
    // 16-bit scores to fp32 before `_softmax` writes its fp32 output: the scores, their fp32 copy and the
    // output are alive together (the oracle's prefill peak op on Gemma 2, `aten._softmax.default`).
    let scores_work = if job.attention == AttentionImpl::Eager {
        (ab + 4.0 + 4.0) * f64::from(arch.heads) * prompt * prompt * batch
    } else {
        0.0
    };
    let positions = if job.versions.prefill_logits_all_positions() {
        prompt
    } else {
        1.0
    };
    let last_logits = batch * positions * f64::from(arch.vocab) * (2.0 + 4.0);
    let mixer_work = arch
        .stack()
        .filter(|hy| hy.recurrent_layers > 0)
        .map_or(0.0, |hy| hy.prefill_bytes_per_token(h, ab) * t);
    let mut prefill = (attn_work + scores_work).max(mlp_work).max(mixer_work) + last_logits;
    if s.autocast_fp32 && !job.is_training() {
        prefill += 2.0 * s.cast_params * s.layer_share;
    }
    if job.weights.is_bnb_4bit() || job.weights == WeightFormat::Int8 {
        prefill += 2.0 * s.largest_dequant * 2.0;
    }
    Generation {
        kv_cache,
        recurrent_state,
        prefill,
        grows: gen.new_tokens > 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    /// Llama-3.1-8B (32 layers, 8 KV heads × 128), 1 × (1000 + 24) tokens in bf16:
    /// 2 · 32 · 1024 · 1024 · 2 B = 128 MiB.
    #[test]
    fn llama_8b_kv_cache() {
        let mut job = Job {
            arch: crate::model::catalog_arch("llama-3.1-8b"),
            mode: Mode::Inference,
            ..Job::default()
        };
        job.inference.prompt_tokens = 1000;
        job.inference.new_tokens = 24;
        job.inference.batch = 1;
        let s = Shapes::of(&job);
        let gen = crate::model::preference::hf_generate(&job, s.working).unwrap();
        let g = generation(&job, &s, &gen);
        assert_eq!(g.kv_cache, 2.0 * 32.0 * 1024.0 * 1024.0 * 2.0);
        assert_eq!(g.recurrent_state, 0.0);
        assert!(g.grows);
    }

    /// Gemma 3 1B (26 layers, 1 KV head × 256, window 512 on its sliding layers), 4 × (2048 + 16) tokens in
    /// bf16. On transformers 5 the prefill holds every layer's whole prompt: 2 · 26 · 256 · 2048 · 4 · 2 B
    /// = 208 MiB. On 4.57 the sliding layers' window-sized cache is smaller.
    #[test]
    fn sliding_layers_hold_the_whole_prompt_at_prefill() {
        let mut job = Job {
            arch: crate::model::catalog_arch("gemma-3-1b-it"),
            mode: Mode::Inference,
            ..Job::default()
        };
        job.inference.prompt_tokens = 2048;
        job.inference.new_tokens = 16;
        job.inference.batch = 4;
        let kv = |job: &Job| {
            let s = Shapes::of(job);
            let gen = crate::model::preference::hf_generate(job, s.working).unwrap();
            generation(job, &s, &gen).kv_cache
        };
        assert_eq!(kv(&job), 2.0 * 26.0 * 256.0 * 2048.0 * 4.0 * 2.0);
        job.versions.transformers = crate::model::Version::new(4, 57);
        assert!(kv(&job) < 0.5 * 2.0 * 26.0 * 256.0 * 2048.0 * 4.0 * 2.0);
    }
}
