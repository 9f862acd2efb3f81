//! The serving planner (`src/model/serve.rs`) against real vLLM and SGLang startup logs
//! (`tests/data/vllm-startup-logs.jsonl`: 61 logs of vLLM 0.19.0 on H100 80GB committed to
//! github.com/llm-d-incubation/llm-d-planner at d3121e0, `accuracy/results/v0.19.0/logs/`, and 10 quoted in
//! vLLM/SGLang issues; each record keeps its `source`).
//!
//! Three checks, asserted separately:
//! 1. **budget**: the KV budget from the terms the log prints (`total × utilization − weights − activation −
//!    non-torch`) against the logged "Available KV cache memory". Every term is printed to 0.01 GiB, so four
//!    roundings of ±0.005 bound the difference: 0.025 GiB.
//! 2. **blocks**: from the logged KV memory, the blocks, the printed token count and the concurrency. The
//!    logged GiB is rounded to 0.01, so the block count may differ by 0.005 GiB's worth of blocks plus one.
//!    With tensor parallelism the memory line is one worker's and the block count the minimum over workers
//!    (`get_kv_cache_configs`), so there the logged count may only be lower.
//! 3. **end to end**: the whole plan from the architecture and the launch settings alone (weights model,
//!    activation model, non-torch constants) against the logged KV memory, tokens and concurrency.
//!
//! A record a check cannot use is skipped with its reason printed (model neither in the catalog nor with a
//! config in the record, pipeline parallelism, weights in a format vramfit has no model for, figures missing).
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::catalog::{self, import};
use vramfit::model::serve::*;
use vramfit::model::*;

const LOGS: &str = include_str!("data/vllm-startup-logs.jsonl");

fn records() -> Vec<Value> {
    LOGS.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

fn id(r: &Value) -> &str {
    r["id"].as_str().unwrap()
}

fn fig(r: &Value, k: &str) -> Option<f64> {
    r["figures"][k].as_f64()
}

fn setting_u32(r: &Value, k: &str) -> Option<u32> {
    r["settings"][k].as_u64().map(|v| v as u32)
}

/// The model's shape: the record's own `arch` or `config` (with their sources), an explicit catalog id for a
/// fine-tune or quantization of a catalog model, or the catalog entry matching the Hugging Face id.
fn arch_of(r: &Value) -> Result<Architecture, String> {
    let v = &r["vramfit"];
    if let Some(a) = v.get("arch") {
        return serde_json::from_value(a.clone()).map_err(|e| format!("arch: {e}"));
    }
    if let Some(c) = v.get("config") {
        return import::parse_config(c)
            .map(|i| i.arch)
            .map_err(|e| format!("config: {e}"));
    }
    if let Some(cid) = v["catalog_id"].as_str() {
        return catalog::model(cid)
            .map(|m| m.arch().clone())
            .ok_or_else(|| format!("catalog id {cid} is missing"));
    }
    let name = r["model"].as_str().unwrap_or("");
    catalog::find_model(name)
        .map(|m| m.arch().clone())
        .ok_or_else(|| format!("model '{name}' is not in the catalog and the record has no config"))
}

fn pipeline_parallel(r: &Value) -> u64 {
    r["vramfit"]["pipeline_parallel"].as_u64().unwrap_or(1)
}

fn is_v0(r: &Value) -> bool {
    r["engine_v1"].as_bool() == Some(false)
}

/// The launch settings as a serve request. vLLM v0 ran without chunked prefill: the profiling batch was
/// `max(max_model_len, 2048)` tokens in at most 256 sequences (v0 `SchedulerConfig` defaults).
fn request_of(r: &Value, gpu_gib: f64, fallback_len: Option<u32>) -> Result<ServeRequest, String> {
    let s = &r["settings"];
    let max_model_len = setting_u32(r, "max_model_len")
        .or(r["vramfit"]["max_model_len"].as_u64().map(|v| v as u32))
        .or(fig(r, "max_concurrency_tokens").map(|v| v as u32))
        .or(fallback_len)
        .ok_or("no max_model_len in the log")?;
    let (mnbt, seqs) = if is_v0(r) {
        (
            Some(setting_u32(r, "max_num_batched_tokens").unwrap_or(max_model_len.max(2048))),
            Some(setting_u32(r, "max_num_seqs").unwrap_or(256)),
        )
    } else {
        (
            setting_u32(r, "max_num_batched_tokens"),
            setting_u32(r, "max_num_seqs"),
        )
    };
    let dtype = match s["dtype"].as_str() {
        Some("float16") => ModelDtype::Fp16,
        Some("float32") => ModelDtype::Fp32,
        _ => ModelDtype::Bf16,
    };
    let kv_dtype = match s["kv_cache_dtype"].as_str() {
        Some(k) if k.starts_with("fp8") => ServeKvDtype::Fp8,
        _ => ServeKvDtype::Auto,
    };
    let weights = match r["vramfit"]["weights"].as_str() {
        Some(w) => Some(
            serde_json::from_value::<WeightFormat>(Value::String(w.into()))
                .map_err(|e| format!("weights: {e}"))?,
        ),
        None => None,
    };
    Ok(ServeRequest {
        engine: Some(if r["engine"] == "sglang" {
            Engine::Sglang
        } else {
            Engine::Vllm
        }),
        gpu_gib: Some(gpu_gib),
        gpu_name: r["gpu"].as_str().map(str::to_string),
        tensor_parallel: Some(setting_u32(r, "tensor_parallel_size").unwrap_or(1)),
        gpu_memory_utilization: s["gpu_memory_utilization"].as_f64(),
        max_model_len: Some(max_model_len),
        max_num_seqs: seqs,
        max_num_batched_tokens: mnbt,
        kv_dtype: Some(kv_dtype),
        block_size: setting_u32(r, "block_size"),
        enforce_eager: s["enforce_eager"].as_bool(),
        dtype: Some(dtype),
        weights,
        ..ServeRequest::default()
    })
}

fn pct(pred: f64, logged: f64) -> f64 {
    100.0 * (pred - logged) / logged
}

fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

fn abs_all(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.abs()).collect()
}

