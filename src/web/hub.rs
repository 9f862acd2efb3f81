//! The page's Hub loads: [`crate::hub::Loader`] driven by the browser's `fetch` (every request of a round at
//! once, one `AbortController` ending the whole load after its timeout, no credentials sent), and a copy of
//! each model kept in local storage so a shared link still opens offline. Natively (SSR, tests) nothing is
//! fetched and nothing is kept.

use crate::edit::Edit;
use crate::hub::{self, HubError, HubId, HubModel};
use std::rc::Rc;

/// Where the page fetches from, and for how long. Production uses [`Default`]; the browser tests point it
/// at their local fixture server (`AppProps::hub_base`).
#[derive(Clone, Debug, PartialEq)]
pub struct HubSource {
    pub base: String,
    pub timeout_ms: u32,
}

impl Default for HubSource {
    fn default() -> Self {
        HubSource {
            base: hub::DEFAULT_BASE.into(),
            timeout_ms: hub::TIMEOUT_MS,
        }
    }
}

/// Local-storage key of one model's copy.
fn key(id: &str) -> String {
    format!("vramfit.hub.{id}")
}

/// Local-storage key of the ids kept, most recent first.
const IDS_KEY: &str = "vramfit.hub.ids";
/// Models kept at most (a copy is a config.json and a few numbers: a few KiB).
const KEEP: usize = 16;

/// This browser's copy of a model, if it has a readable one.
pub fn cached(id: &str) -> Option<HubModel> {
    hub::cache_decode(&super::imp::load(&key(id))?, id)
}

/// Keeps a copy of `model`, dropping the least recently loaded beyond [`KEEP`].
pub fn remember(model: &HubModel) {
    let mut ids: Vec<String> = super::imp::load(IDS_KEY)
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    ids.retain(|i| *i != model.id);
    ids.insert(0, model.id.clone());
    for old in ids.drain(KEEP.min(ids.len())..) {
        super::imp::remove(&key(&old));
    }
    super::imp::save(&key(&model.id), &hub::cache_encode(model));
    super::imp::save(IDS_KEY, &serde_json::to_string(&ids).unwrap_or_default());
}

/// Drops this browser's copy of a model.
pub fn forget(id: &str) {
    super::imp::remove(&key(id));
}

/// Loads `id` for the page and says what happened as the edit the reducer applies. With `prefer_cache` (a
/// link being opened) a saved copy is used without asking the Hub; otherwise the Hub is asked, and a saved
/// copy stands in only when the Hub cannot be reached. A model whose weights failed for a passing reason
/// (timeout, network) is not saved.
pub async fn resolve(source: &HubSource, id: &str, prefer_cache: bool) -> Edit {
    let hub_id = match hub::parse_id(id) {
        Ok(i) => i,
        Err(error) => {
            return Edit::HubFailed {
                id: id.to_string(),
                error,
            }
        }
    };
    let id = hub_id.to_string();
    let from_cache = || {
        cached(&id).map(|m| Edit::HubLoaded {
            model: Rc::new(m),
            cached: true,
        })
    };
    if prefer_cache {
        if let Some(edit) = from_cache() {
            return edit;
        }
    }
    match load(source, &hub_id).await {
        Ok(model) => {
            if !matches!(&model.weights, Err(e) if e.is_transient()) {
                remember(&model);
            }
            Edit::HubLoaded {
                model: Rc::new(model),
                cached: false,
            }
        }
        Err(error) if error.is_transient() => from_cache().unwrap_or(Edit::HubFailed { id, error }),
        Err(error) => Edit::HubFailed { id, error },
    }
}

pub use imp::load;

