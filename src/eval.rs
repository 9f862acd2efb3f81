//! Checks the model against measured runs: each reference case (one JSON object a line, schema in the
//! shared data README) becomes a [`Job`], the model predicts the metric the case measured, and the errors
//! are summarized. Pure: text in, results out; the CLI does the file reading and printing.

use crate::bytes::{GB, GIB};
use crate::catalog::{self, import};
use crate::model::{
    estimate, AttentionImpl, BandKind, Checkpointing, Job, KvDtype, LossImpl, Mode, Module,
    Offload, Optimizer, Parallelism, Precision, Stack, Version, WeightFormat,
};
use serde::Serialize;
use serde_json::Value;

/// One evaluated case.
#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub tier: String,
    pub task: String,
    pub framework: String,
    /// Which total was compared: `allocated`, `reserved` or `device`.
    pub metric: String,
    pub predicted_gib: f64,
    pub measured_gib: f64,
    /// (predicted − measured) / measured · 100.
    pub error_pct: f64,
    /// Which error band the job draws from.
    pub band_kind: BandKind,
    /// For a reserved-memory reading of one GPU: `max_memory_reserved` from the block-level replay of the
    /// caching allocator ([`crate::model::block_replay`]), where the job is in its scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayed_gib: Option<f64>,
}

/// A case that could not be evaluated, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub id: String,
    pub reason: String,
}

/// Everything an evaluation produced.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub results: Vec<CaseResult>,
    pub skipped: Vec<Skipped>,
}

/// Median and 90th percentile of absolute errors, in percent.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Stats {
    pub n: usize,
    pub median_abs_pct: f64,
    pub p90_abs_pct: f64,
}

/// Nearest-rank percentile of absolute errors (`q` in 0..=1); 0 for no results.
pub fn stats<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> Stats {
    let mut abs: Vec<f64> = results.into_iter().map(|r| r.error_pct.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let pick = |q: f64| -> f64 {
        if abs.is_empty() {
            return 0.0;
        }
        let rank = ((q * abs.len() as f64).ceil() as usize).clamp(1, abs.len());
        abs[rank - 1]
    };
    Stats {
        n: abs.len(),
        median_abs_pct: pick(0.5),
        p90_abs_pct: pick(0.9),
    }
}

/// Cases whose prediction is more than 10% below the measured value: a "fits" that would run out of memory.
pub fn under_predicted<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> usize {
    results.into_iter().filter(|r| r.error_pct < -10.0).count()
}

/// Nearest-rank quantile `q` of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 1.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// One row of the band table: the spread of `measured / predicted` for one kind of job.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct BandRow {
    pub kind: BandKind,
    pub n: usize,
    pub p10: f64,
    pub p90: f64,
}

/// The 10th and 90th percentile of `measured / predicted` by kind of job, from which
/// [`BandKind::ratio_range`] is set.
pub fn band_table<'a>(results: impl IntoIterator<Item = &'a CaseResult> + Clone) -> Vec<BandRow> {
    [
        BandKind::Full,
        BandKind::Lora,
        BandKind::Qlora,
        BandKind::Inference,
    ]
    .into_iter()
    .map(|kind| {
        let mut ratios: Vec<f64> = results
            .clone()
            .into_iter()
            .filter(|r| r.band_kind == kind)
            .map(|r| r.measured_gib / r.predicted_gib)
            .filter(|x| x.is_finite())
            .collect();
        ratios.sort_by(f64::total_cmp);
        BandRow {
            kind,
            n: ratios.len(),
            p10: quantile(&ratios, 0.1),
            p90: quantile(&ratios, 0.9),
        }
    })
    .collect()
}

/// Share of cases whose measured value lies inside the model's band, and the count above its high end
/// (a "fits" from the band that would still run out of memory).
pub fn band_coverage<'a>(results: impl IntoIterator<Item = &'a CaseResult>) -> (f64, usize) {
    let (mut n, mut inside, mut above) = (0usize, 0usize, 0usize);
    for r in results {
        let (lo, hi) = r.band_kind.ratio_range();
        let ratio = r.measured_gib / r.predicted_gib;
        n += 1;
        if ratio > hi.max(1.0) {
            above += 1;
        } else if ratio >= lo.min(1.0) {
            inside += 1;
        }
    }
    (
        if n == 0 {
            0.0
        } else {
            inside as f64 / n as f64
        },
        above,
    )
}

