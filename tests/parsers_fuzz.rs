//! A bounded fuzz of every parser that reads what a user types, pastes, links or passes from JavaScript:
//! share links, job JSON, form JSON, `config.json`/`adapter_config.json`, training-setup imports and the OOM
//! doctor. Each gets random text and random JSON trees (deep, wide, with huge and odd numbers); none may
//! panic (debug builds check integer overflow too), and whatever a parser accepts must pass the model's
//! limits and give finite figures. Runs inside `cargo test` with a fixed number of cases.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use serde_json::{json, Value};
use vramfit::catalog::import;
use vramfit::doctor::{diagnose, setup_import::import_setup};
use vramfit::form::Form;
use vramfit::{advice, api, model, share};

/// Keys the parsers know, so random trees reach their code paths rather than only "unknown field".
const KEYS: &[&str] = &[
    "model",
    "arch",
    "mode",
    "micro_batch",
    "seq_len",
    "grad_accum",
    "gpus",
    "lora",
    "rank",
    "targets",
    "dataset_gib",
    "inference",
    "prompt_tokens",
    "new_tokens",
    "batch",
    "hidden",
    "layers",
    "heads",
    "kv_heads",
    "head_dim",
    "vocab",
    "intermediate",
    "moe",
    "experts",
    "active",
    "mla",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "custom_arch",
    "gpu",
    "custom_vram_gib",
    "ram_gib",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "num_local_experts",
    "num_experts_per_tok",
    "text_config",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "r",
    "target_modules",
    "peft_type",
    "zero_optimization",
    "stage",
    "versions",
    "torch",
];

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        prop::sample::select(vec![0.0, -1.0, 1e300, 4294967295.0, 4294967296.0, 0.5])
            .prop_map(|f| json!(f)),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number(),
        prop::sample::select(vec![
            "full",
            "lora",
            "qlora",
            "inference",
            "llama-3.1-8b",
            "custom",
            "4.57",
            "bf16",
            "all-linear",
            "",
            "\u{202e}",
            "9999999999",
        ])
        .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS.to_vec()), inner), 0..6).prop_map(
                |pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            ),
        ]
    })
}

/// A `config.json`: the fields the importer requires, each a random number, plus random extra fields.
fn config() -> impl Strategy<Value = Value> {
    let required = [
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "intermediate_size",
        "vocab_size",
    ];
    (
        prop::collection::vec(
            prop_oneof![3 => (1u32..70_000).prop_map(Value::from), 1 => number()],
            6,
        ),
        prop::collection::vec((prop::sample::select(KEYS.to_vec()), tree()), 0..4),
    )
        .prop_map(move |(values, extra)| {
            let mut obj: serde_json::Map<String, Value> =
                required.iter().map(|k| k.to_string()).zip(values).collect();
            for (k, v) in extra {
                obj.insert(k.to_string(), v);
            }
            Value::Object(obj)
        })
}

fn finite_estimate(job: &model::Job) -> Result<(), TestCaseError> {
    prop_assert_eq!(job.check(), Ok(()));
    let e = model::estimate(job);
    for v in [
        e.peak_allocated,
        e.peak_reserved,
        e.device_total,
        e.host_total,
        e.fit_need,
    ] {
        prop_assert!(v.is_finite() && v >= 0.0, "{v}");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn job_json_never_panics_and_what_it_accepts_is_finite(v in tree()) {
        if let Ok(job) = api::parse_job_json(&v.to_string()) {
            finite_estimate(&job)?;
        }
    }

    #[test]
    fn form_json_never_panics_and_what_it_accepts_is_checked(v in tree()) {
        if let Ok(form) = api::form_from_json(&v.to_string()) {
            prop_assert_eq!(form.check(), Ok(()));
            finite_estimate(&form.job())?;
        }
    }

    #[test]
    fn config_json_never_panics(v in tree(), c in config(), text in ".{0,200}") {
        for input in [&v, &c] {
            if let Ok(imported) = import::parse_config_text(&input.to_string()) {
                prop_assert_eq!(imported.arch.check(), Ok(()));
                let job = model::Job { arch: imported.arch, ..model::Job::default() };
                finite_estimate(&job)?;
            }
        }
        let _ = import::parse_any_text(&v.to_string());
        let _ = import::parse_any_text(&text);
    }

    #[test]
    fn setup_import_never_panics_and_stays_in_range(v in tree(), text in ".{0,200}", flags in
        prop::collection::vec((prop::sample::select(vec![
            "--per_device_train_batch_size", "--gradient_accumulation_steps", "--num_processes",
            "--max_seq_length", "--lora_r", "--bf16", "--deepspeed", "--gradient_checkpointing",
        ]), prop::sample::select(vec!["4294967295", "0", "-1", "1e9", "2", "true", ""])), 0..8)) {
        let cmd: String = flags.iter().map(|(k, v)| format!("{k} {v} ")).collect();
        for input in [v.to_string(), text, cmd] {
            if let Ok(imp) = import_setup(&input, &Form::default()) {
                prop_assert_eq!(imp.form.check(), Ok(()));
                prop_assert!(imp.form.job().effective_batch() < u64::MAX);
            }
        }
    }

    #[test]
    fn links_decode_to_checked_forms(pairs in prop::collection::vec((
        prop::sample::select(vec!["batch", "seq", "accum", "gpus", "rank", "arch", "vram", "ram",
            "prompt", "new", "conc", "model", "mode", "x"]),
        prop::sample::select(vec!["4294967295", "0", "1", "16777216", "16777217", "l:0",
            "l:2,h:8,a:2,k:2,d:4,i:8,v:10,mla:0/4294967295/0/1/8", "llama-3.1-8b", "%", "%zz"]),
    ), 0..10)) {
        let q: String = pairs.iter().map(|(k, v)| format!("{k}={v}&")).collect();
        let (form, _) = share::decode(&q);
        prop_assert_eq!(form.check(), Ok(()));
        finite_estimate(&form.job())?;
    }

    #[test]
    fn the_doctor_never_panics(text in "(?s).{0,400}", words in prop::collection::vec(prop::sample::select(vec![
        "CUDA out of memory.", "Tried to allocate", "99999999999999999999 GiB", "GPU 0 has a total capacity of",
        "of which", "is free.", "Killed", "No space left on device", "NaN MiB", "-1.5 GiB", "\n", "%",
    ]), 0..12)) {
        let _ = diagnose(&text, None);
        let _ = diagnose(&words.concat(), Some(24.0));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// The advisor runs the estimate hundreds of times per form (remedies, solvers): it too must hold on
    /// any form a parser lets through.
    #[test]
    fn the_advisor_holds_on_any_accepted_form(v in tree()) {
        if let Ok(form) = api::form_from_json(&v.to_string()) {
            let a = advice::advise(&form);
            prop_assert!(a.verdict.vram_need.is_finite() && a.verdict.ram_need.is_finite());
        }
    }
}

#[test]
fn nesting_far_past_any_real_request_is_an_error_not_a_crash() {
    for depth in [200, 5_000, 100_000] {
        let deep = format!("{}1{}", "{\"arch\":".repeat(depth), "}".repeat(depth));
        assert!(api::parse_job_json(&deep).is_err(), "{depth}");
        assert!(api::form_from_json(&deep).is_err(), "{depth}");
        assert!(import::parse_config_text(&deep).is_err(), "{depth}");
        let _ = import_setup(&deep, &Form::default());
        let arrays = "[".repeat(depth);
        assert!(api::parse_job_json(&arrays).is_err(), "{depth}");
    }
}
