//! The OOM doctor against real error texts from public bug reports (`tests/data/error-corpus.jsonl`, each
//! with its source URL): every case must get its labelled kind, and every labelled figure must be extracted.
#![cfg(not(target_arch = "wasm32"))]

use serde_json::Value;
use vramfit::doctor::{diagnose, Kind};

fn kind_id(k: Kind) -> &'static str {
    match k {
        Kind::Gpu => "gpu",
        Kind::Host => "host",
        Kind::Disk => "disk",
        Kind::NotMemory => "not-memory",
        Kind::Unrecognised => "unrecognised",
    }
}

#[test]
fn every_corpus_case_is_classified_and_its_figures_extracted() {
    let text = std::fs::read_to_string("tests/data/error-corpus.jsonl").unwrap();
    let mut failures = Vec::new();
    let mut total = 0;
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        total += 1;
        let id = case["id"].as_str().unwrap();
        let want = case["kind"].as_str().unwrap();
        *kinds.entry(want.to_string()).or_default() += 1;
        assert!(
            case["source"].as_str().unwrap().starts_with("https://"),
            "{id}: cite a source"
        );
        let d = diagnose(case["text"].as_str().unwrap(), None);
        if kind_id(d.kind) != want {
            failures.push(format!("{id}: got {:?}, labelled {want}", d.kind));
            continue;
        }
        let got = serde_json::to_value(d.numbers).unwrap();
        for (field, expected) in case["numbers"].as_object().unwrap() {
            let e = expected.as_f64().unwrap();
            match got[field].as_f64() {
                Some(g) if (g - e).abs() <= 0.01 + 1e-3 * e.abs() => {}
                other => failures.push(format!("{id}: {field} = {other:?}, labelled {e}")),
            }
        }
    }
    println!(
        "doctor corpus: {} of {total} correct ({kinds:?})",
        total - failures.len()
    );
    assert!(total >= 40, "the corpus should cover every kind");
    for k in ["gpu", "host", "disk", "not-memory", "unrecognised"] {
        assert!(kinds.contains_key(k), "no {k} case");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn look_alikes_are_not_memory_problems() {
    for text in [
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "RuntimeError: CUDA error: device-side assert triggered",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1333, unhandled cuda error",
    ] {
        assert_eq!(diagnose(text, None).kind, Kind::NotMemory, "{text}");
    }
    let d = diagnose("hello world, my model is slow", None);
    assert_eq!(d.kind, Kind::Unrecognised);
}

#[test]
fn a_capacity_that_differs_from_the_chosen_gpu_is_flagged() {
    let text = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free.";
    let d = diagnose(text, Some(78.4));
    assert!(
        d.hints.contains(&vramfit::doctor::Hint::CapacityMismatch),
        "{d:?}"
    );
    assert!(!diagnose(text, Some(23.5))
        .hints
        .contains(&vramfit::doctor::Hint::CapacityMismatch));
}

proptest::proptest! {
    #[test]
    fn never_panics_on_any_text(s in "\\PC{0,2000}") {
        let _ = diagnose(&s, Some(24.0));
    }

    #[test]
    fn never_panics_on_mangled_oom_messages(a in "[0-9., ]{0,12}", b in "[A-Za-z]{0,4}", cut in 0usize..200) {
        let base = format!("CUDA out of memory. Tried to allocate {a}{b} (GPU 0; {a} GiB total capacity; {a} already allocated; {b} free; {a}{b} reserved in total by PyTorch)");
        let cut = cut.min(base.len());
        let mut end = cut;
        while !base.is_char_boundary(end) { end -= 1; }
        let _ = diagnose(&base[..end], None);
    }
}

#[test]
fn a_ten_megabyte_paste_is_handled() {
    let mut big = "x".repeat(10 << 20);
    big.push_str("\nRuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB");
    let d = diagnose(&big, None);
    assert_eq!(d.kind, Kind::Gpu);
    assert!((d.numbers.tried_gib.unwrap() - 1.0).abs() < 1e-9);
}
