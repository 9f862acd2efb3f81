//! The ranges every size a user can type must fall in, and the checks that apply them.
//!
//! Every entry point (share links, the form JSON, job JSON from the CLI or `window.vramfit`, a pasted
//! `config.json`) runs [`Architecture::check`] / [`Job::check`] before estimating, so the model only ever
//! sees sizes whose products stay finite in `f64` and whose sums fit in `u32`. The bounds are far above any
//! real model (the largest published configs have hidden ≈ 2^14, vocab ≈ 2^18, context ≈ 2^20) and far
//! below where arithmetic breaks: with every dimension ≤ 2^24 the largest product the model forms
//! (tokens × vocab × bytes per logit, or hidden × intermediate × layers) stays under 2^80, exact enough and
//! nowhere near `f64::MAX`.

use super::arch::{Architecture, AttentionKind};
use super::job::Job;

/// Upper bound of any architecture dimension (`hidden_size`, `intermediate_size`, `vocab_size`, ranks,
/// windows, expert counts): 16,777,216.
pub const MAX_DIM: u32 = 1 << 24;
/// Upper bound of `num_hidden_layers` (the deepest published LLMs have ~130 layers).
pub const MAX_LAYERS: u32 = 1 << 16;
/// Upper bound of a micro-batch, gradient accumulation, concurrent sequences.
pub const MAX_BATCH: u32 = 1 << 20;
/// Upper bound of a sequence length, prompt or generated tokens.
pub const MAX_TOKENS: u32 = 1 << 24;
/// Upper bound of GPUs in one job.
pub const MAX_GPUS: u32 = 4096;
/// Upper bound of a LoRA rank.
pub const MAX_RANK: u32 = 65_536;
/// Upper bound of a dataset held in host RAM, GiB (1 PiB).
pub const MAX_DATASET_GIB: f64 = 1_048_576.0;
/// Upper bound of images per sample.
pub const MAX_IMAGES: u32 = 4096;
/// Upper bound of a GPU's or machine's memory typed in, GiB.
pub const MAX_MEMORY_GIB: u32 = 1 << 20;

/// `name` must lie in `lo..=hi`.
pub fn in_range(name: &str, value: u32, lo: u32, hi: u32) -> Result<(), String> {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(format!("{name}: {value} is outside {lo}…{hi}"))
    }
}

impl Architecture {
    /// Checks that the shape is possible and within [`MAX_DIM`]/[`MAX_LAYERS`]; the error names the field.
    pub fn check(&self) -> Result<(), String> {
        in_range("layers", self.layers, 1, MAX_LAYERS)?;
        in_range("hidden", self.hidden, 1, MAX_DIM)?;
        in_range("heads", self.heads, 1, MAX_DIM)?;
        in_range("kv_heads", self.kv_heads, 1, self.heads)?;
        in_range("head_dim", self.head_dim, 1, MAX_DIM)?;
        in_range("intermediate", self.intermediate, 0, MAX_DIM)?;
        in_range("vocab", self.vocab, 1, MAX_DIM)?;
        in_range("learned_positions", self.learned_positions, 0, MAX_DIM)?;
        in_range("sliding_window", self.sliding_window, 0, MAX_DIM)?;
        in_range("norms_per_layer", self.norms_per_layer, 1, 4)?;
        if !(0.0..=1.0).contains(&self.sliding_fraction) {
            return Err(format!(
                "sliding_fraction: {} is outside 0…1",
                self.sliding_fraction
            ));
        }
        if self.attention == AttentionKind::Mla {
            let m = self.mla;
            in_range("mla.q_lora_rank", m.q_lora_rank, 0, MAX_DIM)?;
            in_range("mla.kv_lora_rank", m.kv_lora_rank, 1, MAX_DIM)?;
            in_range("mla.qk_nope_head_dim", m.qk_nope_head_dim, 0, MAX_DIM)?;
            in_range("mla.qk_rope_head_dim", m.qk_rope_head_dim, 0, MAX_DIM)?;
            in_range("mla.v_head_dim", m.v_head_dim, 1, MAX_DIM)?;
        }
        if let Some(moe) = self.moe {
            in_range("moe.experts", moe.experts, 1, MAX_DIM)?;
            in_range("moe.active", moe.active, 1, moe.experts)?;
            in_range(
                "moe.expert_intermediate",
                moe.expert_intermediate,
                1,
                MAX_DIM,
            )?;
            in_range(
                "moe.shared_intermediate",
                moe.shared_intermediate,
                0,
                MAX_DIM,
            )?;
            in_range("moe.dense_layers", moe.dense_layers, 0, self.layers)?;
        }
        if let Some(v) = &self.vision {
            v.check()?;
        }
        if let Some(hy) = self.stack() {
            hy.check(self.layers)?;
        }
        Ok(())
    }
}

