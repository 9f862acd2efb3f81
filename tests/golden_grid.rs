//! The fake-tensor golden grid: vramfit's `peak_allocated` against the exact `max_memory_allocated` of the
//! same job run through the real PyTorch / transformers / PEFT code on fake tensors
//! (`tests/data/golden-grid.jsonl`, made by `scripts/golden-grid.py`). Also checks the parts the oracle
//! labels exactly: parameter counts, trainable parameters and the bytes of the parameters themselves.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::catalog;
use vramfit::model::*;

const GRID: &str = include_str!("data/golden-grid.jsonl");

/// The vramfit job for one grid record (`job` holds `fake_peak.py`'s keys).
fn job_of(rec: &Value) -> Job {
    let id = rec["model"].as_str().unwrap();
    let arch = catalog::model(id)
        .unwrap_or_else(|| panic!("{id} not in the catalog"))
        .arch()
        .clone();
    let j = &rec["job"];
    let get = |k: &str| j[k].as_str().unwrap_or("");
    let num = |k: &str| j[k].as_u64().unwrap_or(1) as u32;
    let mut job = Job {
        arch,
        stack: Stack::Generic,
        grad_accum: 1,
        gpus: 1,
        loss: LossImpl::Fp32Logits,
        ..Job::default()
    };
    job.mode = match get("mode") {
        "full" => Mode::Full,
        "freeze" => Mode::Freeze,
        "inference" => Mode::Inference,
        _ => Mode::Lora,
    };
    let (precision, weights) = match get("dtype") {
        "mixed" => (Precision::Mixed, WeightFormat::Bf16),
        "fp32" => (Precision::Fp32, WeightFormat::Fp32),
        "fp16" => (Precision::Pure16, WeightFormat::Fp16),
        _ => (Precision::Pure16, WeightFormat::Bf16),
    };
    job.precision = precision;
    job.weights = weights;
    job.optimizer = match get("optimizer") {
        "sgd" => Optimizer::Sgd,
        "sgd_momentum" => Optimizer::SgdMomentum,
        "none" => Optimizer::None,
        _ => Optimizer::Adamw,
    };
    job.optimizer_step_temp = get("optimizer") != "adamw_fused";
    job.checkpointing = if j["gradient_checkpointing"].as_bool().unwrap_or(true) {
        Checkpointing::Layer
    } else {
        Checkpointing::Off
    };
    job.attention = match get("attn") {
        "eager" => AttentionImpl::Eager,
        "flash_attention_2" => AttentionImpl::Flash2,
        _ => AttentionImpl::Sdpa,
    };
    job.micro_batch = num("batch_size");
    job.seq_len = num("seq_len");
    job.freeze_trainable_layers = j["freeze_trainable_layers"].as_u64().unwrap_or(2) as u32;
    if let Some(l) = j.get("lora").filter(|l| l.is_object()) {
        job.lora.rank = l["r"].as_u64().unwrap() as u32;
        job.lora.dropout = l["dropout"].as_f64().unwrap_or(0.0) > 0.0;
        job.lora.targets = match &l["target_modules"] {
            Value::String(s) if s == "all-linear" => Module::ALL.to_vec(),
            Value::Array(names) => {
                let mut t = Vec::new();
                for n in names.iter().filter_map(Value::as_str) {
                    t.extend(modules_named(n));
                }
                t
            }
            other => panic!("target_modules {other}"),
        };
    }
    if job.mode == Mode::Inference {
        let inf = &j["inference"];
        job.inference.batch = inf["batch_size"].as_u64().unwrap() as u32;
        job.inference.prompt_tokens = inf["prompt_len"].as_u64().unwrap() as u32;
        job.inference.new_tokens = inf["new_tokens"].as_u64().unwrap() as u32;
    }
    job
}

/// vramfit modules behind one PEFT target name (fused projections stand for several).
fn modules_named(name: &str) -> Vec<Module> {
    match name {
        "q_proj" => vec![Module::Q],
        "k_proj" => vec![Module::K],
        "v_proj" => vec![Module::V],
        "o_proj" | "dense" => vec![Module::O],
        "qkv_proj" | "c_attn" | "query_key_value" => vec![Module::Q, Module::K, Module::V],
        // GPT-2's `c_proj` names both the attention output and the MLP output; the grid uses it with
        // `c_attn` for attention only, where PEFT adapts both (suffix match).
        "c_proj" => vec![Module::O, Module::Down],
        "kv_a_proj_with_mqa" => vec![Module::K],
        "kv_b_proj" => vec![Module::V],
        other => panic!("unknown target {other}"),
    }
}

