//! What a user can do to the form, as data. The page's components send these intents to one reducer
//! (`ui::state`), which applies them to the form it holds at that moment: a late file read or a stale
//! component can no longer write back an old form. Plain Rust, so every edit is tested natively.

use crate::catalog::import::ImportedFile;
use crate::form::{Form, HubCheckpoint, CUSTOM};
use crate::hub::{HubError, HubModel};
use crate::imports::{apply_file, detect, Understood};
use crate::model::{Module, Stack};
use crate::settings;
use std::rc::Rc;

/// One field of a custom model's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArchField {
    Layers,
    Hidden,
    Heads,
    KvHeads,
    HeadDim,
    Intermediate,
    Vocab,
}

/// An intent.
#[derive(Clone, Debug, PartialEq)]
pub enum Edit {
    /// Set a setting of [`settings::SETTINGS`] from its text (`key` is its link key).
    Set { key: &'static str, value: String },
    /// Pick a training stack, which brings its defaults.
    Stack(Stack),
    /// Adapt, or stop adapting, one module.
    ToggleTarget(Module),
    /// One field of the custom shape.
    Arch(ArchField, u32),
    /// Tie or untie the custom shape's embeddings.
    TiedEmbeddings(bool),
    /// Take a whole form: a remedy the advisor computed from the current one.
    Replace(Box<Form>),
    /// Read a pasted or dropped text and apply it to the current form.
    Import(String),
    /// A Hugging Face Hub load started (`web::hub`); its result follows as one of the two below.
    HubFetching(String),
    /// A model from the Hub, or (`cached`) this browser's copy of one: applied like a pasted config.json,
    /// remembering its id, unless the form already holds that model (a shared link), whose settings stay.
    HubLoaded { model: Rc<HubModel>, cached: bool },
    /// A Hub load failed.
    HubFailed { id: String, error: HubError },
}

/// What the last import did: understood (and applied), or why not.
pub type ImportOutcome = Result<Understood, String>;

impl Edit {
    /// Applies the edit; returns the outcome for [`Edit::Import`], `None` for every other edit. A value a
    /// setting refuses leaves the form as it was.
    pub fn apply(self, form: &mut Form) -> Option<ImportOutcome> {
        match self {
            Edit::Set { key, value } => {
                if let Some(s) = settings::by_key(key) {
                    (s.set)(form, &value);
                }
                if key == "model" && form.model != CUSTOM {
                    form.hub.clear();
                }
            }
            Edit::Stack(stack) => form.set_stack(stack),
            Edit::ToggleTarget(m) => {
                if let Some(i) = form.lora_targets.iter().position(|t| *t == m) {
                    form.lora_targets.remove(i);
                } else {
                    form.lora_targets.push(m);
                    form.lora_targets
                        .sort_by_key(|t| Module::ALL.iter().position(|a| a == t));
                }
            }
            Edit::Arch(field, v) => {
                let a = &mut form.custom_arch;
                let slot = match field {
                    ArchField::Layers => &mut a.layers,
                    ArchField::Hidden => &mut a.hidden,
                    ArchField::Heads => &mut a.heads,
                    ArchField::KvHeads => &mut a.kv_heads,
                    ArchField::HeadDim => &mut a.head_dim,
                    ArchField::Intermediate => &mut a.intermediate,
                    ArchField::Vocab => &mut a.vocab,
                };
                *slot = v;
                // An edited shape is no longer the Hub model's.
                form.hub.clear();
            }
            Edit::TiedEmbeddings(t) => {
                form.custom_arch.tied_embeddings = t;
                form.hub.clear();
            }
            Edit::Replace(next) => *form = *next,
            Edit::Import(text) => {
                return Some(detect(&text, form).map(|d| {
                    *form = d.form;
                    d.understood
                }))
            }
            Edit::HubLoaded { model, .. } => {
                let shown = form.model == CUSTOM && form.hub == model.id;
                // The stored weights attach to the id either way (a shared link keeps its settings).
                let checkpoint = model.stored().map(|stored| HubCheckpoint {
                    id: model.id.clone(),
                    stored,
                });
                if let (false, Ok(imported)) = (shown, model.imported()) {
                    apply_file(form, ImportedFile::Model(imported));
                    form.hub = model.id.clone();
                }
                form.checkpoint = checkpoint;
            }
            Edit::HubFetching(_) | Edit::HubFailed { .. } => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    #[test]
    fn settings_are_set_by_key_and_bad_values_change_nothing() {
        let mut f = Form::default();
        Edit::Set {
            key: "batch",
            value: "8".into(),
        }
        .apply(&mut f);
        assert_eq!(f.micro_batch, 8);
        Edit::Set {
            key: "batch",
            value: "0".into(),
        }
        .apply(&mut f);
        assert_eq!(f.micro_batch, 8);
        Edit::Set {
            key: "mode",
            value: "full".into(),
        }
        .apply(&mut f);
        assert_eq!(f.mode, Mode::Full);
    }

    fn hub_model(id: &str, layers: u32) -> Rc<HubModel> {
        Rc::new(HubModel {
            id: id.into(),
            revision: "main".into(),
            version: None,
            config: format!(
                r#"{{"model_type":"llama","hidden_size":64,"num_hidden_layers":{layers},"num_attention_heads":4,
                "intermediate_size":128,"vocab_size":100,"quantization_config":{{"quant_method":"fp8"}}}}"#
            ),
            weights: Err(HubError::NoSafetensors),
        })
    }

