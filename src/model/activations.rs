//! Activation memory: what autograd keeps for backward, per token, and what a training step's backward holds
//! at its peak.
//!
//! Derived by walking Hugging Face `LlamaDecoderLayer` (and its GPT-2/Falcon/MoE relatives) and listing the
//! tensors each op saves, as in Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
//! Transformer Models", sec. 4.1), but for the modern block: RMSNorm with an fp32 upcast, GQA, RoPE, SwiGLU,
//! no dropout. PyTorch saves an op's input for backward only when a gradient must flow to a tensor that
//! needs it (autograd codegen's `should_compute_output`), so frozen LoRA base weights save less.

use super::arch::{Architecture, AttentionKind, MlpKind};
use super::job::{AttentionImpl, Checkpointing, Job, LossImpl, Mode, Module, Precision};
use super::peft::Method;
use super::shapes::Shapes;

/// Bytes of one residual-stream element: fp32 under autocast over fp32 weights or over an upcast k-bit model
/// ([`upcast_kbit_residual`]), else the compute size.
pub fn residual_bytes(job: &Job) -> f64 {
    if autocast_over_fp32(job) || upcast_kbit_residual(job) {
        4.0
    } else {
        act_bytes(job)
    }
}

/// Whether a k-bit (QLoRA) training run carries an fp32 residual stream because its trainer upcast every
/// non-quantized weight to fp32 (`Job::upcast_non_quantized`; PEFT `prepare_model_for_kbit_training`).
/// The embedding's output is then fp32, each RMSNorm multiplies its fp32 weight by its input (the product
/// stays fp32, transformers `LlamaRMSNorm.forward`), and the residual adds keep fp32 (type promotion of
/// fp32 + bf16); the quantized linears cast their input to the compute dtype themselves (bitsandbytes
/// `Linear4bit.forward`). This upcast is what Unsloth reported slowing QLoRA down and what
/// fms-acceleration's bnb plugin removes (`plugins/accelerated-peft/README.md`, "fix upcasting"): on its
/// benchmark, Mistral-7B at 4 × 4096 tokens with checkpointing holds 19.25 GiB with the upcast and 15.25
/// without, 4 GiB = 2 B × 4096 × 32 layers × 16384 tokens: the checkpointed inputs in fp32 instead of bf16.
pub fn upcast_kbit_residual(job: &Job) -> bool {
    job.upcast_non_quantized
        && job.weights.is_quantized()
        && job.is_training()
        && matches!(job.mode, Mode::Lora | Mode::Qlora)
}

/// Bytes of one activation element: 2 under bf16/fp16 compute, 4 in fp32.
pub fn act_bytes(job: &Job) -> f64 {
    if job.precision == Precision::Fp32 {
        4.0
    } else {
        2.0
    }
}

/// Whether layer weights (not just adapters) get gradients in this job's trained layers.
fn weights_trained(job: &Job) -> bool {
    matches!(
        job.mode,
        Mode::Full | Mode::Freeze | Mode::Badam | Mode::Lisa
    )
}

/// Whether the working weights are fp32 under bf16/fp16 autocast (HF Trainer AMP on an fp32-loaded model):
/// the residual stream is then fp32 and every matmul casts its input to 16-bit.
pub fn autocast_over_fp32(job: &Job) -> bool {
    job.precision == Precision::Mixed && !job.weights.is_quantized()
}

/// Whether the forward runs under bf16/fp16 autocast at all: over fp32 weights ([`autocast_over_fp32`]) or
/// over 16-bit weights whose trainer wraps the forward in autocast ([`super::Stack::autocasts_16bit_weights`]).
/// Over 16-bit weights the matmuls' inputs are already 16-bit, so only what PEFT casts to its fp32 adapters
/// is re-cast (see [`adapter_bytes_per_token`]).
pub fn autocast(job: &Job) -> bool {
    autocast_over_fp32(job)
        || (job.precision == Precision::Pure16
            && !job.weights.is_quantized()
            && job.stack.autocasts_16bit_weights())
}

/// Bytes per token of one decoder layer, split by how tensor parallelism divides them (Megatron-LM layout,
/// Korthikanti et al. 2022 sec. 4.2, without sequence parallelism): the residual stream, the norms and the
/// inputs of the column-parallel projections (q/k/v, gate/up, and their LoRA `A` inputs) are whole on every
/// rank; the attention heads, the MLP intermediate and the row-parallel inputs (`o_proj`, `down_proj`) are
/// split across the `tp` ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerBytes {
    /// Whole on every tensor-parallel rank.
    pub replicated: f64,
    /// Divided across tensor-parallel ranks.
    pub split: f64,
}

impl LayerBytes {
    /// Bytes on one rank of `tp` tensor-parallel ranks (`tp` = 1: the whole layer).
    pub fn per_rank(&self, tp: f64) -> f64 {
        self.replicated + self.split / tp.max(1.0)
    }
}

