//! The advisor on the page: a one-line recommendation, ranked remedies that apply on click, combinations,
//! solver limits, a rough speed, and the setup exported as runnable configs.

use super::i18n::{caveat, change, Lang};
use crate::advice::remedies::Remedy;
use crate::advice::{export, Advice, Fit};
use crate::bytes::fmt_gib;
use crate::catalog;
use crate::form::Form;
use crate::model::Mode;
use yew::prelude::*;

/// Props of [`AdvicePanel`].
#[derive(Properties, PartialEq)]
pub struct AdvicePanelProps {
    pub form: Form,
    pub advice: std::rc::Rc<Advice>,
    /// Replaces the form with a remedy's.
    pub on_apply: Callback<Form>,
}

/// "~25% slower" / "~10% faster" / "" for a relative slowdown.
fn time_text(lang: Lang, slowdown: Option<f64>) -> String {
    let t = lang.t();
    match slowdown {
        Some(s) if s >= 0.005 => format!("~{:.0}% {}", s * 100.0, t.slower),
        Some(s) if s <= -0.005 => format!("~{:.0}% {}", -s * 100.0, t.faster),
        _ => String::new(),
    }
}

/// "−12.0 GiB" saved, "needs +1.0 GiB" more, or, for a change that moves the job to other hardware without
/// changing its memory, what it needs there.
fn saved_text(lang: Lang, r: &Remedy) -> String {
    let t = lang.t();
    let saved = r.saved;
    if saved.abs() < 0.005 * crate::bytes::GIB {
        format!("{} {}", t.needs_total, fmt_gib(r.need))
    } else if saved >= 0.0 {
        format!("−{}", fmt_gib(saved))
    } else {
        format!("{} +{}", t.costs_memory, fmt_gib(-saved))
    }
}

/// The one-line recommendation: which limit, by how much, and the best change with its price.
pub fn recommendation(lang: Lang, advice: &Advice) -> String {
    let t = lang.t();
    let v = &advice.verdict;
    let mut line = match v.fit {
        Fit::Fits | Fit::Tight => t.rec_fits.replace("{gap}", &fmt_gib(-v.vram_gap())),
        Fit::VramShort => t.rec_vram.replace("{gap}", &fmt_gib(v.vram_gap())),
        Fit::RamShort => t.rec_ram.replace("{gap}", &fmt_gib(v.ram_gap())),
        Fit::BothShort => t
            .rec_both
            .replace("{gap}", &fmt_gib(v.vram_gap()))
            .replace("{ram}", &fmt_gib(v.ram_gap())),
    };
    if matches!(v.fit, Fit::VramShort | Fit::BothShort) {
        if let Some(r) = advice.best() {
            let names: Vec<String> = r
                .changes
                .iter()
                .map(|c| change(lang, *c, &r.form))
                .collect();
            let mut details = saved_text(lang, r);
            let time = time_text(lang, r.slowdown);
            if !time.is_empty() {
                details.push_str(t.list_sep);
                details.push_str(&time);
            }
            line.push(' ');
            line.push_str(
                &t.rec_try
                    .replace("{change}", &names.join(" + "))
                    .replace("{details}", &details),
            );
        }
    }
    line
}

fn remedy_row(props: &AdvicePanelProps, lang: Lang, r: &Remedy, i: usize) -> Html {
    let t = lang.t();
    let names: Vec<String> = r
        .changes
        .iter()
        .map(|c| change(lang, *c, &r.form))
        .collect();
    let cav: Vec<&str> = r.caveats.iter().map(|c| caveat(lang, *c)).collect();
    let onclick = {
        let (form, cb) = (r.form.clone(), props.on_apply.clone());
        Callback::from(move |_: MouseEvent| cb.emit(form.clone()))
    };
    html! {
        <li class={classes!("remedy", r.fits.then_some("fits"))}>
            <button type="button" class="apply" id={format!("remedy-{i}")} {onclick} title={t.apply}>
                <span class="what">{ names.join(" + ") }</span>
                <span class="saved">{ saved_text(lang, r) }</span>
                if r.fits { <span class="badge">{ t.fits_after }</span> }
                <span class="time">{ time_text(lang, r.slowdown) }</span>
                <span class="caveat">{ cav.join("; ") }</span>
            </button>
        </li>
    }
}

