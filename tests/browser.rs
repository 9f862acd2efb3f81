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
        ..AppProps::default()
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

// ---- Hugging Face Hub loads, against tests/data/hub served on 127.0.0.1 by scripts/wasm-run ----

/// The fixture server's address (set by `scripts/wasm-run` when it compiles these tests).
fn hub_base() -> &'static str {
    option_env!("VRAMFIT_HUB_BASE")
        .expect("VRAMFIT_HUB_BASE is unset: run the browser tests through scripts/wasm-run")
}

fn source(timeout_ms: u32) -> vramfit::web::hub::HubSource {
    vramfit::web::hub::HubSource {
        base: hub_base().into(),
        timeout_ms,
    }
}

async fn fetch(id: &str) -> Result<vramfit::hub::HubModel, vramfit::hub::HubError> {
    let id = vramfit::hub::parse_id(id).unwrap();
    vramfit::web::hub::load(&source(10_000), &id).await
}

/// Waits `ms` milliseconds of real time (the network, unlike yew's scheduler, cannot be flushed).
async fn pause(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        gloo::utils::window()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .unwrap();
    });
    wasm_bindgen_futures::JsFuture::from(p).await.unwrap();
}

/// Polls (every 50 ms, at most `ms`) until `selector`'s text satisfies `done`; returns the text.
async fn wait_text(
    root: &web_sys::Element,
    selector: &str,
    ms: i32,
    done: impl Fn(&str) -> bool,
) -> String {
    let mut last = String::new();
    for _ in 0..ms / 50 {
        yew::scheduler::flush().await;
        if let Some(el) = root.query_selector(selector).unwrap() {
            last = el.text_content().unwrap_or_default();
            if done(&last) {
                return last;
            }
        }
        pause(50).await;
    }
    panic!("{selector} never got there; last text: {last:?}");
}

fn mount_hub(query: &str, lang: Lang, base: &str, timeout_ms: u32) -> web_sys::Element {
    let document = gloo::utils::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    let props = AppProps {
        query: Some(query.to_string().into()),
        lang: Some(lang),
        hub_base: Some(base.to_string().into()),
        hub_timeout_ms: Some(timeout_ms),
    };
    yew::Renderer::<App>::with_root_and_props(root.clone(), props).render();
    root
}

/// Types `id` into the model search and presses the load button it brings up.
async fn type_hub_id(root: &web_sys::Element, id: &str) {
    set_input(root, "#model-filter", id);
    yew::scheduler::flush().await;
    find::<web_sys::HtmlElement>(root, "#hub-load").click();
    yew::scheduler::flush().await;
}

#[wasm_bindgen_test]
async fn the_browser_fetch_reads_exact_weights_of_real_layouts() {
    use vramfit::hub::Dtype;
    let m = fetch("meta-llama/Llama-3.2-1B").await.unwrap();
    assert_eq!(
        m.version,
        Some(vramfit::hub::Version::Commit(
            "0000000000000000000000000000000000f1c0de".into()
        ))
    );
    let w = m.weights.as_ref().unwrap();
    assert_eq!(
        (w.bytes, w.tensors, w.parameters),
        (2_471_628_800, 146, Some(1_235_814_400))
    );

    // Two shards of a bitsandbytes 8-bit checkpoint: their headers sum to the index's total_size.
    let m = fetch("jeevanchaps/Meta-Llama3.1-8B-Instruct-assessment")
        .await
        .unwrap();
    let w = m.weights.as_ref().unwrap();
    assert_eq!(
        (w.files_read, w.bytes, w.index_total_size),
        (2, 9_086_705_888, Some(9_086_705_888))
    );

    // gpt-oss's MXFP4 experts (U8 blocks and scales) beside BF16 attention and embeddings.
    let m = fetch("openai/gpt-oss-20b").await.unwrap();
    let w = m.weights.as_ref().unwrap();
    assert_eq!(w.bytes, 13_761_264_768);
    let u8 = w.by_dtype.iter().find(|d| d.dtype == Dtype::U8).unwrap();
    assert_eq!(u8.bytes, 10_152_345_600);

    // A config with a bare Infinity (Python's json reads it; strict JSON does not).
    let m = fetch("nvidia/Nemotron-H-56B-Base-8K").await.unwrap();
    assert_eq!(m.imported().unwrap().arch.layers, 118);
    assert_eq!(m.weights, Err(vramfit::hub::HubError::NoSafetensors));
}

