//! Paste, drop or pick a `config.json`, `adapter_config.json` or training setup; sends it as an intent and shows
//! what the page understood, or why not (`crate::imports::detect` decides which kind of text it is).

use super::i18n::Lang;
use crate::edit::{Edit, ImportOutcome};
use crate::imports::Understood;
use crate::web;
use yew::prelude::*;

/// Props of [`ImportBox`].
#[derive(Properties, PartialEq)]
pub struct ImportBoxProps {
    /// What the last import did, from the page's state.
    #[prop_or_default]
    pub outcome: Option<ImportOutcome>,
    /// Receives each pasted, dropped or picked text as an [`Edit::Import`]; the reducer applies it to the
    /// form as it is then, so a slow file read cannot bring back an old form.
    pub on_edit: Callback<Edit>,
}

/// Import area: a text box for pasting, a file picker and a drop zone, all feeding one parser.
#[component]
pub fn ImportBox(props: &ImportBoxProps) -> Html {
    // A file that could not be read at all (too large, unreadable) never reaches the parser.
    let file_error = use_state(|| None::<String>);
    let dragging = use_state(|| false);
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();

    let handle = {
        let (on_edit, file_error) = (props.on_edit.clone(), file_error.clone());
        Callback::from(move |text: Result<String, String>| match text {
            Ok(text) => {
                file_error.set(None);
                on_edit.emit(Edit::Import(text));
            }
            Err(e) => file_error.set(Some(e)),
        })
    };
    let oninput = {
        let handle = handle.clone();
        Callback::from(move |e: InputEvent| {
            let area: web_sys::HtmlTextAreaElement = e.target_unchecked_into();
            handle.emit(Ok(area.value()));
        })
    };
    let read_first = {
        let handle = handle.clone();
        move |files: Option<web_sys::FileList>| {
            if let Some(file) = files.and_then(|f| f.get(0)) {
                let handle = handle.clone();
                web::read_file_text(file, move |r| handle.emit(r));
            }
        }
    };
    let onchange = {
        let read_first = read_first.clone();
        Callback::from(move |e: Event| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            read_first(input.files());
        })
    };
    let ondragover = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(true);
        })
    };
    let ondragleave = {
        let dragging = dragging.clone();
        Callback::from(move |_: DragEvent| dragging.set(false))
    };
    let ondrop = {
        let dragging = dragging.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            dragging.set(false);
            read_first(e.data_transfer().and_then(|d| d.files()));
        })
    };

    html! {
        <details class="import">
            <summary>{ t.import_title }</summary>
            <div class={classes!("drop", (*dragging).then_some("dragging"))} {ondragover} {ondragleave} {ondrop}>
                <label for="import-text">{ t.import_help }</label>
                <textarea id="import-text" rows="4" spellcheck="false" placeholder="{ \"model_type\": \"llama\", … }" {oninput} />
                <label class="file">
                    { t.choose_file }
                    <input id="import-file" type="file" accept=".json,application/json" {onchange} />
                </label>
            </div>
            { match (&*file_error, &props.outcome) {
                (Some(e), _) => html! { <p class="error" id="import-status" role="alert">{ t.import_error.replace("{error}", e) }</p> },
                (None, Some(Ok(u))) => html! { <p class="import-ok" id="import-status" role="status">{ describe(lang, u) }</p> },
                (None, Some(Err(e))) => html! { <p class="error" id="import-status" role="alert">{ t.import_error.replace("{error}", e) }</p> },
                (None, None) => html! {},
            } }
        </details>
    }
}

/// One sentence on what an import set.
fn describe(lang: Lang, understood: &Understood) -> String {
    let t = lang.t();
    match understood {
        Understood::Model { model_type, params } => t
            .imported_model
            .replace("{name}", model_type.as_deref().unwrap_or("?"))
            .replace("{params}", &format!("{:.2}", params / 1e9)),
        Understood::Adapter {
            method,
            rank,
            targets,
            trainable_tokens,
            unknown_targets,
        } => {
            let targets: Vec<String> = targets.iter().map(crate::share::enum_id).collect();
            let mut msg = if *method == crate::model::peft::Method::TrainableTokens {
                t.imported_trainable_tokens
                    .replace("{tokens}", &trainable_tokens.to_string())
            } else {
                t.imported_adapter
                    .replace("{rank}", &rank.to_string())
                    .replace("{targets}", &targets.join(", "))
            };
            if !unknown_targets.is_empty() {
                msg.push(' ');
                msg.push_str(
                    &t.ignored_targets
                        .replace("{names}", &unknown_targets.join(", ")),
                );
            }
            msg
        }
        Understood::Setup {
            format,
            used,
            ignored,
        } => {
            let mut msg = t
                .setup_imported
                .replace("{format}", format)
                .replace("{used}", &used.join(", "));
            if !ignored.is_empty() {
                msg.push(' ');
                msg.push_str(&t.setup_ignored.replace("{keys}", &ignored.join(", ")));
            }
            msg
        }
    }
}
