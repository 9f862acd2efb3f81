//! Every setting of the page, defined once: its link key, its form field, its range, the names training
//! setups use for it, how to read and write it as text, and what each training-setup export carries of it
//! ([`Exports`]). The share-link codec ([`crate::share`]), the form check ([`Form::check`]), the setup
//! importer ([`crate::doctor::setup_import`]) and the page's number inputs all read this table, so adding a
//! setting is one entry here plus its model term.
//!
//! Link keys are never renamed once shipped: old links must keep decoding (`tests/share_links.rs`).

use crate::catalog;
use crate::form::{Form, CUSTOM};
use crate::model::limits::{MAX_BATCH, MAX_GPUS, MAX_MEMORY_GIB, MAX_RANK, MAX_TOKENS};
use crate::model::peft::Method;
use crate::model::preference::{Objective, Reference};
use crate::model::{
    Checkpointing, LossImpl, Mode, Module, Offload, Optimizer, Parallelism, Precision, Version,
    WeightFormat,
};
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
    /// Whether each training-setup export ([`crate::advice::export`]) carries it, under which names, and
    /// why not where it cannot (`tests/settings_round_trip.rs` exports, imports and compares).
    pub exports: Exports,
}

/// How one export format carries a setting.
#[derive(Clone, Copy)]
pub enum Carry {
    /// The export writes the setting under one of `names` (the format's own keys, flags without `--`) and
    /// the importer ([`crate::doctor::import_setup`]) reads it back, on every form `when` accepts; on the
    /// others the value means nothing in that format or has no spelling there, as `otherwise` says.
    Yes {
        names: &'static [&'static str],
        when: fn(&Form) -> bool,
        otherwise: &'static str,
    },
    /// The format cannot say it: why.
    No(&'static str),
}

/// A setting's fate in the TRL command, the LLaMA-Factory YAML and the DeepSpeed JSON.
#[derive(Clone, Copy)]
pub struct Exports {
    pub trl: Carry,
    pub llama_factory: Carry,
    pub deepspeed: Carry,
}

impl Exports {
    /// The decisions as (format name, decision) pairs.
    pub fn all(&self) -> [(&'static str, Carry); 3] {
        [
            ("trl", self.trl),
            ("llama-factory", self.llama_factory),
            ("deepspeed", self.deepspeed),
        ]
    }
}

fn always(_: &Form) -> bool {
    true
}

/// Carried on every form.
const fn yes(names: &'static [&'static str]) -> Carry {
    Carry::Yes {
        names,
        when: always,
        otherwise: "",
    }
}

/// Carried on the forms `when` accepts.
const fn when(
    names: &'static [&'static str],
    when: fn(&Form) -> bool,
    otherwise: &'static str,
) -> Carry {
    Carry::Yes {
        names,
        when,
        otherwise,
    }
}

const fn no(why: &'static str) -> Carry {
    Carry::No(why)
}

/// A setting no training setup has.
const fn nowhere(why: &'static str) -> Exports {
    Exports {
        trl: no(why),
        llama_factory: no(why),
        deepspeed: no(why),
    }
}

const SERVING: Exports = nowhere("a serving setting: training setups do not have it");
const INFERENCE: Exports = nowhere("an inference setting: training setups do not generate");
const MACHINE: Exports =
    nowhere("the machine's memory, not the setup's: a setup runs where it is launched");
const NO_DS_MODEL: &str =
    "a DeepSpeed config says how to shard and offload, not which model or method trains";

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
    ($key:literal, $field:ident, $lo:expr, $hi:expr, [$($alias:literal),*], $exports:expr) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: Some(($lo, $hi)),
            aliases: &[$($alias),*],
            get: |f| f.$field.to_string(),
            set: |f, v| put(&mut f.$field, number(v, $lo, $hi)),
            exports: $exports,
        }
    };
}

/// A unit-enum setting, written as its serde id.
macro_rules! enum_setting {
    ($key:literal, $field:ident, $exports:expr) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: None,
            aliases: &[],
            get: |f| enum_id(&f.$field),
            set: |f, v| put(&mut f.$field, enum_from(v)),
            exports: $exports,
        }
    };
}

/// An on/off setting, written `1`/`0`.
macro_rules! flag_setting {
    ($key:literal, $field:ident, $exports:expr) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: None,
            aliases: &[],
            get: |f| flag(f.$field),
            set: |f, v| put(&mut f.$field, flag_from(v)),
            exports: $exports,
        }
    };
}