#[cfg(target_arch = "wasm32")]
mod imp {
    use super::*;
    use crate::hub::{Loader, Request, Response, Version};
    use std::cell::Cell;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    /// Loads `id` from `source.base`, giving up after `source.timeout_ms` (a shape already read is kept,
    /// with the timeout as its weights' error).
    pub async fn load(source: &HubSource, id: &HubId) -> Result<HubModel, HubError> {
        let controller = web_sys::AbortController::new().ok();
        let timed_out = Rc::new(Cell::new(false));
        let _timer = {
            let (controller, timed_out) = (controller.clone(), timed_out.clone());
            gloo::timers::callback::Timeout::new(source.timeout_ms, move || {
                timed_out.set(true);
                if let Some(c) = controller {
                    c.abort();
                }
            })
        };
        let signal = controller.as_ref().map(|c| c.signal());
        let seconds = source.timeout_ms.div_ceil(1000);
        let mut loader = Loader::new(id.clone());
        loop {
            let round = loader.round();
            if round.is_empty() {
                return loader.finish();
            }
            let answers = fetch_round(source, id, &round, signal.as_ref()).await;
            if timed_out.get() {
                return loader.interrupt(HubError::Timeout { seconds });
            }
            loader.feed(answers)?;
        }
    }

    /// Starts every request of a round, then reads each answer.
    async fn fetch_round(
        source: &HubSource,
        id: &HubId,
        round: &[Request],
        signal: Option<&web_sys::AbortSignal>,
    ) -> Vec<Result<Response, HubError>> {
        let window = gloo::utils::window();
        let started = js_sys::Array::new();
        for req in round {
            let init = web_sys::RequestInit::new();
            init.set_method("GET");
            init.set_mode(web_sys::RequestMode::Cors);
            // No cookies or tokens: what a signed-out visitor may read.
            init.set_credentials(web_sys::RequestCredentials::Omit);
            init.set_signal(signal);
            if let (Some(range), Ok(headers)) = (req.range_header(), web_sys::Headers::new()) {
                let _ = headers.set("Range", &range);
                init.set_headers(&headers);
            }
            let url = hub::file_url(&source.base, id, hub::REVISION, &req.file);
            started.push(&window.fetch_with_str_and_init(&url, &init));
        }
        // `allSettled` never rejects: each entry says whether its fetch got an answer.
        let settled: js_sys::Array = JsFuture::from(js_sys::Promise::all_settled(&started))
            .await
            .map(JsCast::unchecked_into)
            .unwrap_or_default();
        let mut answers = Vec::with_capacity(round.len());
        for (i, req) in round.iter().enumerate() {
            let entry = settled.get(i as u32);
            let value = js_sys::Reflect::get(&entry, &"value".into()).ok();
            answers.push(
                match value.and_then(|v| v.dyn_into::<web_sys::Response>().ok()) {
                    Some(response) => read(response, req).await,
                    None => Err(HubError::Unreachable),
                },
            );
        }
        answers
    }

    /// Reads an answer's status, commit and body, refusing a body longer than the request allows without
    /// reading it (a server that ignores `Range` sends the whole file).
    async fn read(response: web_sys::Response, req: &Request) -> Result<Response, HubError> {
        let headers = response.headers();
        let header = |name: &str| headers.get(name).ok().flatten();
        let version = header("x-repo-commit")
            .map(Version::Commit)
            .or_else(|| header("etag").map(Version::Etag));
        let status = response.status();
        let drop_body = || {
            if let Some(body) = response.body() {
                let _ = body.cancel();
            }
        };
        if !(200..300).contains(&status) {
            drop_body();
            return Ok(Response {
                status,
                body: Vec::new(),
                version,
            });
        }
        let too_large = || HubError::TooLarge {
            file: req.file.clone(),
            limit: req.max_bytes,
        };
        let length = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
        let whole_file = req.range.is_some() && status == 200 && length.is_none();
        if whole_file || length.is_some_and(|n| n > req.max_bytes) {
            drop_body();
            return Err(too_large());
        }
        let buffer = match response.array_buffer() {
            Ok(p) => JsFuture::from(p).await.map_err(|_| HubError::Unreachable)?,
            Err(_) => return Err(HubError::Unreachable),
        };
        let body = js_sys::Uint8Array::new(&buffer).to_vec();
        if body.len() as u64 > req.max_bytes {
            return Err(too_large());
        }
        Ok(Response {
            status,
            body,
            version,
        })
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    use super::*;

    /// Nothing is fetched outside a browser (the CLI has `hub_client`).
    pub async fn load(_: &HubSource, _: &HubId) -> Result<HubModel, HubError> {
        Err(HubError::Unreachable)
    }
}
