//! litgpt's LoRA fine-tuning against the fake-tensor oracle running litgpt's own model and training step
//! (`tests/data/golden-litgpt.jsonl`, made by `scripts/golden-litgpt.py`; litgpt 0.5.13 on torch 2.15):
//! trainable parameters exactly, and `max_memory_allocated` of two steps of `finetune/lora.py` (bf16-true,
//! LoRA r8 on query and value, AdamW, the LM head in 128-token chunks), with and without checkpointing.
//!
//! Jobs where vramfit's model lacks a mechanism the oracle shows are listed in [`KNOWN_GAPS`] with that
//! mechanism; they are printed and held to no tolerance. Every other job must be within 3%.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::catalog;
use vramfit::model::*;

const GRID: &str = include_str!("data/golden-litgpt.jsonl");
const GIB: f64 = 1_073_741_824.0;
const TOLERANCE_PCT: f64 = 3.0;

/// `(id pattern, mechanism)`: jobs whose miss is explained, not tolerated.
const KNOWN_GAPS: &[(&str, &str)] = &[(
    "stablelm-base-alpha-3b/lora-b4-nockpt",
    "+3.0%: GPT-NeoX's parallel residual feeds both LayerNorms one tensor, saved once, which vramfit \
     counts per norm (as in the transformers grid)",
)];

fn job_of(rec: &Value) -> Job {
    let arch = catalog::model(rec["model"].as_str().unwrap())
        .unwrap_or_else(|| panic!("{} not in the catalog", rec["model"]))
        .arch()
        .clone();
    let lora = &rec["lora"];
    let mut targets = Vec::new();
    for (key, module) in [
        ("query", Module::Q),
        ("key", Module::K),
        ("value", Module::V),
        ("projection", Module::O),
    ] {
        if lora[key].as_bool() == Some(true) {
            targets.push(module);
        }
    }
    if lora["mlp"].as_bool() == Some(true) {
        targets.extend([Module::Gate, Module::Up, Module::Down]);
    }
    let mut job = Job {
        arch,
        ..Job::default()
    };
    Stack::Litgpt.apply_defaults(&mut job);
    job.mode = Mode::Lora;
    job.weights = WeightFormat::Bf16;
    job.precision = Precision::Pure16;
    job.optimizer = Optimizer::Adamw;
    job.lora = Lora {
        rank: lora["r"].as_u64().unwrap() as u32,
        targets,
        dropout: lora["dropout"].as_f64().unwrap_or(0.0) > 0.0,
        ..Lora::default()
    };
    job.micro_batch = rec["batch_size"].as_u64().unwrap() as u32;
    job.seq_len = rec["seq_len"].as_u64().unwrap() as u32;
    job.grad_accum = 1;
    job.variable_lengths = false;
    job.checkpointing = if rec["gradient_checkpointing"].as_bool() == Some(true) {
        Checkpointing::Layer
    } else {
        Checkpointing::Off
    };
    job.attention = AttentionImpl::Sdpa;
    job.gpus = 1;
    job
}

fn records() -> Vec<Value> {
    GRID.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("error").is_none())
        .collect()
}

#[test]
fn trainable_parameters_match_litgpt() {
    let recs = records();
    assert!(recs.len() >= 15, "only {} jobs", recs.len());
    for rec in &recs {
        // litgpt's own model code has no fused projections to adapt as one (`Stack::runs_own_model_code`).
        let (job, _) = normalize::normalize(&job_of(rec));
        let (trainable, _) = adapters::trainable(&job, &job.arch.params());
        let built = rec["params_trainable"].as_f64().unwrap();
        assert_eq!(trainable, built, "{}", rec["id"]);
    }
}

#[test]
fn peak_allocated_matches_litgpt_on_the_oracle() {
    let mut misses = Vec::new();
    let mut abs = Vec::new();
    for rec in records() {
        let id = rec["id"].as_str().unwrap();
        let oracle = rec["peak_allocated_bytes"].as_f64().unwrap();
        let e = estimate(&job_of(&rec));
        let err = (e.peak_allocated - oracle) / oracle * 100.0;
        abs.push(err.abs());
        let gap = KNOWN_GAPS.iter().find(|(k, _)| id.contains(k));
        println!(
            "{id:40} oracle {:8.3} GiB  vramfit {:8.3} GiB  {err:+6.1}%{}",
            oracle / GIB,
            e.peak_allocated / GIB,
            gap.map_or(String::new(), |(_, why)| format!("  (known: {why})"))
        );
        if gap.is_none() && err.abs() > TOLERANCE_PCT {
            misses.push(format!("{id}: {err:+.1}%"));
        }
    }
    abs.sort_by(f64::total_cmp);
    println!(
        "golden litgpt: n={} median_abs_pct={:.2} max_abs_pct={:.2}",
        abs.len(),
        abs[abs.len() / 2],
        abs.last().copied().unwrap_or(0.0)
    );
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}
