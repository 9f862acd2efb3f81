//! The fake-tensor golden grid: vramfit's `peak_allocated` against the exact `max_memory_allocated` of the
//! same job run through the real PyTorch / transformers / PEFT code on fake tensors
//! (`tests/data/golden-grid.jsonl`, made by `scripts/golden-grid.py`). Also checks the parts the oracle
//! labels exactly: parameter counts, trainable parameters and the bytes of the parameters themselves.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::catalog;
use vramfit::model::*;

const GRID: &str = include_str!("data/golden-grid.jsonl");
/// The catalog's config values, for the records that ran a cut or a part of one (see [`arch_of`]).
const MODELS_JSON: &str = include_str!("../src/catalog/models.json");

/// The catalog model's shape as the record ran it. A record with `"layers": n` ran the config cut to its first
/// `n` decoder layers (`num_hidden_layers`, and a `layer_types` list, cut the same way by
/// `scripts/golden-grid.py`'s `cut_layers`), so the same cut config goes through the importer: the layer
/// count, the leading dense layers (`first_k_dense_replace`), Llama 4's MoE interleave and NoPE share and
/// gpt-oss's sliding share all follow the cut as they do in transformers. A record with `"text_part": true`
/// ran the language model of a multimodal config alone (built from `text_config`): no vision tower.
fn arch_of(rec: &Value) -> Architecture {
    let id = rec["model"].as_str().unwrap();
    let entry = catalog::model(id).unwrap_or_else(|| panic!("{id} not in the catalog"));
    let mut arch = match rec["layers"].as_u64() {
        None => entry.arch().clone(),
        Some(n) => {
            let models: Value = serde_json::from_str(MODELS_JSON).unwrap();
            let mut config = models
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["id"] == id)
                .unwrap()["config"]
                .clone();
            let text = match config.get_mut("text_config") {
                Some(t) if t.is_object() => t,
                _ => &mut config,
            };
            text["num_hidden_layers"] = n.into();
            if let Some(types) = text.get_mut("layer_types").and_then(Value::as_array_mut) {
                types.truncate(n as usize);
            }
            vramfit::catalog::import::parse_config(&config)
                .unwrap_or_else(|e| panic!("{id} cut to {n} layers: {e}"))
                .arch
        }
    };
    if rec["text_part"].as_bool() == Some(true) {
        arch.vision = None;
    }
    arch
}

