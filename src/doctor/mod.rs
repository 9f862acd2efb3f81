//! Reading what users paste: error logs (the OOM doctor) and training setups (command lines and configs).

pub mod diagnose;

pub use diagnose::{diagnose, Diagnosis, Hint, Kind, Numbers, Source};
