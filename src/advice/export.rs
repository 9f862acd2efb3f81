//! The setup as something a user can run: a LLaMA-Factory YAML, a TRL `trl sft` command line, and a
//! DeepSpeed JSON when ZeRO is on. Each renders exactly the form's fields; option names follow each tool's
//! documented arguments (LLaMA-Factory `hparams/*.py`, TRL `SFTConfig` + `ModelConfig`, transformers
//! `TrainingArguments`, DeepSpeed config JSON).

use crate::catalog;
use crate::form::Form;
use crate::model::peft::Method;
use crate::model::preference::{Objective, Reference};
use crate::model::{
    AttentionImpl, Checkpointing, LossImpl, Mode, Module, Offload, Optimizer, Parallelism,
    Precision, WeightFormat,
};

/// The Hugging Face id to load: the catalog's, a custom shape's Hub id, or a placeholder.
fn model_path(form: &Form) -> String {
    match catalog::model(&form.model) {
        Some(m) => m.hf_id.clone(),
        None if !form.hub.is_empty() => form.hub.clone(),
        None => "path/to/your-model".to_string(),
    }
}

/// Llama-style module names (`q_proj` … `down_proj`), as PEFT and LLaMA-Factory take them.
fn module_names(form: &Form) -> Vec<&'static str> {
    Module::ALL
        .iter()
        .filter(|m| form.lora_targets.contains(m))
        .map(|m| match m {
            Module::Q => "q_proj",
            Module::K => "k_proj",
            Module::V => "v_proj",
            Module::O => "o_proj",
            Module::Gate => "gate_proj",
            Module::Up => "up_proj",
            Module::Down => "down_proj",
        })
        .collect()
}

/// `modules_to_save` beyond the adapters: the embedding and the LM head (Llama names).
fn saved_modules(form: &Form) -> Vec<&'static str> {
    let mut out = Vec::new();
    if form.train_embed {
        out.push("embed_tokens");
    }
    if form.train_lm_head {
        out.push("lm_head");
    }
    out
}

fn zero_stage(form: &Form) -> Option<u8> {
    match form.parallelism {
        Parallelism::Zero1 => Some(1),
        Parallelism::Zero2 => Some(2),
        Parallelism::Zero3 => Some(3),
        _ if form.offload != Offload::None => Some(3),
        _ => None,
    }
}

/// The file the command and the YAML point at for [`deepspeed_json`], named for its stage and offload as
/// LLaMA-Factory's `examples/deepspeed/` names them (`ds_z2_offload_config.json` offloads the optimizer,
/// `ds_z3_offload_config.json` the parameters too); the importer reads the name back.
fn deepspeed_file(form: &Form) -> Option<String> {
    let stage = zero_stage(form)?;
    let offload = match (form.offload, stage) {
        (Offload::None, _) => "",
        // A ZeRO-3 "offload" file offloads the parameters too; below ZeRO-3 only the optimizer can go
        // (the JSON then has no `offload_param`).
        (Offload::Optimizer, 3) => "_offload_optimizer",
        (Offload::Optimizer | Offload::ParamOptimizer, _) => "_offload",
    };
    Some(format!("ds_z{stage}{offload}_config.json"))
}

fn fp16(form: &Form) -> bool {
    form.weights == WeightFormat::Fp16
}

fn lora_like(form: &Form) -> bool {
    matches!(form.mode, Mode::Lora | Mode::Qlora)
}

/// bitsandbytes 4-bit quant type (`nf4`, `fp4`).
fn quant_type(form: &Form) -> &'static str {
    if form.weights == WeightFormat::Fp4 {
        "fp4"
    } else {
        "nf4"
    }
}

/// Momentum written for SGD with momentum (the form has no value for it): torch's `SGD(momentum=…)`
/// through transformers' `optim_args` (`trainer_optimizer.py` `_get_sgd` passes them to `torch.optim.SGD`).
const SGD_MOMENTUM: &str = "momentum=0.9";

/// The shortest decimal share of `of` GiB that reads back as `gib` whole GiB.
fn share(gib: u32, of: f64) -> String {
    let x = f64::from(gib) / of;
    (2..=12)
        .map(|digits| {
            let s = format!("{x:.digits$}");
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        })
        .find(|s| {
            s.parse::<f64>()
                .is_ok_and(|v| (v * of).round() == f64::from(gib))
        })
        .unwrap_or_else(|| x.to_string())
}

