//! Hybrid stacks (Mamba-2, Gated DeltaNet, Mamba-1 layers beside attention), checked with figures worked out
//! by hand from the shapes (`src/model/recurrent.rs` has the formulas and their sources).
//!
//! Why tables and not the fake-tensor grid for these terms: the grid (`tests/golden_grid.rs`) runs transformers
//! on fake tensors, where the `mamba_ssm`, `causal-conv1d` and `fla` kernels cannot run; transformers then takes
//! its torch fallbacks, which keep other tensors than the kernels a GPU run uses (the SSD scan's fp32
//! chunk-by-chunk matrices, the delta rule's per-chunk states, the full prefill working set of the slow path).
//! The grid therefore holds only hybrid jobs whose peak lies outside the mixers (the optimizer step, the loss);
//! the recurrent state, the kernels' saved tensors and the vLLM layout are checked here.
#![cfg(not(target_arch = "wasm32"))]

use vramfit::catalog;
use vramfit::model::*;

const GIB: f64 = 1_073_741_824.0;

fn arch(id: &str) -> Architecture {
    catalog::model(id).unwrap().arch().clone()
}

/// NVIDIA-Nemotron-Nano-9B-v2: 27 Mamba-2 layers of 128 heads × 80, 8 groups, state 128, kernel 4; 4 attention
/// layers with 8 KV heads of 128. One sequence's state in one Mamba layer: conv `3 · (10240 + 2·8·128)` = 36,864
/// elements in bf16 (73,728 B) and SSM `128·80·128` = 1,310,720 in fp32 (5,242,880 B; vLLM's Nemotron-H
/// default): 5,316,608 B.
const NANO_STATE_PER_LAYER: f64 = 73_728.0 + 5_242_880.0;

fn nano_generation(prompt: u32) -> Job {
    Job {
        arch: arch("nvidia-nemotron-nano-9b-v2"),
        mode: Mode::Inference,
        precision: Precision::Pure16,
        weights: WeightFormat::Bf16,
        inference: Inference {
            prompt_tokens: prompt,
            new_tokens: 24,
            batch: 4,
            kv_dtype: KvDtype::Bf16,
        },
        ..Job::default()
    }
}

#[test]
fn the_recurrent_state_is_fixed_and_the_kv_cache_covers_the_attention_layers_only() {
    let e = estimate(&nano_generation(1000));
    // transformers' cache keeps all 4 conv columns (4 · 12,288 · 2 B = 98,304 B) and the fp32 SSM state
    // (5,242,880 B): 27 layers × 5,341,184 B × 4 sequences = 576,847,872 B.
    assert_eq!(
        e.gpu_bytes(Component::RecurrentState),
        27.0 * (98_304.0 + 5_242_880.0) * 4.0
    );
    // 4 attention layers × 2 · 8 · 128 elements × 1024 tokens × 4 sequences × 2 B = 67,108,864 B.
    assert_eq!(
        e.gpu_bytes(Component::KvCache),
        4.0 * 2048.0 * 1024.0 * 4.0 * 2.0
    );
    // Four times the context: four times... the KV cache; the same state.
    let long = estimate(&nano_generation(4072));
    assert_eq!(
        long.gpu_bytes(Component::RecurrentState),
        e.gpu_bytes(Component::RecurrentState)
    );
    assert_eq!(
        long.gpu_bytes(Component::KvCache),
        4.0 * e.gpu_bytes(Component::KvCache)
    );
    // A plain transformer has no recurrent state.
    let llama = Job {
        arch: Architecture::default(),
        ..nano_generation(1000)
    };
    assert_eq!(estimate(&llama).gpu_bytes(Component::RecurrentState), 0.0);
}

