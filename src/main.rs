//! Entry point. In the browser (wasm32) it mounts the Yew app; natively it runs the command-line tool.

#[cfg(all(target_arch = "wasm32", feature = "web"))]
fn main() {
    vramfit::web::start();
}

/// Without the `web` feature there is no page to mount.
#[cfg(all(target_arch = "wasm32", not(feature = "web")))]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(vramfit::cli::run(std::env::args().skip(1).collect()));
}
