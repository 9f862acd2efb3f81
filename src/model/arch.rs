//! A decoder-only transformer's shape, and the parameter counts that follow from it.
//!
//! Parameter counts are always computed from the shape, never typed in. Shapes follow Hugging Face
//! `modeling_*.py` (Llama, Qwen2/3, Mistral, Mixtral, Gemma, Phi-3, GPT-2, Falcon, ChatGLM, DeepSeek-V2).
//! Hybrid stacks (Mamba / Gated DeltaNet layers beside attention) weigh each block by the layers that hold it
//! (`recurrent.rs`).

use serde::{Deserialize, Serialize};

/// How the attention projections are shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AttentionKind {
    /// Multi-head, grouped-query or multi-query attention: `kv_heads` ≤ `heads` (MHA when equal, MQA when 1).
    #[default]
    Standard,
    /// DeepSeek-V2/V3 multi-head latent attention; the ranks are in [`Mla`].
    Mla,
}

/// Multi-head latent attention ranks (DeepSeek-V2 `modeling_deepseek.py`, config keys of the same names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Mla {
    /// `q_lora_rank`; 0 means queries are projected directly (DeepSeek-V2-Lite).
    pub q_lora_rank: u32,
    /// `kv_lora_rank`: width of the compressed KV latent, which is what the KV cache holds.
    pub kv_lora_rank: u32,
    /// `qk_nope_head_dim`.
    pub qk_nope_head_dim: u32,
    /// `qk_rope_head_dim`: the decoupled RoPE key, cached beside the latent.
    pub qk_rope_head_dim: u32,
    /// `v_head_dim`.
    pub v_head_dim: u32,
}

/// The feed-forward block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MlpKind {
    /// SwiGLU/GeGLU: gate, up (h→i) and down (i→h), 3·h·i weights (Llama, Qwen, Mistral, Gemma).
    #[default]
    Gated,
    /// Up (h→i), activation, down (i→h), 2·h·i weights (GPT-2, Falcon, GPT-NeoX).
    Plain,
}

/// Projections a model computes as one fused `nn.Linear` (and PEFT adapts as one module, with one
/// `lora_A`/`lora_B` pair over the fused output). Attention: Phi-3/Phi-4 `qkv_proj`, GPT-2 / GPT-BigCode /
/// Qwen(1) `c_attn`, Falcon / GPT-NeoX / ChatGLM / BLOOM `query_key_value`, Baichuan `W_pack`, InternLM2
/// `wqkv`, DBRX / MPT `Wqkv`. Feed-forward: Phi-3/Phi-4 `gate_up_proj`, ChatGLM `dense_h_to_4h` (gate and up
/// in one). The weights are the same; what differs is the adapters and the activations they keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Fused {
    /// Q, K and V come from one projection.
    pub qkv: bool,
    /// A gated MLP's gate and up come from one projection.
    pub gate_up: bool,
}

impl Fused {
    fn is_none(&self) -> bool {
        !self.qkv && !self.gate_up
    }
}

/// The MLP's activation, as the saved tensors of its backward see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    /// One op that saves its input: SiLU, `F.gelu` (exact or `approximate="tanh"`, transformers
    /// `gelu_pytorch_tanh`), ReLU.
    #[default]
    Fused,
    /// transformers' `gelu_new` (`activations.py` `NewGELUActivation`, GPT-2, GPT-J, Phi-1/2, CodeGen): the
    /// tanh formula in Python ops, whose autograd keeps four input-wide tensors (pow's input, tanh's output,
    /// `0.5·x` and `1 + tanh`).
    GeluNew,
    /// xIELU (Apertus) as transformers runs it without the CUDA `xielu` package (`activations.py`
    /// `XIELUActivation._xielu_python`): its `where` over two Python branches keeps the input, two more
    /// input-wide 16-bit tensors and the 1-byte condition, 7 B per element in bf16, 3.5 inputs' worth; one more
    /// 16-bit tensor when its own `alpha_p`/`alpha_n` train (full fine-tuning), 9 B (read with
    /// `torch.autograd.graph.saved_tensors_hooks` on the activation, with and without its parameters training).
    Xielu,
}

