//! Peak memory against sequence length (or micro-batch), stacked by component, with the band shaded, the
//! GPU's usable memory as a line, the current setting marked and the crossing labelled
//! (`crate::advice::curve`). SVG, scales to a phone's width; colours are the breakdown's.

use super::i18n::{component, Lang};
use super::results::colour;
use crate::advice::curve::{curve, Axis, Curve};
use crate::bytes::fmt_gib;
use crate::form::Form;
use crate::model::{Component, Mode};
use yew::prelude::*;

/// Props of [`CurvePanel`].
#[derive(Properties, PartialEq)]
pub struct CurvePanelProps {
    pub form: Form,
}

const W: f64 = 600.0;
const H: f64 = 220.0;
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 28.0;

/// The chart and its axis toggle.
#[component]
pub fn CurvePanel(props: &CurvePanelProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let axis = use_state(|| Axis::Tokens);
    let c = use_memo((props.form.clone(), *axis), |(f, a)| curve(f, *a));
    let pick = |a: Axis| {
        let axis = axis.clone();
        Callback::from(move |_: MouseEvent| axis.set(a))
    };
    let training = props.form.mode != Mode::Inference;
    let (tokens_label, batch_label) = if training {
        (t.curve_seq, t.curve_batch)
    } else {
        (t.curve_prompt, t.curve_concurrent)
    };
    let crossing = match (c.crossing, *axis) {
        (Some(x), Axis::Tokens) => t.curve_crossing_tokens.replace("{x}", &x.to_string()),
        (Some(x), Axis::Batch) => t.curve_crossing_batch.replace("{x}", &x.to_string()),
        (None, _) => t.curve_none.to_string(),
    };
    html! {
        <figure class="curve" id="curve">
            <div class="toggle" role="group">
                <button type="button" id="curve-tokens" aria-pressed={(*axis == Axis::Tokens).to_string()} onclick={pick(Axis::Tokens)}>{ tokens_label }</button>
                <button type="button" id="curve-batch" aria-pressed={(*axis == Axis::Batch).to_string()} onclick={pick(Axis::Batch)}>{ batch_label }</button>
            </div>
            { svg(lang, &c) }
            <figcaption class="hint" id="curve-crossing">{ crossing }</figcaption>
        </figure>
    }
}

/// Logarithmic x, linear y from 0 to a little above the highest of the band and the GPU line.
fn svg(lang: Lang, c: &Curve) -> Html {
    let t = lang.t();
    let (Some(first), Some(last)) = (c.points.first(), c.points.last()) else {
        return html! {};
    };
    let (x0, x1) = (
        f64::from(first.x.max(1)).ln(),
        f64::from(last.x.max(1)).ln(),
    );
    let span = (x1 - x0).max(1e-9);
    let top = c
        .points
        .iter()
        .map(|p| p.high)
        .fold(c.usable, f64::max)
        .max(1.0)
        * 1.08;
    let px = |x: u32| LEFT + (f64::from(x.max(1)).ln() - x0) / span * (W - LEFT - 8.0);
    let py = |b: f64| (H - BOTTOM) - b / top * (H - BOTTOM - 8.0);
    // Stacked areas: the components in breakdown order, each between the running sums.
    let mut order: Vec<Component> = Vec::new();
    for p in &c.points {
        for (comp, _) in &p.parts {
            if !order.contains(comp) {
                order.push(*comp);
            }
        }
    }
    let mut below = vec![0.0; c.points.len()];
    let mut areas = Vec::new();
    for comp in &order {
        let above: Vec<f64> = c
            .points
            .iter()
            .zip(&below)
            .map(|(p, b)| {
                b + p
                    .parts
                    .iter()
                    .filter(|(k, _)| k == comp)
                    .map(|(_, v)| v)
                    .sum::<f64>()
            })
            .collect();
        let mut d = String::new();
        for (i, p) in c.points.iter().enumerate() {
            d.push_str(&format!(
                "{}{:.1},{:.1} ",
                if i == 0 { "M" } else { "L" },
                px(p.x),
                py(above[i])
            ));
        }
        for (i, p) in c.points.iter().enumerate().rev() {
            d.push_str(&format!("L{:.1},{:.1} ", px(p.x), py(below[i])));
        }
        d.push('Z');
        areas.push(html! {
            <path d={d} fill={colour(*comp)} class="area"><title>{ component(lang, *comp) }</title></path>
        });
        below = above;
    }
    // The band: from the low to the high end of the likely need.
    let mut band = String::new();
    for (i, p) in c.points.iter().enumerate() {
        band.push_str(&format!(
            "{}{:.1},{:.1} ",
            if i == 0 { "M" } else { "L" },
            px(p.x),
            py(p.high)
        ));
    }
    for p in c.points.iter().rev() {
        band.push_str(&format!("L{:.1},{:.1} ", px(p.x), py(p.low)));
    }
    band.push('Z');
    let gpu_y = py(c.usable);
    let now_x = px(c.current);
    let ticks: Vec<u32> = {
        let mut v = Vec::new();
        let mut x = 1u32;
        while x <= last.x {
            if x >= first.x {
                v.push(x);
            }
            x = x.saturating_mul(4);
            if x == 0 {
                break;
            }
        }
        v
    };
    let label = |x: u32| {
        if x >= 1024 && x % 1024 == 0 {
            format!("{}K", x / 1024)
        } else {
            x.to_string()
        }
    };
    html! {
        <svg viewBox={format!("0 0 {W} {H}")} role="img" aria-label={t.curve_title}>
            { for areas }
            <path d={band} class="band" />
            <line x1={format!("{LEFT}")} x2={format!("{}", W - 8.0)} y1={format!("{gpu_y:.1}")} y2={format!("{gpu_y:.1}")} class="limit" />
            <text x={format!("{}", W - 10.0)} y={format!("{:.1}", gpu_y - 4.0)} text-anchor="end" class="limit-label">{ format!("{} {}", fmt_gib(c.usable), t.usable) }</text>
            <line x1={format!("{now_x:.1}")} x2={format!("{now_x:.1}")} y1="8" y2={format!("{}", H - BOTTOM)} class="now" />
            if let Some(x) = c.crossing {
                <circle cx={format!("{:.1}", px(x))} cy={format!("{gpu_y:.1}")} r="4" class="crossing" />
            }
            <line x1={format!("{LEFT}")} x2={format!("{}", W - 8.0)} y1={format!("{}", H - BOTTOM)} y2={format!("{}", H - BOTTOM)} class="axis" />
            { for ticks.iter().map(|x| html! {
                <text x={format!("{:.1}", px(*x))} y={format!("{}", H - 10.0)} text-anchor="middle" class="tick">{ label(*x) }</text>
            }) }
            <text x="4" y="14" class="tick">{ fmt_gib(top / 1.08) }</text>
            <text x="4" y={format!("{}", H - BOTTOM)} class="tick">{ "0 GiB" }</text>
        </svg>
    }
}