/// Grid jobs the model does not yet reproduce within 3%, each with the mechanism the oracle shows. A job
/// outside this list that misses by more than 3% fails the test; one on it is still reported.
const KNOWN_GAPS: [(&str, &str); 8] = [
    ("qwen3-30b-a3b/lora-", "PEFT adapts the 3-D expert parameters too (`all-linear`), and keeps per-layer \
      delta weights of expert size for backward; vramfit counts expert LoRA as per-expert linear adapters"),
    ("mixtral-8x7b-v0.1/lora-", "as Qwen3-MoE: PEFT's expert-parameter LoRA"),
    ("deepseek-v2-lite/lora-", "as Qwen3-MoE: PEFT's expert-parameter LoRA"),
    ("gemma-2-2b/", "Gemma 2's soft-capping (tanh on the eager scores and on the final logits) keeps extra \
      fp32 copies that the eager-score and loss terms do not count"),
    ("gpt2/", "GPT-2's LayerNorm, Conv1D and GELU saved tensors are not yet read from the oracle; its jobs \
      past 1,024 tokens ran beyond the position table on fake tensors, where vramfit cuts to 1,024"),
    ("gemma-3-1b-it/infer", "Gemma 3 prefill: sliding-window masks and a 262k vocabulary's logits"),
    ("/lora-mixed-ckpt", "autocast over fp32 weights with checkpointing: the recomputed layer's weight casts \
      and fp32 residual gradients are counted approximately"),
    ("phi-3-mini-4k-instruct/lora-", "fused qkv_proj / gate_up_proj: one adapter input cast where \
      vramfit counts one per projection"),
];

fn known_gap(id: &str) -> Option<&'static str> {
    KNOWN_GAPS
        .iter()
        .find(|(pattern, _)| id.contains(pattern))
        .map(|(_, why)| *why)
}

struct Row {
    id: String,
    oracle: f64,
    predicted: f64,
    err_pct: f64,
}

/// Whether a record's peak stands for a GPU run. A hybrid stack's recurrent mixers (Mamba, Gated DeltaNet) run
/// transformers' torch fallbacks on fake tensors (the `mamba_ssm`, `causal-conv1d` and `fla` kernels cannot),
/// which save other tensors than the kernels; a hybrid job counts only when its peak is outside every mixer:
/// the optimizer step (parameters, gradients, states, the foreach temporaries) or the loss's backward (each layer
/// holding only its checkpointed input). The mixers' own terms are checked by hand in `tests/hybrid_stacks.rs`.
fn represents_real_runs(rec: &Value) -> bool {
    let id = rec["model"].as_str().unwrap_or("");
    if catalog::model(id).is_none_or(|m| m.arch().stack().is_none()) {
        return true;
    }
    let at = &rec["peak_at"];
    at["op"]
        .as_str()
        .is_some_and(|op| op.starts_with("aten._foreach"))
        || at["autograd_node"].as_str() == Some("LogSoftmaxBackward0")
}

fn rows() -> Vec<Row> {
    GRID.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|rec| rec.get("error").is_none() && represents_real_runs(rec))
        .map(|rec| {
            let job = job_of(&rec);
            let e = estimate(&job);
            let oracle = rec["peak_allocated_bytes"].as_f64().unwrap();
            Row {
                id: rec["id"].as_str().unwrap().to_string(),
                oracle,
                predicted: e.peak_allocated,
                err_pct: (e.peak_allocated - oracle) / oracle * 100.0,
            }
        })
        .collect()
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[test]
fn grid_covers_the_catalog_families_it_promises() {
    let models: std::collections::BTreeSet<String> = GRID
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|rec| rec.get("error").is_none())
        .map(|rec| rec["model"].as_str().unwrap().to_string())
        .collect();
    assert!(models.len() >= 15, "only {} models", models.len());
}

