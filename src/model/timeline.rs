//! The step as a timeline: the moments a training step or a generation passes through, each with every
//! tensor alive in it, by component. The allocator model ([`super::allocator`]) replays it; the estimate's
//! breakdown is the moment that needs the most.

use super::estimate::{Component, Part, Phase};

/// One moment of the step and what PyTorch's allocator holds in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Moment {
    /// Which moment.
    pub phase: Phase,
    /// Every tensor alive, by component, in display order (a component may appear more than once; parts of
    /// 0 bytes keep a component's place).
    pub parts: Vec<Part<Component>>,
    /// Of those, the bytes allocated and freed within the step (activations, logits, temporaries): what
    /// the caching allocator leaves reserved but unused around them.
    pub transient: f64,
    /// Of those, the bytes re-allocated one token longer at every step of a generation (transformers
    /// `DynamicCache.update` concatenates the new token's keys and values to the old cache).
    pub growing: f64,
}

impl Moment {
    /// A moment with nothing counted yet.
    pub fn new(phase: Phase) -> Moment {
        Moment {
            phase,
            parts: Vec::with_capacity(20),
            transient: 0.0,
            growing: 0.0,
        }
    }

    /// Adds `bytes` of `component`, alive for the whole step.
    pub fn held(&mut self, component: Component, bytes: f64) -> &mut Moment {
        self.parts.push(Part { component, bytes });
        self
    }

    /// Adds `bytes` of `component` that are allocated and freed within the step.
    pub fn transient(&mut self, component: Component, bytes: f64) -> &mut Moment {
        self.transient += bytes;
        self.held(component, bytes)
    }

    /// Bytes alive in this moment.
    pub fn allocated(&self) -> f64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }
}

/// A job's step: its moments, and what lives outside PyTorch's allocator throughout.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The moments, in the order the step meets them.
    pub moments: Vec<Moment>,
    /// Memory the allocator does not see (paged optimizer states in CUDA managed memory), by component.
    pub outside: Vec<Part<Component>>,
    /// Batches change shape from step to step (variable-length sequences in training).
    pub varying_shapes: bool,
    /// Rank the moments by what each needs (reserved less its freeable cache) rather than by what each
    /// reserves: an RL job, whose rollout leaves a growing cache's stale blocks behind.
    pub rank_by_need: bool,
}

/// Merges the parts of one component into one, in the order each component first appears, and drops
/// the empty ones.
pub fn merge(parts: impl IntoIterator<Item = Part<Component>>) -> Vec<Part<Component>> {
    let mut out: Vec<Part<Component>> = Vec::new();
    for part in parts {
        match out.iter_mut().find(|p| p.component == part.component) {
            Some(p) => p.bytes += part.bytes,
            None => out.push(part),
        }
    }
    out.retain(|p| p.bytes > 0.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_first_place_and_drops_empty() {
        let parts = [
            Part {
                component: Component::Weights,
                bytes: 0.0,
            },
            Part {
                component: Component::Gradients,
                bytes: 2.0,
            },
            Part {
                component: Component::Weights,
                bytes: 3.0,
            },
            Part {
                component: Component::Logits,
                bytes: 0.0,
            },
        ];
        assert_eq!(
            merge(parts),
            vec![
                Part {
                    component: Component::Weights,
                    bytes: 3.0
                },
                Part {
                    component: Component::Gradients,
                    bytes: 2.0
                },
            ]
        );
    }

    #[test]
    fn transient_parts_count_as_allocated_and_transient() {
        let mut m = Moment::new(Phase::Backward);
        m.held(Component::Weights, 10.0)
            .transient(Component::Activations, 4.0);
        assert_eq!(m.allocated(), 14.0);
        assert_eq!(m.transient, 4.0);
    }
}