impl Activation {
    fn is_fused(&self) -> bool {
        *self == Activation::Fused
    }

    /// Tensors as wide as the MLP input of the activation that backward keeps (`params_train`: the
    /// activation's own parameters train, as xIELU's do in full fine-tuning).
    pub fn saved_tensors(self, params_train: bool) -> f64 {
        match self {
            Activation::Fused => 1.0,
            Activation::GeluNew => 4.0,
            Activation::Xielu if params_train => 4.5,
            Activation::Xielu => 3.5,
        }
    }
}

/// Which linear layers carry biases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Biases {
    /// No biases (Llama, Mistral, Gemma).
    #[default]
    None,
    /// Biases on q, k and v only (Qwen2, Qwen1, ChatGLM).
    Qkv,
    /// Biases on every linear layer and LayerNorm (GPT-2, GPT-NeoX, StarCoder).
    All,
}

/// Mixture-of-experts MLP (Mixtral `num_local_experts`, Qwen-MoE `num_experts`, DeepSeek `n_routed_experts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub experts: u32,
    /// Experts each token is routed to (`num_experts_per_tok`).
    pub active: u32,
    /// Width of one routed expert (`moe_intermediate_size`; Mixtral: `intermediate_size`).
    pub expert_intermediate: u32,
    /// Total width of the always-on shared experts (DeepSeek `n_shared_experts · moe_intermediate_size`,
    /// Qwen2-MoE `shared_expert_intermediate_size`); 0 when none.
    pub shared_intermediate: u32,
    /// Leading layers that keep a dense MLP of width `intermediate` (DeepSeek `first_k_dense_replace`).
    pub dense_layers: u32,
    /// The shared expert's output is scaled by a learned `h → 1` gate (Qwen2-MoE `shared_expert_gate`;
    /// DeepSeek's and Llama 4's shared experts have none). Absent from older JSON and links: none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_gate: bool,
    /// Whether PEFT's LoRA reaches the routed experts ([`ExpertAdapters`]). Absent from older JSON and
    /// links: the common case.
    #[serde(default, skip_serializing_if = "ExpertAdapters::is_default")]
    pub peft: ExpertAdapters,
}

/// Whether PEFT's LoRA (`target_modules="all-linear"` or the expert projections by name) adapts an MoE
/// layer's routed experts, by transformers release. Before transformers 5 most families hold each expert as
/// `nn.Linear` modules, which PEFT adapts one by one; from 5 they are fused 3-D parameters, which PEFT 0.21
/// adapts through their merged weight only for the model types of its MoE table
/// (`_MODEL_TO_CONVERSION_PATTERN`) and leaves frozen for the others (read from the fake-tensor oracle's
/// trainable parameters, `tests/golden_grid.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ExpertAdapters {
    /// Per-expert linears before transformers 5; from 5, 3-D parameters adapted through the merged weight
    /// (Mixtral, Qwen3-MoE, DeepSeek-V2/V3, Kimi K2, GLM-4.5, MiniMax-M2).
    #[default]
    Merged,
    /// Per-expert linears before transformers 5; from 5, 3-D parameters that `all-linear` does not reach
    /// (`qwen2_moe`, Qwen1.5-MoE / Qwen2-MoE: only attention, the shared expert and its gate train).
    UntilV5,
    /// 3-D parameters in every release, never adapted (`gpt_oss`: `GptOssExperts`).
    Never,
}

impl ExpertAdapters {
    fn is_default(&self) -> bool {
        *self == ExpertAdapters::Merged
    }
}

impl Moe {
    /// Whether LoRA adapts the routed experts under this transformers release.
    pub fn experts_adapted(&self, transformers: crate::model::job::Version) -> bool {
        match self.peft {
            ExpertAdapters::Merged => true,
            ExpertAdapters::UntilV5 => transformers < crate::model::job::Version::new(5, 0),
            ExpertAdapters::Never => false,
        }
    }
}

