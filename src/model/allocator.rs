//! PyTorch's caching allocator over a step's timeline: from what each moment allocates, what it reserves
//! (`max_memory_reserved`), and how much of that the allocator would free before reporting out-of-memory.

use super::estimate::Phase;
use super::timeline::Timeline;
use crate::bytes::GIB;

/// Fixed part of the caching allocator's unused reserve (rounding to 2 MiB blocks, cached small-block
/// pools, the 20 MiB large-block split granularity). Fit once on the shared reference cases.
pub const ALLOCATOR_FIXED_GIB: f64 = 0.3;

/// Share of short-lived memory (activations, logits, temporaries) that the caching allocator keeps reserved
/// but unused at the peak: freed blocks are cached and split, so reserved exceeds allocated by a fraction of
/// what churns. Fit once on the shared reference cases (`memory-model.md` §11: "about half").
pub const ALLOCATOR_TRANSIENT_SHARE: f64 = 0.35;

/// Share of the short-lived memory kept reserved but unused when batches vary in length. The caching allocator
/// keeps the blocks it carved for earlier, differently shaped batches; a block cached for one size is split
/// for a smaller request but never merged across segments for a larger one, so new segments are allocated
/// (PyTorch "CUDA semantics" notes on `expandable_segments`: changing allocation sizes fragment the cache).
/// About one more copy of the transient working set. Set from that argument, then checked once on the
/// reference runs with variable-length data and a reserved-memory reading (0.7, 1.0 and 1.3 were tried; the
/// tier A/B 90th-percentile error moved by about one point between them).
pub const ALLOCATOR_VARIABLE_SHARE: f64 = 1.0;

/// The allocator's view of a timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Replay {
    /// `max_memory_allocated`: the largest allocated total over the moments.
    pub peak_allocated: f64,
    /// `max_memory_reserved`: the largest reserved total over the moments (the allocator never gives memory
    /// back, so it may come from another moment than the one that needs the most).
    pub peak_reserved: f64,
    /// The moment that needs the most (index into `Timeline::moments`).
    pub moment: usize,
    /// Reserved but unused around that moment's tensors ([`super::Component::AllocatorReserve`]).
    pub reserve: f64,
    /// Cached blocks of other shapes the allocator would free and retry with before an out-of-memory
    /// error ([`super::Component::AllocatorCache`]), including what a more reserved moment left behind.
    pub cache: f64,
}

