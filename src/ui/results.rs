//! The answer: verdict banner, stacked-bar chart of the per-GPU breakdown, the same numbers as a table,
//! the three measured totals, and host RAM.

use super::i18n::{component, host_component, Lang};
use crate::advice::{Fit, Verdict};
use crate::bytes::fmt_gib;
use crate::model::{Component, Estimate};
use yew::prelude::*;

/// Okabe–Ito palette (distinguishable with the common colour-vision deficiencies), one colour a component.
pub fn colour(c: Component) -> &'static str {
    match c {
        Component::WeightsQuantized => "#0072B2",
        Component::Weights => "#56B4E9",
        Component::Adapters => "#009E73",
        Component::MasterWeights => "#CC79A7",
        Component::Gradients => "#E69F00",
        Component::OptimizerStates => "#D55E00",
        Component::Activations => "#F0E442",
        Component::AttentionScores => "#B8860B",
        Component::Logits => "#8C564B",
        Component::KvCache => "#6A3D9A",
        Component::RecurrentState => "#9E7BB5",
        Component::Temporary => "#999999",
        Component::AllocatorReserve => "#BBBBBB",
        Component::AllocatorCache => "#DDDDDD",
        Component::CudaContext => "#555555",
        Component::ReferenceModel => "#2A5C8A",
        Component::ServingEngine => "#7F3C8D",
        Component::ValueModel => "#1B7837",
        Component::RewardModel => "#B2182B",
        Component::VisionTower => "#35978F",
    }
}

/// Props of [`Results`].
#[derive(Properties, PartialEq)]
pub struct ResultsProps {
    pub estimate: Estimate,
    pub verdict: Verdict,
    pub gpu_name: AttrValue,
}

/// Verdict, chart, table and totals.
#[component]
pub fn Results(props: &ResultsProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let e = &props.estimate;
    let v = &props.verdict;
    let (class, title) = match v.fit {
        Fit::Fits => ("fits", t.fits),
        Fit::Tight => ("tight", t.tight),
        Fit::VramShort => ("short", t.vram_short),
        Fit::RamShort => ("short", t.ram_short),
        Fit::BothShort => ("short", t.both_short),
    };
    let detail = match v.fit {
        Fit::Fits | Fit::Tight => format!(
            "{} {} / {} {} {} · {}: {}",
            fmt_gib(v.vram_need),
            t.per_gpu,
            fmt_gib(v.vram_have),
            t.usable,
            props.gpu_name,
            t.headroom,
            fmt_gib(-v.vram_gap())
        ),
        Fit::VramShort | Fit::BothShort => format!(
            "{} {} / {} {} {} · {} {}",
            fmt_gib(v.vram_need),
            t.per_gpu,
            fmt_gib(v.vram_have),
            t.usable,
            props.gpu_name,
            t.short_by,
            fmt_gib(v.vram_gap())
        ),
        Fit::RamShort => format!(
            "{}: {} / {} · {} {}",
            t.host_ram,
            fmt_gib(v.ram_need),
            fmt_gib(v.ram_have),
            t.short_by,
            fmt_gib(v.ram_gap())
        ),
    };
    let dominant = v.dominant.map(|(c, share)| {
        format!(
            "{}: {} ({:.0}%)",
            t.dominant,
            component(lang, c),
            share * 100.0
        )
    });

    html! {
        <section class="results" aria-live="polite">
            <div class={classes!("verdict", class)} id="verdict">
                <strong>{ title }</strong>
                <span>{ detail }</span>
                <span class="band" id="verdict-band">{ t.likely_range.replace("{low}", &fmt_gib(v.vram_band.low)).replace("{high}", &fmt_gib(v.vram_band.high)) }</span>
                if let Some(d) = dominant { <span class="dominant">{ d }</span> }
            </div>
            { chart(lang, e, v) }
            { table(lang, e) }
            <div class="totals">
                <p>{ format!("{}: {:.2} B · {} {:.3} B", t.params, (e.params.total + e.vision_params) / 1e9, t.trainable, e.trainable_params / 1e9) }</p>
                <dl>
                    <dt>{ t.peak_tensors }</dt><dd>{ fmt_gib(e.peak_allocated) }</dd>
                    <dt>{ t.peak_reserved }</dt><dd>{ fmt_gib(e.peak_reserved) }</dd>
                    <dt>{ t.device_total }</dt><dd>{ fmt_gib(e.device_total) }</dd>
                </dl>
                <p class="hint">{ t.totals_explain }</p>
            </div>
            <h3>{ t.host_ram }</h3>
            <table class="breakdown host">
                <tbody>
                    { for e.host.iter().map(|p| html! {
                        <tr><td>{ host_component(lang, p.component) }</td><td class="num">{ fmt_gib(p.bytes) }</td></tr>
                    }) }
                    <tr class="sum"><td>{ t.total }</td><td class="num">{ format!("{} / {}", fmt_gib(v.ram_need), fmt_gib(v.ram_have)) }</td></tr>
                </tbody>
            </table>
        </section>
    }
}