#[wasm_bindgen_test]
async fn the_browser_fetch_names_every_failure_and_never_hangs() {
    use vramfit::hub::HubError;
    assert!(matches!(
        fetch("meta-llama/Llama-3.1-8B").await,
        Err(HubError::Gated { status: 401, .. })
    ));
    assert!(matches!(
        fetch("meta-llama/Llama-3.3-70B-Instruct").await,
        Err(HubError::Gated { status: 403, .. })
    ));
    assert!(matches!(
        fetch("nobody/no-such-model").await,
        Err(HubError::NotFound { .. })
    ));
    let m = fetch("vramfit-test/truncated-header").await.unwrap();
    assert!(
        matches!(
            m.weights,
            Err(HubError::Truncated {
                expected: 16_800,
                got: 8_396,
                ..
            })
        ),
        "{:?}",
        m.weights
    );
    let m = fetch("vramfit-test/bogus-header-length").await.unwrap();
    assert!(matches!(m.weights, Err(HubError::HeaderTooLarge { length, .. }) if length == 1 << 40));
    // The fixture answers after 3 s; the load gives up at 1 s.
    let start = js_sys::Date::now();
    let id = vramfit::hub::parse_id("vramfit-test/slow").unwrap();
    let slow = vramfit::web::hub::load(&source(1_000), &id).await;
    assert_eq!(slow, Err(HubError::Timeout { seconds: 1 }));
    let took = js_sys::Date::now() - start;
    assert!(took < 2_500.0, "{took} ms");
    // Nothing listens on port 9: unreachable, at once.
    let down = vramfit::web::hub::HubSource {
        base: "http://127.0.0.1:9".into(),
        timeout_ms: 5_000,
    };
    let id = vramfit::hub::parse_id("meta-llama/Llama-3.2-1B").unwrap();
    assert_eq!(
        vramfit::web::hub::load(&down, &id).await,
        Err(HubError::Unreachable)
    );
}

#[wasm_bindgen_test]
async fn typing_a_hub_address_loads_the_model_and_links_it_by_id() {
    vramfit::web::hub::forget("meta-llama/Llama-3.2-1B");
    let root = mount_hub("", Lang::En, hub_base(), 10_000);
    yew::scheduler::flush().await;
    set_input(&root, "#model-filter", "not an id at all");
    yew::scheduler::flush().await;
    assert!(text(&root, "#hub-hint").contains("owner/name"));
    type_hub_id(&root, "https://huggingface.co/meta-llama/Llama-3.2-1B").await;
    let status = wait_text(&root, "#hub-status", 5_000, |t| t.contains("Loaded")).await;
    assert!(
        status.contains("meta-llama/Llama-3.2-1B") && status.contains("commit 0000000"),
        "{status}"
    );
    assert!(
        text(&root, "#hub-weights").contains("2.30 GiB, exact (BF16 2.30 GiB; 146 tensors in 1")
    );
    assert!(text(&root, "#hub-params").contains("1.236 B parameters"));
    let model: web_sys::HtmlSelectElement = find(&root, "#model");
    assert_eq!(model.value(), "custom");
    let layers: web_sys::HtmlInputElement = find(&root, "#arch-layers");
    assert_eq!(layers.value(), "16");
    // Kept for offline use, and named in the link.
    assert!(vramfit::web::hub::cached("meta-llama/Llama-3.2-1B").is_some());
    pause(400).await; // the page writes its URL back once typing pauses for 300 ms
    let query = gloo::utils::window().location().search().unwrap();
    assert!(
        query.contains("model=custom") && query.contains("hub=meta-llama%2FLlama-3.2-1B"),
        "{query}"
    );
}

