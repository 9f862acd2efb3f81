//! The input panel: every setting of the form, grouped, with labels, units and tooltips.

use super::fields::{NumberField, SelectField};
use super::i18n::{Lang, Text};
use super::import_box::ImportBox;
use crate::catalog::{self, import::ImportedFile};
use crate::form::{Form, CUSTOM};
use crate::model::limits;
use crate::model::{
    AttentionImpl, Checkpointing, KvDtype, LossImpl, Mode, Module, Offload, Optimizer, Parallelism,
    Precision, Stack, WeightFormat,
};
use crate::settings::range;
use crate::share::enum_id;
use crate::web::WebGpuInfo;
use serde::Serialize;
use yew::prelude::*;

/// Props of [`Inputs`].
#[derive(Properties, PartialEq)]
pub struct InputsProps {
    pub lang: Lang,
    pub form: Form,
    /// Effective batch (sequences per optimizer step), shown under the batch inputs.
    pub effective_batch: u64,
    /// What the browser's WebGPU adapter reported, if anything.
    #[prop_or_default]
    pub webgpu: Option<WebGpuInfo>,
    /// Called with the whole new form after any change.
    pub on_change: Callback<Form>,
}

fn id_of<T: Serialize>(v: &T) -> AttrValue {
    AttrValue::from(enum_id(v))
}

fn opts<T: Serialize + Copy>(items: &[(T, &'static str)]) -> Vec<(AttrValue, AttrValue)> {
    items
        .iter()
        .map(|(v, l)| (id_of(v), AttrValue::from(*l)))
        .collect()
}

/// A callback that applies `f` to a copy of the form and emits it.
fn setter<T: 'static>(props: &InputsProps, f: fn(&mut Form, T)) -> Callback<T> {
    let (form, on_change) = (props.form.clone(), props.on_change.clone());
    Callback::from(move |value: T| {
        let mut next = form.clone();
        f(&mut next, value);
        on_change.emit(next);
    })
}

/// Like [`setter`], for `<select>`s of enum ids: ignores ids that do not parse.
fn enum_setter<T: serde::de::DeserializeOwned + 'static>(
    props: &InputsProps,
    f: fn(&mut Form, T),
) -> Callback<String> {
    let set = setter(props, f);
    Callback::from(move |id: String| {
        if let Some(v) = crate::share::enum_from(&id) {
            set.emit(v)
        }
    })
}

/// Applies an imported config or adapter to the form.
pub fn apply_import(form: &mut Form, file: ImportedFile) {
    match file {
        ImportedFile::Model(m) => {
            form.model = CUSTOM.into();
            form.custom_arch = m.arch;
            if let Some(w) = m.weights {
                form.weights = w;
            }
        }
        ImportedFile::Adapter(a) => form.set_lora(a.lora),
    }
}