impl Job {
    /// Checks every size of the job (the architecture included); the error names the field.
    pub fn check(&self) -> Result<(), String> {
        self.arch.check().map_err(|e| format!("arch.{e}"))?;
        in_range("micro_batch", self.micro_batch, 1, MAX_BATCH)?;
        in_range("seq_len", self.seq_len, 1, MAX_TOKENS)?;
        in_range("grad_accum", self.grad_accum, 1, MAX_BATCH)?;
        in_range("gpus", self.gpus, 1, MAX_GPUS)?;
        in_range("lora.rank", self.lora.rank, 1, MAX_RANK)?;
        in_range(
            "freeze_trainable_layers",
            self.freeze_trainable_layers,
            0,
            MAX_LAYERS,
        )?;
        in_range(
            "inference.prompt_tokens",
            self.inference.prompt_tokens,
            1,
            MAX_TOKENS,
        )?;
        in_range(
            "inference.new_tokens",
            self.inference.new_tokens,
            0,
            MAX_TOKENS,
        )?;
        in_range("inference.batch", self.inference.batch, 1, MAX_BATCH)?;
        in_range("vision.images", self.vision.images, 0, MAX_IMAGES)?;
        in_range("vision.max_pixels", self.vision.max_pixels, 1, MAX_TOKENS)?;
        in_range("grpo.generations", self.grpo.generations, 1, MAX_BATCH)?;
        in_range(
            "grpo.completion_tokens",
            self.grpo.completion_tokens,
            0,
            MAX_TOKENS,
        )?;
        if !(0.0..=f64::from(MAX_MEMORY_GIB)).contains(&self.grpo.vllm_gib) {
            return Err(format!(
                "grpo.vllm_gib: {} is outside 0…{MAX_MEMORY_GIB}",
                self.grpo.vllm_gib
            ));
        }
        if !(0.0..=MAX_DATASET_GIB).contains(&self.dataset_gib) {
            return Err(format!(
                "dataset_gib: {} is outside 0…{MAX_DATASET_GIB}",
                self.dataset_gib
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{estimate, Mla};

    #[test]
    fn the_default_job_and_every_catalog_model_pass() {
        assert_eq!(Job::default().check(), Ok(()));
        for m in crate::catalog::models() {
            assert_eq!(m.arch().check(), Ok(()), "{}", m.id);
        }
    }

    #[test]
    fn each_bad_size_is_named() {
        type Spoil = fn(&mut Job);
        let cases: [(&str, Spoil); 7] = [
            ("arch.hidden", |j| j.arch.hidden = 0),
            ("arch.kv_heads", |j| j.arch.kv_heads = j.arch.heads + 1),
            ("arch.mla.kv_lora_rank", |j| {
                j.arch.attention = AttentionKind::Mla;
                j.arch.mla = Mla {
                    kv_lora_rank: u32::MAX,
                    qk_rope_head_dim: 1,
                    v_head_dim: 128,
                    ..Mla::default()
                };
            }),
            ("micro_batch", |j| j.micro_batch = u32::MAX),
            ("gpus", |j| j.gpus = 0),
            ("dataset_gib", |j| j.dataset_gib = 1e300),
            ("dataset_gib", |j| j.dataset_gib = f64::NAN),
        ];
        for (field, spoil) in cases {
            let mut job = Job::default();
            spoil(&mut job);
            let err = job.check().unwrap_err();
            assert!(err.starts_with(field), "{field}: {err}");
        }
    }

    #[test]
    fn the_largest_allowed_job_still_gives_finite_figures() {
        let mut job = Job::default();
        let a = &mut job.arch;
        (a.layers, a.hidden, a.heads, a.kv_heads, a.head_dim) =
            (MAX_LAYERS, MAX_DIM, MAX_DIM, MAX_DIM, MAX_DIM);
        (a.intermediate, a.vocab) = (MAX_DIM, MAX_DIM);
        (job.micro_batch, job.seq_len, job.grad_accum) = (MAX_BATCH, MAX_TOKENS, MAX_BATCH);
        job.dataset_gib = MAX_DATASET_GIB;
        assert_eq!(job.check(), Ok(()));
        let e = estimate(&job);
        assert!(
            e.fit_need.is_finite() && e.fit_need > 1e18,
            "{}",
            e.fit_need
        );
        assert!(e.host_total.is_finite(), "{}", e.host_total);
    }
}
