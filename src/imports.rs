//! Every text a user can paste, drop or pipe in, read by one function that the page and the CLI share: a
//! Hugging Face `config.json`, a PEFT `adapter_config.json`, or a training setup (command line,
//! LLaMA-Factory/axolotl YAML, DeepSpeed JSON). The text is applied to the current form; a failure changes
//! nothing and says why, in terms of the kind of text it most looks like.

use crate::catalog::import::{parse_any_text, ImportError, ImportedFile};
use crate::doctor::import_setup;
use crate::form::{Form, CUSTOM};
use crate::model::Module;

/// What an import understood, for the sentence shown under the box.
#[derive(Clone, Debug, PartialEq)]
pub enum Understood {
    /// A model's shape: the form switches to a custom model of it.
    Model {
        model_type: Option<String>,
        /// Parameters of the imported shape.
        params: f64,
    },
    /// LoRA settings of an adapter.
    Adapter {
        /// The PEFT method (`peft_type`).
        method: crate::model::peft::Method,
        rank: u32,
        targets: Vec<Module>,
        /// Tokens a trainable-tokens adapter trains (`token_indices`; meaningful for that method only).
        trainable_tokens: u32,
        /// `target_modules` names that map to no module the model knows.
        unknown_targets: Vec<String>,
    },
    /// A training setup.
    Setup {
        format: &'static str,
        used: Vec<String>,
        ignored: Vec<String>,
    },
}

/// The form after an import, and what was understood.
#[derive(Clone, Debug, PartialEq)]
pub struct Detected {
    pub form: Form,
    pub understood: Understood,
}

/// Applies a model or adapter config to a form.
pub fn apply_file(form: &mut Form, file: ImportedFile) {
    match file {
        ImportedFile::Model(m) => {
            form.model = CUSTOM.into();
            form.custom_arch = m.arch;
            form.hub.clear();
            if let Some(w) = m.weights {
                form.weights = w;
            }
        }
        ImportedFile::Adapter(a) => form.set_lora(a.lora),
    }
}

/// Reads `text` as whatever it is and applies it to `base`. A model or adapter config is tried first, then
/// a training setup; on failure the message describes the problem with the kind of text it most looks like.
pub fn detect(text: &str, base: &Form) -> Result<Detected, String> {
    if text.trim().is_empty() {
        return Err("nothing to import".into());
    }
    let config = parse_any_text(text);
    if let Ok(file) = config {
        let understood = match &file {
            ImportedFile::Model(m) => Understood::Model {
                model_type: m.model_type.clone(),
                params: crate::model::vision::total_params(&m.arch),
            },
            ImportedFile::Adapter(a) => Understood::Adapter {
                method: a.lora.method,
                rank: a.lora.rank,
                targets: a.lora.targets.clone(),
                trainable_tokens: a.lora.trainable_tokens,
                unknown_targets: a.unknown_targets.clone(),
            },
        };
        let mut form = base.clone();
        apply_file(&mut form, file);
        return Ok(Detected { form, understood });
    }
    match import_setup(text, base) {
        Ok(setup) => Ok(Detected {
            form: setup.form,
            understood: Understood::Setup {
                format: setup.format,
                used: setup.used,
                ignored: setup.ignored,
            },
        }),
        Err(setup_err) => {
            let looks_like_model = text.contains("hidden_size")
                || text.contains("n_embd")
                || text.contains("num_hidden_layers");
            Err(match config {
                Err(
                    e @ (ImportError::Missing(_)
                    | ImportError::Invalid { .. }
                    | ImportError::TooLarge(_)),
                ) if looks_like_model => e.to_string(),
                Err(ImportError::NotJson(e)) if text.trim_start().starts_with('{') => {
                    format!("not valid JSON: {e}")
                }
                _ => setup_err.to_string(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    #[test]
    fn each_kind_of_text_is_recognised_and_applied() {
        let base = Form::default();
        let config = r#"{"model_type":"llama","hidden_size":2048,"num_hidden_layers":16,
            "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":8192,"vocab_size":128256}"#;
        let d = detect(config, &base).unwrap();
        assert_eq!(d.form.model, CUSTOM);
        assert_eq!(d.form.custom_arch.hidden, 2048);
        assert!(matches!(d.understood, Understood::Model { .. }));

        let adapter = r#"{"peft_type":"LORA","r":8,"target_modules":["q_proj","v_proj"]}"#;
        let d = detect(
            adapter,
            &Form {
                mode: Mode::Full,
                ..base.clone()
            },
        )
        .unwrap();
        assert_eq!((d.form.mode, d.form.lora_rank), (Mode::Lora, 8));

        let d = detect(
            "--per_device_train_batch_size 2 --gradient_accumulation_steps 8",
            &base,
        )
        .unwrap();
        assert_eq!((d.form.micro_batch, d.form.grad_accum), (2, 8));
        assert!(matches!(
            d.understood,
            Understood::Setup {
                format: "command-line",
                ..
            }
        ));
    }

    #[test]
    fn a_failure_names_the_problem_of_the_text_it_looks_like() {
        let base = Form::default();
        let err = detect(r#"{"hidden_size": 4096}"#, &base).unwrap_err();
        assert!(
            err.contains("num_hidden_layers") || err.contains("missing"),
            "{err}"
        );
        assert!(detect("{ nope", &base)
            .unwrap_err()
            .starts_with("not valid JSON"));
        assert!(detect("   ", &base).is_err());
    }
}
