//! From an estimate to an answer: does it fit, which limit is hit, by how much, and what to change.
//! Pure: every what-if is evaluated by the same memory model.

pub mod curve;
pub mod export;
pub mod remedies;
pub mod solve;
pub mod speed;
pub mod verify;

use crate::form::Form;
use crate::model::{Component, Estimate};
use remedies::Remedy;
use solve::Solutions;
use speed::Speed;

/// The overall answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fit {
    /// Fits even if the need is at the high end of its band, and RAM is enough.
    Fits,
    /// Fits at the estimate, but not if the need is at the high end of its band.
    Tight,
    /// GPU memory is short.
    VramShort,
    /// System RAM is short (VRAM is fine).
    RamShort,
    /// Both are short.
    BothShort,
}

/// The verdict for one estimate on one machine.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Verdict {
    pub fit: Fit,
    /// Needed per GPU (device total), bytes.
    pub vram_need: f64,
    /// The likely range of the need per GPU (the estimate's band), bytes.
    pub vram_band: crate::model::Band,
    /// Usable per GPU, bytes.
    pub vram_have: f64,
    /// Needed host RAM, bytes.
    pub ram_need: f64,
    /// Installed host RAM, bytes.
    pub ram_have: f64,
    /// The largest GPU component and its share of the device total.
    pub dominant: Option<(Component, f64)>,
}

impl Verdict {
    /// VRAM shortfall (positive) or headroom (negative), bytes.
    pub fn vram_gap(&self) -> f64 {
        self.vram_need - self.vram_have
    }

    /// RAM shortfall (positive) or spare (negative), bytes.
    pub fn ram_gap(&self) -> f64 {
        self.ram_need - self.ram_have
    }
}

/// The chosen PEFT method's GPU need against LoRA's on the same job, percent (`None` for LoRA itself).
pub fn peft_vs_lora_pct(form: &Form) -> Option<f64> {
    use crate::model::peft::Method;
    (form.peft_method != Method::Lora).then(|| {
        let need = |m: Method| {
            let f = Form {
                peft_method: m,
                ..form.clone()
            };
            crate::model::estimate(&f.job()).fit_need
        };
        let (this, lora) = (need(form.peft_method), need(Method::Lora));
        (this - lora) / lora.max(1.0) * 100.0
    })
}

/// Compares an estimate with a GPU's usable memory and the machine's RAM (both in bytes).
pub fn verdict(est: &Estimate, vram_have: f64, ram_have: f64) -> Verdict {
    let vram_need = est.fit_need;
    let ram_need = est.host_total;
    let vram_short = vram_need > vram_have;
    let ram_short = ram_need > ram_have;
    let fit = match (vram_short, ram_short) {
        (true, true) => Fit::BothShort,
        (true, false) => Fit::VramShort,
        (false, true) => Fit::RamShort,
        (false, false) if est.fit_band.high > vram_have => Fit::Tight,
        (false, false) => Fit::Fits,
    };
    let dominant = est
        .gpu
        .iter()
        .filter(|p| p.component != Component::AllocatorCache)
        .max_by(|a, b| a.bytes.total_cmp(&b.bytes))
        .filter(|_| vram_need > 0.0)
        .map(|p| (p.component, p.bytes / vram_need));
    Verdict {
        fit,
        vram_need,
        vram_band: est.fit_band,
        vram_have,
        ram_need,
        ram_have,
        dominant,
    }
}

/// A setting the chosen GPU cannot run as given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HardwareWarning {
    /// FlashAttention-2 needs Ampere or newer (Dao-AILab/flash-attention README; ROCm: MI200/MI300).
    FlashAttentionUnsupported,
    /// bf16 needs Ampere or newer on NVIDIA (T4 and V100 have no bf16 tensor cores): use fp16.
    Bf16Unsupported,
    /// fp8 weights or KV cache need Ada/Hopper or newer.
    Fp8Unsupported,
}