/// Replays a timeline through the caching allocator model.
///
/// - Each moment reserves its allocated bytes, the fixed reserve and [`ALLOCATOR_TRANSIENT_SHARE`] of its
///   short-lived bytes.
/// - Blocks cached for other shapes: with varying batch shapes, ([`ALLOCATOR_VARIABLE_SHARE`] −
///   [`ALLOCATOR_TRANSIENT_SHARE`]) of the short-lived bytes more; a cache growing by concatenation leaves
///   about one more copy of itself in freed, too-short blocks that never fit a later request
///   ([`ALLOCATOR_VARIABLE_SHARE`] × its bytes). Before reporting out-of-memory the allocator frees every
///   unused cached block and retries (`c10/cuda/CUDACachingAllocator.cpp`, `release_cached_blocks`), so
///   these do not decide whether a job fits.
/// - The end of backward and the optimizer step come after backward has freed its short-lived memory; the
///   allocator keeps those blocks, and the gradients, states and step temporaries that follow split them
///   where they fit and take new segments where they do not, so the fragments stay reserved: these moments
///   carry the reserve of backward's short-lived bytes beyond their own. The block-level replay
///   ([`super::alloc_program`]) shows it on full fine-tunes, where the optimizer step is the peak: 2–5% of
///   the allocated bytes stay reserved and unreleasable there, where their own (held) bytes gave 0.3 GiB.
///   On the grid against the oracle's replay, full fine-tunes with checkpointing went from 8.8% to 3.8% at
///   the 90th percentile, without from 11.3% to 6.9%.
/// - The followed moment is the one that reserves the most; where the timeline ranks by need, the one whose
///   reserved total less its freeable cache is largest (the first on ties).
pub fn replay(timeline: &Timeline) -> Replay {
    let reserve_of =
        |transient: f64| ALLOCATOR_FIXED_GIB * GIB + ALLOCATOR_TRANSIENT_SHARE * transient;
    let cache_of = |transient: f64, growing: f64| {
        let other_shapes = if timeline.varying_shapes {
            (ALLOCATOR_VARIABLE_SHARE - ALLOCATOR_TRANSIENT_SHARE).max(0.0) * transient
        } else {
            0.0
        };
        other_shapes + ALLOCATOR_VARIABLE_SHARE * growing
    };
    let figure = |m: &super::timeline::Moment| {
        let allocated = m.allocated();
        let cache = cache_of(m.transient, m.growing);
        (
            allocated,
            allocated + reserve_of(m.transient) + cache,
            cache,
        )
    };
    // A step has a handful of moments: their figures on the stack, not the heap.
    let mut figures = [(0.0, 0.0, 0.0); 8];
    let count = timeline.moments.len().min(figures.len());
    let mut freed = 0.0_f64;
    for (f, m) in figures.iter_mut().zip(&timeline.moments) {
        *f = figure(m);
        if matches!(m.phase, Phase::EndOfBackward | Phase::OptimizerStep) && freed > m.transient {
            f.1 += ALLOCATOR_TRANSIENT_SHARE * (freed - m.transient);
        }
        if m.phase == Phase::Backward {
            freed = freed.max(m.transient);
        }
    }
    let figures = &figures[..count];
    let rank = |f: &(f64, f64, f64)| {
        if timeline.rank_by_need {
            f.1 - f.2
        } else {
            f.1
        }
    };
    let mut moment = 0;
    for (i, f) in figures.iter().enumerate() {
        if rank(f) > rank(&figures[moment]) {
            moment = i;
        }
    }
    let peak_allocated = figures.iter().map(|f| f.0).fold(0.0_f64, f64::max);
    let peak_reserved = figures.iter().map(|f| f.1).fold(0.0_f64, f64::max);
    let (reserve, cache) = match (timeline.moments.get(moment), figures.get(moment)) {
        (Some(_), Some(f)) => (f.1 - f.0 - f.2, f.2 + (peak_reserved - f.1).max(0.0)),
        _ => (0.0, 0.0),
    };
    Replay {
        peak_allocated,
        peak_reserved,
        moment,
        reserve,
        cache,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::timeline::Moment;
    use crate::model::{Component, Phase};

    fn timeline(moments: Vec<Moment>, varying_shapes: bool) -> Timeline {
        Timeline {
            moments,
            outside: Vec::new(),
            varying_shapes,
            rank_by_need: false,
        }
    }

    /// 10 GiB held plus 4 GiB of activations: reserved = 14 + 0.3 + 0.35 × 4 = 15.7 GiB.
    #[test]
    fn fixed_and_transient_reserve() {
        let mut m = Moment::new(Phase::Backward);
        m.held(Component::Weights, 10.0 * GIB)
            .transient(Component::Activations, 4.0 * GIB);
        let r = replay(&timeline(vec![m], false));
        assert_eq!(r.peak_allocated, 14.0 * GIB);
        assert!((r.peak_reserved - 15.7 * GIB).abs() < 1.0);
        assert_eq!(r.cache, 0.0);
    }

    /// Variable lengths keep (1.0 − 0.35) × 4 GiB = 2.6 GiB more, all of it freeable.
    #[test]
    fn varying_shapes_add_freeable_cache() {
        let mut m = Moment::new(Phase::Backward);
        m.held(Component::Weights, 10.0 * GIB)
            .transient(Component::Activations, 4.0 * GIB);
        let r = replay(&timeline(vec![m], true));
        assert!((r.cache - 2.6 * GIB).abs() < 1.0);
        assert!((r.peak_reserved - 18.3 * GIB).abs() < 1.0);
    }

    /// A smaller moment after a more reserved one is not followed; a larger one is, and the cache then
    /// holds what the more reserved moment left.
    #[test]
    fn follows_the_most_reserved_moment() {
        let mut backward = Moment::new(Phase::Backward);
        backward
            .held(Component::Weights, 10.0 * GIB)
            .transient(Component::Activations, 8.0 * GIB);
        let mut step = Moment::new(Phase::OptimizerStep);
        step.held(Component::Weights, 10.0 * GIB)
            .held(Component::Gradients, 7.0 * GIB);
        let r = replay(&timeline(vec![backward, step], false));
        assert_eq!(r.moment, 0);
        assert_eq!(r.peak_allocated, 18.0 * GIB);
    }

    /// The optimizer step keeps what backward's freed blocks left reserved: backward held 10 GiB and freed
    /// 8 GiB of activations; the step holds 22 GiB with nothing short-lived of its own, and reserves
    /// 22 + 0.3 + 0.35 × 8 = 25.1 GiB, the peak, with the carried 3.1 GiB as its reserve.
    #[test]
    fn the_optimizer_step_carries_backward_fragments() {
        let mut backward = Moment::new(Phase::Backward);
        backward
            .held(Component::Weights, 10.0 * GIB)
            .transient(Component::Activations, 8.0 * GIB);
        let mut step = Moment::new(Phase::OptimizerStep);
        step.held(Component::Weights, 10.0 * GIB)
            .held(Component::Gradients, 7.0 * GIB)
            .held(Component::OptimizerStates, 5.0 * GIB);
        let r = replay(&timeline(vec![backward, step], false));
        assert_eq!(r.moment, 1);
        assert!((r.peak_reserved - 25.1 * GIB).abs() < 1.0);
        assert!((r.reserve - 3.1 * GIB).abs() < 1.0);
        assert_eq!(r.cache, 0.0);
    }
}
