//! The input panel: every setting of the form, grouped, with labels, units and tooltips.

use super::fields::{NumberField, SelectField};
use super::hub_status::HubStatus;
use super::i18n::{Lang, Text};
use super::import_box::ImportBox;
use crate::catalog;
use crate::edit::{ArchField, Edit, ImportOutcome};
use crate::form::{Form, CUSTOM};
use crate::model::limits;
use crate::model::peft::Method;
use crate::model::preference::{Objective, Reference};
use crate::model::Engine;
use crate::model::{
    AttentionImpl, Checkpointing, KvDtype, LossImpl, Mode, Module, Offload, Optimizer, Parallelism,
    Precision, Stack, Version, Versions, WeightFormat,
};
use crate::settings::range;
use crate::share::enum_id;
use crate::web::WebGpuInfo;
use serde::Serialize;
use yew::prelude::*;

/// Props of [`Inputs`].
#[derive(Properties, PartialEq)]
pub struct InputsProps {
    pub form: Form,
    /// Effective batch (sequences per optimizer step), shown under the batch inputs.
    pub effective_batch: u64,
    /// What the browser's WebGPU adapter reported, if anything.
    #[prop_or_default]
    pub webgpu: Option<WebGpuInfo>,
    /// What the last import did (shown under the import box).
    #[prop_or_default]
    pub import: Option<ImportOutcome>,
    /// Receives every change as an intent.
    pub on_edit: Callback<Edit>,
    /// Where the last Hugging Face Hub load stands.
    #[prop_or_default]
    pub hub: crate::hub::HubState,
    /// Starts a Hub load of an id (`false`: ask the Hub, not this browser's copy first).
    #[prop_or_default]
    pub on_hub: Callback<(String, bool)>,
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

/// A callback that sets the setting with link key `key` (see [`crate::settings`]) from a value's text.
fn set<T: ToString + 'static>(props: &InputsProps, key: &'static str) -> Callback<T> {
    let on_edit = props.on_edit.clone();
    Callback::from(move |value: T| {
        on_edit.emit(Edit::Set {
            key,
            value: value.to_string(),
        })
    })
}

/// A whole-number input for the setting with link key `key`: its bounds come from the settings table, its
/// changes go back as that setting.
fn number(
    props: &InputsProps,
    t: &'static Text,
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    tip: &'static str,
    value: u32,
) -> Html {
    let (min, max) = range(key);
    html! {
        <NumberField id={key} {label} {unit} {tip} {value} {min} {max} error_text={t.bad_number} on_change={set(props, key)} />
    }
}

/// A callback that sends one fixed intent, whatever the event.
fn send<E: 'static>(props: &InputsProps, edit: Edit) -> Callback<E> {
    let on_edit = props.on_edit.clone();
    Callback::from(move |_: E| on_edit.emit(edit.clone()))
}

