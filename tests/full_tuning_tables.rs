//! Memory-efficient full-parameter tuning, figure by figure, worked out by hand from each method's reference
//! code (BAdam `badam/block_optim.py`, LISA's Alg. 1 in Pan et al. 2024, LOMO and AdaLomo `lomo_optim`,
//! Adam-mini `adam_mini/adam_mini.py`, APOLLO's projected moments, Q-GaLore `q_galore_torch`). GaLore runs on the fake-tensor oracle
//! instead (`tests/golden_galore.rs`).
//!
//! Llama 3.2 1B: 16 layers, hidden 2048, 8 KV heads of 64 (k/v 512 wide), intermediate 8192, vocabulary
//! 128,256, tied embedding. One layer: q and o 2048 × 2048 = 4,194,304 each, k and v 2048 × 512 = 1,048,576
//! each, gate/up/down 2048 × 8192 = 16,777,216 each, two norms of 2048: 60,821,504 parameters. Embedding
//! 128,256 × 2048 = 262,668,288; final norm 2048; total 1,235,814,400. Pure bf16, one sequence of 512 tokens,
//! checkpointing on.
#![cfg(not(target_arch = "wasm32"))]

use vramfit::model::*;

fn job(mode: Mode, optimizer: Optimizer) -> Job {
    Job {
        arch: vramfit::catalog::model("llama-3.2-1b")
            .unwrap()
            .arch()
            .clone(),
        stack: Stack::Generic,
        mode,
        weights: WeightFormat::Bf16,
        precision: Precision::Pure16,
        optimizer,
        micro_batch: 1,
        seq_len: 512,
        grad_accum: 1,
        checkpointing: Checkpointing::Layer,
        freeze_trainable_layers: 2,
        projection_rank: 128,
        ..Job::default()
    }
}

/// The job's stored gradients (`gradients::Gradients::stored`), after normalization.
fn stored_gradients(job: &Job) -> f64 {
    let (job, _) = vramfit::model::normalize::normalize(job);
    vramfit::model::gradients::gradients(&job, &vramfit::model::shapes::Shapes::of(&job)).stored
}

/// BAdam, one block of 2 layers: 2 × 60,821,504 = 121,643,008 trainable. The block is stepped through an
/// fp32 copy (`param.clone().float()`): master 4 B × 121,643,008 = 486,572,032; AdamW's two fp32 moments
/// 8 B × = 973,144,064; the gradients converted to that copy (`_grad_to_hp`), 4 B × = 486,572,032.
#[test]
fn badam_steps_an_fp32_copy_of_one_block() {
    let j = job(Mode::Badam, Optimizer::Adamw);
    let e = estimate(&j);
    assert_eq!(e.trainable_params, 121_643_008.0);
    assert_eq!(e.gpu_bytes(Component::MasterWeights), 486_572_032.0);
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 973_144_064.0);
    assert_eq!(stored_gradients(&j), 486_572_032.0);
}

/// LISA with 2 sampled layers always trains the embedding (tied, so the LM head with it): 121,643,008 +
/// 262,668,288 = 384,311,296 trainable, their bf16 moments 4 B × = 1,537,245,184 and bf16 gradients
/// 2 B × = 768,622,592.
#[test]
fn lisa_trains_sampled_layers_and_the_embedding() {
    let j = job(Mode::Lisa, Optimizer::Adamw);
    let e = estimate(&j);
    assert_eq!(e.trainable_params, 384_311_296.0);
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 1_537_245_184.0);
    assert_eq!(stored_gradients(&j), 768_622_592.0);
}

/// LOMO fuses SGD into backward: no states, and only the gradient being applied is alive, the largest
/// being the embedding's, 2 B × 262,668,288 = 525,336,576.
#[test]
fn lomo_keeps_no_states_and_one_gradient() {
    let j = job(Mode::Full, Optimizer::Lomo);
    assert_eq!(estimate(&j).gpu_bytes(Component::OptimizerStates), 0.0);
    assert_eq!(stored_gradients(&j), 525_336_576.0);
}

/// AdaLomo: fp32 row and column second moments per 2-D weight. Per layer q 2048 + 2048, k and v 2048 + 512,
/// o 2048 + 2048, gate/up/down 2048 + 8192: 44,032 elements, × 16 = 704,512; the embedding 128,256 + 2048
/// = 130,304; the 33 norms whole, 33 × 2048 = 67,584: 902,400 elements × 4 B = 3,609,600.
#[test]
fn adalomo_factors_its_second_moment_in_fp32() {
    let e = estimate(&job(Mode::Full, Optimizer::AdaLomo));
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 3_609_600.0);
}

/// Adam-mini keeps AdamW's first moment in the parameter's dtype (`torch.zeros_like(p)`) and one second
/// moment per head or neuron (negligible): 2 B × 1,235,814,400 = 2,471,628,800.
#[test]
fn adam_mini_keeps_the_first_moment() {
    let e = estimate(&job(Mode::Full, Optimizer::AdamMini));
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 2_471_628_800.0);
}

/// APOLLO at rank 128: two projected moments of `r × max(m, n)` per decoder weight, no stored projector
/// (regenerated from a seed). Per layer q, k, v, o 2 × 128 × 2048 = 524,288 each, gate/up/down 2 × 128 ×
/// 8192 = 2,097,152 each: 8,388,608, × 16 = 134,217,728 elements in bf16 = 268,435,456 B; the embedding and
/// norms under AdamW in bf16, 4 B × (262,668,288 + 67,584) = 1,050,943,488: 1,319,378,944 B.
#[test]
fn apollo_projects_the_decoder_weights_moments() {
    let e = estimate(&job(Mode::Full, Optimizer::Apollo));
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 1_319_378_944.0);
}

/// Q-GaLore at rank 128 (`VITA-Group/Q-GaLore`): the projected moments in bitsandbytes' 8-bit Adam and the
/// SVD projector stored in uint8, one byte per element each: per layer q and o 2 × 128 × 2048 + 128 × 2048 =
/// 786,432 each, k and v 2 × 128 × 2048 + 128 × 512 = 589,824 each, gate/up/down 2 × 128 × 8192 + 128 × 2048
/// = 2,359,296 each: 9,830,400, × 16 = 157,286,400 B; the embedding and norms (262,735,872) under 8-bit
/// Adam, 2 B plus one fp32 absmax per 2048: 526,498,056 B; 683,784,456 B in all. The decoder linears
/// (16 × 60,817,408 = 973,078,528) are held in uint8 with a 16-bit scale and zero per 256:
/// 973,078,528 × (1 + 4/256) = 988,282,880 B; the rest stays bf16, 2 × 262,735,872 = 525,471,744 B.
#[test]
fn q_galore_holds_int8_weights_and_8bit_projected_states() {
    let e = estimate(&job(Mode::Full, Optimizer::QGalore));
    assert_eq!(e.gpu_bytes(Component::OptimizerStates), 683_784_456.0);
    assert_eq!(e.gpu_bytes(Component::WeightsQuantized), 988_282_880.0);
    assert_eq!(e.gpu_bytes(Component::Weights), 525_471_744.0);
}