/// The vramfit job for one grid record (`job` holds `fake_peak.py`'s keys).
fn job_of(rec: &Value) -> Job {
    let arch = arch_of(rec);
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
    // The library releases the oracle ran (a version fact can change a term: transformers 5's fused experts).
    let version = |k: &str| {
        rec["versions"][k]
            .as_str()
            .and_then(|v| Version::parse(v.split('+').next().unwrap_or(v)))
    };
    if let Some(v) = version("torch") {
        job.versions.torch = v;
    }
    if let Some(v) = version("transformers") {
        job.versions.transformers = v;
    }
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
                    for m in modules_named(n) {
                        if !t.contains(&m) {
                            t.push(m);
                        }
                    }
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
        // Falcon's and GPT-NeoX's attention output is `dense` (their MLP's are `dense_4h_to_h`), DBRX's `out_proj`.
        "o_proj" | "dense" | "out_proj" => vec![Module::O],
        // Fused projections: Phi-3 `qkv_proj`, GPT-2 / StarCoder `c_attn`, Falcon / GPT-NeoX `query_key_value`,
        // DBRX `Wqkv`.
        "qkv_proj" | "c_attn" | "query_key_value" | "Wqkv" => vec![Module::Q, Module::K, Module::V],
        // MLA with a query latent (DeepSeek-V3): `q_a_proj` (h -> q_lora_rank) and `q_b_proj` (-> heads) are
        // the query path, which vramfit holds as one module.
        "q_a_proj" | "q_b_proj" => vec![Module::Q],
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
const KNOWN_GAPS: &[(&str, &str)] = &[
    ("qwen3-30b-a3b/lora-r16-all-nockpt", "-1.8%: within tolerance since PEFT's parameter-wrapper counts (gate_up \
      wrapped once per name, the router) are followed; kept as the reference of the MoE entries below"),
    ("mixtral-8x7b-v0.1/lora-", "as Qwen3-MoE (without checkpointing -46.7% before the merged copy; -0.8…-2.1% now)"),
    ("deepseek-v2-lite/lora-", "as Qwen3-MoE (without checkpointing -41.6% before the merged copy; -0.1…-2.2% now)"),
    ("gpt2/", "GPT-2's LayerNorm, Conv1D and GELU saved tensors are not yet read from the oracle; its jobs \
      past 1,024 tokens ran beyond the position table on fake tensors, where vramfit cuts to 1,024"),
    // Families added with the reduced job set (`ADDED` in scripts/golden-grid.py). Bytes per token and layer
    // are the oracle's saved tensors of one middle layer (forward under saved-tensor hooks) beside
    // `activations::layer_bytes_per_token` (`breakdowns_beside_the_oracle` prints both sides).
    ("glm-4.5-air/lora-r16-all", "now -6.8% / -1.3% (were -22% / -36%) with the merged copy modelled. PEFT's transformers-v5 MoE table maps glm4_moe onto the \
      qwen2_moe pattern, so `all-linear` becomes LoRA on the 3-D expert parameters (gate_up_proj, down_proj) \
      and the router weight; the experts then run grouped_mm on the merged W + BA, which autograd saves: a \
      full bf16 expert-weight copy per MoE layer (128 x 3 x 4096 x 1408 x 2 B = 4.125 GiB), one in the \
      recomputed layer with checkpointing (oracle recomputed_activations 4.54 GiB at GroupedMmBackward0), every \
      MoE layer without (2 in the cut: activations 8.89 GiB); vramfit counts per-expert linear adapters \
      (104.3M parameters against PEFT's 81.4M): the parameter wrapper's LoRA shapes are not modelled, and with \
      checkpointing the recomputed layer holds part of a second copy"),
    ("minimax-m2/lora-r16-all", "now -9.4% / -4.1% (were -23% / -45%): as GLM-4.5 (minimax_m2 maps onto PEFT's mixtral pattern): the \
      merged expert weights, 256 x 3 x 3072 x 1536 x 2 B = 6.75 GiB a MoE layer (oracle 7.17 GiB recomputed, \
      21.1 GiB of activations for the 3 layers without checkpointing); 209.1M LoRA parameters against 171.1M"),
    ("deepseek-v3/lora-r16-all", "now -5.1% / -2.8% (were -27% / -42%): as GLM-4.5 (deepseek_v3 maps onto PEFT's qwen2_moe pattern): \
      the merged expert weights, 256 x 3 x 7168 x 2048 x 2 B = 21.0 GiB a MoE layer (oracle 21.9 GiB \
      recomputed, 43.9 GiB for the cut's 2 MoE layers without checkpointing); vramfit's peak stays the \
      optimizer step (60.27 GiB both ways); 268.2M LoRA parameters against 574.1M"),
    ("kimi-k2-instruct/lora-r16-all", "now -8.7% / -5.9% (were -33% / -47%): as DeepSeek-V3 (built as deepseek_v3): 384 experts, \
      31.5 GiB of merged expert weights a MoE layer (oracle 32.4 GiB recomputed, 64.5 GiB for 2 MoE layers); \
      393.3M LoRA parameters against 513.3M"),
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
        // A vision-language model is built whole: its tower and projector count too.
        let counted = vramfit::model::vision::total_params(&job.arch);
        assert!(
            (counted - total).abs() <= 1e-3 * total,
            "{}: vramfit counts {counted} parameters, the built model has {total}",
            rec["id"],
        );
    }
}

/// Trainable parameters as PEFT built them on the oracle (`params_trainable`): fused projections carry one
/// adapter, MLA's query and KV paths two matrices each, and MoE experts are adapted only where PEFT reaches
/// them. The jobs this skips differ for a reason the model does not yet follow, said by [`trainable_gap`].
fn trainable_gap(job: &Job) -> Option<&'static str> {
    match (&job.arch.moe, job.mode) {
        (Some(moe), Mode::Freeze) if moe.dense_layers > 0 => Some(
            "freeze trains the last layers, which are MoE layers; vramfit counts the average layer",
        ),
        _ => None,
    }
}

/// The tolerance on trainable parameters: exact (rounding) except LoRA on transformers 5's 3-D experts,
/// where the parameter wrapper's counts are followed (gate_up wrapped once per name, the router) but a
/// family's router may be a bare parameter PEFT does not reach (DeepSeek's `MoEGate`): within 2%.
fn trainable_tolerance(job: &Job) -> f64 {
    let experts_targeted = job
        .lora
        .targets
        .iter()
        .any(|m| matches!(m, Module::Gate | Module::Up | Module::Down));
    match &job.arch.moe {
        Some(moe)
            if experts_targeted
                && matches!(job.mode, Mode::Lora | Mode::Qlora)
                && moe.experts_adapted(job.versions.transformers) =>
        {
            0.02
        }
        _ => 2e-3,
    }
}

