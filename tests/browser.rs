//! Browser tests: the real app mounted in headless Chromium, asserted on its DOM.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn mount() -> web_sys::Element {
    let document = gloo::utils::document();
    let root = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&root).unwrap();
    yew::Renderer::<vramfit::ui::App>::with_root(root.clone()).render();
    root
}

#[wasm_bindgen_test]
async fn app_mounts_and_shows_title() {
    let root = mount();
    yew::scheduler::flush().await;
    let h1 = root.query_selector("h1").unwrap().expect("an h1");
    assert_eq!(h1.text_content().unwrap(), "vramfit");
}
