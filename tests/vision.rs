//! Vision-language models: the vision tower's memory, table cases worked by hand.
//!
//! Why hand-derived tables and not the fake-tensor golden grid: `shared/tools/fake-peak/fake_peak.py` builds
//! models with `AutoModelForCausalLM` and feeds `input_ids` only. transformers 5.24 maps no causal-LM class to
//! `qwen2_5_vl` or `qwen3_vl` (the build fails), maps `llama4` to the text-only `Llama4ForCausalLM`, and maps
//! `gemma3` to `Gemma3ForConditionalGeneration`, which it then runs without `pixel_values`: no job of the tool
//! exercises a vision tower's activations. Each expected number below is worked out in its comment from the
//! shapes (`models.json`) and the formulas' sources (`src/model/vision.rs`), not taken from the code.
#![cfg(not(target_arch = "wasm32"))]

use vramfit::catalog;
use vramfit::model::vision::{self, Rates, VisionBytes};
use vramfit::model::*;

fn arch(id: &str) -> Architecture {
    catalog::model(id).unwrap().arch().clone()
}

/// The rates of a pure-bf16 AdamW job on one GPU (what `estimate` passes for the default job).
fn bf16_adamw() -> Rates {
    Rates {
        working: 2.0,
        bnb: None,
        weight_share: 1.0,
        grad: 2.0,
        grad_share: 1.0,
        base_state: 4.0,
        adapter_state: 8.0,
        master: 0.0,
        state_share: 1.0,
        paged: false,
        step_temp: true,
    }
}

/// Qwen2.5-VL-7B, the default job (LoRA r16 on every linear layer with dropout, bf16, micro-batch 4 × 2048,
/// checkpointing, SDPA), with `images` per sample, on transformers 4.57 (before its 5.0 change to the
/// tower's grad path, tested on its own below).
fn qwen7(images: u32) -> Job {
    Job {
        arch: arch("qwen2.5-vl-7b-instruct"),
        vision: VisionSettings {
            images,
            ..VisionSettings::default()
        },
        versions: Versions {
            transformers: Version::new(4, 57),
            ..Versions::default()
        },
        ..Job::default()
    }
}

/// 4 sequences × 2 images × 2,916 patches (768² → 756² by `smart_resize`, (756/14)² = 2,916).
const QWEN7_TOKENS: f64 = 4.0 * 2.0 * 2916.0;
/// Tower and merger, 676,550,144 parameters, in bf16.
const QWEN7_WEIGHTS: f64 = 676_550_144.0 * 2.0;
/// 3 channels · 2 frames · 14² = 1,176 fp32 values a patch, 4,704 B, over `QWEN7_TOKENS` patches.
const QWEN7_PIXELS: f64 = QWEN7_TOKENS * 4704.0;

#[test]
fn a_frozen_tower_costs_its_weights_its_pixels_and_one_layer_while_it_runs() {
    let b = vision::bytes(&qwen7(2), &bf16_adamw());
    assert_eq!(b.params, 676_550_144.0);
    assert_eq!(b.resident, QWEN7_WEIGHTS);
    assert_eq!(b.pixels, QWEN7_PIXELS);
    assert_eq!(b.pixels, 109_734_912.0);
    // Nothing of the tower requires grad: nothing saved, nothing trained.
    assert_eq!((b.saved, b.grads, b.trainable), (0.0, 0.0, 0.0));
    // One layer without autograd, per patch: the attention block holds the residual and normed input
    // (2·2·1280), qkv (3·2·1280), its output (2·1280) and the fp32 RoPE temporaries (24·1280): 46,080 B; the
    // MLP block 2·2·1280 + 3·2·3420 = 25,640 B. 46,080 × 23,328 patches = 1,074,954,240 B.
    assert_eq!(b.forward, 1_074_954_240.0);
    // Without images: the weights alone.
    let none = vision::bytes(&qwen7(0), &bf16_adamw());
    assert_eq!(
        none,
        VisionBytes {
            params: 676_550_144.0,
            resident: QWEN7_WEIGHTS,
            ..VisionBytes::default()
        }
    );
}

#[test]
fn a_tower_trained_with_lora_keeps_adapters_states_and_checkpointed_inputs() {
    let mut job = qwen7(2);
    job.vision.train_tower = true;
    let b = vision::bytes(&job, &bf16_adamw());
    // r = 16 on qkv 1280→3840, proj 1280→1280, gate/up 1280→3420 and down 3420→1280:
    // 16·(5120 + 2560 + 4700 + 4700 + 4700) = 348,480 a layer × 32 = 11,151,360.
    assert_eq!(b.trainable, 11_151_360.0);
    // fp32 adapters (4 B) and their AdamW states (8 B), beside the bf16 weights.
    assert_eq!(b.resident, QWEN7_WEIGHTS + 11_151_360.0 * 12.0);
    assert_eq!(b.grads, 11_151_360.0 * 4.0);
    assert_eq!(b.step_temp, 11_151_360.0 * 4.0);
    // Checkpointed blocks keep their bf16 input: 32 · 2 · 1280 · 23,328 = 1,911,029,760 B.
    assert_eq!(b.saved, 1_911_029_760.0);
    // At the tower's backward one block is recomputed, per patch: two RMSNorm fp32 inputs 2·4·1280 =
    // 10,240; q, k, v, out 4·2·1280 = 10,240; SwiGLU 3·2·3420 = 20,520; each adapter its fp32 input, the
    // 1-byte dropout mask and lora_A's 4·16 output: 4 · (5·1280 + 64) + 5·3420 + 64 = 43,020 → 84,020 B;
    // and the backward working set 2·2·1280 + 3·2·3420 = 25,640 B. (84,020 + 25,640) × 23,328.
    assert_eq!(b.backward_tail, 109_660.0 * QWEN7_TOKENS);
}

