//! The setup as something a user can run: a LLaMA-Factory YAML, a TRL `trl sft` command line, and a
//! DeepSpeed JSON when ZeRO is on. Each renders exactly the form's fields; option names follow each tool's
//! documented arguments (LLaMA-Factory `hparams/*.py`, TRL `SFTConfig` + `ModelConfig`, transformers
//! `TrainingArguments`, DeepSpeed config JSON).

use crate::catalog;
use crate::form::Form;
use crate::model::preference::{Objective, Reference};
use crate::model::{
    AttentionImpl, Checkpointing, LossImpl, Mode, Module, Offload, Optimizer, Parallelism,
    Precision, WeightFormat,
};

/// The Hugging Face id to load: the catalog's, or a placeholder for a custom model.
fn model_path(form: &Form) -> String {
    catalog::model(&form.model)
        .map_or_else(|| "path/to/your-model".to_string(), |m| m.hf_id.clone())
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

fn zero_stage(form: &Form) -> Option<u8> {
    match form.parallelism {
        Parallelism::Zero1 => Some(1),
        Parallelism::Zero2 => Some(2),
        Parallelism::Zero3 => Some(3),
        _ if form.offload != Offload::None => Some(3),
        _ => None,
    }
}

fn fp16(form: &Form) -> bool {
    form.weights == WeightFormat::Fp16
}

/// DeepSpeed config for the form's ZeRO stage and offload; `None` without ZeRO.
pub fn deepspeed_json(form: &Form) -> Option<String> {
    let stage = zero_stage(form)?;
    let mut zero =
        serde_json::json!({ "stage": stage, "overlap_comm": true, "contiguous_gradients": true });
    if form.offload != Offload::None {
        zero["offload_optimizer"] = serde_json::json!({ "device": "cpu", "pin_memory": true });
    }
    if form.offload == Offload::ParamOptimizer {
        zero["offload_param"] = serde_json::json!({ "device": "cpu", "pin_memory": true });
    }
    let json = serde_json::json!({
        "train_micro_batch_size_per_gpu": form.micro_batch,
        "gradient_accumulation_steps": form.grad_accum,
        "bf16": { "enabled": !fp16(form) },
        "fp16": { "enabled": fp16(form) },
        "zero_optimization": zero,
        "gradient_clipping": 1.0,
    });
    serde_json::to_string_pretty(&json).ok()
}

/// A LLaMA-Factory training YAML (`llamafactory-cli train this.yaml`).
pub fn llama_factory_yaml(form: &Form) -> String {
    let mut y = String::new();
    let mut kv = |k: &str, v: String| y.push_str(&format!("{k}: {v}\n"));
    kv("model_name_or_path", model_path(form));
    if form.mode == Mode::Qlora {
        kv("quantization_bit", "4".into());
        kv("quantization_method", "bitsandbytes".into());
    }
    // LLaMA-Factory `stage` and `pref_loss` (hparams/finetuning_args.py): ORPO and SimPO are DPO-stage
    // losses; GRPO has no stage there (TRL's `trl grpo` runs it).
    let stage = match form.objective {
        Objective::Sft | Objective::Grpo => "sft",
        Objective::Dpo | Objective::Orpo | Objective::Simpo => "dpo",
        Objective::Kto => "kto",
        Objective::RewardModel => "rm",
    };
    kv("stage", stage.into());
    match form.objective {
        Objective::Orpo => kv("pref_loss", "orpo".into()),
        Objective::Simpo => kv("pref_loss", "simpo".into()),
        _ => {}
    }
    if form.objective.uses_reference() && form.reference == Reference::Precomputed {
        kv("precompute_ref_log_probs", "true".into());
    }
    kv("do_train", "true".into());
    let method = match form.mode {
        Mode::Full | Mode::Inference => "full",
        Mode::Lora | Mode::Qlora => "lora",
        Mode::Freeze => "freeze",
        // BAdam is LLaMA-Factory full tuning with `use_badam`; LISA is LMFlow's (exported as full tuning).
        Mode::Badam | Mode::Lisa => "full",
    };
    kv("finetuning_type", method.into());
    if matches!(form.mode, Mode::Lora | Mode::Qlora) {
        kv("lora_rank", form.lora_rank.to_string());
        kv("lora_alpha", (2 * form.lora_rank).to_string());
        kv(
            "lora_dropout",
            if form.lora_dropout { "0.05" } else { "0.0" }.into(),
        );
        let all = Module::ALL.iter().all(|m| form.lora_targets.contains(m));
        kv(
            "lora_target",
            if all {
                "all".into()
            } else {
                module_names(form).join(",")
            },
        );
        let mut extra = Vec::new();
        if form.train_embed {
            extra.push("embed_tokens");
        }
        if form.train_lm_head {
            extra.push("lm_head");
        }
        if !extra.is_empty() {
            kv("additional_target", extra.join(","));
        }
        if form.dora {
            kv("use_dora", "true".into());
        }
    }
    if form.mode == Mode::Freeze {
        kv("freeze_trainable_layers", form.trained_layers.to_string());
    }
    if zero_stage(form).is_some() {
        kv("deepspeed", "ds_config.json".into());
    }
    kv("cutoff_len", form.seq_len.to_string());
    if !form.variable_lengths {
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
    match form.optimizer {
        Optimizer::Galore => {
            kv("use_galore", "true".into());
            kv("galore_rank", form.projection_rank.to_string());
            kv("galore_target", "all".into());
        }
        Optimizer::Apollo => {
            kv("use_apollo", "true".into());
            kv("apollo_rank", form.projection_rank.to_string());
        }
        Optimizer::AdamMini => kv("use_adam_mini", "true".into()),
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

/// A TRL command line (`trl sft …`), one flag a line.
pub fn trl_command(form: &Form) -> String {
    // TRL's CLI scripts: `trl sft|dpo|kto|grpo|reward`; ORPO and SimPO have no script of their own and are
    // written as SFT (the LLaMA-Factory export names their loss).
    let script = match form.objective {
        Objective::Sft | Objective::Orpo | Objective::Simpo => "sft",
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
    arg(
        "per_device_train_batch_size",
        Some(form.micro_batch.to_string()),
    );
    arg(
        "gradient_accumulation_steps",
        Some(form.grad_accum.to_string()),
    );
    arg("max_length", Some(form.seq_len.to_string()));
    if !form.variable_lengths {
        arg("packing", None);
    }
    // Written either way: TRL's `SFTConfig` and plain `TrainingArguments` disagree on the default.
    if form.checkpointing == Checkpointing::Off {
        arg("gradient_checkpointing", Some("false".into()));
    } else {
        arg("gradient_checkpointing", None);
    }
    match form.precision {
        Precision::Fp32 => {}
        _ if fp16(form) => arg("fp16", None),
        _ => arg("bf16", None),
    }
    if form.precision == Precision::Pure16 {
        arg(
            "torch_dtype",
            Some(if fp16(form) { "float16" } else { "bfloat16" }.into()),
        );
    }
    arg(
        "optim",
        Some(crate::settings::hf_optimizer_name(form.optimizer).into()),
    );
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
    if matches!(form.mode, Mode::Lora | Mode::Qlora) {
        arg("use_peft", None);
        arg("lora_r", Some(form.lora_rank.to_string()));
        arg("lora_alpha", Some((2 * form.lora_rank).to_string()));
        if !form.lora_dropout {
            arg("lora_dropout", Some("0.0".into()));
        }
        arg("lora_target_modules", Some(module_names(form).join(" ")));
        if form.dora {
            arg("use_dora", None);
        }
    }
    if form.mode == Mode::Qlora {
        arg("load_in_4bit", None);
        arg("bnb_4bit_quant_type", Some("nf4".into()));
        if form.weights == WeightFormat::Nf4Dq {
            arg("use_bnb_nested_quant", None);
        }
    }
    if zero_stage(form).is_some() {
        arg("deepspeed", Some("ds_config.json".into()));
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
        assert_eq!(y["deepspeed"], "ds_config.json");
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
        assert_eq!(value("--deepspeed"), "ds_config.json");
    }
}