/// Bytes one decoder layer keeps for backward, per token, excluding the eager `s × s` attention matrices.
///
/// Each entry is a tensor autograd saves, read off the saved-tensor hooks of a real transformers 5 / PEFT 0.21
/// / torch 2.15 decoder layer on fake tensors (`scripts/golden-grid.py`'s oracle; HF `LlamaDecoderLayer`,
/// `LlamaRMSNorm`, `sdpa_attention_forward`, PEFT `lora.Linear.forward`), with `ab` the compute element size
/// and `rb` the residual stream's (4 under autocast over fp32 weights):
/// - RMSNorm: the fp32 copy of its input that `pow` saves (4h), and the normalized tensor (rb·h) when the norm
///   weight trains; LayerNorm keeps its input (ab·h);
/// - a linear layer whose weight trains keeps its 16-bit input (ab·d_in); modules fed the same tensor (q/k/v,
///   gate/up) share it, except under autocast, where each matmul saves its own 16-bit cast;
/// - a LoRA adapter keeps its own cast of the input: fp32 in 16-bit training (PEFT casts `x` to the fp32
///   adapter dtype), a 16-bit autocast copy under AMP; `lora_dropout` adds its 1-byte mask; `lora_A`'s output
///   (4·r) is kept too;
/// - SDPA (flash/efficient) and FlashAttention-2 keep q, k, v at their own widths (transformers passes GQA
///   to the kernel, no `repeat_kv`; see [`super::job::Versions::sdpa_repeats_kv`] for when it does not) and
///   the output, which `o_proj` reads without a copy; eager attention keeps
///   q and the repeated k and v, and `o_proj` a contiguous copy of its input when its weight trains;
/// - gated MLP: the gate output (saved by the activation), the activation and up outputs (saved by their
///   product), and the product when `down` trains (ab·i each); plain MLP: the pre-activation and the
///   activation output when `down` needs it; transformers' Python `gelu_new` keeps four tensors where a
///   fused activation keeps its input ([`super::arch::Activation`]);
/// - fused projections ([`super::arch::Fused`]): one input and one adapter for Q, K and V (or gate and up);
/// - MoE: the MLP part once per active expert, plus shared experts;
/// - hybrid stacks: the average over the layers, each block weighted by the share of layers holding it, the
///   recurrent mixer's bytes from [`super::recurrent::Hybrid::saved_bytes_per_token`]
///   ([`super::recurrent::LayerKinds::average`]).
pub fn layer_bytes_per_token(arch: &Architecture, job: &Job) -> LayerBytes {
    layer_kinds_per_token(arch, job).average(arch)
}

/// Bytes per token of the largest single decoder layer (the one a checkpointed backward recomputes at its
/// peak): [`layer_bytes_per_token`] for a plain transformer; in a hybrid stack the layer kind that keeps the
/// most ([`super::recurrent::LayerKinds::largest`]).
pub fn largest_layer_bytes_per_token(arch: &Architecture, job: &Job) -> LayerBytes {
    layer_kinds_per_token(arch, job).largest(arch)
}

