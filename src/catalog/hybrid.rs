//! Hybrid-stack configs → [`Hybrid`]: which layers hold attention, an MLP and a recurrent mixer, and the
//! mixer's shape, read the way each family's transformers configuration class reads them (5.24,
//! `models/<family>/configuration_<family>.py`), with that class's defaults for absent keys — as
//! `from_pretrained` does:
//! - Qwen3-Next (`Qwen3NextConfig`): `layer_types`, else full attention every `full_attention_interval`-th
//!   layer (default 4); `linear_num_key_heads` 16, `linear_num_value_heads` 32, `linear_key_head_dim` 128,
//!   `linear_value_head_dim` 128, `linear_conv_kernel_dim` 4; MoE unless in `mlp_only_layers` or off the
//!   `decoder_sparse_step`. Qwen3.5's text config (`qwen3_5_text`, `qwen3_5_moe_text`) has the same Gated
//!   DeltaNet and gates its attention when `attn_output_gate` is set.
//! - Nemotron-H (`NemotronHConfig`): `hybrid_override_pattern` (`M` Mamba-2, `*` attention, `-` MLP, `E`
//!   MoE) or the newer `layers_block_type` list; its length is the layer count; `mamba_num_heads` 128,
//!   `mamba_head_dim` 64, `ssm_state_size` 128, `n_groups` 8, `conv_kernel` 4, `chunk_size` 128 (also read
//!   under their `mamba_*` aliases), `attention_head_dim` as the attention head width.
//! - Granite-4.0-H (`GraniteMoeHybridConfig`) and Bamba (`BambaConfig`): `layer_types` (`mamba` /
//!   `attention`) or Bamba's `attn_layer_indices`; `mamba_n_heads` 128, `mamba_d_head` `auto`
//!   (`mamba_expand·hidden / mamba_n_heads`), `mamba_d_state` 256, `mamba_n_groups` 1, `mamba_d_conv` 4,
//!   `mamba_expand` 2, `mamba_chunk_size` 256; Granite's shared MLP is `shared_intermediate_size` wide (1024)
//!   and its MoE has `num_local_experts` experts of `intermediate_size`.
//! - Jamba (`JambaConfig`): attention where `i % attn_layer_period == attn_layer_offset` (8, 4), MoE where
//!   `i % expert_layer_period == expert_layer_offset` (2, 1); Mamba-1 `mamba_d_state` 16, `mamba_d_conv` 4,
//!   `mamba_expand` 2, `mamba_dt_rank` `auto` (`⌈hidden/16⌉`).
//! - Falcon-H1 (`FalconH1Config`): attention and Mamba-2 in every layer; `mamba_d_ssm` (else
//!   `mamba_expand·hidden`), `mamba_n_heads` 128, `mamba_d_head` `auto`, `mamba_d_state` 256,
//!   `mamba_n_groups` 1, `mamba_d_conv` 4, `mamba_chunk_size` 256, `mamba_rms_norm` false.
//!
//! Other recurrent families (pure Mamba, Zamba, LFM2, MiniMax lightning attention, …) are refused with a
//! message naming the family and what is modelled, never read as a plain transformer.

use super::import::ImportError;
use crate::model::{Architecture, Hybrid, Mixer, MlpKind, Moe};
use serde_json::{Map, Value};

fn invalid(field: &str, reason: &str) -> ImportError {
    ImportError::Invalid {
        field: field.to_string(),
        reason: reason.to_string(),
    }
}

use super::import::dim;

fn dim_or(obj: &Map<String, Value>, names: &[&str], default: u32) -> Result<u32, ImportError> {
    Ok(dim(obj, names)?.unwrap_or(default))
}

fn flag(obj: &Map<String, Value>, names: &[&str], default: bool) -> bool {
    names
        .iter()
        .find_map(|n| obj.get(*n).and_then(Value::as_bool))
        .unwrap_or(default)
}

/// A `mamba_d_head`-style field that may be `"auto"`: `inner / heads` then.
fn head_dim_auto(
    obj: &Map<String, Value>,
    name: &str,
    inner: u32,
    heads: u32,
) -> Result<u32, ImportError> {
    match obj.get(name) {
        Some(Value::String(s)) if s == "auto" => Ok(inner / heads.max(1)),
        Some(Value::String(s)) => Err(invalid(
            name,
            &format!("expected a number or \"auto\", got {s}"),
        )),
        _ => Ok(dim(obj, &[name])?.unwrap_or(inner / heads.max(1))),
    }
}

