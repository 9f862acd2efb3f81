//! The serving planner on the page (mode inference): what vLLM (or SGLang, or `generate`) would do with
//! this model on this GPU at startup — the KV-cache budget, the tokens it holds, the concurrency at the
//! requested context and the longest context one request can have (`crate::model::serve`).

use super::i18n::Lang;
use crate::form::Form;
use crate::model::serve_plan;
use yew::prelude::*;

/// Props of [`ServePanel`].
#[derive(Properties, PartialEq)]
pub struct ServePanelProps {
    pub form: Form,
}

/// The plan, or why the engine would not start.
#[component]
pub fn ServePanel(props: &ServePanelProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let plan = use_memo(props.form.clone(), |f| {
        serve_plan(&f.arch(), &f.serve_request())
    });
    let gib = |v: f64| format!("{v:.2} GiB");
    html! {
        <section class="serve" id="serve">
            <h3>{ t.serve_title }</h3>
            { match &*plan {
                Err(e) => html! { <p class="error" id="serve-error" role="alert">{ e }</p> },
                Ok(p) => html! {
                    <>
                        <p class={classes!("serve-verdict", if p.fits { "fits" } else { "short" })} id="serve-verdict">
                            { if p.fits {
                                t.serve_fits
                                    .replace("{tokens}", &p.kv_tokens.to_string())
                                    .replace("{len}", &p.max_model_len.to_string())
                                    .replace("{conc}", &format!("{:.2}", p.max_concurrency))
                            } else {
                                p.reason.clone().unwrap_or_default()
                            } }
                        </p>
                        <dl class="solvers">
                            <dt>{ t.serve_budget }</dt><dd id="serve-budget">{ format!("{} × {:.0}% = {}", gib(p.gpu_gib), p.gpu_memory_utilization * 100.0, gib(p.requested_gib)) }</dd>
                            <dt>{ t.serve_weights }</dt><dd>{ gib(p.weights_gib) }</dd>
                            <dt>{ t.serve_activation }</dt><dd>{ gib(p.activation_peak_gib) }</dd>
                            <dt>{ t.serve_non_torch }</dt><dd>{ gib(p.non_torch_gib) }</dd>
                            <dt>{ t.serve_kv }</dt><dd id="serve-kv">{ format!("{} · {} {}", gib(p.kv_cache_gib), p.kv_tokens, t.tokens) }</dd>
                            <dt>{ t.serve_graphs }</dt><dd>{ gib(p.cuda_graph_gib) }</dd>
                            <dt>{ t.serve_longest }</dt><dd id="serve-longest">{ format!("{} {}", p.max_model_len_that_fits, t.tokens) }</dd>
                        </dl>
                        { for p.warnings.iter().map(|w| html! { <p class="hint">{ w }</p> }) }
                    </>
                },
            } }
        </section>
    }
}