/// [`layer_bytes_per_token`]'s terms by block: norms, attention, MLP and the recurrent mixer.
fn layer_kinds_per_token(arch: &Architecture, job: &Job) -> super::recurrent::LayerKinds {
    let ab = act_bytes(job);
    let amp = autocast_over_fp32(job);
    let rb = residual_bytes(job);
    let h = f64::from(arch.hidden);
    let q = arch.q_width();
    let kv = arch.kv_width();
    let trained = weights_trained(job);
    let lora = matches!(job.mode, Mode::Lora | Mode::Qlora);
    let adapter = |m: Module, d_in: f64, d_out: f64| -> f64 {
        if lora && arch.adapts(m, &job.lora.targets) {
            adapter_bytes_per_token(job, m, d_in, d_out)
        } else {
            0.0
        }
    };
    // Inputs a trained weight saves, for a group of modules fed one tensor. BOFT's `x @ R` saves its module's
    // input the same way (one tensor, however many modules read it) when one of the group is adapted.
    let boft = lora && job.lora.method == Method::Boft;
    // Adapters in the model dtype with no dropout read their input as it comes (`Stack::adapters_in_model_dtype`):
    // like BOFT, the group's input is saved once.
    let shares_input = boft || (own_dtype_adapters(job) && !job.lora.dropout);
    let boft_reads =
        |ms: &[Module]| shares_input && ms.iter().any(|m| arch.adapts(*m, &job.lora.targets));
    let shared_input_of = |count: f64, d_in: f64, reads: &[Module]| -> f64 {
        if !(trained || boft_reads(reads)) {
            0.0
        } else if amp {
            count * ab * d_in
        } else {
            ab * d_in
        }
    };

    // A trained RMSNorm scale keeps the normalized tensor: in the residual dtype, or in fp32 where the stack
    // normalizes an upcast input (`Stack::norms_keep_fp32`).
    let normalized = if job.stack.norms_keep_fp32() { 4.0 } else { rb };
    let norm = if arch.layer_norm {
        ab * h
    } else {
        4.0 * h + if trained { normalized * h } else { 0.0 }
    };
    let norms = norm * f64::from(arch.norms_per_layer.clamp(1, 4));

    // Attention block: the projections' h-wide inputs are whole on every rank; heads are split. Each
    // projection keeps its adapter's inputs (`Architecture::attention_projections`); the hidden state feeds
    // three of them, one fused q/k/v (one autocast copy), or MLA's q_a and kv_a (q_b and kv_b read latents).
    let projections = arch.attention_projections();
    let reading_h = match arch.attention {
        AttentionKind::Mla => 2.0,
        AttentionKind::Standard if arch.fused.qkv => 1.0,
        AttentionKind::Standard => 3.0,
    };
    let attn_in = shared_input_of(reading_h, h, &[Module::Q, Module::K, Module::V])
        + projections
            .iter()
            .filter(|(_, d_in, _)| *d_in > 0.0)
            .map(|&(m, d_in, d_out)| adapter(m, d_in, d_out))
            .sum::<f64>();
    // A padding mask (variable-length batches) or prefix tuning's prefix sends SDPA to the masked
    // (memory-efficient) kernel. When the key length is not a multiple of 16, that kernel's bias must be padded
    // for alignment, and the padded copy is materialized for every head and saved for backward:
    // `heads · pad16(keys) · ab` per token (ATen `sdp_utils.cpp` / `attention.cpp` bias preprocessing). The
    // oracle shows it with a padding mask at 1000 keys (+134 MiB per layer on Llama 3.2 1B, batch 2) and not at
    // 1024; prefix tuning shows it at 512 + 20. Dynamic padding makes every batch's length different, so a
    // variable-length run meets the unaligned case: the peak counts it.
    let prefix = lora && job.lora.method == Method::PrefixTuning;
    let repeated = job.versions.sdpa_repeats_kv(job.variable_lengths || prefix);
    let expanded = job.stack.expands_kv_heads() && job.attention != AttentionImpl::Eager;
    let keys = f64::from(job.seq_len)
        + if prefix {
            f64::from(job.lora.virtual_tokens)
        } else {
            0.0
        };
    let unaligned = job.variable_lengths || keys % 16.0 != 0.0;
    let prefix_bias =
        if (prefix || job.variable_lengths) && unaligned && job.attention == AttentionImpl::Sdpa {
            f64::from(arch.heads) * (keys / 16.0).ceil() * 16.0 * ab
        } else {
            0.0
        };
    // A fused projection's q, k and v are slices of one output. RoPE replaces q and k by new tensors, but v
    // stays a view, so whatever attention saves of v keeps the whole fused output alive: the q and k parts
    // (q + kv wide) beyond what the v term counts. Without RoPE (learned positions: GPT-2, GPT-BigCode) q and k
    // are views too and the three terms already add up to the fused output; a K/V repeated for grouped-query
    // heads is a copy. The oracle's saved tensors show it on GPT-NeoX and Phi-3 (`tests/golden_grid.rs`).
    let v_keeps_fused_output = arch.fused.qkv
        && arch.learned_positions == 0
        // The math path saves fp32 copies, not the views.
        && !sdpa_math_path(arch, job)
        && (arch.kv_heads == arch.heads
            || (job.attention != AttentionImpl::Eager
                && !(job.attention == AttentionImpl::Sdpa && repeated)));
    let fused_base = if v_keeps_fused_output {
        ab * (q + kv)
    } else {
        0.0
    };
    // Per-head q/k RMSNorms (Qwen3, Gemma 3, Hunyuan, …): like the layer norms, each keeps the fp32 copy of
    // its input that `pow` saves, and the normalized tensor when its weight trains.
    let qk_norms = if arch.qk_norm {
        (4.0 + if trained { rb } else { 0.0 }) * (q + kv)
    } else {
        0.0
    };
    let attn_heads = prefix_bias
        + qk_norms
        + fused_base
        + adapter(Module::O, q, h)
        + match job.attention {
            // SDPA's math path upcasts q, k and v to fp32 and saves them (its probabilities are in
            // `score_matrices_per_token`).
            AttentionImpl::Sdpa if sdpa_math_path(arch, job) => 4.0 * (q + 2.0 * kv),
            // K/V copied to every head by the stack's own attention, then the flash kernel: q, k, v and the
            // output at the query width, the output read by the output projection as it is.
            _ if expanded => ab * 4.0 * q,
            AttentionImpl::Flash2 => ab * (2.0 * q + 2.0 * kv),
            AttentionImpl::Sdpa if !repeated => ab * (2.0 * q + 2.0 * kv),
            // The expanded K/V are what SDPA saves; the output goes through `.contiguous()` after a
            // transpose that the mask-taking (efficient) kernel's layout needs, which `o_proj` saves when
            // it trains.
            AttentionImpl::Sdpa => ab * 4.0 * q + if trained { ab * q } else { 0.0 },
            AttentionImpl::Eager => ab * 3.0 * q + if trained { ab * q } else { 0.0 },
        };

    // MLP block, per expert pass: (whole inputs of gate/up, split intermediate and down input).
    let mlp_width = |i: f64, adapted: bool| -> (f64, f64) {
        let adapter = |m: Module, d_in: f64, d_out: f64| {
            if adapted {
                adapter(m, d_in, d_out)
            } else {
                0.0
            }
        };
        let act = arch.activation.saved_tensors(trained);
        let acts = match arch.mlp {
            MlpKind::Gated => (2.0 + act) * ab * i,
            MlpKind::Plain => act * ab * i,
        };
        let reads_down = adapted && boft_reads(&[Module::Down]);
        let down_in =
            if trained || reads_down { ab * i } else { 0.0 } + adapter(Module::Down, i, h);
        let gate_up: &[Module] = if adapted {
            &[Module::Gate, Module::Up]
        } else {
            &[]
        };
        let gate_up_in = match arch.mlp {
            MlpKind::Gated if arch.fused.gate_up => {
                shared_input_of(1.0, h, gate_up) + adapter(Module::Up, h, 2.0 * i)
            }
            MlpKind::Gated => {
                shared_input_of(2.0, h, gate_up)
                    + adapter(Module::Gate, h, i)
                    + adapter(Module::Up, h, i)
            }
            MlpKind::Plain => shared_input_of(1.0, h, gate_up) + adapter(Module::Up, h, i),
        };
        (gate_up_in, acts + down_in)
    };
    let (mlp_in, mlp_inner) = match arch.moe {
        None => mlp_width(f64::from(arch.intermediate), true),
        Some(moe) => {
            let active = f64::from(moe.active.min(moe.experts));
            let ei = f64::from(moe.expert_intermediate);
            // Experts adapted through their merged weight (`merged_expert_lora`): no adapter of their own
            // runs on the tokens, but the grouped matmuls' weights require grad, so each keeps its input (the
            // gate/up input, and the down projection's).
            let (e_in, e_inner) = if merged_expert_lora(job, arch) {
                let acts = match arch.mlp {
                    MlpKind::Gated => 3.0 * ab * ei,
                    MlpKind::Plain => ab * ei,
                };
                (ab * h, acts + ab * ei)
            } else {
                mlp_width(ei, moe.experts_adapted(job.versions.transformers))
            };
            let (s_in, s_inner) = if moe.shared_intermediate > 0 {
                mlp_width(f64::from(moe.shared_intermediate), true)
            } else {
                (0.0, 0.0)
            };
            // Each routed pass also keeps its gathered copy of the tokens' hidden states (ab·h).
            (active * (e_in + ab * h) + s_in, active * e_inner + s_inner)
        }
    };

    // DoRA recomputes the weight norm and scales the output: about one more output copy per module.
    let (dora_attn, dora_mlp) = if lora && job.lora.dora && job.lora.method.adapts_modules() {
        (ab * (q + 2.0 * kv), ab * 3.0 * h)
    } else {
        (0.0, 0.0)
    };
    let recurrent = match arch.stack() {
        Some(hy) => hy.saved_bytes_per_token(h, ab, trained),
        None => LayerBytes::default(),
    };
    super::recurrent::LayerKinds {
        common: LayerBytes {
            replicated: norms,
            split: 0.0,
        },
        attention: LayerBytes {
            replicated: attn_in,
            split: attn_heads + dora_attn,
        },
        mlp: LayerBytes {
            replicated: mlp_in,
            split: mlp_inner + dora_mlp,
        },
        recurrent,
    }
}

