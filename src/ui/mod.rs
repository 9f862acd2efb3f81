//! The Yew page. Only this module and [`crate::web`] know about the browser.

mod app;

pub use app::App;
