//! Leaf inputs. Each parses its own text and emits domain values, never raw events.

use yew::prelude::*;

/// Props of [`NumberField`].
#[derive(Properties, PartialEq)]
pub struct NumberFieldProps {
    /// Element id (also the label's `for`).
    pub id: AttrValue,
    pub label: AttrValue,
    /// Unit shown after the input ("tokens", "GiB").
    pub unit: AttrValue,
    /// Tooltip: what this input changes.
    pub tip: AttrValue,
    pub value: u32,
    pub min: u32,
    pub max: u32,
    /// Message template with `{min}` and `{max}`.
    pub error_text: AttrValue,
    /// Called with every valid value.
    pub on_change: Callback<u32>,
}

/// A whole-number input. Invalid text shows a message beside the field and keeps the last good value.
#[component]
pub fn NumberField(props: &NumberFieldProps) -> Html {
    let text = use_state(|| props.value.to_string());
    let error = use_state(|| false);
    {
        // An outside change (a remedy, a restored link) replaces the text unless the user is mid-edit on it.
        let text = text.clone();
        let error = error.clone();
        use_effect_with(props.value, move |v| {
            if text.trim().parse::<u32>().ok() != Some(*v) {
                text.set(v.to_string());
                error.set(false);
            }
        });
    }
    let oninput = {
        let (text, error) = (text.clone(), error.clone());
        let (min, max, cb) = (props.min, props.max, props.on_change.clone());
        Callback::from(move |e: InputEvent| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            let raw = input.value();
            match raw.trim().parse::<u32>() {
                Ok(v) if (min..=max).contains(&v) => {
                    error.set(false);
                    cb.emit(v);
                }
                _ => error.set(true),
            }
            text.set(raw);
        })
    };
    let msg = props
        .error_text
        .replace("{min}", &props.min.to_string())
        .replace("{max}", &props.max.to_string());
    let err_id = format!("{}-err", props.id);
    html! {
        <div class={classes!("field", (*error).then_some("invalid"))} title={props.tip.clone()}>
            <label for={props.id.clone()}>{ &props.label }</label>
            <div class="with-unit">
                <input id={props.id.clone()} type="text" inputmode="numeric" value={(*text).clone()}
                    aria-invalid={error.to_string()} aria-describedby={err_id.clone()} {oninput} />
                <span class="unit">{ &props.unit }</span>
            </div>
            <div class="error" id={err_id} role="alert">{ if *error { msg } else { String::new() } }</div>
        </div>
    }
}

/// Props of [`SelectField`].
#[derive(Properties, PartialEq)]
pub struct SelectFieldProps {
    pub id: AttrValue,
    pub label: AttrValue,
    pub tip: AttrValue,
    /// `(value, label)` pairs.
    pub options: Vec<(AttrValue, AttrValue)>,
    pub value: AttrValue,
    pub on_change: Callback<String>,
}

/// A labelled `<select>`.
#[component]
pub fn SelectField(props: &SelectFieldProps) -> Html {
    let onchange = {
        let cb = props.on_change.clone();
        Callback::from(move |e: Event| {
            let select: web_sys::HtmlSelectElement = e.target_unchecked_into();
            cb.emit(select.value());
        })
    };
    html! {
        <div class="field" title={props.tip.clone()}>
            <label for={props.id.clone()}>{ &props.label }</label>
            <select id={props.id.clone()} {onchange}>
                { for props.options.iter().map(|(v, l)| html! {
                    <option value={v.clone()} selected={*v == props.value}>{ l }</option>
                }) }
            </select>
        </div>
    }
}
