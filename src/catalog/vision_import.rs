//! A vision-language model's `vision_config` → [`VisionTower`].
//!
//! Which tower a config has is told by `vision_config.model_type` and the outer `model_type`: Qwen2.5-VL
//! (`qwen2_5_vl`), Qwen3-VL (`qwen3_vl`, `qwen3_vl_moe`), Gemma 3 (`siglip_vision_model` beside
//! `mm_tokens_per_image` or an outer `gemma3`) and Llama 4 (`llama4_vision_model`). Other towers (Pixtral,
//! InternViT, …) are not modelled: the config reads as its language model alone, as before. Fields a config
//! leaves out take the defaults of transformers' configuration classes (`Qwen2_5_VLVisionConfig`,
//! `Qwen3VLVisionConfig`, `SiglipVisionConfig`, `Llama4VisionConfig`, `Gemma3Config.mm_tokens_per_image`);
//! the four sizes every tower needs (layers, width, MLP width, heads) must be given. Errors name the field.

use super::import::ImportError;
use crate::model::{VisionFamily, VisionTower};
use serde_json::{Map, Value};

fn invalid(field: &str, reason: String) -> ImportError {
    ImportError::Invalid {
        field: format!("vision_config.{field}"),
        reason,
    }
}

/// Reads whole numbers of `vision_config`, within the architecture limits.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn opt(&self, names: &[&str]) -> Result<Option<u32>, ImportError> {
        super::import::dim(self.0, names).map_err(|e| match e {
            ImportError::Invalid { field, reason } => invalid(&field, reason),
            other => other,
        })
    }

    fn or(&self, names: &[&str], default: u32) -> Result<u32, ImportError> {
        Ok(self.opt(names)?.unwrap_or(default))
    }

    fn req(&self, names: &[&str]) -> Result<u32, ImportError> {
        match self.opt(names)? {
            Some(0) => Err(invalid(names[0], "must be at least 1".into())),
            Some(v) => Ok(v),
            None => Err(ImportError::Invalid {
                field: format!("vision_config.{}", names[0]),
                reason: "missing".into(),
            }),
        }
    }

    /// The length of a list field (`fullatt_block_indexes`, `deepstack_visual_indexes`), or `default`.
    fn len(&self, name: &str, default: u32) -> Result<u32, ImportError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Array(a)) => Ok(a.len().min(1 << 16) as u32),
            Some(v) => Err(invalid(name, format!("expected a list, got {v}"))),
        }
    }
}