#[test]
fn vllm_lays_out_nemotron_nano_9b_by_hand() {
    // Attention page per token and layer: 2 · 8 · 128 · 2 B = 4096 B. The block grows until one attention
    // page holds a Mamba layer's state: 16 · cdiv(5,316,608, 16 · 4096) = 16 · 82 = 1312 tokens, page
    // 1312 · 4096 = 5,373,952 B (the state padded by 1.1%). Groups of 4 layers (the 4 attention layers):
    // 1 attention group and cdiv(27, 4) = 7 Mamba groups, one padding layer.
    let a = arch("nvidia-nemotron-nano-9b-v2");
    let req = ServeRequest {
        gpu_gib: Some(79.19),
        max_model_len: Some(8192),
        max_position_embeddings: Some(131_072),
        kv_cache_memory_gib: Some(20.0),
        ..ServeRequest::default()
    };
    let p = serve_plan(&a, &req).unwrap();
    assert_eq!(p.block_size, 1312);
    assert_eq!(p.page_bytes, 5_373_952.0);
    assert_eq!((p.kv_groups, p.layers_per_group), (8, 4));
    assert_eq!(p.kv_bytes_per_token, 4.0 * 4096.0);
    assert_eq!(p.state_bytes_per_sequence, 27.0 * NANO_STATE_PER_LAYER);
    // Blocks: ⌊20 GiB / (5,373,952 · 4)⌋ = 999; printed tokens ⌊999 / 8⌋ · 1312 = 162,688.
    assert_eq!(p.gpu_blocks, 999);
    assert_eq!(p.kv_tokens, 162_688);
    // One 8192-token request: cdiv(8192, 1312) = 7 attention blocks + 1 block in each of 7 Mamba groups.
    assert_eq!(p.blocks_per_request, 14);
    assert!((p.max_concurrency - 999.0 / 14.0).abs() < 1e-12);
    // The longest request: 5,373,952 · (4 · cdiv(len, 1312) + 27) ≤ 20 GiB up to 992 blocks a layer, past the
    // 131,072-token position limit.
    assert_eq!(p.max_model_len_that_fits, 131_072);
    assert!(p.warnings.iter().any(|w| w.contains("1 empty layers")));
    assert!(p.fits);
}

#[test]
fn vllm_lays_out_qwen3_next_on_four_gpus_by_hand() {
    // Tensor parallel 4: one KV head a GPU (2 KV heads replicated), 2 · 1 · 256 · 2 B = 1024 B per token and
    // layer. Gated DeltaNet state split four ways: conv (3 · 8192 · 2 B) + delta state (32 · 128 · 128 · 2 B,
    // bf16: vLLM's `auto`) = 1,097,728 B, a quarter 274,432 B. Block 16 · cdiv(274,432, 16 · 1024) = 272,
    // page 278,528 B; 12 attention layers and 36 linear ones: groups of 12, 1 + 3.
    let a = arch("qwen3-next-80b-a3b-instruct");
    let req = ServeRequest {
        gpu_gib: Some(79.19),
        tensor_parallel: Some(4),
        max_model_len: Some(32_768),
        max_position_embeddings: Some(262_144),
        kv_cache_memory_gib: Some(10.0),
        ..ServeRequest::default()
    };
    let p = serve_plan(&a, &req).unwrap();
    assert_eq!((p.block_size, p.page_bytes), (272, 278_528.0));
    assert_eq!((p.kv_groups, p.layers_per_group), (4, 12));
    // ⌊10 GiB / (278,528 · 12)⌋ = 3212 blocks; a 32,768-token request takes cdiv(32768, 272) = 121 + 3.
    assert_eq!(p.gpu_blocks, 3212);
    assert_eq!(p.blocks_per_request, 124);
    assert_eq!(p.kv_tokens, 3212 / 4 * 272);
    // 36 layers × 274,432 B.
    assert_eq!(p.state_bytes_per_sequence, 36.0 * 274_432.0);
}

#[test]
fn sglang_splits_the_pool_between_states_and_keys() {
    // SGLang: the memory left after weights and non-torch memory goes 0.9 : 1 to the recurrent-state pool and
    // the KV pool; a slot holds all 27 layers' states with the SSM state in fp32 (its default), and at most a
    // third of the slots run at once.
    let a = arch("nvidia-nemotron-nano-9b-v2");
    let req = ServeRequest {
        engine: Some(Engine::Sglang),
        gpu_gib: Some(80.0),
        gpu_memory_utilization: Some(0.9),
        max_model_len: Some(8192),
        max_position_embeddings: Some(131_072),
        weights_gib: Some(16.0),
        non_torch_gib: Some(0.0),
        ..ServeRequest::default()
    };
    let p = serve_plan(&a, &req).unwrap();
    let rest = 72.0 * GIB - 16.0 * GIB;
    let per_request = 27.0 * NANO_STATE_PER_LAYER;
    let slots = (rest * 0.9 / 1.9 / per_request).floor();
    let kv = rest - slots * per_request;
    // Tokens: ⌊kv / (4 layers · 4096 B)⌋ less SGLang's padded slot.
    let tokens = (kv / 16_384.0).floor() as u64 - 1;
    assert_eq!(p.kv_tokens, tokens);
    assert_eq!(
        p.max_concurrency,
        (tokens as f64 / 8192.0).min((slots / 3.0).floor())
    );
}

