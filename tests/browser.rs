//! Browser tests: the real app mounted in headless Chromium, asserted on its DOM.
#![cfg(target_arch = "wasm32")]

use vramfit::ui::i18n::Lang;
use vramfit::ui::{App, AppProps};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn mount(query: &str, lang: Lang) -> web_sys::Element {
    let document = gloo::utils::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let props = AppProps {
        query: Some(query.to_string().into()),
        lang: Some(lang),
    };
    yew::Renderer::<App>::with_root_and_props(root.clone(), props).render();
    root
}

fn text(root: &web_sys::Element, selector: &str) -> String {
    root.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("no {selector}"))
        .text_content()
        .unwrap_or_default()
}

/// The element matching `selector`, as type `T`.
fn find<T: JsCast>(root: &web_sys::Element, selector: &str) -> T {
    root.query_selector(selector)
        .unwrap()
        .unwrap_or_else(|| panic!("no {selector}"))
        .dyn_into()
        .unwrap_or_else(|_| panic!("{selector} has another type"))
}

fn set_input(root: &web_sys::Element, selector: &str, value: &str) {
    let input: web_sys::HtmlInputElement = find(root, selector);
    input.set_value(value);
    let event = web_sys::InputEvent::new("input").unwrap();
    input.dispatch_event(&event).unwrap();
}

#[wasm_bindgen_test]
async fn changing_batch_updates_verdict_and_chart() {
    let root = mount("seq=4096&ckpt=off", Lang::En);
    yew::scheduler::flush().await;
    let before = text(&root, "#verdict");
    let chart_before = root
        .query_selector(".chart svg")
        .unwrap()
        .unwrap()
        .inner_html();
    set_input(&root, "#batch", "64");
    yew::scheduler::flush().await;
    let after = text(&root, "#verdict");
    assert_ne!(before, after);
    assert!(after.contains("Does not fit"), "{after}");
    assert_ne!(
        chart_before,
        root.query_selector(".chart svg")
            .unwrap()
            .unwrap()
            .inner_html()
    );
}

#[wasm_bindgen_test]
async fn a_link_restores_its_state() {
    let root = mount("model=qwen2.5-7b&gpu=a100-80gb&batch=2", Lang::En);
    yew::scheduler::flush().await;
    let model: web_sys::HtmlSelectElement = find(&root, "#model");
    assert_eq!(model.value(), "qwen2.5-7b");
    let batch: web_sys::HtmlInputElement = find(&root, "#batch");
    assert_eq!(batch.value(), "2");
    assert!(text(&root, "#verdict").contains("A100"));
}

#[wasm_bindgen_test]
async fn garbage_link_shows_defaults_and_a_notice() {
    let root = mount("%%%&batch=lots&<script>=1", Lang::En);
    yew::scheduler::flush().await;
    assert!(text(&root, "#link-notice").contains("batch=lots"));
    let batch: web_sys::HtmlInputElement = find(&root, "#batch");
    assert_eq!(batch.value(), "4");
}

#[wasm_bindgen_test]
async fn language_switch_changes_strings() {
    let root = mount("", Lang::En);
    yew::scheduler::flush().await;
    assert!(text(&root, "legend").contains("Model & hardware"));
    let button: web_sys::HtmlElement = find(&root, "#lang-switch");
    button.click();
    yew::scheduler::flush().await;
    assert!(text(&root, "legend").contains("模型与硬件"));
}

#[wasm_bindgen_test]
async fn bad_number_shows_message_and_keeps_state() {
    let root = mount("", Lang::En);
    yew::scheduler::flush().await;
    let before = text(&root, "#verdict");
    set_input(&root, "#batch", "0");
    yew::scheduler::flush().await;
    assert!(text(&root, "#batch-err").contains("whole number"));
    assert_eq!(before, text(&root, "#verdict"));
}

fn set_textarea(root: &web_sys::Element, selector: &str, value: &str) {
    let area: web_sys::HtmlTextAreaElement = find(root, selector);
    area.set_value(value);
    area.dispatch_event(&web_sys::InputEvent::new("input").unwrap())
        .unwrap();
}

#[wasm_bindgen_test]
async fn pasting_a_config_switches_to_the_imported_model() {
    let root = mount("", Lang::En);
    yew::scheduler::flush().await;
    set_textarea(
        &root,
        "#import-text",
        r#"{"model_type":"qwen2","hidden_size":896,"num_hidden_layers":24,"num_attention_heads":14,
            "num_key_value_heads":2,"intermediate_size":4864,"vocab_size":151936,"tie_word_embeddings":true}"#,
    );
    yew::scheduler::flush().await;
    assert!(text(&root, "#import-status").contains("0.49 B"));
    let model: web_sys::HtmlSelectElement = find(&root, "#model");
    assert_eq!(model.value(), "custom");
    let layers: web_sys::HtmlInputElement = find(&root, "#arch-layers");
    assert_eq!(layers.value(), "24");
}