/// Every input, grouped so a newcomer sees the few that matter first.
#[component]
pub fn Inputs(props: &InputsProps) -> Html {
    let lang = use_context::<Lang>().unwrap_or_default();
    let t = lang.t();
    let form = &props.form;
    let filter = use_state(String::new);
    let on_filter = {
        let filter = filter.clone();
        Callback::from(move |e: InputEvent| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            filter.set(input.value());
        })
    };
    let training = form.mode != Mode::Inference;
    let lora = matches!(form.mode, Mode::Lora | Mode::Qlora);

    html! {
        <form class="inputs" onsubmit={Callback::from(|e: SubmitEvent| e.prevent_default())}>
            <fieldset>
                <legend>{ t.group_model }</legend>
                <div class="field">
                    <label for="model-filter">{ t.filter }</label>
                    <input id="model-filter" type="search" placeholder={t.filter} value={(*filter).clone()} oninput={on_filter}
                        onkeydown={hub_on_enter(props, &filter)} />
                </div>
                { hub_picker(props, t, &filter) }
                <SelectField id="model" label={t.model} tip={t.model_tip} options={model_options(t, form, &filter)}
                    value={AttrValue::from(form.model.clone())} on_change={set::<String>(props, "model")} />
                if form.model == CUSTOM { { arch_editor(props, t) } }
                <ImportBox outcome={props.import.clone()} on_edit={props.on_edit.clone()} />
                <SelectField id="gpu" label={t.gpu} tip={t.gpu_tip} options={gpu_options(t)}
                    value={AttrValue::from(form.gpu.clone())} on_change={set::<String>(props, "gpu")} />
                { gpu_hint(props, t) }
                if form.gpu == CUSTOM {
                    { number(props, t, "vram", t.vram, "GiB", t.vram_tip, form.custom_vram_gib) }
                }
                <div class="row">
                    { number(props, t, "gpus", t.gpus, "×", t.gpus_tip, form.gpus) }
                    { number(props, t, "ram", t.ram, "GiB", t.ram_tip, form.ram_gib) }
                </div>
            </fieldset>
            <fieldset>
                <legend>{ t.group_method }</legend>
                <SelectField id="mode" label={t.mode} tip={t.mode_tip} value={id_of(&form.mode)}
                    options={opts(&[(Mode::Full, t.opt_full), (Mode::Lora, "LoRA"), (Mode::Qlora, "QLoRA (4-bit NF4)"), (Mode::Freeze, t.opt_freeze), (Mode::Badam, "BAdam"), (Mode::Lisa, "LISA"), (Mode::Inference, t.opt_inference)])}
                    on_change={set::<String>(props, "mode")} />
                <SelectField id="stack" label={t.stack} tip={t.stack_tip} value={AttrValue::from(form.stack.id())}
                    options={Stack::ALL.iter().map(|s| (AttrValue::from(s.id()), AttrValue::from(s.name()))).collect::<Vec<_>>()}
                    on_change={stack_picker(props)} />
                <SelectField id="weights" label={t.weights} tip={t.weights_tip} value={id_of(&form.weights)}
                    options={opts(&[
                        (WeightFormat::Bf16, "bf16 (2 B)"), (WeightFormat::Fp16, "fp16 (2 B)"), (WeightFormat::Fp32, "fp32 (4 B)"),
                        (WeightFormat::Fp8, "fp8 (1 B)"), (WeightFormat::Int8, "bitsandbytes int8 (1 B)"),
                        (WeightFormat::Nf4, "NF4 (0.56 B)"), (WeightFormat::Nf4Dq, "NF4 + double quant (0.52 B)"),
                        (WeightFormat::Fp4, "FP4 (0.56 B)"), (WeightFormat::GptqInt4, "GPTQ int4 (0.52 B)"),
                        (WeightFormat::GptqInt8, "GPTQ int8 (1.02 B)"), (WeightFormat::AwqInt4, "AWQ int4 (0.52 B)"),
                        (WeightFormat::Mxfp4, "MXFP4, MoE experts (0.53 B)")])}
                    on_change={set::<String>(props, "weights")} />
                if form.weights == WeightFormat::Mxfp4 {
                    if training {
                        <p class="hint" id="mxfp4-trains-bf16">{ t.mxfp4_trains_bf16 }</p>
                    } else if form.arch().moe.is_none() {
                        <p class="hint" id="mxfp4-no-experts">{ t.mxfp4_no_experts }</p>
                    }
                }
                if training {
                    <SelectField id="precision" label={t.precision} tip={t.precision_tip} value={id_of(&form.precision)}
                        options={opts(&[(Precision::Pure16, t.opt_pure16), (Precision::Mixed, t.opt_mixed), (Precision::Fp32, "fp32")])}
                        on_change={set::<String>(props, "precision")} />
                    <SelectField id="optimizer" label={t.optimizer} tip={t.optimizer_tip} value={id_of(&form.optimizer)}
                        options={opts(&[
                            (Optimizer::Adamw, t.opt_adamw), (Optimizer::Adamw16, t.opt_adamw16),
                            (Optimizer::Adamw8bit, "8-bit AdamW (2 B)"), (Optimizer::PagedAdamw, "Paged AdamW (8 B)"),
                            (Optimizer::PagedAdamw8bit, "Paged 8-bit AdamW (2 B)"), (Optimizer::Adafactor, "Adafactor"),
                            (Optimizer::SgdMomentum, t.opt_sgd_momentum), (Optimizer::Sgd, "SGD (0 B)"), (Optimizer::Lion, "Lion (4 B)"),
                            (Optimizer::Galore, "GaLore"), (Optimizer::QGalore, "Q-GaLore (int8)"), (Optimizer::Apollo, "APOLLO"), (Optimizer::AdamMini, "Adam-mini (≈4 B)"),
                            (Optimizer::Lomo, "LOMO (0 B)"), (Optimizer::AdaLomo, "AdaLomo")])}
                        on_change={set::<String>(props, "optim")} />
                }
                if matches!(form.optimizer, Optimizer::Galore | Optimizer::QGalore | Optimizer::Apollo) {
                    { number(props, t, "prank", t.projection_rank, "r", t.projection_rank_tip, form.projection_rank) }
                }
                if matches!(form.mode, Mode::Freeze | Mode::Badam | Mode::Lisa) {
                    <NumberField id="layers-trained" label={t.layers_trained} unit={t.units_layers} tip={t.layers_trained_tip} value={form.trained_layers}
                        min={1} max={form.arch().layers.max(1)} error_text={t.bad_number} on_change={set(props, "ftl")} />
                }
                if training { { objective_inputs(props, t) } }
                if lora { { lora_inputs(props, t) } }
                if form.arch().vision.is_some() { { vision_inputs(props, t) } }
            </fieldset>
            if training { { batch_inputs(props, t) } } else { { inference_inputs(props, t) } }
            <details>
                <summary>{ t.group_advanced }</summary>
                <SelectField id="par" label={t.par} tip={t.par_tip} value={id_of(&form.parallelism)}
                    options={opts(&[(Parallelism::Ddp, t.opt_ddp), (Parallelism::Zero1, "ZeRO-1"), (Parallelism::Zero2, "ZeRO-2"),
                        (Parallelism::Zero3, "ZeRO-3 / FSDP full shard"), (Parallelism::Pipeline, t.opt_pipeline), (Parallelism::Tensor, t.opt_tensor)])}
                    on_change={set::<String>(props, "par")} />
                <SelectField id="offload" label={t.offload} tip={t.offload_tip} value={id_of(&form.offload)}
                    options={opts(&[(Offload::None, t.opt_none), (Offload::Optimizer, t.opt_offload_optimizer), (Offload::ParamOptimizer, t.opt_offload_params)])}
                    on_change={set::<String>(props, "offload")} />
                { version_inputs(props, t) }
            </details>
        </form>
    }
}

