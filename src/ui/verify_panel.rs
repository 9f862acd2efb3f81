//! "Verify it yourself": the snippet that measures the run the way the estimate is defined, with a copy
//! button, and what the estimate assumes, each with the setting that changes it (`crate::advice::verify`).

use super::i18n::Lang;
use crate::advice::verify::{assumptions, snippet, Assumption};
use crate::model::{Estimate, Versions};
use crate::share::enum_id;
use crate::web;
use yew::prelude::*;

/// Props of [`VerifyPanel`].
#[derive(Properties, PartialEq)]
pub struct VerifyPanelProps {
    pub form: crate::form::Form,
    pub estimate: Estimate,
}

/// The snippet and the assumptions.
#[component]
pub fn VerifyPanel(props: &VerifyPanelProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let gib = 1073741824.0;
    let code = snippet(
        &props.form,
        props.estimate.peak_allocated / gib,
        props.estimate.peak_reserved / gib,
    );
    let copied = use_state(|| false);
    let on_copy = {
        let (code, copied) = (code.clone(), copied.clone());
        Callback::from(move |_: MouseEvent| {
            web::copy_text(&code);
            copied.set(true);
        })
    };
    let v = Versions::default();
    let words = |a: &Assumption| -> String {
        match a {
            Assumption::Stack { stack } => t.assume_stack.replace("{stack}", stack.name()),
            Assumption::Lengths { variable: true } => t.assume_variable.to_string(),
            Assumption::Lengths { variable: false } => t.assume_fixed.to_string(),
            Assumption::Loss { loss } => t.assume_loss.replace("{loss}", &enum_id(loss)),
            Assumption::Attention { attention } => {
                t.assume_attention.replace("{attn}", &enum_id(attention))
            }
            Assumption::Checkpointing { checkpointing } => {
                t.assume_ckpt.replace("{ckpt}", &enum_id(checkpointing))
            }
            Assumption::Versions => t
                .assume_versions
                .replace("{torch}", &String::from(v.torch))
                .replace("{transformers}", &String::from(v.transformers)),
        }
    };
    html! {
        <details class="verify" id="verify">
            <summary>{ t.verify_title }</summary>
            <p class="hint">{ t.verify_help }</p>
            <pre id="verify-snippet"><code>{ &code }</code></pre>
            <button type="button" id="verify-copy" onclick={on_copy}>{ if *copied { t.copied } else { t.copy_snippet } }</button>
            <h4>{ t.assumptions_title }</h4>
            <ul id="assumptions">
                { for assumptions(&props.form).iter().map(|a| html! {
                    // Each points at the input that changes it (the batch-length input's id is `shapes`).
                    <li><label for={match a.key() { "varlen" => "shapes", k => k }}>{ words(a) }</label></li>
                }) }
            </ul>
        </details>
    }
}
