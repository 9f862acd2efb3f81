//! Import a training setup: a command line (HF Trainer / TRL / LLaMA-Factory flags), a LLaMA-Factory or
//! axolotl YAML, a DeepSpeed JSON, or a PEFT `adapter_config.json`, onto the page's [`Form`]. Every input is
//! reduced to `key = value` pairs and one table maps the known keys; the rest are reported as ignored.
//! Total and linear: no input panics or hangs, and a failed import leaves the form unchanged.

use crate::catalog::{self, import};
use crate::form::Form;
use crate::model::preference::{Objective, Reference};
use crate::model::Optimizer;
use crate::model::{
    AttentionImpl, Checkpointing, LossImpl, Mode, Module, Offload, Parallelism, Precision,
    WeightFormat,
};
use serde::Serialize;
use serde_json::Value;

/// Largest text accepted.
pub const MAX_SETUP_BYTES: usize = 1 << 20;

/// What an import did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SetupImport {
    /// The form with the recognised settings applied.
    #[serde(skip)]
    pub form: Form,
    /// Which input format was recognised.
    pub format: &'static str,
    /// Keys that set something.
    pub used: Vec<String>,
    /// Keys that were read but mean nothing for memory (or were not understood), with their values.
    pub ignored: Vec<String>,
}

/// Why an import failed (the form stays unchanged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetupError {
    Empty,
    TooLarge(usize),
    /// Nothing in the text looked like a setting.
    NothingRecognised,
    /// JSON that did not parse.
    BadJson(String),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Empty => write!(f, "nothing to import"),
            SetupError::TooLarge(n) => write!(f, "{n} bytes is too large (limit {MAX_SETUP_BYTES})"),
            SetupError::NothingRecognised => write!(
                f,
                "no training setting found: paste a command line with --flags, a YAML config or a DeepSpeed JSON"
            ),
            SetupError::BadJson(e) => write!(f, "not valid JSON: {e}"),
        }
    }
}

/// Imports a setup onto `base`.
pub fn import_setup(text: &str, base: &Form) -> Result<SetupImport, SetupError> {
    if text.len() > MAX_SETUP_BYTES {
        return Err(SetupError::TooLarge(text.len()));
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(SetupError::Empty);
    }
    let (format, pairs) = if trimmed.starts_with('{') {
        let v: Value =
            serde_json::from_str(trimmed).map_err(|e| SetupError::BadJson(e.to_string()))?;
        if v.get("target_modules").is_some() || v.get("peft_type").is_some() {
            return adapter(&v, base);
        }
        let mut pairs = Vec::new();
        flatten_json("", &v, &mut pairs, 0);
        let format = if v.get("zero_optimization").is_some() {
            "deepspeed-json"
        } else {
            "json"
        };
        (format, pairs)
    } else if trimmed.contains("--") {
        let mut pairs = command_line(trimmed);
        // TRL's `sft` script trains every weight unless `--use_peft` is given (TRL `ModelConfig.use_peft`,
        // default false): say so explicitly, before the flags, so `--use_peft`/`--load_in_4bit` still win.
        // TRL's scripts (`trl sft|dpo|kto|grpo|reward`, or `-m trl.scripts.<name>`) train every weight unless
        // `--use_peft` is given (TRL `ModelConfig.use_peft`, default false), and name their objective: say
        // both explicitly, before the flags, so `--use_peft`/`--load_in_4bit` still win.
        let script = ["sft", "dpo", "kto", "grpo", "reward"]
            .into_iter()
            .find(|name| {
                trimmed.contains(&format!("trl {name}"))
                    || trimmed.contains(&format!("trl.scripts.{name}"))
            });
        if let Some(name) = script {
            if !pairs.iter().any(|(k, _)| k == "use_peft") {
                pairs.insert(0, ("finetuning_type".into(), "full".into()));
            }
            let stage = if name == "reward" { "rm" } else { name };
            pairs.insert(0, ("stage".into(), stage.into()));
        }
        ("command-line", pairs)
    } else {
        ("yaml", yaml(trimmed))
    };
    let mut out = SetupImport {
        form: base.clone(),
        format,
        used: Vec::new(),
        ignored: Vec::new(),
    };
    for (k, v) in pairs {
        if apply(&mut out.form, &k, &v) {
            out.used.push(k);
        } else {
            let shown: String = v.chars().take(40).collect();
            out.ignored.push(if v.is_empty() {
                k
            } else {
                format!("{k}={shown}")
            });
        }
    }
    if out.used.is_empty() {
        return Err(SetupError::NothingRecognised);
    }
    Ok(out)
}

