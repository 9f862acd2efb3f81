//! Paste, drop or pick a `config.json` / `adapter_config.json`; emits what was understood, or says why not.

use super::i18n::Lang;
use crate::catalog::import::{parse_any_text, ImportError, ImportedFile};
use crate::doctor::import_setup;
use crate::form::Form;
use crate::web;
use yew::prelude::*;

/// Props of [`ImportBox`].
#[derive(Properties, PartialEq)]
pub struct ImportBoxProps {
    pub lang: Lang,
    /// The current form, which an import changes.
    pub form: Form,
    /// Called with the changed form after a successful import; a failed one changes nothing.
    pub on_import: Callback<Form>,
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
        let form = props.form.clone();
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
            // A model or adapter config first; otherwise a training setup (command line, YAML, DeepSpeed).
            let config = parse_any_text(&text);
            if let Ok(file) = config {
                status.set(Status::Done(describe(lang, &file)));
                let mut next = form.clone();
                super::inputs::apply_import(&mut next, file);
                on_import.emit(next);
                return;
            }
            match import_setup(&text, &form) {
                Ok(setup) => {
                    let mut msg = t
                        .setup_imported
                        .replace("{format}", setup.format)
                        .replace("{used}", &setup.used.join(", "));
                    if !setup.ignored.is_empty() {
                        msg.push(' ');
                        msg.push_str(&t.setup_ignored.replace("{keys}", &setup.ignored.join(", ")));
                    }
                    status.set(Status::Done(msg));
                    on_import.emit(setup.form);
                }
                Err(setup_err) => {
                    // Say what was wrong with the kind of text it most looks like.
                    let looks_like_model = text.contains("hidden_size")
                        || text.contains("n_embd")
                        || text.contains("num_hidden_layers");
                    let reason = match config {
                        Err(
                            e @ (ImportError::Missing(_)
                            | ImportError::Invalid { .. }
                            | ImportError::TooLarge(_)),
                        ) if looks_like_model => e.to_string(),
                        Err(ImportError::NotJson(e)) if text.trim_start().starts_with('{') => {
                            format!("not valid JSON: {e}")
                        }
                        _ => setup_err.to_string(),
                    };
                    status.set(Status::Failed(t.import_error.replace("{error}", &reason)));
                }
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
            let targets: Vec<String> = a.lora.targets.iter().map(crate::share::enum_id).collect();
            let mut msg = t
                .imported_adapter
                .replace("{rank}", &a.lora.rank.to_string())
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