/// Evaluates every line of a JSONL text (blank lines ignored; unparsable lines are skipped with a reason).
pub fn evaluate_jsonl(text: &str) -> Report {
    let mut report = Report::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                report.skipped.push(Skipped {
                    id: format!("line {}", n + 1),
                    reason: format!("not JSON: {e}"),
                });
                continue;
            }
        };
        let id = case
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        match evaluate_case(&case) {
            Ok(r) => report.results.push(r),
            Err(reason) => report.skipped.push(Skipped { id, reason }),
        }
    }
    report
}

/// Whether a case ran under DeepSpeed: its `engine` field says so, or it used ZeRO stage 1 or 2 (stages only
/// DeepSpeed has; FSDP's full shard is recorded as stage 3).
fn uses_deepspeed(case: &Value) -> bool {
    s(case, "engine") == Some("deepspeed") || matches!(u(case, "zero_stage"), Some(1 | 2))
}

/// Whether a case ran FSDP through the HF Trainer, whose FSDP recipes (PEFT's and accelerate's FSDP guides)
/// train with `--bf16`/`--fp16` mixed precision on: accelerate ≥ 0.30 then upcasts 16-bit sharded trainable
/// weights to fp32 and the optimizer steps fp32 (huggingface/accelerate#2674, "Add Upcasting for FSDP in
/// Mixed Precision").
fn fsdp_with_amp(case: &Value) -> bool {
    matches!(s(case, "engine"), Some("fsdp1" | "fsdp2"))
        && s(case, "framework") == Some("hf-trainer")
}

/// The loss kernel a case's `loss_kernel` field names, replacing the stack's default loss (`standard` and
/// null keep the stack's own).
///
/// Liger's `FusedLinearCrossEntropy` and Apple's Cut Cross-Entropy never materialize the logits (Liger-Kernel
/// README; Wijmans et al. 2024). Unsloth's cross-entropy kernel (also fms-acceleration's FOAK `fast_loss`) runs
/// on the 16-bit logits and writes their gradient in place: no fp32 copy, the footprint class of a chunked
/// loss (16-bit logits and a 16-bit gradient), as torchtune's and litgpt's chunked losses.
fn loss_kernel(case: &Value) -> Option<LossImpl> {
    match s(case, "loss_kernel")? {
        "liger-flce" | "cut-cross-entropy" => Some(LossImpl::Fused),
        "unsloth-ce" | "chunked" => Some(LossImpl::Chunked),
        _ => None,
    }
}

fn s<'a>(case: &'a Value, key: &str) -> Option<&'a str> {
    case.get(key).and_then(Value::as_str)
}

fn u(case: &Value, key: &str) -> Option<u32> {
    case.get(key)
        .and_then(Value::as_u64)
        .map(|v| v.min(u64::from(u32::MAX)) as u32)
}

fn b(case: &Value, key: &str) -> Option<bool> {
    case.get(key).and_then(Value::as_bool)
}