/// The advisor panel.
#[component]
pub fn AdvicePanel(props: &AdvicePanelProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let a = &props.advice;
    let training = props.form.mode != Mode::Inference;
    let s = &a.solutions;
    let none = || t.none_fits.to_string();
    let gpu_name = |id: &String| catalog::gpu(id).map_or_else(|| id.clone(), |g| g.name.clone());
    let ds = export::deepspeed_json(&props.form);

    html! {
        <section class="advice" id="advice">
            <h3>{ t.group_advice }</h3>
            <p class="recommendation" id="recommendation">{ recommendation(lang, a) }</p>
            if !a.hardware.is_empty() || !a.estimate.warnings.is_empty() {
                <ul class="warnings" id="warnings">
                    { for a.hardware.iter().map(|w| html! { <li>{ super::i18n::hardware_warning(lang, *w) }</li> }) }
                    { for a.estimate.warnings.iter().map(|w| html! { <li>{ super::i18n::model_warning(lang, *w) }</li> }) }
                </ul>
            }
            if let Some(sp) = a.speed {
                <p class="hint" id="speed">{
                    if training {
                        format!("{}: {:.1} {} · {:.0} {}", t.speed, sp.seconds, t.per_step, sp.tokens_per_s, t.tokens_per_s)
                    } else {
                        format!("{}: {:.1} ms/token · {:.0} {}", t.speed, sp.seconds * 1e3, sp.tokens_per_s, t.tokens_per_s)
                    }
                }</p>
            }
            if !a.combinations.is_empty() {
                <h4>{ t.combos_title }</h4>
                <ul class="remedies">{ for a.combinations.iter().enumerate().map(|(i, r)| remedy_row(props, lang, r, 100 + i)) }</ul>
            }
            <h4>{ t.remedies_title }</h4>
            <ul class="remedies" id="remedies">{ for a.remedies.iter().take(12).enumerate().map(|(i, r)| remedy_row(props, lang, r, i)) }</ul>
            <h4>{ t.solvers_title }</h4>
            <dl class="solvers">
                <dt>{ if training { t.max_batch } else { t.max_concurrent } }</dt>
                <dd id="max-batch">{ s.max_batch.map_or_else(none, |b| format!("{b} {}", t.sequences)) }</dd>
                <dt>{ if training { t.max_seq } else { t.max_prompt } }</dt>
                <dd id="solver-max-seq">{ s.max_seq.map_or_else(none, |v| format!("{v} {}", t.tokens)) }</dd>
                <dt>{ t.min_gpus }</dt>
                <dd>{ s.min_gpus.map_or_else(none, |(n, p)| format!("{n} × ({})", crate::share::enum_id(&p))) }</dd>
                <dt>{ t.smallest_gpu }</dt>
                <dd>{ s.smallest_gpu.as_ref().map_or_else(none, gpu_name) }</dd>
                <dt>{ t.ram_needed }</dt>
                <dd>{ fmt_gib(s.ram_needed) }</dd>
            </dl>
            if training {
                <details class="exports">
                    <summary>{ t.exports_title }</summary>
                    <h5>{ "LLaMA-Factory (YAML)" }</h5>
                    <pre id="export-llamafactory">{ export::llama_factory_yaml(&props.form) }</pre>
                    <h5>{ "TRL" }</h5>
                    <pre id="export-trl">{ export::trl_command(&props.form) }</pre>
                    if let Some(ds) = ds {
                        <h5>{ "DeepSpeed (ds_config.json)" }</h5>
                        <pre id="export-deepspeed">{ ds }</pre>
                    }
                </details>
            }
        </section>
    }
}
