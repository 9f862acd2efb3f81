//! Serves `tests/data/hub` as a local Hugging Face Hub for the browser tests (`scripts/wasm-run` starts it):
//! `cargo run --example hub_server -- [ROOT] [PORT]`; prints `http://127.0.0.1:PORT` once listening, then
//! serves until killed. See `tests/support/hub_server.rs`.

#[path = "../tests/support/hub_server.rs"]
mod hub_server;

fn main() {
    let mut args = std::env::args().skip(1);
    let root = args.next().unwrap_or_else(|| "tests/data/hub".into());
    let port = args.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    match hub_server::start(root.into(), port) {
        Ok(port) => {
            println!("http://127.0.0.1:{port}");
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("hub_server: {e}");
            std::process::exit(1);
        }
    }
}