/// A library release `major.minor` whose major lies in `lo..=hi`.
pub fn version(s: &str, lo: u32, hi: u32) -> Option<Version> {
    Version::parse(s).filter(|v| (lo..=hi).contains(&v.major) && v.minor <= 999)
}

/// A library-release setting, written `major.minor`. The environment decides it, not the setup: no export
/// carries it, and the importer reads it from a key such as `torch_version`.
macro_rules! version_setting {
    ($key:literal, $field:ident, $lo:expr, $hi:expr, [$($alias:literal),*]) => {
        Setting {
            key: $key,
            field: stringify!($field),
            range: None,
            aliases: &[$($alias),*],
            get: |f| String::from(f.$field),
            set: |f, v| put(&mut f.$field, version(v, $lo, $hi)),
            exports: nowhere(
                "a library release is the environment's (`pip list`), not a setting of the setup",
            ),
        }
    };
}

// ---- Where the exports carry a setting ---------------------------------------------------------------
// The names below are the tools' own. TRL: `trl/trainer/model_config.py` (`ModelConfig`), `sft_config.py`,
// `dpo_config.py`, `kto_config.py`, `grpo_config.py`, `reward_config.py`, and `docs/source/clis.md` (the
// `trl sft|dpo|kto|grpo|reward` scripts, launched by accelerate with `--num_processes`); transformers
// `TrainingArguments` and `trainer_optimizer.py`. LLaMA-Factory: `src/llamafactory/hparams/
// finetuning_args.py`, `model_args.py`, `data_args.py`. DeepSpeed: `docs/_pages/config-json.md`.

fn lora_like(f: &Form) -> bool {
    matches!(f.mode, Mode::Lora | Mode::Qlora)
}

/// A LoRA adapter, the only one TRL's `ModelConfig` builds (`get_peft_config` → `LoraConfig`).
fn trl_lora(f: &Form) -> bool {
    lora_like(f) && f.peft_method == Method::Lora
}

/// LLaMA-Factory's adapters: `finetuning_type` `lora` or `oft`.
fn lf_adapter(f: &Form) -> bool {
    lora_like(f) && matches!(f.peft_method, Method::Lora | Method::Oft)
}

fn lf_lora(f: &Form) -> bool {
    lora_like(f) && f.peft_method == Method::Lora
}

/// The model has a vision tower (a catalog VLM, or a custom shape with one).
fn has_vision_tower(f: &Form) -> bool {
    f.arch().vision.is_some()
}

fn catalog_model(f: &Form) -> bool {
    f.model != CUSTOM && catalog::model(&f.model).is_some()
}

fn unquantized_16(f: &Form) -> bool {
    matches!(f.weights, WeightFormat::Bf16 | WeightFormat::Fp16)
}

/// bitsandbytes on the fly: 4-bit is QLoRA, 8-bit is LoRA on an int8 base (TRL `load_in_4bit` /
/// `load_in_8bit`, "Works only with LoRA"; LLaMA-Factory `quantization_bit` 4 / 8).
fn bnb_on_the_fly(f: &Form) -> bool {
    (f.mode == Mode::Qlora && f.weights.is_bnb_4bit())
        || (f.mode == Mode::Lora && f.weights == WeightFormat::Int8)
}

fn trl_weights(f: &Form) -> bool {
    bnb_on_the_fly(f)
        || (f.mode != Mode::Qlora && unquantized_16(f) && f.precision != Precision::Fp32)
}

fn lf_precision(f: &Form) -> bool {
    f.precision == Precision::Mixed
        || (f.precision == Precision::Pure16 && f.weights != WeightFormat::Fp16)
}

fn lf_weights(f: &Form) -> bool {
    bnb_on_the_fly(f) || (f.mode != Mode::Qlora && unquantized_16(f) && lf_precision(f))
}

fn ds_weights(f: &Form) -> bool {
    unquantized_16(f) && f.precision == Precision::Mixed
}

/// ZeRO as the export names its config file (`ds_z2_config.json`…): none, or a stage the form chose.
fn zero_by_name(f: &Form) -> bool {
    match f.parallelism {
        Parallelism::Zero1 | Parallelism::Zero2 | Parallelism::Zero3 => true,
        // Offloading needs ZeRO: the export writes stage 3.
        Parallelism::Ddp => f.offload == Offload::None,
        Parallelism::Pipeline | Parallelism::Tensor => false,
    }
}

fn zero(f: &Form) -> bool {
    matches!(
        f.parallelism,
        Parallelism::Zero1 | Parallelism::Zero2 | Parallelism::Zero3
    )
}

