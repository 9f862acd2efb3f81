//! vramfit: does an LLM fine-tune or inference job fit in GPU memory and system RAM?
//!
//! Data flows one way: [`model`] (pure estimate) → [`advice`] (verdict and remedies) → [`ui`] (Yew page).
//! Only [`ui`] and [`web`] know they run in a browser; everything else is plain Rust, tested natively. They
//! exist only with the `web` feature (on by default), so the compiler keeps browser crates out of the core:
//! `cargo check --lib --no-default-features` builds everything else without yew, web-sys or wasm-bindgen.

pub mod advice;
pub mod api;
pub mod bytes;
pub mod catalog;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod doctor;
pub mod edit;
pub mod eval;
pub mod form;
pub mod hub;
#[cfg(not(target_arch = "wasm32"))]
pub mod hub_client;
pub mod i18n;
pub mod imports;
pub mod model;
pub mod settings;
pub mod share;
#[cfg(feature = "web")]
pub mod ui;
#[cfg(feature = "web")]
pub mod web;