/// DeepSpeed config for the form's ZeRO stage and offload; `None` without ZeRO.
pub fn deepspeed_json(form: &Form) -> Option<String> {
    let stage = zero_stage(form)?;
    let mut zero =
        serde_json::json!({ "stage": stage, "overlap_comm": true, "contiguous_gradients": true });
    if form.offload != Offload::None {
        zero["offload_optimizer"] = serde_json::json!({ "device": "cpu", "pin_memory": true });
    }
    // `offload_param` is a ZeRO-3 option.
    if form.offload == Offload::ParamOptimizer && stage == 3 {
        zero["offload_param"] = serde_json::json!({ "device": "cpu", "pin_memory": true });
    }
    // Neither bf16 nor fp16 enabled: DeepSpeed trains in fp32.
    let half = form.precision != Precision::Fp32;
    let json = serde_json::json!({
        // DeepSpeed config-json.md: "train_batch_size must be equal to train_micro_batch_size_per_gpu *
        // gradient_accumulation_steps * number of GPUs".
        "train_batch_size": u64::from(form.micro_batch) * u64::from(form.grad_accum) * u64::from(form.gpus),
        "train_micro_batch_size_per_gpu": form.micro_batch,
        "gradient_accumulation_steps": form.grad_accum,
        "bf16": { "enabled": half && !fp16(form) },
        "fp16": { "enabled": half && fp16(form) },
        "zero_optimization": zero,
        "gradient_clipping": 1.0,
    });
    serde_json::to_string_pretty(&json).ok()
}

