//! Hugging Face `config.json` → [`Architecture`]: raw JSON first, validated into a shape second.
//!
//! Families name the same fields differently: Llama/Mistral/Qwen2/3/Gemma/Phi use `hidden_size` etc.;
//! GPT-2/BigCode `n_embd`/`n_layer`/`n_head`/`n_inner`; Falcon `n_head_kv`/`multi_query`; ChatGLM
//! `num_layers`/`ffn_hidden_size`/`multi_query_group_num`/`padded_vocab_size`; Qwen1 `kv_channels` and an
//! `intermediate_size` twice the real MLP width; MoE fields of Mixtral/Qwen-MoE/DeepSeek/GLM-4.5/gpt-oss; Llama 4
//! `intermediate_size_mlp` and interleaved MoE layers; `layer_types` for the sliding-window share; multimodal models
//! nest the language model under `text_config`. Errors name the field; nothing here panics.

use crate::model::peft::Method;
use crate::model::{
    Activation, Architecture, AttentionKind, Biases, ExpertAdapters, Fused, Lora, Mla, MlpKind,
    Module, Moe, WeightFormat,
};
use serde_json::{Map, Value};
use std::fmt;

/// Largest config text accepted (a real config.json is a few KiB).
pub const MAX_CONFIG_BYTES: usize = 1 << 20;
/// Upper bound for any single dimension; beyond it the value is treated as malformed.
const MAX_DIM: u64 = 1 << 24;

/// Why a config could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportError {
    /// Not JSON (with serde_json's line/column message).
    NotJson(String),
    /// JSON, but not an object.
    NotObject,
    /// Larger than [`MAX_CONFIG_BYTES`].
    TooLarge(usize),
    /// A required field is absent (lists the names tried).
    Missing(&'static str),
    /// A field has the wrong type or an impossible value.
    Invalid { field: String, reason: String },
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::NotJson(e) => write!(f, "not valid JSON: {e}"),
            ImportError::NotObject => write!(f, "expected a JSON object {{ … }}"),
            ImportError::TooLarge(n) => write!(
                f,
                "{n} bytes is too large for a config.json (limit {MAX_CONFIG_BYTES})"
            ),
            ImportError::Missing(field) => write!(f, "missing field: {field}"),
            ImportError::Invalid { field, reason } => write!(f, "field {field}: {reason}"),
        }
    }
}

/// What an import found: the shape, plus hints for other form fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    pub arch: Architecture,
    /// `model_type`, when given.
    pub model_type: Option<String>,
    /// Weight format from a `quantization_config` block (the nearest one: see [`Quantization`]).
    pub weights: Option<WeightFormat>,
    /// The `quantization_config` block, when there is one.
    pub quantization: Option<Quantization>,
}

/// `max_position_embeddings` of a Hugging Face config (GPT-2: `n_positions`; top level or `text_config`),
/// within the token limits.
pub fn max_positions(config: &Value) -> Option<u32> {
    let read = |v: &Value| {
        v.get("max_position_embeddings")
            .or_else(|| v.get("n_positions"))
            .and_then(Value::as_u64)
    };
    read(config)
        .or_else(|| config.get("text_config").and_then(read))
        .filter(|n| (1..=u64::from(crate::model::limits::MAX_TOKENS)).contains(n))
        .map(|n| n as u32)
}

/// Parses config.json text.
pub fn parse_config_text(text: &str) -> Result<Imported, ImportError> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(ImportError::TooLarge(text.len()));
    }
    let text = crate::hub::python_json(text);
    let value: Value =
        serde_json::from_str(&text).map_err(|e| ImportError::NotJson(e.to_string()))?;
    parse_config(&value)
}