/// The releases offered for a library: today's, the model's choices ([`Versions::TORCH_CHOICES`],
/// [`Versions::TRANSFORMERS_CHOICES`]) and the form's own when it is none of them (an import), newest first.
fn version_options(
    t: &Text,
    today: Version,
    offered: &[Version],
    value: Version,
) -> Vec<(AttrValue, AttrValue)> {
    let mut versions = vec![today];
    versions.extend(offered.iter().copied().filter(|v| *v != today));
    if !versions.contains(&value) {
        versions.push(value);
    }
    versions.sort_by(|a, b| b.cmp(a));
    versions
        .into_iter()
        .map(|v| {
            let id = String::from(v);
            let label = if v == today {
                format!("{id} ({})", t.version_current)
            } else {
                id.clone()
            };
            (AttrValue::from(id), AttrValue::from(label))
        })
        .collect()
}

fn version_inputs(props: &InputsProps, t: &'static Text) -> Html {
    let form = &props.form;
    let today = Versions::default();
    html! {
        <div class="row">
            <SelectField id="torch" label={t.torch_version} tip={t.torch_version_tip}
                value={AttrValue::from(String::from(form.torch_version))}
                options={version_options(t, today.torch, &Versions::TORCH_CHOICES, form.torch_version)}
                on_change={set::<String>(props, "torch")} />
            <SelectField id="tf" label={t.transformers_version} tip={t.transformers_version_tip}
                value={AttrValue::from(String::from(form.transformers_version))}
                options={version_options(t, today.transformers, &Versions::TRANSFORMERS_CHOICES, form.transformers_version)}
                on_change={set::<String>(props, "tf")} />
        </div>
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
                let b = crate::model::vision::total_params(m.arch()) / 1e9;
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

/// The Hub id typed into the model search, if it is one.
fn hub_id(filter: &str) -> Option<String> {
    crate::hub::parse_id(filter).ok().map(|id| id.to_string())
}

/// Enter in the model search loads the Hub id typed there.
fn hub_on_enter(props: &InputsProps, filter: &str) -> Callback<KeyboardEvent> {
    let (on_hub, id) = (props.on_hub.clone(), hub_id(filter));
    Callback::from(move |e: KeyboardEvent| {
        if let (Some(id), "Enter") = (&id, e.key().as_str()) {
            e.prevent_default();
            on_hub.emit((id.clone(), false));
        }
    })
}

/// Under the model search: a button that loads the Hub id typed there (or, for other text, how to), and
/// where the last load stands.
fn hub_picker(props: &InputsProps, t: &'static Text, filter: &str) -> Html {
    let button = match hub_id(filter) {
        Some(id) => {
            let (on_hub, label) = (props.on_hub.clone(), t.hub_load.replace("{id}", &id));
            let onclick = Callback::from(move |_: MouseEvent| on_hub.emit((id.clone(), false)));
            html! { <button type="button" id="hub-load" class="chip" {onclick}>{ label }</button> }
        }
        None if !filter.trim().is_empty() => {
            html! { <p class="hint" id="hub-hint">{ t.hub_hint }</p> }
        }
        None => html! {},
    };
    html! {
        <>
            { button }
            <HubStatus state={props.hub.clone()} form={props.form.clone()} />
        </>
    }
}

/// The WebGPU device hint: the catalog GPUs of the family the browser reports, as one-click choices.
/// Silent when WebGPU is absent or the adapter matches no catalog family (e.g. a software adapter).
fn gpu_hint(props: &InputsProps, t: &'static Text) -> Html {
    let Some(info) = &props.webgpu else {
        return html! {};
    };
    let matches = catalog::gpus_for_webgpu(&info.vendor, &info.architecture);
    if matches.is_empty() {
        return html! {};
    }
    let text = t
        .webgpu_hint
        .replace("{vendor}", &info.vendor)
        .replace("{arch}", &info.architecture);
    html! {
        <div class="hint webgpu" id="webgpu-hint" title={t.webgpu_note}>
            { text }
            <div class="chips">
                { for matches.iter().take(8).map(|g| {
                    let pick = send::<MouseEvent>(props, Edit::Set { key: "gpu", value: g.id.clone() });
                    html! { <button type="button" class="chip" onclick={pick}>{ g.name.trim_start_matches("GeForce ") }</button> }
                }) }
            </div>
            <small>{ t.webgpu_note }</small>
        </div>
    }
}

/// Field-by-field editor of a custom model's shape.
fn arch_editor(props: &InputsProps, t: &'static Text) -> Html {
    let a = &props.form.custom_arch;
    let field = |id: &'static str,
                 label: &'static str,
                 unit: &'static str,
                 value: u32,
                 min: u32,
                 field: ArchField| {
        let on_edit = props.on_edit.clone();
        let on_change = Callback::from(move |v: u32| on_edit.emit(Edit::Arch(field, v)));
        let max = if id == "arch-layers" {
            limits::MAX_LAYERS
        } else {
            limits::MAX_DIM
        };
        html! {
            <NumberField id={id} label={label} unit={unit} tip={t.arch_tip} value={value} min={min} max={max}
                error_text={t.bad_number} {on_change} />
        }
    };
    html! {
        <div class="arch" id="arch-editor">
            <span class="label">{ t.arch_title }</span>
            <div class="row">
                { field("arch-layers", t.layers, t.units_layers, a.layers, 1, ArchField::Layers) }
                { field("arch-hidden", t.hidden, t.units_dims, a.hidden, 1, ArchField::Hidden) }
                { field("arch-heads", t.heads, t.units_heads, a.heads, 1, ArchField::Heads) }
                { field("arch-kv", t.kv_heads, t.units_heads, a.kv_heads, 1, ArchField::KvHeads) }
                { field("arch-head-dim", t.head_dim, t.units_dims, a.head_dim, 1, ArchField::HeadDim) }
                { field("arch-intermediate", t.intermediate, t.units_dims, a.intermediate, 1, ArchField::Intermediate) }
                { field("arch-vocab", t.vocab, t.tokens, a.vocab, 1, ArchField::Vocab) }
            </div>
            // Each field can be in range while the shape is not (more KV heads than heads).
            { match a.check() {
                Err(e) => html! { <p class="error" id="arch-error" role="alert">{ format!("{} {e}", t.bad_shape) }</p> },
                Ok(()) => html! {},
            } }
            { check("arch-tied", t.tied, t.tied, a.tied_embeddings, flag(props, Edit::TiedEmbeddings)) }
        </div>
    }
}

/// A checkbox; `set` receives its new state.
fn check(
    id: &'static str,
    label: &'static str,
    tip: &'static str,
    checked: bool,
    set: Callback<bool>,
) -> Html {
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

/// A checkbox callback that sends the intent `make(checked)`.
fn flag(props: &InputsProps, make: fn(bool) -> Edit) -> Callback<bool> {
    let on_edit = props.on_edit.clone();
    Callback::from(move |on: bool| on_edit.emit(make(on)))
}

/// A checkbox callback for an on/off setting of [`crate::settings`] (written `1`/`0`).
fn setting_flag(props: &InputsProps, key: &'static str) -> Callback<bool> {
    let set = set::<&'static str>(props, key);
    Callback::from(move |on: bool| set.emit(if on { "1" } else { "0" }))
}

/// The stack picker: a stack brings its defaults.
fn stack_picker(props: &InputsProps) -> Callback<String> {
    let on_edit = props.on_edit.clone();
    Callback::from(move |id: String| {
        if let Some(s) = Stack::from_id(&id) {
            on_edit.emit(Edit::Stack(s))
        }
    })
}

/// The batch-shape picker: "variable" or "fixed" lengths.
fn shapes_picker(props: &InputsProps) -> Callback<String> {
    let set = set::<&'static str>(props, "varlen");
    Callback::from(move |v: String| set.emit(if v == "variable" { "1" } else { "0" }))
}

/// The training objective (SFT or a preference / RL one), its reference model and GRPO's settings.
fn objective_inputs(props: &InputsProps, t: &'static Text) -> Html {
    let form = &props.form;
    let obj = form.objective;
    html! {
        <>
            <SelectField id="obj" label={t.objective} tip={t.objective_tip} value={id_of(&obj)}
                options={opts(&[(Objective::Sft, t.opt_sft), (Objective::Dpo, "DPO / IPO"), (Objective::Orpo, "ORPO"),
                    (Objective::Simpo, "SimPO / CPO"), (Objective::Kto, "KTO"), (Objective::RewardModel, t.opt_reward_model),
                    (Objective::Grpo, "GRPO"), (Objective::Ppo, "PPO")])}
                on_change={set::<String>(props, "obj")} />
            if obj.uses_reference() {
                <SelectField id="ref" label={t.reference} tip={t.reference_tip} value={id_of(&form.reference)}
                    options={opts(&[(Reference::Copy, t.opt_ref_copy), (Reference::DisabledAdapters, t.opt_ref_disabled),
                        (Reference::Precomputed, t.opt_ref_precomputed), (Reference::None, t.opt_ref_none)])}
                    on_change={set::<String>(props, "ref")} />
            }
            if obj == Objective::Grpo {
                <div class="row">
                    { number(props, t, "gens", t.generations, "×", t.generations_tip, form.generations) }
                    { number(props, t, "comp", t.completion, t.tokens, t.completion_tip, form.completion_tokens) }
                </div>
                { number(props, t, "vllm", t.vllm_gib, "GiB", t.vllm_gib_tip, form.vllm_gib) }
            }
            if obj == Objective::Ppo {
                { number(props, t, "comp", t.completion, t.tokens, t.completion_tip, form.completion_tokens) }
            }
        </>
    }
}

fn lora_inputs(props: &InputsProps, t: &'static Text) -> Html {
    let form = &props.form;
    let toggle = |m: Module| send::<Event>(props, Edit::ToggleTarget(m));
    let method = form.peft_method;
    // How the chosen method compares with LoRA on the same job: said in words when it barely matters.
    // How the chosen method compares with LoRA on the same job: said in words when it barely matters.
    let vs_lora = crate::advice::peft_vs_lora_pct(form).map(|pct| {
        if pct.abs() < 1.0 {
            t.peft_like_lora.to_string()
        } else {
            t.peft_vs_lora.replace("{pct}", &format!("{pct:+.0}%"))
        }
    });
    html! {
        <>
            <SelectField id="peft" label={t.peft_method} tip={t.peft_method_tip} value={id_of(&method)}
                options={opts(&[
                    (Method::Lora, "LoRA"), (Method::LoraFa, "LoRA-FA"), (Method::AdaLora, "AdaLoRA"),
                    (Method::Vera, "VeRA"), (Method::Ia3, "IA³"), (Method::Loha, "LoHa"), (Method::Lokr, "LoKr"),
                    (Method::Oft, "OFT"), (Method::Boft, "BOFT"), (Method::PromptTuning, t.opt_prompt_tuning),
                    (Method::PrefixTuning, t.opt_prefix_tuning), (Method::PTuning, "P-tuning"),
                    (Method::TrainableTokens, t.opt_trainable_tokens)])}
                on_change={set::<String>(props, "peft")} />
            if let Some(note) = vs_lora { <p class="hint" id="peft-vs-lora">{ note }</p> }
            if method.is_prompt() {
                { number(props, t, "vtok", t.virtual_tokens, t.tokens, t.virtual_tokens_tip, form.virtual_tokens) }
            } else if method == Method::TrainableTokens {
                { number(props, t, "ttok", t.trainable_tokens, t.tokens, t.trainable_tokens_tip, form.trainable_tokens) }
                <p class="hint" id="trainable-tokens">{ trainable_tokens_hint(form, t) }</p>
            } else {
            if matches!(method, Method::Oft | Method::Boft) {
                { number(props, t, "rank", t.oft_block_size, "b", t.oft_block_size_tip, form.lora_rank) }
            } else {
                { number(props, t, "rank", t.rank, "r", t.rank_tip, form.lora_rank) }
            }
            if method == Method::Boft {
                { number(props, t, "bfly", t.butterfly, "", t.butterfly_tip, form.butterfly_factors) }
            }
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
                { check("lora-embed", t.train_embed, t.train_embed_tip, form.train_embed, setting_flag(props, "embed")) }
                { check("lora-head", t.train_head, t.train_embed_tip, form.train_lm_head, setting_flag(props, "head")) }
                { check("lora-dora", "DoRA", t.dora_tip, form.dora, setting_flag(props, "dora")) }
                { check("lora-dropout", t.dropout, t.dropout_tip, form.lora_dropout, setting_flag(props, "dropout")) }
                if method == Method::Lora {
                    { check("lora-tokens", t.train_tokens, t.train_tokens_tip, form.lora_tokens, setting_flag(props, "ltok")) }
                }
            </div>
            if method == Method::Lora && form.lora_tokens {
                { number(props, t, "ttok", t.trainable_tokens, t.tokens, t.train_tokens_tip, form.trainable_tokens) }
                <p class="hint" id="trainable-tokens">{ trainable_tokens_hint(form, t) }</p>
            }
            }
        </>
    }
}

/// What trainable tokens train (`n · h`, [`crate::model::peft::trainable_tokens_params`]) and where their
/// memory goes.
fn trainable_tokens_hint(form: &Form, t: &'static Text) -> String {
    let arch = form.arch();
    let job = form.job();
    let params = format!(
        "{:.0}",
        crate::model::peft::trainable_tokens_params(&job, &arch)
    );
    // Digits in groups of three (204,800).
    let grouped: String = params
        .chars()
        .enumerate()
        .flat_map(|(i, c)| {
            let sep = i > 0 && (params.len() - i) % 3 == 0;
            sep.then_some(',').into_iter().chain([c])
        })
        .collect();
    let text = if form.peft_method == Method::Lora {
        t.lora_tokens_hint
    } else {
        t.trainable_tokens_hint
    };
    text.replace("{params}", &grouped)
        .replace(
            "{tokens}",
            &form.trainable_tokens.min(arch.vocab).to_string(),
        )
        .replace("{hidden}", &arch.hidden.to_string())
}

/// A vision-language model's images per sample and whether its tower trains (shown only for a model with a
/// vision tower), with the tokens an image becomes.
fn vision_inputs(props: &InputsProps, t: &'static Text) -> Html {
    let form = &props.form;
    let tokens = form.arch().vision.map(|v| {
        let side = f64::from(crate::model::vision::DEFAULT_MAX_PIXELS).sqrt();
        let n = v.image_tokens(crate::model::vision::DEFAULT_MAX_PIXELS).llm;
        t.image_tokens_hint
            .replace("{tokens}", &format!("{n:.0}"))
            .replace("{side}", &format!("{side:.0}"))
    });
    let trains = matches!(form.mode, Mode::Full | Mode::Lora | Mode::Qlora);
    html! {
        <div class="field vision" id="vision-inputs">
            { number(props, t, "images", t.images, t.units_images, t.images_tip, form.images) }
            if let Some(hint) = tokens { <p class="hint" id="image-tokens">{ hint }</p> }
            if trains {
                { check("vtower", t.train_vision, t.train_vision_tip, form.train_vision, setting_flag(props, "vtower")) }
            }
        </div>
    }
}

fn batch_inputs(props: &InputsProps, t: &'static Text) -> Html {
    let form = &props.form;
    html! {
        <fieldset>
            <legend>{ t.group_batch }</legend>
            <div class="row">
                { number(props, t, "batch", t.batch, t.sequences, t.batch_tip, form.micro_batch) }
                { number(props, t, "seq", t.seq, t.tokens, t.seq_tip, form.seq_len) }
            </div>
            { number(props, t, "accum", t.accum, t.steps, t.accum_tip, form.grad_accum) }
            <p class="hint">{ format!("{}: {} {}", t.effective_batch, props.effective_batch, t.sequences) }</p>
            <SelectField id="shapes" label={t.shapes} tip={t.shapes_tip} value={if form.variable_lengths { "variable" } else { "fixed" }}
                options={vec![("fixed".into(), t.opt_fixed_len.into()), ("variable".into(), t.opt_variable_len.into())]}
                on_change={shapes_picker(props)} />
            <SelectField id="ckpt" label={t.ckpt} tip={t.ckpt_tip} value={id_of(&form.checkpointing)}
                options={opts(&[(Checkpointing::Off, t.opt_off), (Checkpointing::Layer, t.opt_per_layer), (Checkpointing::Offload, t.opt_per_layer_offload)])}
                on_change={set::<String>(props, "ckpt")} />
            <SelectField id="attn" label={t.attn} tip={t.attn_tip} value={id_of(&form.attention)}
                options={opts(&[(AttentionImpl::Eager, "Eager"), (AttentionImpl::Sdpa, "SDPA"), (AttentionImpl::Flash2, "FlashAttention-2")])}
                on_change={set::<String>(props, "attn")} />
            <SelectField id="loss" label={t.loss} tip={t.loss_tip} value={id_of(&form.loss)}
                options={opts(&[(LossImpl::Fp32Logits, t.opt_loss_fp32), (LossImpl::Bf16Logits, t.opt_loss_16),
                    (LossImpl::Chunked, t.opt_loss_chunked), (LossImpl::Fused, t.opt_loss_fused),
                    (LossImpl::TrlFusedHead, t.opt_loss_trl_fused)])}
                on_change={set::<String>(props, "loss")} />
        </fieldset>
    }
}

fn inference_inputs(props: &InputsProps, t: &'static Text) -> Html {
    let form = &props.form;
    html! {
        <fieldset>
            <legend>{ t.group_inference }</legend>
            <div class="row">
                { number(props, t, "prompt", t.prompt, t.tokens, t.prompt_tip, form.prompt_tokens) }
                { number(props, t, "new", t.new_tokens, t.tokens, t.new_tokens_tip, form.new_tokens) }
            </div>
            { number(props, t, "conc", t.concurrent, t.sequences, t.concurrent_tip, form.concurrent) }
            <SelectField id="engine" label={t.engine} tip={t.engine_tip} value={id_of(&form.engine)}
                options={opts(&[(Engine::Vllm, "vLLM"), (Engine::Sglang, "SGLang"), (Engine::Transformers, "transformers generate")])}
                on_change={set::<String>(props, "engine")} />
            { number(props, t, "gmu", t.gpu_util, "%", t.gpu_util_tip, form.gpu_util_pct) }
            { check("eager", t.eager, t.eager_tip, form.enforce_eager, setting_flag(props, "eager")) }
            <div class="row">
                { number(props, t, "mns", t.max_num_seqs, t.sequences, t.max_num_seqs_tip, form.max_num_seqs) }
                { number(props, t, "block", t.block_size, t.tokens, t.block_size_tip, form.block_size) }
            </div>
            <SelectField id="kv" label={t.kv} tip={t.kv_tip} value={id_of(&form.kv_dtype)}
                options={opts(&[(KvDtype::Bf16, "bf16 (2 B)"), (KvDtype::Fp8, "fp8 (1 B)"), (KvDtype::Int8, "int8 (1 B)"), (KvDtype::Int4, "int4 (0.5 B)")])}
                on_change={set::<String>(props, "kv")} />
        </fieldset>
    }
}