/// Every input, grouped so a newcomer sees the few that matter first.
#[component]
pub fn Inputs(props: &InputsProps) -> Html {
    let t = props.lang.t();
    let form = &props.form;
    let filter = use_state(String::new);
    let on_filter = {
        let filter = filter.clone();
        Callback::from(move |e: InputEvent| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            filter.set(input.value());
        })
    };
    let on_import = props.on_change.clone();
    let training = form.mode != Mode::Inference;
    let lora = matches!(form.mode, Mode::Lora | Mode::Qlora);

    html! {
        <form class="inputs" onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())}>
            <fieldset>
                <legend>{ t.group_model }</legend>
                <div class="field">
                    <label for="model-filter">{ t.filter }</label>
                    <input id="model-filter" type="search" placeholder={t.filter} value={(*filter).clone()} oninput={on_filter} />
                </div>
                <SelectField id="model" label={t.model} tip={t.model_tip} options={model_options(t, form, &filter)}
                    value={AttrValue::from(form.model.clone())} on_change={setter(props, |f, v| f.model = v)} />
                if form.model == CUSTOM { { arch_editor(props) } }
                <ImportBox lang={props.lang} form={form.clone()} {on_import} />
                <SelectField id="gpu" label={t.gpu} tip={t.gpu_tip} options={gpu_options(t)}
                    value={AttrValue::from(form.gpu.clone())} on_change={setter(props, |f, v| f.gpu = v)} />
                { gpu_hint(props) }
                if form.gpu == CUSTOM {
                    <NumberField id="vram" label={t.vram} unit="GiB" tip={t.vram_tip} value={form.custom_vram_gib} min={range("vram").0} max={range("vram").1}
                        error_text={t.bad_number} on_change={setter(props, |f, v| f.custom_vram_gib = v)} />
                }
                <div class="row">
                    <NumberField id="gpus" label={t.gpus} unit="×" tip={t.gpus_tip} value={form.gpus} min={range("gpus").0} max={range("gpus").1}
                        error_text={t.bad_number} on_change={setter(props, |f, v| f.gpus = v)} />
                    <NumberField id="ram" label={t.ram} unit="GiB" tip={t.ram_tip} value={form.ram_gib} min={range("ram").0} max={range("ram").1}
                        error_text={t.bad_number} on_change={setter(props, |f, v| f.ram_gib = v)} />
                </div>
            </fieldset>
            <fieldset>
                <legend>{ t.group_method }</legend>
                <SelectField id="mode" label={t.mode} tip={t.mode_tip} value={id_of(&form.mode)}
                    options={opts(&[(Mode::Full, t.opt_full), (Mode::Lora, "LoRA"), (Mode::Qlora, "QLoRA (4-bit NF4)"), (Mode::Freeze, t.opt_freeze), (Mode::Inference, t.opt_inference)])}
                    on_change={enum_setter(props, |f, m| f.mode = m)} />
                <SelectField id="stack" label={t.stack} tip={t.stack_tip} value={AttrValue::from(form.stack.id())}
                    options={Stack::ALL.iter().map(|s| (AttrValue::from(s.id()), AttrValue::from(s.name()))).collect::<Vec<_>>()}
                    on_change={setter(props, |f, v: String| if let Some(s) = Stack::from_id(&v) { f.set_stack(s) })} />
                <SelectField id="weights" label={t.weights} tip={t.weights_tip} value={id_of(&form.weights)}
                    options={opts(&[
                        (WeightFormat::Bf16, "bf16 (2 B)"), (WeightFormat::Fp16, "fp16 (2 B)"), (WeightFormat::Fp32, "fp32 (4 B)"),
                        (WeightFormat::Fp8, "fp8 (1 B)"), (WeightFormat::Int8, "bitsandbytes int8 (1 B)"),
                        (WeightFormat::Nf4, "NF4 (0.56 B)"), (WeightFormat::Nf4Dq, "NF4 + double quant (0.52 B)"),
                        (WeightFormat::Fp4, "FP4 (0.56 B)"), (WeightFormat::GptqInt4, "GPTQ int4 (0.52 B)"),
                        (WeightFormat::GptqInt8, "GPTQ int8 (1.02 B)"), (WeightFormat::AwqInt4, "AWQ int4 (0.52 B)")])}
                    on_change={enum_setter(props, |f, w| f.weights = w)} />
                if training {
                    <SelectField id="precision" label={t.precision} tip={t.precision_tip} value={id_of(&form.precision)}
                        options={opts(&[(Precision::Pure16, t.opt_pure16), (Precision::Mixed, t.opt_mixed), (Precision::Fp32, "fp32")])}
                        on_change={enum_setter(props, |f, p| f.precision = p)} />
                    <SelectField id="optimizer" label={t.optimizer} tip={t.optimizer_tip} value={id_of(&form.optimizer)}
                        options={opts(&[
                            (Optimizer::Adamw, t.opt_adamw), (Optimizer::Adamw16, t.opt_adamw16),
                            (Optimizer::Adamw8bit, "8-bit AdamW (2 B)"), (Optimizer::PagedAdamw, "Paged AdamW (8 B)"),
                            (Optimizer::PagedAdamw8bit, "Paged 8-bit AdamW (2 B)"), (Optimizer::Adafactor, "Adafactor"),
                            (Optimizer::SgdMomentum, t.opt_sgd_momentum), (Optimizer::Sgd, "SGD (0 B)"), (Optimizer::Lion, "Lion (4 B)")])}
                        on_change={enum_setter(props, |f, o| f.optimizer = o)} />
                }
                if lora { { lora_inputs(props) } }
            </fieldset>
            if training { { batch_inputs(props) } } else { { inference_inputs(props) } }
            <details>
                <summary>{ t.group_advanced }</summary>
                <SelectField id="par" label={t.par} tip={t.par_tip} value={id_of(&form.parallelism)}
                    options={opts(&[(Parallelism::Ddp, t.opt_ddp), (Parallelism::Zero1, "ZeRO-1"), (Parallelism::Zero2, "ZeRO-2"),
                        (Parallelism::Zero3, "ZeRO-3 / FSDP full shard"), (Parallelism::Pipeline, t.opt_pipeline), (Parallelism::Tensor, t.opt_tensor)])}
                    on_change={enum_setter(props, |f, p| f.parallelism = p)} />
                <SelectField id="offload" label={t.offload} tip={t.offload_tip} value={id_of(&form.offload)}
                    options={opts(&[(Offload::None, t.opt_none), (Offload::Optimizer, t.opt_offload_optimizer), (Offload::ParamOptimizer, t.opt_offload_params)])}
                    on_change={enum_setter(props, |f, o| f.offload = o)} />
            </details>
        </form>
    }
}