/// Reads a config object (already parsed).
pub fn parse_config(value: &Value) -> Result<Imported, ImportError> {
    let outer = value.as_object().ok_or(ImportError::NotObject)?;
    let obj = match outer.get("text_config").and_then(Value::as_object) {
        Some(inner)
            if inner.contains_key("hidden_size") || inner.contains_key("num_hidden_layers") =>
        {
            inner
        }
        _ => outer,
    };
    let r = Reader(obj);
    let model_type = r
        .str("model_type")
        .or_else(|| outer.get("model_type").and_then(Value::as_str))
        .map(str::to_string);
    let mt = model_type.as_deref().unwrap_or("");
    // Recurrent families that are not modelled are named, not read as transformers (`hybrid.rs`).
    super::hybrid::refuse(mt)?;

    let hidden = r.req(&["hidden_size", "n_embd", "d_model"], "hidden_size")?;
    let layers = r.req(
        &["num_hidden_layers", "n_layer", "num_layers"],
        "num_hidden_layers",
    )?;
    let heads = r.req(
        &["num_attention_heads", "n_head", "num_heads"],
        "num_attention_heads",
    )?;
    if heads == 0 {
        return Err(invalid("num_attention_heads", "must be at least 1"));
    }
    let vocab = r
        .opt(&["padded_vocab_size", "vocab_size"])?
        .ok_or(ImportError::Missing("vocab_size"))?;

    let multi_query = r.bool("multi_query").unwrap_or(false);
    let kv_heads = match r.opt(&[
        "num_key_value_heads",
        "n_head_kv",
        "multi_query_group_num",
        "num_kv_heads",
    ])? {
        Some(k) => k,
        None if multi_query => 1,
        None => heads,
    };
    let kv_heads = if mt == "chatglm" && !r.bool("multi_query_attention").unwrap_or(true) {
        heads
    } else {
        kv_heads
    };
    if kv_heads == 0 || kv_heads > heads {
        return Err(invalid(
            "num_key_value_heads",
            &format!("{kv_heads} must be between 1 and num_attention_heads ({heads})"),
        ));
    }
    let head_dim = match r.opt(&["head_dim", "kv_channels"])? {
        Some(d) if d > 0 => d,
        _ => hidden / heads,
    };

    let gpt2_like = matches!(
        mt,
        "gpt2"
            | "gpt_bigcode"
            | "gpt_neox"
            | "falcon"
            | "RefinedWeb"
            | "RefinedWebModel"
            | "phi"
            | "gptj"
            | "bloom"
            | "opt"
            | "starcoder2"
            | "bert"
    );
    let mut intermediate = r
        .opt(&["_ffn_dim"])?
        .or(r.opt(&["intermediate_size", "ffn_hidden_size", "n_inner", "ffn_dim"])?)
        .unwrap_or(4 * hidden);
    // Qwen(1) configs state twice the real width (w1 and w2 each take intermediate_size / 2).
    if mt == "qwen" && !obj.contains_key("_ffn_dim") {
        intermediate /= 2;
    }
    // Llama 4: experts and the shared expert use `intermediate_size`, dense layers `intermediate_size_mlp`
    // (see `llama4_dense_layers`).
    let llama4 = matches!(mt, "llama4_text" | "llama4");
    let llama4_expert_width = if llama4 {
        let expert = intermediate;
        if let Some(dense) = r.opt(&["intermediate_size_mlp"])? {
            intermediate = dense;
        }
        Some(expert)
    } else {
        None
    };
    // Families whose MLP is up → activation → down with no gate: Apertus (`ApertusMLP`, xIELU), Arcee
    // (`ArceeMLP`, relu²), Nemotron (relu²), StarCoder2, and the GPT-2-like ones.
    let mlp = match r.str("_mlp") {
        Some("plain") => MlpKind::Plain,
        Some("gated") => MlpKind::Gated,
        _ if gpt2_like => MlpKind::Plain,
        _ if matches!(mt, "apertus" | "arcee" | "nemotron" | "starcoder2") => MlpKind::Plain,
        _ => MlpKind::Gated,
    };

    let tied_default = !matches!(
        mt,
        "llama"
            | "mistral"
            | "mixtral"
            | "qwen"
            | "chatglm"
            | "baichuan"
            | "internlm2"
            | "internlm"
            | "olmo2"
            | "olmo3"
            | "phi3"
            | "deepseek_v2"
            | "deepseek_v3"
            // tie_word_embeddings defaults to False in transformers DeepseekV3Config (Kimi-K2 ships that
            // config class), Glm4MoeConfig, GptOssConfig, Llama4TextConfig and MiniMaxM2Config.
            | "kimi_k2"
            | "glm4_moe"
            | "gpt_oss"
            | "llama4"
            | "llama4_text"
            | "minimax_m2"
            | "yi"
            | "granite"
            | "minicpm"
            // Hybrid stacks: `tie_word_embeddings` defaults to False in Qwen3NextConfig, NemotronHConfig,
            // GraniteMoeHybridConfig, BambaConfig, JambaConfig and FalconH1Config.
            | "qwen3_next"
            | "nemotron_h"
            | "granitemoehybrid"
            | "bamba"
            | "jamba"
            | "falcon_h1"
    );
    let tied_embeddings = r.bool("tie_word_embeddings").unwrap_or(tied_default);

    let biases = if matches!(
        mt,
        "gpt2"
            | "gpt_bigcode"
            | "gpt_neox"
            | "phi"
            | "bert"
            | "gptj"
            | "opt"
            | "bloom"
            | "starcoder2"
    ) {
        Biases::All
    } else if r.bool("_attention_qkv_bias").unwrap_or(false)
        || r.bool("attention_bias").unwrap_or(false)
        || r.bool("add_qkv_bias").unwrap_or(false)
        || matches!(mt, "qwen2" | "qwen2_moe" | "qwen")
        // Qwen2-VL / Qwen2.5-VL text models: `q_proj`/`k_proj`/`v_proj` with `bias=True`
        // (`modeling_qwen2_5_vl.py` `Qwen2_5_VLAttention`).
        || matches!(mt, "qwen2_vl" | "qwen2_vl_text" | "qwen2_5_vl" | "qwen2_5_vl_text")
    {
        Biases::Qkv
    } else {
        Biases::None
    };
    let biases = if mt == "falcon" && !r.bool("bias").unwrap_or(false) {
        Biases::None
    } else {
        biases
    };

    let learned_positions = if matches!(mt, "gpt2" | "gpt_bigcode" | "opt" | "bert") {
        r.opt(&["n_positions", "max_position_embeddings"])?
            .unwrap_or(0)
    } else {
        0
    };
    let layer_norm = gpt2_like || matches!(mt, "starcoder2");
    let norms_per_layer = match mt {
        "gemma2" | "gemma3" | "gemma3_text" | "olmo2" | "olmo3" => 4,
        "falcon"
            if r.bool("parallel_attn").unwrap_or(true)
                && !r.bool("new_decoder_architecture").unwrap_or(false) =>
        {
            1
        }
        "phi" | "gptj" => 1,
        _ => 2,
    };
    // Qwen3-VL's text model has Qwen3's q/k norms (`modeling_qwen3_vl.py` `Qwen3VLTextAttention`).
    let qk_norm = matches!(
        mt,
        "qwen3" | "qwen3_moe" | "gemma3" | "gemma3_text" | "qwen3_vl" | "qwen3_vl_text"
    ) || (qk_norm_by_flag(mt) && r.bool("use_qk_norm").unwrap_or(false))
        // Apertus: `qk_norm` builds per-head `q_norm`/`k_norm` (`modeling_apertus.py`).
        || (mt == "apertus" && r.bool("qk_norm").unwrap_or(false));

    // Mixture of experts.
    let experts = r
        .opt(&["num_local_experts", "num_experts", "n_routed_experts"])?
        .unwrap_or(0);
    let moe = if experts > 1 {
        // XVERSE-MoE names its top-k `moe_top_k` (`configuration_xverse.py`).
        let active = r
            .opt(&["num_experts_per_tok", "moe_topk", "moe_top_k"])?
            .unwrap_or(2);
        let expert_intermediate = match llama4_expert_width {
            Some(w) => w,
            None => r.opt(&["moe_intermediate_size"])?.unwrap_or(intermediate),
        };
        let shared = match r.opt(&["shared_expert_intermediate_size"])? {
            Some(s) => s,
            None if llama4 => expert_intermediate,
            // XVERSE-MoE: `num_shared_experts` experts of the routed width (64 routed + 2 shared of 1728 in
            // XVERSE-MoE-A4.2B, whose README states 25.8 B parameters: that sum, 25.78 B).
            None => {
                r.opt(&["n_shared_experts", "num_shared_experts"])?
                    .unwrap_or(0)
                    * expert_intermediate
            }
        };
        let dense_layers = if llama4 {
            llama4_dense_layers(obj, layers)
        } else {
            r.opt(&["first_k_dense_replace"])?.unwrap_or(0)
        };
        Some(Moe {
            experts,
            active: active.clamp(1, experts),
            expert_intermediate,
            shared_intermediate: shared,
            dense_layers: dense_layers.min(layers),
            // `models/qwen2_moe/modeling_qwen2_moe.py`: `shared_expert_gate = nn.Linear(hidden, 1)`.
            shared_gate: mt == "qwen2_moe" && shared > 0,
            peft: match mt {
                "qwen2_moe" => ExpertAdapters::UntilV5,
                "gpt_oss" => ExpertAdapters::Never,
                _ => ExpertAdapters::Merged,
            },
        })
    } else {
        None
    };

    let (attention, mla) = match r.opt(&["kv_lora_rank"])? {
        Some(kv_lora_rank) if kv_lora_rank > 0 => (
            AttentionKind::Mla,
            Mla {
                q_lora_rank: r.opt(&["q_lora_rank"])?.unwrap_or(0),
                kv_lora_rank,
                qk_nope_head_dim: r.opt(&["qk_nope_head_dim"])?.unwrap_or(128),
                qk_rope_head_dim: r.opt(&["qk_rope_head_dim"])?.unwrap_or(64),
                v_head_dim: r.opt(&["v_head_dim"])?.unwrap_or(128),
            },
        ),
        _ => (AttentionKind::Standard, Mla::default()),
    };

    let sliding_window = if r.bool("use_sliding_window") == Some(false) {
        0
    } else if llama4 {
        // Chunked layers cache at most the chunk (see `llama4_chunked_share`).
        r.opt(&["attention_chunk_size"])?.unwrap_or(0)
    } else {
        r.opt(&["sliding_window"])?.unwrap_or(0)
    };
    let sliding_fraction = match (sliding_window, layer_type_share(obj)) {
        (0, _) => 0.0,
        (_, Some(share)) => share,
        _ => default_window_share(mt, obj, layers),
    };

    let mut arch = Architecture {
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim,
        intermediate,
        vocab,
        tied_embeddings,
        learned_positions,
        attention,
        mla,
        sliding_window,
        sliding_fraction,
        mlp,
        moe,
        biases,
        norms_per_layer,
        layer_norm,
        qk_norm,
        fused: fused_projections(mt),
        // `models/falcon/modeling_falcon.py` (transformers 5).
        causal_mask_always: mt == "falcon",
        // `Gemma2Config` defaults both caps on (30.0 and 50.0); a config may switch them off with null.
        softcap: match obj.get("final_logit_softcapping") {
            Some(v) => v.as_f64().is_some_and(|c| c > 0.0),
            None => mt == "gemma2",
        },
        activation: activation(
            mt,
            r.str("hidden_act").or_else(|| r.str("activation_function")),
        ),
        hybrid: None,
        // A vision-language model's tower (`vision_import.rs`), read from the whole config.
        vision: super::vision_import::parse_vision(outer, hidden)?,
    };
    // Hybrid stacks (Mamba / Gated DeltaNet layers): which layers hold what (`hybrid.rs`).
    super::hybrid::apply(mt, obj, &mut arch)?;
    // The same limits as every other entry point (a shape can pass each field's check and still be
    // impossible, e.g. more KV heads than heads).
    arch.check().map_err(|e| {
        let (field, reason) = e.split_once(": ").unwrap_or(("config", e.as_str()));
        invalid(field, reason)
    })?;
    // Multimodal configs may keep it beside the language model (Kimi-K2.5: `text_config.quantization_config`).
    let quantization = [outer, obj]
        .iter()
        .find_map(|o| o.get("quantization_config").and_then(Value::as_object))
        .map(quantization);
    Ok(Imported {
        arch,
        model_type,
        weights: quantization.as_ref().and_then(|q| q.format),
        quantization,
    })
}