fn adapter(v: &Value, base: &Form) -> Result<SetupImport, SetupError> {
    let a = import::parse_adapter_config(v).map_err(|e| SetupError::BadJson(e.to_string()))?;
    let mut form = base.clone();
    form.set_lora(a.lora);
    Ok(SetupImport {
        form,
        format: "adapter-config",
        used: vec![
            "r".into(),
            "target_modules".into(),
            "modules_to_save".into(),
            "use_dora".into(),
            "lora_dropout".into(),
        ],
        ignored: a.unknown_targets,
    })
}

/// `--key value`, `--key=value` and bare `--flag` (= true); shell line continuations and quotes removed.
fn command_line(text: &str) -> Vec<(String, String)> {
    let words: Vec<String> = text
        .replace("\\\n", " ")
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        let Some(flag) = w.strip_prefix("--") else {
            continue;
        };
        if let Some((k, v)) = flag.split_once('=') {
            out.push((k.to_string(), v.to_string()));
            continue;
        }
        // Values: every following word up to the next flag (lora_target_modules takes several).
        let mut values = Vec::new();
        while i < words.len() && !words[i].starts_with("--") {
            values.push(words[i].clone());
            i += 1;
            if !flag.contains("target") {
                break;
            }
        }
        out.push((
            flag.to_string(),
            if values.is_empty() {
                "true".into()
            } else {
                values.join(",")
            },
        ));
    }
    out
}

/// A flat YAML reader: `key: value`, `key:` followed by `- item` lines (joined with commas), `#` comments.
/// Nested mappings are read with dotted keys one level deep; deeper structure is skipped. One pass.
fn yaml(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut parent: Option<String> = None;
    for raw in text.lines() {
        let line = match raw.find(" #") {
            Some(i) => &raw[..i],
            None if raw.trim_start().starts_with('#') => "",
            None => raw,
        };
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let t = line.trim();
        if let Some(item) = t.strip_prefix("- ") {
            if let Some(last) = out.last_mut() {
                let item = item.trim().trim_matches(|c| c == '"' || c == '\'');
                if last.1.is_empty() {
                    last.1 = item.to_string();
                } else {
                    last.1.push(',');
                    last.1.push_str(item);
                }
            }
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            continue;
        };
        let key = k.trim().trim_matches(|c| c == '"' || c == '\'');
        let value = v.trim().trim_matches(|c| c == '"' || c == '\'').to_string();
        if indent == 0 {
            parent = value.is_empty().then(|| key.to_string());
            out.push((key.to_string(), value));
        } else if let Some(p) = &parent {
            if indent <= 4 {
                out.push((format!("{p}.{key}"), value));
            }
        }
    }
    // Drop empty parents that only introduced a nested block.
    out.retain(|(_, v)| !v.is_empty());
    out
}

/// Flattens JSON objects to dotted keys (arrays joined with commas), to a depth of 4.
fn flatten_json(prefix: &str, v: &Value, out: &mut Vec<(String, String)>, depth: u32) {
    match v {
        Value::Object(map) if depth < 4 => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_json(&key, v, out, depth + 1);
            }
        }
        Value::Array(items) => out.push((
            prefix.to_string(),
            items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(","),
        )),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Null | Value::Object(_) => {}
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

fn truthy(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "auto" | "on"
    )
}