#[test]
fn the_kv_budget_from_the_logged_terms_matches_the_logged_budget() {
    let mut n = 0;
    let mut worst = (0.0_f64, String::new());
    for r in records() {
        let (Some(total), Some(w), Some(a), Some(nt), Some(kv)) = (
            r["gpu_total_gib"].as_f64(),
            fig(&r, "weights_gib"),
            fig(&r, "activation_peak_gib"),
            fig(&r, "non_torch_gib"),
            fig(&r, "kv_cache_gib"),
        ) else {
            println!(
                "budget skip {}: the log does not print total, weights, activation, non-torch and KV",
                id(&r)
            );
            continue;
        };
        if r["engine"] != "vllm" {
            continue;
        }
        let util = r["settings"]["gpu_memory_utilization"]
            .as_f64()
            .unwrap_or(0.9);
        let g = 1024.0 * 1024.0 * 1024.0;
        let pred = vllm_kv_budget_bytes(total, util, w * g, a * g, nt * g) / g;
        let diff = pred - kv;
        println!(
            "budget {} predicted {pred:.3} logged {kv:.2} GiB ({diff:+.3})",
            id(&r)
        );
        assert!(diff.abs() <= 0.025, "{}: {pred:.3} vs {kv:.2} GiB", id(&r));
        if diff.abs() > worst.0 {
            worst = (diff.abs(), id(&r).to_string());
        }
        n += 1;
    }
    println!(
        "serve budget: n={n} max_abs_gib={:.3} ({})",
        worst.0, worst.1
    );
    assert!(n >= 60, "{n}");
}

