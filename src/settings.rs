//! Every setting of the page, defined once: its link key, its form field, its range, the names training
//! setups use for it, and how to read and write it as text. The share-link codec ([`crate::share`]), the
//! form check ([`Form::check`]), the setup importer ([`crate::doctor::setup_import`]) and the page's
//! number inputs all read this table, so adding a setting is one entry here plus its model term.
//!
//! Link keys are never renamed once shipped: old links must keep decoding (`tests/share_links.rs`).

use crate::catalog;
use crate::form::{Form, CUSTOM};
use crate::model::limits::{MAX_BATCH, MAX_GPUS, MAX_MEMORY_GIB, MAX_RANK, MAX_TOKENS};
use crate::model::{Module, Optimizer};
use crate::share::{arch_from, arch_id};
use serde::{de::DeserializeOwned, Serialize};

/// One setting.
pub struct Setting {
    /// Key in share links (`batch`).
    pub key: &'static str,
    /// Field of the form JSON (`micro_batch`).
    pub field: &'static str,
    /// Accepted whole numbers, for number settings.
    pub range: Option<(u32, u32)>,
    /// Keys of training setups (HF `TrainingArguments`, TRL, LLaMA-Factory, axolotl, DeepSpeed, launchers)
    /// that mean exactly this setting with a value of the same form.
    pub aliases: &'static [&'static str],
    /// The value as link text.
    pub get: fn(&Form) -> String,
    /// Sets the value from link text; `false` (form unchanged) when the text is not a valid value.
    pub set: fn(&mut Form, &str) -> bool,
}

/// The serde (kebab-case) id of a unit enum variant, e.g. `Mode::Qlora` → `"qlora"`.
pub fn enum_id<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The unit enum variant with this serde id, if any.
pub fn enum_from<T: DeserializeOwned>(s: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
}

/// A whole number within `lo..=hi`.
pub fn number(s: &str, lo: u32, hi: u32) -> Option<u32> {
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|v| (lo..=hi).contains(v))
}

fn flag(b: bool) -> String {
    if b { "1" } else { "0" }.into()
}

fn flag_from(s: &str) -> Option<bool> {
    number(s, 0, 1).map(|v| v == 1)
}

fn put<T>(slot: &mut T, value: Option<T>) -> bool {
    value.map(|v| *slot = v).is_some()
}

fn targets_id(t: &[Module]) -> String {
    if Module::ALL.iter().all(|m| t.contains(m)) {
        return "all".into();
    }
    Module::ALL
        .iter()
        .filter(|m| t.contains(m))
        .map(enum_id)
        .collect::<Vec<_>>()
        .join(",")
}

fn targets_from(s: &str) -> Option<Vec<Module>> {
    match s {
        "all" => Some(Module::ALL.to_vec()),
        "" => Some(Vec::new()),
        _ => s.split(',').map(enum_from::<Module>).collect(),
    }
}

/// A whole-number setting.
macro_rules! number_setting {
    ($key:literal, $field:ident, $lo:expr, $hi:expr, [$($alias:literal),*]) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: Some(($lo, $hi)),
            aliases: &[$($alias),*],
            get: |f| f.$field.to_string(),
            set: |f, v| put(&mut f.$field, number(v, $lo, $hi)),
        }
    };
}

/// A unit-enum setting, written as its serde id.
macro_rules! enum_setting {
    ($key:literal, $field:ident) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: None,
            aliases: &[],
            get: |f| enum_id(&f.$field),
            set: |f, v| put(&mut f.$field, enum_from(v)),
        }
    };
}

/// An on/off setting, written `1`/`0`.
macro_rules! flag_setting {
    ($key:literal, $field:ident) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: None,
            aliases: &[],
            get: |f| flag(f.$field),
            set: |f, v| put(&mut f.$field, flag_from(v)),
        }
    };
}