/// The shape of a decoder-only transformer language model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Architecture {
    /// Decoder layers (`num_hidden_layers`).
    pub layers: u32,
    /// Residual width (`hidden_size`).
    pub hidden: u32,
    /// Query heads (`num_attention_heads`).
    pub heads: u32,
    /// Key/value heads (`num_key_value_heads`): GQA when fewer than `heads`, MQA when 1.
    pub kv_heads: u32,
    /// Width of one head (`head_dim`, else `hidden / heads`).
    pub head_dim: u32,
    /// MLP width of dense layers (`intermediate_size`).
    pub intermediate: u32,
    /// Vocabulary size (`vocab_size`).
    pub vocab: u32,
    /// Input embedding and LM head share one matrix (`tie_word_embeddings`).
    pub tied_embeddings: bool,
    /// Learned absolute position embeddings (GPT-2 `n_positions`); 0 for RoPE/ALiBi models.
    pub learned_positions: u32,
    /// Attention shape.
    pub attention: AttentionKind,
    /// MLA ranks, used when `attention` is [`AttentionKind::Mla`].
    pub mla: Mla,
    /// Sliding-window attention span in tokens; 0 when every layer attends to the full context.
    pub sliding_window: u32,
    /// Share of layers that use the sliding window (Mistral v0.1: 1.0; Gemma 2: 0.5; Gemma 3: 5/6).
    pub sliding_fraction: f64,
    /// Feed-forward kind.
    pub mlp: MlpKind,
    /// Mixture of experts, if any.
    pub moe: Option<Moe>,
    /// Which linear layers have biases.
    pub biases: Biases,
    /// h-sized norms per layer: 2 (pre-attention, pre-MLP), 4 with Gemma 2/3 post-norms, 1 with Falcon's parallel block.
    pub norms_per_layer: u32,
    /// Norms are LayerNorm with a bias (GPT-2, Falcon), not RMSNorm.
    pub layer_norm: bool,
    /// Per-head RMSNorm on queries and keys (Qwen3, Gemma 3: `q_norm`/`k_norm` of `head_dim`).
    pub qk_norm: bool,
    /// Fused projections ([`Fused`]). Absent from older JSON and links, which decode as none.
    #[serde(default, skip_serializing_if = "Fused::is_none")]
    pub fused: Fused,
    /// Gemma 2's soft-capping: `cap · tanh(x / cap)` on the final logits (`final_logit_softcapping`) and on
    /// eager attention scores (`attn_logit_softcapping`); autograd keeps each tanh's output
    /// (`models/gemma2/modeling_gemma2.py`). Absent from older JSON and links: none.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub softcap: bool,
    /// The model always builds its causal mask as a tensor and passes it to SDPA, even unpadded (Falcon on
    /// transformers ≥ 5: `create_causal_mask(..., allow_is_causal_skip=False)`, for ALiBi), with K/V at their
    /// own head count. Absent from older JSON and links: no.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub causal_mask_always: bool,
    /// The MLP activation's saved tensors ([`Activation`]). Absent from older JSON and links: fused.
    #[serde(default, skip_serializing_if = "Activation::is_fused")]
    pub activation: Activation,
    /// A hybrid stack: which layers hold attention, an MLP and a recurrent mixer (Mamba, Gated DeltaNet), and
    /// the mixer's shape ([`super::recurrent`]); `None` when every layer is attention + MLP. Absent from old
    /// links and JSON, which decode as `None`. Boxed: most shapes have none ([`Architecture::stack`] reads it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<Box<super::recurrent::Hybrid>>,
    /// A vision-language model's vision tower and projector (`vision_config`, [`super::vision`]); `None` for
    /// a text model. Not counted in [`Architecture::params`], which is the language model's. Absent from old
    /// links and JSON, which decode as `None`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vision: Option<super::vision::VisionTower>,
}