/// Bytes per token one adapted `d_in → d_out` module's adapter keeps for backward, by PEFT method (PEFT 0.21
/// `<method>/layer.py` forwards; `m` the compute size, `mask` 1 B per input element with dropout):
/// - LoRA, AdaLoRA: the adapter's own cast of the input (fp32 in 16-bit training: PEFT casts `x` to the fp32
///   adapter dtype; a 16-bit autocast copy under AMP), the dropout mask, and `lora_A`'s output (4·r);
/// - LoRA-FA: `lora_A` is frozen, so its input is not saved: the mask and `lora_A`'s output;
/// - VeRA: the frozen projections save nothing; the two scaling products keep their fp32 inputs
///   (4·r and 4·d_out);
/// - IA³: the fp32 copy that the learned vector multiplies: the module output (4·d_out), or on a
///   feed-forward module its input (4·d_in);
/// - LoHa, LoKr, OFT: the fp32 cast of the input that meets the materialized (or rotated) weight, 4·d_in;
/// - BOFT: the base output its scale multiplies, `ab·d_out` (the rotated input `x @ R` keeps `x`, counted
///   once per input tensor like a trained weight's input, and `R`, counted per layer:
///   [`adapter_bytes_per_layer`]);
/// - prompt methods and trainable tokens adapt no module (the latter's saved tensors are at the LM head,
///   [`tied_token_head`]).
pub fn adapter_bytes_per_token(job: &Job, m: Module, d_in: f64, d_out: f64) -> f64 {
    let amp = autocast(job);
    let mask = if job.lora.dropout { 1.0 } else { 0.0 };
    if own_dtype_adapters(job) {
        // The stack's own LoRA in the model dtype (`Stack::adapters_in_model_dtype`): `lora_a`'s output in that
        // dtype; with dropout, the dropped-out copy and its mask (without, the shared input is counted once
        // with the module group's).
        let ab = act_bytes(job);
        let dropped = if job.lora.dropout {
            (ab + mask) * d_in
        } else {
            0.0
        };
        return dropped + ab * f64::from(job.lora.rank);
    }
    let cast = if amp { 2.0 } else { 4.0 };
    let r = f64::from(job.lora.rank);
    match job.lora.method {
        Method::Lora | Method::AdaLora => (cast + mask) * d_in + 4.0 * r,
        Method::LoraFa => mask * d_in + 4.0 * r,
        Method::Vera => mask * d_in + 4.0 * r + 4.0 * d_out,
        Method::Ia3 if super::peft::is_feed_forward(m) => 4.0 * d_in,
        Method::Ia3 => 4.0 * d_out,
        Method::Loha | Method::Lokr | Method::Oft => (cast + mask) * d_in,
        // The base output before its `boft_s` scaling (`result * boft_scale`, saved because the scale
        // trains); the input that meets the rotation is saved once per input tensor
        // ([`boft_reads`] in the layer's terms).
        Method::Boft => act_bytes(job) * d_out,
        Method::PromptTuning | Method::PrefixTuning | Method::PTuning | Method::TrainableTokens => {
            0.0
        }
    }
}

/// Whether the job's LoRA adapters are torchtune's `LoRALinear` in the model dtype
/// (`Stack::adapters_in_model_dtype`), whose forward `lora_a(dropout(x))` saves the input as it comes. litgpt's
/// adapters are in the model dtype too, but its fused `LoRAQKVLinear` runs its own forward (a padded
/// `conv1d` for `lora_B`, `zero_pad` into the fused layout), which the litgpt oracle measures beside the
/// PEFT-shaped terms (`tests/golden_litgpt.rs`).
fn own_dtype_adapters(job: &Job) -> bool {
    job.stack == super::stack::Stack::Torchtune
        && matches!(job.mode, Mode::Lora | Mode::Qlora)
        && job.lora.method == Method::Lora
}

/// Bytes one layer's adapters keep that do not scale with tokens: LoHa and LoKr build the full
/// `d_out × d_in` delta weight every forward (PEFT `get_delta_weight`), in fp32. LoHa builds the
/// Hadamard product in a custom autograd function (`HadaWeight`) that saves only the four small factors and
/// recomputes the products in backward, so what stays is the delta that `F.linear` saves: one weight-sized
/// tensor; LoKr likewise keeps the delta (the Kronecker factors are small).
/// AdaLoRA keeps `lora_A * lora_E` (`r × d_in`); BOFT its rotation matrices (`boft_saved_per_module`).
pub fn adapter_bytes_per_layer(job: &Job, arch: &Architecture) -> f64 {
    if !matches!(job.mode, Mode::Lora | Mode::Qlora) {
        return 0.0;
    }
    merged_expert_bytes(job, arch).0 + delta_weight_bytes_per_layer(job, arch)
}