/// What one layer's entry in a layer-type list holds.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    Attention,
    Recurrent,
    Mlp,
    Moe,
}

/// A layer-type list (`layer_types`, `layers_block_type`), mapped as transformers remaps legacy names
/// (`configuration_utils._LEGACY_LAYER_TYPE_REMAP`: `mamba` → `linear_attention`, `attention` →
/// `full_attention`).
fn block_list(obj: &Map<String, Value>) -> Result<Option<Vec<Block>>, ImportError> {
    for name in ["layers_block_type", "layer_types"] {
        let Some(v) = obj.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        let list = v
            .as_array()
            .ok_or_else(|| invalid(name, "expected a list of layer types"))?;
        let mut out = Vec::with_capacity(list.len());
        for t in list {
            let t = t
                .as_str()
                .ok_or_else(|| invalid(name, "expected a list of layer-type strings"))?;
            out.push(match t {
                "linear_attention" | "mamba" | "mamba2" => Block::Recurrent,
                "full_attention" | "attention" | "sliding_attention" => Block::Attention,
                "mlp" => Block::Mlp,
                "moe" => Block::Moe,
                other => {
                    return Err(invalid(
                        name,
                        &format!("layer type {other:?} is not modelled (linear_attention/mamba, full_attention/attention, mlp, moe are)"),
                    ))
                }
            });
        }
        if !out.is_empty() {
            return Ok(Some(out));
        }
    }
    Ok(None)
}

fn count(list: &[Block], b: Block) -> u32 {
    list.iter().filter(|x| **x == b).count() as u32
}

/// Model types of recurrent families that are not modelled, with what they are.
fn unmodelled(model_type: &str) -> Option<&'static str> {
    Some(match model_type {
        "mamba" | "mamba2" | "falcon_mamba" => "a pure state-space model (no attention layers)",
        "zamba" | "zamba2" => "Zamba's shared attention blocks",
        "lfm2" | "lfm2_moe" => "LFM2's short-convolution layers",
        "minimax" | "minimax_text_01" => "MiniMax's lightning-attention layers",
        "rwkv" | "rwkv7" => "an RWKV recurrent model",
        "recurrent_gemma" => "RecurrentGemma's RG-LRU layers",
        "kimi_linear" | "olmo_hybrid" => "its linear-attention layers",
        _ => return None,
    })
}

/// Refuses, before the transformer fields are read, a config whose layers are recurrent in a way that is not
/// modelled; the message names the family and what is.
pub(super) fn refuse(model_type: &str) -> Result<(), ImportError> {
    match unmodelled(model_type) {
        Some(what) => Err(invalid(
            "model_type",
            &format!(
                "{model_type} is {what}, which is not modelled; the hybrid stacks that are: Qwen3-Next \
                 (Gated DeltaNet), Nemotron-H, Granite-4.0-H, Bamba, Falcon-H1 (Mamba-2) and Jamba (Mamba-1)"
            ),
        )),
        None => Ok(()),
    }
}

/// Keys only recurrent configs carry: a config of an unknown type with one of them is refused rather than
/// read as a plain transformer.
const RECURRENT_KEYS: [&str; 8] = [
    "hybrid_override_pattern",
    "linear_num_value_heads",
    "mamba_d_state",
    "ssm_state_size",
    "mamba_num_heads",
    "mamba_n_heads",
    "attn_layer_period",
    "mamba_expand",
];

/// Fills `arch.hybrid` (and the family's other fields: MLP kind, widths, norms, experts) for a hybrid
/// config; leaves other configs alone. `obj` is the language model's config object.
pub(super) fn apply(
    model_type: &str,
    obj: &Map<String, Value>,
    arch: &mut Architecture,
) -> Result<(), ImportError> {
    match model_type {
        "qwen3_next" | "qwen3_5_text" | "qwen3_5_moe_text" | "qwen3_5" | "qwen3_5_moe" => {
            gated_deltanet(model_type, obj, arch)
        }
        "nemotron_h" => nemotron_h(obj, arch),
        "granitemoehybrid" | "bamba" => granite(model_type, obj, arch),
        "jamba" => jamba(obj, arch),
        "falcon_h1" => falcon_h1(obj, arch),
        _ => match RECURRENT_KEYS.iter().find(|k| obj.contains_key(**k)) {
            Some(key) => Err(invalid(
                key,
                &format!(
                    "model_type {model_type:?} has recurrent layers that are not modelled; hybrid stacks are \
                     read for qwen3_next, nemotron_h, granitemoehybrid, bamba, jamba and falcon_h1"
                ),
            )),
            None => Ok(()),
        },
    }
}