/// The MLP activation named by `hidden_act` / `activation_function`, else the family's config default:
/// `gelu_new` for `phi` (`PhiConfig`), `gpt2` (`GPT2Config`), `gptj`, `codegen` and `gpt_neo`; `xielu` for
/// `apertus` (`ApertusConfig`). `relu2` (Arcee, Nemotron) keeps one tensor, as a fused activation does.
fn activation(model_type: &str, named: Option<&str>) -> Activation {
    let named = named.unwrap_or(match model_type {
        "phi" | "gpt2" | "gptj" | "codegen" | "gpt_neo" => "gelu_new",
        "apertus" => "xielu",
        _ => "",
    });
    match named {
        "gelu_new" => Activation::GeluNew,
        "xielu" => Activation::Xielu,
        _ => Activation::Fused,
    }
}

/// The projections each family fuses, from its transformers modeling file (or the remote code it ships):
/// `qkv_proj` + `gate_up_proj` (`phi3`, Phi-3/3.5/4), `query_key_value` + `dense_h_to_4h` producing gate and up
/// (`chatglm`, ChatGLM2/3, GLM-4-9B), and attention alone: `c_attn` (`gpt2`, `gpt_bigcode`, `qwen`),
/// `query_key_value` (`falcon`, `gpt_neox`, `bloom`, `persimmon`), `W_pack` (`baichuan`), `wqkv` (`internlm2`),
/// `Wqkv` (`dbrx`, `mpt`), `qkv_proj` (`codegen`).
fn fused_projections(model_type: &str) -> Fused {
    match model_type {
        "phi3" | "chatglm" => Fused {
            qkv: true,
            gate_up: true,
        },
        "gpt2" | "gpt_bigcode" | "qwen" | "falcon" | "gpt_neox" | "bloom" | "persimmon"
        | "baichuan" | "internlm2" | "dbrx" | "mpt" | "codegen" => Fused {
            qkv: true,
            gate_up: false,
        },
        _ => Fused::default(),
    }
}

