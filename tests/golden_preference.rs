//! Supervised fine-tuning through TRL's `SFTTrainer` (its fused LM head, TRL ≥ 1.15), preference and RL tuning
//! (DPO and KTO with a reference copy or PEFT's disabled-adapter reference, ORPO, SimPO, GRPO's training pass)
//! against the fake-tensor oracle running TRL's own loss code (`tests/data/golden-preference.jsonl`, made by
//! `scripts/golden-preference.py`; TRL 1.16.0 on torch 2.15 / transformers 5.24 / peft 0.21): trainable
//! parameters exactly, and `max_memory_allocated` of two training steps with TRL's defaults (bf16 autocast on
//! bf16 weights, fused AdamW, `max_grad_norm=1.0`).
//!
//! Jobs where vramfit's model lacks a mechanism the oracle shows are listed in [`KNOWN_GAPS`] with that
//! mechanism; they are printed but held to no tolerance, and must stay gaps (a fixed one fails the test, so
//! that it is moved back under the 3% rule). Every other job must be within 3%.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::catalog;
use vramfit::model::preference::{Objective, Reference};
use vramfit::model::*;

const GRID: &str = include_str!("data/golden-preference.jsonl");
const GIB: f64 = 1_073_741_824.0;
const TOLERANCE_PCT: f64 = 3.0;

/// `(id pattern, mechanism)`: jobs whose miss is explained, not tolerated. A pattern matches an id that
/// contains it; one ending in `$` must end the id. First match wins.
/// GRPO full fine-tuning with checkpointing at 8 × 2048 tokens: the peak is the bottom layer's backward
/// (`BackwardPeak::first_layer`, beside every gradient but that layer's). vramfit takes that layer's
/// recomputed activations and its whole backward working set together; at the oracle's peak op
/// (`MulBackward0` in the MLP) part of that working set is not yet formed. Which part was not separated:
/// vramfit is over by 3.4% (Llama 3.2 1B's twin is within 2.4%).
const BOTTOM_LAYER: &str =
    "bottom layer's backward: its whole working set counted at once (+3.4%, over)";

const KNOWN_GAPS: &[(&str, &str)] = &[("qwen2.5-0.5b/grpo-full-ckpt-8x2048c1536$", BOTTOM_LAYER)];

/// DPO jobs that `LossImpl::Fused` must describe within the tolerance (see the assertion).
const FUSED_EXACT: &[&str] = &[
    "/dpo-full-refcopy-ckpt-",
    "/dpo-lora-disabled-ckpt-2x2048-noamp",
    "/dpo-lora-disabled-nockpt-2x2048-noamp",
];

fn job_of(rec: &Value, loss: LossImpl) -> Job {
    let arch = catalog::model(rec["model"].as_str().unwrap())
        .unwrap()
        .arch()
        .clone();
    let j = &rec["job"];
    let lora = j["mode"].as_str().unwrap() == "lora";
    Job {
        arch,
        // TRL's `bf16=True` is the HF Trainer's autocast ([`Stack::autocasts_16bit_weights`]); the `-noamp`
        // twins turn it off, as a plain loop over bf16 weights runs.
        stack: if j["autocast_bf16"].as_bool().unwrap() {
            Stack::HfTrainer
        } else {
            Stack::Generic
        },
        mode: if lora { Mode::Lora } else { Mode::Full },
        weights: WeightFormat::Bf16,
        precision: Precision::Pure16,
        optimizer: Optimizer::Adamw,
        // `adamw_torch_fused` (the transformers default): no parameter-sized step temporary.
        optimizer_step_temp: j["optimizer"].as_str().unwrap() != "adamw_fused",
        lora: Lora {
            rank: j["lora"]["r"].as_u64().unwrap() as u32,
            targets: Module::ALL.to_vec(),
            dropout: false,
            ..Lora::default()
        },
        // Pairs per device; vramfit doubles them for paired objectives (`Objective::sequences_per_example`).
        micro_batch: j["batch_size"].as_u64().unwrap() as u32,
        // GRPO's `seq_len` is the prompt: vramfit adds `completion_tokens` (`normalize`).
        seq_len: j["seq_len"].as_u64().unwrap() as u32
            - rec["completion_tokens"].as_u64().unwrap_or(0) as u32,
        grad_accum: 1,
        checkpointing: if j["gradient_checkpointing"].as_bool().unwrap() {
            Checkpointing::Layer
        } else {
            Checkpointing::Off
        },
        attention: AttentionImpl::Sdpa,
        loss,
        objective: match rec["objective"].as_str().unwrap() {
            "sft" => Objective::Sft,
            "dpo" => Objective::Dpo,
            "orpo" => Objective::Orpo,
            "simpo" => Objective::Simpo,
            "grpo" => Objective::Grpo,
            "kto" => Objective::Kto,
            other => panic!("objective {other}"),
        },
        reference: match rec["reference"].as_str().unwrap() {
            "copy" => Reference::Copy,
            "disabled-adapters" => Reference::DisabledAdapters,
            "none" => Reference::None,
            other => panic!("reference {other}"),
        },
        grpo: vramfit::model::preference::Grpo {
            completion_tokens: rec["completion_tokens"].as_u64().unwrap_or(0) as u32,
            ..Default::default()
        },
        ..Job::default()
    }
}

