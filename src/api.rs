//! The request shape shared by the CLI and the page's JavaScript API: a [`Job`] as JSON whose model may be
//! named by catalog id instead of spelled out. Errors carry the path of the offending field.

use crate::catalog::{self, import};
use crate::form::Form;
use crate::model::{
    estimate, serve_plan, Architecture, Estimate, Job, ModelDtype, ServePlan, ServeRequest,
};
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

/// A serving request read from JSON: the model's shape, the serving settings and, for the solvers, how many
/// concurrent users to plan for.
#[derive(Clone, Debug, PartialEq)]
pub struct ServeInput {
    pub arch: Architecture,
    pub request: ServeRequest,
    /// `users`: concurrent requests the CLI's solvers plan for, when given.
    pub users: Option<u32>,
}

/// `max_position_embeddings` of a catalog model.
fn catalog_max_positions(id: &str) -> Option<u32> {
    catalog::model(id).and_then(|m| m.max_position_embeddings())
}

/// The dtype a config declares (`torch_dtype`, or `dtype` in recent transformers).
fn config_dtype(config: &Value) -> Option<ModelDtype> {
    let name = config
        .get("torch_dtype")
        .or_else(|| config.get("dtype"))
        .and_then(Value::as_str)?;
    serde_json::from_value(Value::String(name.to_string())).ok()
}

/// Reads a serving request: a JSON object with the model as `model` (catalog id), `arch` (vramfit's shape) or
/// `config` (a Hugging Face `config.json` object), the GPU as `gpu` (catalog id; its usable memory stands for
/// the total vLLM sees) or `gpu_gib`, optionally `users`, and every [`ServeRequest`] field. Parsed with
/// [`parse_bounded`]; sizes are checked against `crate::model::limits`; errors name the field.
pub fn serve_input_from_json(text: &str) -> Result<ServeInput, String> {
    let mut value = parse_bounded(text)?;
    let Some(obj) = value.as_object_mut() else {
        return Err(format!("expected an object, got {value}"));
    };
    let model = obj.remove("model");
    let arch = obj.remove("arch");
    let config = obj.remove("config");
    let gpu = obj.remove("gpu");
    let users = obj.remove("users");
    let mut request: ServeRequest = serde_path_to_error::deserialize(value)
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    let given = [&model, &arch, &config]
        .iter()
        .filter(|v| !matches!(v, None | Some(Value::Null)))
        .count();
    if given > 1 {
        return Err("model: give one of model, arch or config".into());
    }
    let (arch, max_positions) = match (model, arch, config) {
        (Some(Value::String(id)), _, _) => {
            let entry = catalog::model(&id)
                .ok_or_else(|| format!("model: no catalog model with id '{id}'"))?;
            (entry.arch().clone(), catalog_max_positions(&id))
        }
        (Some(m), _, _) if !m.is_null() => {
            return Err(format!("model: expected a catalog id string, got {m}"))
        }
        (_, Some(a), _) if !a.is_null() => {
            let arch: Architecture = serde_path_to_error::deserialize(a)
                .map_err(|e| format!("arch.{}: {}", e.path(), e.inner()))?;
            (arch, None)
        }
        (_, _, Some(c)) if !c.is_null() => {
            let imported = import::parse_config(&c).map_err(|e| format!("config: {e}"))?;
            if request.weights.is_none() {
                request.weights = imported.weights;
            }
            if request.dtype.is_none() {
                request.dtype = config_dtype(&c);
            }
            (imported.arch, import::max_positions(&c))
        }
        _ => return Err("model: give a catalog id (model), an arch or a config".into()),
    };
    if request.max_position_embeddings.is_none() {
        request.max_position_embeddings = max_positions;
    }
    match gpu {
        None | Some(Value::Null) => {}
        Some(Value::String(id)) => {
            let g =
                catalog::gpu(&id).ok_or_else(|| format!("gpu: no catalog GPU with id '{id}'"))?;
            request.gpu_gib = request.gpu_gib.or(Some(g.usable_gib));
            request.gpu_name = request.gpu_name.or_else(|| Some(g.name.clone()));
        }
        Some(other) => return Err(format!("gpu: expected a catalog id string, got {other}")),
    }
    let users = match users {
        None | Some(Value::Null) => None,
        Some(v) => {
            let n = v
                .as_u64()
                .filter(|n| *n <= u64::from(u32::MAX))
                .ok_or_else(|| format!("users: expected a whole number, got {v}"))?;
            crate::model::limits::in_range("users", n as u32, 1, crate::model::limits::MAX_BATCH)?;
            Some(n as u32)
        }
    };
    arch.check().map_err(|e| format!("arch.{e}"))?;
    request.check()?;
    Ok(ServeInput {
        arch,
        request,
        users,
    })
}