impl Default for Architecture {
    /// Llama-3.1-8B (meta-llama/Llama-3.1-8B config.json): a sensible, common default.
    fn default() -> Self {
        Architecture {
            layers: 32,
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            intermediate: 14336,
            vocab: 128_256,
            tied_embeddings: false,
            learned_positions: 0,
            attention: AttentionKind::Standard,
            mla: Mla::default(),
            sliding_window: 0,
            sliding_fraction: 0.0,
            mlp: MlpKind::Gated,
            moe: None,
            biases: Biases::None,
            norms_per_layer: 2,
            layer_norm: false,
            qk_norm: false,
            fused: Fused::default(),
            softcap: false,
            causal_mask_always: false,
            activation: Activation::Fused,
            hybrid: None,
            vision: None,
        }
    }
}

/// Parameter counts split the way memory needs them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParamCounts {
    /// Every parameter (embedding counted once when tied).
    pub total: f64,
    /// Weights of `nn.Linear` layers inside the decoder: what bitsandbytes/GPTQ/AWQ quantize.
    pub linear: f64,
    /// Embedding, LM head, position embeddings, norms and biases: kept in 16-bit by quantizers.
    pub non_linear: f64,
    /// Input embedding (and learned positions).
    pub embedding: f64,
    /// LM head when untied (0 when tied).
    pub lm_head: f64,
    /// One decoder layer, averaged over layers (dense and MoE layers differ).
    pub per_layer: f64,
    /// Parameters a token actually passes through (MoE: active experts only).
    pub active: f64,
    /// Largest single linear layer inside the decoder (weights): what a quantized matmul dequantizes at
    /// once. The LM head is left out: quantizers keep it in 16-bit.
    pub largest_linear: f64,
    /// Of [`Self::linear`], the weights of the routed experts of every MoE layer (`E` experts' gate, up and
    /// down projections; shared experts and routers are not in it): what MXFP4 checkpoints quantize
    /// (transformers `integrations/mxfp4.py`: `Mxfp4GptOssExperts` replaces the experts module only). 0 for
    /// a dense model. Absent from older JSON, which decodes as 0.
    #[serde(default)]
    pub expert_linear: f64,
}

impl Architecture {
    /// The hybrid stack, if any (a copy of [`Architecture::hybrid`]).
    pub fn stack(&self) -> Option<super::recurrent::Hybrid> {
        self.hybrid.as_deref().copied()
    }

    /// How many matrices one entry of [`Architecture::linear_modules`] stands for: every routed expert plus
    /// the shared one for an MoE layer's gate/up/down (their `d_in` there is summed over the copies), else 1.
    pub fn expert_copies(&self, m: crate::model::job::Module) -> f64 {
        use crate::model::job::Module;
        let copies = match (self.moe, m) {
            (Some(moe), Module::Gate | Module::Up | Module::Down) => {
                f64::from(moe.experts)
                    + if moe.shared_intermediate > 0 {
                        1.0
                    } else {
                        0.0
                    }
            }
            _ => 1.0,
        };
        copies * self.module_share(m)
    }

    /// Share of the layers that hold module `m`: 1 for a plain transformer; in a hybrid stack the attention
    /// modules sit in `attention_layers` and the MLP modules in `mlp_layers` of the layers
    /// ([`super::recurrent::layer_shares`]). Per-layer module widths ([`Architecture::linear_modules`]) and
    /// copies ([`Architecture::expert_copies`]) carry this factor, so counts `× layers` come out right.
    pub fn module_share(&self, m: crate::model::job::Module) -> f64 {
        use crate::model::job::Module;
        let (attention, mlp, _) = super::recurrent::layer_shares(self);
        match m {
            Module::Gate | Module::Up | Module::Down => mlp,
            Module::Q | Module::K | Module::V | Module::O => attention,
        }
    }