/// Whether PEFT adapts an MoE model's routed experts through their merged weight. transformers ≥ 5 keeps
/// the routed experts of a layer as fused 3-D parameters (`gate_up_proj` `[E, 2I, H]`, `down_proj`
/// `[E, H, I]`: e.g. `Qwen3MoeExperts` in `models/qwen3_moe/modeling_qwen3_moe.py`), and PEFT 0.21's LoRA
/// adapts such a parameter by wrapping it (`ParamWrapper`, `peft/tuners/lora/layer.py`): the experts' grouped
/// matmul runs on the merged `W + scale·B·A`, which requires grad. On the fake-tensor oracle its backward
/// (`GroupedMmBackward0`) is the peak of every all-linear LoRA job on Qwen3-MoE, Mixtral, DeepSeek-V2/V3,
/// Kimi K2, GLM-4.5 and MiniMax-M2 (`tests/golden_grid.rs`).
pub fn merged_expert_lora(job: &Job, arch: &Architecture) -> bool {
    arch.moe
        .is_some_and(|moe| moe.experts_adapted(job.versions.transformers))
        && matches!(job.mode, Mode::Lora | Mode::Qlora)
        && job.lora.method == Method::Lora
        && job.versions.transformers >= super::job::Version::new(5, 0)
        && job
            .lora
            .targets
            .iter()
            .any(|m| matches!(m, Module::Gate | Module::Up | Module::Down))
}

/// The merged expert weights an MoE layer keeps for backward ([`merged_expert_lora`]), as `(averaged over
/// all layers, in one MoE layer)`: autograd saves the merged `W + ΔW` of every routed expert for the grouped
/// matmul's input gradient, one weight-sized copy in the compute dtype per adapted projection. The oracle
/// shows one copy per MoE layer: without checkpointing every MoE layer's (GLM-4.5-Air 4.125 GiB a layer,
/// DeepSeek-V3 21.0 GiB), with it the recomputed layer's. Dense leading layers (`Moe::dense_layers`) have
/// none.
pub fn merged_expert_bytes(job: &Job, arch: &Architecture) -> (f64, f64) {
    let Some(moe) = arch.moe.filter(|_| merged_expert_lora(job, arch)) else {
        return (0.0, 0.0);
    };
    let layers = f64::from(arch.layers.max(1));
    let sparse_share = (layers - f64::from(moe.dense_layers.min(arch.layers))) / layers;
    let copies = f64::from(moe.experts)
        + if moe.shared_intermediate > 0 {
            1.0
        } else {
            0.0
        };
    let routed = f64::from(moe.experts) / copies.max(1.0);
    let per_moe_layer = act_bytes(job)
        * arch
            .linear_modules()
            .into_iter()
            .filter(|(m, d_in, _)| {
                matches!(m, Module::Gate | Module::Up | Module::Down)
                    && arch.adapts(*m, &job.lora.targets)
                    && *d_in > 0.0
            })
            .map(|(_, d_in, d_out)| d_in * d_out * routed)
            .sum::<f64>();
    (per_moe_layer * sparse_share, per_moe_layer)
}

/// LoHa, LoKr and AdaLoRA's per-layer tensors (see [`adapter_bytes_per_layer`]).
fn delta_weight_bytes_per_layer(job: &Job, arch: &Architecture) -> f64 {
    let r = f64::from(job.lora.rank);
    arch.linear_modules()
        .into_iter()
        .filter(|(m, d_in, _)| arch.adapts(*m, &job.lora.targets) && *d_in > 0.0)
        .map(|(_, d_in, d_out)| match job.lora.method {
            Method::Loha => 4.0 * d_in * d_out,
            Method::Lokr => 4.0 * d_in * d_out,
            Method::AdaLora => 4.0 * r * d_in,
            Method::Boft => boft_saved_per_module(job, d_in, d_out),
            _ => 0.0,
        })
        .sum()
}

/// What one BOFT module's forward saves that does not scale with tokens (PEFT 0.21 `boft/layer.py`
/// `Linear.forward`, read with saved-tensor hooks on the real module), `n` factors of `d_in / b` blocks:
/// - three `n · d_in²` matrices in the compute dtype: the 16-bit copy of the `boft_P` permutations that both
///   `bmm`s save, the butterfly product (its factors, and the running products between them) and, for the
///   last step, the identity `boft_rotation` starts as; plus the rotation `R` that `x @ R` saves: `3·n·d_in²`
///   in all (`n = 1`: `P`, the identity and `R`);
/// - the Cayley parametrization of `boft_R` in fp32 (`cayley_batch`: the skew matrix, `torch.linalg.solve`'s
///   LU factors and result, `3 · 4 · n·d_in·b`) and the solve's int32 pivots (`4 · n · d_in`);
/// - the scale, `boft_s` (`d_out`) and its 16-bit product with the ones (`d_out`).
fn boft_saved_per_module(job: &Job, d_in: f64, d_out: f64) -> f64 {
    let ab = act_bytes(job);
    let n = f64::from(job.lora.butterfly_factors.max(1));
    let b = f64::from(job.lora.rank.max(1));
    3.0 * n * d_in * d_in * ab + 12.0 * n * d_in * b + 4.0 * n * d_in + (ab + 4.0) * d_out
}

/// Bytes per token that the final norm and the LM head keep for backward: the norm's fp32 input copy, its
/// normalized output when its weight trains, and the LM head's 16-bit input when the head trains, or when
/// trainable tokens make its (tied) weight require grad ([`tied_token_head`]; same saved-tensor reading as
/// [`layer_bytes_per_token`]).
pub fn final_norm_bytes_per_token(arch: &Architecture, job: &Job) -> f64 {
    let h = f64::from(arch.hidden);
    let ab = act_bytes(job);
    let rb = residual_bytes(job);
    let lora = matches!(job.mode, Mode::Lora | Mode::Qlora);
    let head_trained = weights_trained(job)
        || (job.lora.train_lm_head && lora && job.lora.method != Method::TrainableTokens)
        || tokens_on_tied_head(job);
    4.0 * h
        + if weights_trained(job) { rb * h } else { 0.0 }
        + if head_trained { ab * h } else { 0.0 }
}