/// The oracle's figure to compare with: the whole step's peak, except for GRPO, whose oracle runs the
/// training pass only (`GRPOTrainer._compute_loss` on a finished rollout): its moments without the rollout.
fn compared_peak(rec: &Value, e: &Estimate) -> f64 {
    if rec["objective"] == "grpo" {
        e.phases
            .iter()
            .filter(|(p, _)| !matches!(p, Phase::Generation | Phase::Prefill))
            .map(|(_, b)| *b)
            .fold(0.0, f64::max)
    } else {
        e.peak_allocated
    }
}

fn known_gap(id: &str) -> Option<&'static str> {
    KNOWN_GAPS
        .iter()
        .find(|(pat, _)| match pat.strip_suffix('$') {
            Some(end) => id.ends_with(end),
            None => id.contains(pat),
        })
        .map(|(_, why)| *why)
}

#[test]
fn preference_tuning_matches_the_oracle_running_trl() {
    let mut report = String::new();
    let mut errs = Vec::new();
    let mut fused_errs = Vec::new();
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        if rec.get("error").is_some() {
            continue;
        }
        let id = rec["id"].as_str().unwrap();
        // The loss vramfit assumes for a TRL job (`Stack::loss`: full fp32 logits, which `loss::loss_bytes`
        // replaces with TRL's fused head for DPO and 8 B per logit for SimPO), and, for comparison, a fused
        // linear + cross-entropy kernel (`LossImpl::Fused`).
        // TRL ≥ 1.15's SFTTrainer runs its fused LM head, which the job states by its loss.
        let trl_loss = if rec["objective"] == "sft" {
            LossImpl::TrlFusedHead
        } else {
            LossImpl::Fp32Logits
        };
        let e = estimate(&job_of(&rec, trl_loss));
        let fused = estimate(&job_of(&rec, LossImpl::Fused));
        let trainable = rec["params_trainable"].as_f64().unwrap();
        assert_eq!(e.trainable_params, trainable, "{id}: trainable parameters");
        let oracle = rec["peak_allocated_bytes"].as_f64().unwrap();
        let (peak, peak_fused) = (compared_peak(&rec, &e), compared_peak(&rec, &fused));
        let err = (peak - oracle) / oracle * 100.0;
        let err_fused = (peak_fused - oracle) / oracle * 100.0;
        let gap = known_gap(id);
        report += &format!(
            "{id:<46} oracle {:>7.3} GiB  vramfit {:>7.3} GiB  {err:+7.1}%   (fused-loss {:>7.3} GiB {err_fused:+7.1}%){}\n",
            oracle / GIB,
            peak / GIB,
            peak_fused / GIB,
            if gap.is_some() { "  [known gap]" } else { "" }
        );
        errs.push((id.to_string(), err, gap));
        fused_errs.push((id.to_string(), err_fused));
    }
    let mut abs: Vec<f64> = errs.iter().map(|(_, e, _)| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median = abs[abs.len() / 2];
    let mut rest: Vec<f64> = errs
        .iter()
        .filter(|(_, _, g)| g.is_none())
        .map(|(_, e, _)| e.abs())
        .collect();
    rest.sort_by(f64::total_cmp);
    println!(
        "{report}golden preference: n={} median_abs_pct={median:.2} max_abs_pct={:.2} \
         (outside KNOWN_GAPS: n={} max_abs_pct={:.2})",
        abs.len(),
        abs[abs.len() - 1],
        rest.len(),
        rest.last().copied().unwrap_or(0.0)
    );
    for (pat, why) in KNOWN_GAPS {
        println!("known gap {pat}: {why}");
    }
    assert!(abs.len() >= 50, "only {} oracle jobs", abs.len());
    let misses: Vec<_> = errs
        .iter()
        .filter(|(_, e, g)| g.is_none() && e.abs() > TOLERANCE_PCT)
        .collect();
    assert!(
        misses.is_empty(),
        "outside {TOLERANCE_PCT}%: {misses:?}\n{report}"
    );
    // What the fused-head column shows where no other gap applies (full tuning with checkpointing, and
    // the `-noamp` LoRA twins): `LossImpl::Fused` describes TRL >= 1.0 DPO within the tolerance there.
    let fused_misses: Vec<_> = fused_errs
        .iter()
        .filter(|(id, _)| FUSED_EXACT.iter().any(|p| id.contains(p)))
        .filter(|(_, e)| e.abs() > TOLERANCE_PCT)
        .collect();
    assert!(
        fused_misses.is_empty(),
        "DPO with LossImpl::Fused outside {TOLERANCE_PCT}%: {fused_misses:?}"
    );
    let fixed: Vec<_> = errs
        .iter()
        .filter(|(_, e, g)| g.is_some() && e.abs() <= TOLERANCE_PCT)
        .collect();
    assert!(
        fixed.is_empty(),
        "known gaps now within {TOLERANCE_PCT}%: remove them from KNOWN_GAPS: {fixed:?}"
    );
}
