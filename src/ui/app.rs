//! The root component: holds the page's state in one reducer (`state.rs`), recomputes the estimate on every
//! change, writes the URL back.

use super::advice_panel::AdvicePanel;
use super::curve_panel::CurvePanel;
use super::doctor_panel::DoctorPanel;
use super::i18n::Lang;
use super::inputs::Inputs;
use super::results::Results;
use super::serve_panel::ServePanel;
use super::state::State;
use super::verify_panel::VerifyPanel;
use crate::advice::advise;
use crate::edit::Edit;
use crate::share::{self, Ignored};
use crate::web;
use yew::prelude::*;

/// Props of [`App`]; without them the app reads the URL, storage and browser language itself.
#[derive(Properties, PartialEq, Default)]
pub struct AppProps {
    /// Start from this query string instead of the page URL (tests, embedding).
    #[prop_or_default]
    pub query: Option<AttrValue>,
    /// Start in this language instead of the remembered/browser one.
    #[prop_or_default]
    pub lang: Option<Lang>,
    /// Fetch Hub models from here instead of https://huggingface.co (the browser tests' fixture server).
    #[prop_or_default]
    pub hub_base: Option<AttrValue>,
    /// Give up a Hub load after this long instead of 10 s (tests).
    #[prop_or_default]
    pub hub_timeout_ms: Option<u32>,
}

/// The whole calculator page.
#[component]
pub fn App(props: &AppProps) -> Html {
    let start = use_memo((), |_| {
        let q = props
            .query
            .as_ref()
            .map(|q| q.to_string())
            .unwrap_or_else(web::initial_query);
        share::decode(&q)
    });
    let state = use_reducer(|| State::new(start.0.clone()));
    let form = &state.form;
    let ignored = use_state(|| start.1.clone());
    let lang = use_state(|| {
        props
            .lang
            .unwrap_or_else(|| Lang::from_tag(&web::initial_lang_tag()))
    });
    let copied = use_state(|| false);
    let webgpu = use_state(|| None);
    {
        // Ask once, after the first render; the answer is only ever a hint.
        let webgpu = webgpu.clone();
        use_effect_with((), move |_| {
            yew::platform::spawn_local(async move { webgpu.set(web::webgpu_info().await) });
        });
    }

    // A Hub load: the status shows it at once; its result arrives as an edit, applied only if it is still
    // the load the page waits for.
    let on_hub = {
        let state = state.clone();
        let source = web::hub::HubSource {
            base: props
                .hub_base
                .as_ref()
                .map_or_else(|| crate::hub::DEFAULT_BASE.to_string(), |b| b.to_string()),
            timeout_ms: props.hub_timeout_ms.unwrap_or(crate::hub::TIMEOUT_MS),
        };
        Callback::from(move |(id, prefer_cache): (String, bool)| {
            state.dispatch(Edit::HubFetching(id.clone()));
            let (state, source) = (state.clone(), source.clone());
            yew::platform::spawn_local(async move {
                state.dispatch(web::hub::resolve(&source, &id, prefer_cache).await);
            });
        })
    };
    {
        // A link that names a Hub model: its saved copy, else the Hub (once, after the first render).
        let (on_hub, id) = (on_hub.clone(), start.0.hub.clone());
        use_effect_with((), move |_| {
            if !id.is_empty() {
                on_hub.emit((id, true));
            }
        });
    }

    use_effect_with(form.clone(), |f| web::remember_state(&share::encode(f)));
    use_effect_with(*lang, |l| web::remember_lang(l.tag()));

    let job = use_memo(form.clone(), |f| f.job());
    let advice = use_memo(form.clone(), advise);
    let t = lang.t();

    // Every change arrives as an intent; the reducer applies it to the current form.
    let on_edit = {
        let (state, copied) = (state.clone(), copied.clone());
        Callback::from(move |edit: Edit| {
            copied.set(false);
            state.dispatch(edit);
        })
    };
    let on_apply = on_edit.reform(|f| Edit::Replace(Box::new(f)));
    let on_lang = {
        let lang = lang.clone();
        Callback::from(move |_| {
            lang.set(match *lang {
                Lang::En => Lang::Zh,
                Lang::Zh => Lang::En,
            })
        })
    };
    let on_copy = {
        let (copied, link) = (copied.clone(), web::link_for(&share::encode(form)));
        Callback::from(move |_| {
            web::copy_text(&link);
            copied.set(true);
        })
    };

    html! {
        <div class="app">
            <header>
                <div>
                    <h1>{ "vramfit" }</h1>
                    <p class="tagline">{ t.tagline }</p>
                </div>
                <div class="actions">
                    <button id="copy-link" onclick={on_copy}>{ if *copied { t.copied } else { t.copy_link } }</button>
                    <button id="lang-switch" onclick={on_lang} lang={match *lang { Lang::En => "zh-CN", Lang::Zh => "en" }}>{ t.switch_to }</button>
                </div>
            </header>
            if !ignored.is_empty() {
                <div class="notice" id="link-notice" role="status">
                    { t.ignored_link }{ " " }
                    { ignored.iter().map(|i| match i {
                        Ignored::UnknownKey(k) => k.clone(),
                        Ignored::BadValue { key, value } => format!("{key}={value}"),
                    }).collect::<Vec<_>>().join(", ") }
                </div>
            }
            <ContextProvider<Lang> context={*lang}>
            <main>
                <Inputs form={form.clone()} import={state.import.clone()} hub={state.hub.clone()} on_hub={on_hub.clone()} effective_batch={job.effective_batch()} webgpu={(*webgpu).clone()} on_edit={on_edit.clone()} />
                <div class="output">
                    <Results estimate={advice.estimate.clone()} verdict={advice.verdict.clone()} gpu_name={AttrValue::from(form.gpu_name())} />
                    if form.mode == crate::model::Mode::Inference { <ServePanel form={form.clone()} /> }
                    <CurvePanel form={form.clone()} />
                    <VerifyPanel form={form.clone()} estimate={advice.estimate.clone()} />
                    <AdvicePanel form={form.clone()} advice={advice.clone()} {on_apply} />
                    <DoctorPanel form={Some(form.clone())} gpu_usable_gib={form.gpu_usable_gib()} vram_need_gib={advice.verdict.vram_need / 1073741824.0}
                        ram_need_gib={advice.verdict.ram_need / 1073741824.0} ram_have_gib={f64::from(form.ram_gib)} />
                </div>
            </main>
            </ContextProvider<Lang>>
        </div>
    }
}
