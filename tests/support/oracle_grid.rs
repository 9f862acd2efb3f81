//! What the grids of a stack's own code share (`tests/golden_litgpt.rs`, `golden_torchtune.rs`,
//! `golden_plain_loop.rs`): reading the oracle's records, and holding vramfit's `peak_allocated` to each
//! record's `peak_allocated_bytes` within a tolerance, the explained gaps apart.

use serde_json::Value;
use vramfit::model::{estimate, Job};

const GIB: f64 = 1_073_741_824.0;

/// The records the oracle ran (a record with an `error` field failed to run and is left out).
pub fn records(grid: &str) -> Vec<Value> {
    grid.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("error").is_none())
        .collect()
}

/// Prints every job beside the oracle and a `golden {name}:` summary line, and fails on any job beyond
/// `tolerance_pct` whose id contains none of `known_gaps`' patterns (`(pattern, mechanism)`).
pub fn hold_peaks(
    name: &str,
    grid: &str,
    job_of: impl Fn(&Value) -> Job,
    known_gaps: &[(&str, &str)],
    tolerance_pct: f64,
) {
    let mut misses = Vec::new();
    let mut abs = Vec::new();
    for rec in records(grid) {
        let id = rec["id"].as_str().unwrap();
        let oracle = rec["peak_allocated_bytes"].as_f64().unwrap();
        let e = estimate(&job_of(&rec));
        let err = (e.peak_allocated - oracle) / oracle * 100.0;
        abs.push(err.abs());
        let gap = known_gaps.iter().find(|(k, _)| id.contains(k));
        println!(
            "{id:45} oracle {:8.3} GiB  vramfit {:8.3} GiB  {err:+6.1}%{}",
            oracle / GIB,
            e.peak_allocated / GIB,
            gap.map_or(String::new(), |(_, why)| format!("  (known: {why})"))
        );
        if gap.is_none() && err.abs() > tolerance_pct {
            misses.push(format!("{id}: {err:+.1}%"));
        }
    }
    assert!(!abs.is_empty(), "no {name} records");
    abs.sort_by(f64::total_cmp);
    println!(
        "golden {name}: n={} median_abs_pct={:.2} max_abs_pct={:.2}",
        abs.len(),
        abs[abs.len() / 2],
        abs[abs.len() - 1]
    );
    assert!(misses.is_empty(), "beyond {tolerance_pct}%: {misses:?}");
}

/// Fails unless PEFT's (or the stack's) trainable-parameter count of every record, `params_trainable`, is
/// vramfit's exactly; and unless the grid holds at least `at_least` records.
pub fn hold_trainable(grid: &str, job_of: impl Fn(&Value) -> Job, at_least: usize) {
    let recs = records(grid);
    assert!(recs.len() >= at_least, "only {} jobs", recs.len());
    for rec in &recs {
        let (job, _) = vramfit::model::normalize::normalize(&job_of(rec));
        let (trainable, _) = vramfit::model::adapters::trainable(&job, &job.arch.params());
        assert_eq!(
            trainable,
            rec["params_trainable"].as_f64().unwrap(),
            "{}",
            rec["id"]
        );
    }
}

/// One GPU, one unpadded micro-batch of `batch` × `seq` tokens per step, SDPA, checkpointing per layer when
/// `checkpointing`: the shape every oracle job runs.
pub fn one_gpu_shape(job: &mut Job, batch: &Value, seq: &Value, checkpointing: &Value) {
    use vramfit::model::{AttentionImpl, Checkpointing};
    job.micro_batch = batch.as_u64().unwrap() as u32;
    job.seq_len = seq.as_u64().unwrap() as u32;
    job.grad_accum = 1;
    job.variable_lengths = false;
    job.checkpointing = if checkpointing.as_bool() == Some(true) {
        Checkpointing::Layer
    } else {
        Checkpointing::Off
    };
    job.attention = AttentionImpl::Sdpa;
    job.gpus = 1;
}
