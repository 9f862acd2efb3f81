//! What a user can do to the form, as data. The page's components send these intents to one reducer
//! (`ui::state`), which applies them to the form it holds at that moment: a late file read or a stale
//! component can no longer write back an old form. Plain Rust, so every edit is tested natively.

use crate::form::Form;
use crate::imports::{detect, Understood};
use crate::model::{Module, Stack};
use crate::settings;

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
    Replace(Form),
    /// Read a pasted or dropped text and apply it to the current form.
    Import(String),
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
            }
            Edit::TiedEmbeddings(t) => form.custom_arch.tied_embeddings = t,
            Edit::Replace(next) => *form = next,
            Edit::Import(text) => {
                return Some(detect(&text, form).map(|d| {
                    *form = d.form;
                    d.understood
                }))
            }
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
}
