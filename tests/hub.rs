//! The Hub loader against the fixtures of `tests/data/hub` served on 127.0.0.1 by the same server the browser
//! tests use (`tests/support/hub_server.rs`): exact weights of real checkpoint layouts, quantization
//! mapping of real configs, every failure the page must explain, and `vramfit estimate --hub`.
#![cfg(not(target_arch = "wasm32"))]

#[path = "support/hub_server.rs"]
mod hub_server;

use std::sync::OnceLock;
use std::time::{Duration, Instant};
use vramfit::hub::{self, Dtype, HubError, HubModel};
use vramfit::hub_client;
use vramfit::model::WeightFormat;

fn base() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| {
        let port = hub_server::start("tests/data/hub".into(), 0).expect("bind 127.0.0.1");
        format!("http://127.0.0.1:{port}")
    })
}

#[track_caller]
fn load(id: &str) -> Result<HubModel, HubError> {
    hub_client::load(base(), &hub::parse_id(id).unwrap(), Duration::from_secs(10))
}

fn bytes_of(m: &HubModel, d: Dtype) -> u64 {
    let w = m.weights.as_ref().unwrap();
    w.by_dtype
        .iter()
        .find(|t| t.dtype == d)
        .map_or(0, |t| t.bytes)
}

#[test]
fn a_single_file_checkpoint_gives_exact_parameters_and_bytes() {
    let m = load("meta-llama/Llama-3.2-1B").unwrap();
    assert_eq!(
        m.version,
        Some(vramfit::hub::Version::Commit(
            "0000000000000000000000000000000000f1c0de".into()
        ))
    );
    let w = m.weights.as_ref().unwrap();
    assert_eq!((w.files, w.files_read, w.tensors), (1, 1, 146));
    assert_eq!(w.bytes, 2_471_628_800);
    assert_eq!(bytes_of(&m, Dtype::Bf16), w.bytes);
    // The headers' count is the shape's: the importer reads this config exactly.
    let imported = m.imported().unwrap();
    assert_eq!(w.parameters, Some(1_235_814_400));
    assert_eq!(imported.arch.params().total, 1_235_814_400.0);
    assert!(imported.quantization.is_none());
}

#[test]
fn a_sharded_8bit_checkpoint_sums_its_shards_to_the_index_total() {
    let m = load("jeevanchaps/Meta-Llama3.1-8B-Instruct-assessment").unwrap();
    let w = m.weights.as_ref().unwrap();
    assert_eq!((w.files, w.files_read, w.tensors), (2, 2, 739));
    assert_eq!(w.bytes, 9_086_705_888);
    assert_eq!(w.index_total_size, Some(w.bytes));
    // int8 weights, fp32 row scales, one uint8 format flag per layer, fp16 embeddings/head/norms.
    assert_eq!(bytes_of(&m, Dtype::I8), 6_979_321_856);
    assert_eq!(bytes_of(&m, Dtype::F32), 5_505_024);
    assert_eq!(bytes_of(&m, Dtype::U8), 224);
    assert_eq!(bytes_of(&m, Dtype::F16), 2_101_878_784);
    // Quantized: element counts are not parameters, and the index gives none.
    assert_eq!(w.parameters, None);
    let q = m.imported().unwrap().quantization.unwrap();
    assert_eq!(
        (q.method.as_str(), q.format, q.approximate),
        ("bitsandbytes", Some(WeightFormat::Int8), false)
    );
}

#[test]
fn mxfp4_experts_are_counted_exactly_and_the_format_is_mxfp4() {
    let m = load("openai/gpt-oss-20b").unwrap();
    // No X-Repo-Commit here: config.json's ETag tells the version.
    assert!(matches!(m.version, Some(vramfit::hub::Version::Etag(_))));
    let w = m.weights.as_ref().unwrap();
    assert_eq!((w.files, w.files_read), (3, 3));
    assert_eq!(w.bytes, 13_761_264_768);
    // 19.1 B expert weights at 4.25 bits (blocks + E8M0 scales), the rest BF16.
    assert_eq!(bytes_of(&m, Dtype::U8), 10_152_345_600);
    assert_eq!(bytes_of(&m, Dtype::Bf16), 3_608_919_168);
    let imported = m.imported().unwrap();
    let q = imported.quantization.unwrap();
    assert_eq!(
        (q.method.as_str(), q.format, q.approximate),
        ("mxfp4", Some(WeightFormat::Mxfp4), false)
    );
    assert_eq!(imported.weights, Some(WeightFormat::Mxfp4));
    // The weights model on the imported shape: the experts' U8 bytes exactly; the bf16 rest 13,413,888 B
    // short, the o_proj, router and expert biases and attention sinks the shape does not count.
    let p = imported.arch.params();
    assert_eq!(
        p.expert_linear * WeightFormat::Mxfp4.linear_bytes(),
        10_152_345_600.0
    );
    let model =
        vramfit::model::serve::weights_bytes_per_gpu(&imported.arch, WeightFormat::Mxfp4, 1);
    assert_eq!(w.bytes as f64 - model, 13_413_888.0);
}

