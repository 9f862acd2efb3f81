//! A training step as the caching allocator sees it: the tensors the estimate's terms describe, allocated
//! and freed in the order PyTorch runs them, replayed block by block through [`CachingAllocator`] to find
//! `max_memory_reserved` and what of it the allocator could not give back before an out-of-memory error.
//!
//! The program is built from the same terms as the estimate (no number of its own), at the granularity the
//! allocator's rules care about: one block per weight matrix, per gradient and per optimizer state; each
//! layer's saved activations as the tensors they are made of (MLP-wide and hidden-wide, token by token); the
//! loss's logits tensors one by one. Two steps run, as in the fake-tensor oracle: the second meets the cache
//! the first left (optimizer states created in the first step carve blocks the logits freed, so the second
//! step's logits need new segments).
//!
//! The order (HF Trainer, transformers 5, torch 2.x):
//! - setup: the embedding, each layer's weight matrices, the LM head, then the adapters;
//! - forward: per layer its saved tensors (with checkpointing: the layer input kept, the layer's working
//!   tensors allocated and freed); the final norm's saved input; the loss: 16-bit logits, their fp32 copy,
//!   `log_softmax`'s fp32 output; the copy is freed, and the 16-bit logits with the model outputs (HF Trainer
//!   `compute_loss` returns only the loss) unless the loop keeps them;
//! - backward: `NllLossBackward` and `LogSoftmaxBackward` (two fp32 gradients), the 16-bit gradient of the
//!   logits, then each layer from the top: its recomputation, its gradient buffers, its weights' gradients,
//!   and its saved tensors freed;
//! - optimizer step: the states, created at the first step; the foreach temporaries, parameter by parameter,
//!   freed together; `zero_grad(set_to_none=True)` frees the gradients unless accumulation keeps them.

use super::caching_allocator::{Allocation, CachingAllocator, SMALL_SIZE};

/// cuBLAS's workspace for one thread's handle: allocated through the caching allocator at that thread's first
/// matrix multiply, kept for the process (PyTorch `CublasHandlePool.cpp`, `getChosenWorkspaceSize`: the default
/// `CUBLAS_WORKSPACE_CONFIG` is `:4096:8`, 32 MiB, on Hopper and later; `:4096:2:16:8`, 8.125 MiB, before).
/// Forward runs on the main thread, backward on autograd's device thread: two workspaces, the second taken
/// at the LM head's backward, where the loss has just freed its largest blocks. The estimate does not know
/// the GPU's generation and takes the larger.
pub const CUBLAS_WORKSPACE: f64 = 32.0 * 1024.0 * 1024.0;

/// One decoder layer's tensors, in bytes (the busiest GPU's share).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayerTensors {
    /// Weight matrices as stored, in module order.
    pub weights: Vec<f64>,
    /// Gradients of the trained parameters of the layer (weights or adapters), in module order.
    pub grads: Vec<f64>,
    /// Adapters' weights (LoRA `A` and `B`), in module order.
    pub adapters: Vec<f64>,
    /// What the layer keeps for backward without checkpointing.
    pub saved: f64,
    /// What checkpointing keeps of the layer through the step (its input).
    pub checkpoint: f64,
    /// What the layer's recomputation allocates in backward (0 without checkpointing).
    pub recomputed: f64,
    /// The layer's backward buffers (gradients of its activations).
    pub backward: f64,
}

/// A training step's tensors, built from the estimate's terms.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainingProgram {
    /// Tokens of one micro-batch.
    pub tokens: f64,
    /// Bytes of a hidden-wide activation per token (the residual width × the compute element size).
    pub hidden_row: f64,
    /// Bytes of an MLP-wide activation per token.
    pub mlp_row: f64,
    /// The tensors a layer saves in forward, in the order it makes them, bytes per token (a layer's saved
    /// bytes are allocated as these, the rest as one more tensor).
    pub layer_rows: Vec<f64>,
    /// Tensors allocated before the step and never freed, before the layers (the input embedding).
    pub embedding: f64,
    /// The same after the layers (an untied LM head).
    pub head: f64,
    /// A decoder layer (every layer alike).
    pub layer: LayerTensors,
    /// Decoder layers.
    pub layers: u32,
    /// The final norm's saved tensors.
    pub final_norm: f64,
    /// Logits: bytes per element of the model's output logits (0: a fused loss makes none).
    pub logits_elem: f64,
    /// Elements of the logits (tokens × vocabulary on this GPU).
    pub logits: f64,
    /// The loss upcasts 16-bit logits to fp32 (`logits.float()`).
    pub upcast: bool,
    /// The loop keeps the output logits through backward and the step.
    pub keeps_logits: bool,
    /// Gradients of parameters outside the layers (embedding, head), allocated at the end of backward.
    pub outer_grads: Vec<f64>,
    /// Optimizer states per gradient, as a multiple of the gradient's bytes (AdamW on fp32 gradients: 2).
    pub state_ratio: f64,
    /// Optimizer step temporaries as a multiple of the gradients' bytes.
    pub temp_ratio: f64,
    /// Gradients stay allocated between steps (accumulation, DDP buckets).
    pub grads_persist: bool,
}