fn model_options(t: &Text, form: &Form, filter: &str) -> Vec<(AttrValue, AttrValue)> {
    let needle = catalog::normalize_name(filter);
    let mut options = vec![(AttrValue::from(CUSTOM), AttrValue::from(t.custom_model))];
    options.extend(
        catalog::models()
            .iter()
            .filter(|m| {
                needle.is_empty()
                    || m.id == form.model
                    || catalog::normalize_name(&format!("{} {} {}", m.name, m.hf_id, m.family))
                        .contains(&needle)
            })
            .map(|m| {
                let b = m.arch().params().total / 1e9;
                (
                    AttrValue::from(m.id.clone()),
                    AttrValue::from(format!("{} · {b:.1} B", m.name)),
                )
            }),
    );
    options
}

fn gpu_options(t: &Text) -> Vec<(AttrValue, AttrValue)> {
    let mut options: Vec<(AttrValue, AttrValue)> = catalog::gpus()
        .iter()
        .map(|g| {
            (
                AttrValue::from(g.id.clone()),
                AttrValue::from(format!("{} · {} GB", g.name, g.memory_gb_as_sold)),
            )
        })
        .collect();
    options.push((AttrValue::from(CUSTOM), AttrValue::from(t.custom_gpu)));
    options
}

/// The WebGPU device hint: the catalog GPUs of the family the browser reports, as one-click choices.
/// Silent when WebGPU is absent or the adapter matches no catalog family (e.g. a software adapter).
fn gpu_hint(props: &InputsProps) -> Html {
    let Some(info) = &props.webgpu else {
        return html! {};
    };
    let matches = catalog::gpus_for_webgpu(&info.vendor, &info.architecture);
    if matches.is_empty() {
        return html! {};
    }
    let t = props.lang.t();
    let text = t
        .webgpu_hint
        .replace("{vendor}", &info.vendor)
        .replace("{arch}", &info.architecture);
    html! {
        <div class="hint webgpu" id="webgpu-hint" title={t.webgpu_note}>
            { text }
            <div class="chips">
                { for matches.iter().take(8).map(|g| {
                    let pick = {
                        let (form, on_change, id) = (props.form.clone(), props.on_change.clone(), g.id.clone());
                        Callback::from(move |_: MouseEvent| {
                            let mut next = form.clone();
                            next.gpu = id.clone();
                            on_change.emit(next);
                        })
                    };
                    html! { <button type="button" class="chip" onclick={pick}>{ g.name.trim_start_matches("GeForce ") }</button> }
                }) }
            </div>
            <small>{ t.webgpu_note }</small>
        </div>
    }
}