#[test]
fn blocks_tokens_and_concurrency_from_the_logged_kv_memory() {
    let mut errs = Vec::new();
    let mut n = 0;
    for r in records() {
        let Some(kv) = fig(&r, "kv_cache_gib") else {
            continue;
        };
        if fig(&r, "gpu_blocks").is_none() && fig(&r, "kv_tokens").is_none() {
            println!("blocks skip {}: no block or token count in the log", id(&r));
            continue;
        }
        if pipeline_parallel(&r) > 1 {
            println!(
                "blocks skip {}: pipeline parallel (each stage has its own layers)",
                id(&r)
            );
            continue;
        }
        if let Some(why) = r["vramfit"]["attention_unmodelled"].as_str() {
            println!("blocks skip {}: {why}", id(&r));
            continue;
        }
        let arch = match arch_of(&r) {
            Ok(a) => a,
            Err(e) => {
                println!("blocks skip {}: {e}", id(&r));
                continue;
            }
        };
        // Blocks and tokens do not depend on the GPU size or the context once the KV memory is given.
        let mut req = request_of(&r, r["gpu_total_gib"].as_f64().unwrap_or(80.0), Some(1))
            .unwrap_or_else(|e| panic!("{}: {e}", id(&r)));
        req.kv_cache_memory_gib = Some(kv);
        let p = plan(&arch, &req).unwrap_or_else(|e| panic!("{}: {e}", id(&r)));
        let tp = req.tensor_parallel.unwrap_or(1);
        if req.engine == Some(Engine::Sglang) {
            // SGLang prints the K and V buffers, `tokens + 1` rows each (one padded slot).
            let tokens = fig(&r, "kv_tokens").unwrap();
            let pred = (tokens + 1.0) * p.kv_bytes_per_token / (1u64 << 30) as f64;
            println!(
                "blocks {} (SGLang) K+V for {tokens} tokens: predicted {pred:.3} logged {kv:.2} GiB",
                id(&r)
            );
            assert!((pred - kv).abs() <= 0.01, "{}", id(&r));
            n += 1;
            continue;
        }
        // The logged GiB is rounded to 0.01: up to 0.005 GiB of blocks either way, plus the floor of
        // `blocks // groups` in the printed token count (one block per group).
        let rounding =
            100.0 * 0.005 / kv + 100.0 * f64::from(p.kv_groups) / p.gpu_blocks.max(1) as f64 + 1e-9;
        let mut check = |what: &str, pred: f64, logged: f64| {
            let e = pct(pred, logged);
            println!(
                "blocks {} {what}: predicted {pred:.2} logged {logged:.2} ({e:+.3}%, bound {rounding:.3}%)",
                id(&r)
            );
            if tp == 1 {
                assert!(e.abs() <= rounding, "{} {what}: {e:+.3}%", id(&r));
            } else {
                // One worker's memory, the minimum worker's blocks: the logged count can only be lower.
                assert!(e >= -rounding, "{} {what}: {e:+.3}%", id(&r));
            }
            errs.push(e);
        };
        if let Some(b) = fig(&r, "gpu_blocks") {
            check("gpu_blocks", p.gpu_blocks as f64, b);
        }
        if let Some(t) = fig(&r, "kv_tokens") {
            check("kv_tokens", p.kv_tokens as f64, t);
        }
        if let Some(c) = fig(&r, "max_concurrency") {
            // Printed to two decimals.
            let e = pct(p.max_concurrency, c);
            let bound = rounding + 100.0 * 0.005 / c;
            println!(
                "blocks {} max_concurrency: predicted {:.3} logged {c:.2} ({e:+.3}%)",
                id(&r),
                p.max_concurrency
            );
            if tp == 1 {
                assert!(e.abs() <= bound, "{} concurrency: {e:+.3}%", id(&r));
            } else {
                assert!(e >= -bound, "{} concurrency: {e:+.3}%", id(&r));
            }
        }
        n += 1;
    }
    let abs = abs_all(&errs);
    println!(
        "serve blocks: n={n} median_abs_pct={:.3} p90_abs_pct={:.3} max_abs_pct={:.2}",
        quantile(abs.clone(), 0.5),
        quantile(abs.clone(), 0.9),
        quantile(abs, 1.0)
    );
    assert!(n >= 50, "{n}");
}

struct E2e {
    id: String,
    kv_pct: f64,
    tokens_pct: f64,
    conc_pct: Option<f64>,
}

