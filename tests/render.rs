//! Native render tests: components rendered to HTML with yew's server renderer, no browser needed.
#![cfg(not(target_arch = "wasm32"))]

use vramfit::ui::App;

async fn render_app() -> String {
    yew::LocalServerRenderer::<App>::new().render().await
}

#[tokio::test]
async fn app_renders_title() {
    let html = render_app().await;
    assert!(html.contains("vramfit"), "{html}");
}
