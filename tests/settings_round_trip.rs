//! Each setting survives the trips a user makes: into a link and back, and out to a training setup (TRL
//! command, LLaMA-Factory YAML, DeepSpeed JSON) and back in through the importer.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use vramfit::advice::export::{deepspeed_json, llama_factory_yaml, trl_command};
use vramfit::doctor::import_setup;
use vramfit::form::Form;
use vramfit::model::preference::Objective;
use vramfit::model::*;
use vramfit::settings::{hf_optimizer, hf_optimizer_name, SETTINGS};
use vramfit::share;

fn form_strategy() -> impl Strategy<Value = Form> {
    (
        prop::sample::select(vec![Mode::Full, Mode::Lora, Mode::Qlora]),
        1u32..64,
        1u32..32_768,
        1u32..64,
        1u32..256,
        prop::sample::subsequence(Module::ALL.to_vec(), 1..=7),
        any::<[bool; 4]>(),
        prop::sample::select(vec![
            Optimizer::Adamw,
            Optimizer::Adamw8bit,
            Optimizer::PagedAdamw,
            Optimizer::PagedAdamw8bit,
            Optimizer::Adafactor,
            Optimizer::Sgd,
            Optimizer::Lion,
        ]),
        prop::sample::select(vec![
            AttentionImpl::Eager,
            AttentionImpl::Sdpa,
            AttentionImpl::Flash2,
        ]),
        prop::sample::select(vec![Checkpointing::Off, Checkpointing::Layer]),
        prop::sample::select(vec![LossImpl::Fp32Logits, LossImpl::Fused]),
        (
            1u32..9,
            prop::sample::select(vec![
                Parallelism::Ddp,
                Parallelism::Zero2,
                Parallelism::Zero3,
            ]),
            prop::sample::select(vec![
                Objective::Sft,
                Objective::Dpo,
                Objective::Kto,
                Objective::RewardModel,
            ]),
        ),
    )
        .prop_map(
            |(
                mode,
                batch,
                seq,
                accum,
                rank,
                targets,
                b,
                optimizer,
                attention,
                checkpointing,
                loss,
                (gpus, parallelism, objective),
            )| {
                Form {
                    model: "qwen2.5-7b".into(),
                    mode,
                    weights: if mode == Mode::Qlora {
                        WeightFormat::Nf4
                    } else {
                        WeightFormat::Bf16
                    },
                    micro_batch: batch,
                    seq_len: seq,
                    grad_accum: accum,
                    lora_rank: rank,
                    lora_targets: targets,
                    dora: b[0],
                    lora_dropout: b[1],
                    variable_lengths: b[2],
                    optimizer,
                    attention,
                    checkpointing,
                    loss,
                    gpus,
                    parallelism,
                    objective,
                    ..Form::default()
                }
            },
        )
}

/// The fields a training setup carries, as the importer should read them back.
fn carried(f: &Form) -> serde_json::Value {
    let lora = matches!(f.mode, Mode::Lora | Mode::Qlora);
    serde_json::json!({
        "model": f.model, "mode": f.mode, "batch": f.micro_batch, "seq": f.seq_len, "accum": f.grad_accum,
        "optim": hf_optimizer(hf_optimizer_name(f.optimizer)), "attn": f.attention, "ckpt": f.checkpointing,
        "fused_loss": f.loss == LossImpl::Fused, "varlen": f.variable_lengths,
        "rank": if lora { Some(f.lora_rank) } else { None },
        "targets": if lora { Some(f.lora_targets.clone()) } else { None },
        "dora": lora && f.dora,
        "objective": f.objective,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_form_survives_the_link(form in form_strategy()) {
        prop_assert_eq!(share::decode(&share::encode(&form)), (form, vec![]));
    }

    #[test]
    fn a_form_survives_export_and_import(form in form_strategy()) {
        for (name, text) in [("trl", trl_command(&form)), ("llama-factory", llama_factory_yaml(&form))] {
            let back = import_setup(&text, &Form::default()).map_err(|e| TestCaseError::fail(format!("{name}: {e:?}")))?;
            prop_assert_eq!(carried(&back.form), carried(&form), "{}:\n{}", name, text);
            prop_assert!(back.ignored.iter().all(|k| !SETTINGS.iter().any(|s| s.aliases.contains(&k.as_str()))),
                "{name}: a setting's own key was ignored: {:?}", back.ignored);
        }
        if let Some(ds) = deepspeed_json(&form) {
            let back = import_setup(&ds, &Form::default()).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(back.form.micro_batch, form.micro_batch);
            prop_assert_eq!(back.form.grad_accum, form.grad_accum);
        }
    }
}