/// Autocast over fp32 weights casts the LM head's weight to 16-bit for its matmul, and the matmul saves that
/// cast for the input's gradient, so it lives from the forward to the head's backward, right after the
/// loss's: `2 · V · h` bytes at the loss's backward (the oracle's Llama 3.2 1B mixed-precision LoRA job holds
/// its 0.49 GiB tied-head cast at `LogSoftmaxBackward0`). A frozen head's cast is not in autocast's cache,
/// so the decoder layers' casts ([`super::temporaries::backward_temporaries`]) leave it out; a full fine-tune
/// caches every cast, the head's among them. A fused linear + cross-entropy kernel reads the weight in tiles.
fn autocast_head_cast(job: &Job, s: &super::shapes::Shapes) -> f64 {
    let head = if s.params.lm_head > 0.0 {
        s.params.lm_head
    } else {
        s.params.embedding
    };
    if s.autocast_fp32
        && job.mode != Mode::Full
        && job.loss != LossImpl::Fused
        && job.objective.has_vocab_logits()
    {
        2.0 * head / s.tensor_split
    } else {
        0.0
    }
}

/// Whether PEFT's trainable tokens run through a tied LM head: the model ties `lm_head` to the embedding, so
/// PEFT wraps it in a `TrainableTokensLayer` tied to the embedding's (`trainable_tokens/model.py`
/// `inject_adapter`), whose forward is `F.linear(x, W)` on the merged weight. A fused linear + cross-entropy
/// kernel (Liger, Unsloth) reads `lm_head.weight` itself and never calls that forward; a reward model's
/// scalar head has no vocabulary matrix.
fn tokens_on_tied_head(job: &Job) -> bool {
    matches!(job.mode, Mode::Lora | Mode::Qlora)
        && super::peft::token_rows(job) > 0
        && job.arch.tied_embeddings
        && job.loss != LossImpl::Fused
        && job.objective.has_vocab_logits()
}

/// What trainable tokens on a tied LM head add at the loss's end of backward, bytes on the busiest GPU:
/// `(saved, head_backward)`.
///
/// The tied layer's forward builds the merged weight, `W.index_copy(0, token_indices, delta)` (PEFT
/// `trainable_tokens/layer.py` `get_merged_weights`): a whole `vocab × h` copy, in the weight's dtype
/// (under autocast, `F.linear` casts it to 16-bit). `W` requires grad through the delta, so `F.linear` saves
/// it (and its input, [`final_norm_bytes_per_token`]) until the head's backward: `saved` = `ab · V · h`.
/// That backward forms the dense weight gradient `grad_logitsᵀ · x` (`ab · V · h`, plus its fp32 copy when
/// autocast casts back to fp32 weights) beside the 16-bit logits gradient (`ab` per logit) before
/// `IndexCopyBackward` keeps the `n` trained rows: `head_backward`, a moment after the loss's own buffers
/// ([`super::loss::loss_bytes`]) are freed. The vocabulary is split by tensor parallelism. 0 otherwise.
pub fn tied_token_head(job: &Job, s: &Shapes) -> (f64, f64) {
    if !tokens_on_tied_head(job) {
        return (0.0, 0.0);
    }
    let ab = act_bytes(job);
    let vocab = f64::from(job.arch.vocab) / s.tensor_split;
    let matrix = vocab * f64::from(job.arch.hidden);
    let grad_cast = if s.working > ab { s.working } else { 0.0 };
    let logits_grad = ab * s.tokens * super::preference::logit_share(job) * vocab;
    (ab * matrix, (ab + grad_cast) * matrix + logits_grad)
}

/// Bytes per token of one decoder layer's backward working set beyond what it saved: the incoming gradient of
/// the layer output (rb·h) and, in the MLP, the gradients of the product, the activation and the up output
/// alive together (3·ab·i; per active expert for MoE). The residual gradient is whole on every
/// tensor-parallel rank, the MLP's is split. In a hybrid stack the larger of the MLP's and the recurrent
/// mixer's working set ([`super::recurrent::Hybrid::backward_bytes_per_token`]): a layer's blocks run their
/// backward one after the other.
pub fn layer_backward_bytes_per_token(arch: &Architecture, job: &Job) -> LayerBytes {
    let ab = act_bytes(job);
    let rb = residual_bytes(job);
    let i = match arch.moe {
        Some(m) => {
            f64::from(m.expert_intermediate) * f64::from(m.active.max(1))
                + f64::from(m.shared_intermediate)
        }
        None => f64::from(arch.intermediate),
    };
    let (_, mlp_share, _) = super::recurrent::layer_shares(arch);
    let mlp = if mlp_share > 0.0 { 3.0 * ab * i } else { 0.0 };
    let mixer = arch
        .stack()
        .filter(|hy| hy.recurrent_layers > 0)
        .map_or(0.0, |hy| hy.backward_bytes_per_token(ab));
    LayerBytes {
        replicated: 2.0 * rb * f64::from(arch.hidden),
        split: mlp.max(mixer),
    }
}