/// The tower of a config (`outer` is the whole config; `text_hidden` the language model's width), or `None`
/// when it has no `vision_config` or one of a tower that is not modelled.
pub fn parse_vision(
    outer: &Map<String, Value>,
    text_hidden: u32,
) -> Result<Option<VisionTower>, ImportError> {
    let Some(vc) = outer.get("vision_config").and_then(Value::as_object) else {
        return Ok(None);
    };
    let outer_type = outer
        .get("model_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let inner_type = vc.get("model_type").and_then(Value::as_str).unwrap_or("");
    let family = match (inner_type, outer_type) {
        ("qwen2_5_vl", _) | (_, "qwen2_5_vl") => VisionFamily::Qwen25Vl,
        ("qwen3_vl" | "qwen3_vl_moe", _) | (_, "qwen3_vl" | "qwen3_vl_moe") => {
            VisionFamily::Qwen3Vl
        }
        ("llama4_vision_model", _) | (_, "llama4") => VisionFamily::Llama4,
        ("siglip_vision_model", _)
            if outer_type == "gemma3" || outer.contains_key("mm_tokens_per_image") =>
        {
            VisionFamily::Gemma3
        }
        _ => return Ok(None),
    };
    let f = Fields(vc);
    let channels = f.or(&["in_channels", "in_chans", "num_channels"], 3)?;
    let tower = match family {
        VisionFamily::Qwen25Vl | VisionFamily::Qwen3Vl => {
            let qwen25 = family == VisionFamily::Qwen25Vl;
            let layers = f.req(&["depth"])?;
            VisionTower {
                family,
                layers,
                hidden: f.req(&["hidden_size"])?,
                intermediate: f.req(&["intermediate_size"])?,
                heads: f.req(&["num_heads"])?,
                patch: f.or(&["patch_size"], if qwen25 { 14 } else { 16 })?,
                channels,
                out_hidden: f.or(&["out_hidden_size"], text_hidden)?,
                merge: f.or(&["spatial_merge_size"], 2)?,
                temporal_patch: f.or(&["temporal_patch_size"], 2)?,
                positions: if qwen25 {
                    0
                } else {
                    f.or(&["num_position_embeddings"], 2304)?
                },
                full_attention_layers: if qwen25 {
                    f.len("fullatt_block_indexes", 4)?.min(layers)
                } else {
                    0
                },
                window: if qwen25 {
                    f.or(&["window_size"], 112)?
                } else {
                    0
                },
                deepstack: if qwen25 {
                    0
                } else {
                    f.len("deepstack_visual_indexes", 3)?.min(layers)
                },
                ..VisionTower::default()
            }
        }
        VisionFamily::Gemma3 => VisionTower {
            family,
            layers: f.req(&["num_hidden_layers"])?,
            hidden: f.req(&["hidden_size"])?,
            intermediate: f.req(&["intermediate_size"])?,
            heads: f.req(&["num_attention_heads"])?,
            patch: f.or(&["patch_size"], 16)?,
            channels,
            out_hidden: text_hidden,
            image_size: f.or(&["image_size"], 224)?,
            tokens_per_image: Fields(outer).or(&["mm_tokens_per_image"], 256)?,
            ..VisionTower::default()
        },
        VisionFamily::Llama4 => {
            let ratio = vc
                .get("pixel_shuffle_ratio")
                .and_then(Value::as_f64)
                .unwrap_or(0.5);
            if !(ratio > 0.0 && ratio <= 1.0 && (1.0 / ratio).fract() == 0.0) {
                return Err(invalid(
                    "pixel_shuffle_ratio",
                    format!("{ratio} is not 1/n for a whole n"),
                ));
            }
            VisionTower {
                family,
                layers: f.req(&["num_hidden_layers"])?,
                hidden: f.req(&["hidden_size"])?,
                intermediate: f.req(&["intermediate_size"])?,
                heads: f.req(&["num_attention_heads"])?,
                patch: f.or(&["patch_size"], 14)?,
                channels,
                out_hidden: text_hidden,
                merge: (1.0 / ratio) as u32,
                image_size: f.or(&["image_size"], 448)?,
                projector_hidden: f.or(&["projector_input_dim"], 4096)?,
                ..VisionTower::default()
            }
        }
    };
    tower.check().map_err(|e| {
        let (field, reason) = e.split_once(": ").unwrap_or(("vision", e.as_str()));
        ImportError::Invalid {
            field: field.replacen("vision.", "vision_config.", 1),
            reason: reason.to_string(),
        }
    })?;
    Ok(Some(tower))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::model;

    /// Text + vision parameters of a catalog entry, and its tower.
    fn counts(id: &str) -> (f64, VisionTower) {
        let m = model(id).unwrap_or_else(|| panic!("{id}"));
        let v = m
            .arch()
            .vision
            .clone()
            .unwrap_or_else(|| panic!("{id} has no tower"));
        (m.arch().params().total + v.params().total(), v)
    }

    #[track_caller]
    fn within_one_percent(id: &str, published: f64) -> VisionTower {
        let (computed, v) = counts(id);
        let err = (computed - published).abs() / published;
        assert!(
            err < 0.01,
            "{id}: {computed} vs {published} ({:.3}%)",
            err * 100.0
        );
        v
    }

    #[test]
    fn qwen2_5_vl_text_and_vision_match_the_published_totals() {
        // Published: 3,754,622,976 and 8,292,166,656 (the models' safetensors totals, see models.json). The
        // counts are exact: text 3,085,938,688 + tower 668,684,288 (the 7B's merger ends in 3584, the 3B's in
        // 2048: 5120·(3584 − 2048) = 7,864,320 apart with their biases 1,536).
        let v = within_one_percent("qwen2.5-vl-3b-instruct", 3_754_622_976.0);
        assert_eq!(v.family, VisionFamily::Qwen25Vl);
        assert_eq!(v.params().total(), 668_684_288.0);
        assert_eq!(counts("qwen2.5-vl-3b-instruct").0, 3_754_622_976.0);
        let v = within_one_percent("qwen2.5-vl-7b-instruct", 8_292_166_656.0);
        assert_eq!(
            (v.full_attention_layers, v.window, v.out_hidden),
            (4, 112, 3584)
        );
        assert_eq!(counts("qwen2.5-vl-7b-instruct").0, 8_292_166_656.0);
    }

    #[test]
    fn qwen3_vl_text_and_vision_match_the_published_totals() {
        // Tower by hand (4B): block 4·1024 + 1024·3072 + 3072 + 1024² + 1024 + 2·1024·4096 + 4096 + 1024
        // = 12,596,224 × 24 = 302,309,376; Conv3d 1024·3·2·16·16 + 1024 = 1,573,888; positions 2304·1024 =
        // 2,359,296; merger 2·1024 + 4096² + 4096 + 4096·2560 + 2560 = 27,271,680; three deepstack mergers
        // 3 · (2·4096 + 4096² + 4096 + 4096·2560 + 2560) = 83,833,472: in all 415,347,712.
        let v = within_one_percent("qwen3-vl-4b-instruct", 4_437_815_808.0);
        assert_eq!(
            (v.family, v.deepstack, v.positions),
            (VisionFamily::Qwen3Vl, 3, 2304)
        );
        assert_eq!(v.params().total(), 415_347_712.0);
        assert_eq!(counts("qwen3-vl-4b-instruct").0, 4_437_815_808.0);
        within_one_percent("qwen3-vl-2b-instruct", 2_127_532_032.0);
        assert_eq!(counts("qwen3-vl-2b-instruct").0, 2_127_532_032.0);
    }

    #[test]
    fn gemma3_text_and_vision_match_the_published_totals() {
        // SigLIP by hand: Conv2d 1152·3·14² + 1152 = 678,528; positions (896/14)² · 1152 = 4,718,592; layer
        // 4·1152 + 4·(1152² + 1152) + 2·1152·4304 + 4304 + 1152 = 15,239,504 × 27 = 411,466,608; post-LN
        // 2,304: 416,866,032. Projector 1152·2560 + 1152 = 2,950,272 (4B).
        let v = within_one_percent("gemma-3-4b-it", 4_299_915_632.0);
        assert_eq!(v.family, VisionFamily::Gemma3);
        assert_eq!(v.params().tower, 416_866_032.0);
        assert_eq!(v.params().projector, 2_950_272.0);
        assert_eq!(v.image_tokens(1).llm, 256.0);
        within_one_percent("gemma-3-12b-it", 12_187_079_280.0);
        within_one_percent("gemma-3-27b-it", 27_432_062_576.0);
    }

    #[test]
    fn llama4_text_and_vision_match_the_published_totals() {
        // 34 layers of 4·(1408² + 1408) + 2·1408·5632 + 5632 + 1408 + 4·1408 = 23,807,872 → 809,467,648;
        // class 1,408 + positions 577·1408 = 812,416 + patch 588·1408 = 827,904 + LN 5,632; adapter
        // 5632·4096 + 4096² = 39,845,888; projector 4096·5120 = 20,971,520: 871,932,416, the Scout
        // checkpoint's vision encoder and projector (models.json).
        let v = within_one_percent("llama-4-scout-17b-16e-instruct", 108_641_793_536.0);
        assert_eq!(v.params().total(), 871_932_416.0);
        within_one_percent("llama-4-maverick-17b-128e-instruct", 400e9);
    }

    #[test]
    fn text_models_and_unmodelled_towers_have_none() {
        assert!(model("gemma-3-1b-it").unwrap().arch().vision.is_none());
        // Mistral Small 3.1's Pixtral tower is not modelled: the config reads as its language model.
        assert!(model("mistral-small-3.1-24b")
            .unwrap()
            .arch()
            .vision
            .is_none());
        let bad =
            serde_json::json!({"model_type": "qwen2_5_vl", "vision_config": {"depth": "many"}});
        let err = parse_vision(bad.as_object().unwrap(), 8).unwrap_err();
        assert!(err.to_string().contains("vision_config.depth"), "{err}");
        let missing =
            serde_json::json!({"model_type": "qwen2_5_vl", "vision_config": {"depth": 2}});
        let err = parse_vision(missing.as_object().unwrap(), 8).unwrap_err();
        assert!(
            err.to_string().contains("vision_config.hidden_size"),
            "{err}"
        );
    }
}
