//! The request shape shared by the CLI and the page's JavaScript API: a [`Job`] as JSON whose model may be
//! named by catalog id instead of spelled out. Errors carry the path of the offending field.

use crate::catalog;
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
    Ok(job)
}

/// Parses a JSON request (empty text = the default job).
pub fn parse_job_json(text: &str) -> Result<Job, String> {
    if text.trim().is_empty() {
        return Ok(Job::default());
    }
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    job_from_value(value)
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
}