/// Plans a JSON serving request (see [`serve_input_from_json`]).
pub fn serve_json(text: &str) -> Result<ServePlan, String> {
    let input = serve_input_from_json(text)?;
    serve_plan(&input.arch, &input.request)
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

    #[test]
    fn serve_requests_from_json() {
        let p = serve_json(
            r#"{"model":"llama-3.1-8b","gpu":"h100-sxm","gpu_memory_utilization":0.95}"#,
        )
        .unwrap();
        // The catalog's max_position_embeddings (131072) is the default context; H100: 8192 / 1024.
        assert_eq!(p.max_model_len, 131_072);
        assert_eq!((p.max_num_batched_tokens, p.max_num_seqs), (8192, 1024));
        assert!(p.fits && p.kv_cache_gib > 50.0);
        let p = serve_json(r#"{"model":"llama-3.1-8b","gpu":"a100-80gb","max_model_len":4096}"#)
            .unwrap();
        assert_eq!((p.max_num_batched_tokens, p.max_num_seqs), (2048, 256));
        let cfg = r#"{"config":{"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,
            "max_position_embeddings":8192,"torch_dtype":"float16"},"gpu_gib":79.19,"tensor_parallel":2}"#;
        let input = serve_input_from_json(cfg).unwrap();
        assert_eq!(input.request.max_position_embeddings, Some(8192));
        assert_eq!(input.request.dtype, Some(ModelDtype::Fp16));
        assert_eq!(serve_json(cfg).unwrap().tensor_parallel, 2);
        let arch = r#"{"arch":{"layers":2,"hidden":64,"heads":4,"kv_heads":4,"head_dim":16,"vocab":100},
            "gpu_gib":1,"max_model_len":128,"users":3}"#;
        assert_eq!(serve_input_from_json(arch).unwrap().users, Some(3));
    }

    #[test]
    fn bad_serve_requests_name_the_field() {
        let cases = [
            (r#"{"gpu_gib":80,"max_model_len":8}"#, "model"),
            (r#"{"model":"nope","gpu_gib":80}"#, "model"),
            (r#"{"model":"llama-3.1-8b","gpu":"nope"}"#, "gpu"),
            (r#"{"model":"llama-3.1-8b","max_model_len":8}"#, "gpu_gib"),
            (
                r#"{"model":"llama-3.1-8b","gpu_gib":80,"max_num_seqs":0}"#,
                "max_num_seqs",
            ),
            (r#"{"model":"llama-3.1-8b","gpu_gib":1e300}"#, "gpu_gib"),
            (
                r#"{"model":"llama-3.1-8b","gpu_gib":80,"gpu_memory_utilization":2}"#,
                "gpu_memory_utilization",
            ),
            (
                r#"{"model":"llama-3.1-8b","gpu_gib":80,"kv_dtype":"int3"}"#,
                "kv_dtype",
            ),
            (
                r#"{"model":"llama-3.1-8b","gpu_gib":80,"max_model_len":-1}"#,
                "max_model_len",
            ),
            (
                r#"{"model":"llama-3.1-8b","gpu_gib":80,"tensor_paralel":2}"#,
                "tensor_paralel: unknown field",
            ),
            (
                r#"{"model":"llama-3.1-8b","gpu_gib":80,"users":0}"#,
                "users",
            ),
            (
                r#"{"arch":{"hidden":0},"gpu_gib":80,"max_model_len":8}"#,
                "arch.hidden",
            ),
            (r#"{"config":{"hidden_size":8},"gpu_gib":80}"#, "config"),
            (
                r#"{"model":"llama-3.1-8b","arch":{},"gpu_gib":80}"#,
                "model",
            ),
            ("[1]", "expected an object"),
        ];
        for (text, field) in cases {
            let err = serve_json(text).unwrap_err();
            assert!(
                err.starts_with(field) || err.contains(field),
                "{text}: {err}"
            );
        }
        let deep = format!("{}{}", "{\"arch\":".repeat(5000), "}".repeat(5000));
        assert!(serve_json(&deep).unwrap_err().contains("recursion limit"));
    }
}