    /// Query projection width `heads · head_dim` (MLA: `heads · (nope + rope)`).
    pub fn q_width(&self) -> f64 {
        match self.attention {
            AttentionKind::Standard => f64::from(self.heads) * f64::from(self.head_dim),
            AttentionKind::Mla => {
                f64::from(self.heads)
                    * (f64::from(self.mla.qk_nope_head_dim) + f64::from(self.mla.qk_rope_head_dim))
            }
        }
    }

    /// Key (= value) projection width `kv_heads · head_dim`.
    pub fn kv_width(&self) -> f64 {
        f64::from(self.kv_heads) * f64::from(self.head_dim)
    }

    /// Attention weights of one layer.
    ///
    /// Standard: q `h·a·d`, k and v `h·k·d` each, o `a·d·h` (HF `LlamaAttention`).
    /// MLA: `q_a h·q_r + q_b q_r·a·(nope+rope)` (or `h·a·(nope+rope)`), `kv_a h·(kv_r + rope)`,
    /// `kv_b kv_r·a·(nope + v)`, `o a·v·h`, plus the latent norms (DeepSeek-V2 `DeepseekV2Attention`).
    fn attention_linear(&self) -> (f64, f64) {
        let h = f64::from(self.hidden);
        match self.attention {
            AttentionKind::Standard => {
                let q = self.q_width();
                let kv = self.kv_width();
                // Qwen3-Next's gated attention: `q_proj` is `h × 2·heads·head_dim`, queries and the sigmoid
                // output gate (`Qwen3NextAttention`).
                let q_out = if self.stack().is_some_and(|hy| hy.gated_attention) {
                    2.0 * q
                } else {
                    q
                };
                let total = h * q_out + 2.0 * h * kv + q * h;
                (total, h * q_out.max(kv))
            }
            AttentionKind::Mla => {
                let m = self.mla;
                let a = f64::from(self.heads);
                let (qr, kvr) = (f64::from(m.q_lora_rank), f64::from(m.kv_lora_rank));
                let (nope, rope, v) = (
                    f64::from(m.qk_nope_head_dim),
                    f64::from(m.qk_rope_head_dim),
                    f64::from(m.v_head_dim),
                );
                let q = if m.q_lora_rank > 0 {
                    h * qr + qr * a * (nope + rope)
                } else {
                    h * a * (nope + rope)
                };
                let kv = h * (kvr + rope) + kvr * a * (nope + v);
                let o = a * v * h;
                (q + kv + o, (kvr * a * (nope + v)).max(o))
            }
        }
    }

    /// Small per-layer attention extras: biases, q/k norms, MLA latent norms.
    fn attention_extras(&self) -> f64 {
        let d = f64::from(self.head_dim);
        let mut extra = 0.0;
        match self.biases {
            Biases::None => {}
            Biases::Qkv => extra += self.q_width() + 2.0 * self.kv_width(),
            Biases::All => extra += self.q_width() + 2.0 * self.kv_width() + f64::from(self.hidden),
        }
        if self.qk_norm {
            extra += 2.0 * d;
        }
        if self.attention == AttentionKind::Mla {
            extra += f64::from(self.mla.q_lora_rank) + f64::from(self.mla.kv_lora_rank);
        }
        extra
    }

    /// One MLP of width `i`: gated `3·h·i`, plain `2·h·i` (+ biases `i + h` when all layers have them).
    fn mlp_linear(&self, width: u32) -> f64 {
        let (h, i) = (f64::from(self.hidden), f64::from(width));
        match self.mlp {
            MlpKind::Gated => 3.0 * h * i,
            MlpKind::Plain => 2.0 * h * i,
        }
    }

    fn mlp_bias(&self, width: u32) -> f64 {
        if self.biases == Biases::All {
            f64::from(width) + f64::from(self.hidden)
        } else {
            0.0
        }
    }