#[test]
fn a_fully_trained_tower_without_checkpointing_keeps_every_block() {
    let mut job = qwen7(1);
    job.mode = Mode::Full;
    job.checkpointing = Checkpointing::Off;
    job.vision.train_tower = true;
    let b = vision::bytes(&job, &bf16_adamw());
    // The tower's own parameters train (the merger stays frozen): 631,975,680.
    assert_eq!(b.trainable, 631_975_680.0);
    assert_eq!(b.grads, 631_975_680.0 * 2.0);
    // Per patch and block, weights trained: RMSNorms 2·(4·1280 + 2·1280) = 15,360; inputs of qkv, the MLP,
    // down (2·1280 + 2·1280 + 2·3420) and proj's concatenated input (2·1280): 14,520; attention 10,240;
    // SwiGLU 20,520: 60,640 B × 32 blocks × 4 · 2,916 patches.
    assert_eq!(b.saved, 60_640.0 * 32.0 * 4.0 * 2916.0);
    assert_eq!(b.forward, b.saved);
    assert_eq!(b.backward_tail, 25_640.0 * 4.0 * 2916.0);
}

#[test]
fn since_transformers_5_a_frozen_tower_records_its_forward_under_peft_checkpointing() {
    // `enable_input_require_grads` hooks the patch embedding (huggingface/transformers#41993).
    let mut job = qwen7(2);
    job.versions.transformers = Version::new(5, 2);
    let hf = vision::bytes(&job, &bf16_adamw());
    // transformers checkpoints the vision blocks: their inputs, 32 · 2 · 1280 · 23,328.
    assert_eq!(hf.saved, 1_911_029_760.0);
    assert_eq!(hf.trainable, 0.0);
    // LLaMA-Factory checkpoints only layers with trainable parameters: every frozen block keeps what its
    // input's gradient needs, per patch 2·4·1280 + 4·2·1280 + 3·2·3420 = 41,000 B, × 32 × 23,328.
    job.stack = Stack::LlamaFactory;
    let lf = vision::bytes(&job, &bf16_adamw());
    assert_eq!(lf.saved, 41_000.0 * 32.0 * QWEN7_TOKENS);
    // LLaMA-Factory's QLoRA never calls `prepare_model_for_kbit_training`, and PEFT skips the hook on a
    // 4-bit model: no grad path.
    let qlora = Job {
        mode: Mode::Qlora,
        weights: WeightFormat::Nf4,
        ..job.clone()
    };
    assert_eq!(vision::bytes(&qlora, &bf16_adamw()).saved, 0.0);
    // ms-swift runs a wholly frozen tower without autograd (modelscope/ms-swift#10214).
    job.stack = Stack::MsSwift;
    assert_eq!(vision::bytes(&job, &bf16_adamw()).saved, 0.0);
    // transformers 4.57: the hook reaches the language model's embeddings only.
    assert_eq!(vision::bytes(&qwen7(2), &bf16_adamw()).saved, 0.0);
}

#[test]
fn the_estimate_puts_the_tower_in_its_own_component() {
    // Backward of the default job with 2 images a sample: the tower's weights and the pixels.
    let e = estimate(&qwen7(2));
    assert_eq!(e.phase, Phase::Backward);
    assert_eq!(
        e.gpu_bytes(Component::VisionTower),
        QWEN7_WEIGHTS + QWEN7_PIXELS
    );
    assert_eq!(e.vision_params, 676_550_144.0);
    // The language model's part is the text job's: its image tokens (2 × 729) fit in 2048.
    let text = estimate(&Job {
        arch: Architecture {
            vision: None,
            ..arch("qwen2.5-vl-7b-instruct")
        },
        ..qwen7(0)
    });
    assert_eq!(
        e.gpu_bytes(Component::Activations),
        text.gpu_bytes(Component::Activations)
    );
    assert!(e.warnings.is_empty());
    // 3 images (3 × 729 = 2,187 tokens) do not fit in 2048: the sequence grows to them, with a warning.
    let long = estimate(&qwen7(3));
    assert!(long.warnings.contains(&Warning::ImagesBeyondSequence));
    assert!(long.gpu_bytes(Component::Activations) > text.gpu_bytes(Component::Activations));
}

