//! The request shape shared by the CLI and the page's JavaScript API: a [`Job`] as JSON whose model may be
//! named by catalog id instead of spelled out. Errors carry the path of the offending field.

use crate::catalog;
use crate::form::Form;
use crate::model::{estimate, Estimate, Job};
use serde_json::Value;

/// Builds a job from a JSON value: every [`Job`] field is optional, and `"model": "<catalog id>"` may stand in
/// for `arch`. Errors name the field's path (`lora.rank: invalid value…`).
pub fn job_from_value(mut value: Value) -> Result<Job, String> {
    let model = match value.as_object_mut() {
        Some(obj) => obj.remove("model"),
        None => return Err(format!("expected an object, got {value}")),
    };
    let mut job: Job = serde_path_to_error::deserialize(value)
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    match model {
        None | Some(Value::Null) => {}
        Some(Value::String(id)) => {
            job.arch = catalog::model(&id)
                .ok_or_else(|| format!("model: no catalog model with id '{id}'"))?
                .arch()
                .clone();
        }
        Some(other) => return Err(format!("model: expected a catalog id string, got {other}")),
    }
    job.check()?;
    Ok(job)
}

/// Longest JSON request accepted (a job or form is a few hundred bytes; a pasted config a few KiB).
pub const MAX_REQUEST_BYTES: usize = 1 << 20;

/// Parses JSON text no longer than [`MAX_REQUEST_BYTES`]. `serde_json` stops at 128 levels of nesting with
/// an error, so neither size nor depth can exhaust memory or the stack.
pub fn parse_bounded(text: &str) -> Result<Value, String> {
    if text.len() > MAX_REQUEST_BYTES {
        return Err(format!(
            "the request is {} KiB; at most {} KiB is read",
            text.len() / 1024,
            MAX_REQUEST_BYTES / 1024
        ));
    }
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// Reads the page's form fields from JSON (every field optional; empty text = the default form) and checks
/// them as share links are checked ([`Form::check`]).
pub fn form_from_json(text: &str) -> Result<Form, String> {
    if text.trim().is_empty() {
        return Ok(Form::default());
    }
    let value = parse_bounded(text)?;
    let form: Form = serde_path_to_error::deserialize(value)
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    form.check()?;
    Ok(form)
}

/// Parses a JSON request (empty text = the default job).
pub fn parse_job_json(text: &str) -> Result<Job, String> {
    if text.trim().is_empty() {
        return Ok(Job::default());
    }
    job_from_value(parse_bounded(text)?)
}

/// Estimates a JSON request.
pub fn estimate_json(text: &str) -> Result<Estimate, String> {
    parse_job_json(text).map(|job| estimate(&job))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mode;

    #[test]
    fn catalog_ids_and_field_errors() {
        let job =
            parse_job_json(r#"{"model":"qwen2.5-7b","mode":"qlora","micro_batch":2}"#).unwrap();
        assert_eq!(job.arch.hidden, 3584);
        assert_eq!(job.mode, Mode::Qlora);
        assert_eq!(job.micro_batch, 2);
        let err = parse_job_json(r#"{"micro_batch":"two"}"#).unwrap_err();
        assert!(err.starts_with("micro_batch:"), "{err}");
        let err = parse_job_json(r#"{"lora":{"rank":-1}}"#).unwrap_err();
        assert!(err.starts_with("lora.rank:"), "{err}");
        assert!(parse_job_json(r#"{"model":"nope"}"#)
            .unwrap_err()
            .starts_with("model:"));
        assert!(parse_job_json("").is_ok());
    }

    #[test]
    fn deep_huge_and_out_of_range_requests_are_refused_with_a_message() {
        let deep = format!("{}{}", "{\"arch\":".repeat(5000), "}".repeat(5000));
        assert!(parse_job_json(&deep)
            .unwrap_err()
            .contains("recursion limit"));
        let huge = format!("{{\"notes\":\"{}\"}}", "x".repeat(MAX_REQUEST_BYTES));
        assert!(parse_job_json(&huge).unwrap_err().contains("at most"));
        let err = parse_job_json(r#"{"dataset_gib":1e300}"#).unwrap_err();
        assert!(err.starts_with("dataset_gib"), "{err}");
        let err = form_from_json(r#"{"custom_arch":{"hidden":0}}"#).unwrap_err();
        assert!(err.starts_with("custom_arch.hidden"), "{err}");
        let err = form_from_json(r#"{"micro_batch":4294967295}"#).unwrap_err();
        assert!(err.starts_with("micro_batch"), "{err}");
        assert_eq!(form_from_json("").unwrap(), Form::default());
    }
}
