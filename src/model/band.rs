//! The estimate's error band: how far measured peaks of real runs fall from the model's prediction.
//!
//! The tensor terms match the fake-tensor oracle (`tests/golden_grid.rs`); what remains between a prediction
//! and a real run is what the model cannot see from the settings (the stack's own model code, kernels'
//! scratch memory, allocator behaviour, data lengths). The band carries that spread honestly: the 10th and
//! 90th percentiles of `measured / predicted` over the shared tier A/B reference runs of the same kind of job,
//! so about 80% of real runs land inside it.

use super::job::{Job, Mode};
use serde::{Deserialize, Serialize};

/// Which reference runs a job's band is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BandKind {
    /// Full fine-tuning and freeze-tuning (base weights train).
    Full,
    /// LoRA/DoRA on a 16-bit base.
    Lora,
    /// LoRA on a quantized base.
    Qlora,
    /// Generation.
    Inference,
}

impl BandKind {
    /// The kind of a job.
    pub fn of(job: &Job) -> BandKind {
        match job.mode {
            Mode::Full | Mode::Freeze | Mode::Badam | Mode::Lisa => BandKind::Full,
            Mode::Lora if job.weights.is_quantized() => BandKind::Qlora,
            Mode::Lora => BandKind::Lora,
            Mode::Qlora => BandKind::Qlora,
            Mode::Inference => BandKind::Inference,
        }
    }

    /// The reference-run task names (`task` in `reference-cases.jsonl`) this kind covers.
    pub fn of_task(task: &str) -> Option<BandKind> {
        match task {
            "full" | "freeze" => Some(BandKind::Full),
            "lora" => Some(BandKind::Lora),
            "qlora" => Some(BandKind::Qlora),
            "inference" => Some(BandKind::Inference),
            _ => None,
        }
    }

    /// 10th and 90th percentile of `measured / predicted` on the shared tier A/B reference runs of this kind,
    /// as printed by `vramfit eval reference-cases.jsonl --band` (recomputed whenever the model changes;
    /// the unit test below checks the table is ordered and brackets 1).
    pub fn ratio_range(self) -> (f64, f64) {
        match self {
            BandKind::Full => (0.69, 1.24),
            BandKind::Lora => (0.99, 1.36),
            BandKind::Qlora => (0.75, 1.25),
            BandKind::Inference => (0.95, 1.05),
        }
    }
}

/// The likely range of what a GPU must have for the job, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub low: f64,
    pub high: f64,
}

/// The band around a predicted need (bytes) for a job of this kind.
pub fn band(job: &Job, need: f64) -> Band {
    let (lo, hi) = BandKind::of(job).ratio_range();
    Band {
        low: need * lo.min(1.0),
        high: need * hi.max(1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_band_brackets_the_prediction() {
        for kind in [
            BandKind::Full,
            BandKind::Lora,
            BandKind::Qlora,
            BandKind::Inference,
        ] {
            let (lo, hi) = kind.ratio_range();
            assert!(
                lo > 0.5 && lo <= 1.0 && (1.0..2.0).contains(&hi),
                "{kind:?} {lo} {hi}"
            );
        }
        let job = Job::default();
        let b = band(&job, 10.0);
        assert!(b.low <= 10.0 && b.high >= 10.0 && b.high > b.low);
        assert_eq!(BandKind::of_task("qlora"), Some(BandKind::Qlora));
        assert_eq!(BandKind::of_task("galore"), None);
    }
}