/// What the chosen catalog GPU cannot do of what the form asks (nothing for a custom GPU).
pub fn hardware_warnings(form: &Form) -> Vec<HardwareWarning> {
    use crate::model::{AttentionImpl, KvDtype, Mode, WeightFormat};
    let Some(gpu) = crate::catalog::gpu(&form.gpu) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if form.attention == AttentionImpl::Flash2 && !gpu.flash_attention2_support {
        out.push(HardwareWarning::FlashAttentionUnsupported);
    }
    let wants_bf16 = form.weights == WeightFormat::Bf16
        || (form.mode != Mode::Inference && form.weights.is_quantized());
    if wants_bf16 && !gpu.bf16_support {
        out.push(HardwareWarning::Bf16Unsupported);
    }
    let wants_fp8 = form.weights == WeightFormat::Fp8
        || (form.mode == Mode::Inference && form.kv_dtype == KvDtype::Fp8);
    if wants_fp8 && !gpu.fp8_support {
        out.push(HardwareWarning::Fp8Unsupported);
    }
    out
}

/// Everything the advisor says about one setup.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Advice {
    pub estimate: Estimate,
    pub verdict: Verdict,
    /// Rough speed of the current setup.
    pub speed: Option<Speed>,
    /// Single changes, those that fit first and cheapest first.
    pub remedies: Vec<Remedy>,
    /// The cheapest pairs of changes that fit (only computed when no single change fits).
    pub combinations: Vec<Remedy>,
    pub solutions: Solutions,
    /// What the chosen GPU cannot run as set.
    pub hardware: Vec<HardwareWarning>,
}

impl Advice {
    /// The remedy to lead with: the cheapest that fits (single change or combination), else the single
    /// change that saves the most.
    pub fn best(&self) -> Option<&Remedy> {
        self.remedies
            .iter()
            .chain(&self.combinations)
            .filter(|r| r.fits)
            .min_by(|a, b| a.cost.total_cmp(&b.cost))
            .or(self.remedies.first())
    }
}

/// The full advice pass for a form: a few hundred evaluations of the memory model.
pub fn advise(form: &Form) -> Advice {
    let (estimate, verdict, speed) = remedies::evaluate(form);
    let remedies = remedies::rank_single(form);
    // Combinations of settings only matter when no single setting change (hardware and model swaps
    // aside) makes the job fit.
    let setting_fits = remedies
        .iter()
        .any(|r| r.fits && !r.changes.iter().any(|c| c.swaps_hardware_or_model()));
    let combinations = if setting_fits || !matches!(verdict.fit, Fit::VramShort | Fit::BothShort) {
        Vec::new()
    } else {
        remedies::best_combinations(form, 3)
    };
    Advice {
        hardware: hardware_warnings(form),
        solutions: solve::solve(form),
        estimate,
        verdict,
        speed,
        remedies,
        combinations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peft_method_is_compared_with_lora_on_the_same_job() {
        use crate::model::peft::Method;
        assert_eq!(peft_vs_lora_pct(&Form::default()), None);
        // VeRA trains vectors instead of low-rank matrices: a little less than LoRA r16 on all modules.
        let vera = peft_vs_lora_pct(&Form {
            peft_method: Method::Vera,
            ..Form::default()
        })
        .unwrap();
        assert!(vera < 0.0 && vera > -20.0, "{vera}");
    }
    use crate::bytes::GIB;
    use crate::model::{estimate, Job};

    #[test]
    fn hardware_warnings_follow_the_gpu() {
        use crate::model::AttentionImpl;
        let t4 = Form {
            gpu: "t4".into(),
            attention: AttentionImpl::Flash2,
            ..Form::default()
        };
        let w = hardware_warnings(&t4);
        assert!(
            w.contains(&HardwareWarning::FlashAttentionUnsupported)
                && w.contains(&HardwareWarning::Bf16Unsupported)
        );
        assert!(hardware_warnings(&Form {
            gpu: "a100-80gb".into(),
            ..t4
        })
        .is_empty());
    }

    #[test]
    fn verdict_thresholds() {
        let est = estimate(&Job::default());
        let need = est.fit_need;
        assert_eq!(verdict(&est, need * 2.0, 1e15).fit, Fit::Fits);
        assert_eq!(verdict(&est, need * 1.05, 1e15).fit, Fit::Tight);
        assert_eq!(verdict(&est, need * 0.9, 1e15).fit, Fit::VramShort);
        assert_eq!(verdict(&est, need * 2.0, 1.0 * GIB).fit, Fit::RamShort);
        assert_eq!(verdict(&est, 1.0, 1.0).fit, Fit::BothShort);
    }
}
