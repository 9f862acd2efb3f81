//! Peak memory as a function of one knob (sequence length, or micro-batch / concurrent sequences), stacked by
//! component, with the band around the need and the GPU's usable memory: the curve under the breakdown.
//! Every point is the same estimate the verdict uses; where the need crosses the GPU line is what the
//! longest-sequence (or largest-batch) solver finds.

use super::solve::largest;
use crate::form::Form;
use crate::model::{estimate, Component, Mode};

/// Which knob the curve sweeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// Sequence length (training) or prompt tokens (inference).
    Tokens,
    /// Micro-batch (training) or concurrent sequences (inference).
    Batch,
}

/// One point of the curve.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Point {
    /// The knob's value.
    pub x: u32,
    /// Memory per GPU by component, bytes (the allocator's cache of other shapes left out, so the parts
    /// add up to the need the verdict compares).
    pub parts: Vec<(Component, f64)>,
    /// The need, and its band, bytes.
    pub need: f64,
    pub low: f64,
    pub high: f64,
}

/// The curve, the GPU's usable memory and the largest value that fits.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Curve {
    pub axis: Axis,
    pub points: Vec<Point>,
    /// Usable memory of the chosen GPU, bytes.
    pub usable: f64,
    /// The knob's current value.
    pub current: u32,
    /// Largest value whose need fits the GPU (`None`: not even the smallest does).
    pub crossing: Option<u32>,
}

/// Points the curve is drawn with (≈ 40 estimates: well under a millisecond natively).
pub const POINTS: usize = 40;

fn with(form: &Form, axis: Axis, x: u32) -> Form {
    let mut f = form.clone();
    let training = f.mode != Mode::Inference;
    match (axis, training) {
        (Axis::Tokens, true) => f.seq_len = x,
        (Axis::Tokens, false) => f.prompt_tokens = x,
        (Axis::Batch, true) => f.micro_batch = x,
        (Axis::Batch, false) => f.concurrent = x,
    }
    f
}

fn current(form: &Form, axis: Axis) -> u32 {
    match (axis, form.mode != Mode::Inference) {
        (Axis::Tokens, true) => form.seq_len,
        (Axis::Tokens, false) => form.prompt_tokens,
        (Axis::Batch, true) => form.micro_batch,
        (Axis::Batch, false) => form.concurrent,
    }
}

/// The curve over a useful range: from a small value to well past both the current one and the crossing,
/// on a logarithmic scale.
pub fn curve(form: &Form, axis: Axis) -> Curve {
    let usable = form.gpu_usable_gib() * 1073741824.0;
    let fits = |x: u32| estimate(&with(form, axis, x).job()).fit_need <= usable;
    let (lo, hi) = match axis {
        Axis::Tokens => (16, 1 << 21),
        Axis::Batch => (1, 4096),
    };
    let crossing = largest(lo, hi, fits);
    let now = current(form, axis).max(lo);
    let top = now
        .max(crossing.unwrap_or(lo))
        .saturating_mul(2)
        .clamp(lo * 8, hi);
    let start = match axis {
        Axis::Tokens => 128.min(now),
        Axis::Batch => 1,
    };
    let (a, b) = (f64::from(start).ln(), f64::from(top).ln());
    let mut xs: Vec<u32> = (0..POINTS)
        .map(|i| (a + (b - a) * i as f64 / (POINTS - 1) as f64).exp().round() as u32)
        .collect();
    xs.push(now);
    xs.sort_unstable();
    xs.dedup();
    let points = xs
        .into_iter()
        .map(|x| {
            let e = estimate(&with(form, axis, x).job());
            let parts = e
                .gpu
                .iter()
                .filter(|p| p.component != Component::AllocatorCache)
                .map(|p| (p.component, p.bytes))
                .collect();
            Point {
                x,
                parts,
                need: e.fit_need,
                low: e.fit_band.low,
                high: e.fit_band.high,
            }
        })
        .collect();
    Curve {
        axis,
        points,
        usable,
        current: now,
        crossing,
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::advice::solve::solve;

    #[test]
    fn the_crossing_is_the_solvers_answer_and_the_parts_add_up() {
        let form = Form {
            variable_lengths: false,
            ..Form::default()
        };
        let c = curve(&form, Axis::Tokens);
        assert_eq!(c.crossing, solve(&form).max_seq);
        assert!(c.points.len() >= 30 && c.points.iter().any(|p| p.x == form.seq_len));
        for p in &c.points {
            let sum: f64 = p.parts.iter().map(|(_, b)| b).sum();
            assert!((sum - p.need).abs() <= 1e-6 * p.need, "{sum} vs {}", p.need);
            assert!(p.low <= p.need && p.need <= p.high);
        }
        // Memory grows with tokens; weights do not.
        let (first, last) = (&c.points[0], c.points.last().unwrap());
        assert!(last.need > first.need);
        let weights = |p: &Point| {
            p.parts
                .iter()
                .find(|(c, _)| *c == Component::Weights)
                .map(|(_, b)| *b)
        };
        assert_eq!(weights(first), weights(last));
        let b = curve(&form, Axis::Batch);
        assert_eq!(b.crossing, solve(&form).max_batch);
    }
}