/// Every setting, in link order.
pub static SETTINGS: &[Setting] = &[
    Setting {
        key: "model",
        field: "model",
        range: None,
        aliases: &[],
        get: |f| f.model.clone(),
        set: |f, v| {
            let id = if v == CUSTOM {
                Some(CUSTOM.to_string())
            } else {
                catalog::model(v).map(|m| m.id.clone())
            };
            put(&mut f.model, id)
        },
    },
    Setting {
        key: "arch",
        field: "custom_arch",
        range: None,
        aliases: &[],
        // Written only for a custom model: a catalog model's link stays short.
        get: |f| {
            if f.model == CUSTOM {
                arch_id(&f.custom_arch)
            } else {
                String::new()
            }
        },
        set: |f, v| put(&mut f.custom_arch, arch_from(v)),
    },
    Setting {
        key: "gpu",
        field: "gpu",
        range: None,
        aliases: &[],
        get: |f| f.gpu.clone(),
        set: |f, v| {
            let id = if v == CUSTOM {
                Some(CUSTOM.to_string())
            } else {
                catalog::gpu(v).map(|g| g.id.clone())
            };
            put(&mut f.gpu, id)
        },
    },
    number_setting!("vram", custom_vram_gib, 1, MAX_MEMORY_GIB, []),
    number_setting!(
        "gpus",
        gpus,
        1,
        MAX_GPUS,
        ["num_processes", "nproc_per_node", "num_gpus"]
    ),
    number_setting!("ram", ram_gib, 1, MAX_MEMORY_GIB, []),
    enum_setting!("stack", stack),
    enum_setting!("mode", mode),
    enum_setting!("weights", weights),
    enum_setting!("precision", precision),
    enum_setting!("optim", optimizer),
    number_setting!("rank", lora_rank, 1, MAX_RANK, ["lora_r", "lora_rank", "r"]),
    Setting {
        key: "targets",
        field: "lora_targets",
        range: None,
        aliases: &[],
        get: |f| targets_id(&f.lora_targets),
        set: |f, v| put(&mut f.lora_targets, targets_from(v)),
    },
    flag_setting!("embed", train_embed),
    flag_setting!("head", train_lm_head),
    flag_setting!("dora", dora),
    flag_setting!("dropout", lora_dropout),
    enum_setting!("peft", peft_method),
    number_setting!("vtok", virtual_tokens, 1, 65_536, ["num_virtual_tokens"]),
    number_setting!(
        "batch",
        micro_batch,
        1,
        MAX_BATCH,
        [
            "per_device_train_batch_size",
            "micro_batch_size",
            "train_micro_batch_size_per_gpu",
            "batch_size"
        ]
    ),
    number_setting!(
        "seq",
        seq_len,
        1,
        MAX_TOKENS,
        [
            "max_seq_length",
            "max_length",
            "model_max_length",
            "cutoff_len",
            "sequence_len",
            "max_seq_len"
        ]
    ),
    number_setting!(
        "accum",
        grad_accum,
        1,
        MAX_BATCH,
        ["gradient_accumulation_steps"]
    ),
    flag_setting!("varlen", variable_lengths),
    enum_setting!("ckpt", checkpointing),
    enum_setting!("attn", attention),
    enum_setting!("loss", loss),
    enum_setting!("par", parallelism),
    enum_setting!("offload", offload),
    number_setting!("prompt", prompt_tokens, 1, MAX_TOKENS, []),
    number_setting!("new", new_tokens, 0, MAX_TOKENS, ["max_new_tokens"]),
    number_setting!("conc", concurrent, 1, MAX_BATCH, []),
    enum_setting!("kv", kv_dtype),
    number_setting!(
        "ftl",
        trained_layers,
        1,
        crate::model::limits::MAX_LAYERS,
        ["freeze_trainable_layers", "lisa_activated_layers"]
    ),
    number_setting!(
        "prank",
        projection_rank,
        1,
        MAX_RANK,
        ["galore_rank", "apollo_rank"]
    ),
    flag_setting!("oib", optimizer_in_backward),
    enum_setting!("obj", objective),
    enum_setting!("ref", reference),
    number_setting!("gens", generations, 1, MAX_BATCH, ["num_generations"]),
    number_setting!(
        "comp",
        completion_tokens,
        0,
        MAX_TOKENS,
        ["max_completion_length"]
    ),
    number_setting!("vllm", vllm_gib, 0, MAX_MEMORY_GIB, []),
    enum_setting!("engine", engine),
    number_setting!("gmu", gpu_util_pct, 1, 100, []),
    flag_setting!("eager", enforce_eager),
    number_setting!("mns", max_num_seqs, 0, MAX_BATCH, ["max_num_seqs"]),
    number_setting!("block", block_size, 1, 1024, ["block_size"]),
    Setting {
        key: "hub",
        field: "hub",
        range: None,
        aliases: &[],
        // The Hub id the custom shape came from: a link opened later loads its weights summary (from this
        // browser's cache when it has one). Written only for a custom model, like `arch`.
        get: |f| {
            if f.model == CUSTOM {
                f.hub.clone()
            } else {
                String::new()
            }
        },
        set: |f, v| {
            let id = if v.is_empty() {
                Some(String::new())
            } else {
                crate::hub::parse_id(v).ok().map(|id| id.to_string())
            };
            put(&mut f.hub, id)
        },
    },
];

/// The setting with this link key.
pub fn by_key(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The setting a training-setup key stands for.
pub fn by_alias(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.aliases.contains(&key))
}

/// The accepted range of a number setting (`(1, 1)` for a key that is not one, which no test allows).
pub fn range(key: &str) -> (u32, u32) {
    by_key(key).and_then(|s| s.range).unwrap_or((1, 1))
}

