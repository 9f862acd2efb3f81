//! A hand-written training loop that keeps the model's outputs through backward (`outputs = model(**batch)`,
//! `outputs.loss.backward()`, as PEFT's method-comparison benchmark and most custom loops do) against the
//! fake-tensor oracle run with its outputs kept (`tests/data/golden-plain-loop.jsonl`, made by
//! `scripts/golden-plain-loop.py`; transformers 5.24 / PEFT 0.21 / torch 2.15): trainable parameters exactly,
//! and `max_memory_allocated` of two steps with gradient clipping, for stack `plain-loop`. Every job must be
//! within 3%.
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/oracle_grid.rs"]
mod oracle_grid;

use serde_json::Value;
use vramfit::catalog;
use vramfit::model::*;

const GRID: &str = include_str!("data/golden-plain-loop.jsonl");
const TOLERANCE_PCT: f64 = 3.0;

fn job_of(rec: &Value) -> Job {
    let arch = catalog::model(rec["model"].as_str().unwrap())
        .unwrap_or_else(|| panic!("{} not in the catalog", rec["model"]))
        .arch()
        .clone();
    let j = &rec["job"];
    let mut job = Job {
        arch,
        ..Job::default()
    };
    Stack::PlainLoop.apply_defaults(&mut job);
    job.weights = WeightFormat::Bf16;
    job.precision = if j["dtype"] == "mixed" {
        Precision::Mixed
    } else {
        Precision::Pure16
    };
    job.optimizer = Optimizer::Adamw;
    job.mode = if j["mode"] == "full" {
        Mode::Full
    } else {
        Mode::Lora
    };
    if let Some(l) = j.get("lora").filter(|l| l.is_object()) {
        job.lora = Lora {
            rank: l["r"].as_u64().unwrap() as u32,
            targets: match &l["target_modules"] {
                Value::String(s) if s == "all-linear" => Module::ALL.to_vec(),
                Value::Array(names) => names
                    .iter()
                    .map(|n| match n.as_str().unwrap() {
                        "q_proj" => Module::Q,
                        "k_proj" => Module::K,
                        "v_proj" => Module::V,
                        "o_proj" => Module::O,
                        other => panic!("target {other}"),
                    })
                    .collect(),
                other => panic!("target_modules {other}"),
            },
            dropout: false,
            ..Lora::default()
        };
    }
    oracle_grid::one_gpu_shape(
        &mut job,
        &j["batch_size"],
        &j["seq_len"],
        &j["gradient_checkpointing"],
    );
    job
}

#[test]
fn trainable_parameters_match_peft() {
    oracle_grid::hold_trainable(GRID, job_of, 8);
}

#[test]
fn peak_allocated_matches_the_oracle_with_outputs_kept() {
    oracle_grid::hold_peaks("plain loop", GRID, job_of, &[], TOLERANCE_PCT);
}