/// Field-by-field editor of a custom model's shape.
fn arch_editor(props: &InputsProps) -> Html {
    let t = props.lang.t();
    let a = &props.form.custom_arch;
    let field = |id: &'static str,
                 label: &'static str,
                 unit: &'static str,
                 value: u32,
                 min: u32,
                 f: fn(&mut Form, u32)| {
        let max = if id == "arch-layers" {
            limits::MAX_LAYERS
        } else {
            limits::MAX_DIM
        };
        html! {
            <NumberField id={id} label={label} unit={unit} tip={t.arch_tip} value={value} min={min} max={max}
                error_text={t.bad_number} on_change={setter(props, f)} />
        }
    };
    html! {
        <div class="arch" id="arch-editor">
            <span class="label">{ t.arch_title }</span>
            <div class="row">
                { field("arch-layers", t.layers, t.units_layers, a.layers, 1, |f, v| f.custom_arch.layers = v) }
                { field("arch-hidden", t.hidden, t.units_dims, a.hidden, 1, |f, v| f.custom_arch.hidden = v) }
                { field("arch-heads", t.heads, t.units_heads, a.heads, 1, |f, v| f.custom_arch.heads = v) }
                { field("arch-kv", t.kv_heads, t.units_heads, a.kv_heads, 1, |f, v| f.custom_arch.kv_heads = v) }
                { field("arch-head-dim", t.head_dim, t.units_dims, a.head_dim, 1, |f, v| f.custom_arch.head_dim = v) }
                { field("arch-intermediate", t.intermediate, t.units_dims, a.intermediate, 1, |f, v| f.custom_arch.intermediate = v) }
                { field("arch-vocab", t.vocab, t.tokens, a.vocab, 1, |f, v| f.custom_arch.vocab = v) }
            </div>
            // Each field can be in range while the shape is not (more KV heads than heads).
            { match a.check() {
                Err(e) => html! { <p class="error" id="arch-error" role="alert">{ format!("{} {e}", t.bad_shape) }</p> },
                Ok(()) => html! {},
            } }
            { check(props, "arch-tied", t.tied, t.tied, a.tied_embeddings, |f, v| f.custom_arch.tied_embeddings = v) }
        </div>
    }
}

/// A checkbox bound to one boolean of the form.
fn check(
    props: &InputsProps,
    id: &'static str,
    label: &'static str,
    tip: &'static str,
    checked: bool,
    set: fn(&mut Form, bool),
) -> Html {
    let set = setter(props, set);
    let on_change = Callback::from(move |e: Event| {
        let input: web_sys::HtmlInputElement = e.target_unchecked_into();
        set.emit(input.checked());
    });
    html! {
        <label class="check" for={id} title={tip}>
            <input {id} type="checkbox" {checked} onchange={on_change} />
            { label }
        </label>
    }
}

fn lora_inputs(props: &InputsProps) -> Html {
    let t = props.lang.t();
    let form = &props.form;
    let toggle = |m: Module| {
        let (form, on_change) = (form.clone(), props.on_change.clone());
        Callback::from(move |_: Event| {
            let mut next = form.clone();
            if next.lora_targets.contains(&m) {
                next.lora_targets.retain(|x| *x != m);
            } else {
                next.lora_targets.push(m);
            }
            on_change.emit(next);
        })
    };
    html! {
        <>
            <NumberField id="rank" label={t.rank} unit="r" tip={t.rank_tip} value={form.lora_rank} min={range("rank").0} max={range("rank").1}
                error_text={t.bad_number} on_change={setter(props, |f, v| f.lora_rank = v)} />
            <div class="field targets" title={t.targets_tip}>
                <span class="label">{ t.targets }</span>
                { for Module::ALL.iter().map(|m| {
                    let id = format!("target-{}", enum_id(m));
                    html! {
                        <label for={id.clone()} class="check">
                            <input id={id} type="checkbox" checked={form.lora_targets.contains(m)} onchange={toggle(*m)} />
                            { enum_id(m) }
                        </label>
                    }
                }) }
            </div>
            <div class="field targets">
                <span class="label">{ t.lora_extras }</span>
                { check(props, "lora-embed", t.train_embed, t.train_embed_tip, form.train_embed, |f, v| f.train_embed = v) }
                { check(props, "lora-head", t.train_head, t.train_embed_tip, form.train_lm_head, |f, v| f.train_lm_head = v) }
                { check(props, "lora-dora", "DoRA", t.dora_tip, form.dora, |f, v| f.dora = v) }
                { check(props, "lora-dropout", t.dropout, t.dropout_tip, form.lora_dropout, |f, v| f.lora_dropout = v) }
            </div>
        </>
    }
}