    /// Parameter counts (see [`ParamCounts`]). All arithmetic in `f64`, so absurd shapes never overflow.
    ///
    /// MoE layers hold `E` routed experts of `moe_intermediate_size`, a router `h·E`, and shared experts;
    /// the first `dense_layers` keep a dense MLP (DeepSeek `first_k_dense_replace`).
    pub fn params(&self) -> ParamCounts {
        let h = f64::from(self.hidden);
        let layers = f64::from(self.layers);
        let vocab_h = f64::from(self.vocab) * h;
        let embedding = vocab_h + f64::from(self.learned_positions) * h;
        let lm_head = if self.tied_embeddings { 0.0 } else { vocab_h };

        let (attn, largest_attn) = self.attention_linear();
        let norm_params = if self.layer_norm { 2.0 * h } else { h };
        // A hybrid stack holds attention and MLP blocks in some layers only, and its recurrent mixer in
        // others (`recurrent::Hybrid`); `norms_per_layer` counts every layer's own norms.
        let (attn_share, _, _) = super::recurrent::layer_shares(self);
        let attn_layers = attn_share * layers;
        let mlp_layers = match self.stack() {
            Some(hy) => f64::from(hy.mlp_layers.min(self.layers)),
            None => layers,
        };
        let (mixer, mixer_layers) = match self.stack() {
            Some(hy) => (
                hy.mixer_params(h),
                f64::from(hy.recurrent_layers.min(self.layers)),
            ),
            None => (super::recurrent::MixerParams::default(), 0.0),
        };
        let per_layer_small =
            self.attention_extras() * attn_share + f64::from(self.norms_per_layer) * norm_params;

        let (mlp_linear_all, mlp_active_all, mlp_small_all, largest_mlp, expert_linear) =
            match self.moe {
                None => {
                    let l = self.mlp_linear(self.intermediate);
                    (
                        l * mlp_layers,
                        l * mlp_layers,
                        self.mlp_bias(self.intermediate) * mlp_layers,
                        if mlp_layers > 0.0 {
                            h * f64::from(self.intermediate)
                        } else {
                            0.0
                        },
                        0.0,
                    )
                }
                Some(moe) => {
                    let dense = f64::from(moe.dense_layers.min(self.layers)).min(mlp_layers);
                    let sparse = mlp_layers - dense;
                    let expert = self.mlp_linear(moe.expert_intermediate);
                    let shared = self.mlp_linear(moe.shared_intermediate);
                    let dense_mlp = self.mlp_linear(self.intermediate);
                    let router = h * f64::from(moe.experts);
                    let shared_gate = if self.shared_expert_gate() { h } else { 0.0 };
                    let linear =
                        dense * dense_mlp + sparse * (f64::from(moe.experts) * expert + shared);
                    let active = dense * dense_mlp
                        + sparse * (f64::from(moe.active.min(moe.experts)) * expert + shared);
                    let largest =
                        h * f64::from(moe.expert_intermediate.max(moe.shared_intermediate).max(
                            if moe.dense_layers > 0 {
                                self.intermediate
                            } else {
                                0
                            },
                        ));
                    let routed = sparse * f64::from(moe.experts) * expert;
                    (
                        linear,
                        active,
                        sparse * (router + shared_gate),
                        largest,
                        routed,
                    )
                }
            };

        let mixer_linear = mixer.linear * mixer_layers;
        let mixer_small = mixer.small * mixer_layers;
        let linear = attn * attn_layers + mlp_linear_all + mixer_linear;
        let small = per_layer_small * layers + mlp_small_all + mixer_small + norm_params;
        let non_linear = embedding + lm_head + small;
        let total = linear + non_linear;
        let active = attn * attn_layers + mlp_active_all + mixer_linear + non_linear;
        let largest_linear = if attn_layers > 0.0 { largest_attn } else { 0.0 }
            .max(largest_mlp)
            .max(mixer.largest);
        ParamCounts {
            total,
            linear,
            non_linear,
            embedding,
            lm_head,
            per_layer: if layers > 0.0 {
                (linear + per_layer_small * layers + mlp_small_all + mixer_small) / layers
            } else {
                0.0
            },
            active,
            largest_linear,
            expert_linear,
        }
    }

