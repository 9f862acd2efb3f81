//! PEFT methods beyond LoRA against the fake-tensor oracle running PEFT's real code
//! (`tests/data/golden-peft.jsonl`, made by `scripts/golden-peft.py`): trainable parameters exactly, and
//! `max_memory_allocated` of two training steps. LoRA with `trainable_token_indices` runs here too.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::catalog;
use vramfit::model::peft::Method;
use vramfit::model::*;

const GRID: &str = include_str!("data/golden-peft.jsonl");

fn module(name: &str) -> Module {
    match name.trim_end_matches("_proj") {
        "q" => Module::Q,
        "k" => Module::K,
        "v" => Module::V,
        "o" => Module::O,
        "gate" => Module::Gate,
        "up" => Module::Up,
        "down" => Module::Down,
        other => panic!("module {other}"),
    }
}

fn job_of(rec: &Value) -> Job {
    let arch = catalog::model(rec["model"].as_str().unwrap())
        .unwrap()
        .arch()
        .clone();
    let j = &rec["job"];
    let args = &rec["method_args"];
    let method = match rec["method"].as_str().unwrap().split('-').next().unwrap() {
        "ia3" => Method::Ia3,
        "loha" => Method::Loha,
        "lokr" => Method::Lokr,
        "vera" => Method::Vera,
        "adalora" => Method::AdaLora,
        "oft" => Method::Oft,
        "boft" => Method::Boft,
        "prompt" => Method::PromptTuning,
        "prefix" => Method::PrefixTuning,
        "ptuning" => Method::PTuning,
        // LoRA with `trainable_token_indices` beside it.
        "loratok" => Method::Lora,
        other => panic!("method {other}"),
    };
    let rank = ["r", "init_r", "oft_block_size", "boft_block_size"]
        .iter()
        .filter_map(|k| args[k].as_u64())
        .find(|r| *r > 0)
        .unwrap_or(8) as u32;
    let targets = args["target_modules"]
        .as_array()
        .map(|l| l.iter().map(|n| module(n.as_str().unwrap())).collect())
        .unwrap_or_default();
    Job {
        arch,
        stack: Stack::Generic,
        mode: Mode::Lora,
        weights: WeightFormat::Bf16,
        precision: Precision::Pure16,
        optimizer: Optimizer::Adamw,
        lora: Lora {
            rank: if matches!(method, Method::Oft | Method::Boft) {
                rank
            } else {
                rank.max(1)
            },
            targets,
            dropout: false,
            method,
            virtual_tokens: args["num_virtual_tokens"].as_u64().unwrap_or(20) as u32,
            encoder_hidden: args["encoder_hidden_size"].as_u64().unwrap_or(1024) as u32,
            with_tokens: args["trainable_token_indices"].is_array(),
            butterfly_factors: args["boft_n_butterfly_factor"].as_u64().unwrap_or(1) as u32,
            trainable_tokens: args["trainable_token_indices"]
                .as_array()
                .map_or(10, |l| l.len() as u32),
            ..Lora::default()
        },
        micro_batch: j["batch_size"].as_u64().unwrap() as u32,
        seq_len: j["seq_len"].as_u64().unwrap() as u32,
        grad_accum: 1,
        checkpointing: if j["gradient_checkpointing"].as_bool().unwrap() {
            Checkpointing::Layer
        } else {
            Checkpointing::Off
        },
        attention: AttentionImpl::Sdpa,
        loss: LossImpl::Fp32Logits,
        ..Job::default()
    }
}

#[test]
fn peft_methods_match_the_oracle() {
    let mut report = String::new();
    let mut errs = Vec::new();
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        if rec.get("error").is_some() {
            continue;
        }
        let id = rec["id"].as_str().unwrap();
        let e = estimate(&job_of(&rec));
        let trainable = rec["params_trainable"].as_f64().unwrap();
        assert_eq!(e.trainable_params, trainable, "{id}: trainable parameters");
        let oracle = rec["peak_allocated_bytes"].as_f64().unwrap();
        let err = (e.peak_allocated - oracle) / oracle * 100.0;
        report += &format!(
            "{id:<40} oracle {:>7.3} GiB  vramfit {:>7.3} GiB  {err:+6.1}%\n",
            oracle / 1073741824.0,
            e.peak_allocated / 1073741824.0
        );
        errs.push((id.to_string(), err));
    }
    let mut abs: Vec<f64> = errs.iter().map(|(_, e)| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = abs[abs.len() / 2];
    println!(
        "{report}golden peft: n={} median_abs_pct={median:.2} max_abs_pct={:.2}",
        abs.len(),
        abs[abs.len() - 1]
    );
    assert!(abs.len() >= 30);
    let misses: Vec<_> = errs.iter().filter(|(_, e)| e.abs() > 5.0).collect();
    assert!(misses.is_empty(), "{misses:?}\n{report}");
}