#[wasm_bindgen_test]
async fn a_broken_paste_names_the_field_and_keeps_the_form() {
    let root = mount("model=qwen2.5-7b", Lang::En);
    yew::scheduler::flush().await;
    let before = text(&root, "#verdict");
    set_textarea(
        &root,
        "#import-text",
        r#"{"hidden_size": 4096, "num_hidden_layers": "many"}"#,
    );
    yew::scheduler::flush().await;
    assert!(text(&root, "#import-status").contains("num_hidden_layers"));
    let model: web_sys::HtmlSelectElement = find(&root, "#model");
    assert_eq!(model.value(), "qwen2.5-7b");
    assert_eq!(before, text(&root, "#verdict"));
}

#[wasm_bindgen_test]
async fn an_impossible_custom_shape_is_named_beside_the_editor() {
    let root = mount("model=custom", Lang::En);
    yew::scheduler::flush().await;
    set_input(&root, "#arch-kv", "4000");
    yew::scheduler::flush().await;
    assert!(
        text(&root, "#arch-error").contains("kv_heads"),
        "{}",
        text(&root, "#arch-error")
    );
    assert!(root.query_selector("#arch-error").unwrap().is_some());
}

fn call_estimate(job: &str) -> Result<wasm_bindgen::JsValue, wasm_bindgen::JsValue> {
    vramfit::web::install_js_api();
    let window = gloo::utils::window();
    let api = js_sys::Reflect::get(&window, &"vramfit".into()).unwrap();
    let f: js_sys::Function = js_sys::Reflect::get(&api, &"estimate".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    let arg = js_sys::JSON::parse(job).unwrap();
    f.call1(&api, &arg)
}

#[wasm_bindgen_test]
fn js_api_returns_a_plain_object() {
    let out = call_estimate(r#"{"model":"llama-3.1-8b","mode":"qlora","micro_batch":2}"#).unwrap();
    let total = js_sys::Reflect::get(&out, &"device_total".into())
        .unwrap()
        .as_f64()
        .unwrap();
    assert!(
        total > 4.0 * 1073741824.0 && total < 40.0 * 1073741824.0,
        "{total}"
    );
    let gpu = js_sys::Reflect::get(&out, &"gpu".into()).unwrap();
    assert!(js_sys::Array::is_array(&gpu));
}

#[wasm_bindgen_test]
fn js_api_throws_an_error_naming_the_field() {
    let err = call_estimate(r#"{"micro_batch":"lots"}"#).unwrap_err();
    let msg: String = err.dyn_into::<js_sys::Error>().unwrap().message().into();
    assert!(msg.contains("micro_batch"), "{msg}");
    let err = call_estimate("null").unwrap_err();
    assert!(err.is_instance_of::<js_sys::Error>());
}

/// The test browser starts with `--enable-unsafe-webgpu` (webdriver.json), so a software adapter exists:
/// its info is read. (The end-to-end test runs without WebGPU and checks the page stays quiet.)
#[wasm_bindgen_test]
async fn webgpu_adapter_info_is_read_when_present() {
    let info = vramfit::web::webgpu_info().await.expect("an adapter");
    assert!(
        !info.vendor.is_empty() || !info.architecture.is_empty(),
        "{info:?}"
    );
    assert!(info.max_buffer_size > 0.0);
}

#[wasm_bindgen_test]
async fn clicking_a_remedy_applies_it() {
    let root = mount("ckpt=off&seq=4096&gpu=a100-80gb", Lang::En);
    yew::scheduler::flush().await;
    let before = text(&root, "#verdict");
    let first: web_sys::HtmlElement = find(&root, "#remedy-0");
    let label = first.text_content().unwrap_or_default();
    first.click();
    yew::scheduler::flush().await;
    assert_ne!(
        before,
        text(&root, "#verdict"),
        "applying {label} changed nothing"
    );
}

#[wasm_bindgen_test]
async fn the_doctor_reads_a_pasted_oom() {
    let root = mount("", Lang::En);
    yew::scheduler::flush().await;
    set_textarea(
        &root,
        "#doctor-text",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.66 GiB is free.",
    );
    yew::scheduler::flush().await;
    assert_eq!(text(&root, "#diagnosis-kind"), "GPU memory ran out");
    assert!(text(&root, "#diagnosis").contains("23.65 GiB"));
    set_textarea(
        &root,
        "#doctor-text",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    );
    yew::scheduler::flush().await;
    assert_eq!(text(&root, "#diagnosis-kind"), "Not a memory problem");
}

#[wasm_bindgen_test]
async fn pasting_a_training_command_fills_the_form() {
    let root = mount("", Lang::En);
    yew::scheduler::flush().await;
    set_textarea(
        &root,
        "#import-text",
        "python train.py --per_device_train_batch_size 2 --max_seq_length 1024 --wandb_project x",
    );
    yew::scheduler::flush().await;
    let batch: web_sys::HtmlInputElement = find(&root, "#batch");
    assert_eq!(batch.value(), "2");
    let seq: web_sys::HtmlInputElement = find(&root, "#seq");
    assert_eq!(seq.value(), "1024");
    assert!(text(&root, "#import-status").contains("wandb_project"));
}