/// Families whose q/k RMSNorms are switched by `use_qk_norm`: GLM-4.5 (transformers
/// `models/glm4_moe/configuration_glm4_moe.py` `use_qk_norm`; `modeling_glm4_moe.py` `Glm4MoeAttention` builds
/// `q_norm`/`k_norm` of `head_dim` when it is set) and MiniMax-M2 (`models/minimax_m2/configuration_minimax_m2.py`;
/// it normalises the whole q and k projections, `qk_norm_type` "per_layer", 56·128 weights a layer where this
/// counts 2·128: 0.0002% of the model). Llama 4's `use_qk_norm` is a weightless L2 norm (`Llama4TextL2Norm`) and
/// is not listed. Hunyuan (transformers `models/hunyuan_v1_dense/modeling_hunyuan_v1_dense.py`,
/// `hunyuan_v1_moe`): `query_layernorm`/`key_layernorm` of `head_dim` when `use_qk_norm` is set; Hunyuan-0.5B's
/// 539,010,048 published parameters include their 24 · 2 · 128.
fn qk_norm_by_flag(model_type: &str) -> bool {
    matches!(
        model_type,
        "glm4_moe" | "minimax_m2" | "hunyuan_v1_dense" | "hunyuan_v1_moe"
    )
}

/// Share of layers on the sliding window when the config has no `layer_types` list: Gemma 2 alternates (1/2),
/// Gemma 3 has five local layers per global one (5/6); gpt-oss alternates sliding (window 128) and full attention
/// (transformers `models/gpt_oss/configuration_gpt_oss.py`: `layer_types` defaults to "sliding_attention" on even
/// layers, "full_attention" on odd ones); Llama 4 see [`llama4_chunked_share`]; otherwise every layer.
fn default_window_share(model_type: &str, obj: &Map<String, Value>, layers: u32) -> f64 {
    match model_type {
        "gemma2" | "gpt_oss" => 0.5,
        "gemma3" | "gemma3_text" => 5.0 / 6.0,
        "llama4" | "llama4_text" => llama4_chunked_share(obj, layers),
        _ => 1.0,
    }
}

/// Share of layers whose `layer_types` entry is windowed ("sliding_attention", or Llama 4's
/// "chunked_attention"), when the config lists `layer_types` (recent transformers configs: Gemma 2/3, gpt-oss,
/// Qwen2/3, Llama 4).
fn layer_type_share(obj: &Map<String, Value>) -> Option<f64> {
    let types = obj.get("layer_types")?.as_array()?;
    if types.is_empty() {
        return None;
    }
    let windowed = types
        .iter()
        .filter(|t| matches!(t.as_str(), Some("sliding_attention" | "chunked_attention")))
        .count();
    Some(windowed as f64 / types.len() as f64)
}

/// Llama 4 layers without a MoE block: `moe_layers` when listed, else every `interleave_moe_layer_step`-th layer
/// is MoE (`range(step - 1, num_hidden_layers, step)`, transformers `models/llama4/configuration_llama4.py`
/// `Llama4TextConfig.__post_init__`). Dense layers use `intermediate_size_mlp`; a MoE layer holds
/// `num_local_experts` experts and one shared expert, both of `intermediate_size` (`modeling_llama4.py`
/// `Llama4TextMoe`). The count is what matters for memory; the dense layers are interleaved, not leading.
fn llama4_dense_layers(obj: &Map<String, Value>, layers: u32) -> u32 {
    let moe = match obj.get("moe_layers").and_then(Value::as_array) {
        Some(list) => list.len() as u32,
        None => {
            let step = obj
                .get("interleave_moe_layer_step")
                .and_then(Value::as_u64)
                .unwrap_or(1)
                .clamp(1, u64::from(layers.max(1))) as u32;
            layers / step
        }
    };
    layers.saturating_sub(moe)
}

/// Llama 4 share of chunked-attention layers: the RoPE layers, marked 1 in `no_rope_layers`, else all but every
/// `no_rope_layer_interval`-th layer (transformers `models/llama4/configuration_llama4.py` `__post_init__`:
/// `layer_types` "chunked_attention" for RoPE layers). A chunked layer attends within its
/// `attention_chunk_size`-token chunk and transformers caches it like a sliding-window layer, so the chunk is
/// treated as the window.
fn llama4_chunked_share(obj: &Map<String, Value>, layers: u32) -> f64 {
    if let Some(list) = obj
        .get("no_rope_layers")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
    {
        let rope = list.iter().filter(|v| v.as_u64() == Some(1)).count();
        return rope as f64 / list.len() as f64;
    }
    let interval = obj
        .get("no_rope_layer_interval")
        .and_then(Value::as_u64)
        .unwrap_or(4)
        .max(1);
    let layers = u64::from(layers.max(1));
    let nope = layers / interval;
    (layers - nope) as f64 / layers as f64
}

/// What a `quantization_config` block says, and how closely a [`WeightFormat`] models it.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantization {
    /// `quant_method` as written (`bitsandbytes`, `gptq`, `awq`, `fp8`, `mxfp4`, `compressed-tensors`, …).
    pub method: String,
    /// The nearest format the model knows; `None` when none is near (the weights keep the form's format).
    pub format: Option<WeightFormat>,
    /// `format` only approximates the stored layout: its bytes per weight differ by more than about 1%, or
    /// it quantizes other layers than the checkpoint does.
    pub approximate: bool,
}