#[test]
fn end_to_end_plans_from_the_architecture_match_the_logs() {
    let mut rows: Vec<E2e> = Vec::new();
    let mut act_errs = Vec::new();
    let mut mm_act_errs = Vec::new();
    let mut weight_errs = Vec::new();
    let mut graph_errs = Vec::new();
    let mut nt_errs = Vec::new();
    for r in records() {
        let skip = |why: &str| println!("e2e skip {}: {why}", id(&r));
        if r["engine"] != "vllm" {
            skip("not vLLM");
            continue;
        }
        let Some(total) = r["gpu_total_gib"].as_f64() else {
            skip("the log gives no GPU total");
            continue;
        };
        let Some(kv) = fig(&r, "kv_cache_gib") else {
            skip("no KV memory in the log");
            continue;
        };
        if pipeline_parallel(&r) > 1 {
            skip("pipeline parallel is not planned");
            continue;
        }
        if let Some(why) = r["vramfit"]["weights_unmodelled"].as_str() {
            skip(why);
            continue;
        }
        if let Some(why) = r["vramfit"]["attention_unmodelled"].as_str() {
            skip(why);
            continue;
        }
        let arch = match arch_of(&r) {
            Ok(a) => a,
            Err(e) => {
                skip(&e);
                continue;
            }
        };
        let req = match request_of(&r, total, None) {
            Ok(q) => q,
            Err(e) => {
                skip(&e);
                continue;
            }
        };
        let p = plan(&arch, &req).unwrap_or_else(|e| panic!("{}: {e}", id(&r)));
        let multimodal = r["vramfit"]["multimodal"].as_bool().unwrap_or(false);
        let kv_pct = pct(p.kv_cache_gib, kv);
        let logged_tokens = fig(&r, "kv_tokens").or(fig(&r, "gpu_blocks").map(|b| b * 16.0));
        let tokens_pct = match (fig(&r, "kv_tokens"), fig(&r, "gpu_blocks")) {
            (Some(t), _) => pct(p.kv_tokens as f64, t),
            (None, Some(b)) => pct(p.gpu_blocks as f64, b),
            _ => kv_pct,
        };
        let conc_pct = fig(&r, "max_concurrency").map(|c| pct(p.max_concurrency, c));
        println!(
            "e2e {} kv {:.2}/{kv:.2} GiB ({kv_pct:+.2}%) tokens {}/{} ({tokens_pct:+.2}%) concurrency {:.2}/{} \
             weights {:.2}/{} act {:.2}/{} non-torch {:.2}/{} graphs {:.2}/{}{}",
            id(&r),
            p.kv_cache_gib,
            p.kv_tokens,
            logged_tokens.map_or("-".into(), |t| format!("{t:.0}")),
            p.max_concurrency,
            fig(&r, "max_concurrency").map_or("-".into(), |c| format!("{c:.2}")),
            p.weights_gib,
            fig(&r, "weights_gib").map_or("-".into(), |c| format!("{c:.2}")),
            p.activation_peak_gib,
            fig(&r, "activation_peak_gib").map_or("-".into(), |c| format!("{c:.2}")),
            p.non_torch_gib,
            fig(&r, "non_torch_gib").map_or("-".into(), |c| format!("{c:.2}")),
            p.cuda_graph_gib,
            fig(&r, "cuda_graph_gib").map_or("-".into(), |c| format!("{c:.2}")),
            if multimodal { " (multimodal)" } else { "" }
        );
        if let Some(a) = fig(&r, "activation_peak_gib") {
            // The activation model is the V1 profiling pass; v0's sampler kept more per logit.
            if !multimodal && !is_v0(&r) {
                act_errs.push(p.activation_peak_gib - a);
            }
            // A VLM whose tower vramfit knows (`arch.vision`): the encoder profile is in the plan.
            if multimodal && arch.vision.is_some() && !is_v0(&r) {
                mm_act_errs.push(p.activation_peak_gib - a);
            }
        }
        if let Some(w) = fig(&r, "weights_gib") {
            weight_errs.push(pct(p.weights_gib, w));
        }
        if let Some(g) = fig(&r, "cuda_graph_gib") {
            graph_errs.push(p.cuda_graph_gib - g);
        }
        if let Some(nt) = fig(&r, "non_torch_gib") {
            nt_errs.push(p.non_torch_gib - nt);
        }
        // The log's run started and could hold one full-length request.
        let started = kv > 0.0 && fig(&r, "max_concurrency").is_none_or(|c| c >= 1.0);
        assert_eq!(p.fits, started, "{}", id(&r));
        rows.push(E2e {
            id: id(&r).to_string(),
            kv_pct,
            tokens_pct,
            conc_pct,
        });
    }
    let kv_abs = abs_all(&rows.iter().map(|e| e.kv_pct).collect::<Vec<_>>());
    let tok_abs = abs_all(&rows.iter().map(|e| e.tokens_pct).collect::<Vec<_>>());
    let conc_abs = abs_all(&rows.iter().filter_map(|e| e.conc_pct).collect::<Vec<_>>());
    let worst = rows
        .iter()
        .max_by(|a, b| a.kv_pct.abs().total_cmp(&b.kv_pct.abs()))
        .map_or(String::new(), |e| format!("{} {:+.1}%", e.id, e.kv_pct));
    println!(
        "serve parts: activation (text-only) median_abs_gib={:.3} max_abs_gib={:.3}; weights median_abs_pct={:.2} \
         max_abs_pct={:.2}; non-torch median_abs_gib={:.3}; cuda_graph median_abs_gib={:.3} max_abs_gib={:.3}",
        quantile(abs_all(&act_errs), 0.5),
        quantile(abs_all(&act_errs), 1.0),
        quantile(abs_all(&weight_errs), 0.5),
        quantile(abs_all(&weight_errs), 1.0),
        quantile(abs_all(&nt_errs), 0.5),
        quantile(abs_all(&graph_errs), 0.5),
        quantile(abs_all(&graph_errs), 1.0),
    );
    println!(
        "serve parts (multimodal, tower modelled): n={} activation median_abs_gib={:.3} max_abs_gib={:.3}",
        mm_act_errs.len(),
        quantile(abs_all(&mm_act_errs), 0.5),
        quantile(abs_all(&mm_act_errs), 1.0),
    );
    let (kv_med, kv_p90) = (quantile(kv_abs.clone(), 0.5), quantile(kv_abs, 0.9));
    let tok_med = quantile(tok_abs, 0.5);
    let conc_med = quantile(conc_abs.clone(), 0.5);
    println!(
        "serve: n={} kv_cache_median_abs_pct={kv_med:.2} kv_cache_p90_abs_pct={kv_p90:.2} \
         kv_tokens_median_abs_pct={tok_med:.2} max_concurrency_median_abs_pct={conc_med:.2} \
         max_concurrency_p90_abs_pct={:.2} worst={worst}",
        rows.len(),
        quantile(conc_abs, 0.9),
    );
    assert!(rows.len() >= 45, "{}", rows.len());
    // Text-only dense and MoE models: the activation model's residual is ±0.03 GiB, the weights model's
    // ±0.5%, non-torch ±0.02 GiB: well under 1% of a KV pool of tens of GiB.
    assert!(kv_med <= 1.0, "median {kv_med}");
    // The tail is where vramfit lacks a term or the pool is small: the Pixtral tower of Mistral Small 3.1
    // (no `VisionTower` family: +1…+3%), Gemma 3's RoPE caches (weights 0.35…0.61 GiB short after the
    // tower: +0.9…+1.9%), vLLM v0's profiling (+2…+4%), and 3 GiB pools beside 68 GiB of weights
    // (Qwen2.5-72B and Kimi-Dev-72B at TP 2: a 0.13 GiB error is +4…+5%).
    assert!(kv_p90 <= 5.0, "p90 {kv_p90}");
    assert!(conc_med <= 1.0, "concurrency median {conc_med}");
    // The activation model on text-only models.
    let act_max = quantile(abs_all(&act_errs), 1.0);
    assert!(act_max <= 0.05, "activation {act_max}");
    // With the encoder profile (`vllm_encoder_profile`), the Gemma 3 logs: within 0.02 GiB (the logged
    // figure is rounded to 0.01).
    assert!(mm_act_errs.len() >= 3, "{}", mm_act_errs.len());
    let mm_max = quantile(abs_all(&mm_act_errs), 1.0);
    assert!(mm_max <= 0.03, "multimodal activation {mm_max}");
}