/// A LLaMA-Factory training YAML (`llamafactory-cli train this.yaml`). Keys: `hparams/finetuning_args.py`,
/// `model_args.py`, `data_args.py`, and transformers `Seq2SeqTrainingArguments`.
pub fn llama_factory_yaml(form: &Form) -> String {
    let mut y = String::new();
    let mut kv = |k: &str, v: String| y.push_str(&format!("{k}: {v}\n"));
    kv("model_name_or_path", model_path(form));
    // On-the-fly bitsandbytes quantization (`QuantizationArguments`; `double_quantization` defaults to true).
    if form.mode == Mode::Qlora {
        kv("quantization_bit", "4".into());
        kv("quantization_method", "bitsandbytes".into());
        kv("quantization_type", quant_type(form).into());
        kv(
            "double_quantization",
            (form.weights == WeightFormat::Nf4Dq).to_string(),
        );
    } else if form.mode == Mode::Lora && form.weights == WeightFormat::Int8 {
        kv("quantization_bit", "8".into());
        kv("quantization_method", "bitsandbytes".into());
    }
    // LLaMA-Factory `stage` and `pref_loss` (hparams/finetuning_args.py): ORPO and SimPO are DPO-stage
    // losses; GRPO has no stage there (TRL's `trl grpo` runs it). The reference model is LLaMA-Factory's
    // choice (`create_ref_model`; it never precomputes one).
    let stage = match form.objective {
        Objective::Sft | Objective::Grpo => "sft",
        Objective::Dpo | Objective::Orpo | Objective::Simpo => "dpo",
        Objective::Kto => "kto",
        Objective::RewardModel => "rm",
        Objective::Ppo => "ppo",
    };
    kv("stage", stage.into());
    match form.objective {
        Objective::Orpo => kv("pref_loss", "orpo".into()),
        Objective::Simpo => kv("pref_loss", "simpo".into()),
        // "`reward_model` is necessary for PPO training".
        Objective::Ppo => kv("reward_model", "path/to/your-reward-model".into()),
        _ => {}
    }
    kv("do_train", "true".into());
    let oft = lora_like(form) && form.peft_method == Method::Oft;
    let method = match form.mode {
        Mode::Lora | Mode::Qlora if oft => "oft",
        Mode::Lora | Mode::Qlora => "lora",
        Mode::Freeze => "freeze",
        // BAdam is LLaMA-Factory full tuning with `use_badam`; LISA is LMFlow's (exported as full tuning).
        Mode::Full | Mode::Inference | Mode::Badam | Mode::Lisa => "full",
    };
    kv("finetuning_type", method.into());
    let all = Module::ALL.iter().all(|m| form.lora_targets.contains(m));
    let targets = if all {
        "all".to_string()
    } else {
        module_names(form).join(",")
    };
    if oft {
        // OFT's rank field is its block size (`OFTArguments.oft_block_size`).
        kv("oft_block_size", form.lora_rank.to_string());
        if !form.lora_targets.is_empty() {
            kv("oft_target", targets);
        }
    } else if lora_like(form) {
        kv("lora_rank", form.lora_rank.to_string());
        kv("lora_alpha", (2 * form.lora_rank).to_string());
        kv(
            "lora_dropout",
            if form.lora_dropout { "0.05" } else { "0.0" }.into(),
        );
        if !form.lora_targets.is_empty() {
            kv("lora_target", targets);
        }
        if form.dora {
            kv("use_dora", "true".into());
        }
    }
    if lora_like(form) && !saved_modules(form).is_empty() {
        kv("additional_target", saved_modules(form).join(","));
    }
    // `freeze_vision_tower` (hparams/finetuning_args.py, default true), for a model that has a tower.
    if form.arch().vision.is_some() {
        kv("freeze_vision_tower", (!form.train_vision).to_string());
    }
    if form.mode == Mode::Freeze {
        kv("freeze_trainable_layers", form.trained_layers.to_string());
    }
    if let Some(file) = deepspeed_file(form) {
        kv("deepspeed", file);
    }
    kv("cutoff_len", form.seq_len.to_string());
    // Only supervised data is packed (pairwise and KTO data are padded).
    if stage == "sft" && !form.variable_lengths {
        kv("packing", "true".into());
    }
    kv("per_device_train_batch_size", form.micro_batch.to_string());
    kv("gradient_accumulation_steps", form.grad_accum.to_string());
    match form.precision {
        Precision::Pure16 if !fp16(form) => kv("pure_bf16", "true".into()),
        Precision::Fp32 => {}
        _ if fp16(form) => kv("fp16", "true".into()),
        _ => kv("bf16", "true".into()),
    }
    let layerwise = form.optimizer_in_backward.to_string();
    match form.optimizer {
        Optimizer::Galore => {
            kv("use_galore", "true".into());
            kv("galore_rank", form.projection_rank.to_string());
            kv("galore_target", "all".into());
            kv("galore_layerwise", layerwise);
        }
        Optimizer::Apollo => {
            kv("use_apollo", "true".into());
            kv("apollo_rank", form.projection_rank.to_string());
            kv("apollo_layerwise", layerwise);
        }
        Optimizer::AdamMini => kv("use_adam_mini", "true".into()),
        // LLaMA-Factory has no Q-GaLore (the `optim` setting's export decision says so).
        Optimizer::QGalore => {}
        Optimizer::SgdMomentum => {
            kv("optim", "sgd".into());
            kv("optim_args", SGD_MOMENTUM.into());
        }
        o => kv("optim", crate::settings::hf_optimizer_name(o).into()),
    }
    if form.mode == Mode::Badam {
        kv("use_badam", "true".into());
        kv("badam_mode", "layer".into());
    }
    kv(
        "flash_attn",
        match form.attention {
            AttentionImpl::Eager => "disabled",
            AttentionImpl::Sdpa => "sdpa",
            AttentionImpl::Flash2 => "fa2",
        }
        .into(),
    );
    match form.checkpointing {
        Checkpointing::Off => kv("disable_gradient_checkpointing", "true".into()),
        Checkpointing::Layer => {}
        Checkpointing::Offload => kv("use_unsloth_gc", "true".into()),
    }
    if form.loss == LossImpl::Fused {
        kv("enable_liger_kernel", "true".into());
    }
    kv("output_dir", "output".into());
    y
}

