//! Browser edges (URL, storage, clipboard, WebGPU). Each has a native fallback so the pure code never cares.

/// Mounts the app into `#app` (browser only).
#[cfg(target_arch = "wasm32")]
pub fn start() {
    let root = gloo::utils::document()
        .get_element_by_id("app")
        .expect("index.html has #app");
    yew::Renderer::<crate::ui::App>::with_root(root).render();
}