    /// The attention block's input projections of one layer that holds attention, `(module, d_in, d_out)`
    /// (no hybrid share): q, k and v, one module whose entry is Q's under [`Fused::qkv`] (the others then
    /// have no input); Qwen3-Next's gated attention doubles q's output (queries and their gate). MLA's query
    /// and KV paths are two matrices each (DeepSeek-V2 `DeepseekV2Attention`, the names PEFT targets): Q is
    /// `q_a_proj` (h → q_rank) then `q_b_proj` (q_rank → heads·(nope + rope)), or one `q_proj` without a query
    /// latent; K is `kv_a_proj_with_mqa` (h → kv_rank + rope); V is `kv_b_proj` (kv_rank → heads·(nope + v)).
    /// The fourth entry is `q_b_proj`, zero-width elsewhere.
    pub fn attention_projections(&self) -> [(crate::model::job::Module, f64, f64); 4] {
        use crate::model::job::Module;
        let h = f64::from(self.hidden);
        let q = self.q_width();
        match self.attention {
            AttentionKind::Standard => {
                let kv = self.kv_width();
                let q_out = if self.stack().is_some_and(|hy| hy.gated_attention) {
                    2.0 * q
                } else {
                    q
                };
                if self.fused.qkv {
                    [
                        (Module::Q, h, q_out + 2.0 * kv),
                        (Module::K, 0.0, kv),
                        (Module::V, 0.0, kv),
                        (Module::Q, 0.0, 0.0),
                    ]
                } else {
                    [
                        (Module::Q, h, q_out),
                        (Module::K, h, kv),
                        (Module::V, h, kv),
                        (Module::Q, 0.0, 0.0),
                    ]
                }
            }
            AttentionKind::Mla => {
                let mla = self.mla;
                let q_rank = f64::from(mla.q_lora_rank);
                let kv_a = (
                    Module::K,
                    h,
                    f64::from(mla.kv_lora_rank) + f64::from(mla.qk_rope_head_dim),
                );
                let kv_b = (
                    Module::V,
                    f64::from(mla.kv_lora_rank),
                    f64::from(self.heads) * f64::from(mla.qk_nope_head_dim + mla.v_head_dim),
                );
                if q_rank > 0.0 {
                    [(Module::Q, h, q_rank), kv_a, kv_b, (Module::Q, q_rank, q)]
                } else {
                    [(Module::Q, h, q), kv_a, kv_b, (Module::Q, 0.0, 0.0)]
                }
            }
        }
    }

    /// The adaptable linear modules of a layer, `(module, d_in, d_out)`, for LoRA counts and projections:
    /// the attention projections ([`Architecture::attention_projections`], the last entry MLA's `q_b_proj`),
    /// o, and the MLP's gate, up and down. MoE: the MLP modules are those of the experts a layer holds
    /// (every expert is adapted). A fused gate/up ([`Fused::gate_up`]) is Up's entry with both outputs.
    pub fn linear_modules(&self) -> [(crate::model::job::Module, f64, f64); 8] {
        use crate::model::job::Module;
        let h = f64::from(self.hidden);
        let o_in = match self.attention {
            AttentionKind::Standard => self.q_width(),
            AttentionKind::Mla => f64::from(self.heads) * f64::from(self.mla.v_head_dim),
        };
        let (i, copies) = match self.moe {
            None => (f64::from(self.intermediate), 1.0),
            Some(m) => (
                f64::from(m.expert_intermediate),
                f64::from(m.experts) + if m.shared_intermediate > 0 { 1.0 } else { 0.0 },
            ),
        };
        let gate = if self.mlp == MlpKind::Gated {
            copies
        } else {
            0.0
        };
        // Hybrid stacks: the widths are averages over the layers, each module weighted by the share of layers
        // that hold it (`module_share`, the same factor `expert_copies` carries).
        let (a, m, _) = super::recurrent::layer_shares(self);
        let (gate_in, up_out) = if self.fused.gate_up && self.mlp == MlpKind::Gated {
            (0.0, 2.0 * i)
        } else {
            (h * gate * m, i)
        };
        let [q, k, v, q_b] = self
            .attention_projections()
            .map(|(m, d_in, d_out)| (m, d_in * a, d_out));
        [
            q,
            k,
            v,
            (Module::O, o_in * a, h),
            (Module::Gate, gate_in, i),
            (Module::Up, h * copies * m, up_out),
            (Module::Down, i * copies * m, h),
            q_b,
        ]
    }