/// A TRL command line (`trl sft …`), one flag a line. Flags: TRL `ModelConfig`, `SFTConfig`, `DPOConfig`,
/// `KTOConfig`, `GRPOConfig`, `RewardConfig`, and transformers `TrainingArguments`.
pub fn trl_command(form: &Form) -> String {
    // TRL's CLI scripts: `trl sft|dpo|kto|grpo|reward` (`docs/source/clis.md`); ORPO, SimPO and PPO have no
    // script of their own and are written as SFT (the LLaMA-Factory export names them).
    let script = match form.objective {
        Objective::Sft | Objective::Orpo | Objective::Simpo | Objective::Ppo => "sft",
        Objective::Dpo => "dpo",
        Objective::Kto => "kto",
        Objective::Grpo => "grpo",
        Objective::RewardModel => "reward",
    };
    let head = format!("trl {script}");
    let mut args: Vec<String> = vec![head.clone()];
    let mut arg = |k: &str, v: Option<String>| {
        args.push(match v {
            Some(v) => format!("--{k} {v}"),
            None => format!("--{k}"),
        })
    };
    arg("model_name_or_path", Some(model_path(form)));
    arg("dataset_name", Some("your/dataset".into()));
    if script == "grpo" {
        // GRPOScriptArguments: a reward to train on (one of TRL's built-ins).
        arg("reward_funcs", Some("accuracy_reward".into()));
    }
    arg(
        "per_device_train_batch_size",
        Some(form.micro_batch.to_string()),
    );
    arg(
        "gradient_accumulation_steps",
        Some(form.grad_accum.to_string()),
    );
    // `max_length` of SFTConfig, DPOConfig, KTOConfig and RewardConfig; GRPOConfig has no prompt limit.
    if script != "grpo" {
        arg("max_length", Some(form.seq_len.to_string()));
    }
    // Only SFTConfig packs.
    if script == "sft" && !form.variable_lengths {
        arg("packing", None);
    }
    // Written either way: TRL's configs and plain `TrainingArguments` disagree on the default.
    if form.checkpointing == Checkpointing::Off {
        arg("gradient_checkpointing", Some("false".into()));
    } else {
        arg("gradient_checkpointing", None);
    }
    // Autocast and the dtype the model loads in (ModelConfig `dtype`, default float32): mixed precision is
    // an fp32 model under bf16/fp16 autocast, pure 16-bit a 16-bit model, fp32 no autocast (TRL turns bf16
    // on unless it is told otherwise or fp16 is set).
    let half = if fp16(form) { "fp16" } else { "bf16" };
    match form.precision {
        Precision::Fp32 => arg("bf16", Some("false".into())),
        Precision::Mixed | Precision::Pure16 => arg(half, None),
    }
    let dtype = match form.precision {
        Precision::Pure16 if fp16(form) => "float16",
        Precision::Pure16 => "bfloat16",
        Precision::Mixed | Precision::Fp32 => "float32",
    };
    arg("dtype", Some(dtype.into()));
    let name = crate::settings::hf_optimizer_name(form.optimizer);
    if form.optimizer == Optimizer::QGalore {
        // transformers has no Q-GaLore `optim` (the `optim` setting's export decision says so).
    } else if crate::model::full_tuning::is_projected(form.optimizer) {
        // transformers GaLore/APOLLO: `optim_target_modules` is required ("all-linear" takes every linear
        // layer), the rank comes from `optim_args`, and the `_layerwise` names step each parameter in
        // backward.
        let layerwise = if form.optimizer_in_backward {
            "_layerwise"
        } else {
            ""
        };
        arg("optim", Some(format!("{name}{layerwise}")));
        arg("optim_target_modules", Some("all-linear".into()));
        arg("optim_args", Some(format!("rank={}", form.projection_rank)));
    } else {
        arg("optim", Some(name.into()));
        if form.optimizer == Optimizer::SgdMomentum {
            arg("optim_args", Some(SGD_MOMENTUM.into()));
        }
    }
    arg(
        "attn_implementation",
        Some(
            match form.attention {
                AttentionImpl::Eager => "eager",
                AttentionImpl::Sdpa => "sdpa",
                AttentionImpl::Flash2 => "flash_attention_2",
            }
            .into(),
        ),
    );
    if form.loss == LossImpl::Fused {
        arg("use_liger_kernel", None);
    }
    if lora_like(form) {
        arg("use_peft", None);
        arg("lora_r", Some(form.lora_rank.to_string()));
        arg("lora_alpha", Some((2 * form.lora_rank).to_string()));
        if !form.lora_dropout {
            arg("lora_dropout", Some("0.0".into()));
        }
        if !form.lora_targets.is_empty() {
            arg("lora_target_modules", Some(module_names(form).join(" ")));
        }
        if !saved_modules(form).is_empty() {
            arg("lora_modules_to_save", Some(saved_modules(form).join(" ")));
        }
        if form.dora {
            arg("use_dora", None);
        }
        if form.objective == Objective::RewardModel {
            // ModelConfig: "use 'SEQ_CLS' for reward modeling".
            arg("lora_task_type", Some("SEQ_CLS".into()));
        }
    }
    if form.mode == Mode::Qlora {
        arg("load_in_4bit", None);
        arg("bnb_4bit_quant_type", Some(quant_type(form).into()));
        if form.weights == WeightFormat::Nf4Dq {
            arg("use_bnb_nested_quant", None);
        }
    } else if form.mode == Mode::Lora && form.weights == WeightFormat::Int8 {
        arg("load_in_8bit", None);
    }
    match form.objective {
        Objective::Dpo | Objective::Kto if form.reference == Reference::Precomputed => {
            arg("precompute_ref_log_probs", None)
        }
        Objective::Grpo => {
            arg("num_generations", Some(form.generations.to_string()));
            arg(
                "max_completion_length",
                Some(form.completion_tokens.to_string()),
            );
            // GRPOConfig `beta`: 0.0 (the default since TRL 0.19) loads no reference model; 0.04 was the
            // default before.
            let beta = if form.reference == Reference::None {
                "0.0"
            } else {
                "0.04"
            };
            arg("beta", Some(beta.into()));
            if form.vllm_gib > 0 {
                arg("use_vllm", None);
                arg("vllm_mode", Some("colocate".into()));
                arg(
                    "vllm_gpu_memory_utilization",
                    Some(share(form.vllm_gib, form.gpu_usable_gib())),
                );
                if form.vllm_sleep {
                    arg("vllm_enable_sleep_mode", None);
                }
            }
        }
        _ => {}
    }
    if let Some(file) = deepspeed_file(form) {
        arg("deepspeed", Some(file));
    }
    arg("output_dir", Some("output".into()));
    let launcher = if form.gpus > 1 {
        format!("accelerate launch --num_processes {} ", form.gpus)
    } else {
        String::new()
    };
    let cmd = args.join(" \\\n  ");
    if launcher.is_empty() {
        cmd
    } else {
        // `trl sft` is a console script; under accelerate the module form is used.
        format!("{launcher}-m trl.scripts.{script}{}", &cmd[head.len()..])
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::model::Optimizer;

    fn form() -> Form {
        Form {
            model: "qwen2.5-7b".into(),
            mode: Mode::Qlora,
            weights: WeightFormat::Nf4Dq,
            lora_rank: 32,
            lora_targets: vec![Module::Q, Module::V],
            micro_batch: 3,
            seq_len: 4096,
            grad_accum: 8,
            attention: AttentionImpl::Flash2,
            loss: LossImpl::Fused,
            optimizer: Optimizer::PagedAdamw8bit,
            gpus: 4,
            parallelism: Parallelism::Zero3,
            offload: Offload::Optimizer,
            ..Form::default()
        }
    }

    #[test]
    fn llama_factory_yaml_parses_back() {
        let y: serde_yaml::Value = serde_yaml::from_str(&llama_factory_yaml(&form())).unwrap();
        assert_eq!(y["model_name_or_path"], "Qwen/Qwen2.5-7B");
        assert_eq!(y["quantization_bit"], 4);
        assert_eq!(y["finetuning_type"], "lora");
        assert_eq!(y["lora_rank"], 32);
        assert_eq!(y["lora_target"], "q_proj,v_proj");
        assert_eq!(y["cutoff_len"], 4096);
        assert_eq!(y["per_device_train_batch_size"], 3);
        assert_eq!(y["gradient_accumulation_steps"], 8);
        assert_eq!(y["optim"], "paged_adamw_8bit");
        assert_eq!(y["flash_attn"], "fa2");
        assert_eq!(y["enable_liger_kernel"], true);
        assert_eq!(y["deepspeed"], "ds_z3_offload_optimizer_config.json");
        assert!(y.get("disable_gradient_checkpointing").is_none());
    }

    #[test]
    fn deepspeed_json_parses_back() {
        let ds: serde_json::Value =
            serde_json::from_str(&deepspeed_json(&form()).unwrap()).unwrap();
        assert_eq!(ds["zero_optimization"]["stage"], 3);
        assert_eq!(
            ds["zero_optimization"]["offload_optimizer"]["device"],
            "cpu"
        );
        assert_eq!(ds["train_micro_batch_size_per_gpu"], 3);
        assert_eq!(ds["gradient_accumulation_steps"], 8);
        assert_eq!(deepspeed_json(&Form::default()), None);
    }

    #[test]
    fn trl_command_parses_back() {
        let cmd = trl_command(&form()).replace("\\\n", " ");
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let value = |flag: &str| {
            let i = words
                .iter()
                .position(|w| *w == flag)
                .unwrap_or_else(|| panic!("{flag} missing"));
            words.get(i + 1).copied().unwrap_or("")
        };
        assert_eq!(words[..4], ["accelerate", "launch", "--num_processes", "4"]);
        assert_eq!(value("--per_device_train_batch_size"), "3");
        assert_eq!(value("--max_length"), "4096");
        assert_eq!(value("--lora_r"), "32");
        assert_eq!(value("--lora_target_modules"), "q_proj");
        assert!(words.contains(&"--load_in_4bit") && words.contains(&"--use_bnb_nested_quant"));
        assert!(
            words.contains(&"--gradient_checkpointing") && words.contains(&"--use_liger_kernel")
        );
        assert_eq!(value("--deepspeed"), "ds_z3_offload_optimizer_config.json");
    }
}