/// Gemma 3 4B's tower as `google/gemma-3-4b-it`'s config gives it (the catalog's `vision_config`): SigLIP,
/// 27 layers of width C = 1152, MLP I = 4304, 16 heads, patch 14, 896² images, 256 tokens per image, projected
/// to the text width 2560.
fn gemma3_4b_tower() -> VisionTower {
    VisionTower {
        family: VisionFamily::Gemma3,
        layers: 27,
        hidden: 1152,
        intermediate: 4304,
        heads: 16,
        patch: 14,
        channels: 3,
        out_hidden: 2560,
        image_size: 896,
        tokens_per_image: 256,
        ..VisionTower::default()
    }
}

/// Qwen2.5-VL-7B-Instruct's `vision_config`, as the catalog holds it (32 × 1280, MLP 3420, patch 14, merge 2,
/// out 3584, 4 full-attention layers, window 112).
fn qwen25_vl_7b_tower() -> VisionTower {
    vramfit::catalog::model("qwen2.5-vl-7b-instruct")
        .and_then(|m| m.arch().vision.clone())
        .expect("Qwen2.5-VL-7B's tower in the catalog")
}

/// A Qwen3-VL tower with three deepstack mergers (Qwen3-VL-8B's widths: 27 × 1152, MLP 4304, patch 16,
/// merge 2, out 4096).
fn qwen3_vl_tower() -> VisionTower {
    VisionTower {
        family: VisionFamily::Qwen3Vl,
        layers: 27,
        hidden: 1152,
        intermediate: 4304,
        heads: 16,
        patch: 16,
        channels: 3,
        out_hidden: 4096,
        merge: 2,
        temporal_patch: 2,
        positions: 2304,
        deepstack: 3,
        ..VisionTower::default()
    }
}

