//! Memory-efficient full-parameter tuning: optimizers that keep smaller states than AdamW (GaLore, APOLLO,
//! Adam-mini, LOMO, AdaLomo) and methods that train one part of the model at a time (BAdam, LISA). Each
//! formula is from the method's paper and reference code, cited where it is used.

use super::arch::{Architecture, ParamCounts};
use super::job::{Job, Mode, Optimizer};

/// Whether the optimizer projects each decoder weight's gradient to a low rank (GaLore, APOLLO).
pub fn is_projected(o: Optimizer) -> bool {
    matches!(
        o,
        Optimizer::Galore | Optimizer::QGalore | Optimizer::Apollo
    )
}

/// Whether the optimizer refreshes its projectors by SVD (GaLore, Q-GaLore; APOLLO's are random).
pub fn uses_svd(o: Optimizer) -> bool {
    matches!(o, Optimizer::Galore | Optimizer::QGalore)
}

/// Bytes per stored element of Q-GaLore's projected state (`VITA-Group/Q-GaLore`, `q_galore_torch`): its Adam
/// is bitsandbytes' 8-bit `Optimizer2State` (one byte per moment element), and the projector is quantized
/// by `GaLoreProjector._quantize` to `proj_bits` (4 by default) but stored `.to(torch.uint8)`, one byte per
/// element. Per-group scales and zeros (one each per 256) are left out.
pub const Q_GALORE_STATE_BYTES: f64 = 1.0;

/// Bytes per parameter of a decoder weight Q-GaLore quantizes (`q_galore_torch/utils/quantization.py`
/// `QGaLoreLinear`: `_quantize_tensor_int8` with `weight_group_size` 256 stores the weight in uint8 and a
/// 16-bit scale and zero per group of 256): `1 + 2·2/256`.
pub const Q_GALORE_WEIGHT_BYTES: f64 = 1.0 + 4.0 / 256.0;

/// Whether the job holds its projected decoder weights in int8 (Q-GaLore's full-parameter training).
pub fn int8_projected_weights(job: &Job) -> bool {
    job.optimizer == Optimizer::QGalore && job.mode == Mode::Full
}

/// Whether gradients are consumed inside backward and never all stored: LOMO and AdaLomo fuse the update
/// into backward (Lv et al. 2023, sec. 3.2), as does any optimizer stepped in backward.
pub fn fused_update(job: &Job) -> bool {
    job.optimizer_in_backward || matches!(job.optimizer, Optimizer::Lomo | Optimizer::AdaLomo)
}

/// A decoder layer's 2-D weights as `(copies, d_in, d_out)` of one matrix: MoE gate/up/down stand for every
/// expert, each expert's matrix on its own ([`Architecture::expert_copies`]).
fn layer_matrices(arch: &Architecture) -> impl Iterator<Item = (f64, f64, f64)> + '_ {
    arch.linear_modules()
        .into_iter()
        .filter(|(_, d_in, d_out)| *d_in > 0.0 && *d_out > 0.0)
        .map(|(m, d_in, d_out)| {
            let copies = arch.expert_copies(m);
            (copies, d_in / copies, d_out)
        })
}

/// Optimizer state elements of the decoder's 2-D weights under a rank-`r` projection, per model.
///
/// GaLore (`galore_torch/galore_projector.py`): a weight of `m × n` keeps its projector and Adam's two
/// moments of the projected gradient. With `m ≥ n` the projector is `r × n` and the projected gradient
/// `m × r`; with `m < n`, `m × r` and `r × n`: states `2·r·max(m, n)` and projector `r·min(m, n)`.
/// APOLLO (`apollo_torch`) keeps the same two projected moments, but its random projector is regenerated
/// from a seed, not stored. A projection rank at or above `min(m, n)` does not shrink anything: full Adam.
pub fn projected_state_elements(arch: &Architecture, rank: u32, optimizer: Optimizer) -> f64 {
    let r = f64::from(rank.max(1));
    let layers = f64::from(arch.layers);
    let per_layer: f64 = layer_matrices(arch)
        .map(|(copies, d_in, d_out)| {
            let (small, large) = (d_in.min(d_out), d_in.max(d_out));
            let per_matrix = if r >= small {
                2.0 * small * large
            } else {
                let projector = if uses_svd(optimizer) { r * small } else { 0.0 };
                2.0 * r * large + projector
            };
            copies * per_matrix
        })
        .sum();
    per_layer * layers
}

