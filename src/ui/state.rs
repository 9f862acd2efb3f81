//! The page's state and its one reducer: components send [`Edit`] intents, and the reducer applies each to
//! the form it holds at that moment (`crate::edit`), so a late file read or a stale component cannot write
//! back an old form.

use crate::edit::{Edit, ImportOutcome};
use crate::form::{Form, CUSTOM};
use crate::hub::HubState;
use std::rc::Rc;
use yew::prelude::*;

/// Everything the page's inputs change.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub form: Form,
    /// What the last paste, drop or picked file did (`None` before any, or after the box was cleared).
    pub import: Option<ImportOutcome>,
    /// Where the last Hugging Face Hub load stands.
    pub hub: HubState,
}

impl State {
    pub fn new(form: Form) -> State {
        State {
            form,
            import: None,
            hub: HubState::Idle,
        }
    }
}

impl Reducible for State {
    type Action = Edit;

    fn reduce(self: Rc<Self>, edit: Edit) -> Rc<Self> {
        // A Hub result is taken only for the load the page waits for: one the user has since replaced by
        // another id is dropped, as if it had never arrived.
        match &edit {
            Edit::HubLoaded { model, .. } if !self.hub.awaits(&model.id) => return self,
            Edit::HubFailed { id, .. } if !self.hub.awaits(id) => return self,
            _ => {}
        }
        let mut next = (*self).clone();
        match &edit {
            Edit::HubFetching(id) => next.hub = HubState::Fetching(id.clone()),
            Edit::HubLoaded { model, cached } => {
                next.hub = HubState::Loaded {
                    model: model.clone(),
                    cached: *cached,
                }
            }
            Edit::HubFailed { id, error } => {
                next.hub = HubState::Failed {
                    id: id.clone(),
                    error: error.clone(),
                    fallback: next.form.model == CUSTOM && next.form.hub == *id,
                }
            }
            _ => {}
        }
        if matches!(&edit, Edit::Import(text) if text.trim().is_empty()) {
            next.import = None;
            return Rc::new(next);
        }
        if let Some(outcome) = edit.apply(&mut next.form) {
            next.import = Some(outcome);
        }
        Rc::new(next)
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_to_the_current_form_and_imports_keep_their_outcome() {
        let s = Rc::new(State::new(Form::default()));
        let s = s.reduce(Edit::Set {
            key: "batch",
            value: "9".into(),
        });
        let s = s.reduce(Edit::Import("--gradient_accumulation_steps 5".into()));
        assert_eq!((s.form.micro_batch, s.form.grad_accum), (9, 5));
        assert!(matches!(s.import, Some(Ok(_))));
        let s = s.reduce(Edit::Import("{ broken".into()));
        assert!(matches!(s.import, Some(Err(_))));
        assert_eq!(s.form.grad_accum, 5);
        let s = s.reduce(Edit::Import("  ".into()));
        assert_eq!(s.import, None);
    }

    #[test]
    fn a_hub_result_is_taken_only_for_the_id_awaited() {
        use crate::hub::{HubError, HubModel};
        let model = |id: &str| {
            Rc::new(HubModel {
                id: id.into(),
                revision: "main".into(),
                version: None,
                config: r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":3,"num_attention_heads":4,"vocab_size":100}"#.into(),
                weights: Err(HubError::NoSafetensors),
            })
        };
        let s = Rc::new(State::new(Form::default()));
        // Nothing awaited: dropped.
        let s2 = s.clone().reduce(Edit::HubLoaded {
            model: model("a/b"),
            cached: false,
        });
        assert!(Rc::ptr_eq(&s, &s2));
        // The user asked for a/b, then c/d: a/b's late answer is dropped, c/d's applied.
        let s = s.reduce(Edit::HubFetching("a/b".into()));
        let s = s.reduce(Edit::HubFetching("c/d".into()));
        let s = s.reduce(Edit::HubLoaded {
            model: model("a/b"),
            cached: false,
        });
        assert_eq!(s.form.hub, "");
        let s = s.reduce(Edit::HubLoaded {
            model: model("c/d"),
            cached: true,
        });
        assert_eq!((s.form.hub.as_str(), s.form.custom_arch.layers), ("c/d", 3));
        assert!(matches!(&s.hub, HubState::Loaded { cached: true, .. }));
        // A failure for the model the form holds (a link opened offline) falls back to its shape.
        let s = s.reduce(Edit::HubFetching("c/d".into()));
        let s = s.reduce(Edit::HubFailed {
            id: "c/d".into(),
            error: HubError::Unreachable,
        });
        assert!(matches!(&s.hub, HubState::Failed { fallback: true, .. }));
        assert_eq!(s.form.custom_arch.layers, 3);
        let s = s.reduce(Edit::HubFetching("e/f".into()));
        let s = s.reduce(Edit::HubFailed {
            id: "e/f".into(),
            error: HubError::Unreachable,
        });
        assert!(matches!(
            &s.hub,
            HubState::Failed {
                fallback: false,
                ..
            }
        ));
    }
}