/// Builds the job a reference case describes. Unknown fields take the stack's defaults.
pub fn job_from_case(case: &Value) -> Result<Job, String> {
    let arch = match case.get("config") {
        // A partial config (a field the source could not give) falls back to the catalog entry of that model.
        Some(cfg) if cfg.is_object() => match import::parse_config(cfg) {
            Ok(parsed) => parsed.arch,
            Err(e) => catalog::find_model(s(case, "model").unwrap_or(""))
                .map(|m| m.arch().clone())
                .ok_or_else(|| format!("config: {e}"))?,
        },
        _ => {
            let name = s(case, "model").unwrap_or("");
            catalog::find_model(name)
                .ok_or_else(|| format!("no config and model '{name}' is not in the catalog"))?
                .arch()
                .clone()
        }
    };
    let mut job = Job {
        arch,
        ..Job::default()
    };
    let framework = s(case, "framework").unwrap_or("other");
    Stack::from_id(framework)
        .unwrap_or(Stack::Generic)
        .apply_defaults(&mut job);

    job.mode = match s(case, "task") {
        Some("full") => Mode::Full,
        Some("lora") => Mode::Lora,
        Some("qlora") => Mode::Qlora,
        Some("freeze") => Mode::Freeze,
        Some("inference") => Mode::Inference,
        // GaLore tunes every weight with projected optimizer states.
        Some("galore") => Mode::Full,
        other => {
            return Err(format!(
                "task {other:?} is not modelled (the record names no PEFT method in its fields)"
            ))
        }
    };
    job.precision = match s(case, "precision") {
        Some("fp32") => Precision::Fp32,
        Some("mixed-bf16" | "mixed-fp16") => Precision::Mixed,
        _ => Precision::Pure16,
    };
    // DeepSpeed's ZeRO optimizers always step fp32 partitions of the weights, even with `bf16.enabled`
    // (`deepspeed/runtime/zero/stage_1_and_2.py` `single_partition_of_fp32_groups`, `stage3.py`
    // `fp32_partitioned_groups_flat`), and accelerate upcasts FSDP's shards under mixed precision: such a
    // run is mixed precision whatever the model was loaded in.
    if job.precision == Precision::Pure16 && (uses_deepspeed(case) || fsdp_with_amp(case)) {
        job.precision = Precision::Mixed;
    }
    job.weights = match s(case, "quant") {
        None | Some("none") => match s(case, "precision") {
            Some("fp32") => WeightFormat::Fp32,
            Some("fp16" | "mixed-fp16") => WeightFormat::Fp16,
            _ => WeightFormat::Bf16,
        },
        Some("nf4") => WeightFormat::Nf4,
        Some("nf4-dq") => WeightFormat::Nf4Dq,
        Some("fp4") => WeightFormat::Fp4,
        Some("int8") => WeightFormat::Int8,
        Some("gptq-int4") => WeightFormat::GptqInt4,
        Some("gptq-int8") => WeightFormat::GptqInt8,
        Some("awq-int4") => WeightFormat::AwqInt4,
        Some("mxfp4") => WeightFormat::Mxfp4,
        Some(q) => return Err(format!("quantization '{q}' is not modelled")),
    };
    job.optimizer = match s(case, "optimizer") {
        _ if job.mode == Mode::Inference => Optimizer::None,
        // A GaLore task steps GaLore's projected Adam whatever base optimizer the record names.
        _ if s(case, "task") == Some("galore") => Optimizer::Galore,
        Some("adamw-8bit") => Optimizer::Adamw8bit,
        Some("paged-adamw") => Optimizer::PagedAdamw,
        Some("paged-adamw-8bit") => Optimizer::PagedAdamw8bit,
        Some("adafactor") => Optimizer::Adafactor,
        Some("sgd") => Optimizer::Sgd,
        Some("adamw") | None => Optimizer::Adamw,
        Some("galore") => Optimizer::Galore,
        Some(o) => return Err(format!("optimizer '{o}' is not modelled")),
    };
    if let Some(r) = u(case, "lora_rank") {
        job.lora.rank = r;
    } else {
        job.lora.rank = 8; // PEFT LoraConfig default r
    }
    job.lora.dropout = true;
    job.lora.targets = match case.get("lora_targets").and_then(Value::as_array) {
        Some(list) => {
            let mut t = Vec::new();
            for m in list.iter().filter_map(Value::as_str) {
                match m {
                    "all-linear" => t = Module::ALL.to_vec(),
                    "q" => t.push(Module::Q),
                    "k" => t.push(Module::K),
                    "v" => t.push(Module::V),
                    "o" => t.push(Module::O),
                    "gate" => t.push(Module::Gate),
                    "up" => t.push(Module::Up),
                    "down" => t.push(Module::Down),
                    "embed" => job.lora.train_embed = true,
                    "lm_head" => job.lora.train_lm_head = true,
                    _ => {}
                }
            }
            t
        }
        // PEFT's default targets for Llama-family models: q_proj, v_proj.
        None => vec![Module::Q, Module::V],
    };
    job.freeze_trainable_layers = 2;
    job.micro_batch = u(case, "batch_size").unwrap_or(1).max(1);
    job.seq_len = u(case, "seq_len").unwrap_or(512).max(1);
    job.variable_lengths = b(case, "seq_len_exact") == Some(false);
    job.grad_accum = u(case, "grad_accum").unwrap_or(1).max(1);
    match b(case, "grad_checkpointing") {
        Some(true) if job.checkpointing == Checkpointing::Offload => {}
        Some(true) => job.checkpointing = Checkpointing::Layer,
        Some(false) => job.checkpointing = Checkpointing::Off,
        None => job.checkpointing = job.stack.checkpointing(),
    }
    // The kernel the record names; without one, `flash_attention: true` still means a fused kernel that keeps
    // no `s × s` matrix, and `false` the eager path.
    job.attention = match (s(case, "attn_impl"), b(case, "flash_attention")) {
        (Some("flash-attention-2"), _) | (None, Some(true)) => AttentionImpl::Flash2,
        (Some("eager"), _) | (None, Some(false)) => AttentionImpl::Eager,
        _ => AttentionImpl::Sdpa,
    };
    if let Some(loss) = loss_kernel(case) {
        job.loss = loss;
    }
    job.gpus = u(case, "num_gpus").unwrap_or(1).max(1);
    job.parallelism = match s(case, "parallel") {
        Some("zero") => match u(case, "zero_stage") {
            Some(1) => Parallelism::Zero1,
            Some(2) => Parallelism::Zero2,
            _ => Parallelism::Zero3,
        },
        Some("pipeline") => Parallelism::Pipeline,
        // HF `device_map` splits the layers over the GPUs, whatever the `parallel` field says.
        _ if s(case, "engine") == Some("device-map") => Parallelism::Pipeline,
        Some("tensor") => Parallelism::Tensor,
        _ => Parallelism::Ddp,
    };
    if let Some(d) = u(case, "parallel_degree") {
        if matches!(job.parallelism, Parallelism::Pipeline | Parallelism::Tensor) {
            job.gpus = d.max(1);
        }
    }
    if let Some(v) = s(case, "torch_version").and_then(Version::parse) {
        job.versions.torch = v;
    }
    if let Some(v) = s(case, "transformers_version").and_then(Version::parse) {
        job.versions.transformers = v;
    }
    job.offload = match s(case, "offload") {
        Some("optimizer") => Offload::Optimizer,
        Some("param+optimizer") => Offload::ParamOptimizer,
        _ => Offload::None,
    };
    if job.mode == Mode::Inference {
        job.inference.batch = job.micro_batch;
        // `seq_len` is the whole sequence; a record that states only the generated tokens had a short,
        // unstated prompt (the cache grows one token at a time, no prompt-length matrix is built).
        let new = u(case, "new_tokens");
        let prompt = u(case, "prompt_tokens").or_else(|| match (u(case, "seq_len"), new) {
            (Some(total), Some(new)) if total > new => Some(total - new),
            (_, Some(_)) => Some(1),
            (total, None) => total,
        });
        job.inference.prompt_tokens = prompt.unwrap_or(job.seq_len).max(1);
        job.inference.new_tokens = new.unwrap_or(0);
        job.inference.kv_dtype = match s(case, "kv_cache_dtype") {
            Some("fp8") => KvDtype::Fp8,
            Some("int8") => KvDtype::Int8,
            Some("int4") => KvDtype::Int4,
            _ => KvDtype::Bf16,
        };
    }
    Ok(job)
}

