//! Browser edges (URL, storage, clipboard, language). Each function has a native fallback, so the rest
//! of the crate never asks where it runs. Errors from the browser (private mode, blocked storage) are
//! swallowed: the page keeps working without the feature.

pub mod hub;

const STATE_KEY: &str = "vramfit.state";

/// What the browser's WebGPU adapter says about the GPU. It never includes memory size.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct WebGpuInfo {
    /// `GPUAdapterInfo.vendor`, e.g. "nvidia".
    pub vendor: String,
    /// `GPUAdapterInfo.architecture`, e.g. "lovelace".
    pub architecture: String,
    /// `GPUAdapterInfo.description` (often empty for privacy).
    pub description: String,
    /// `GPUSupportedLimits.maxBufferSize`, bytes: a browser limit, not the GPU's memory.
    pub max_buffer_size: f64,
}
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

    /// This page's address with another query string.
    pub fn link_for(query: &str) -> String {
        let location = gloo::utils::window().location();
        let origin = location.origin().unwrap_or_default();
        let path = location.pathname().unwrap_or_default();
        format!("{origin}{path}?{query}")
    }

    thread_local! {
        static PENDING: std::cell::RefCell<Option<gloo::timers::callback::Timeout>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Runs `f` after `ms` of quiet: a newer call replaces (and so cancels) the pending one.
    pub fn debounce(ms: u32, f: impl FnOnce() + 'static) {
        PENDING.with(|p| *p.borrow_mut() = Some(gloo::timers::callback::Timeout::new(ms, f)));
    }

    pub fn load(key: &str) -> Option<String> {
        LocalStorage::raw().get_item(key).ok().flatten()
    }

    pub fn save(key: &str, value: &str) {
        let _ = LocalStorage::raw().set_item(key, value);
    }

    pub fn remove(key: &str) {
        let _ = LocalStorage::raw().remove_item(key);
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

    /// Asks for a WebGPU adapter and reads its info; `None` without WebGPU or without an adapter.
    pub async fn webgpu_info() -> Option<super::WebGpuInfo> {
        use wasm_bindgen::JsCast;
        let navigator = gloo::utils::window().navigator();
        // `navigator.gpu` is undefined where WebGPU is off: check before touching the typed binding.
        let gpu = js_sys::Reflect::get(&navigator, &"gpu".into()).ok()?;
        if gpu.is_undefined() || gpu.is_null() {
            return None;
        }
        let gpu: web_sys::Gpu = gpu.unchecked_into();
        let adapter = wasm_bindgen_futures::JsFuture::from(gpu.request_adapter())
            .await
            .ok()?;
        if adapter.is_null() || adapter.is_undefined() {
            return None;
        }
        let adapter: web_sys::GpuAdapter = adapter.unchecked_into();
        let info = adapter.info();
        Some(super::WebGpuInfo {
            vendor: info.vendor(),
            architecture: info.architecture(),
            description: info.description(),
            max_buffer_size: adapter.limits().max_buffer_size(),
        })
    }

    /// Reads a picked or dropped file as text, then calls `done` (refuses files over `MAX_FILE_BYTES`).
    pub fn read_file_text(
        file: web_sys::File,
        done: impl FnOnce(Result<String, String>) + 'static,
    ) {
        if file.size() > super::MAX_FILE_BYTES {
            done(Err(format!(
                "{} is {:.1} MiB, too large for a config file",
                file.name(),
                file.size() / 1048576.0
            )));
            return;
        }
        wasm_bindgen_futures::spawn_local(async move {
            let text = wasm_bindgen_futures::JsFuture::from(file.text()).await;
            done(match text {
                Ok(v) => Ok(v.as_string().unwrap_or_default()),
                Err(_) => Err(format!("could not read {}", file.name())),
            });
        });
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    pub fn query() -> String {
        String::new()
    }
    pub fn replace_query(_: &str) {}
    pub fn link_for(query: &str) -> String {
        format!("?{query}")
    }
    pub fn debounce(_: u32, f: impl FnOnce() + 'static) {
        f()
    }
    pub fn load(_: &str) -> Option<String> {
        None
    }
    pub fn save(_: &str, _: &str) {}
    pub fn remove(_: &str) {}
    pub fn browser_lang() -> String {
        String::new()
    }
    pub fn set_document_lang(_: &str) {}
    pub fn copy_text(_: &str) {}
    pub fn read_file_text(_: web_sys::File, done: impl FnOnce(Result<String, String>) + 'static) {
        done(Err("files can only be read in a browser".into()));
    }
    pub async fn webgpu_info() -> Option<super::WebGpuInfo> {
        None
    }
}

pub use imp::{copy_text, link_for, read_file_text, replace_query, set_document_lang, webgpu_info};

/// Largest file the import box reads (a config.json is a few KiB; anything this big is not one).
pub const MAX_FILE_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

/// The state to start from: the link's query if it has one, else the last state kept in storage.
pub fn initial_query() -> String {
    let q = imp::query();
    if q.trim_start_matches('?').is_empty() {
        imp::load(STATE_KEY).unwrap_or_default()
    } else {
        q
    }
}

/// Keeps the current state in the URL (without a new history entry) and in storage, once typing pauses
/// for 300 ms: `history.replaceState` costs milliseconds and browsers throttle frequent calls.
pub fn remember_state(query: &str) {
    let query = query.to_string();
    imp::debounce(300, move || {
        imp::replace_query(&query);
        imp::save(STATE_KEY, &query);
    });
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

/// Puts `window.vramfit = { estimate(job), advise(form), serve(request), version }` on the page: `estimate` takes a job
/// object (every field optional, `model` may be a catalog id) and returns the estimate as a plain object;
/// `advise` takes the page's form fields (model, gpu, gpus, ram_gib, mode, micro_batch, …) and returns the
/// verdict, remedies and solver results. A bad object throws a JS `Error` naming the field. Browser only.
#[cfg(target_arch = "wasm32")]
pub fn install_js_api() {
    use serde::Serialize;
    use wasm_bindgen::{closure::Closure, JsValue};
    let throw = |msg: String| JsValue::from(js_sys::Error::new(&format!("vramfit: {msg}")));
    // Requests cross as JSON text: `JSON.stringify` throws on a circular object and on a stack overflow
    // (both become an `Error` here, never a trap), and `crate::api` caps the text's length and depth.
    let as_json = move |value: &JsValue| -> Result<String, JsValue> {
        if value.is_undefined() || value.is_null() {
            return Ok(String::new());
        }
        js_sys::JSON::stringify(value)
            .map(String::from)
            .map_err(|e| {
                let why = js_sys::Error::from(e).message();
                throw(format!("the argument cannot be read as JSON ({why})"))
            })
    };
    let estimate =
        Closure::<dyn Fn(JsValue) -> Result<JsValue, JsValue>>::new(move |job: JsValue| {
            if job.is_null() {
                return Err(throw("expected a job object, got null".into()));
            }
            let job = crate::api::parse_job_json(&as_json(&job)?).map_err(throw)?;
            crate::model::estimate(&job)
                .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
                .map_err(|e| throw(e.to_string()))
        });
    let advise =
        Closure::<dyn Fn(JsValue) -> Result<JsValue, JsValue>>::new(move |form: JsValue| {
            let form = crate::api::form_from_json(&as_json(&form)?).map_err(throw)?;
            let a = crate::advice::advise(&form);
            let out = serde_json::json!({
                "verdict": a.verdict, "speed": a.speed, "remedies": a.remedies,
                "combinations": a.combinations, "solutions": a.solutions,
                "hardware_warnings": a.hardware, "warnings": a.estimate.warnings,
            });
            out.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
                .map_err(|e| throw(e.to_string()))
        });
    // `serve` takes the `vramfit serve` request object (model or arch/config, gpu or gpu_gib, vLLM's
    // settings) and returns the plan.
    let serve = Closure::<dyn Fn(JsValue) -> Result<JsValue, JsValue>>::new(move |req: JsValue| {
        if req.is_null() || req.is_undefined() {
            return Err(throw("expected a serving request object".into()));
        }
        let plan = crate::api::serve_json(&as_json(&req)?).map_err(throw)?;
        plan.serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .map_err(|e| throw(e.to_string()))
    });
    let api = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&api, &"estimate".into(), estimate.as_ref());
    let _ = js_sys::Reflect::set(&api, &"serve".into(), serve.as_ref());
    let _ = js_sys::Reflect::set(&api, &"advise".into(), advise.as_ref());
    let _ = js_sys::Reflect::set(&api, &"version".into(), &env!("CARGO_PKG_VERSION").into());
    let _ = js_sys::Reflect::set(&gloo::utils::window(), &"vramfit".into(), &api);
    // The page lives as long as the window: the closure is never dropped.
    estimate.forget();
    advise.forget();
    serve.forget();
}

/// Mounts the app into `#app` and installs the JavaScript API (browser only).
#[cfg(target_arch = "wasm32")]
pub fn start() {
    install_js_api();
    let root = gloo::utils::document()
        .get_element_by_id("app")
        .expect("index.html has #app");
    yew::Renderer::<crate::ui::App>::with_root(root).render();
}
