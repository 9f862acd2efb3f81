//! Reading what users paste: error logs (the OOM doctor) and training setups (command lines and configs).

pub mod diagnose;

pub use diagnose::{diagnose, Diagnosis, Hint, Kind, Numbers, Source};
pub mod setup_import;

pub use setup_import::{import_setup, SetupError, SetupImport};