    /// Whether the shared expert has its `h → 1` gate: Qwen2-MoE's (`Moe::shared_gate`); a hybrid stack says
    /// so itself (`recurrent::Hybrid::shared_expert_gate`: Qwen3-Next gates its shared expert, Granite-4.0-H
    /// and Nemotron-H do not).
    pub fn shared_expert_gate(&self) -> bool {
        match (self.moe, self.stack()) {
            (Some(m), _) if m.shared_intermediate == 0 => false,
            (Some(_), Some(hy)) => hy.shared_expert_gate,
            (Some(m), None) => m.shared_gate,
            (None, _) => false,
        }
    }

    /// Whether PEFT adapts module `m` when `targets` are named: a fused projection is adapted when any of
    /// the modules it stands for is targeted (its one name, `qkv_proj`, covers them all), and the modules
    /// inside it have no adapter of their own.
    pub fn adapts(
        &self,
        m: crate::model::job::Module,
        targets: &[crate::model::job::Module],
    ) -> bool {
        use crate::model::job::Module;
        let any = |ms: &[Module]| ms.iter().any(|x| targets.contains(x));
        match m {
            Module::Q if self.fused.qkv => any(&[Module::Q, Module::K, Module::V]),
            Module::K | Module::V if self.fused.qkv => false,
            Module::Up if self.fused.gate_up && self.mlp == MlpKind::Gated => {
                any(&[Module::Gate, Module::Up])
            }
            Module::Gate if self.fused.gate_up && self.mlp == MlpKind::Gated => false,
            _ => targets.contains(&m),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn assert_params(arch: &Architecture, expected: f64) {
        let got = arch.params().total;
        assert!(
            ((got - expected) / expected).abs() < 1e-9,
            "computed {got}, expected {expected}"
        );
    }

    #[test]
    fn llama_3_1_8b_matches_published_exact_count() {
        // 8,030,261,248: keras-hub llama3_8b_en preset 'params' (shared/data/models.json).
        assert_params(&Architecture::default(), 8_030_261_248.0);
    }

    #[test]
    fn gpt2_with_learned_positions_and_biases() {
        // 124,439,808: keras-hub gpt2_base_en preset.
        let gpt2 = Architecture {
            layers: 12,
            hidden: 768,
            heads: 12,
            kv_heads: 12,
            head_dim: 64,
            intermediate: 3072,
            vocab: 50257,
            tied_embeddings: true,
            learned_positions: 1024,
            mlp: MlpKind::Plain,
            biases: Biases::All,
            layer_norm: true,
            ..Architecture::default()
        };
        assert_params(&gpt2, 124_439_808.0);
    }

    #[test]
    fn hand_counted_tiny_model() {
        // h=4, 1 layer, 2 heads of 2, 1 KV head, i=8, vocab 10, untied:
        // embed 40 + head 40 + q 16 + k 8 + v 8 + o 16 + mlp 96 + norms 3·4 = 236.
        let tiny = Architecture {
            layers: 1,
            hidden: 4,
            heads: 2,
            kv_heads: 1,
            head_dim: 2,
            intermediate: 8,
            vocab: 10,
            ..Architecture::default()
        };
        assert_params(&tiny, 236.0);
        assert_eq!(tiny.params().linear, 16.0 + 8.0 + 8.0 + 16.0 + 96.0);
    }
}
