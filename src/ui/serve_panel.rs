//! The serving planner on the page (mode inference): what vLLM (or SGLang, or `generate`) would do with
//! this model on this GPU at startup — the KV-cache budget, the tokens it holds, the concurrency at the
//! requested context and the longest context one request can have (`crate::model::serve`).

use super::i18n::Lang;
use crate::form::Form;
use crate::model::{fewest_gpus, max_model_len_for_users, serve_plan, Architecture, ServeRequest};
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
    let users = props.form.concurrent.max(1);
    let solved = use_memo(props.form.clone(), move |f| {
        let (arch, req) = (f.arch(), f.serve_request());
        let context = req.max_model_len.unwrap_or(1);
        let longest = max_model_len_for_users(&arch, &req, users).ok().flatten();
        let gpus = fewest_gpus(&arch, &req, context, users)
            .ok()
            .flatten()
            .map(|p| p.tensor_parallel);
        (longest, gpus, concurrency_curve(&arch, &req))
    });
    let (longest, gpus, points) = &*solved;
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
                            <dt>{ t.serve_users_context.replace("{users}", &users.to_string()) }</dt>
                            <dd id="serve-users-context">{ longest.map_or_else(|| "—".to_string(), |l| format!("{l} {}", t.tokens)) }</dd>
                            <dt>{ t.serve_fewest_gpus.replace("{users}", &users.to_string()).replace("{len}", &p.max_model_len.to_string()) }</dt>
                            <dd id="serve-fewest-gpus">{ gpus.map_or_else(|| "—".to_string(), |n| t.serve_tp.replace("{n}", &n.to_string())) }</dd>
                        </dl>
                        { concurrency_svg(t, points, users, *longest) }
                        { for p.warnings.iter().map(|w| html! { <p class="hint">{ w }</p> }) }
                    </>
                },
            } }
        </section>
    }
}

/// Requests of a given context the pool holds at once, over contexts from 1K tokens to the model's limit:
/// `(context, concurrency)` pairs (vLLM's "Maximum concurrency" for each `max_model_len`).
fn concurrency_curve(arch: &Architecture, req: &ServeRequest) -> Vec<(u32, f64)> {
    let top = req.max_position_embeddings.unwrap_or(131_072).max(2048);
    let (a, b) = (1024f64.ln(), f64::from(top).ln());
    (0..24)
        .filter_map(|i| {
            let len = (a + (b - a) * f64::from(i) / 23.0).exp().round() as u32;
            let mut q = req.clone();
            q.max_model_len = Some(len);
            let p = serve_plan(arch, &q).ok()?;
            Some((len, p.max_concurrency.max(0.0)))
        })
        .collect()
}

/// Concurrency against context (both logarithmic), with the concurrent-users line and the longest context
/// that serves them.
fn concurrency_svg(
    t: &crate::i18n::Text,
    points: &[(u32, f64)],
    users: u32,
    longest: Option<u32>,
) -> Html {
    const W: f64 = 600.0;
    const H: f64 = 180.0;
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return html! {};
    };
    let (x0, x1) = (f64::from(first.0).ln(), f64::from(last.0).ln());
    let ymax = points
        .iter()
        .map(|p| p.1)
        .fold(f64::from(users), f64::max)
        .max(1.0)
        * 1.5;
    let px = |x: f64| 48.0 + (x.ln() - x0) / (x1 - x0).max(1e-9) * (W - 56.0);
    let py = |y: f64| {
        (H - 24.0) - (y.max(0.01).ln() - 0.01f64.ln()) / (ymax.ln() - 0.01f64.ln()) * (H - 32.0)
    };
    let d: String = points
        .iter()
        .enumerate()
        .map(|(i, (x, y))| {
            format!(
                "{}{:.1},{:.1} ",
                if i == 0 { "M" } else { "L" },
                px(f64::from(*x)),
                py(*y)
            )
        })
        .collect();
    let uy = py(f64::from(users));
    html! {
        <figure class="curve" id="serve-curve">
            <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label={t.serve_curve}>
                <path d={d} class="concurrency" />
                <line x1="48" x2={format!("{}", W - 8.0)} y1={format!("{uy:.1}")} y2={format!("{uy:.1}")} class="limit" />
                <text x={format!("{}", W - 10.0)} y={format!("{:.1}", uy - 4.0)} text-anchor="end" class="limit-label">{ t.serve_users_line.replace("{users}", &users.to_string()) }</text>
                if let Some(l) = longest {
                    <circle cx={format!("{:.1}", px(f64::from(l)))} cy={format!("{uy:.1}")} r="4" class="crossing" />
                }
                <text x="48" y={format!("{}", H - 6.0)} class="tick">{ format!("{}K", first.0 / 1024) }</text>
                <text x={format!("{}", W - 8.0)} y={format!("{}", H - 6.0)} text-anchor="end" class="tick">{ format!("{}K {}", last.0 / 1024, t.tokens) }</text>
            </svg>
            <figcaption class="hint">{ t.serve_curve }</figcaption>
        </figure>
    }
}