fn with_tower(v: VisionTower) -> Architecture {
    Architecture {
        vision: Some(v),
        ..Architecture::default()
    }
}

#[test]
fn the_encoder_profile_by_hand() {
    // items = max(1, min(max(T, tok) // tok, seqs · max(1, min(999, len // tok)))) (MultiModalBudget).
    // Gemma 3: tok = 256 embeds, 4096 patches per 896² image; pixels 3 · 896² = 2,408,448 values per image at
    // b bytes; outputs tok · 2560 · b per image; the tower's working set per patch is the larger of attention
    // 6·C·b and MLP 2·C·b + 2·I·b (GELU input and output), over every patch of the batch.
    //   b = 2: attention 13,824, MLP 4,608 + 17,216 = 21,824 B per patch.
    // Qwen2.5-VL-7B: the largest image is 3584² (max_pixels 12,845,056): (3584/14)² = 65,536 patches,
    // 16,384 tokens; pixels 3·2·14² = 1,176 values per patch; per patch attention 6·1280·2 + 24·1280 (fp32
    // RoPE temporaries) = 46,080, SwiGLU 2·1280·2 + 3·3420·2 = 25,640.
    // Qwen3-VL: 4096² (longest_edge 16,777,216) / 16² = 65,536 patches, 16,384 tokens; outputs 4096 · (1 + 3
    // deepstack) wide; pixels 3·2·16² = 1,536 values per patch; per patch attention 6·1152·2 + 24·1152 =
    // 41,472 beats GELU 2·1152·2 + 2·4304·2 = 21,824.
    struct Case {
        name: &'static str,
        tower: VisionTower,
        tp: u32,
        b: f64,
        mnbt: u32,
        seqs: u32,
        len: u32,
        items: u32,
        tok: u32,
        pixels: f64,
        outputs: f64,
        forward: f64,
    }
    let cases = [
        // 8192 // 256 = 32 images (the 0.19.0 logs' setting): 32 · 2,408,448 · 2; 32 · 256 · 2560 · 2;
        // 21,824 · 32 · 4096.
        Case {
            name: "gemma3 8192/1024",
            tower: gemma3_4b_tower(),
            tp: 1,
            b: 2.0,
            mnbt: 8192,
            seqs: 1024,
            len: 8192,
            items: 32,
            tok: 256,
            pixels: 154_140_672.0,
            outputs: 41_943_040.0,
            forward: 2_860_515_328.0,
        },
        // 2048 // 256 = 8: 8 · 2,408,448 · 2; 8 · 256 · 2560 · 2; 21,824 · 8 · 4096.
        Case {
            name: "gemma3 2048/256",
            tower: gemma3_4b_tower(),
            tp: 1,
            b: 2.0,
            mnbt: 2048,
            seqs: 256,
            len: 8192,
            items: 8,
            tok: 256,
            pixels: 38_535_168.0,
            outputs: 10_485_760.0,
            forward: 715_128_832.0,
        },
        // One sequence of 300 tokens holds one image (300 // 256 = 1): the decoder bound, 1 · 1 = 1 item.
        Case {
            name: "gemma3 one short sequence",
            tower: gemma3_4b_tower(),
            tp: 1,
            b: 2.0,
            mnbt: 2048,
            seqs: 1,
            len: 300,
            items: 1,
            tok: 256,
            pixels: 4_816_896.0,
            outputs: 1_310_720.0,
            forward: 89_391_104.0,
        },
        // TP 2 splits the MLP: 2·1152·2 + 2·2152·2 = 13,216 < attention 13,824, which is left whole:
        // 13,824 · 131,072. Pixels and outputs are on every GPU.
        Case {
            name: "gemma3 tp2",
            tower: gemma3_4b_tower(),
            tp: 2,
            b: 2.0,
            mnbt: 8192,
            seqs: 1024,
            len: 8192,
            items: 32,
            tok: 256,
            pixels: 154_140_672.0,
            outputs: 41_943_040.0,
            forward: 1_811_939_328.0,
        },
        // fp32: per patch max(6·1152·4 = 27,648, 2·1152·4 + 2·4304·4 = 43,648) · 32,768; 8 · 2,408,448 · 4;
        // 8 · 256 · 2560 · 4.
        Case {
            name: "gemma3 fp32",
            tower: gemma3_4b_tower(),
            tp: 1,
            b: 4.0,
            mnbt: 2048,
            seqs: 256,
            len: 8192,
            items: 8,
            tok: 256,
            pixels: 77_070_336.0,
            outputs: 20_971_520.0,
            forward: 1_430_257_664.0,
        },
        // 16,384 tokens > 8192: the budget is raised to one image (16,384 // 16,384 = 1);
        // 65,536 · 1,176 · 2; 16,384 · 3584 · 2; 46,080 · 65,536.
        Case {
            name: "qwen2.5-vl 8192",
            tower: qwen25_vl_7b_tower(),
            tp: 1,
            b: 2.0,
            mnbt: 8192,
            seqs: 1024,
            len: 8192,
            items: 1,
            tok: 16_384,
            pixels: 154_140_672.0,
            outputs: 117_440_512.0,
            forward: 3_019_898_880.0,
        },
        // 40,000 // 16,384 = 2 images (the prompt could hold 65,536 // 16,384 = 4): twice the above.
        Case {
            name: "qwen2.5-vl 40000",
            tower: qwen25_vl_7b_tower(),
            tp: 1,
            b: 2.0,
            mnbt: 40_000,
            seqs: 1024,
            len: 65_536,
            items: 2,
            tok: 16_384,
            pixels: 308_281_344.0,
            outputs: 234_881_024.0,
            forward: 6_039_797_760.0,
        },
        // One image: 65,536 · 1,536 · 2; 16,384 · 4096 · 4 · 2; 41,472 · 65,536.
        Case {
            name: "qwen3-vl deepstack",
            tower: qwen3_vl_tower(),
            tp: 1,
            b: 2.0,
            mnbt: 8192,
            seqs: 1024,
            len: 8192,
            items: 1,
            tok: 16_384,
            pixels: 201_326_592.0,
            outputs: 536_870_912.0,
            forward: 2_717_908_992.0,
        },
    ];
    for c in cases {
        let e = vllm_encoder_profile(&with_tower(c.tower), c.tp, c.b, c.mnbt, c.seqs, c.len)
            .unwrap_or_else(|| panic!("{}: no profile", c.name));
        assert_eq!((e.items, e.tokens_per_item), (c.items, c.tok), "{}", c.name);
        assert_eq!(e.pixel_bytes, c.pixels, "{} pixels", c.name);
        assert_eq!(e.output_bytes, c.outputs, "{} outputs", c.name);
        assert_eq!(e.forward_bytes, c.forward, "{} forward", c.name);
    }
    assert!(vllm_encoder_profile(&Architecture::default(), 1, 2.0, 8192, 1024, 8192).is_none());
}