/// Qwen3-Next (and Qwen3.5's text model): Gated DeltaNet or gated attention in each layer, every layer an
/// MLP (sparse MoE except `mlp_only_layers` and layers off `decoder_sparse_step`; `Qwen3NextDecoderLayer`).
fn gated_deltanet(
    model_type: &str,
    obj: &Map<String, Value>,
    arch: &mut Architecture,
) -> Result<(), ImportError> {
    let layers = arch.layers;
    let blocks = match block_list(obj)? {
        Some(list) => list,
        None => {
            let interval = dim_or(obj, &["full_attention_interval"], 4)?.max(1);
            (0..layers)
                .map(|i| {
                    if (i + 1) % interval == 0 {
                        Block::Attention
                    } else {
                        Block::Recurrent
                    }
                })
                .collect()
        }
    };
    if blocks.len() != layers as usize {
        return Err(invalid(
            "layer_types",
            &format!(
                "lists {} layers, num_hidden_layers is {layers}",
                blocks.len()
            ),
        ));
    }
    let key_heads = dim_or(obj, &["linear_num_key_heads"], 16)?;
    let value_heads = dim_or(obj, &["linear_num_value_heads"], 32)?;
    let key_dim = dim_or(obj, &["linear_key_head_dim"], 128)?;
    let value_dim = dim_or(obj, &["linear_value_head_dim"], 128)?;
    if key_heads == 0 || value_heads % key_heads != 0 {
        return Err(invalid(
            "linear_num_value_heads",
            &format!("{value_heads} must be a multiple of linear_num_key_heads ({key_heads})"),
        ));
    }
    let gated = model_type == "qwen3_next" || flag(obj, &["attn_output_gate"], false);
    // MoE layers: `layer_idx not in mlp_only_layers and num_experts > 0 and (layer_idx + 1) %
    // decoder_sparse_step == 0`.
    if let Some(moe) = arch.moe.as_mut() {
        let step = dim_or(obj, &["decoder_sparse_step"], 1)?.max(1);
        let only: std::collections::BTreeSet<u64> = obj
            .get("mlp_only_layers")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let sparse = (0..layers)
            .filter(|i| !only.contains(&u64::from(*i)) && (i + 1) % step == 0)
            .count() as u32;
        moe.dense_layers = layers - sparse;
    }
    arch.qk_norm = true;
    arch.hybrid = Some(Box::new(Hybrid {
        mixer: Mixer::GatedDeltaNet,
        attention_layers: count(&blocks, Block::Attention),
        recurrent_layers: count(&blocks, Block::Recurrent),
        mlp_layers: layers,
        heads: value_heads,
        head_dim: value_dim,
        state: key_dim,
        groups: key_heads,
        inner: value_heads.saturating_mul(value_dim),
        conv_kernel: dim_or(obj, &["linear_conv_kernel_dim"], 4)?,
        chunk: 64,
        gated_attention: gated,
        shared_expert_gate: true,
        ..Hybrid::default()
    }));
    Ok(())
}

