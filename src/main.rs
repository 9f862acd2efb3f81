//! Entry point. In the browser (wasm32) it mounts the Yew app; natively it runs the command-line tool.

#[cfg(target_arch = "wasm32")]
fn main() {
    vramfit::web::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(vramfit::cli::run(std::env::args().skip(1).collect()));
}