/// GaLore's projector update: every `update_proj_gap` steps the gradient of each weight is decomposed by a
/// full SVD in fp32 (`torch.linalg.svd(full_matrices=False)`): an fp32 copy of the gradient (`m·n`), `U`
/// (`m·k`), `S` and `Vh` (`k·n`) with `k = min(m, n)`, one weight at a time, so the transient is that of the
/// largest decoder weight, in bytes.
pub fn svd_transient_bytes(p: &ParamCounts, arch: &Architecture) -> f64 {
    let (m, n) = arch
        .linear_modules()
        .into_iter()
        .filter(|(_, d_in, d_out)| *d_in > 0.0 && *d_out > 0.0)
        .map(|(_, d_in, d_out)| (d_in.min(d_out), d_in.max(d_out)))
        .fold((0.0_f64, 0.0_f64), |best, (s, l)| {
            if s * l > best.0 * best.1 {
                (s, l)
            } else {
                best
            }
        });
    let largest = p.largest_linear.max(m * n);
    4.0 * (largest + (m + n) * m.min(n))
}

/// State elements of a factored second moment (Adafactor, AdaLomo): a row and a column vector for every
/// 2-D weight (`rows + cols`, each routed expert's matrix on its own), the whole vector for 1-D parameters
/// (norms, biases). HF `transformers.optimization.Adafactor._get_options` factors parameters of two or more
/// dimensions; `lomo_optim/adalomo.py` keeps `exp_avg_sq_row`/`exp_avg_sq_col` for 2-D ones and
/// `exp_avg_sq` for the rest.
pub fn factored_state_elements(arch: &Architecture, p: &ParamCounts) -> f64 {
    let layers = f64::from(arch.layers);
    let matrices: f64 = layer_matrices(arch)
        .map(|(copies, d_in, d_out)| copies * (d_in + d_out))
        .sum::<f64>()
        * layers;
    let h = f64::from(arch.hidden);
    let v = f64::from(arch.vocab);
    let embeddings =
        if p.embedding > 0.0 { v + h } else { 0.0 } + if p.lm_head > 0.0 { v + h } else { 0.0 };
    let vectors = (p.total - p.linear - p.embedding - p.lm_head).max(0.0);
    matrices + embeddings + vectors
}

/// Parameters BAdam or LISA train at once: BAdam one block of `n` decoder layers (its `block` partition by
/// layer); LISA `n` sampled layers plus the embedding and the LM head, which it always trains (Pan et al.
/// 2024, Alg. 1).
pub fn active_params(job: &Job, p: &ParamCounts) -> f64 {
    let n = f64::from(job.freeze_trainable_layers.clamp(1, job.arch.layers.max(1)));
    match job.mode {
        Mode::Badam => n * p.per_layer,
        Mode::Lisa => n * p.per_layer + p.embedding + p.lm_head,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn galore_states_on_llama_7b_shape() {
        // Llama-2-7B: per layer q, k, v, o are 4096 × 4096 and gate, up, down 4096 × 11008. At r = 128:
        // attention 4 · (2·128·4096 + 128·4096) = 6,291,456; MLP 3 · (2·128·11008 + 128·4096) = 10,027,008;
        // 16,318,464 per layer × 32 = 522,190,848 elements (vs 2 × 6.48 B for full Adam).
        let arch = crate::catalog::model("llama-2-7b-hf")
            .unwrap()
            .arch()
            .clone();
        assert_eq!(
            projected_state_elements(&arch, 128, Optimizer::Galore),
            522_190_848.0
        );
        // APOLLO stores no projector: 2·128·(4·4096 + 3·11008) · 32 = 404,750,336.
        assert_eq!(
            projected_state_elements(&arch, 128, Optimizer::Apollo),
            404_750_336.0
        );
    }
}
