//! Stack facts that change which tensors exist, checked with figures worked out by hand: litgpt's untied
//! LM head and its quantized LM head (Lightning Fabric's bitsandbytes plugin replaces every `nn.Linear`).
#![cfg(not(target_arch = "wasm32"))]

use vramfit::model::*;

/// A tied-embedding model (vocabulary 65,024 × hidden 4,544, Falcon-7B's matrix) for one inference job.
fn tied_job(stack: Stack, weights: WeightFormat) -> Job {
    let mut job = Job {
        arch: Architecture {
            tied_embeddings: true,
            vocab: 65_024,
            hidden: 4_544,
            ..Architecture::default()
        },
        mode: Mode::Inference,
        weights,
        ..Job::default()
    };
    stack.apply_defaults(&mut job);
    job.weights = weights;
    job
}

fn bytes(e: &Estimate, c: Component) -> f64 {
    e.gpu
        .iter()
        .filter(|p| p.component == c)
        .map(|p| p.bytes)
        .sum()
}

/// One vocabulary matrix: 65,024 × 4,544 = 295,469,056 parameters.
const VOCAB_MATRIX: f64 = 295_469_056.0;

#[test]
fn litgpt_holds_a_second_vocabulary_matrix_for_a_tied_model() {
    let hf = estimate(&tied_job(Stack::Generic, WeightFormat::Bf16));
    let lit = estimate(&tied_job(Stack::Litgpt, WeightFormat::Bf16));
    // bf16: 295,469,056 × 2 B = 590,938,112 B more weights.
    let extra = bytes(&lit, Component::Weights) - bytes(&hf, Component::Weights);
    assert!((extra - 590_938_112.0).abs() < 1.0, "extra {extra}");
    assert_eq!(lit.params.lm_head, VOCAB_MATRIX);
}

#[test]
fn litgpt_quantizes_the_lm_head_with_the_decoder() {
    let hf = estimate(&tied_job(Stack::Generic, WeightFormat::Nf4));
    let lit = estimate(&tied_job(Stack::Litgpt, WeightFormat::Nf4));
    // The head joins the 4-bit weights at 0.5 + 4/64 = 0.5625 B per parameter: 166,201,344 B; the 16-bit
    // weights (the embedding, norms) are unchanged.
    let quantized =
        bytes(&lit, Component::WeightsQuantized) - bytes(&hf, Component::WeightsQuantized);
    assert!(
        (quantized - 166_201_344.0).abs() < 1.0,
        "quantized {quantized}"
    );
    let plain = bytes(&lit, Component::Weights) - bytes(&hf, Component::Weights);
    assert!(plain.abs() < 1.0, "plain {plain}");
    // The prefill dequantizes the head (the largest matrix now) to 16-bit: the transient grows from
    // 4 B × the largest decoder matrix (4,544 × 14,336 = 65,142,784) to 4 B × 295,469,056.
    let grew = lit.peak_allocated - hf.peak_allocated - quantized;
    let expected = 4.0 * (VOCAB_MATRIX - 65_142_784.0);
    assert!(
        (grew - expected).abs() < 1e-6 * expected,
        "grew {grew}, expected {expected}"
    );
}
