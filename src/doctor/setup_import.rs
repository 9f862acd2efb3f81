//! Import a training setup: a command line (HF Trainer / TRL / LLaMA-Factory flags), a LLaMA-Factory or
//! axolotl YAML, a DeepSpeed JSON, or a PEFT `adapter_config.json`, onto the page's [`Form`]. Every input is
//! reduced to `key = value` pairs and one table maps the known keys; the rest are reported as ignored.
//! Total and linear: no input panics or hangs, and a failed import leaves the form unchanged.

use crate::catalog::{self, import};
use crate::form::Form;
use crate::model::peft::Method;
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
        pairs.extend(library_versions(trimmed));
        ("command-line", pairs)
    } else {
        let mut pairs = yaml(trimmed);
        pairs.extend(library_versions(trimmed));
        ("yaml", pairs)
    };
    let mut out = SetupImport {
        form: base.clone(),
        format,
        used: Vec::new(),
        ignored: Vec::new(),
    };
    let mut pending = Pending::default();
    for (k, v) in pairs {
        if apply(&mut out.form, &k, &v, &mut pending) {
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
    pending.resolve(&mut out.form);
    Ok(out)
}

/// What some keys say only together with others, whatever their order: resolved after every key is read.
#[derive(Default)]
struct Pending {
    /// `dtype`/`torch_dtype`: a 16-bit format, or `None` for float32.
    dtype: Option<Option<WeightFormat>>,
    /// Autocast turned on (`bf16`/`fp16`, DeepSpeed `bf16.enabled`/`fp16.enabled`), and its format.
    amp: Option<WeightFormat>,
    /// Autocast explicitly turned off.
    amp_off: bool,
    /// LLaMA-Factory `pure_bf16`.
    pure_bf16: bool,
    /// transformers `optim_args` (`rank=…` for GaLore/APOLLO, `momentum=…` for SGD).
    optim_args: Vec<(String, String)>,
    /// DeepSpeed `train_batch_size` (micro-batch × accumulation × GPUs).
    train_batch_size: Option<u64>,
    /// GRPOConfig `use_vllm`, `vllm_mode`, `vllm_gpu_memory_utilization`.
    use_vllm: Option<bool>,
    vllm_mode: Option<String>,
    vllm_share: Option<f64>,
    /// `precompute_ref_log_probs`.
    precompute: bool,
    /// GRPOConfig `beta`.
    beta: Option<f64>,
    /// The setup named its objective (`stage`, or the TRL script), so its reference follows from it.
    objective_named: bool,
    /// LLaMA-Factory `pref_loss`: the DPO stage's loss (ORPO and SimPO need no reference model).
    pref_loss: Option<Objective>,
    /// LLaMA-Factory `use_badam` (with `finetuning_type: full`).
    badam: bool,
    /// bitsandbytes bits, 4-bit data type (fp4 or not), double quantization, and whether the format turns
    /// double quantization on unless told otherwise (LLaMA-Factory).
    bits: Option<u8>,
    fp4: Option<bool>,
    double_quant: Option<bool>,
    double_quant_default: bool,
}

impl Pending {
    fn resolve(self, f: &mut Form) {
        if self.badam {
            f.mode = Mode::Badam;
        }
        // Quantization: 4 bits is QLoRA, 8 bits LoRA on an int8 base.
        match self.bits {
            Some(8) => f.weights = WeightFormat::Int8,
            Some(_) => f.mode = Mode::Qlora,
            None => {}
        }
        let four = self.bits == Some(4)
            || ((self.fp4.is_some() || self.double_quant.is_some())
                && (f.mode == Mode::Qlora || f.weights.is_bnb_4bit()));
        if four {
            let fp4 = self
                .fp4
                .unwrap_or(self.bits.is_none() && f.weights == WeightFormat::Fp4);
            let double = self.double_quant.unwrap_or(if self.bits.is_some() {
                self.double_quant_default
            } else {
                f.weights == WeightFormat::Nf4Dq
            });
            f.weights = match (fp4, double) {
                (true, _) => WeightFormat::Fp4,
                (false, true) => WeightFormat::Nf4Dq,
                (false, false) => WeightFormat::Nf4,
            };
        }
        // `pref_loss` is a loss of the DPO stage.
        if let Some(loss) = self.pref_loss {
            if f.objective == Objective::Dpo || !self.objective_named {
                f.objective = loss;
            }
        }
        // Precision: a 16-bit dtype is pure 16-bit; an fp32 model under autocast is mixed precision; no
        // autocast is fp32.
        let unquantized = !f.weights.is_quantized();
        let autocast = |f: &mut Form, w: WeightFormat| {
            f.precision = Precision::Mixed;
            if w == WeightFormat::Fp16 && unquantized {
                f.weights = WeightFormat::Fp16;
            } else if w == WeightFormat::Bf16 && f.weights == WeightFormat::Fp16 {
                f.weights = WeightFormat::Bf16;
            }
        };
        if self.pure_bf16 {
            f.precision = Precision::Pure16;
            if f.weights == WeightFormat::Fp16 {
                f.weights = WeightFormat::Bf16;
            }
        } else {
            match (self.dtype, self.amp) {
                (Some(Some(w)), _) => {
                    f.precision = Precision::Pure16;
                    if unquantized {
                        f.weights = w;
                    }
                }
                (Some(None), Some(w)) | (None, Some(w)) => autocast(f, w),
                (Some(None), None) => f.precision = Precision::Fp32,
                (None, None) if self.amp_off => f.precision = Precision::Fp32,
                (None, None) => {}
            }
        }
        for (k, v) in &self.optim_args {
            match k.as_str() {
                "rank" if crate::model::full_tuning::is_projected(f.optimizer) => {
                    let (lo, hi) = crate::settings::range("prank");
                    if let Some(r) = crate::settings::number(v, lo, hi) {
                        f.projection_rank = r;
                    }
                }
                "momentum" => match (f.optimizer, v.parse::<f64>()) {
                    (Optimizer::Sgd, Ok(m)) if m > 0.0 => f.optimizer = Optimizer::SgdMomentum,
                    (Optimizer::SgdMomentum, Ok(m)) if m <= 0.0 => f.optimizer = Optimizer::Sgd,
                    _ => {}
                },
                _ => {}
            }
        }
        if let Some(total) = self.train_batch_size {
            let per_gpu = u64::from(f.micro_batch) * u64::from(f.grad_accum);
            if per_gpu > 0 && total % per_gpu == 0 {
                let (lo, hi) = crate::settings::range("gpus");
                if let Some(g) = crate::settings::number(&(total / per_gpu).to_string(), lo, hi) {
                    f.gpus = g;
                }
            }
        }
        // GRPOConfig: `vllm_mode` defaults to "colocate" (TRL 1.0), whose engine takes
        // `vllm_gpu_memory_utilization` (default 0.3) of the GPU; a server runs elsewhere.
        match self.use_vllm {
            Some(true) if self.vllm_mode.as_deref().unwrap_or("colocate") == "colocate" => {
                let share = self.vllm_share.unwrap_or(0.3);
                let (lo, hi) = crate::settings::range("vllm");
                let gib = (share * f.gpu_usable_gib()).round();
                if let Some(g) = crate::settings::number(&format!("{gib:.0}"), lo, hi) {
                    f.vllm_gib = g;
                }
            }
            Some(_) => f.vllm_gib = 0,
            None => {}
        }
        // The reference of a named objective: precomputed when asked (DPO, KTO), none for GRPO with
        // `beta` 0 (GRPOConfig's default since TRL 0.19), otherwise what the trainer picks: the base with the
        // adapter disabled under LoRA (TRL `is_peft_model` → no `ref_model`; LLaMA-Factory
        // `create_ref_model` for `finetuning_type: lora`), else a copy (LLaMA-Factory's OFT too).
        if self.objective_named && f.objective.uses_reference() {
            let adapter =
                matches!(f.mode, Mode::Lora | Mode::Qlora) && f.peft_method != Method::Oft;
            f.reference = match f.objective {
                Objective::Dpo | Objective::Kto if self.precompute => Reference::Precomputed,
                Objective::Grpo if self.beta.unwrap_or(0.0) == 0.0 => Reference::None,
                _ if adapter => Reference::DisabledAdapters,
                _ => Reference::Copy,
            };
        }
    }
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
        // Values: every following word up to the next flag (lora_target_modules and lora_modules_to_save
        // take several).
        let mut values = Vec::new();
        while i < words.len() && !words[i].starts_with("--") {
            values.push(words[i].clone());
            i += 1;
            if !flag.contains("target") && !flag.contains("modules_to_save") {
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

/// The PyTorch and transformers releases named in pasted environment listings, as `torch_version` /
/// `transformers_version` pairs: `pip freeze` (`torch==2.1.2`), `pip list` (`torch   2.1.2`) and
/// `transformers env` (``- `transformers` version: 4.44.2``, `- PyTorch version (GPU?): 2.1.0+cu121 (True)`;
/// the format of transformers' `commands/env.py`).
fn library_versions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim().trim_start_matches("- ").trim();
        let (key, rest) = if let Some(rest) = t.strip_prefix("torch==") {
            ("torch_version", rest)
        } else if let Some(rest) = t.strip_prefix("transformers==") {
            ("transformers_version", rest)
        } else if let Some(rest) = t.strip_prefix("`transformers` version:") {
            ("transformers_version", rest)
        } else if let Some(rest) = t
            .strip_prefix("PyTorch version")
            .and_then(|r| r.split_once(':').map(|(_, v)| v))
        {
            ("torch_version", rest)
        } else {
            match t.split_whitespace().collect::<Vec<_>>()[..] {
                ["torch", v] => ("torch_version", v),
                ["transformers", v] => ("transformers_version", v),
                _ => continue,
            }
        };
        let version = rest.split_whitespace().next().unwrap_or_default();
        if crate::model::Version::parse(version).is_some() {
            out.push((key.to_string(), version.to_string()));
        }
    }
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
fn apply(f: &mut Form, key: &str, v: &str, pending: &mut Pending) -> bool {
    let key = key.trim_start_matches("-").to_ascii_lowercase();
    // Keys that mean one setting with a value of its own form come from the settings table.
    if let Some(setting) = crate::settings::by_alias(&key) {
        return (setting.set)(f, v);
    }
    match key.as_str() {
        "model_name_or_path" | "base_model" | "model" | "pretrained_model_name_or_path" => {
            // The catalog entry of exactly this Hub id first: an instruct model is not its base.
            let exact = catalog::models()
                .iter()
                .find(|m| m.hf_id.eq_ignore_ascii_case(v.trim()));
            match exact.or_else(|| catalog::find_model(v)) {
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
        // LLaMA-Factory `freeze_vision_tower` (`hparams/finetuning_args.py`) and ms-swift `freeze_vit`, both
        // true by default: the vision tower trains when they are false.
        "freeze_vision_tower" | "freeze_vit" => f.train_vision = !truthy(v),
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
        // Precision is read from these together (`Pending::resolve`).
        "bf16" | "bf16.enabled" | "fp16" | "fp16.enabled" => {
            let format = if key.starts_with("bf16") {
                WeightFormat::Bf16
            } else {
                WeightFormat::Fp16
            };
            if truthy(v) {
                pending.amp = Some(format);
            } else {
                pending.amp_off = true;
            }
        }
        "pure_bf16" => pending.pure_bf16 = truthy(v),
        "torch_dtype" | "dtype" => match v {
            "bfloat16" | "bf16" => pending.dtype = Some(Some(WeightFormat::Bf16)),
            "float16" | "fp16" => pending.dtype = Some(Some(WeightFormat::Fp16)),
            "float32" | "fp32" => pending.dtype = Some(None),
            _ => return false,
        },
        "lora_target_modules" | "lora_target" | "target_modules" | "oft_target" => match modules(v)
        {
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
        // PEFT `modules_to_save` (TRL `lora_modules_to_save`, LLaMA-Factory `additional_target`): the whole
        // list, so both flags are set from it.
        "lora_modules_to_save" | "additional_target" | "modules_to_save" => {
            let names: Vec<&str> = v.split([',', ' ']).filter(|s| !s.is_empty()).collect();
            let has = |ends: &[&str]| names.iter().any(|n| ends.iter().any(|e| n.ends_with(e)));
            f.train_embed = has(&["embed_tokens", "wte", "word_embeddings", "embed_in"]);
            f.train_lm_head = has(&["lm_head", "embed_out", "output_layer"]);
        }
        // TRL's `use_peft` builds a LoRA adapter (`get_peft_config`).
        "use_peft" => {
            if truthy(v) {
                if !matches!(f.mode, Mode::Lora | Mode::Qlora) {
                    f.mode = Mode::Lora
                }
                f.peft_method = Method::Lora;
            }
        }
        "finetuning_type" | "adapter" => match v {
            // LoRA on a base already loaded in 4 bits stays QLoRA, whatever the key order.
            "lora" | "oft" => {
                if f.mode != Mode::Qlora {
                    f.mode = Mode::Lora;
                }
                f.peft_method = if v == "oft" {
                    Method::Oft
                } else {
                    Method::Lora
                };
            }
            "qlora" => {
                f.mode = Mode::Qlora;
                f.weights = WeightFormat::Nf4;
                f.peft_method = Method::Lora;
            }
            "full" => f.mode = Mode::Full,
            "freeze" => f.mode = Mode::Freeze,
            _ => return false,
        },
        // bitsandbytes on the fly, read together in `Pending::resolve`: TRL `load_in_4bit`/`load_in_8bit`,
        // LLaMA-Factory `quantization_bit` (whose `double_quantization` defaults to true).
        "load_in_4bit" => {
            if truthy(v) {
                pending.bits = Some(4)
            }
        }
        "load_in_8bit" => {
            if truthy(v) {
                pending.bits = Some(8)
            }
        }
        "quantization_bit" => match v {
            "4" | "8" => {
                pending.bits = v.parse().ok();
                pending.double_quant_default = true;
            }
            _ => return false,
        },
        "quantization_method" if v == "bitsandbytes" || v == "bnb" => {}
        // The 4-bit data type (TRL `bnb_4bit_quant_type`, LLaMA-Factory `quantization_type`).
        "bnb_4bit_quant_type" | "quantization_type" => match v {
            "fp4" | "nf4" => pending.fp4 = Some(v == "fp4"),
            _ => return false,
        },
        "use_bnb_nested_quant" | "bnb_4bit_use_double_quant" | "double_quantization" => {
            pending.double_quant = Some(truthy(v))
        }
        "optim" | "optimizer" => match crate::settings::hf_optimizer(v) {
            Some(o) => {
                f.optimizer = o;
                // transformers' `_layerwise` GaLore/APOLLO step each parameter in backward.
                if crate::model::full_tuning::is_projected(o) {
                    f.optimizer_in_backward = v.trim().to_ascii_lowercase().ends_with("_layerwise");
                }
            }
            None => return false,
        },
        "optim_args" => {
            let pairs: Option<Vec<(String, String)>> = v
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(|p| {
                    p.split_once('=')
                        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                })
                .collect();
            match pairs {
                Some(p) if p.iter().any(|(k, _)| k == "rank" || k == "momentum") => {
                    pending.optim_args = p
                }
                _ => return false,
            }
        }
        "galore_layerwise" | "apollo_layerwise" => f.optimizer_in_backward = truthy(v),
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
        // are the preference stages, ppo the RL one; `grpo` comes from TRL's script.
        "stage" => {
            f.objective = match v {
                "sft" | "pt" => Objective::Sft,
                "dpo" => Objective::Dpo,
                "kto" => Objective::Kto,
                "rm" => Objective::RewardModel,
                "grpo" => Objective::Grpo,
                "ppo" => Objective::Ppo,
                _ => return false,
            };
            pending.objective_named = true;
        }
        // LLaMA-Factory `pref_loss`: ORPO and SimPO need no reference model.
        "pref_loss" => match v {
            "orpo" => pending.pref_loss = Some(Objective::Orpo),
            "simpo" => pending.pref_loss = Some(Objective::Simpo),
            "sigmoid" | "hinge" | "ipo" | "kto_pair" => pending.pref_loss = Some(Objective::Dpo),
            _ => return false,
        },
        "precompute_ref_log_probs" => pending.precompute = truthy(v),
        // GRPO's KL weight: 0 loads no reference model. DPO's and KTO's `beta` is a temperature.
        "beta" if f.objective == Objective::Grpo => match v.parse::<f64>() {
            Ok(b) if b >= 0.0 => pending.beta = Some(b),
            _ => return false,
        },
        "use_vllm" => pending.use_vllm = Some(truthy(v)),
        "vllm_mode" if v == "colocate" || v == "server" => pending.vllm_mode = Some(v.into()),
        "vllm_gpu_memory_utilization" => match v.parse::<f64>() {
            Ok(s) if s > 0.0 && s <= 1.0 => pending.vllm_share = Some(s),
            _ => return false,
        },
        "vllm_enable_sleep_mode" => f.vllm_sleep = truthy(v),
        "train_batch_size" => match v.parse::<u64>() {
            Ok(t) if t > 0 => pending.train_batch_size = Some(t),
            _ => return false,
        },
        // LLaMA-Factory's memory-efficient full tuning switches.
        "use_badam" => pending.badam = truthy(v),
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
            } else if f.loss == LossImpl::Fused {
                f.loss = LossImpl::Fp32Logits
            }
        }
        "deepspeed" => {
            // A path: read what its name says, in LLaMA-Factory's `examples/deepspeed/` naming
            // (ds_z2_offload_config.json offloads the optimizer, ds_z3_offload_config.json the parameters
            // too) or the like (zero2.json, ds_z3_offload_optimizer_config.json…).
            let name = v.to_ascii_lowercase();
            let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
            f.parallelism = if has(&["z3", "zero3", "stage3"]) {
                Parallelism::Zero3
            } else if has(&["z2", "zero2", "stage2"]) {
                Parallelism::Zero2
            } else if has(&["z1", "zero1", "stage1"]) {
                Parallelism::Zero1
            } else if has(&["z0", "zero0", "stage0"]) {
                Parallelism::Ddp
            } else {
                return false;
            };
            f.offload = if !name.contains("offload") {
                Offload::None
            } else if name.contains("optim") {
                Offload::Optimizer
            } else if name.contains("param") || f.parallelism == Parallelism::Zero3 {
                Offload::ParamOptimizer
            } else {
                Offload::Optimizer
            };
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
    fn library_versions_from_environment_listings() {
        use crate::model::Version;
        // `transformers env`, as a bug report pastes it.
        let env = "- `transformers` version: 4.44.2\n- Platform: Linux-5.15.0-x86_64-with-glibc2.35\n- Python version: 3.10.12\n- PyTorch version (GPU?): 2.1.0+cu121 (True)\n- Using GPU in script?: yes";
        let f = import_setup(env, &Form::default()).unwrap().form;
        assert_eq!(
            (f.torch_version, f.transformers_version),
            (Version::new(2, 1), Version::new(4, 44))
        );
        // `pip freeze` beside a command line.
        let cmd =
            "torch==2.4.1\ntransformers==4.47.0\npython train.py --per_device_train_batch_size 2";
        let r = import_setup(cmd, &Form::default()).unwrap();
        assert_eq!(
            (r.form.torch_version, r.form.transformers_version),
            (Version::new(2, 4), Version::new(4, 47))
        );
        assert_eq!(r.form.micro_batch, 2);
        // `pip list` columns; a version outside the accepted majors is reported, not taken.
        let r = import_setup("torch        2.5.1\ntransformers 19.1", &Form::default()).unwrap();
        assert_eq!(r.form.torch_version, Version::new(2, 5));
        assert_eq!(
            r.form.transformers_version,
            Form::default().transformers_version
        );
        assert_eq!(r.ignored, vec!["transformers_version=19.1".to_string()]);
    }

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
        // A ZeRO-3 "offload" config offloads the parameters too (LLaMA-Factory's
        // examples/deepspeed/ds_z3_offload_config.json has `offload_param` and `offload_optimizer`).
        assert_eq!(
            (f.parallelism, f.offload),
            (Parallelism::Zero3, Offload::ParamOptimizer)
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