/// Reads a `quantization_config` block (transformers `utils/quantization_config.py`: `BitsAndBytesConfig`,
/// `GPTQConfig`, `AwqConfig`, `FineGrainedFP8Config`, `FbgemmFp8Config`, `Mxfp4Config`,
/// `CompressedTensorsConfig`, and NVIDIA ModelOpt's `quant_algo`):
/// - bitsandbytes 4-bit NF4/FP4 (± double quantization) and LLM.int8(): modelled exactly;
/// - GPTQ/AWQ: modelled at 4 or 8 bits with group size 128; other widths or groups are approximated;
/// - FP8 (block-wise or per-row scales): 1 B per weight, the scales are < 0.1%;
/// - MXFP4 (gpt-oss, `Mxfp4Config`): 4-bit E2M1 values with one 8-bit E8M0 scale per 32, 4.25 bits, on the
///   routed experts only: modelled exactly ([`WeightFormat::Mxfp4`]);
/// - compressed-tensors: from its first weight group's `num_bits`/`type`/`group_size` (int4 → GPTQ int4,
///   exact at group 128; 4-bit float (NVFP4: an 8-bit scale per 16, 4.5 bits) → FP4; 8-bit float → FP8;
///   8-bit int → int8);
/// - ModelOpt `quant_algo` FP8 → FP8, NVFP4 → FP4, and W4A16 AWQ → AWQ int4; a mixed recipe is approximated.
///
/// Anything else (HQQ, AQLM, EETQ, quanto, torchao, BitNet, …) has no near format.
fn quantization(q: &Map<String, Value>) -> Quantization {
    let method = q
        .get("quant_method")
        .and_then(Value::as_str)
        .unwrap_or("bitsandbytes")
        .to_ascii_lowercase();
    let num = |v: Option<&Value>, default: i64| v.and_then(Value::as_i64).unwrap_or(default);
    let bits = num(q.get("bits"), 4);
    let group = num(q.get("group_size"), 128);
    let flag = |k: &str| {
        [k.to_string(), format!("_{k}")]
            .iter()
            .any(|k| q.get(k).and_then(Value::as_bool).unwrap_or(false))
    };
    use WeightFormat::*;
    let (format, approximate) = match method.as_str() {
        "gptq" if bits == 8 => (Some(GptqInt8), group != 128),
        "gptq" => (Some(GptqInt4), bits != 4 || group != 128),
        "awq" => (Some(AwqInt4), bits != 4 || group != 128),
        "fp8" | "fbgemm_fp8" => (Some(Fp8), false),
        "mxfp4" => (Some(Mxfp4), false),
        "compressed-tensors" => compressed_tensors(q),
        "modelopt" => {
            let algo = q
                .get("quant_algo")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_ascii_uppercase();
            match algo.as_str() {
                "FP8" => (Some(Fp8), false),
                "NVFP4" => (Some(Fp4), false),
                "W4A16_AWQ" => (Some(AwqInt4), false),
                "MIXED_PRECISION" => (Some(Fp4), true),
                _ => (None, true),
            }
        }
        _ if flag("load_in_4bit") => {
            let fp4 = q.get("bnb_4bit_quant_type").and_then(Value::as_str) == Some("fp4");
            let f = if fp4 {
                Fp4
            } else if flag("bnb_4bit_use_double_quant") {
                Nf4Dq
            } else {
                Nf4
            };
            (Some(f), false)
        }
        _ if flag("load_in_8bit") => (Some(Int8), false),
        _ => (None, true),
    };
    Quantization {
        method,
        format,
        approximate,
    }
}

/// compressed-tensors (llm-compressor): the first `config_groups` entry's `weights` scheme.
fn compressed_tensors(q: &Map<String, Value>) -> (Option<WeightFormat>, bool) {
    let Some(w) = q
        .get("config_groups")
        .and_then(Value::as_object)
        .and_then(|g| g.values().next())
        .and_then(|g| g.get("weights"))
    else {
        return (None, true);
    };
    let bits = w.get("num_bits").and_then(Value::as_i64).unwrap_or(0);
    let float = w.get("type").and_then(Value::as_str) == Some("float");
    let group = w.get("group_size").and_then(Value::as_i64);
    match (bits, float) {
        (4, false) => (Some(WeightFormat::GptqInt4), group != Some(128)),
        (4, true) => (Some(WeightFormat::Fp4), group != Some(16)),
        (8, true) => (Some(WeightFormat::Fp8), false),
        (8, false) => (Some(WeightFormat::Int8), false),
        _ => (None, true),
    }
}

fn invalid(field: &str, reason: &str) -> ImportError {
    ImportError::Invalid {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

/// The first present, non-null field of `obj` among `names` as a dimension (a whole number, 0 ≤ v ≤ 2^24):
/// the one reader of config dimensions, shared by the hybrid and vision importers.
pub(super) fn dim(obj: &Map<String, Value>, names: &[&str]) -> Result<Option<u32>, ImportError> {
    for name in names {
        match obj.get(*name) {
            None | Some(Value::Null) => continue,
            Some(v) => {
                let n = v
                    .as_u64()
                    .or_else(|| {
                        v.as_f64()
                            .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                            .map(|f| f as u64)
                    })
                    .ok_or_else(|| invalid(name, &format!("expected a whole number, got {v}")))?;
                if n > MAX_DIM {
                    return Err(invalid(name, &format!("{n} is implausibly large")));
                }
                return Ok(Some(n as u32));
            }
        }
    }
    Ok(None)
}

/// Typed, total access to a JSON object's fields.
struct Reader<'a>(&'a Map<String, Value>);

impl Reader<'_> {
    /// The first present, non-null field among `names`, as a dimension (0 ≤ v ≤ 2^24).
    fn opt(&self, names: &[&str]) -> Result<Option<u32>, ImportError> {
        dim(self.0, names)
    }

    fn req(&self, names: &[&str], label: &'static str) -> Result<u32, ImportError> {
        match self.opt(names)? {
            Some(0) => Err(invalid(label, "must be at least 1")),
            Some(v) => Ok(v),
            None => Err(ImportError::Missing(label)),
        }
    }

    fn bool(&self, name: &str) -> Option<bool> {
        self.0.get(name).and_then(Value::as_bool)
    }

    fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }
}

/// LoRA settings read from a PEFT `adapter_config.json`.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterSettings {
    /// `r`, `target_modules` (mapped to the seven module kinds), `modules_to_save` (embedding, LM head),
    /// `use_dora` and `lora_dropout > 0`.
    pub lora: Lora,
    /// Target names that map to no known module (reported, not fatal).
    pub unknown_targets: Vec<String>,
}

/// Either kind of file a user may paste.
#[derive(Clone, Debug, PartialEq)]
pub enum ImportedFile {
    /// A model `config.json`.
    Model(Imported),
    /// A PEFT `adapter_config.json`.
    Adapter(AdapterSettings),
}

/// Parses pasted or dropped text as a PEFT adapter config (it has `peft_type` or `target_modules`) or else
/// as a model config.
pub fn parse_any_text(text: &str) -> Result<ImportedFile, ImportError> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(ImportError::TooLarge(text.len()));
    }
    let text = crate::hub::python_json(text);
    let value: Value =
        serde_json::from_str(&text).map_err(|e| ImportError::NotJson(e.to_string()))?;
    let obj = value.as_object().ok_or(ImportError::NotObject)?;
    if obj.contains_key("peft_type") || obj.contains_key("target_modules") {
        parse_adapter_config(&value).map(ImportedFile::Adapter)
    } else {
        parse_config(&value).map(ImportedFile::Model)
    }
}

