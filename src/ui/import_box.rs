//! Paste, drop or pick a `config.json` / `adapter_config.json`; emits what was understood, or says why not.

use super::i18n::Lang;
use crate::catalog::import::{parse_any_text, ImportedFile};
use crate::web;
use yew::prelude::*;

/// Props of [`ImportBox`].
#[derive(Properties, PartialEq)]
pub struct ImportBoxProps {
    pub lang: Lang,
    /// Called with a successfully parsed file; the form is only changed through this.
    pub on_import: Callback<ImportedFile>,
}

/// The outcome shown under the box.
#[derive(Clone, PartialEq)]
enum Status {
    Idle,
    Done(String),
    Failed(String),
}

/// Import area: a text box for pasting, a file picker and a drop zone, all feeding one parser.
#[component]
pub fn ImportBox(props: &ImportBoxProps) -> Html {
    let status = use_state(|| Status::Idle);
    let dragging = use_state(|| false);
    let t = props.lang.t();

    // One handler for every source of text.
    let handle = {
        let status = status.clone();
        let on_import = props.on_import.clone();
        let lang = props.lang;
        Callback::from(move |text: Result<String, String>| {
            let t = lang.t();
            let text = match text {
                Ok(text) if text.trim().is_empty() => {
                    status.set(Status::Idle);
                    return;
                }
                Ok(text) => text,
                Err(e) => {
                    status.set(Status::Failed(t.import_error.replace("{error}", &e)));
                    return;
                }
            };
            match parse_any_text(&text) {
                Ok(file) => {
                    status.set(Status::Done(describe(lang, &file)));
                    on_import.emit(file);
                }
                Err(e) => status.set(Status::Failed(
                    t.import_error.replace("{error}", &e.to_string()),
                )),
            }
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
            { match &*status {
                Status::Idle => html! {},
                Status::Done(msg) => html! { <p class="import-ok" id="import-status" role="status">{ msg }</p> },
                Status::Failed(msg) => html! { <p class="error" id="import-status" role="alert">{ msg }</p> },
            } }
        </details>
    }
}

/// One sentence on what an import set.
fn describe(lang: Lang, file: &ImportedFile) -> String {
    let t = lang.t();
    match file {
        ImportedFile::Model(m) => t
            .imported_model
            .replace("{name}", m.model_type.as_deref().unwrap_or("?"))
            .replace("{params}", &format!("{:.2}", m.arch.params().total / 1e9)),
        ImportedFile::Adapter(a) => {
            let targets: Vec<String> = a.targets.iter().map(crate::share::enum_id).collect();
            let mut msg = t
                .imported_adapter
                .replace("{rank}", &a.rank.to_string())
                .replace("{targets}", &targets.join(", "));
            if !a.unknown_targets.is_empty() {
                msg.push(' ');
                msg.push_str(
                    &t.ignored_targets
                        .replace("{names}", &a.unknown_targets.join(", ")),
                );
            }
            msg
        }
    }
}