fn batch_inputs(props: &InputsProps) -> Html {
    let t = props.lang.t();
    let form = &props.form;
    html! {
        <fieldset>
            <legend>{ t.group_batch }</legend>
            <div class="row">
                <NumberField id="batch" label={t.batch} unit={t.sequences} tip={t.batch_tip} value={form.micro_batch} min={range("batch").0} max={range("batch").1}
                    error_text={t.bad_number} on_change={setter(props, |f, v| f.micro_batch = v)} />
                <NumberField id="seq" label={t.seq} unit={t.tokens} tip={t.seq_tip} value={form.seq_len} min={range("seq").0} max={range("seq").1}
                    error_text={t.bad_number} on_change={setter(props, |f, v| f.seq_len = v)} />
            </div>
            <NumberField id="accum" label={t.accum} unit={t.steps} tip={t.accum_tip} value={form.grad_accum} min={range("accum").0} max={range("accum").1}
                error_text={t.bad_number} on_change={setter(props, |f, v| f.grad_accum = v)} />
            <p class="hint">{ format!("{}: {} {}", t.effective_batch, props.effective_batch, t.sequences) }</p>
            <SelectField id="shapes" label={t.shapes} tip={t.shapes_tip} value={if form.variable_lengths { "variable" } else { "fixed" }}
                options={vec![("fixed".into(), t.opt_fixed_len.into()), ("variable".into(), t.opt_variable_len.into())]}
                on_change={setter(props, |f, v: String| f.variable_lengths = v == "variable")} />
            <SelectField id="ckpt" label={t.ckpt} tip={t.ckpt_tip} value={id_of(&form.checkpointing)}
                options={opts(&[(Checkpointing::Off, t.opt_off), (Checkpointing::Layer, t.opt_per_layer), (Checkpointing::Offload, t.opt_per_layer_offload)])}
                on_change={enum_setter(props, |f, c| f.checkpointing = c)} />
            <SelectField id="attn" label={t.attn} tip={t.attn_tip} value={id_of(&form.attention)}
                options={opts(&[(AttentionImpl::Eager, "Eager"), (AttentionImpl::Sdpa, "SDPA"), (AttentionImpl::Flash2, "FlashAttention-2")])}
                on_change={enum_setter(props, |f, a| f.attention = a)} />
            <SelectField id="loss" label={t.loss} tip={t.loss_tip} value={id_of(&form.loss)}
                options={opts(&[(LossImpl::Fp32Logits, t.opt_loss_fp32), (LossImpl::Bf16Logits, t.opt_loss_16),
                    (LossImpl::Chunked, t.opt_loss_chunked), (LossImpl::Fused, t.opt_loss_fused)])}
                on_change={enum_setter(props, |f, l| f.loss = l)} />
        </fieldset>
    }
}

fn inference_inputs(props: &InputsProps) -> Html {
    let t = props.lang.t();
    let form = &props.form;
    html! {
        <fieldset>
            <legend>{ t.group_inference }</legend>
            <div class="row">
                <NumberField id="prompt" label={t.prompt} unit={t.tokens} tip={t.prompt_tip} value={form.prompt_tokens} min={range("prompt").0} max={range("prompt").1}
                    error_text={t.bad_number} on_change={setter(props, |f, v| f.prompt_tokens = v)} />
                <NumberField id="new" label={t.new_tokens} unit={t.tokens} tip={t.new_tokens_tip} value={form.new_tokens} min={range("new").0} max={range("new").1}
                    error_text={t.bad_number} on_change={setter(props, |f, v| f.new_tokens = v)} />
            </div>
            <NumberField id="conc" label={t.concurrent} unit={t.sequences} tip={t.concurrent_tip} value={form.concurrent} min={range("conc").0} max={range("conc").1}
                error_text={t.bad_number} on_change={setter(props, |f, v| f.concurrent = v)} />
            <SelectField id="kv" label={t.kv} tip={t.kv_tip} value={id_of(&form.kv_dtype)}
                options={opts(&[(KvDtype::Bf16, "bf16 (2 B)"), (KvDtype::Fp8, "fp8 (1 B)"), (KvDtype::Int8, "int8 (1 B)"), (KvDtype::Int4, "int4 (0.5 B)")])}
                on_change={enum_setter(props, |f, k| f.kv_dtype = k)} />
        </fieldset>
    }
}