/// `offload_param` exists for ZeRO-3 only.
fn offload_expressible(f: &Form) -> bool {
    !(f.offload == Offload::ParamOptimizer
        && matches!(f.parallelism, Parallelism::Zero1 | Parallelism::Zero2))
}

fn projected(f: &Form) -> bool {
    crate::model::full_tuning::is_projected(f.optimizer)
}

fn grpo(f: &Form) -> bool {
    f.objective == Objective::Grpo
}

/// The reference a script picks itself when none is precomputed: with an adapter, the base with the
/// adapter disabled (TRL `DPOTrainer`: `is_peft_model(model)` → `ref_model = None`; LLaMA-Factory
/// `create_ref_model` for `finetuning_type: lora`), otherwise a copy of the model (LLaMA-Factory's OFT too).
fn implied_reference(lora: bool) -> Reference {
    if lora {
        Reference::DisabledAdapters
    } else {
        Reference::Copy
    }
}

fn trl_reference(f: &Form) -> bool {
    let implied = implied_reference(lora_like(f));
    match f.objective {
        // `precompute_ref_log_probs` (DPOConfig, KTOConfig).
        Objective::Dpo | Objective::Kto => {
            f.reference == Reference::Precomputed || f.reference == implied
        }
        // GRPOConfig `beta`: 0.0 (the default since TRL 0.19) loads no reference model.
        Objective::Grpo => f.reference == Reference::None || f.reference == implied,
        _ => false,
    }
}

fn lf_reference(f: &Form) -> bool {
    matches!(
        f.objective,
        Objective::Dpo | Objective::Kto | Objective::Ppo
    ) && f.reference == implied_reference(lora_like(f) && f.peft_method != Method::Oft)
}

fn vllm_share(f: &Form) -> bool {
    grpo(f) && f64::from(f.vllm_gib) <= f.gpu_usable_gib()
}

const LORA_ONLY_TRL: &str =
    "TRL's ModelConfig builds a LoRA adapter only (`use_peft`): other methods and \
     full, freeze or BAdam tuning have no adapter to describe";
const ADAPTERS_LF: &str =
    "LLaMA-Factory's adapters are LoRA and OFT (`finetuning_type`); other methods \
     and full or freeze tuning have none";
const LORA_ONLY_LF: &str = "a LoRA switch (`use_dora`/`lora_dropout` are LoRA arguments; OFT's \
     `module_dropout` drops whole blocks and keeps no copy of the input)";
