//! vramfit: does an LLM fine-tune or inference job fit in GPU memory and system RAM?
//!
//! Data flows one way: [`model`] (pure estimate) → [`advice`] (verdict and remedies) → [`ui`] (Yew page).
//! Only [`ui`] and [`web`] know they run in a browser; everything else is plain Rust, tested natively.

pub mod advice;
pub mod api;
pub mod bytes;
pub mod catalog;
#[cfg(not(target_arch = "wasm32"))]
pub mod cli;
pub mod doctor;
pub mod eval;
pub mod form;
pub mod model;
pub mod share;
pub mod ui;
pub mod web;