#[test]
fn trainable_parameters_match_the_built_models() {
    let mut checked = 0;
    let mut misses = Vec::new();
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let Some(trainable) = rec["params_trainable"].as_f64() else {
            continue;
        };
        let job = job_of(&rec);
        let id = rec["id"].as_str().unwrap();
        if trainable_gap(&job).is_some() {
            continue;
        }
        let (ours, _) = vramfit::model::adapters::trainable(&job, &job.arch.params());
        if (ours - trainable).abs() > trainable_tolerance(&job) * trainable.max(1.0) {
            misses.push(format!(
                "{id}: vramfit trains {ours:.0} parameters, PEFT built {trainable:.0} ({:+.1}%)",
                (ours - trainable) / trainable * 100.0
            ));
        }
        checked += 1;
    }
    assert!(checked > 200, "only {checked} jobs checked");
    assert!(misses.is_empty(), "{}", misses.join("\n"));
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
/// still misses: the estimate's fitted reserve (fixed part, share of short-lived memory), and the block
/// replay of the estimate's own tensors ([`vramfit::model::block_replay`], for the jobs its program
/// describes; the others count with the fitted figure). Reported; the medians are held, and the block replay
/// must under-predict by more than 3% less often than the fitted reserve.
#[test]
fn peak_reserved_against_the_allocator_simulation() {
    let (mut fitted, mut blocks) = (Vec::new(), Vec::new());
    let mut replayed = 0;
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let Some(sim) = rec["sim_max_reserved_gib"].as_f64() else {
            continue;
        };
        if rec.get("error").is_some() || !represents_real_runs(&rec) {
            continue;
        }
        let job = job_of(&rec);
        let e = estimate(&job);
        let err = |reserved: f64| (reserved / 1073741824.0 - sim) / sim * 100.0;
        fitted.push(err(e.peak_reserved));
        let block = match vramfit::model::block_replay(&job) {
            Some(b) => {
                replayed += 1;
                b.peak_reserved
            }
            None => e.peak_reserved,
        };
        blocks.push(err(block));
    }
    let summary = |errs: &[f64]| {
        let under = errs.iter().filter(|e| **e < -3.0).count();
        let mut abs: Vec<f64> = errs.iter().map(|e| e.abs()).collect();
        abs.sort_by(f64::total_cmp);
        (percentile(&abs, 0.5), percentile(&abs, 0.9), under)
    };
    let (median, p90, under) = summary(&fitted);
    println!(
        "golden grid reserved: n={} median_abs_pct={median:.2} p90_abs_pct={p90:.2} under_3pct={under}",
        fitted.len()
    );
    let (b_median, b_p90, b_under) = summary(&blocks);
    println!(
        "golden grid reserved, block replay: n={} replayed={replayed} median_abs_pct={b_median:.2} p90_abs_pct={b_p90:.2} under_3pct={b_under}",
        blocks.len()
    );
    assert!(fitted.len() >= 200 && replayed >= 150);
    assert!(median <= 4.0, "median {median:.2}%");
    assert!(b_median <= 3.0, "block replay median {b_median:.2}%");
    assert!(
        b_under < under,
        "block replay under-predicts {b_under} jobs, the fitted reserve {under}"
    );
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

/// Diagnosis, not a check: for the records whose id contains `GRID_ONLY` (all when unset), the oracle's peak
/// (op, phase, labelled bytes) beside vramfit's peak by component. Run with
/// `GRID_ONLY=falcon cargo test --release --test golden_grid -- --ignored --nocapture`.
#[test]
#[ignore]
fn breakdowns_beside_the_oracle() {
    let only = std::env::var("GRID_ONLY").unwrap_or_default();
    let gib = |b: f64| b / 1073741824.0;
    for line in GRID.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap();
        let id = rec["id"].as_str().unwrap();
        if !id.contains(only.as_str()) {
            continue;
        }
        if let Some(err) = rec.get("error") {
            println!("{id}: oracle error {err}");
            continue;
        }
        let job = job_of(&rec);
        let e = estimate(&job);
        let oracle = rec["peak_allocated_bytes"].as_f64().unwrap();
        let layer = activations::layer_bytes_per_token(&job.arch, &job).per_rank(1.0);
        let scores = activations::score_matrices_per_token(&job.arch, &job, f64::from(job.seq_len));
        println!(
            "{id}: vramfit per layer and token: {layer:.0} B saved, {scores:.0} B score matrices"
        );
        println!(
            "{id}: oracle {:.3} GiB at {} / vramfit {:.3} GiB ({:+.1}%)",
            gib(oracle),
            rec["peak_at"],
            gib(e.peak_allocated),
            (e.peak_allocated - oracle) / oracle * 100.0
        );
        let mut parts: Vec<(String, f64)> = rec["peak_breakdown_bytes"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
            .collect();
        parts.sort_by(|a, b| b.1.total_cmp(&a.1));
        println!(
            "  oracle:  {}",
            parts
                .iter()
                .map(|(k, v)| format!("{k} {:.3}", gib(*v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        println!(
            "  vramfit: {}  (phase {:?}; params {:.0}, trainable {:.0} / oracle {} {})",
            e.gpu
                .iter()
                .map(|p| format!("{:?} {:.3}", p.component, gib(p.bytes)))
                .collect::<Vec<_>>()
                .join(", "),
            e.phase,
            e.params.total,
            e.trainable_params,
            rec["params_total"],
            rec["params_trainable"]
        );
    }
}
