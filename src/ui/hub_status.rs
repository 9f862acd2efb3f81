//! Where the last Hugging Face Hub load stands, in words: fetching, loaded (from the Hub or this browser's
//! copy) with the stored weights its safetensors headers give, or why it failed.

use super::i18n::{hub_error, Lang};
use crate::bytes::fmt_gib;
use crate::form::{Form, CUSTOM};
use crate::hub::{dtype_list, HubState, Version};
use yew::prelude::*;

/// Props of [`HubStatus`].
#[derive(Properties, PartialEq)]
pub struct HubStatusProps {
    pub state: HubState,
    /// The form: a loaded model is described only while the form still holds it.
    pub form: Form,
}

/// The status line(s) under the model search.
#[component]
pub fn HubStatus(props: &HubStatusProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    // Parsed once per load, not per render.
    let imported = use_memo(props.state.clone(), |s| match s {
        HubState::Loaded { model, .. } => model.imported().ok(),
        _ => None,
    });
    match &props.state {
        HubState::Idle => html! {},
        HubState::Fetching(id) => html! {
            <p id="hub-status" class="hint hub-status" role="status" aria-busy="true">{ t.hub_fetching.replace("{id}", id) }</p>
        },
        HubState::Failed {
            id,
            error,
            fallback: true,
        } => html! {
            <p id="hub-status" class="notice hub-status" role="status">
                { t.hub_fallback.replace("{id}", id).replace("{error}", &hub_error(lang, error)) }
            </p>
        },
        HubState::Failed { error, .. } => html! {
            <p id="hub-status" class="error hub-status" role="alert">{ hub_error(lang, error) }</p>
        },
        HubState::Loaded { model, cached } => {
            if props.form.model != CUSTOM || props.form.hub != model.id {
                return html! {};
            }
            let version = match &model.version {
                Some(v @ Version::Commit(_)) => t.hub_commit.replace("{commit}", &v.short()),
                Some(v @ Version::Etag(_)) => t.hub_etag.replace("{etag}", &v.short()),
                None => t.hub_version_unknown.into(),
            };
            let head = if *cached { t.hub_cached } else { t.hub_loaded };
            let weights = match &model.weights {
                Ok(w) if w.complete() => t
                    .hub_weights
                    .replace("{size}", &fmt_gib(w.bytes as f64))
                    .replace("{dtypes}", &dtype_list(&w.by_dtype))
                    .replace("{tensors}", &w.tensors.to_string())
                    .replace("{files}", &w.files.to_string()),
                Ok(w) => t
                    .hub_weights_partial
                    .replace("{size}", &fmt_gib(w.bytes as f64))
                    .replace("{read}", &w.files_read.to_string())
                    .replace("{files}", &w.files.to_string())
                    .replace("{dtypes}", &dtype_list(&w.by_dtype)),
                Err(e) => t.hub_weights_failed.replace("{error}", &hub_error(lang, e)),
            };
            let params = model
                .weights
                .as_ref()
                .ok()
                .and_then(|w| w.parameters)
                .map(|p| {
                    t.hub_params
                        .replace("{params}", &format!("{:.3}", p as f64 / 1e9))
                        .replace(
                            "{shape}",
                            &format!(
                                "{:.3}",
                                crate::model::vision::total_params(&props.form.custom_arch) / 1e9
                            ),
                        )
                });
            let quant = imported
                .as_ref()
                .as_ref()
                .and_then(|i| i.quantization.as_ref())
                .map(|q| {
                    let text = match q.format {
                        None => t.hub_quant_unknown,
                        Some(_) if q.approximate => t.hub_quant_approx,
                        Some(_) => t.hub_quant_exact,
                    };
                    text.replace("{method}", &q.method)
                        .replace("{format}", q.format.map_or("", |f| f.id()))
                });
            html! {
                <div id="hub-status" class="hint hub-status" role="status">
                    <p>{ head.replace("{id}", &model.id).replace("{version}", &version) }</p>
                    <p id="hub-weights">{ weights }</p>
                    if let Some(p) = params { <p id="hub-params">{ p }</p> }
                    if let Some(q) = quant { <p id="hub-quant">{ q }</p> }
                </div>
            }
        }
    }
}
