//! Solvers: the largest micro-batch and the longest sequence that fit, the fewest GPUs, the smallest GPU.
//! Each searches with the same model; memory is monotone in the searched quantity (property-tested in
//! `tests/model_properties.rs`), so bisection finds the boundary.

use super::remedies::evaluate;
use super::Fit;
use crate::catalog;
use crate::form::Form;
use crate::model::{Mode, Parallelism};

/// What the solvers found (`None`: not even the smallest value fits, or the search does not apply).
#[derive(Clone, Debug, PartialEq, Default, serde::Serialize)]
pub struct Solutions {
    /// Largest micro-batch that fits (training) or most concurrent sequences (inference).
    pub max_batch: Option<u32>,
    /// Longest sequence (training) or prompt (inference) that fits, tokens.
    pub max_seq: Option<u32>,
    /// Fewest GPUs of the chosen kind, and the strategy that needs it.
    pub min_gpus: Option<(u32, Parallelism)>,
    /// Smallest catalog GPU (by usable memory) that fits with the current count.
    pub smallest_gpu: Option<String>,
    /// Host RAM the current setup needs, bytes.
    pub ram_needed: f64,
}

fn vram_ok(form: &Form) -> bool {
    !matches!(evaluate(form).1.fit, Fit::VramShort | Fit::BothShort)
}

/// Largest `v` in `lo..=hi` with `ok(v)`, for a predicate true below some boundary; `None` if `ok(lo)` fails.
pub(crate) fn largest(lo: u32, hi: u32, ok: impl Fn(u32) -> bool) -> Option<u32> {
    if !ok(lo) {
        return None;
    }
    let (mut good, mut bad) = (lo, hi.saturating_add(1));
    if ok(hi) {
        return Some(hi);
    }
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// Runs every solver on a form.
pub fn solve(form: &Form) -> Solutions {
    let training = form.mode != Mode::Inference;
    let max_batch = largest(1, 4096, |b| {
        let mut f = form.clone();
        if training {
            f.micro_batch = b;
        } else {
            f.concurrent = b;
        }
        vram_ok(&f)
    });
    let max_seq = largest(16, 1 << 21, |s| {
        let mut f = form.clone();
        if training {
            f.seq_len = s;
        } else {
            f.prompt_tokens = s;
        }
        vram_ok(&f)
    });
    // More GPUs only lower per-GPU memory when the model is split: search under the current strategy if
    // it splits, else under ZeRO-3 (training) or tensor parallelism (inference).
    let strategy = match form.parallelism {
        Parallelism::Ddp | Parallelism::Zero1 | Parallelism::Zero2 if training => {
            Parallelism::Zero3
        }
        Parallelism::Ddp | Parallelism::Zero1 | Parallelism::Zero2 => Parallelism::Tensor,
        p => p,
    };
    let min_gpus = (1..=64u32)
        .find(|&n| {
            let par = if n == 1 { form.parallelism } else { strategy };
            vram_ok(&Form {
                gpus: n,
                parallelism: par,
                ..form.clone()
            })
        })
        .map(|n| (n, if n == 1 { form.parallelism } else { strategy }));
    // Among machines of the same memory kind as the chosen GPU (a unified-memory box is not the smallest
    // card for a discrete card's job).
    let mut gpus: Vec<_> = catalog::gpus()
        .iter()
        .filter(|g| super::remedies::same_memory_kind(form, g))
        .collect();
    gpus.sort_by(|a, b| a.usable_gib.total_cmp(&b.usable_gib));
    let smallest_gpu = gpus
        .iter()
        .find(|g| {
            vram_ok(&Form {
                gpu: g.id.clone(),
                ..form.clone()
            })
        })
        .map(|g| g.id.clone());
    Solutions {
        max_batch,
        max_seq,
        min_gpus,
        smallest_gpu,
        ram_needed: evaluate(form).1.ram_need,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_finds_the_boundary() {
        assert_eq!(largest(1, 100, |v| v <= 37), Some(37));
        assert_eq!(largest(1, 100, |_| true), Some(100));
        assert_eq!(largest(1, 100, |_| false), None);
    }

    #[test]
    fn solutions_sit_on_the_fit_boundary() {
        // Packed batches, so that one sequence of the default length fits the default card.
        let form = Form {
            variable_lengths: false,
            ..Form::default()
        };
        let s = solve(&form);
        let b = s.max_batch.expect("batch 1 fits the default");
        assert!(vram_ok(&Form {
            micro_batch: b,
            ..form.clone()
        }));
        assert!(!vram_ok(&Form {
            micro_batch: b + 1,
            ..form.clone()
        }));
        let seq = s.max_seq.unwrap();
        assert!(!vram_ok(&Form {
            seq_len: seq + 1,
            ..form.clone()
        }));
        let g = s.smallest_gpu.unwrap();
        assert!(vram_ok(&Form {
            gpu: g.clone(),
            ..form.clone()
        }));
        // Nothing smaller of the same memory kind fits, and it is of the form's kind.
        let chosen = catalog::gpu(&g).unwrap();
        assert!(crate::advice::remedies::same_memory_kind(&form, chosen));
        let usable = chosen.usable_gib;
        assert!(
            catalog::gpus()
                .iter()
                .filter(|x| x.usable_gib < usable
                    && crate::advice::remedies::same_memory_kind(&form, x))
                .all(|x| !vram_ok(&Form {
                    gpu: x.id.clone(),
                    ..form.clone()
                }))
        );
        // The fewest GPUs, when some count fits: that count fits and one fewer does not.
        if let Some((n, parallelism)) = s.min_gpus {
            let with = |gpus| Form {
                gpus,
                parallelism,
                ..form.clone()
            };
            assert!(vram_ok(&with(n)));
            assert!(n == 1 || !vram_ok(&with(n - 1)));
        }
    }

    #[test]
    fn full_fine_tune_needs_several_gpus_under_zero3() {
        // Qwen2.5-14B in pure bf16: 14.8 B × (2 + 2 + 4) B ≈ 110 GiB before activations, beyond one 80 GB card.
        let form = Form {
            model: "qwen2.5-14b".into(),
            mode: Mode::Full,
            micro_batch: 1,
            seq_len: 512,
            gpu: "a100-80gb".into(),
            ..Form::default()
        };
        let (n, par) = solve(&form).min_gpus.expect("some GPU count fits");
        assert!(n > 1 && par == Parallelism::Zero3, "{n} {par:?}");
        assert!(vram_ok(&Form {
            gpus: n,
            parallelism: par,
            ..form.clone()
        }));
        assert!(!vram_ok(&Form {
            gpus: n - 1,
            parallelism: par,
            ..form.clone()
        }));
    }
}