/// Optimizer names of transformers `TrainingArguments.optim` (and LLaMA-Factory/axolotl, which take the
/// same): the first name of each is what exports write, every name is read by the importer. Source:
/// transformers `training_args.py` `OptimizerNames`.
pub const HF_OPTIMIZERS: &[(Optimizer, &[&str])] = &[
    (
        Optimizer::Adamw,
        &[
            "adamw_torch",
            "adamw_torch_fused",
            "adamw_hf",
            "adamw",
            "adamw_apex_fused",
        ],
    ),
    (
        Optimizer::Adamw8bit,
        &["adamw_8bit", "adamw_bnb_8bit", "adamw8bit"],
    ),
    (Optimizer::PagedAdamw, &["paged_adamw_32bit", "paged_adamw"]),
    (Optimizer::PagedAdamw8bit, &["paged_adamw_8bit"]),
    (Optimizer::Adafactor, &["adafactor"]),
    // `torch.optim.SGD` with the default `momentum=0`: no state (momentum comes only from `optim_args`).
    (Optimizer::Sgd, &["sgd"]),
    (Optimizer::Lion, &["lion_32bit", "lion", "paged_lion_32bit"]),
    (
        Optimizer::Galore,
        &["galore_adamw", "galore_adamw_layerwise"],
    ),
    (
        Optimizer::Apollo,
        &["apollo_adamw", "apollo_adamw_layerwise"],
    ),
    (Optimizer::Lomo, &["lomo"]),
    (Optimizer::AdaLomo, &["adalomo"]),
];

/// The `optim` name an export writes for this optimizer (transformers has one SGD, whose momentum is set
/// through `optim_args`, and no 16-bit AdamW: those map to their nearest name).
pub fn hf_optimizer_name(o: Optimizer) -> &'static str {
    let o = match o {
        Optimizer::Adamw16 | Optimizer::None => Optimizer::Adamw,
        Optimizer::SgdMomentum => Optimizer::Sgd,
        // Adam-mini has no `optim` name (LLaMA-Factory's `use_adam_mini` selects it).
        Optimizer::AdamMini => Optimizer::Adamw,
        other => other,
    };
    HF_OPTIMIZERS
        .iter()
        .find(|(opt, _)| *opt == o)
        .map_or("adamw_torch", |(_, names)| names[0])
}

/// The optimizer an `optim` name stands for.
pub fn hf_optimizer(name: &str) -> Option<Optimizer> {
    let name = name.trim().to_ascii_lowercase();
    HF_OPTIMIZERS
        .iter()
        .find(|(_, names)| names.contains(&name.as_str()))
        .map(|(o, _)| *o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fields_and_aliases_are_unique_and_fields_are_the_form_json() {
        let form = serde_json::to_value(Form::default()).unwrap();
        let mut keys = std::collections::BTreeSet::new();
        let mut aliases = std::collections::BTreeSet::new();
        for s in SETTINGS {
            assert!(keys.insert(s.key), "duplicate key {}", s.key);
            assert!(
                form.get(s.field).is_some(),
                "{} is not a form field",
                s.field
            );
            for a in s.aliases {
                assert!(aliases.insert(*a), "alias {a} twice");
            }
        }
        // Every form field is a setting: nothing escapes the table.
        for field in form.as_object().unwrap().keys() {
            assert!(
                SETTINGS.iter().any(|s| s.field == field),
                "form field {field} has no setting"
            );
        }
    }

    #[test]
    fn every_setting_reads_back_what_it_writes_and_refuses_garbage() {
        let d = Form::default();
        for s in SETTINGS {
            let mut f = d.clone();
            assert!(
                (s.set)(&mut f, &(s.get)(&d)) || s.key == "arch",
                "{}",
                s.key
            );
            assert_eq!(f, d, "{}", s.key);
            assert!(!(s.set)(&mut f, "\u{1}garbage"), "{}", s.key);
            assert_eq!(f, d, "{}: a refused value changed the form", s.key);
            if let Some((lo, hi)) = s.range {
                assert!((s.set)(&mut f, &lo.to_string()) && (s.set)(&mut f, &hi.to_string()));
                assert!(
                    !(s.set)(&mut f, &(u64::from(hi) + 1).to_string()),
                    "{}",
                    s.key
                );
            }
        }
    }

    #[test]
    fn every_optimizer_name_round_trips() {
        for (o, names) in HF_OPTIMIZERS {
            assert_eq!(hf_optimizer(hf_optimizer_name(*o)), Some(*o));
            for n in *names {
                assert_eq!(hf_optimizer(n), Some(*o), "{n}");
            }
        }
        assert_eq!(hf_optimizer("sgd"), Some(Optimizer::Sgd));
        assert_eq!(hf_optimizer_name(Optimizer::SgdMomentum), "sgd");
    }
}