/// Whether SDPA runs its math path: a materialized mask rules out the flash kernel and K/V at fewer heads
/// than Q rule out the memory-efficient one (ATen `sdp_utils.cpp`: flash takes no mask, efficient no GQA),
/// which is how Falcon calls it on transformers 5 ([`Architecture::causal_mask_always`]). The math path
/// computes in fp32 and saves the fp32 probabilities, `4 · heads · s` bytes per token and layer (the
/// oracle's Falcon 7B jobs: `[1, 71, 512, 512]` fp32 in every layer).
fn sdpa_math_path(arch: &Architecture, job: &Job) -> bool {
    job.attention == AttentionImpl::Sdpa
        && arch.causal_mask_always
        && arch.kv_heads != arch.heads
        && job.versions.transformers >= super::job::Version::new(5, 0)
}

/// The `s × s` score matrices attention keeps for backward, bytes per token and layer: none for the
/// flash and memory-efficient kernels; `4 · heads · s` on SDPA's math path ([`sdpa_math_path`]). Eager
/// attention keeps the fp32 softmax output and its 16-bit copy (HF
/// `eager_attention_forward`: `softmax(..., dtype=float32).to(query.dtype)`): `(4 + ab) · heads · s` bytes,
/// averaged over a hybrid stack's layers (only its attention layers have scores). Gemma 2's soft-capped
/// scores keep tanh's output too (`attn_weights = tanh(attn_weights / cap) · cap`), one more `ab`.
pub fn score_matrices_per_token(arch: &Architecture, job: &Job, seq: f64) -> f64 {
    if sdpa_math_path(arch, job) {
        return 4.0 * f64::from(arch.heads) * seq * super::recurrent::layer_shares(arch).0;
    }
    if job.attention == AttentionImpl::Eager {
        let softcap = if arch.softcap { act_bytes(job) } else { 0.0 };
        (4.0 + act_bytes(job) + softcap)
            * f64::from(arch.heads)
            * seq
            * super::recurrent::layer_shares(arch).0
    } else {
        0.0
    }
}

/// Decoder layers that keep activations for backward on the busiest GPU: all of them, except below the
/// first trained layer in freeze mode, times the busiest pipeline stage's share.
pub fn kept_layers(job: &Job, s: &Shapes) -> f64 {
    let layers = match job.mode {
        Mode::Freeze => job.freeze_trainable_layers.min(job.arch.layers),
        _ => job.arch.layers,
    };
    f64::from(layers) * s.stage_share
}

/// Layers recomputed at once under checkpointing: one, or the share of one a pipeline stage keeps when it
/// keeps less (recomputation runs one layer at a time, and only in layers that keep activations).
pub fn recomputed_layers(job: &Job, s: &Shapes) -> f64 {
    kept_layers(job, s).min(1.0)
}

/// What a training step's backward holds at its peak, beside the weights, gradients and optimizer state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BackwardPeak {
    /// Saved (and, at a layer's backward, recomputed) activations, the final norm's, and that layer's
    /// gradient buffers.
    pub activations: f64,
    /// Eager attention's score and probability matrices.
    pub scores: f64,
    /// The loss's buffers (`loss::loss_bytes`), when its backward is the peak.
    pub logits: f64,
    /// The bottom decoder layer's backward, the last one reached: its saved (or recomputed) activations, its
    /// checkpointed input and its gradient buffers, every layer above having freed its own. Beside it every
    /// gradient but the input embedding's is stored (`gradients::Gradients::last_to_arrive`), which is
    /// backward's peak when the loss keeps little (a fused LM head) and the weights train.
    pub first_layer: f64,
}