fn modules(v: &str) -> Option<Vec<Module>> {
    let mut out = Vec::new();
    for name in v.split([',', ' ']).filter(|s| !s.is_empty()) {
        match name {
            "all" | "all-linear" => return Some(Module::ALL.to_vec()),
            n => {
                let mapped = match n.trim_end_matches("_proj") {
                    "q" => Module::Q,
                    "k" => Module::K,
                    "v" => Module::V,
                    "o" => Module::O,
                    "gate" => Module::Gate,
                    "up" => Module::Up,
                    "down" => Module::Down,
                    _ => continue,
                };
                if !out.contains(&mapped) {
                    out.push(mapped);
                }
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Applies one setting; `false` when the key is unknown or its value unusable.
fn apply(f: &mut Form, key: &str, v: &str) -> bool {
    let key = key.trim_start_matches("-").to_ascii_lowercase();
    // Keys that mean one setting with a value of its own form come from the settings table.
    if let Some(setting) = crate::settings::by_alias(&key) {
        return (setting.set)(f, v);
    }
    match key.as_str() {
        "model_name_or_path" | "base_model" | "model" | "pretrained_model_name_or_path" => {
            match catalog::find_model(v) {
                Some(m) => f.model = m.id.clone(),
                None => return false,
            }
        }
        "gradient_checkpointing" => {
            f.checkpointing = if truthy(v) {
                if v.eq_ignore_ascii_case("unsloth") {
                    Checkpointing::Offload
                } else {
                    Checkpointing::Layer
                }
            } else if v.eq_ignore_ascii_case("unsloth") {
                Checkpointing::Offload
            } else {
                Checkpointing::Off
            }
        }
        // Packing fills every sequence to the length, so shapes stay fixed (TRL `packing`, LLaMA-Factory
        // `packing`/`neat_packing`, axolotl `sample_packing`); `pad_to_max_length` pads every batch to it.
        "packing" | "neat_packing" | "sample_packing" | "pad_to_max_length" => {
            f.variable_lengths = !truthy(v)
        }
        "disable_gradient_checkpointing" => {
            if truthy(v) {
                f.checkpointing = Checkpointing::Off
            }
        }
        "use_unsloth_gc" => {
            if truthy(v) {
                f.checkpointing = Checkpointing::Offload
            }
        }
        "bf16" | "bf16.enabled" => {
            if truthy(v) {
                f.precision = Precision::Mixed;
                if f.weights == WeightFormat::Fp16 {
                    f.weights = WeightFormat::Bf16;
                }
            }
        }
        "fp16" | "fp16.enabled" => {
            if truthy(v) {
                f.precision = Precision::Mixed;
                if !f.weights.is_quantized() {
                    f.weights = WeightFormat::Fp16;
                }
            }
        }
        "pure_bf16" => {
            if truthy(v) {
                f.precision = Precision::Pure16
            }
        }
        "torch_dtype" | "dtype" => match v {
            "bfloat16" | "bf16" | "float16" | "fp16" => f.precision = Precision::Pure16,
            "float32" | "fp32" => f.precision = Precision::Fp32,
            _ => return false,
        },
        "lora_target_modules" | "lora_target" | "target_modules" => match modules(v) {
            Some(m) => f.lora_targets = m,
            None => return false,
        },
        "lora_target_linear" => {
            if truthy(v) {
                f.lora_targets = Module::ALL.to_vec()
            }
        }
        "lora_dropout" => f.lora_dropout = v.parse::<f64>().is_ok_and(|p| p > 0.0),
        "use_dora" => f.dora = truthy(v),
        "use_peft" => {
            if truthy(v) && !matches!(f.mode, Mode::Lora | Mode::Qlora) {
                f.mode = Mode::Lora
            }
        }
        "finetuning_type" | "adapter" => match v {
            // LoRA on a base already loaded in 4 bits stays QLoRA, whatever the key order.
            "lora" if f.mode == Mode::Qlora => {}
            "lora" => f.mode = Mode::Lora,
            "qlora" => {
                f.mode = Mode::Qlora;
                f.weights = WeightFormat::Nf4;
            }
            "full" => f.mode = Mode::Full,
            "freeze" => f.mode = Mode::Freeze,
            _ => return false,
        },
        "load_in_4bit" | "quantization_bit" if truthy(v) || v == "4" => {
            f.mode = Mode::Qlora;
            if !f.weights.is_bnb_4bit() {
                f.weights = WeightFormat::Nf4;
            }
        }
        "use_bnb_nested_quant" | "bnb_4bit_use_double_quant" | "double_quantization" => {
            if truthy(v) {
                f.weights = WeightFormat::Nf4Dq
            }
        }
        "load_in_8bit" => {
            if truthy(v) {
                f.weights = WeightFormat::Int8
            }
        }
        "optim" | "optimizer" => match crate::settings::hf_optimizer(v) {
            Some(o) => f.optimizer = o,
            None => return false,
        },
        "attn_implementation" | "flash_attn" => match v {
            "flash_attention_2" | "fa2" => f.attention = AttentionImpl::Flash2,
            "sdpa" | "auto" => f.attention = AttentionImpl::Sdpa,
            "eager" | "disabled" => f.attention = AttentionImpl::Eager,
            _ => return false,
        },
        "flash_attention" | "use_flash_attention_2" => {
            f.attention = if truthy(v) {
                AttentionImpl::Flash2
            } else {
                AttentionImpl::Sdpa
            }
        }
        "sdp_attention" => {
            if truthy(v) {
                f.attention = AttentionImpl::Sdpa
            }
        }
        // LLaMA-Factory `stage` (hparams/finetuning_args.py): sft/pt train on next tokens; dpo, kto and rm
        // are the preference stages; ppo needs value and reward models, not modelled.
        "stage" => match v {
            "sft" | "pt" => f.objective = Objective::Sft,
            "dpo" => f.objective = Objective::Dpo,
            "kto" => f.objective = Objective::Kto,
            "rm" => f.objective = Objective::RewardModel,
            "grpo" => f.objective = Objective::Grpo,
            _ => return false,
        },
        // LLaMA-Factory `pref_loss`: ORPO and SimPO need no reference model.
        "pref_loss" => match v {
            "orpo" => f.objective = Objective::Orpo,
            "simpo" => f.objective = Objective::Simpo,
            "sigmoid" | "hinge" | "ipo" | "kto_pair" => {}
            _ => return false,
        },
        "precompute_ref_log_probs" => {
            if truthy(v) {
                f.reference = Reference::Precomputed
            }
        }
        // LLaMA-Factory's memory-efficient full tuning switches.
        "use_badam" => {
            if truthy(v) {
                f.mode = Mode::Badam
            }
        }
        "use_galore" => {
            if truthy(v) {
                f.optimizer = Optimizer::Galore
            }
        }
        "use_apollo" => {
            if truthy(v) {
                f.optimizer = Optimizer::Apollo
            }
        }
        "use_adam_mini" => {
            if truthy(v) {
                f.optimizer = Optimizer::AdamMini
            }
        }
        "use_liger_kernel" | "enable_liger_kernel" | "liger_fused_linear_cross_entropy" => {
            if truthy(v) {
                f.loss = LossImpl::Fused
            }
        }
        "deepspeed" => {
            // A path: read what its name says (ds_z3_offload_config.json, zero2.json…).
            let name = v.to_ascii_lowercase();
            if name.contains("z3") || name.contains("zero3") || name.contains("stage3") {
                f.parallelism = Parallelism::Zero3;
            } else if name.contains("z2") || name.contains("zero2") || name.contains("stage2") {
                f.parallelism = Parallelism::Zero2;
            } else if name.contains("z1") || name.contains("zero1") {
                f.parallelism = Parallelism::Zero1;
            } else {
                return false;
            }
            if name.contains("offload") {
                f.offload = Offload::Optimizer;
            }
        }
        "zero_optimization.stage" => match v {
            "1" => f.parallelism = Parallelism::Zero1,
            "2" => f.parallelism = Parallelism::Zero2,
            "3" => f.parallelism = Parallelism::Zero3,
            "0" => f.parallelism = Parallelism::Ddp,
            _ => return false,
        },
        "zero_optimization.offload_optimizer.device" => {
            if v == "cpu" || v == "nvme" {
                f.offload = Offload::Optimizer
            }
        }
        "zero_optimization.offload_param.device" => {
            if v == "cpu" || v == "nvme" {
                f.offload = Offload::ParamOptimizer
            }
        }
        "fsdp" if v.contains("full_shard") => {
            f.parallelism = Parallelism::Zero3;
            if v.contains("offload") {
                f.offload = Offload::ParamOptimizer;
            }
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trl_command_line() {
        let cmd = "accelerate launch --num_processes 4 train.py \\\n --model_name_or_path Qwen/Qwen2.5-7B-Instruct --per_device_train_batch_size 2 \\\n  --gradient_accumulation_steps=8 --gradient_checkpointing --bf16 --max_seq_length 4096 \\\n  --use_peft --lora_r 32 --lora_target_modules q_proj v_proj --optim paged_adamw_8bit \\\n  --deepspeed ds_z3_offload.json --report_to wandb";
        let r = import_setup(cmd, &Form::default()).unwrap();
        let f = &r.form;
        assert_eq!(r.format, "command-line");
        assert_eq!(f.model, "qwen2.5-7b");
        assert_eq!(
            (f.micro_batch, f.grad_accum, f.seq_len, f.lora_rank, f.gpus),
            (2, 8, 4096, 32, 4)
        );
        assert_eq!(f.lora_targets, vec![Module::Q, Module::V]);
        assert_eq!(f.optimizer, Optimizer::PagedAdamw8bit);
        assert_eq!(
            (f.parallelism, f.offload),
            (Parallelism::Zero3, Offload::Optimizer)
        );
        assert_eq!(f.checkpointing, Checkpointing::Layer);
        assert!(r.ignored.iter().any(|i| i.starts_with("report_to")));
    }

    #[test]
    fn axolotl_yaml() {
        let y = "base_model: meta-llama/Meta-Llama-3-8B\nadapter: qlora\nload_in_4bit: true\nsequence_len: 8192 # long\nmicro_batch_size: 1\nlora_r: 16\nlora_target_modules:\n  - q_proj\n  - k_proj\nflash_attention: true\noptimizer: adamw_bnb_8bit\nwandb_project: x\nfsdp_config:\n  fsdp_offload_params: true\n";
        let r = import_setup(y, &Form::default()).unwrap();
        assert_eq!(r.format, "yaml");
        let f = &r.form;
        assert_eq!((f.mode, f.weights), (Mode::Qlora, WeightFormat::Nf4));
        assert_eq!((f.seq_len, f.micro_batch, f.lora_rank), (8192, 1, 16));
        assert_eq!(f.lora_targets, vec![Module::Q, Module::K]);
        assert_eq!(
            (f.attention, f.optimizer),
            (AttentionImpl::Flash2, Optimizer::Adamw8bit)
        );
        assert!(r.ignored.iter().any(|i| i.starts_with("wandb_project")));
    }

    #[test]
    fn deepspeed_json() {
        let j = r#"{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto",
            "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}"#;
        let r = import_setup(j, &Form::default()).unwrap();
        assert_eq!(r.format, "deepspeed-json");
        assert_eq!(
            (r.form.micro_batch, r.form.parallelism, r.form.offload),
            (4, Parallelism::Zero3, Offload::Optimizer)
        );
        assert!(r
            .ignored
            .iter()
            .any(|i| i.starts_with("gradient_accumulation_steps")));
    }

    #[test]
    fn exports_import_back_to_the_same_settings() {
        use crate::advice::export;
        let form = Form {
            model: "qwen2.5-7b".into(),
            mode: Mode::Qlora,
            weights: WeightFormat::Nf4,
            lora_rank: 32,
            lora_targets: vec![Module::Q, Module::V],
            micro_batch: 3,
            seq_len: 4096,
            grad_accum: 8,
            attention: AttentionImpl::Flash2,
            loss: LossImpl::Fused,
            optimizer: Optimizer::PagedAdamw8bit,
            variable_lengths: false,
            ..Form::default()
        };
        for text in [
            export::llama_factory_yaml(&form),
            export::trl_command(&form),
        ] {
            let f = import_setup(&text, &Form::default()).unwrap().form;
            assert_eq!(
                (
                    f.model.as_str(),
                    f.mode,
                    f.lora_rank,
                    f.micro_batch,
                    f.seq_len,
                    f.grad_accum
                ),
                ("qwen2.5-7b", Mode::Qlora, 32, 3, 4096, 8),
                "{text}"
            );
            assert_eq!(
                (f.attention, f.loss, f.optimizer),
                (form.attention, form.loss, form.optimizer)
            );
            assert_eq!(f.lora_targets, form.lora_targets);
            assert!(!f.variable_lengths, "packing lost: {text}");
        }
    }

    #[test]
    fn bad_input_leaves_the_form_alone() {
        assert_eq!(import_setup("", &Form::default()), Err(SetupError::Empty));
        assert_eq!(
            import_setup("just some words", &Form::default()),
            Err(SetupError::NothingRecognised)
        );
        assert!(matches!(
            import_setup("{ broken", &Form::default()),
            Err(SetupError::BadJson(_))
        ));
        let huge = "--per_device_train_batch_size 2 ".repeat(400_000);
        assert!(matches!(
            import_setup(&huge, &Form::default()),
            Err(SetupError::TooLarge(_))
        ));
        let deep = "a:\n".to_string() + &" b:\n".repeat(50_000);
        assert!(import_setup(&deep, &Form::default()).is_err());
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,500}") {
            let _ = import_setup(&s, &Form::default());
        }
    }
}