const NO_DS_TRAINING: &str =
    "DeepSpeed sees batches and shards, not the data, the model code or the loss";

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
        exports: Exports {
            trl: when(
                &["model_name_or_path"],
                catalog_model,
                "a custom shape has no catalog checkpoint: the export writes its Hub id or a placeholder path",
            ),
            llama_factory: when(
                &["model_name_or_path"],
                catalog_model,
                "a custom shape has no catalog checkpoint: the export writes its Hub id or a placeholder path",
            ),
            deepspeed: no(NO_DS_MODEL),
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
        exports: nowhere(
            "the shape is the checkpoint's config.json (imported on its own), not the setup's",
        ),
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
        exports: nowhere("a setup runs on whatever GPU launches it and names none"),
    },
    number_setting!("vram", custom_vram_gib, 1, MAX_MEMORY_GIB, [], MACHINE),
    number_setting!(
        "gpus",
        gpus,
        1,
        MAX_GPUS,
        ["num_processes", "nproc_per_node", "num_gpus"],
        Exports {
            // `accelerate launch --num_processes N`.
            trl: yes(&["num_processes"]),
            llama_factory: no(
                "LLaMA-Factory's YAML has no GPU count: `llamafactory-cli train` uses the visible GPUs (`CUDA_VISIBLE_DEVICES`, `NPROC_PER_NODE`)",
            ),
            // "train_batch_size must be equal to train_micro_batch_size_per_gpu * gradient_accumulation_steps
            // * number of GPUs".
            deepspeed: yes(&["train_batch_size"]),
        }
    ),
    number_setting!("ram", ram_gib, 1, MAX_MEMORY_GIB, [], MACHINE),
    enum_setting!("stack", stack, Exports {
        trl: no(
            "the format is itself the stack (TRL on the HF Trainer); an import keeps the page's preset, whose defaults would overwrite the imported settings",
        ),
        llama_factory: no(
            "the format is itself the stack (LLaMA-Factory); an import keeps the page's preset, whose defaults would overwrite the imported settings",
        ),
        deepspeed: no("the JSON does not name the trainer that launches DeepSpeed"),
    }),
    enum_setting!("mode", mode, Exports {
        // `use_peft`, `load_in_4bit`; no flag means every weight trains.
        trl: when(
            &["use_peft", "load_in_4bit"],
            |f| matches!(f.mode, Mode::Full | Mode::Lora | Mode::Qlora),
            "TRL trains every weight or an adapter: freeze tuning, BAdam and LISA have no flag, and inference is not a training run",
        ),
        // `finetuning_type` (lora, oft, freeze, full), `quantization_bit: 4`, `use_badam`.
        llama_factory: when(
            &["finetuning_type", "quantization_bit", "use_badam"],
            |f| !matches!(f.mode, Mode::Lisa | Mode::Inference),
            "LISA is LMFlow's (`lisa_activated_layers`), not LLaMA-Factory's, and inference is not a training run",
        ),
        deepspeed: no(NO_DS_MODEL),
    }),
    enum_setting!("weights", weights, Exports {
        // `load_in_4bit`, `bnb_4bit_quant_type` (nf4/fp4), `use_bnb_nested_quant`, `load_in_8bit`; an
        // unquantized base by its dtype and autocast (`dtype`, `bf16`, `fp16`).
        trl: when(
            &[
                "load_in_4bit",
                "bnb_4bit_quant_type",
                "use_bnb_nested_quant",
                "load_in_8bit",
                "dtype",
                "bf16",
                "fp16",
            ],
            trl_weights,
            "FP8, GPTQ, AWQ and MXFP4 weights come quantized in the checkpoint, not from a flag (and TRL has no flag for `Mxfp4Config(dequantize=True)`); bitsandbytes 4-bit is QLoRA and 8-bit is LoRA only; a 16-bit base's bf16/fp16 does not show in an fp32 run",
        ),
        // `quantization_bit` 4/8, `quantization_type` nf4/fp4, `double_quantization` (default true).
        llama_factory: when(
            &[
                "quantization_bit",
                "quantization_type",
                "double_quantization",
                "pure_bf16",
                "bf16",
                "fp16",
            ],
            lf_weights,
            "as for TRL, and a 16-bit base shows only through bf16/fp16 autocast or `pure_bf16` (LLaMA-Factory has no fp32 switch and no pure fp16)",
        ),
        deepspeed: when(
            &["bf16.enabled", "fp16.enabled"],
            ds_weights,
            "DeepSpeed knows no quantized base, and bf16 vs fp16 shows only under mixed precision",
        ),
    }),
    enum_setting!("precision", precision, Exports {
        // Mixed: an fp32-loaded model (`dtype float32`, ModelConfig's default) under `bf16`/`fp16`
        // autocast; pure: `dtype bfloat16`/`float16`; fp32: `bf16 false` (SFTConfig turns bf16 on unless
        // told otherwise).
        trl: yes(&["dtype", "bf16", "fp16"]),
        llama_factory: when(
            &["pure_bf16", "bf16", "fp16"],
            lf_precision,
            "LLaMA-Factory has no pure fp16 and no fp32 switch (without bf16/fp16 it infers the dtype from the checkpoint, `infer_optim_dtype`)",
        ),
        deepspeed: when(
            &["bf16.enabled", "fp16.enabled"],
            |f| f.precision != Precision::Pure16,
            "DeepSpeed's bf16/fp16 modes keep fp32 master weights: pure 16-bit has no switch",
        ),
    }),
    enum_setting!("optim", optimizer, Exports {
        // `optim` (HF_OPTIMIZERS), `optim_args` (SGD's momentum).
        trl: when(
            &["optim", "optim_args"],
            |f| {
                !matches!(
                    f.optimizer,
                    Optimizer::Adamw16 | Optimizer::AdamMini | Optimizer::QGalore | Optimizer::None
                )
            },
            "transformers has no `optim` for AdamW with 16-bit states, for Adam-mini or for Q-GaLore (its own `run_pretrain.py` trains with it)",
        ),
        // `optim`, or `use_galore` / `use_apollo` / `use_adam_mini`.
        llama_factory: when(
            &["optim", "optim_args", "use_galore", "use_apollo", "use_adam_mini"],
            |f| !matches!(f.optimizer, Optimizer::Adamw16 | Optimizer::QGalore | Optimizer::None),
            "transformers has no `optim` for AdamW with 16-bit states, and LLaMA-Factory has no Q-GaLore",
        ),
        deepspeed: no(
            "the HF Trainer's `optim` picks the optimizer: a DeepSpeed `optimizer` block would replace it with DeepSpeed's own",
        ),
    }),
    number_setting!(
        "rank",
        lora_rank,
        1,
        MAX_RANK,
        ["lora_r", "lora_rank", "r", "oft_block_size"],
        Exports {
            trl: when(&["lora_r"], trl_lora, LORA_ONLY_TRL),
            // OFT's rank field is its block size (`oft_block_size`).
            llama_factory: when(&["lora_rank", "oft_block_size"], lf_adapter, ADAPTERS_LF),
            deepspeed: no(NO_DS_MODEL),
        }
    ),
    Setting {
        key: "targets",
        field: "lora_targets",
        range: None,
        aliases: &[],
        get: |f| targets_id(&f.lora_targets),
        set: |f, v| put(&mut f.lora_targets, targets_from(v)),
        exports: Exports {
            trl: when(
                &["lora_target_modules"],
                |f| trl_lora(f) && !f.lora_targets.is_empty(),
                "TRL's ModelConfig builds a LoRA adapter only, and one on no module is none",
            ),
            llama_factory: when(
                &["lora_target", "oft_target"],
                |f| lf_adapter(f) && !f.lora_targets.is_empty(),
                "LLaMA-Factory's adapters are LoRA and OFT, and one on no module is none",
            ),
            deepspeed: no(NO_DS_MODEL),
        },
    },
    // `modules_to_save`: TRL `lora_modules_to_save`, LLaMA-Factory `additional_target`.
    flag_setting!("embed", train_embed, Exports {
        trl: when(&["lora_modules_to_save"], trl_lora, LORA_ONLY_TRL),
        llama_factory: when(&["additional_target"], lf_adapter, ADAPTERS_LF),
        deepspeed: no(NO_DS_MODEL),
    }),
    flag_setting!("head", train_lm_head, Exports {
        trl: when(&["lora_modules_to_save"], trl_lora, LORA_ONLY_TRL),
        llama_factory: when(&["additional_target"], lf_adapter, ADAPTERS_LF),
        deepspeed: no(NO_DS_MODEL),
    }),
    // BOFT's butterfly factors; its block size is the rank field (`boft_block_size`).
    number_setting!("bfly", butterfly_factors, 1, 16, ["boft_n_butterfly_factor"], Exports {
        trl: no("TRL's ModelConfig builds a LoraConfig only: a BOFT adapter lives in its adapter_config.json, which the importer reads"),
        llama_factory: no("LLaMA-Factory's adapters are LoRA and OFT (`finetuning_type`); BOFT is not among them"),
        deepspeed: no(NO_DS_MODEL),
    }),
    // LoRA's `trainable_token_indices`: the rows counted by `ttok` train beside the adapters.
    flag_setting!("ltok", lora_tokens, Exports {
        trl: no(
            "TRL's ModelConfig builds its LoraConfig without `trainable_token_indices`: they live in the adapter_config.json, which the importer reads",
        ),
        llama_factory: no(
            "LLaMA-Factory's LoRA arguments have no `trainable_token_indices` (`additional_target` trains whole modules)",
        ),
        deepspeed: no(NO_DS_MODEL),
    }),
    flag_setting!("dora", dora, Exports {
        trl: when(&["use_dora"], trl_lora, LORA_ONLY_TRL),
        llama_factory: when(&["use_dora"], lf_lora, LORA_ONLY_LF),
        deepspeed: no(NO_DS_MODEL),
    }),
    // TRL's `lora_dropout` defaults to 0.05, LLaMA-Factory's to 0.
    flag_setting!("dropout", lora_dropout, Exports {
        trl: when(&["lora_dropout"], trl_lora, LORA_ONLY_TRL),
        llama_factory: when(&["lora_dropout"], lf_lora, LORA_ONLY_LF),
        deepspeed: no(NO_DS_MODEL),
    }),
    enum_setting!("peft", peft_method, Exports {
        trl: when(
            &["use_peft"],
            trl_lora,
            "TRL's ModelConfig builds a LoraConfig only: VeRA, IA³, LoHa, OFT, prompt methods, trainable tokens… need code",
        ),
        llama_factory: when(
            &["finetuning_type"],
            lf_adapter,
            "LLaMA-Factory's adapters are LoRA and OFT (`finetuning_type`)",
        ),
        deepspeed: no(NO_DS_MODEL),
    }),
    number_setting!("vtok", virtual_tokens, 1, 65_536, ["num_virtual_tokens"], Exports {
        trl: no(
            "TRL's ModelConfig has no prompt tuning: the count lives in the adapter_config.json (`num_virtual_tokens`), which the importer reads",
        ),
        llama_factory: no(
            "LLaMA-Factory has no prompt tuning (`finetuning_type`: lora, oft, freeze, full)",
        ),
        deepspeed: no(NO_DS_MODEL),
    }),
    // PEFT trainable tokens (`TrainableTokensConfig.token_indices`, their count). Neither TRL's `ModelConfig`
    // nor LLaMA-Factory's `FinetuningArguments` builds one; the count lives in the adapter_config.json,
    // which the importer reads (`catalog::import::parse_adapter_config`).
    number_setting!("ttok", trainable_tokens, 1, crate::model::limits::MAX_DIM, [], Exports {
        trl: no(
            "TRL's ModelConfig builds a LoraConfig only and has no `trainable_token_indices`: the tokens live in the adapter_config.json (`token_indices`), which the importer reads",
        ),
        llama_factory: no(
            "LLaMA-Factory has no trainable tokens (`finetuning_type`: lora, oft, freeze, full; `additional_target` trains whole modules)",
        ),
        deepspeed: no(NO_DS_MODEL),
    }),
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
        ],
        Exports {
            trl: yes(&["per_device_train_batch_size"]),
            llama_factory: yes(&["per_device_train_batch_size"]),
            deepspeed: yes(&["train_micro_batch_size_per_gpu"]),
        }
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
        ],
        Exports {
            // `max_length` of SFTConfig, DPOConfig, KTOConfig, RewardConfig.
            trl: when(
                &["max_length"],
                |f| !grpo(f),
                "GRPO's length is the prompt's, and GRPOConfig has no prompt limit since TRL 0.28 (`max_prompt_length` removed, #4847)",
            ),
            llama_factory: yes(&["cutoff_len"]),
            deepspeed: no(NO_DS_TRAINING),
        }
    ),
    number_setting!(
        "accum",
        grad_accum,
        1,
        MAX_BATCH,
        ["gradient_accumulation_steps"],
        Exports {
            trl: yes(&["gradient_accumulation_steps"]),
            llama_factory: yes(&["gradient_accumulation_steps"]),
            deepspeed: yes(&["gradient_accumulation_steps"]),
        }
    ),
    flag_setting!("varlen", variable_lengths, Exports {
        trl: when(
            &["packing"],
            |f| matches!(
                f.objective,
                Objective::Sft | Objective::Orpo | Objective::Simpo | Objective::Ppo
            ),
            "only SFTConfig packs (`packing`): the DPO, KTO, GRPO and reward scripts pad each batch",
        ),
        llama_factory: when(
            &["packing"],
            |f| matches!(f.objective, Objective::Sft | Objective::Grpo),
            "LLaMA-Factory packs supervised data only: pairwise and KTO data are padded",
        ),
        deepspeed: no(NO_DS_TRAINING),
    }),
    enum_setting!("ckpt", checkpointing, Exports {
        // Written both ways: SFTConfig turns it on by default, TrainingArguments off.
        trl: when(
            &["gradient_checkpointing"],
            |f| f.checkpointing != Checkpointing::Offload,
            "transformers has no offloaded checkpointing (Unsloth's `use_gradient_checkpointing=\"unsloth\"`)",
        ),
        llama_factory: yes(&["disable_gradient_checkpointing", "use_unsloth_gc"]),
        deepspeed: no(
            "DeepSpeed's `activation_checkpointing` configures its own checkpointing API, which HF models do not call",
        ),
    }),
    enum_setting!("attn", attention, Exports {
        trl: yes(&["attn_implementation"]),
        llama_factory: yes(&["flash_attn"]),
        deepspeed: no(NO_DS_TRAINING),
    }),
    enum_setting!("loss", loss, Exports {
        trl: when(
            &["use_liger_kernel"],
            |f| matches!(f.loss, LossImpl::Fp32Logits | LossImpl::Fused | LossImpl::TrlFusedHead),
            "16-bit and chunked logits are the model code's, not a switch",
        ),
        llama_factory: when(
            &["enable_liger_kernel"],
            |f| matches!(f.loss, LossImpl::Fp32Logits | LossImpl::Fused),
            "16-bit and chunked logits are the model code's, and TRL's fused head is TRL's own",
        ),
        deepspeed: no(NO_DS_TRAINING),
    }),
    // The command and the YAML point at the DeepSpeed JSON by a file name that says its stage and offload
    // (LLaMA-Factory's `examples/deepspeed/ds_z3_offload_config.json` naming).
    enum_setting!("par", parallelism, Exports {
        trl: when(
            &["deepspeed"],
            zero_by_name,
            "pipeline and tensor parallelism are not ZeRO, and offloading without ZeRO is written as ZeRO-3",
        ),
        llama_factory: when(
            &["deepspeed"],
            zero_by_name,
            "pipeline and tensor parallelism are not ZeRO, and offloading without ZeRO is written as ZeRO-3",
        ),
        deepspeed: when(
            &["zero_optimization.stage"],
            zero,
            "without ZeRO there is no DeepSpeed config (offloading alone is written as ZeRO-3)",
        ),
    }),
    enum_setting!("offload", offload, Exports {
        trl: when(
            &["deepspeed"],
            offload_expressible,
            "parameters offload under ZeRO-3 only (`offload_param`)",
        ),
        llama_factory: when(
            &["deepspeed"],
            offload_expressible,
            "parameters offload under ZeRO-3 only (`offload_param`)",
        ),
        deepspeed: when(
            &[
                "zero_optimization.offload_optimizer.device",
                "zero_optimization.offload_param.device",
            ],
            offload_expressible,
            "parameters offload under ZeRO-3 only (`offload_param`)",
        ),
    }),
    number_setting!("prompt", prompt_tokens, 1, MAX_TOKENS, [], INFERENCE),
    number_setting!("new", new_tokens, 0, MAX_TOKENS, ["max_new_tokens"], INFERENCE),
    number_setting!("conc", concurrent, 1, MAX_BATCH, [], INFERENCE),
    enum_setting!("kv", kv_dtype, INFERENCE),
    number_setting!(
        "ftl",
        trained_layers,
        1,
        crate::model::limits::MAX_LAYERS,
        ["freeze_trainable_layers", "lisa_activated_layers"],
        Exports {
            trl: no("TRL trains every weight or an adapter: no layer freezing"),
            llama_factory: when(
                &["freeze_trainable_layers"],
                |f| f.mode == Mode::Freeze,
                "LLaMA-Factory's BAdam block is one layer (`badam_mode: layer`), and LISA is not LLaMA-Factory's",
            ),
            deepspeed: no(NO_DS_MODEL),
        }
    ),
    number_setting!(
        "prank",
        projection_rank,
        1,
        MAX_RANK,
        ["galore_rank", "apollo_rank"],
        Exports {
            // `optim_args="rank=…"` (transformers `_get_galore_optimizer` / `_get_apollo_optimizer`).
            trl: when(&["optim_args"], projected, "only GaLore and APOLLO project gradients"),
            llama_factory: when(
                &["galore_rank", "apollo_rank"],
                projected,
                "only GaLore and APOLLO project gradients",
            ),
            deepspeed: no("the optimizer is the Trainer's, not DeepSpeed's"),
        }
    ),
    flag_setting!("oib", optimizer_in_backward, Exports {
        // `galore_adamw_layerwise`: each parameter stepped in a post-accumulate-grad hook.
        trl: when(
            &["optim"],
            projected,
            "the Trainer steps in backward only the `_layerwise` GaLore and APOLLO optimizers (torchtune's `optimizer_in_bwd` has no Trainer flag)",
        ),
        llama_factory: when(
            &["galore_layerwise", "apollo_layerwise"],
            projected,
            "LLaMA-Factory steps in backward only GaLore and APOLLO (`galore_layerwise`, `apollo_layerwise`)",
        ),
        deepspeed: no("the optimizer is the Trainer's, not DeepSpeed's"),
    }),
    enum_setting!("obj", objective, Exports {
        // The script: `trl sft|dpo|kto|grpo|reward`.
        trl: when(
            &["sft", "dpo", "kto", "grpo", "reward"],
            |f| !matches!(f.objective, Objective::Orpo | Objective::Simpo | Objective::Ppo),
            "ORPO, SimPO and PPO have no TRL script (`docs/source/clis.md`): their trainers need code",
        ),
        // `stage` (pt, sft, rm, ppo, dpo, kto) and `pref_loss` (orpo, simpo).
        llama_factory: when(
            &["stage", "pref_loss"],
            |f| !grpo(f),
            "LLaMA-Factory has no GRPO stage",
        ),
        deepspeed: no(NO_DS_TRAINING),
    }),
    enum_setting!("ref", reference, Exports {
        // `precompute_ref_log_probs` (DPO, KTO), GRPO's `beta` (0 loads no reference), and the adapter:
        // with one the script disables it for the reference, without one it loads a copy.
        trl: when(
            &["precompute_ref_log_probs", "beta", "use_peft"],
            trl_reference,
            "the scripts choose the reference themselves: disabled adapters with PEFT, a copy without (and GRPO cannot precompute)",
        ),
        // LLaMA-Factory sets `precompute_ref_log_probs = False` (`train/dpo/trainer.py`) and picks the
        // reference from `finetuning_type` (`train/trainer_utils.py` `create_ref_model`).
        llama_factory: when(
            &["finetuning_type"],
            lf_reference,
            "LLaMA-Factory chooses the reference itself from `finetuning_type` and never precomputes it",
        ),
        deepspeed: no(NO_DS_TRAINING),
    }),
    number_setting!("gens", generations, 1, MAX_BATCH, ["num_generations"], Exports {
        trl: when(&["num_generations"], grpo, "only GRPO generates"),
        llama_factory: no("LLaMA-Factory has no GRPO stage"),
        deepspeed: no(NO_DS_TRAINING),
    }),
    number_setting!(
        "comp",
        completion_tokens,
        0,
        MAX_TOKENS,
        ["max_completion_length"],
        Exports {
            trl: when(&["max_completion_length"], grpo, "only GRPO generates"),
            llama_factory: no("LLaMA-Factory has no GRPO stage"),
            deepspeed: no(NO_DS_TRAINING),
        }
    ),
    // GRPOConfig `use_vllm`, `vllm_mode="colocate"` and `vllm_gpu_memory_utilization`, the engine's share of
    // the GPU's memory.
    number_setting!("vllm", vllm_gib, 0, MAX_MEMORY_GIB, [], Exports {
        trl: when(
            &["use_vllm", "vllm_mode", "vllm_gpu_memory_utilization"],
            vllm_share,
            "only GRPO generates, and an engine larger than the GPU has no share of it",
        ),
        llama_factory: no("LLaMA-Factory has no GRPO stage"),
        deepspeed: no(NO_DS_TRAINING),
    }),
    // GRPOConfig `vllm_enable_sleep_mode`: the colocated engine sleeps through the training step.
    flag_setting!("vsleep", vllm_sleep, Exports {
        trl: when(
            &["vllm_enable_sleep_mode"],
            |f| vllm_share(f) && f.vllm_gib > 0,
            "only a colocated engine (GRPO with vLLM on the training GPU) sleeps",
        ),
        llama_factory: no("LLaMA-Factory has no GRPO stage"),
        deepspeed: no(NO_DS_TRAINING),
    }),
    enum_setting!("engine", engine, SERVING),
    number_setting!("gmu", gpu_util_pct, 1, 100, [], SERVING),
    flag_setting!("eager", enforce_eager, SERVING),
    number_setting!("mns", max_num_seqs, 0, MAX_BATCH, ["max_num_seqs"], SERVING),
    number_setting!("block", block_size, 1, 1024, ["block_size"], SERVING),
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
        exports: Exports {
            trl: no(
                "written as `model_name_or_path`, but an import does not fetch shapes: a model outside the catalog is reported as ignored",
            ),
            llama_factory: no(
                "written as `model_name_or_path`, but an import does not fetch shapes: a model outside the catalog is reported as ignored",
            ),
            deepspeed: no(NO_DS_MODEL),
        },
    },
    // Images per sample of a vision-language model (`model::vision`). How many images a sample has is the
    // dataset's: no training setup states it.
    number_setting!(
        "images",
        images,
        0,
        crate::model::limits::MAX_IMAGES,
        [],
        nowhere("the images come with the dataset: no setup key says how many a sample has")
    ),
    // The vision tower trains. LLaMA-Factory `freeze_vision_tower` (`hparams/finetuning_args.py`, default
    // true) is its inverse; TRL has no switch for it.
    flag_setting!("vtower", train_vision, Exports {
        trl: no(
            "TRL has no switch for the vision tower: a full fine-tune trains every weight, and where adapters go is `lora_target_modules`' matter",
        ),
        llama_factory: when(
            &["freeze_vision_tower"],
            has_vision_tower,
            "only a vision-language model has a tower to freeze",
        ),
        deepspeed: no(NO_DS_MODEL),
    }),
    // The library releases whose behaviour moves memory (`model::Versions` lists what each changes).
    version_setting!("torch", torch_version, 1, 3, ["torch_version"]),
    version_setting!("tf", transformers_version, 4, 6, ["transformers_version"]),
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
    // Q-GaLore's own training script (`VITA-Group/Q-GaLore` `run_pretrain.py --optimizer`); transformers has
    // no such `optim`.
    (
        Optimizer::QGalore,
        &["q_galore_adamw8bit", "q_galore_adamw8bit_per_layer"],
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
