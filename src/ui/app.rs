//! The root component: holds the form, recomputes the estimate on every change, writes the URL back.

use super::fields::{NumberField, SelectField};
use super::i18n::Lang;
use super::results::Results;
use crate::advice::verdict;
use crate::bytes::GIB;
use crate::catalog;
use crate::form::Form;
use crate::model::{estimate, Mode, Module, Stack};
use crate::share::{self, Ignored};
use crate::web;
use serde::Serialize;
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
}

fn id_of<T: Serialize>(v: &T) -> AttrValue {
    AttrValue::from(share::enum_id(v))
}

fn opts<T: Serialize + Copy>(items: &[(T, &'static str)]) -> Vec<(AttrValue, AttrValue)> {
    items
        .iter()
        .map(|(v, l)| (id_of(v), AttrValue::from(*l)))
        .collect()
}

/// A callback that applies `f` to a copy of the form and stores it (and resets "link copied").
fn updater<T: 'static>(
    form: &UseStateHandle<Form>,
    copied: &UseStateHandle<bool>,
    f: fn(&mut Form, T),
) -> Callback<T> {
    let (form, copied) = (form.clone(), copied.clone());
    Callback::from(move |value: T| {
        let mut next = (*form).clone();
        f(&mut next, value);
        copied.set(false);
        form.set(next);
    })
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
    let form = use_state(|| start.0.clone());
    let ignored = use_state(|| start.1.clone());
    let lang = use_state(|| {
        props
            .lang
            .unwrap_or_else(|| Lang::from_tag(&web::initial_lang_tag()))
    });
    let copied = use_state(|| false);

    {
        let f = (*form).clone();
        use_effect_with(f, |f| web::remember_state(&share::encode(f)));
    }
    {
        use_effect_with(*lang, |l| web::remember_lang(l.tag()));
    }

    let job = use_memo((*form).clone(), |f| f.job());
    let est = use_memo(job.clone(), |j| estimate(j));
    let gpu = catalog::gpu(&form.gpu);
    let vram_have = gpu.map_or(0.0, |g| g.usable_gib) * GIB;
    let v = verdict(&est, vram_have, f64::from(form.ram_gib) * GIB);
    let t = lang.t();
    let l = *lang;

    let update = |f: fn(&mut Form, String)| updater(&form, &copied, f);
    let update_num = |f: fn(&mut Form, u32)| updater(&form, &copied, f);

    let model_filter = use_state(String::new);
    let on_filter = {
        let model_filter = model_filter.clone();
        Callback::from(move |e: InputEvent| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            model_filter.set(input.value());
        })
    };
    let needle = catalog::normalize_name(&model_filter);
    let model_options: Vec<(AttrValue, AttrValue)> = catalog::models()
        .iter()
        .filter(|m| {
            needle.is_empty()
                || m.id == form.model
                || catalog::normalize_name(&format!("{} {} {}", m.name, m.hf_id, m.family))
                    .contains(&needle)
        })
        .map(|m| {
            (
                AttrValue::from(m.id.clone()),
                AttrValue::from(format!(
                    "{} · {:.1} B",
                    m.name,
                    m.arch().params().total / 1e9
                )),
            )
        })
        .collect();
    let gpu_options: Vec<(AttrValue, AttrValue)> = catalog::gpus()
        .iter()
        .map(|g| {
            (
                AttrValue::from(g.id.clone()),
                AttrValue::from(format!("{} · {} GB", g.name, g.memory_gb_as_sold)),
            )
        })
        .collect();
    let stack_options: Vec<(AttrValue, AttrValue)> = Stack::ALL
        .iter()
        .map(|s| (AttrValue::from(s.id()), AttrValue::from(s.name())))
        .collect();

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
        let copied = copied.clone();
        Callback::from(move |_| {
            web::copy_text(&web::href());
            copied.set(true);
        })
    };
    let on_target = {
        let form = form.clone();
        move |m: Module| {
            let form = form.clone();
            Callback::from(move |_| {
                let mut next = (*form).clone();
                if next.lora_targets.contains(&m) {
                    next.lora_targets.retain(|x| *x != m);
                } else {
                    next.lora_targets.push(m);
                }
                form.set(next);
            })
        }
    };

    let training = form.mode != Mode::Inference;
    let lora = matches!(form.mode, Mode::Lora | Mode::Qlora);
    let effective = job.effective_batch();

    html! {
        <div class="app">
            <header>
                <div>
                    <h1>{ "vramfit" }</h1>
                    <p class="tagline">{ t.tagline }</p>
                </div>
                <div class="actions">
                    <button id="copy-link" onclick={on_copy}>{ if *copied { t.copied } else { t.copy_link } }</button>
                    <button id="lang-switch" onclick={on_lang} lang={match l { Lang::En => "zh-CN", Lang::Zh => "en" }}>{ t.switch_to }</button>
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
            <main>
                <form class="inputs" onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())}>
                    <fieldset>
                        <legend>{ t.group_model }</legend>
                        <div class="field">
                            <label for="model-filter">{ t.filter }</label>
                            <input id="model-filter" type="search" placeholder={t.filter} value={(*model_filter).clone()} oninput={on_filter} />
                        </div>
                        <SelectField id="model" label={t.model} tip={t.model_tip} options={model_options}
                            value={AttrValue::from(form.model.clone())} on_change={update(|f, v| f.model = v)} />
                        <SelectField id="gpu" label={t.gpu} tip={t.gpu_tip} options={gpu_options}
                            value={AttrValue::from(form.gpu.clone())} on_change={update(|f, v| f.gpu = v)} />
                        <div class="row">
                            <NumberField id="gpus" label={t.gpus} unit="×" tip={t.gpus_tip} value={form.gpus} min={1} max={4096}
                                error_text={t.bad_number} on_change={update_num(|f, v| f.gpus = v)} />
                            <NumberField id="ram" label={t.ram} unit="GiB" tip={t.ram_tip} value={form.ram_gib} min={1} max={65536}
                                error_text={t.bad_number} on_change={update_num(|f, v| f.ram_gib = v)} />
                        </div>
                    </fieldset>
                    <fieldset>
                        <legend>{ t.group_method }</legend>
                        <SelectField id="mode" label={t.mode} tip={t.mode_tip} value={id_of(&form.mode)}
                            options={opts(&[(Mode::Full, "Full fine-tune"), (Mode::Lora, "LoRA"), (Mode::Qlora, "QLoRA (4-bit)"), (Mode::Freeze, "Freeze (last layers)"), (Mode::Inference, "Inference")])}
                            on_change={update(|f, v| if let Some(m) = share::enum_from(&v) { f.mode = m })} />
                        <SelectField id="stack" label={t.stack} tip={t.stack_tip} value={AttrValue::from(form.stack.id())}
                            options={stack_options} on_change={update(|f, v| if let Some(s) = Stack::from_id(&v) { f.set_stack(s) })} />
                        <SelectField id="weights" label={t.weights} tip={t.weights_tip} value={id_of(&form.weights)}
                            options={opts(&[
                                (crate::model::WeightFormat::Bf16, "bf16 (2 B)"), (crate::model::WeightFormat::Fp16, "fp16 (2 B)"),
                                (crate::model::WeightFormat::Fp32, "fp32 (4 B)"), (crate::model::WeightFormat::Fp8, "fp8 (1 B)"),
                                (crate::model::WeightFormat::Int8, "bitsandbytes int8 (1 B)"), (crate::model::WeightFormat::Nf4, "NF4 (0.56 B)"),
                                (crate::model::WeightFormat::Nf4Dq, "NF4 + double quant (0.52 B)"), (crate::model::WeightFormat::Fp4, "FP4 (0.56 B)"),
                                (crate::model::WeightFormat::GptqInt4, "GPTQ int4 (0.52 B)"), (crate::model::WeightFormat::GptqInt8, "GPTQ int8 (1.02 B)"),
                                (crate::model::WeightFormat::AwqInt4, "AWQ int4 (0.52 B)")])}
                            on_change={update(|f, v| if let Some(w) = share::enum_from(&v) { f.weights = w })} />
                        if training {
                            <SelectField id="precision" label={t.precision} tip={t.precision_tip} value={id_of(&form.precision)}
                                options={opts(&[(crate::model::Precision::Pure16, "Pure bf16/fp16"), (crate::model::Precision::Mixed, "Mixed (fp32 master)"), (crate::model::Precision::Fp32, "fp32")])}
                                on_change={update(|f, v| if let Some(p) = share::enum_from(&v) { f.precision = p })} />
                            <SelectField id="optimizer" label={t.optimizer} tip={t.optimizer_tip} value={id_of(&form.optimizer)}
                                options={opts(&[
                                    (crate::model::Optimizer::Adamw, "AdamW (8 B/param)"), (crate::model::Optimizer::Adamw16, "AdamW, bf16 states (4 B)"),
                                    (crate::model::Optimizer::Adamw8bit, "8-bit AdamW (2 B)"), (crate::model::Optimizer::PagedAdamw, "Paged AdamW (8 B)"),
                                    (crate::model::Optimizer::PagedAdamw8bit, "Paged 8-bit AdamW (2 B)"), (crate::model::Optimizer::Adafactor, "Adafactor"),
                                    (crate::model::Optimizer::SgdMomentum, "SGD + momentum (4 B)"), (crate::model::Optimizer::Sgd, "SGD (0 B)"),
                                    (crate::model::Optimizer::Lion, "Lion (4 B)")])}
                                on_change={update(|f, v| if let Some(o) = share::enum_from(&v) { f.optimizer = o })} />
                        }
                        if lora {
                            <NumberField id="rank" label={t.rank} unit="r" tip={t.rank_tip} value={form.lora_rank} min={1} max={65536}
                                error_text={t.bad_number} on_change={update_num(|f, v| f.lora_rank = v)} />
                            <div class="field targets" title={t.targets_tip}>
                                <span class="label">{ t.targets }</span>
                                { for Module::ALL.iter().map(|m| {
                                    let id = format!("target-{}", id_of(m));
                                    html! {
                                        <label for={id.clone()} class="check">
                                            <input id={id} type="checkbox" checked={form.lora_targets.contains(m)} onchange={on_target(*m)} />
                                            { id_of(m) }
                                        </label>
                                    }
                                }) }
                            </div>
                        }
                    </fieldset>
                    if training {
                        <fieldset>
                            <legend>{ t.group_batch }</legend>
                            <div class="row">
                                <NumberField id="batch" label={t.batch} unit={t.sequences} tip={t.batch_tip} value={form.micro_batch} min={1} max={1 << 20}
                                    error_text={t.bad_number} on_change={update_num(|f, v| f.micro_batch = v)} />
                                <NumberField id="seq" label={t.seq} unit={t.tokens} tip={t.seq_tip} value={form.seq_len} min={1} max={1 << 24}
                                    error_text={t.bad_number} on_change={update_num(|f, v| f.seq_len = v)} />
                            </div>
                            <NumberField id="accum" label={t.accum} unit={t.steps} tip={t.accum_tip} value={form.grad_accum} min={1} max={1 << 20}
                                error_text={t.bad_number} on_change={update_num(|f, v| f.grad_accum = v)} />
                            <p class="hint">{ format!("{}: {effective} {}", t.effective_batch, t.sequences) }</p>
                            <SelectField id="ckpt" label={t.ckpt} tip={t.ckpt_tip} value={id_of(&form.checkpointing)}
                                options={opts(&[(crate::model::Checkpointing::Off, "Off"), (crate::model::Checkpointing::Layer, "Per layer"), (crate::model::Checkpointing::Offload, "Per layer, offloaded to CPU")])}
                                on_change={update(|f, v| if let Some(c) = share::enum_from(&v) { f.checkpointing = c })} />
                            <SelectField id="attn" label={t.attn} tip={t.attn_tip} value={id_of(&form.attention)}
                                options={opts(&[(crate::model::AttentionImpl::Eager, "Eager"), (crate::model::AttentionImpl::Sdpa, "SDPA"), (crate::model::AttentionImpl::Flash2, "FlashAttention-2")])}
                                on_change={update(|f, v| if let Some(a) = share::enum_from(&v) { f.attention = a })} />
                            <SelectField id="loss" label={t.loss} tip={t.loss_tip} value={id_of(&form.loss)}
                                options={opts(&[(crate::model::LossImpl::Fp32Logits, "Standard (fp32 logits)"), (crate::model::LossImpl::Bf16Logits, "16-bit logits"), (crate::model::LossImpl::Chunked, "Chunked cross-entropy"), (crate::model::LossImpl::Fused, "Fused linear + CE (Liger)")])}
                                on_change={update(|f, v| if let Some(x) = share::enum_from(&v) { f.loss = x })} />
                        </fieldset>
                    } else {
                        <fieldset>
                            <legend>{ t.group_inference }</legend>
                            <div class="row">
                                <NumberField id="prompt" label={t.prompt} unit={t.tokens} tip={t.prompt_tip} value={form.prompt_tokens} min={1} max={1 << 24}
                                    error_text={t.bad_number} on_change={update_num(|f, v| f.prompt_tokens = v)} />
                                <NumberField id="new" label={t.new_tokens} unit={t.tokens} tip={t.new_tokens_tip} value={form.new_tokens} min={0} max={1 << 24}
                                    error_text={t.bad_number} on_change={update_num(|f, v| f.new_tokens = v)} />
                            </div>
                            <NumberField id="conc" label={t.concurrent} unit={t.sequences} tip={t.concurrent_tip} value={form.concurrent} min={1} max={1 << 20}
                                error_text={t.bad_number} on_change={update_num(|f, v| f.concurrent = v)} />
                            <SelectField id="kv" label={t.kv} tip={t.kv_tip} value={id_of(&form.kv_dtype)}
                                options={opts(&[(crate::model::KvDtype::Bf16, "bf16 (2 B)"), (crate::model::KvDtype::Fp8, "fp8 (1 B)"), (crate::model::KvDtype::Int8, "int8 (1 B)"), (crate::model::KvDtype::Int4, "int4 (0.5 B)")])}
                                on_change={update(|f, v| if let Some(k) = share::enum_from(&v) { f.kv_dtype = k })} />
                        </fieldset>
                    }
                    <details>
                        <summary>{ t.group_advanced }</summary>
                        <SelectField id="par" label={t.par} tip={t.par_tip} value={id_of(&form.parallelism)}
                            options={opts(&[(crate::model::Parallelism::Ddp, "DDP / single GPU"), (crate::model::Parallelism::Zero1, "ZeRO-1"), (crate::model::Parallelism::Zero2, "ZeRO-2"), (crate::model::Parallelism::Zero3, "ZeRO-3 / FSDP full shard"), (crate::model::Parallelism::Pipeline, "Layers split (device_map=auto)"), (crate::model::Parallelism::Tensor, "Tensor parallel")])}
                            on_change={update(|f, v| if let Some(p) = share::enum_from(&v) { f.parallelism = p })} />
                        <SelectField id="offload" label={t.offload} tip={t.offload_tip} value={id_of(&form.offload)}
                            options={opts(&[(crate::model::Offload::None, "None"), (crate::model::Offload::Optimizer, "Optimizer states"), (crate::model::Offload::ParamOptimizer, "Parameters + optimizer (ZeRO-3)")])}
                            on_change={update(|f, v| if let Some(o) = share::enum_from(&v) { f.offload = o })} />
                    </details>
                </form>
                <Results lang={l} estimate={(*est).clone()} verdict={v}
                    gpu_name={AttrValue::from(gpu.map(|g| g.name.clone()).unwrap_or_default())} />
            </main>
        </div>
    }
}