/// Nemotron-H: one mixer per block (`NemotronHBlock`, one RMSNorm each); squared-ReLU MLPs of
/// `intermediate_size` (`up_proj`, `down_proj`); `E` blocks a MoE of `n_routed_experts` squared-ReLU experts
/// of `moe_intermediate_size` and one shared expert of `moe_shared_expert_intermediate_size`
/// (`NemotronHMoE`).
fn nemotron_h(obj: &Map<String, Value>, arch: &mut Architecture) -> Result<(), ImportError> {
    let blocks: Vec<Block> = match obj.get("hybrid_override_pattern") {
        Some(Value::String(p)) => p
            .chars()
            .map(|c| match c {
                'M' => Ok(Block::Recurrent),
                '*' => Ok(Block::Attention),
                '-' => Ok(Block::Mlp),
                'E' => Ok(Block::Moe),
                other => Err(invalid(
                    "hybrid_override_pattern",
                    &format!("{other:?} is not a block (M, *, - and E are)"),
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) if !other.is_null() => {
            return Err(invalid(
                "hybrid_override_pattern",
                "expected a string such as \"M-M*-\"",
            ))
        }
        _ => block_list(obj)?.ok_or(ImportError::Missing(
            "hybrid_override_pattern (or layers_block_type)",
        ))?,
    };
    if blocks.is_empty() || blocks.len() > 1 << 16 {
        return Err(invalid(
            "hybrid_override_pattern",
            "must name between 1 and 65,536 blocks",
        ));
    }
    // transformers takes the layer count from the pattern (`NemotronHConfig.num_hidden_layers`).
    arch.layers = blocks.len() as u32;
    let heads = dim_or(obj, &["mamba_num_heads"], 128)?;
    let head_dim = dim_or(obj, &["mamba_head_dim"], 64)?;
    if let Some(d) = dim(obj, &["attention_head_dim", "head_dim"])? {
        arch.head_dim = d;
    }
    arch.mlp = MlpKind::Plain;
    arch.norms_per_layer = 1;
    let moe_blocks = count(&blocks, Block::Moe);
    let mlp_blocks = count(&blocks, Block::Mlp);
    arch.moe = if moe_blocks > 0 {
        let experts = dim_or(obj, &["n_routed_experts", "num_local_experts"], 8)?.max(1);
        Some(Moe {
            experts,
            active: dim_or(obj, &["num_experts_per_tok"], 2)?.clamp(1, experts),
            expert_intermediate: dim_or(obj, &["moe_intermediate_size"], 7688)?.max(1),
            shared_intermediate: dim_or(obj, &["moe_shared_expert_intermediate_size"], 7688)?,
            dense_layers: mlp_blocks,
            shared_gate: false,
            peft: Default::default(),
        })
    } else {
        None
    };
    let fp32_state = match obj.get("mamba_ssm_cache_dtype").and_then(Value::as_str) {
        None => true,
        Some(d) => d == "float32",
    };
    arch.hybrid = Some(Box::new(Hybrid {
        mixer: Mixer::Mamba2,
        attention_layers: count(&blocks, Block::Attention),
        recurrent_layers: count(&blocks, Block::Recurrent),
        mlp_layers: mlp_blocks + moe_blocks,
        heads,
        head_dim,
        state: dim_or(
            obj,
            &["ssm_state_size", "mamba_d_state", "mamba_state_dim"],
            128,
        )?,
        groups: dim_or(obj, &["n_groups", "mamba_n_groups", "mamba_num_groups"], 8)?,
        inner: heads.saturating_mul(head_dim),
        conv_kernel: dim_or(obj, &["conv_kernel", "mamba_d_conv"], 4)?,
        chunk: dim_or(obj, &["chunk_size", "mamba_chunk_size"], 128)?,
        conv_bias: flag(obj, &["use_conv_bias", "mamba_conv_bias"], true),
        proj_bias: flag(obj, &["use_bias"], false),
        gated_norm: true,
        fp32_state,
        ..Hybrid::default()
    }));
    Ok(())
}

/// Granite-4.0-H (`GraniteMoeHybridDecoderLayer`: Mamba-2 or attention, then the shared gated MLP and, with
/// experts, a MoE beside it) and Bamba (`BambaDecoderLayer`: Mamba-2 or attention, then a gated MLP of
/// `intermediate_size`). Their Mamba-2 inner width is `mamba_expand · hidden`.
fn granite(
    model_type: &str,
    obj: &Map<String, Value>,
    arch: &mut Architecture,
) -> Result<(), ImportError> {
    let layers = arch.layers;
    let attention: Vec<bool> = match block_list(obj)? {
        Some(list) => list.iter().map(|b| *b == Block::Attention).collect(),
        None => {
            let listed: std::collections::BTreeSet<u64> = obj
                .get("attn_layer_indices")
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default();
            (0..layers)
                .map(|i| listed.contains(&u64::from(i)))
                .collect()
        }
    };
    if attention.len() != layers as usize {
        return Err(invalid(
            "layer_types",
            &format!(
                "lists {} layers, num_hidden_layers is {layers}",
                attention.len()
            ),
        ));
    }
    let attention_layers = attention.iter().filter(|a| **a).count() as u32;
    if model_type == "granitemoehybrid" {
        let shared = dim_or(obj, &["shared_intermediate_size"], 1024)?;
        let experts = dim_or(obj, &["num_local_experts"], 8)?;
        if experts > 0 {
            let expert_intermediate = dim(obj, &["intermediate_size"])?.unwrap_or(11008).max(1);
            arch.moe = Some(Moe {
                experts,
                active: dim_or(obj, &["num_experts_per_tok"], 2)?.clamp(1, experts),
                expert_intermediate,
                shared_intermediate: shared,
                dense_layers: 0,
                shared_gate: false,
                peft: Default::default(),
            });
        } else {
            arch.moe = None;
            arch.intermediate = shared;
        }
    }
    let expand = dim_or(obj, &["mamba_expand"], 2)?;
    let inner = expand.saturating_mul(arch.hidden);
    let heads = dim_or(obj, &["mamba_n_heads"], 128)?.max(1);
    arch.hybrid = Some(Box::new(Hybrid {
        mixer: Mixer::Mamba2,
        attention_layers,
        recurrent_layers: layers - attention_layers,
        mlp_layers: layers,
        heads,
        head_dim: head_dim_auto(obj, "mamba_d_head", inner, heads)?,
        state: dim_or(obj, &["mamba_d_state"], 256)?,
        groups: dim_or(obj, &["mamba_n_groups"], 1)?,
        inner,
        conv_kernel: dim_or(obj, &["mamba_d_conv"], 4)?,
        chunk: dim_or(obj, &["mamba_chunk_size"], 256)?,
        conv_bias: flag(obj, &["mamba_conv_bias"], true),
        proj_bias: flag(obj, &["mamba_proj_bias"], false),
        gated_norm: true,
        ..Hybrid::default()
    }));
    Ok(())
}

/// Jamba: Mamba-1 or attention in each layer, then a gated MLP or a MoE (`JambaAttentionDecoderLayer`,
/// `JambaMambaDecoderLayer`, `layers_num_experts`).
fn jamba(obj: &Map<String, Value>, arch: &mut Architecture) -> Result<(), ImportError> {
    let layers = arch.layers;
    let attn_period = dim_or(obj, &["attn_layer_period"], 8)?.max(1);
    let attn_offset = dim_or(obj, &["attn_layer_offset"], 4)?;
    let expert_period = dim_or(obj, &["expert_layer_period"], 2)?.max(1);
    let expert_offset = dim_or(obj, &["expert_layer_offset"], 1)?;
    if attn_offset >= attn_period {
        return Err(invalid(
            "attn_layer_offset",
            &format!("{attn_offset} must be smaller than attn_layer_period ({attn_period})"),
        ));
    }
    if expert_offset >= expert_period {
        return Err(invalid(
            "expert_layer_offset",
            &format!("{expert_offset} must be smaller than expert_layer_period ({expert_period})"),
        ));
    }
    let attention_layers = (0..layers)
        .filter(|i| i % attn_period == attn_offset)
        .count() as u32;
    let moe_layers = (0..layers)
        .filter(|i| i % expert_period == expert_offset)
        .count() as u32;
    match arch.moe.as_mut() {
        Some(moe) if moe_layers > 0 => {
            moe.expert_intermediate = arch.intermediate.max(1);
            moe.shared_intermediate = 0;
            moe.dense_layers = layers - moe_layers;
        }
        _ => arch.moe = None,
    }
    let dt_rank = match obj.get("mamba_dt_rank") {
        Some(Value::String(s)) if s == "auto" => arch.hidden.div_ceil(16),
        Some(Value::String(s)) => {
            return Err(invalid(
                "mamba_dt_rank",
                &format!("expected a number or \"auto\", got {s}"),
            ))
        }
        _ => dim(obj, &["mamba_dt_rank"])?.unwrap_or(arch.hidden.div_ceil(16)),
    };
    arch.hybrid = Some(Box::new(Hybrid {
        mixer: Mixer::Mamba1,
        attention_layers,
        recurrent_layers: layers - attention_layers,
        mlp_layers: layers,
        groups: 1,
        inner: dim_or(obj, &["mamba_expand"], 2)?.saturating_mul(arch.hidden),
        state: dim_or(obj, &["mamba_d_state"], 16)?,
        conv_kernel: dim_or(obj, &["mamba_d_conv"], 4)?,
        dt_rank,
        conv_bias: flag(obj, &["mamba_conv_bias"], true),
        proj_bias: flag(obj, &["mamba_proj_bias"], false),
        ..Hybrid::default()
    }));
    Ok(())
}

/// Falcon-H1: attention and Mamba-2 side by side in every layer, then a gated MLP (`FalconH1DecoderLayer`).
/// The mixer's `in_proj` bias is `mamba_proj_bias`, its `out_proj` bias `projectors_bias`; either one counts
/// both here (both are off in every released config).
fn falcon_h1(obj: &Map<String, Value>, arch: &mut Architecture) -> Result<(), ImportError> {
    let layers = arch.layers;
    let inner = match dim(obj, &["mamba_d_ssm"])? {
        Some(d) => d,
        None => dim_or(obj, &["mamba_expand"], 2)?.saturating_mul(arch.hidden),
    };
    let heads = dim_or(obj, &["mamba_n_heads"], 128)?.max(1);
    arch.hybrid = Some(Box::new(Hybrid {
        mixer: Mixer::Mamba2,
        attention_layers: layers,
        recurrent_layers: layers,
        mlp_layers: layers,
        heads,
        head_dim: head_dim_auto(obj, "mamba_d_head", inner, heads)?,
        state: dim_or(obj, &["mamba_d_state"], 256)?,
        groups: dim_or(obj, &["mamba_n_groups"], 1)?,
        inner,
        conv_kernel: dim_or(obj, &["mamba_d_conv"], 4)?,
        chunk: dim_or(obj, &["mamba_chunk_size"], 256)?,
        conv_bias: flag(obj, &["mamba_conv_bias"], true),
        proj_bias: flag(obj, &["mamba_proj_bias", "projectors_bias"], false),
        gated_norm: flag(obj, &["mamba_rms_norm"], false),
        ..Hybrid::default()
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::import::parse_config_text;
    use crate::catalog::model;
    use crate::model::{Mixer, ParamCounts};

    /// The catalog entry's computed count: equal to what transformers 5.24 builds from the same config on
    /// the meta device (`sum(p.numel() for p in model.parameters())`), and within 1% of the published count.
    #[track_caller]
    fn check(id: &str, built: f64) -> ParamCounts {
        let m = model(id).unwrap_or_else(|| panic!("{id} not in the catalog"));
        let p = m.arch().params();
        assert_eq!(
            p.total, built,
            "{id}: vramfit {} vs transformers {built}",
            p.total
        );
        let err = (p.total - m.params_reference) / m.params_reference;
        assert!(
            err.abs() < 0.01,
            "{id}: {:.2}% off the published count",
            err * 100.0
        );
        p
    }

    #[test]
    fn qwen3_next_gated_deltanet_and_gated_attention() {
        check("qwen3-next-80b-a3b-instruct", 79_674_391_296.0);
        let a = model("qwen3-next-80b-a3b-instruct").unwrap().arch();
        let hy = a.stack().unwrap();
        assert_eq!(hy.mixer, Mixer::GatedDeltaNet);
        assert_eq!(
            (hy.attention_layers, hy.recurrent_layers, hy.mlp_layers),
            (12, 36, 48)
        );
        assert!(hy.gated_attention && a.qk_norm);
    }

    #[test]
    fn nemotron_h_blocks() {
        check("nvidia-nemotron-nano-9b-v2", 8_888_227_328.0);
        check("nemotron-h-47b-base-8k", 46_791_554_816.0);
        check("nemotron-h-56b-base-8k", 56_324_350_464.0);
        let hy = model("nvidia-nemotron-nano-9b-v2")
            .unwrap()
            .arch()
            .stack()
            .unwrap();
        // 27 M, 4 *, 25 - (the model card's "27 Mamba layers, 25 MLP layers, 4 attention layers").
        assert_eq!(
            (hy.recurrent_layers, hy.attention_layers, hy.mlp_layers),
            (27, 4, 25)
        );
        assert!(hy.fp32_state);
    }

    #[test]
    fn nemotron_h_moe_blocks_from_a_verbatim_config() {
        // nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json, verbatim in ai-dynamo/aiconfigurator @095f58a5
        // aic-core/src/aiconfigurator_core/model_configs/ (structural keys); transformers builds 31,577,937,344.
        let text = r#"{"model_type":"nemotron_h","chunk_size":128,"conv_kernel":4,"expand":2,"head_dim":128,
            "hidden_size":2688,"hybrid_override_pattern":"MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
            "intermediate_size":1856,"mamba_head_dim":64,"mamba_num_heads":64,"mamba_proj_bias":false,
            "mamba_ssm_cache_dtype":"float32","max_position_embeddings":262144,"mlp_bias":false,
            "mlp_hidden_act":"relu2","moe_intermediate_size":1856,"moe_shared_expert_intermediate_size":3712,
            "n_group":1,"n_groups":8,"n_routed_experts":128,"n_shared_experts":1,"num_attention_heads":32,
            "num_experts_per_tok":6,"num_hidden_layers":52,"num_key_value_heads":2,"ssm_state_size":128,
            "tie_word_embeddings":false,"use_bias":false,"use_conv_bias":true,"vocab_size":131072}"#;
        let a = parse_config_text(text).unwrap().arch;
        let moe = a.moe.unwrap();
        assert_eq!((moe.experts, moe.active, moe.dense_layers), (128, 6, 0));
        assert_eq!(a.params().total, 31_577_937_344.0);
    }

    #[test]
    fn granite_4_h_shared_mlp_and_experts() {
        check("granite-4.0-h-small", 32_207_337_984.0);
        let a = model("granite-4.0-h-small").unwrap().arch();
        assert_eq!(a.stack().unwrap().attention_layers, 4);
        // A dense Granite-4.0-H (num_local_experts 0, like H-Micro) and Bamba, small shapes: transformers
        // builds 12,423,696 and 12,935,696.
        let granite = r#"{"model_type":"granitemoehybrid","hidden_size":512,"num_hidden_layers":4,
            "num_attention_heads":8,"num_key_value_heads":2,"num_local_experts":0,"shared_intermediate_size":1024,
            "intermediate_size":256,"vocab_size":1000,"tie_word_embeddings":true,
            "layer_types":["mamba","attention","mamba","mamba"],"mamba_n_heads":16,"mamba_d_head":64,
            "mamba_d_state":32,"mamba_n_groups":2,"mamba_d_conv":4,"mamba_expand":2}"#;
        assert_eq!(
            parse_config_text(granite).unwrap().arch.params().total,
            12_423_696.0
        );
        let bamba = r#"{"model_type":"bamba","hidden_size":512,"num_hidden_layers":4,"num_attention_heads":8,
            "num_key_value_heads":2,"intermediate_size":1024,"vocab_size":1000,"attn_layer_indices":[1],
            "mamba_n_heads":16,"mamba_d_head":64,"mamba_d_state":32,"mamba_n_groups":2,"mamba_d_conv":4,
            "mamba_expand":2}"#;
        assert_eq!(
            parse_config_text(bamba).unwrap().arch.params().total,
            12_935_696.0
        );
    }

    #[test]
    fn jamba_mamba1_and_periodic_layers() {
        check("jamba-v0.1", 51_570_323_328.0);
        check("ai21-jamba-1.5-mini", 51_570_323_328.0);
        check("ai21-jamba-1.5-large", 398_555_145_696.0);
        let a = model("jamba-v0.1").unwrap().arch();
        let hy = a.stack().unwrap();
        assert_eq!(
            (hy.mixer, hy.attention_layers, hy.recurrent_layers),
            (Mixer::Mamba1, 4, 28)
        );
        assert_eq!(a.moe.unwrap().dense_layers, 16);
    }

    #[test]
    fn falcon_h1_parallel_blocks() {
        check("falcon-h1-7b-instruct", 7_585_654_880.0);
        let hy = model("falcon-h1-7b-instruct")
            .unwrap()
            .arch()
            .stack()
            .unwrap();
        assert_eq!(
            (hy.attention_layers, hy.recurrent_layers, hy.mlp_layers),
            (44, 44, 44)
        );
        assert_eq!((hy.inner, hy.head_dim, hy.state), (3072, 128, 256));
    }

    #[test]
    fn qwen3_5_text_gates_its_attention_when_asked() {
        // transformers builds 9,841,424 from this small Qwen3.5 text config.
        let text = r#"{"model_type":"qwen3_5_text","hidden_size":512,"num_hidden_layers":4,"num_attention_heads":8,
            "num_key_value_heads":2,"head_dim":64,"intermediate_size":1024,"vocab_size":1000,
            "layer_types":["linear_attention","linear_attention","linear_attention","full_attention"],
            "attn_output_gate":true,"linear_num_key_heads":4,"linear_num_value_heads":8,"linear_key_head_dim":32,
            "linear_value_head_dim":32,"linear_conv_kernel_dim":4,"tie_word_embeddings":false}"#;
        assert_eq!(
            parse_config_text(text).unwrap().arch.params().total,
            9_841_424.0
        );
    }

    #[test]
    fn bare_infinity_and_nan_parse_as_pythons_json_reads_them() {
        // The verbatim Nemotron-H 56B config carries `"time_step_limit": [0.0, Infinity]`.
        let text = include_str!("../../tests/data/hub/nvidia/Nemotron-H-56B-Base-8K/config.json");
        assert!(text.contains("Infinity"));
        let a = parse_config_text(text).unwrap().arch;
        assert_eq!(a.params().total, 56_324_350_464.0);
        // Falcon-H1 writes the same tuple; -Infinity and NaN are read too (outside strings only).
        let falcon = r#"{"model_type":"falcon_h1","hidden_size":256,"num_hidden_layers":2,"num_attention_heads":4,
            "num_key_value_heads":2,"head_dim":64,"intermediate_size":512,"vocab_size":100,
            "mamba_d_ssm":256,"mamba_n_heads":4,"mamba_d_head":64,"mamba_d_state":16,
            "time_step_limit":[0.0, Infinity],"ssm_floor":-Infinity,"initializer_range":NaN,
            "note":"Infinity stays text here"}"#;
        let a = parse_config_text(falcon).unwrap().arch;
        assert_eq!(a.stack().unwrap().recurrent_layers, 2);
    }

    #[test]
    fn configs_that_cannot_be_modelled_say_what_is_missing() {
        let err = |t: &str| parse_config_text(t).unwrap_err().to_string();
        let mamba2 = r#"{"model_type":"mamba2","hidden_size":2048,"num_hidden_layers":48,"num_heads":64,
            "head_dim":64,"state_size":128,"vocab_size":50288}"#;
        assert!(
            err(mamba2).contains("pure state-space model"),
            "{}",
            err(mamba2)
        );
        let unknown = r#"{"model_type":"something_new","hidden_size":64,"num_hidden_layers":2,
            "num_attention_heads":4,"vocab_size":100,"mamba_d_state":16}"#;
        assert!(
            err(unknown).starts_with("field mamba_d_state"),
            "{}",
            err(unknown)
        );
        let no_pattern = r#"{"model_type":"nemotron_h","hidden_size":64,"num_hidden_layers":2,
            "num_attention_heads":4,"vocab_size":100}"#;
        assert_eq!(
            err(no_pattern),
            "missing field: hybrid_override_pattern (or layers_block_type)"
        );
        let bad = no_pattern.replace(
            "\"vocab_size\":100",
            "\"vocab_size\":100,\"hybrid_override_pattern\":\"M*X\"",
        );
        assert!(err(&bad).contains("'X'"), "{}", err(&bad));
        let short = r#"{"model_type":"qwen3_next","hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,
            "vocab_size":100,"layer_types":["linear_attention","full_attention"]}"#;
        assert!(err(short).contains("lists 2 layers"), "{}", err(short));
        let odd = short.replace(
            "\"layer_types\":[\"linear_attention\",\"full_attention\"]",
            "\"linear_num_key_heads\":3,\"linear_num_value_heads\":4",
        );
        assert!(
            err(&odd).contains("linear_num_value_heads"),
            "{}",
            err(&odd)
        );
    }

    #[test]
    fn hybrid_shapes_round_trip_their_link_form() {
        for id in [
            "qwen3-next-80b-a3b-instruct",
            "granite-4.0-h-small",
            "jamba-v0.1",
            "falcon-h1-7b-instruct",
        ] {
            let hy = model(id).unwrap().arch().stack().unwrap();
            assert_eq!(
                crate::model::Hybrid::from_link_id(&hy.link_id()),
                Some(hy),
                "{id}"
            );
        }
        assert_eq!(crate::model::Hybrid::from_link_id("m2/1/2"), None);
        assert_eq!(
            crate::model::Hybrid::from_link_id("xx/1/1/1/1/1/1/1/1/1/0/1/000000"),
            None
        );
        assert_eq!(
            crate::model::Hybrid::from_link_id("m2/1/1/1/1/1/1/1/1/1/0/1/00000"),
            None
        );
    }
}