#[test]
fn gemma3_serving_many_images_peaks_in_the_vision_encoder() {
    // 8 images of Gemma 3 4B in one prompt of 2048 tokens (8 × 256 image tokens), bf16.
    let job = Job {
        arch: arch("gemma-3-4b-it"),
        mode: Mode::Inference,
        optimizer: Optimizer::None,
        vision: VisionSettings {
            images: 8,
            ..VisionSettings::default()
        },
        ..Job::default()
    };
    let e = estimate(&job);
    assert_eq!(e.phase, Phase::VisionEncoder);
    // Weights: 419,816,304 · 2 = 839,632,608. Pixels: 8 · 3 · 896² · 4 = 77,070,336. SigLIP has no RoPE;
    // its larger block is the MLP, per patch 2·2·1152 + 2·2·4304 = 21,824 B, over 8 · 4096 patches =
    // 715,128,832.
    assert_eq!(
        e.gpu_bytes(Component::VisionTower),
        839_632_608.0 + 77_070_336.0 + 715_128_832.0
    );
    assert!(e.warnings.is_empty());
}

#[test]
fn bitsandbytes_quantizes_the_towers_linears_and_awq_keeps_it_16_bit() {
    let mut job = Job {
        arch: arch("llama-4-scout-17b-16e-instruct"),
        mode: Mode::Qlora,
        weights: WeightFormat::Nf4,
        ..Job::default()
    };
    let rates = Rates {
        bnb: Some((WeightFormat::Nf4.linear_bytes(), 2.0)),
        ..bf16_adamw()
    };
    // Linear weights: patch 588·1408 = 827,904; 34 · (4·1408² + 2·1408·5632) = 808,845,312; adapter
    // 5632·4096 + 4096² = 39,845,888; projector 4096·5120 = 20,971,520: 870,490,624 at 0.5 + 4/64 B. The other
    // 1,441,792 (norms, biases, class and position embeddings) in 16-bit.
    let b = vision::bytes(&job, &rates);
    assert_eq!(b.resident, 870_490_624.0 * 0.5625 + 1_441_792.0 * 2.0);
    job.weights = WeightFormat::AwqInt4;
    job.mode = Mode::Lora;
    let awq = vision::bytes(&job, &bf16_adamw());
    assert_eq!(awq.resident, 871_932_416.0 * 2.0);
}

#[test]
fn llama4_tiles_and_eager_scores() {
    // One 672 × 672 image a sample: 2 × 2 tiles + the global one, 5 × 577 tower tokens; eager attention keeps
    // per token (4 + 2) · 16 heads · 577 keys = 55,392 B in every layer it saves (no checkpointing).
    let job = Job {
        arch: arch("llama-4-scout-17b-16e-instruct"),
        mode: Mode::Full,
        micro_batch: 1,
        attention: AttentionImpl::Eager,
        checkpointing: Checkpointing::Off,
        vision: VisionSettings {
            images: 1,
            train_tower: true,
            max_pixels: 672 * 672,
        },
        ..Job::default()
    };
    let b = vision::bytes(&job, &bf16_adamw());
    let tokens = 5.0 * 577.0;
    // Per token and layer, weights trained: two LayerNorm inputs 2·2·1408; inputs of q/k/v, fc1, fc2
    // (2·1408 + 2·1408 + 2·5632); q, k, v, out 4·2·1408; GELU's input 2·5632: 5,632 + 16,896 + 11,264 +
    // 11,264 = 45,056 B, plus the scores.
    assert_eq!(b.saved, 34.0 * (45_056.0 + 55_392.0) * tokens);
    // Pixels: 5 tiles of 3 · 336² fp32.
    assert_eq!(b.pixels, 5.0 * 3.0 * 336.0 * 336.0 * 4.0);
}

#[test]
fn a_pasted_vlm_config_keeps_its_tower_through_a_link() {
    // Qwen2.5-VL-3B-Instruct's config.json fields (models.json), pasted.
    let text = r#"{"model_type":"qwen2_5_vl","hidden_size":2048,"num_hidden_layers":36,
        "num_attention_heads":16,"num_key_value_heads":2,"intermediate_size":11008,"vocab_size":151936,
        "tie_word_embeddings":true,"sliding_window":32768,"use_sliding_window":false,
        "vision_config":{"depth":32,"hidden_size":1280,"intermediate_size":3420,"num_heads":16,"in_chans":3,
        "out_hidden_size":2048,"patch_size":14,"spatial_merge_size":2,"window_size":112,
        "fullatt_block_indexes":[7,15,23,31],"temporal_patch_size":2}}"#;
    let d = vramfit::imports::detect(text, &vramfit::form::Form::default()).unwrap();
    match d.understood {
        vramfit::imports::Understood::Model { params, .. } => assert_eq!(params, 3_754_622_976.0),
        other => panic!("{other:?}"),
    }
    let form = vramfit::form::Form {
        images: 2,
        ..d.form
    };
    assert!(form.arch().vision.is_some());
    let link = vramfit::share::encode(&form);
    assert_eq!(vramfit::share::decode(&link), (form, vec![]), "{link}");
}