#[test]
fn real_quantization_configs_map_to_the_nearest_format() {
    let q = |id| {
        let m = load(id).unwrap();
        assert_eq!(m.weights, Err(HubError::NoSafetensors), "{id}");
        m.imported().unwrap().quantization.unwrap()
    };
    let fp8 = q("Qwen/Qwen3-32B-FP8");
    assert_eq!(
        (fp8.format, fp8.approximate),
        (Some(WeightFormat::Fp8), false)
    );
    // compressed-tensors int4 with groups of 32 (inside text_config): GPTQ int4, approximated.
    let kimi = q("moonshotai/Kimi-K2.5");
    assert_eq!(kimi.method, "compressed-tensors");
    assert_eq!(
        (kimi.format, kimi.approximate),
        (Some(WeightFormat::GptqInt4), true)
    );
}

#[test]
fn a_config_with_a_bare_infinity_loads() {
    let m = load("nvidia/Nemotron-H-56B-Base-8K").unwrap();
    assert!(m.config.contains("Infinity"));
    let a = m.imported().unwrap().arch;
    assert_eq!((a.hidden, a.layers, a.kv_heads), (8192, 118, 8));
    assert_eq!(m.weights, Err(HubError::NoSafetensors));
}

#[test]
fn every_failure_is_named() {
    assert_eq!(
        load("meta-llama/Llama-3.1-8B"),
        Err(HubError::Gated {
            id: "meta-llama/Llama-3.1-8B".into(),
            status: 401
        })
    );
    assert_eq!(
        load("meta-llama/Llama-3.3-70B-Instruct"),
        Err(HubError::Gated {
            id: "meta-llama/Llama-3.3-70B-Instruct".into(),
            status: 403
        })
    );
    assert!(matches!(
        load("nobody/no-such-model"),
        Err(HubError::NotFound { file, .. }) if file == "config.json"
    ));
    let truncated = load("vramfit-test/truncated-header").unwrap();
    assert!(
        matches!(
            &truncated.weights,
            Err(HubError::Truncated {
                expected: 16_800,
                got: 8_396,
                ..
            })
        ),
        "{:?}",
        truncated.weights
    );
    let bogus = load("vramfit-test/bogus-header-length").unwrap();
    assert_eq!(
        bogus.weights,
        Err(HubError::HeaderTooLarge {
            file: "model.safetensors".into(),
            length: 1 << 40
        })
    );
    // A Hub slower than the limit: a timeout, on time.
    let start = Instant::now();
    let slow = hub_client::load(
        base(),
        &hub::parse_id("vramfit-test/slow").unwrap(),
        Duration::from_millis(500),
    );
    assert_eq!(slow, Err(HubError::Timeout { seconds: 1 }));
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

fn vramfit(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramfit"))
        .args(args)
        .env_remove("HF_ENDPOINT")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_estimates_a_hub_model() {
    let (code, out, err) = vramfit(&[
        "estimate",
        "--hub",
        "meta-llama/Llama-3.2-1B",
        "--hub-base",
        base(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let est: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(est["params"]["total"], 1_235_814_400.0);
    assert!(
        err.contains("commit 0000000") && err.contains("2.30 GiB (exact"),
        "{err}"
    );

    let (code, out, err) = vramfit(&[
        "estimate",
        "--hub",
        "https://huggingface.co/openai/gpt-oss-20b",
        "--hub-base",
        base(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("parameters:"), "{out}");
    assert!(err.contains("quantization mxfp4 as mxfp4"), "{err}");

    let (code, _, err) = vramfit(&[
        "estimate",
        "--hub",
        "meta-llama/Llama-3.1-8B",
        "--hub-base",
        base(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("HTTP 401") && err.contains("--config"),
        "{err}"
    );
    // The real Hub needs TLS, which this build leaves out: said plainly.
    let (code, _, err) = vramfit(&["estimate", "--hub", "Qwen/Qwen3-0.6B"]);
    assert_eq!(code, 2);
    assert!(err.contains("https:// needs TLS"), "{err}");
    let (code, _, err) = vramfit(&["estimate", "--hub", "not an id"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a model id"), "{err}");
}

/// The weights' bytes an estimate counts (quantized and 16/32-bit parts).
fn weight_parts(est: &vramfit::model::Estimate) -> f64 {
    use vramfit::model::Component;
    est.gpu
        .iter()
        .filter(|p| {
            matches!(
                p.component,
                Component::Weights | Component::WeightsQuantized
            )
        })
        .map(|p| p.bytes)
        .sum()
}

#[test]
fn the_headers_stored_bytes_are_the_estimates_weights() {
    use vramfit::model::{estimate, Job, Mode};
    // The bitsandbytes 8-bit checkpoint: I8 weights and U8 flags are its quantized bytes, the F16
    // embeddings/head/norms and F32 row scales the rest (byte counts from the fixture's headers above).
    let m = load("jeevanchaps/Meta-Llama3.1-8B-Instruct-assessment").unwrap();
    let imported = m.imported().unwrap();
    let stored = m.stored().unwrap();
    assert_eq!(stored.format, WeightFormat::Int8);
    assert_eq!(stored.quantized, (6_979_321_856u64 + 224) as f64);
    assert_eq!(stored.plain, (2_101_878_784u64 + 5_505_024) as f64);
    let serve = Job {
        arch: imported.arch.clone(),
        mode: Mode::Inference,
        weights: WeightFormat::Int8,
        checkpoint: Some(stored),
        ..Job::default()
    };
    assert_eq!(weight_parts(&estimate(&serve)), 9_086_705_888.0);
    // Without the headers the weights are the shape's, which differ.
    let derived = weight_parts(&estimate(&Job {
        checkpoint: None,
        ..serve.clone()
    }));
    assert_ne!(derived, 9_086_705_888.0);
    // Weights held in another format than stored (re-quantized to NF4) are the shape's in that format.
    let nf4 = Job {
        weights: WeightFormat::Nf4,
        ..serve.clone()
    };
    assert_eq!(
        weight_parts(&estimate(&nf4)),
        weight_parts(&estimate(&Job {
            checkpoint: None,
            ..nf4.clone()
        }))
    );

    // gpt-oss-20b: MXFP4 experts (U8 blocks and scales) and its bf16 rest, 13,413,888 B more than the shape.
    let m = load("openai/gpt-oss-20b").unwrap();
    let imported = m.imported().unwrap();
    let stored = m.stored().unwrap();
    assert_eq!(
        (stored.format, stored.quantized, stored.plain),
        (WeightFormat::Mxfp4, 10_152_345_600.0, 3_608_919_168.0)
    );
    let serve = Job {
        arch: imported.arch,
        mode: Mode::Inference,
        weights: WeightFormat::Mxfp4,
        checkpoint: Some(stored),
        ..Job::default()
    };
    assert_eq!(weight_parts(&estimate(&serve)), 13_761_264_768.0);

    // A bf16 checkpoint whose headers hold far more than its shape (another model's): the shape counts,
    // and the estimate says why.
    let m = load("meta-llama/Llama-3.2-1B").unwrap();
    let mut stored = m.weights.as_ref().unwrap().stored(None).unwrap();
    assert_eq!(
        (stored.format, stored.quantized, stored.plain),
        (WeightFormat::Bf16, 0.0, 2_471_628_800.0)
    );
    stored.plain *= 2.0;
    let job = Job {
        arch: m.imported().unwrap().arch,
        mode: Mode::Inference,
        checkpoint: Some(stored),
        ..Job::default()
    };
    let est = estimate(&job);
    assert_eq!(weight_parts(&est), 2_471_628_800.0);
    assert!(est
        .warnings
        .contains(&vramfit::model::Warning::CheckpointDiffersFromShape));
}

#[test]
fn the_cli_counts_a_hub_checkpoints_stored_bytes() {
    let dir = std::env::temp_dir().join(format!("vramfit-hub-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("serve.json");
    std::fs::write(&job, r#"{"mode": "inference"}"#).unwrap();
    let (code, out, err) = vramfit(&[
        "estimate",
        job.to_str().unwrap(),
        "--hub",
        "openai/gpt-oss-20b",
        "--hub-base",
        base(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let est: vramfit::model::Estimate = serde_json::from_str(&out).unwrap();
    assert_eq!(weight_parts(&est), 13_761_264_768.0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_loaded_hub_model_serves_its_stored_bytes() {
    use std::rc::Rc;
    use vramfit::edit::Edit;
    use vramfit::form::Form;
    let m = load("openai/gpt-oss-20b").unwrap();
    let mut form = Form::default();
    Edit::HubLoaded {
        model: Rc::new(m),
        cached: false,
    }
    .apply(&mut form);
    assert_eq!(form.weights, WeightFormat::Mxfp4);
    let gib = form
        .serve_request()
        .weights_gib
        .expect("the headers' bytes");
    assert!(
        (gib * 1_073_741_824.0 - 13_761_264_768.0).abs() < 1.0,
        "{gib}"
    );
}