#[test]
fn a_mamba2_layer_keeps_what_the_fused_kernel_saves() {
    // Nano-9B-v2, bf16 full fine-tune, one Mamba-2 layer, per token: `in_proj` keeps its input (2 · 4480 B);
    // `mamba_split_conv1d_scan_combined` keeps `zxbcdt` (2 · (10240 + 12288 + 128) = 45,312 B), the scan output
    // `out_x` (2 · 10240 = 20,480 B) and the fp32 `rstd` of 8 groups (32 B).
    let hy = arch("nvidia-nemotron-nano-9b-v2").stack().unwrap();
    let saved = hy.saved_bytes_per_token(4480.0, 2.0, true);
    assert_eq!(saved.replicated, 8960.0);
    assert_eq!(saved.split, 45_312.0 + 20_480.0 + 32.0);
    // Frozen (LoRA on the attention only): no input copy, the kernel's tensors stay.
    assert_eq!(hy.saved_bytes_per_token(4480.0, 2.0, false).replicated, 0.0);
}

#[test]
fn a_gated_deltanet_layer_keeps_what_the_fla_kernels_save() {
    // Qwen3-Next, bf16, trained: input 2 · 2048; conv input and output 2 · 2 · 8192; l2-normed q, k
    // 2 · 2 · 2048; their fp32 rstd 8 · 16; gate 4 · 32; beta and the 64-wide UT matrix 2 · 32 · 65; the gate's
    // softplus 8 · 32; the gated norm's input and gate 2 · 2 · 4096 and rstd 4 · 32; out_proj's input 2 · 4096.
    let hy = arch("qwen3-next-80b-a3b-instruct").stack().unwrap();
    let saved = hy.saved_bytes_per_token(2048.0, 2.0, true);
    assert_eq!(saved.replicated, 4096.0);
    let split = 32_768.0 + 8192.0 + 128.0 + 128.0 + 4160.0 + 256.0 + 16_384.0 + 128.0 + 8192.0;
    assert_eq!(saved.split, split);
}

#[test]
fn checkpointing_recomputes_the_largest_block() {
    // Nemotron-H blocks hold one mixer each: with checkpointing the recomputed layer is a Mamba block, whose
    // saved bytes exceed the average block's.
    let a = arch("nvidia-nemotron-nano-9b-v2");
    let job = Job {
        arch: a.clone(),
        mode: Mode::Full,
        micro_batch: 1,
        seq_len: 4096,
        checkpointing: Checkpointing::Layer,
        ..Job::default()
    };
    let avg = vramfit::model::activations::layer_bytes_per_token(&a, &job).per_rank(1.0);
    let max = vramfit::model::activations::largest_layer_bytes_per_token(&a, &job).per_rank(1.0);
    assert!(max > avg, "{max} vs {avg}");
    // A plain transformer's largest layer is its average one.
    let llama = Job {
        arch: Architecture::default(),
        ..job
    };
    assert_eq!(
        vramfit::model::activations::layer_bytes_per_token(&llama.arch, &llama),
        vramfit::model::activations::largest_layer_bytes_per_token(&llama.arch, &llama)
    );
}

#[test]
fn every_hybrid_estimate_is_finite_in_every_mode() {
    for id in [
        "qwen3-next-80b-a3b-instruct",
        "nvidia-nemotron-nano-9b-v2",
        "nemotron-h-47b-base-8k",
        "granite-4.0-h-small",
        "jamba-v0.1",
        "falcon-h1-7b-instruct",
    ] {
        for mode in [
            Mode::Full,
            Mode::Lora,
            Mode::Qlora,
            Mode::Freeze,
            Mode::Inference,
        ] {
            let e = estimate(&Job {
                arch: arch(id),
                mode,
                weights: if mode == Mode::Qlora {
                    WeightFormat::Nf4
                } else {
                    WeightFormat::Bf16
                },
                ..Job::default()
            });
            assert!(e.fit_need.is_finite() && e.fit_need > 0.0, "{id} {mode:?}");
        }
    }
}