/// Module kinds a PEFT target name stands for, across families: Llama `q_proj`…`down_proj`, GPT-2/Qwen1
/// `c_attn` (fused q,k,v), ChatGLM/Falcon/NeoX `query_key_value` and `dense_h_to_4h`/`dense_4h_to_h`,
/// Qwen1 `w1`/`w2`, Mixtral experts `w1`/`w3`/`w2`, Phi `fc1`/`fc2`.
fn modules_for(name: &str) -> &'static [Module] {
    use Module::*;
    // PEFT matches a target against the end of the module path: compare the last component.
    match name.rsplit('.').next().unwrap_or(name) {
        "q_proj" | "q" | "query" | "wq" => &[Q],
        "k_proj" | "k" | "key" | "wk" => &[K],
        "v_proj" | "v" | "value" | "wv" => &[V],
        "o_proj" | "o" | "out_proj" | "dense" | "wo" => &[O],
        "c_attn" | "query_key_value" | "qkv_proj" | "W_pack" | "wqkv" => &[Q, K, V],
        "gate_proj" | "w1" => &[Gate],
        "up_proj" | "w3" | "fc1" | "c_fc" => &[Up],
        "down_proj" | "w2" | "fc2" | "dense_4h_to_h" | "c_proj" => &[Down],
        "gate_up_proj" | "dense_h_to_4h" => &[Gate, Up],
        _ => &[],
    }
}

/// The PEFT method an `adapter_config.json` names (`peft_type`, PEFT `utils/peft_types.py` `PeftType`); no
/// `peft_type` means LoRA (older files).
fn peft_method(obj: &Map<String, Value>) -> Result<Method, ImportError> {
    let name = obj
        .get("peft_type")
        .and_then(Value::as_str)
        .unwrap_or("LORA");
    Ok(match name.to_ascii_uppercase().as_str() {
        "LORA" => Method::Lora,
        "ADALORA" => Method::AdaLora,
        "VERA" => Method::Vera,
        "IA3" => Method::Ia3,
        "LOHA" => Method::Loha,
        "LOKR" => Method::Lokr,
        "OFT" => Method::Oft,
        "BOFT" => Method::Boft,
        "PROMPT_TUNING" => Method::PromptTuning,
        "PREFIX_TUNING" => Method::PrefixTuning,
        "P_TUNING" => Method::PTuning,
        "TRAINABLE_TOKENS" => Method::TrainableTokens,
        other => {
            return Err(invalid(
                "peft_type",
                &format!("{other} is not modelled (LoRA, AdaLoRA, VeRA, IA3, LoHa, LoKr, OFT, BOFT, trainable tokens and the prompt methods are)"),
            ))
        }
    })
}

/// Reads a PEFT `adapter_config.json`: `LoraConfig` and the other methods' configs (`r`, AdaLoRA `init_r`,
/// OFT `oft_block_size`, prompt methods' `num_virtual_tokens` and `encoder_hidden_size`, trainable tokens'
/// `token_indices`). A LoRA config's `trainable_token_indices` (a trainable-tokens delta beside the
/// adapter, a list or a map of embedding layer → list) sets [`Lora::with_tokens`] and the count.
pub fn parse_adapter_config(value: &Value) -> Result<AdapterSettings, ImportError> {
    let obj = value.as_object().ok_or(ImportError::NotObject)?;
    let r = Reader(obj);
    let method = peft_method(obj)?;
    if method == Method::TrainableTokens {
        return Ok(AdapterSettings {
            lora: Lora {
                method,
                trainable_tokens: token_count(obj, "token_indices")?,
                dropout: false,
                ..Lora::default()
            },
            unknown_targets: Vec::new(),
        });
    }
    if method.is_prompt() {
        let lora = Lora {
            method,
            virtual_tokens: r.req(&["num_virtual_tokens"], "num_virtual_tokens")?,
            encoder_hidden: r
                .opt(&["encoder_hidden_size"])?
                .unwrap_or(Lora::default().encoder_hidden),
            dropout: false,
            ..Lora::default()
        };
        return Ok(AdapterSettings {
            lora,
            unknown_targets: Vec::new(),
        });
    }
    let rank = match method {
        Method::AdaLora => r.req(&["init_r", "r"], "init_r")?,
        Method::Oft => r.opt(&["oft_block_size"])?.filter(|b| *b > 0).unwrap_or(32),
        // BOFT by block size (a config giving `boft_block_num` instead sizes the blocks per module, which is
        // not modelled: it is reported).
        Method::Boft => match r.opt(&["boft_block_size"])?.filter(|b| *b > 0) {
            Some(b) => b,
            None => {
                return Err(invalid(
                    "boft_block_size",
                    "BOFT is modelled by its block size; this config gives none (boft_block_num sizes blocks per module)",
                ))
            }
        },
        Method::Ia3 => 1,
        _ => r.req(&["r"], "r")?,
    };
    let mut targets: Vec<Module> = Vec::new();
    let mut unknown_targets = Vec::new();
    match obj.get("target_modules") {
        Some(Value::String(s)) if s == "all-linear" => targets = Module::ALL.to_vec(),
        // A regex string: take every module kind whose name it mentions.
        Some(Value::String(s)) => {
            for m in [
                "q_proj",
                "k_proj",
                "v_proj",
                "o_proj",
                "gate_proj",
                "up_proj",
                "down_proj",
            ] {
                if s.contains(m) {
                    targets.extend_from_slice(modules_for(m));
                }
            }
        }
        Some(Value::Array(list)) => {
            for item in list {
                let name = item
                    .as_str()
                    .ok_or_else(|| invalid("target_modules", "expected a list of module names"))?;
                let mapped = modules_for(name);
                if mapped.is_empty() {
                    unknown_targets.push(name.to_string());
                }
                targets.extend_from_slice(mapped);
            }
        }
        None | Some(Value::Null) => return Err(ImportError::Missing("target_modules")),
        Some(other) => {
            return Err(invalid(
                "target_modules",
                &format!("expected a list or \"all-linear\", got {other}"),
            ))
        }
    }
    targets.sort_by_key(|m| Module::ALL.iter().position(|x| x == m));
    targets.dedup();
    let tokens = match obj.get("trainable_token_indices") {
        None | Some(Value::Null) => None,
        Some(_) => Some(token_count(obj, "trainable_token_indices")?),
    };
    let saved: Vec<&str> = obj
        .get("modules_to_save")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let has = |names: &[&str]| saved.iter().any(|s| names.iter().any(|n| s.ends_with(n)));
    Ok(AdapterSettings {
        lora: Lora {
            rank,
            targets,
            train_embed: has(&["embed_tokens", "wte", "word_embeddings", "embed_in"]),
            train_lm_head: has(&["lm_head", "embed_out", "output_layer"]),
            dora: r.bool("use_dora").unwrap_or(false),
            dropout: ["lora_dropout", "vera_dropout"]
                .iter()
                .filter_map(|k| obj.get(*k).and_then(Value::as_f64))
                .any(|p| p > 0.0),
            method,
            // PEFT builds the trainable-tokens layer beside LoRA adapters only (`LoraConfig`).
            with_tokens: tokens.is_some() && method == Method::Lora,
            butterfly_factors: match r.opt(&["boft_n_butterfly_factor"])? {
                Some(n) if (1..=16).contains(&n) => n,
                None => 1,
                Some(n) => {
                    return Err(invalid(
                        "boft_n_butterfly_factor",
                        &format!("{n} is outside 1…16"),
                    ))
                }
            },
            trainable_tokens: tokens.unwrap_or(Lora::default().trainable_tokens),
            ..Lora::default()
        },
        unknown_targets,
    })
}