#[test]
fn the_vision_tower_weights_by_hand() {
    // Gemma 3 4B's SigLIP (vision.rs's count, module by module): per layer 4·C (two LayerNorms) + 4·C² + 4·C
    // (q, k, v, o with biases) + 2·C·I + I + C (fc1, fc2) = 4,608 + 5,313,024 + 9,921,872 = 15,239,504, × 27
    // = 411,466,608; patch conv 1152·3·14² + 1152 = 678,528; positions 4096 · 1152 = 4,718,592; post-LayerNorm
    // 2,304: tower 416,866,032. Projector 1152 · 2560 + 1152 (RMSNorm) = 2,950,272. Total 419,816,304 (keras-hub
    // gemma3_4b 4,299,915,632 less gemma3_4b_text 3,880,099,328). Linear weights 27 · (4·C² + 2·C·I) =
    // 411,070,464; the other 8,745,840 are replicated under TP.
    let arch = with_tower(gemma3_4b_tower());
    let w = |f: WeightFormat, tp: u32, b: f64| vision_weights_bytes_per_gpu(&arch, f, tp, b, 8192);
    // TP 1, bf16: 419,816,304 · 2.
    assert_eq!(w(WeightFormat::Bf16, 1, 2.0), 839_632_608.0);
    // TP 2: (411,070,464 / 2 + 8,745,840) · 2 = 214,281,072 · 2.
    assert_eq!(w(WeightFormat::Bf16, 2, 2.0), 428_562_144.0);
    // A 4-bit checkpoint keeps the tower in 16-bit; fp32 doubles it.
    assert_eq!(w(WeightFormat::GptqInt4, 1, 2.0), 839_632_608.0);
    assert_eq!(w(WeightFormat::Fp32, 1, 4.0), 1_679_265_216.0);
    assert_eq!(
        vision_weights_bytes_per_gpu(&Architecture::default(), WeightFormat::Bf16, 1, 2.0, 8192),
        0.0
    );
    // Qwen3-VL's deepstack buffers: 3 levels · T · 4096 (text hidden) · 2 B; 8192 − 4096 tokens =
    // 3 · 4096 · 4096 · 2 = 100,663,296.
    let q3 = with_tower(qwen3_vl_tower());
    let d = vision_weights_bytes_per_gpu(&q3, WeightFormat::Bf16, 1, 2.0, 8192)
        - vision_weights_bytes_per_gpu(&q3, WeightFormat::Bf16, 1, 2.0, 4096);
    assert_eq!(d, 100_663_296.0);
}

