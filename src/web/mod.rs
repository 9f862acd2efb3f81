//! Browser edges (URL, storage, clipboard, language). Each function has a native fallback, so the rest
//! of the crate never asks where it runs. Errors from the browser (private mode, blocked storage) are
//! swallowed: the page keeps working without the feature.

const STATE_KEY: &str = "vramfit.state";
const LANG_KEY: &str = "vramfit.lang";

#[cfg(target_arch = "wasm32")]
mod imp {
    use gloo::storage::{LocalStorage, Storage};

    pub fn query() -> String {
        gloo::utils::window()
            .location()
            .search()
            .unwrap_or_default()
    }

    pub fn replace_query(query: &str) {
        let window = gloo::utils::window();
        let location = window.location();
        let path = location.pathname().unwrap_or_default();
        let hash = location.hash().unwrap_or_default();
        let url = format!("{path}?{query}{hash}");
        if let Ok(history) = window.history() {
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url));
        }
    }

    pub fn href() -> String {
        gloo::utils::window().location().href().unwrap_or_default()
    }

    pub fn load(key: &str) -> Option<String> {
        LocalStorage::raw().get_item(key).ok().flatten()
    }

    pub fn save(key: &str, value: &str) {
        let _ = LocalStorage::raw().set_item(key, value);
    }

    pub fn browser_lang() -> String {
        gloo::utils::window()
            .navigator()
            .language()
            .unwrap_or_default()
    }

    pub fn set_document_lang(tag: &str) {
        if let Some(el) = gloo::utils::document().document_element() {
            let _ = el.set_attribute("lang", tag);
        }
    }

    pub fn copy_text(text: &str) {
        let clipboard = gloo::utils::window().navigator().clipboard();
        let _ = clipboard.write_text(text);
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    pub fn query() -> String {
        String::new()
    }
    pub fn replace_query(_: &str) {}
    pub fn href() -> String {
        String::new()
    }
    pub fn load(_: &str) -> Option<String> {
        None
    }
    pub fn save(_: &str, _: &str) {}
    pub fn browser_lang() -> String {
        String::new()
    }
    pub fn set_document_lang(_: &str) {}
    pub fn copy_text(_: &str) {}
}

pub use imp::{copy_text, href, replace_query, set_document_lang};

/// The state to start from: the link's query if it has one, else the last state kept in storage.
pub fn initial_query() -> String {
    let q = imp::query();
    if q.trim_start_matches('?').is_empty() {
        imp::load(STATE_KEY).unwrap_or_default()
    } else {
        q
    }
}

/// Keeps the current state in the URL (without a new history entry) and in storage.
pub fn remember_state(query: &str) {
    imp::replace_query(query);
    imp::save(STATE_KEY, query);
}

/// The remembered language, else the browser's.
pub fn initial_lang_tag() -> String {
    imp::load(LANG_KEY).unwrap_or_else(imp::browser_lang)
}

/// Remembers the chosen language.
pub fn remember_lang(tag: &str) {
    imp::save(LANG_KEY, tag);
    imp::set_document_lang(tag);
}

/// Mounts the app into `#app` (browser only).
#[cfg(target_arch = "wasm32")]
pub fn start() {
    let root = gloo::utils::document()
        .get_element_by_id("app")
        .expect("index.html has #app");
    yew::Renderer::<crate::ui::App>::with_root(root).render();
}