#[wasm_bindgen_test]
async fn a_shared_link_opens_offline_from_the_saved_copy_or_falls_back_to_its_shape() {
    let id = "meta-llama/Llama-3.2-1B";
    let model = fetch(id).await.unwrap();
    vramfit::web::hub::remember(&model);
    let form = vramfit::form::Form {
        model: "custom".into(),
        custom_arch: model.imported().unwrap().arch,
        hub: id.into(),
        ..Default::default()
    };
    let link = vramfit::share::encode(&form);
    assert!(link.contains("hub=meta-llama%2FLlama-3.2-1B"), "{link}");
    let offline = "http://127.0.0.1:9";
    let root = mount_hub(&link, Lang::En, offline, 5_000);
    let status = wait_text(&root, "#hub-status", 3_000, |t| t.contains("saved copy")).await;
    assert!(status.contains(id), "{status}");
    assert!(text(&root, "#hub-weights").contains("2.30 GiB"));

    // No saved copy and no Hub: the link's own shape, with a notice.
    vramfit::web::hub::forget(id);
    let root = mount_hub(&link, Lang::En, offline, 5_000);
    let status = wait_text(&root, "#hub-status", 3_000, |t| {
        t.contains("Could not load")
    })
    .await;
    assert!(
        status.contains("could not be reached") && status.contains("shape saved in the link"),
        "{status}"
    );
    let layers: web_sys::HtmlInputElement = find(&root, "#arch-layers");
    assert_eq!(layers.value(), "16");
}

#[wasm_bindgen_test]
async fn a_link_naming_only_the_id_loads_the_model_and_its_quantization() {
    vramfit::web::hub::forget("openai/gpt-oss-20b");
    let root = mount_hub("hub=openai%2Fgpt-oss-20b", Lang::En, hub_base(), 10_000);
    wait_text(&root, "#hub-status", 5_000, |t| t.contains("Loaded")).await;
    assert!(text(&root, "#hub-status").contains("(ETag "));
    let weights: web_sys::HtmlSelectElement = find(&root, "#weights");
    // MXFP4 is a format of its own: the routed experts at 4.25 bits, the rest bf16.
    assert_eq!(weights.value(), "mxfp4");
    let quant = text(&root, "#hub-quant");
    assert!(
        quant.contains("mxfp4")
            && quant.contains("estimated as mxfp4")
            && !quant.contains("nearest"),
        "{quant}"
    );
    assert!(text(&root, "#hub-weights").contains("12.8 GiB"));
}

#[wasm_bindgen_test]
async fn gated_missing_and_slow_models_say_so_in_both_languages() {
    let root = mount_hub("", Lang::En, hub_base(), 1_000);
    yew::scheduler::flush().await;
    type_hub_id(&root, "meta-llama/Llama-3.1-8B").await;
    let msg = wait_text(&root, "#hub-status", 3_000, |t| t.contains("HTTP")).await;
    assert!(
        msg.contains("private or gated") && msg.contains("paste it into the import box"),
        "{msg}"
    );
    type_hub_id(&root, "meta-llama/Llama-3.3-70B-Instruct").await;
    let msg = wait_text(&root, "#hub-status", 3_000, |t| t.contains("403")).await;
    assert!(
        msg.contains("gated") && msg.contains("config.json"),
        "{msg}"
    );
    type_hub_id(&root, "nobody/no-such-model").await;
    let msg = wait_text(&root, "#hub-status", 3_000, |t| t.contains("404")).await;
    assert!(msg.contains("not found"), "{msg}");
    type_hub_id(&root, "vramfit-test/slow").await;
    assert!(text(&root, "#hub-status").contains("Fetching"));
    let msg = wait_text(&root, "#hub-status", 3_000, |t| !t.contains("Fetching")).await;
    assert!(msg.contains("did not answer within 1 s"), "{msg}");
    // The form never moved.
    let model: web_sys::HtmlSelectElement = find(&root, "#model");
    assert_eq!(model.value(), "llama-3.1-8b");

    let root = mount_hub("", Lang::Zh, hub_base(), 10_000);
    yew::scheduler::flush().await;
    type_hub_id(&root, "meta-llama/Llama-3.1-8B").await;
    let msg = wait_text(&root, "#hub-status", 3_000, |t| t.contains("HTTP")).await;
    assert!(msg.contains("本页面不发送令牌"), "{msg}");
    type_hub_id(&root, "vramfit-test/truncated-header").await;
    let msg = wait_text(&root, "#hub-status", 5_000, |t| t.contains("已从")).await;
    assert!(text(&root, "#hub-weights").contains("被截断"), "{msg}");
}