/// A stacked horizontal bar of the per-GPU peak against the GPU's usable memory, drawn as SVG.
fn chart(lang: Lang, e: &Estimate, v: &Verdict) -> Html {
    const W: f64 = 600.0;
    let scale = v.vram_need.max(v.vram_have).max(1.0) * 1.05;
    let mut x = 0.0;
    let bars: Vec<Html> = e
        .gpu
        .iter()
        .map(|p| {
            let w = p.bytes / scale * W;
            let rect = html! {
                <rect x={format!("{x:.2}")} y="8" width={format!("{:.2}", w.max(0.0))} height="36" fill={colour(p.component)}>
                    <title>{ format!("{}: {}", component(lang, p.component), fmt_gib(p.bytes)) }</title>
                </rect>
            };
            x += w;
            rect
        })
        .collect();
    let limit = v.vram_have / scale * W;
    let label = format!("{} {}", fmt_gib(v.vram_have), lang.t().usable);
    html! {
        <figure class="chart">
            <svg viewBox="0 0 600 70" role="img" aria-label={format!("{}: {}", lang.t().per_gpu, fmt_gib(v.vram_need))}>
                { for bars }
                <line x1={format!("{limit:.2}")} x2={format!("{limit:.2}")} y1="2" y2="50" class="limit" />
                <text x={format!("{:.2}", limit.min(W - 4.0))} y="64" text-anchor="end" class="limit-label">{ label }</text>
            </svg>
            <figcaption class="legend">
                { for e.gpu.iter().map(|p| html! {
                    <span><i style={format!("background:{}", colour(p.component))}></i>{ component(lang, p.component) }</span>
                }) }
            </figcaption>
        </figure>
    }
}

fn table(lang: Lang, e: &Estimate) -> Html {
    let t = lang.t();
    html! {
        <table class="breakdown" id="breakdown">
            <thead><tr><th>{ t.component }</th><th class="num">{ format!("{} ({})", t.memory, t.per_gpu) }</th></tr></thead>
            <tbody>
                { for e.gpu.iter().map(|p| html! {
                    <tr>
                        <td><i class="swatch" style={format!("background:{}", colour(p.component))}></i>{ component(lang, p.component) }</td>
                        <td class="num">{ fmt_gib(p.bytes) }</td>
                    </tr>
                }) }
                <tr class="sum"><td>{ t.total }</td><td class="num">{ fmt_gib(e.device_total) }</td></tr>
                if e.gpu_bytes(Component::AllocatorCache) > 0.0 {
                    <tr class="need" title={t.fit_need_tip}><td>{ t.fit_need }</td><td class="num">{ fmt_gib(e.fit_need) }</td></tr>
                }
            </tbody>
        </table>
    }
}