/// What the allocator did over the program.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Replayed {
    /// `max_memory_allocated` of the program (blocks as handed out).
    pub peak_allocated: f64,
    /// `max_memory_reserved`.
    pub peak_reserved: f64,
    /// The most reserved memory that was not whole free segments at any allocation: what the job needs when
    /// the allocator frees its unused segments and retries before reporting out-of-memory.
    pub peak_needed: f64,
}

/// The live allocations of one group of tensors.
#[derive(Default)]
struct Group(Vec<Option<Allocation>>);

struct Runner {
    a: CachingAllocator,
    needed: u64,
}

impl Runner {
    fn alloc(&mut self, group: &mut Group, bytes: f64) {
        // Requests of at most 1 MiB live in the small pool's 2 MiB segments and never share a block with
        // the large pool's: left out (their unused reserve is a few MiB at most).
        if !(bytes.is_finite() && bytes > SMALL_SIZE as f64) {
            return;
        }
        group.0.push(self.a.malloc(bytes as u64));
        self.needed = self
            .needed
            .max(self.a.reserved - self.a.free_whole_segments);
    }

    /// Allocates `total` bytes as the tensors `rows` lists, in order (each `(size, most)` up to `most` times),
    /// the rest as one tensor.
    fn alloc_activations(&mut self, group: &mut Group, total: f64, widths: &[(f64, u32)]) {
        let mut left = total;
        for &(size, most) in widths {
            if size < 1.0 {
                continue;
            }
            let mut n = 0;
            while left >= size && n < most {
                self.alloc(group, size);
                left -= size;
                n += 1;
            }
        }
        self.alloc(group, left);
    }

    fn free(&mut self, group: &mut Group) {
        for a in group.0.drain(..) {
            self.a.free(a);
        }
    }
}