/// The number in a text (the first run of digits).
fn first_number(s: &str) -> Option<u32> {
    let digits: String = s
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[wasm_bindgen_test]
async fn the_curve_follows_the_inputs_and_crosses_where_the_solver_says() {
    let root = mount("varlen=0", Lang::En);
    yew::scheduler::flush().await;
    let crossing = first_number(&text(&root, "#curve-crossing")).expect("a crossing");
    let solver = first_number(&text(&root, "#solver-max-seq")).expect("a solver answer");
    assert_eq!(crossing, solver);
    let paths = root
        .query_selector_all("#curve path.area")
        .unwrap()
        .length();
    assert!(paths >= 3, "{paths} stacked areas");
    let before = root
        .query_selector("#curve svg")
        .unwrap()
        .unwrap()
        .inner_html();
    set_input(&root, "#batch", "1");
    yew::scheduler::flush().await;
    let after = root
        .query_selector("#curve svg")
        .unwrap()
        .unwrap()
        .inner_html();
    assert_ne!(before, after, "the curve redraws when the batch changes");
    let longer = first_number(&text(&root, "#curve-crossing")).unwrap();
    assert!(longer > crossing, "{longer} vs {crossing}");
    // The snippet quotes the prediction and measures both figures.
    let snippet = text(&root, "#verify-snippet");
    assert!(snippet.contains("max_memory_reserved()"), "{snippet}");
}

#[wasm_bindgen_test]
async fn the_serving_panel_shows_the_engine_plan() {
    let root = mount(
        "mode=inference&model=llama-3.1-8b&gpu=h100-sxm&prompt=30000&new=2000",
        Lang::En,
    );
    yew::scheduler::flush().await;
    let verdict = text(&root, "#serve-verdict");
    assert!(verdict.contains("tokens"), "{verdict}");
    let kv = text(&root, "#serve-kv");
    assert!(kv.contains("GiB"), "{kv}");
    // The solvers for the concurrent sequences set on the form, and the concurrency curve.
    assert!(text(&root, "#serve-users-context").contains("tokens"));
    assert!(root
        .query_selector("#serve-curve path.concurrency")
        .unwrap()
        .is_some());
    // A lower memory utilization leaves less for the KV cache.
    set_input(&root, "#gmu", "50");
    yew::scheduler::flush().await;
    assert_ne!(kv, text(&root, "#serve-kv"));
}

#[wasm_bindgen_test]
fn js_api_serve_plans_like_the_cli() {
    vramfit::web::install_js_api();
    let window = gloo::utils::window();
    let api = js_sys::Reflect::get(&window, &"vramfit".into()).unwrap();
    let f: js_sys::Function = js_sys::Reflect::get(&api, &"serve".into())
        .unwrap()
        .dyn_into()
        .unwrap();
    let arg =
        js_sys::JSON::parse(r#"{"model":"llama-3.1-8b","gpu_gib":79.19,"max_model_len":32768}"#)
            .unwrap();
    let plan = f.call1(&api, &arg).unwrap();
    let kv = js_sys::Reflect::get(&plan, &"kv_cache_gib".into())
        .unwrap()
        .as_f64()
        .unwrap();
    assert!(kv > 40.0 && kv < 70.0, "{kv}");
    assert!(f.call1(&api, &wasm_bindgen::JsValue::NULL).is_err());
}
