//! The page's state and its one reducer: components send [`Edit`] intents, and the reducer applies each to
//! the form it holds at that moment (`crate::edit`), so a late file read or a stale component cannot write
//! back an old form.

use crate::edit::{Edit, ImportOutcome};
use crate::form::Form;
use std::rc::Rc;
use yew::prelude::*;

/// Everything the page's inputs change.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub form: Form,
    /// What the last paste, drop or picked file did (`None` before any, or after the box was cleared).
    pub import: Option<ImportOutcome>,
}

impl State {
    pub fn new(form: Form) -> State {
        State { form, import: None }
    }
}

impl Reducible for State {
    type Action = Edit;

    fn reduce(self: Rc<Self>, edit: Edit) -> Rc<Self> {
        let mut next = (*self).clone();
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
}