#[test]
fn parameter_counts_match_the_built_models() {
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let Some(total) = rec["params_total"].as_f64() else {
            continue;
        };
        let job = job_of(&rec);
        let p = job.arch.params();
        assert!(
            (p.total - total).abs() <= 1e-3 * total,
            "{}: vramfit counts {} parameters, the built model has {total}",
            rec["id"],
            p.total
        );
    }
}

#[test]
fn peak_allocated_matches_the_fake_tensor_oracle() {
    let rows = rows();
    assert!(!rows.is_empty());
    let mut abs: Vec<f64> = rows.iter().map(|r| r.err_pct.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = percentile(&abs, 0.5);
    let p90 = percentile(&abs, 0.9);
    let max = abs[abs.len() - 1];
    let mut report = String::new();
    for r in &rows {
        report += &format!(
            "{:<48} oracle {:>8.3} GiB  vramfit {:>8.3} GiB  {:+6.1}%\n",
            r.id,
            r.oracle / 1073741824.0,
            r.predicted / 1073741824.0,
            r.err_pct
        );
    }
    println!("{report}golden grid: n={} median_abs_pct={median:.2} p90_abs_pct={p90:.2} max_abs_pct={max:.2}", rows.len());
    assert!(median <= 1.0, "median {median:.2}%\n{report}");
    // The known gaps (mostly the three MoE models' LoRA jobs) sit above 3%; every other job is held to 3%.
    let misses: Vec<&Row> = rows
        .iter()
        .filter(|r| r.err_pct.abs() > 3.0 && known_gap(&r.id).is_none())
        .collect();
    for r in &misses {
        eprintln!("{} misses by {:+.1}%", r.id, r.err_pct);
    }
    assert!(
        misses.is_empty(),
        "{} jobs miss by more than 3%",
        misses.len()
    );
}

/// `max_memory_reserved` against the oracle's replay of the job's real malloc/free stream through a model of
/// `CUDACachingAllocator.cpp` (`sim_max_reserved_gib`, default allocator settings, two steps). This is the
/// caching allocator's own algorithm on the exact allocation timeline, so the gap is what vramfit's reserve
/// terms (fixed part, fragmentation of short-lived memory) still miss. Reported; the median is held.
#[test]
fn peak_reserved_against_the_allocator_simulation() {
    let mut errs = Vec::new();
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let Some(sim) = rec["sim_max_reserved_gib"].as_f64() else {
            continue;
        };
        if rec.get("error").is_some() || !represents_real_runs(&rec) {
            continue;
        }
        let e = estimate(&job_of(&rec));
        errs.push((e.peak_reserved / 1073741824.0 - sim) / sim * 100.0);
    }
    let under = errs.iter().filter(|e| **e < -3.0).count();
    let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let (median, p90) = (percentile(&abs, 0.5), percentile(&abs, 0.9));
    println!(
        "golden grid reserved: n={} median_abs_pct={median:.2} p90_abs_pct={p90:.2} under_3pct={under}",
        abs.len()
    );
    assert!(abs.len() >= 200);
    assert!(median <= 4.0, "median {median:.2}%");
}

/// A padding mask (dynamic padding) on Llama 3.2 1B, LoRA r16 all-linear, batch 2, no checkpointing, from
/// `scripts/golden-padding.py`: at 1000 keys SDPA's masked kernel saves a head-expanded, 16-aligned copy of
/// the bias in every layer (12.034 GiB against 9.928 GiB unpadded); at 1024 keys it does not (10.360 GiB).
#[test]
fn padding_mask_jobs() {
    let job = |seq: u32, variable: bool| Job {
        arch: catalog::model("llama-3.2-1b").unwrap().arch().clone(),
        stack: Stack::Generic,
        mode: Mode::Lora,
        micro_batch: 2,
        seq_len: seq,
        grad_accum: 1,
        checkpointing: Checkpointing::Off,
        attention: AttentionImpl::Sdpa,
        loss: LossImpl::Fp32Logits,
        variable_lengths: variable,
        lora: Lora {
            rank: 16,
            dropout: false,
            ..Lora::default()
        },
        ..Job::default()
    };
    let gib = |j: &Job| estimate(j).peak_allocated / 1073741824.0;
    for (j, oracle) in [(job(1000, true), 12.034), (job(1000, false), 9.928)] {
        let got = gib(&j);
        assert!((got - oracle).abs() / oracle < 0.03, "{got} vs {oracle}");
    }
}