/// Replays two training steps of the program through the caching allocator, layer by layer.
pub fn replay_training(p: &TrainingProgram) -> Replayed {
    let layers = p.layers;
    let stack = std::iter::repeat_n(&p.layer, layers as usize);
    let mut r = Runner {
        a: CachingAllocator::new(),
        needed: 0,
    };
    let mut static_blocks = Group::default();
    r.alloc(&mut static_blocks, p.embedding);
    for layer in stack.clone() {
        for &w in &layer.weights {
            r.alloc(&mut static_blocks, w);
        }
    }
    r.alloc(&mut static_blocks, p.head);
    for layer in stack.clone() {
        for &w in &layer.adapters {
            r.alloc(&mut static_blocks, w);
        }
    }
    // Activations: up to four MLP-wide tensors a layer (gate, up, their product, the activation), the
    // rest hidden-wide (norm inputs and outputs, q/k/v/o, residual adds).
    let mlp = p.mlp_row * p.tokens;
    let hidden = p.hidden_row * p.tokens;
    let widths = [(mlp, 4), (hidden, u32::MAX)];
    let saved_rows: Vec<(f64, u32)> = p.layer_rows.iter().map(|r| (r * p.tokens, 1)).collect();
    let n = layers as usize;
    let mut grads: Vec<Group> = (0..=n).map(|_| Group::default()).collect();
    let mut states = Group::default();
    // Every gradient of the step, layer by layer and then the outer ones: what the optimizer walks.
    let trained: Vec<f64> = stack
        .clone()
        .flat_map(|l| l.grads.iter().copied())
        .chain(p.outer_grads.iter().copied())
        .collect();
    let mut workspaces = Group::default();
    for step in 0..2 {
        if step == 0 {
            r.alloc(&mut workspaces, CUBLAS_WORKSPACE);
        }
        // Forward.
        let mut saved: Vec<Group> = Vec::with_capacity(n);
        for layer in stack.clone() {
            let mut kept = Group::default();
            if layer.recomputed > 0.0 {
                r.alloc(&mut kept, layer.checkpoint);
                let mut work = Group::default();
                r.alloc_activations(&mut work, layer.recomputed, &saved_rows);
                r.free(&mut work);
            } else {
                r.alloc_activations(&mut kept, layer.saved, &saved_rows);
            }
            saved.push(kept);
        }
        let mut norm = Group::default();
        r.alloc(&mut norm, p.final_norm);
        let (mut logits, mut upcast, mut log_probs) =
            (Group::default(), Group::default(), Group::default());
        let logit_bytes = p.logits * p.logits_elem;
        let fp32 = p.logits * 4.0;
        if p.logits_elem > 0.0 {
            r.alloc(&mut logits, logit_bytes);
            if p.upcast {
                r.alloc(&mut upcast, fp32);
            }
            r.alloc(&mut log_probs, fp32);
            r.free(&mut upcast);
            if !p.keeps_logits {
                r.free(&mut logits);
            }
        }
        // Backward: the loss, then every layer from the top.
        if p.logits_elem > 0.0 {
            let (mut nll, mut lsm, mut back) =
                (Group::default(), Group::default(), Group::default());
            r.alloc(&mut nll, fp32);
            r.alloc(&mut lsm, fp32);
            r.free(&mut nll);
            r.free(&mut log_probs);
            if p.upcast {
                r.alloc(&mut back, logit_bytes);
            }
            r.free(&mut lsm);
            if step == 0 {
                r.alloc(&mut workspaces, CUBLAS_WORKSPACE);
            }
            let mut head_grad = Group::default();
            r.alloc(&mut head_grad, hidden);
            r.free(&mut back);
            r.free(&mut head_grad);
        }
        if step == 0 && p.logits_elem == 0.0 {
            r.alloc(&mut workspaces, CUBLAS_WORKSPACE);
        }
        r.free(&mut norm);
        for i in (0..n).rev() {
            let layer = &p.layer;
            let mut work = Group::default();
            r.alloc_activations(&mut work, layer.recomputed, &saved_rows);
            r.alloc_activations(&mut work, layer.backward, &widths);
            if grads[i].0.is_empty() {
                for &g in &layer.grads {
                    r.alloc(&mut grads[i], g);
                }
            }
            r.free(&mut work);
            r.free(&mut saved[i]);
        }
        let outer = n;
        if grads[outer].0.is_empty() {
            for &g in &p.outer_grads {
                r.alloc(&mut grads[outer], g);
            }
        }
        r.free(&mut logits);
        // Optimizer step.
        if step == 0 && p.state_ratio > 0.0 {
            // Two states a parameter (AdamW's moments), created at the first step.
            for g in &trained {
                for _ in 0..2 {
                    r.alloc(&mut states, g * p.state_ratio / 2.0);
                }
            }
        }
        if p.temp_ratio > 0.0 {
            let mut temps = Group::default();
            for g in &trained {
                r.alloc(&mut temps, g * p.temp_ratio);
            }
            r.free(&mut temps);
        }
        if !p.grads_persist {
            for g in &mut grads {
                r.free(g);
            }
        }
    }
    Replayed {
        peak_allocated: r.a.peak_allocated as f64,
        peak_reserved: r.a.peak_reserved as f64,
        peak_needed: r.needed as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: f64 = 1024.0 * 1024.0;

    /// The loss alone, worked by hand through the allocator's rules (MiB): 16-bit logits of 100, fp32
    /// tensors of 200, the 32 MiB workspaces. Step one: workspace 32, logits 100, copy 200, `log_softmax`
    /// 200 (four segments); the copy and the logits are freed; backward's two gradients take the copy's block
    /// and a new one (200), the 16-bit gradient takes the logits' block, and backward's workspace splits the
    /// lowest 200 block: 732 reserved. Step two: the logits, copy and `log_softmax` fit the free 100 and
    /// 200 blocks, but backward's second fp32 gradient finds only the split block's 168 and the logits'
    /// 100, and takes a fifth 200 segment: 932 reserved. At that moment 32 + 200 + 200 + 200 are allocated
    /// and the logits' 100 segment is wholly free: 832 needed.
    #[test]
    fn backward_workspace_strands_a_logits_block_for_the_second_step() {
        let p = TrainingProgram {
            tokens: 1.0,
            hidden_row: 1.0,
            mlp_row: 1.0,
            logits_elem: 2.0,
            logits: 50.0 * MIB,
            upcast: true,
            ..TrainingProgram::default()
        };
        let r = replay_training(&p);
        assert_eq!(r.peak_reserved, 932.0 * MIB);
        assert_eq!(r.peak_needed, 832.0 * MIB);
        assert_eq!(r.peak_allocated, 664.0 * MIB);
    }

    /// A full fine-tune's gradients are freed by `zero_grad(set_to_none=True)` and come back every step in
    /// the same sizes, so they reuse their own blocks: with no activations or logits, two steps reserve the
    /// weights, the gradients, the states and one set of step temporaries, nothing more.
    #[test]
    fn same_sized_gradients_reuse_their_blocks() {
        let p = TrainingProgram {
            tokens: 1.0,
            layer: LayerTensors {
                weights: vec![64.0 * MIB; 2],
                grads: vec![64.0 * MIB; 2],
                ..LayerTensors::default()
            },
            layers: 3,
            state_ratio: 2.0,
            temp_ratio: 1.0,
            ..TrainingProgram::default()
        };
        let r = replay_training(&p);
        // Workspace 32 (forward) + 32 (backward, split from nothing: a new segment); weights 6 × 64;
        // gradients 6 × 64; states 12 × 64; temporaries 6 × 64.
        let expected = (32.0 + 32.0 + (6.0 + 6.0 + 12.0 + 6.0) * 64.0) * MIB;
        assert_eq!(r.peak_reserved, expected);
        assert_eq!(r.peak_allocated, expected);
    }
}
