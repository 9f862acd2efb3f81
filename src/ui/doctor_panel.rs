//! The OOM doctor on the page: paste a log, get what ran out, the figures it states, and what to do.

use super::i18n::{doctor_hint, doctor_kind, doctor_numbers, Lang};
use crate::doctor::{diagnose, Kind};
use yew::prelude::*;

/// Props of [`DoctorPanel`].
#[derive(Properties, PartialEq)]
pub struct DoctorPanelProps {
    /// Usable memory of the GPU chosen in the form, GiB, to compare with the reported capacity.
    pub gpu_usable_gib: f64,
    /// What the form's setup needs per GPU, GiB (the estimate beside the doctor).
    #[prop_or_default]
    pub vram_need_gib: f64,
    /// Host RAM the form's setup needs, and the RAM the form says the machine has, GiB.
    #[prop_or_default]
    pub ram_need_gib: f64,
    #[prop_or_default]
    pub ram_have_gib: f64,
    /// The page's setup, for the serving planner's figures under a vLLM KV-cache diagnosis.
    #[prop_or_default]
    pub form: Option<crate::form::Form>,
}

/// Paste box and diagnosis.
#[component]
pub fn DoctorPanel(props: &DoctorPanelProps) -> Html {
    let text = use_state(String::new);
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let oninput = {
        let text = text.clone();
        Callback::from(move |e: InputEvent| {
            let area: web_sys::HtmlTextAreaElement = e.target_unchecked_into();
            text.set(area.value());
        })
    };
    let diagnosis = (!text.trim().is_empty()).then(|| diagnose(&text, Some(props.gpu_usable_gib)));
    html! {
        <details class="doctor" id="doctor">
            <summary>{ t.doctor_title }</summary>
            <label for="doctor-text" class="hint">{ t.doctor_help }</label>
            <textarea id="doctor-text" rows="5" spellcheck="false" placeholder="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate …" {oninput} />
            if let Some(d) = diagnosis {
                <div class={classes!("diagnosis", match d.kind { Kind::Gpu | Kind::Host | Kind::Disk => "short", _ => "other" })} id="diagnosis">
                    <strong id="diagnosis-kind">{ doctor_kind(lang, d.kind) }</strong>
                    if !d.evidence.is_empty() {
                        <p class="evidence"><span class="hint">{ t.doctor_evidence }{ ": " }</span><code>{ &d.evidence }</code></p>
                    }
                    <dl class="solvers">
                        { for doctor_numbers(lang).iter().zip([
                            d.numbers.tried_gib, d.numbers.total_gib, d.numbers.free_gib, d.numbers.allocated_gib,
                            d.numbers.reserved_gib, d.numbers.reserved_unallocated_gib, d.numbers.process_in_use_gib,
                        ]).filter_map(|(label, v)| v.map(|v| html! {
                            <><dt>{ *label }</dt><dd>{ format!("{v:.2} GiB") }</dd></>
                        })) }
                    </dl>
                    <ul class="hints">{ for d.hints.iter().map(|h| html! { <li>{ doctor_hint(lang, *h) }</li> }) }</ul>
                    // The figures of the setup on the page, for the memory that ran out.
                    { match d.kind {
                        Kind::Gpu if props.vram_need_gib > 0.0 => html! {
                            <p class="hint" id="diagnosis-form">{ t.doctor_form_gpu
                                .replace("{need}", &format!("{:.1}", props.vram_need_gib))
                                .replace("{have}", &format!("{:.1}", props.gpu_usable_gib)) }</p>
                        },
                        Kind::Host if props.ram_need_gib > 0.0 => html! {
                            <p class="hint" id="diagnosis-form">{ t.doctor_form_host
                                .replace("{need}", &format!("{:.1}", props.ram_need_gib))
                                .replace("{have}", &format!("{:.0}", props.ram_have_gib)) }</p>
                        },
                        _ => html! {},
                    } }
                    // vLLM's KV-cache errors: the serving planner's figures for the setup on the page.
                    if d.hints.contains(&crate::doctor::Hint::VllmKvCache) {
                        if let Some(f) = &props.form {
                            { match crate::model::serve_plan(&f.arch(), &f.serve_request()) {
                                Ok(p) => html! {
                                    <p class="hint" id="diagnosis-serve">{ t.doctor_form_serve
                                        .replace("{kv}", &format!("{:.2}", p.kv_cache_gib))
                                        .replace("{tokens}", &p.kv_tokens.to_string())
                                        .replace("{len}", &p.max_model_len.to_string())
                                        .replace("{longest}", &p.max_model_len_that_fits.to_string()) }</p>
                                },
                                Err(_) => html! {},
                            } }
                        }
                    }
                </div>
            }
        </details>
    }
}
