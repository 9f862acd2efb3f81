//! The Yew page. Only this module and [`crate::web`] know about the browser.

mod advice_panel;
mod app;
mod curve_panel;
mod doctor_panel;
mod fields;
mod hub_status;
pub use crate::i18n;
mod import_box;
mod inputs;
mod results;
mod serve_panel;
mod state;
mod verify_panel;

pub use app::{App, AppProps};