/// Evaluates one case: predicts the metric it measured, in GiB.
pub fn evaluate_case(case: &Value) -> Result<CaseResult, String> {
    let job = job_from_case(case)?;
    let measured = case
        .get("measured")
        .and_then(Value::as_f64)
        .filter(|m| *m > 0.0)
        .ok_or("no measured value")?;
    let measured_gib = match s(case, "unit") {
        Some("GB") => measured * GB / GIB,
        _ => measured,
    };
    let metric = match s(case, "metric") {
        Some("max_allocated") => "allocated",
        Some("nvidia-smi") => "device",
        _ => "reserved",
    };
    let pick = |j: &Job| {
        let e = estimate(j);
        match metric {
            "allocated" => e.peak_allocated,
            "device" => e.device_total,
            _ => e.peak_reserved,
        }
    };
    let per_gpu = b(case, "per_gpu").unwrap_or(true);
    let predicted = if per_gpu || job.gpus <= 1 {
        pick(&job)
    } else if job.parallelism == Parallelism::Pipeline {
        // Total over a pipeline ≈ the model on one device, plus each extra GPU's fixed overheads.
        let single = Job {
            gpus: 1,
            parallelism: Parallelism::Ddp,
            ..job.clone()
        };
        let empty = Job {
            mode: Mode::Inference,
            arch: crate::model::Architecture {
                layers: 0,
                vocab: 0,
                ..job.arch.clone()
            },
            inference: crate::model::Inference {
                prompt_tokens: 1,
                new_tokens: 0,
                batch: 1,
                kv_dtype: KvDtype::Bf16,
            },
            ..single.clone()
        };
        pick(&single) + f64::from(job.gpus - 1) * pick(&empty)
    } else {
        pick(&job) * f64::from(job.gpus)
    };
    let predicted_gib = predicted / GIB;
    let replayed_gib = if metric == "reserved" && (per_gpu || job.gpus <= 1) {
        crate::model::block_replay(&job).map(|b| b.peak_reserved / GIB)
    } else {
        None
    };
    Ok(CaseResult {
        id: s(case, "id").unwrap_or("?").to_string(),
        tier: s(case, "tier").unwrap_or("?").to_string(),
        task: s(case, "task").unwrap_or("?").to_string(),
        framework: s(case, "framework").unwrap_or("?").to_string(),
        metric: metric.to_string(),
        predicted_gib,
        measured_gib,
        error_pct: (predicted_gib - measured_gib) / measured_gib * 100.0,
        band_kind: BandKind::of(&job),
        replayed_gib,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(err: f64) -> CaseResult {
        CaseResult {
            id: String::new(),
            tier: "A".into(),
            task: "lora".into(),
            framework: "x".into(),
            metric: "allocated".into(),
            predicted_gib: 1.0,
            measured_gib: 1.0 / (1.0 + err / 100.0),
            error_pct: err,
            band_kind: BandKind::Lora,
            replayed_gib: None,
        }
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let rs: Vec<_> = (1..=10).map(|i| result(-(i as f64))).collect();
        let st = stats(&rs);
        assert_eq!(st.n, 10);
        assert_eq!(st.median_abs_pct, 5.0);
        assert_eq!(st.p90_abs_pct, 9.0);
        assert_eq!(stats(&[]).median_abs_pct, 0.0);
    }

    #[test]
    fn run_details_read_from_fields() {
        use serde_json::json;
        assert!(uses_deepspeed(&json!({ "engine": "deepspeed" })));
        assert!(uses_deepspeed(&json!({ "engine": null, "zero_stage": 2 })));
        assert!(!uses_deepspeed(
            &json!({ "engine": "fsdp1", "zero_stage": 3 })
        ));
        assert!(fsdp_with_amp(
            &json!({ "engine": "fsdp2", "framework": "hf-trainer" })
        ));
        assert!(!fsdp_with_amp(
            &json!({ "engine": "fsdp1", "framework": "litgpt" })
        ));
        assert_eq!(Version::parse("2.1.2"), Some(Version::new(2, 1)));
        assert_eq!(Version::parse("4.36"), Some(Version::new(4, 36)));
        assert_eq!(Version::parse("2.4.1+cu121"), Some(Version::new(2, 4)));
        assert_eq!(Version::parse("nightly"), None);
        assert_eq!(
            loss_kernel(&json!({ "loss_kernel": "liger-flce" })),
            Some(LossImpl::Fused)
        );
        assert_eq!(
            loss_kernel(&json!({ "loss_kernel": "unsloth-ce" })),
            Some(LossImpl::Chunked)
        );
        assert_eq!(loss_kernel(&json!({ "loss_kernel": "standard" })), None);
        let tokens = |case: Value| {
            let base = json!({ "task": "inference", "model": "gpt2", "config": null });
            let mut case = case;
            for (k, v) in base.as_object().unwrap() {
                case[k] = v.clone();
            }
            let job = job_from_case(&case).unwrap();
            (job.inference.prompt_tokens, job.inference.new_tokens)
        };
        assert_eq!(
            tokens(json!({ "prompt_tokens": 512, "new_tokens": 64, "seq_len": 576 })),
            (512, 64)
        );
        assert_eq!(
            tokens(json!({ "new_tokens": 64, "seq_len": 576 })),
            (512, 64)
        );
        assert_eq!(
            tokens(json!({ "new_tokens": 256, "seq_len": 256 })),
            (1, 256)
        );
        assert_eq!(tokens(json!({ "seq_len": 300 })), (300, 0));
    }

    #[test]
    fn units_and_skips() {
        let case = serde_json::json!({
            "id": "x", "task": "rlhf", "model": "Llama-2-7b", "config": null, "measured": 10.0
        });
        assert!(evaluate_case(&case).unwrap_err().contains("not modelled"));
        let report = evaluate_jsonl("\n{not json}\n");
        assert_eq!(report.skipped.len(), 1);
        assert!(report.results.is_empty());
    }
}