/// The larger of backward's two peaks in turn: the loss's backward with every saved activation alive, then
/// each layer's backward (after the logits are freed) with its recomputed activations and gradient buffers.
///
/// What every layer keeps through the whole backward, and what one layer adds while it is recomputed (HF
/// `gradient_checkpointing`: each layer's input is kept, in the residual stream's dtype, whole on every
/// tensor-parallel rank; in backward one layer at a time is recomputed; Chen et al. 2016, "Training Deep
/// Nets with Sublinear Memory Cost"). The layer a checkpointed backward recomputes is the largest kind of a
/// hybrid stack (the average layer otherwise); the busiest GPU holds at least one such layer, so without
/// checkpointing it keeps no less than that layer's share either. Offloaded checkpoints keep two layer
/// inputs on the GPU.
///
/// `retained` is what the loop keeps of the output logits beyond the loss's backward
/// ([`super::loss::retained_logits_bytes`]): at the loss's backward they are part of the loss's own bytes
/// (a chunked loss's 16-bit logits), and after it they stay through every layer's backward.
pub fn backward_peak(job: &Job, s: &Shapes, loss: f64, retained: f64) -> BackwardPeak {
    let arch = &job.arch;
    let tp = s.tensor_split;
    let tokens = s.tokens;
    let adapters = adapter_bytes_per_layer(job, arch) / tp;
    let per_layer = layer_bytes_per_token(arch, job).per_rank(tp) * tokens + adapters;
    // The layer a checkpointed backward recomputes is an MoE layer: its merged expert weights whole.
    let (merged_avg, merged_moe_layer) = merged_expert_bytes(job, arch);
    let largest_layer = largest_layer_bytes_per_token(arch, job).per_rank(tp) * tokens + adapters
        - merged_avg / tp
        + merged_moe_layer / tp;
    let scores_layer = score_matrices_per_token(arch, job, s.seq) * tokens / tp;
    let kept = kept_layers(job, s);
    let recomputed = recomputed_layers(job, s);
    let layer_input = residual_bytes(job) * f64::from(arch.hidden) * tokens;
    let (saved_acts, saved_scores, recomputed_acts, recomputed_scores) = match job.checkpointing {
        Checkpointing::Off => (
            (kept * per_layer).max(recomputed * largest_layer),
            kept * scores_layer,
            0.0,
            0.0,
        ),
        Checkpointing::Layer => (
            kept * layer_input,
            0.0,
            recomputed * largest_layer,
            recomputed * scores_layer,
        ),
        Checkpointing::Offload => (
            2.0 * layer_input * recomputed,
            0.0,
            recomputed * largest_layer,
            recomputed * scores_layer,
        ),
    };
    let final_norm = final_norm_bytes_per_token(arch, job) * tokens;
    let layer_work = layer_backward_bytes_per_token(arch, job).per_rank(tp) * tokens;
    // Trainable tokens on a tied head: its saved merged weight, and the head's backward after the loss's.
    let (head_saved, head_backward) = tied_token_head(job, s);
    let head_saved = head_saved + autocast_head_cast(job, s);
    let loss = loss.max(head_backward);
    let first_layer = layer_work
        + match job.checkpointing {
            Checkpointing::Off => recomputed * (largest_layer + scores_layer),
            Checkpointing::Layer => recomputed * layer_input + recomputed_acts + recomputed_scores,
            Checkpointing::Offload => {
                2.0 * recomputed * layer_input + recomputed_acts + recomputed_scores
            }
        };
    // Logits a loop keeps beyond the loss are alive at the loss's backward too; a chunked loss's bytes already
    // hold its 16-bit chunks (litgpt), a full-logits loss's do not (a plain loop's `outputs.logits`).
    let kept_at_loss = if job.loss == LossImpl::Chunked {
        0.0
    } else {
        retained
    };
    let loss_phase = saved_acts + saved_scores + final_norm + head_saved + loss + kept_at_loss;
    let layer_phase =
        saved_acts + saved_scores + recomputed_acts + recomputed_scores + layer_work + retained;
    if loss_phase >= layer_phase {
        BackwardPeak {
            activations: saved_acts + final_norm + head_saved,
            scores: saved_scores,
            logits: loss + kept_at_loss,
            first_layer,
        }
    } else {
        BackwardPeak {
            activations: saved_acts + recomputed_acts + layer_work,
            scores: saved_scores + recomputed_scores,
            logits: retained,
            first_layer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{estimate, Lora, Stack, WeightFormat};

    fn tokens_job(model: &str, batch: u32, seq: u32, checkpointing: Checkpointing) -> Job {
        Job {
            arch: crate::catalog::model(model).unwrap().arch().clone(),
            stack: Stack::Generic,
            mode: Mode::Lora,
            weights: WeightFormat::Bf16,
            precision: Precision::Pure16,
            lora: Lora {
                method: Method::TrainableTokens,
                trainable_tokens: 100,
                dropout: false,
                ..Lora::default()
            },
            micro_batch: batch,
            seq_len: seq,
            grad_accum: 1,
            checkpointing,
            attention: AttentionImpl::Sdpa,
            loss: LossImpl::Fp32Logits,
            ..Job::default()
        }
    }

    /// Llama-3.2-1B ties its 128,256 × 2048 head. Pure bf16, 2 × 512 tokens: the head saves its merged
    /// weight, 2 · 128,256 · 2048 = 525,336,576 B; its backward holds the bf16 weight gradient (another
    /// 525,336,576 B) beside the bf16 logits gradient, 2 · 1024 · 128,256 = 262,668,288 B: 788,004,864 B.
    /// Mistral-7B's head is untied, and a fused loss never runs the wrapped head: nothing.
    #[test]
    fn a_tied_head_keeps_its_merged_weight() {
        let job = tokens_job("llama-3.2-1b", 2, 512, Checkpointing::Layer);
        let s = Shapes::of(&job);
        assert_eq!(tied_token_head(&job, &s), (525_336_576.0, 788_004_864.0));
        let untied = tokens_job("mistral-7b-v0.1", 2, 512, Checkpointing::Layer);
        assert_eq!(tied_token_head(&untied, &Shapes::of(&untied)), (0.0, 0.0));
        let fused = Job {
            loss: LossImpl::Fused,
            ..job.clone()
        };
        assert_eq!(tied_token_head(&fused, &Shapes::of(&fused)), (0.0, 0.0));
        // The head's 16-bit input is saved too: 2 · 2048 B a token, beside the final norm's fp32 input.
        assert_eq!(
            final_norm_bytes_per_token(&job.arch, &job),
            4.0 * 2048.0 + 2.0 * 2048.0
        );
    }

    /// `max_memory_allocated` of two steps of PEFT's real `TrainableTokensConfig(token_indices=range(100))`
    /// on fake tensors (`shared/tools/fake-peak/fake_peak.py`, PEFT 0.21.2, transformers 5.24, torch 2.15;
    /// bf16, AdamW, SDPA, `peft.LoraConfig` bound to the trainable-tokens config as `scripts/golden-peft.py`
    /// binds the other methods). The tied models peak at the loss's backward with the head's merged weight
    /// saved; Mistral-7B at 1 × 128 tokens peaks in `embedding_dense_backward`, the end of backward.
    #[test]
    fn trainable_tokens_match_the_oracle() {
        use Checkpointing::{Layer, Off};
        for (model, batch, seq, ckpt, oracle) in [
            ("llama-3.2-1b", 2, 512, Layer, 4_656_922_624.0),
            ("llama-3.2-1b", 2, 512, Off, 5_833_568_256.0),
            ("qwen2.5-0.5b", 2, 512, Layer, 3_178_852_352.0),
            ("qwen2.5-0.5b", 2, 512, Off, 4_130_455_552.0),
            ("mistral-7b-v0.1", 2, 512, Layer, 15_169_555_456.0),
            ("mistral-7b-v0.1", 2, 512, Off, 19_469_007_872.0),
            ("mistral-7b-v0.1", 1, 128, Layer, 14_756_331_520.0),
        ] {
            let e = estimate(&tokens_job(model, batch, seq, ckpt));
            let err = (e.peak_allocated - oracle) / oracle;
            assert!(
                err.abs() < 0.005,
                "{model} {ckpt:?} {batch}×{seq}: {err:+.4}"
            );
        }
    }
}