#[test]
fn a_vlm_plan_adds_the_tower_to_weights_and_the_profiling_peak() {
    // The catalog's Gemma 3 4B has the tower written above.
    let m = catalog::find_model("google/gemma-3-4b-it").expect("gemma-3-4b-it in the catalog");
    let arch = m.arch().clone();
    assert_eq!(arch.vision.as_ref(), Some(&gemma3_4b_tower()));
    let text = Architecture {
        vision: None,
        ..arch.clone()
    };
    let g = (1u64 << 30) as f64;
    let req = |mnbt: u32, seqs: u32| ServeRequest {
        gpu_gib: Some(79.19),
        gpu_name: Some("NVIDIA H100 80GB HBM3".into()),
        gpu_memory_utilization: Some(0.95),
        max_model_len: Some(8192),
        max_num_batched_tokens: Some(mnbt),
        max_num_seqs: Some(seqs),
        ..ServeRequest::default()
    };
    let p = plan(&arch, &req(8192, 1024)).unwrap();
    let t = plan(&text, &req(8192, 1024)).unwrap();
    // Weights: + 839,632,608 B (the tower, above).
    assert!(((p.weights_gib - t.weights_gib) * g - 839_632_608.0).abs() < 1.0);
    // The language-model pass is the peak at 8192 tokens: + 154,140,672 (pixels) + 41,943,040 (outputs).
    assert!(((p.activation_peak_gib - t.activation_peak_gib) * g - 196_083_712.0).abs() < 1.0);
    // At 32,768 tokens and 256 sequences the encoder's own pass is the peak: 128 images,
    // 128 · 4,816,896 (pixels) + 21,824 · 128 · 4096 (tower) = 616,562,688 + 11,442,061,312.
    let p = plan(&arch, &req(32_768, 256)).unwrap();
    let t = plan(&text, &req(32_768, 256)).unwrap();
    assert!((p.activation_peak_gib * g - 12_058_624_000.0).abs() < 1.0);
    assert!(t.activation_peak_gib * g + 128.0 * (4_816_896.0 + 1_310_720.0) < 12_058_624_000.0);
}