/// How many tokens a `TrainableTokensConfig` trains: the length of its `token_indices` (PEFT
/// `tuners/trainable_tokens/layer.py` `update_layer`: the delta is `weight[token_indices]`, one row per
/// listed index).
fn token_count(obj: &Map<String, Value>, key: &'static str) -> Result<u32, ImportError> {
    let count = |list: &Vec<Value>| -> Result<u32, ImportError> {
        if !list.iter().all(|v| v.as_u64().is_some()) {
            return Err(invalid(key, "expected token ids (whole numbers)"));
        }
        match u32::try_from(list.len()) {
            Ok(0) => Err(invalid(key, "must list at least one token")),
            Ok(n) if u64::from(n) <= MAX_DIM => Ok(n),
            _ => Err(invalid(
                key,
                &format!("{} tokens is implausibly many", list.len()),
            )),
        }
    };
    match obj.get(key) {
        None | Some(Value::Null) => Err(ImportError::Missing(key)),
        Some(Value::Array(list)) => count(list),
        // LoRA's `trainable_token_indices` may map embedding-layer names to their lists (PEFT
        // `LoraConfig`): the model's one input embedding trains the longest.
        Some(Value::Object(layers)) if !layers.is_empty() => {
            let mut most = 0;
            for list in layers.values() {
                match list {
                    Value::Array(l) => most = most.max(count(l)?),
                    _ => return Err(invalid(key, "expected a list of token ids per layer")),
                }
            }
            Ok(most)
        }
        Some(other) => {
            let shown: String = other.to_string().chars().take(40).collect();
            Err(invalid(
                key,
                &format!("expected a list of token ids, got {shown}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `TrainableTokensConfig` (PEFT `peft_type` TRAINABLE_TOKENS) trains one embedding row per listed
    /// token: three indices are three tokens. A LoRA config's `trainable_token_indices` trains them beside LoRA.
    #[test]
    fn trainable_tokens_config_counts_its_indices() {
        let text = r#"{"peft_type":"TRAINABLE_TOKENS","token_indices":[128000,128001,128009],
            "target_modules":"embed_tokens","init_weights":true}"#;
        let ImportedFile::Adapter(a) = parse_any_text(text).unwrap() else {
            panic!("an adapter config");
        };
        assert_eq!(
            (a.lora.method, a.lora.trainable_tokens),
            (Method::TrainableTokens, 3)
        );
        for bad in [
            r#"{"peft_type":"TRAINABLE_TOKENS"}"#,
            r#"{"peft_type":"TRAINABLE_TOKENS","token_indices":[]}"#,
            r#"{"peft_type":"TRAINABLE_TOKENS","token_indices":"0,1"}"#,
        ] {
            let e = parse_any_text(bad).unwrap_err().to_string();
            assert!(e.contains("token_indices"), "{e}");
        }
        let lora = r#"{"peft_type":"LORA","r":8,"target_modules":["q_proj"],
            "trainable_token_indices":[5,6]}"#;
        let ImportedFile::Adapter(a) = parse_any_text(lora).unwrap() else {
            panic!("an adapter config");
        };
        assert_eq!(
            (a.lora.method, a.lora.with_tokens, a.lora.trainable_tokens),
            (Method::Lora, true, 2)
        );
        assert!(a.unknown_targets.is_empty());
        // The map form (embedding layer → its indices) trains the longest list.
        let map = r#"{"peft_type":"LORA","r":8,"target_modules":["q_proj"],
            "trainable_token_indices":{"embed_tokens":[1,2,3],"other":[4]}}"#;
        let ImportedFile::Adapter(a) = parse_any_text(map).unwrap() else {
            panic!("an adapter config");
        };
        assert_eq!((a.lora.with_tokens, a.lora.trainable_tokens), (true, 3));
        let bad = r#"{"peft_type":"LORA","r":8,"target_modules":["q_proj"],"trainable_token_indices":[-1]}"#;
        let e = parse_any_text(bad).unwrap_err().to_string();
        assert!(e.contains("trainable_token_indices"), "{e}");
    }

    /// A PEFT BOFT config: block size as the rank, its butterfly factors; one without a block size is refused.
    #[test]
    fn boft_config_gives_block_size_and_factors() {
        let text = r#"{"peft_type":"BOFT","boft_block_size":16,"boft_n_butterfly_factor":2,
            "target_modules":["q_proj","v_proj"]}"#;
        let ImportedFile::Adapter(a) = parse_any_text(text).unwrap() else {
            panic!("an adapter config");
        };
        assert_eq!(
            (a.lora.method, a.lora.rank, a.lora.butterfly_factors),
            (Method::Boft, 16, 2)
        );
        let e = parse_any_text(
            r#"{"peft_type":"BOFT","boft_block_num":8,"target_modules":["q_proj"]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("boft_block_size"), "{e}");
    }

    /// gpt-oss's `quantization_config` (`quant_method: mxfp4`) is the MXFP4 format, exactly.
    #[test]
    fn mxfp4_quantization_config_is_exact() {
        let q = LLAMA.replace(
            "\"tie_word_embeddings\":false",
            "\"quantization_config\":{\"quant_method\":\"mxfp4\",\"modules_to_not_convert\":[\"model.layers.*.self_attn\",\"model.layers.*.mlp.router\",\"model.embed_tokens\",\"lm_head\"]}",
        );
        let imported = parse_config_text(&q).unwrap();
        assert_eq!(imported.weights, Some(WeightFormat::Mxfp4));
        assert!(!imported.quantization.unwrap().approximate);
    }

    const LLAMA: &str = r#"{"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,
        "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,
        "tie_word_embeddings":false}"#;

    #[track_caller]
    fn err(text: &str) -> String {
        parse_config_text(text).unwrap_err().to_string()
    }

    #[test]
    fn llama_config_gives_the_llama_3_8b_shape() {
        let arch = parse_config_text(LLAMA).unwrap().arch;
        assert_eq!(arch.params().total, 8_030_261_248.0);
        assert_eq!(arch.head_dim, 128);
    }

    #[test]
    fn family_field_names() {
        // GPT-2 keys; n_inner null means 4·n_embd.
        let gpt2 = r#"{"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"n_inner":null,
            "vocab_size":50257,"n_positions":1024}"#;
        assert_eq!(
            parse_config_text(gpt2).unwrap().arch.params().total,
            124_439_808.0
        );
        // ChatGLM keys.
        let glm = r#"{"model_type":"chatglm","hidden_size":4096,"num_layers":28,"num_attention_heads":32,
            "multi_query_attention":true,"multi_query_group_num":2,"kv_channels":128,"ffn_hidden_size":13696,
            "padded_vocab_size":65024,"add_qkv_bias":true}"#;
        let a = parse_config_text(glm).unwrap().arch;
        assert_eq!(
            (a.layers, a.kv_heads, a.intermediate, a.vocab),
            (28, 2, 13696, 65024)
        );
        // Falcon multi_query.
        let falcon = r#"{"model_type":"falcon","hidden_size":4544,"n_layer":32,"n_head":71,"multi_query":true,
            "vocab_size":65024,"parallel_attn":true,"bias":false}"#;
        assert_eq!(parse_config_text(falcon).unwrap().arch.kv_heads, 1);
        // Multimodal nesting.
        let nested = format!(r#"{{"model_type":"gemma3","text_config":{LLAMA}}}"#);
        assert_eq!(parse_config_text(&nested).unwrap().arch.layers, 32);
    }

    #[test]
    fn quantization_config_fills_the_format() {
        let q = LLAMA.replace(
            "\"tie_word_embeddings\":false",
            "\"quantization_config\":{\"load_in_4bit\":true,\"bnb_4bit_quant_type\":\"nf4\",\"bnb_4bit_use_double_quant\":true}",
        );
        assert_eq!(
            parse_config_text(&q).unwrap().weights,
            Some(WeightFormat::Nf4Dq)
        );
    }

    #[test]
    fn bad_input_names_the_field() {
        assert!(err(&LLAMA[..40]).starts_with("not valid JSON"));
        assert_eq!(err("[1,2]"), "expected a JSON object { … }");
        assert!(
            err(&LLAMA.replace("4096,\"num_hidden", "\"big\",\"num_hidden"))
                .contains("hidden_size")
        );
        assert!(
            err(&LLAMA.replace("\"num_attention_heads\":32", "\"num_attention_heads\":0"))
                .contains("num_attention_heads")
        );
        assert!(err(&LLAMA.replace("128256", "1e30")).contains("vocab_size"));
        assert!(err(&LLAMA.replace("128256", "99999999999999")).contains("implausibly large"));
        assert!(err(r#"{"hidden_size":8}"#).contains("missing field: num_hidden_layers"));
        assert!(
            err(&LLAMA.replace("\"num_key_value_heads\":8", "\"num_key_value_heads\":64"))
                .contains("num_key_value_heads")
        );
    }

    #[test]
    fn a_ten_megabyte_paste_is_refused_quickly() {
        let big = format!("{{\"x\":\"{}\"}}", "a".repeat(10 << 20));
        assert!(err(&big).contains("too large"));
        let nested = "[".repeat(100_000);
        assert!(err(&nested).starts_with("not valid JSON"));
    }

    #[test]
    fn adapter_config_fills_lora_settings() {
        let text = r#"{"peft_type":"LORA","r":64,"lora_dropout":0.05,"use_dora":false,
            "target_modules":["q_proj","v_proj","query_key_value","mystery"],
            "modules_to_save":["lm_head"]}"#;
        let ImportedFile::Adapter(a) = parse_any_text(text).unwrap() else {
            panic!("not read as an adapter")
        };
        let l = &a.lora;
        assert_eq!(l.rank, 64);
        assert_eq!(l.targets, vec![Module::Q, Module::K, Module::V]);
        assert!(l.train_lm_head && !l.train_embed && l.dropout && !l.dora);
        assert_eq!(a.unknown_targets, vec!["mystery".to_string()]);
        let all = r#"{"r":8,"target_modules":"all-linear"}"#;
        let ImportedFile::Adapter(a) = parse_any_text(all).unwrap() else {
            panic!()
        };
        assert_eq!(a.lora.targets, Module::ALL.to_vec());
        assert!(matches!(parse_any_text(LLAMA), Ok(ImportedFile::Model(_))));
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,400}") {
            let _ = parse_any_text(&s);
        }

        #[test]
        fn any_numbers_parse_or_error(h in proptest::num::u64::ANY, l in proptest::num::u64::ANY, a in proptest::num::u64::ANY) {
            let text = format!(r#"{{"hidden_size":{h},"num_hidden_layers":{l},"num_attention_heads":{a},"vocab_size":32000}}"#);
            if let Ok(i) = parse_config_text(&text) {
                proptest::prop_assert!(i.arch.params().total.is_finite());
            }
        }
    }
}