    #[test]
    fn a_hub_model_applies_like_a_pasted_config_and_remembers_its_id() {
        let mut f = Form::default();
        let loaded = |model| Edit::HubLoaded {
            model,
            cached: false,
        };
        loaded(hub_model("a/b", 3)).apply(&mut f);
        assert_eq!(
            (f.model.as_str(), f.hub.as_str(), f.custom_arch.layers),
            (CUSTOM, "a/b", 3)
        );
        assert_eq!(f.weights, crate::model::WeightFormat::Fp8);
        // The same model again (a link opened later) leaves the form's own settings alone.
        Edit::Set {
            key: "weights",
            value: "bf16".into(),
        }
        .apply(&mut f);
        loaded(hub_model("a/b", 5)).apply(&mut f);
        assert_eq!(
            (f.custom_arch.layers, f.weights),
            (3, crate::model::WeightFormat::Bf16)
        );
        // Editing the shape, pasting a config or picking a catalog model forgets the id.
        Edit::Arch(ArchField::Layers, 4).apply(&mut f);
        assert_eq!(f.hub, "");
        loaded(hub_model("a/b", 3)).apply(&mut f);
        Edit::Set {
            key: "model",
            value: "qwen2.5-7b".into(),
        }
        .apply(&mut f);
        assert_eq!(f.hub, "");
        loaded(hub_model("a/b", 3)).apply(&mut f);
        Edit::Import(r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}"#.into())
            .apply(&mut f);
        assert_eq!((f.hub.as_str(), f.custom_arch.layers), ("", 2));
        // Fetching and failing change nothing.
        let before = f.clone();
        Edit::HubFetching("a/b".into()).apply(&mut f);
        Edit::HubFailed {
            id: "a/b".into(),
            error: HubError::Unreachable,
        }
        .apply(&mut f);
        assert_eq!(f, before);
    }

    #[test]
    fn targets_toggle_and_keep_their_order() {
        let mut f = Form::default();
        Edit::ToggleTarget(Module::K).apply(&mut f);
        assert!(!f.lora_targets.contains(&Module::K));
        Edit::ToggleTarget(Module::K).apply(&mut f);
        assert_eq!(f.lora_targets, Module::ALL.to_vec());
    }

    #[test]
    fn an_import_applies_to_the_form_it_meets_and_a_failed_one_changes_nothing() {
        let mut f = Form {
            micro_batch: 7,
            ..Form::default()
        };
        let out = Edit::Import("--gradient_accumulation_steps 3".into()).apply(&mut f);
        assert!(matches!(out, Some(Ok(Understood::Setup { .. }))));
        assert_eq!((f.micro_batch, f.grad_accum), (7, 3));
        let before = f.clone();
        assert!(matches!(
            Edit::Import("{ broken".into()).apply(&mut f),
            Some(Err(_))
        ));
        assert_eq!(f, before);
    }

    /// A Hub model's headers become the job's stored weights while the form shows that model unedited; an
    /// edited shape or another model drops them.
    #[test]
    fn a_loaded_checkpoint_is_the_jobs_until_the_shape_is_edited() {
        use crate::hub::{Dtype, DtypeTotal, WeightSummary};
        let summary = WeightSummary {
            files: 1,
            files_read: 1,
            tensors: 30,
            by_dtype: vec![DtypeTotal {
                dtype: Dtype::Bf16,
                elements: 100_000,
                bytes: 200_000,
            }],
            bytes: 200_000,
            index_total_size: None,
            parameters: Some(100_000),
        };
        let model = Rc::new(HubModel {
            id: "a/b".into(),
            revision: "main".into(),
            version: None,
            config: r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":3,"num_attention_heads":4,"vocab_size":100}"#.into(),
            weights: Ok(summary),
        });
        let mut f = Form::default();
        Edit::HubLoaded {
            model: model.clone(),
            cached: false,
        }
        .apply(&mut f);
        let stored = f.job().checkpoint.expect("the headers are the job's");
        assert_eq!((stored.plain, stored.quantized), (200_000.0, 0.0));
        Edit::Arch(ArchField::Layers, 4).apply(&mut f);
        assert_eq!(f.job().checkpoint, None);
        // Loading it again (a shared link whose form already names it) attaches them again.
        f.hub = "a/b".into();
        Edit::HubLoaded {
            model,
            cached: true,
        }
        .apply(&mut f);
        assert!(f.job().checkpoint.is_some());
        Edit::Set {
            key: "model",
            value: "qwen2.5-7b".into(),
        }
        .apply(&mut f);
        assert_eq!(f.job().checkpoint, None);
    }
}
