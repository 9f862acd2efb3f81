//! Built-in models and GPUs (pure data with the source of every number), and config.json import.
//!
//! The data files sit beside this module: `models.json` holds each model's Hugging Face config values (read
//! by the same importer users paste into, so the importer is exercised on every entry) and `gpus.json` the
//! GPU facts. Ids are stable: they appear in share URLs and are never renamed once shipped.

mod hybrid;
pub mod import;
pub mod vision_import;

use crate::model::Architecture;
use serde_json::Value;
use std::sync::OnceLock;

/// The catalog data. The browser build embeds it without its source notes (`build.rs`); the native build,
/// which the tests of those notes run on, embeds the files as they are.
#[cfg(target_arch = "wasm32")]
const MODELS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/models.json"));
#[cfg(not(target_arch = "wasm32"))]
const MODELS_JSON: &str = include_str!("models.json");
#[cfg(target_arch = "wasm32")]
const GPUS_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/gpus.json"));
#[cfg(not(target_arch = "wasm32"))]
const GPUS_JSON: &str = include_str!("gpus.json");

/// A catalog model.
#[derive(Clone, Debug)]
pub struct ModelEntry {
    /// Stable, URL-safe id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Hugging Face repository id.
    pub hf_id: String,
    /// Model family (Llama 3, Qwen2.5, …).
    pub family: String,
    /// Size as the publisher names it (e.g. "7B"), when stated.
    pub params_published: Option<String>,
    /// Reference parameter count that the computed count is checked against.
    pub params_reference: f64,
    /// Where the reference count comes from.
    pub params_reference_source: Option<String>,
    /// Where the architecture values come from (empty in the browser build, see [`MODELS_JSON`]).
    pub source: String,
    /// The config.json values.
    config: serde_json::Value,
    arch: Option<Architecture>,
}

impl ModelEntry {
    /// The model's shape (parsed from its config values when the catalog loads).
    pub fn arch(&self) -> &Architecture {
        self.arch
            .as_ref()
            .expect("catalog entries are parsed on load")
    }

    /// The longest context the model was trained for (`max_position_embeddings`, also under `text_config`),
    /// when its config states it.
    pub fn max_position_embeddings(&self) -> Option<u32> {
        import::max_positions(&self.config)
    }
}

/// A catalog GPU.
#[derive(Clone, Debug)]
pub struct GpuEntry {
    /// Stable, URL-safe id.
    pub id: String,
    pub name: String,
    pub vendor: String,
    pub segment: String,
    pub architecture: String,
    /// Memory as the spec sheet sells it, in its "GB" (GDDR/HBM capacities are binary, so ≈ GiB).
    pub memory_gb_as_sold: f64,
    /// Memory a framework can actually use, GiB.
    pub usable_gib: f64,
    /// Why usable differs from sold (empty in the browser build).
    pub usable_note: String,
    /// Memory bandwidth, GB/s (10^9 bytes per second).
    pub memory_bandwidth_gbps: Option<f64>,
    /// Dense BF16 tensor throughput, TFLOPS.
    pub bf16_dense_tflops: Option<f64>,
    /// Dense FP16 tensor throughput, TFLOPS.
    pub fp16_dense_tflops: Option<f64>,
    pub fp8_support: bool,
    pub bf16_support: bool,
    pub flash_attention2_support: bool,
    /// WebGPU `GPUAdapterInfo.vendor` this GPU is likely to report.
    pub webgpu_vendor: Option<String>,
    /// WebGPU `GPUAdapterInfo.architecture` this GPU is likely to report.
    pub webgpu_architecture: Option<String>,
    /// Sources of the numbers (empty in the browser build).
    pub source: String,
}

impl GpuEntry {
    /// Throughput for 16-bit training: BF16 when supported, else FP16.
    pub fn tflops_16bit(&self) -> Option<f64> {
        self.bf16_dense_tflops.or(self.fp16_dense_tflops)
    }
}

/// Every built-in model, parsed once.
pub fn models() -> &'static [ModelEntry] {
    static MODELS: OnceLock<Vec<ModelEntry>> = OnceLock::new();
    MODELS.get_or_init(|| {
        entries(MODELS_JSON, "models.json")
            .map(|mut e| {
                let config = e.get_mut("config").map(Value::take).unwrap_or_default();
                let id = text(&e, "id");
                let imported = import::parse_config(&config)
                    .unwrap_or_else(|err| panic!("catalog model {id}: {err}"));
                ModelEntry {
                    name: text(&e, "name"),
                    hf_id: text(&e, "hf_id"),
                    family: text(&e, "family"),
                    params_published: opt_text(&e, "params_published"),
                    params_reference: number(&e, "params_reference"),
                    params_reference_source: opt_text(&e, "params_reference_source"),
                    source: opt_text(&e, "source").unwrap_or_default(),
                    config,
                    arch: Some(imported.arch),
                    id,
                }
            })
            .collect()
    })
}

/// Every built-in GPU.
pub fn gpus() -> &'static [GpuEntry] {
    static GPUS: OnceLock<Vec<GpuEntry>> = OnceLock::new();
    GPUS.get_or_init(|| {
        entries(GPUS_JSON, "gpus.json")
            .map(|e| GpuEntry {
                id: text(&e, "id"),
                name: text(&e, "name"),
                vendor: text(&e, "vendor"),
                segment: text(&e, "segment"),
                architecture: text(&e, "architecture"),
                memory_gb_as_sold: number(&e, "memory_gb_as_sold"),
                usable_gib: number(&e, "usable_gib"),
                usable_note: opt_text(&e, "usable_note").unwrap_or_default(),
                memory_bandwidth_gbps: opt_number(&e, "memory_bandwidth_gbps"),
                bf16_dense_tflops: opt_number(&e, "bf16_dense_tflops"),
                fp16_dense_tflops: opt_number(&e, "fp16_dense_tflops"),
                fp8_support: flag(&e, "fp8_support"),
                bf16_support: flag(&e, "bf16_support"),
                flash_attention2_support: flag(&e, "flash_attention2_support"),
                webgpu_vendor: opt_text(&e, "webgpu_vendor"),
                webgpu_architecture: opt_text(&e, "webgpu_architecture"),
                source: opt_text(&e, "source").unwrap_or_default(),
            })
            .collect()
    })
}

// The catalog files are read as JSON values and their fields picked out by name: one small reader for both
// files rather than a deserializer generated for each entry type, which the browser build would carry. An
// absent or null field is `None` (or empty text) where the field is optional; a required field that is
// missing or mistyped is a broken catalog, which the tests below catch.

/// The entries (objects) of a catalog file.
fn entries(json: &str, file: &str) -> impl Iterator<Item = Value> {
    match serde_json::from_str(json) {
        Ok(Value::Array(entries)) => entries.into_iter(),
        _ => panic!("{file} is not a JSON array"),
    }
}

fn field<'a>(entry: &'a Value, key: &str) -> Option<&'a Value> {
    entry.get(key).filter(|v| !v.is_null())
}

fn bad(entry: &Value, key: &str) -> ! {
    panic!(
        "catalog entry {}: {key} is missing or mistyped",
        entry["id"]
    )
}

fn opt_text(entry: &Value, key: &str) -> Option<String> {
    field(entry, key).map(|v| v.as_str().unwrap_or_else(|| bad(entry, key)).to_string())
}

fn text(entry: &Value, key: &str) -> String {
    opt_text(entry, key).unwrap_or_else(|| bad(entry, key))
}

fn opt_number(entry: &Value, key: &str) -> Option<f64> {
    field(entry, key).map(|v| v.as_f64().unwrap_or_else(|| bad(entry, key)))
}

fn number(entry: &Value, key: &str) -> f64 {
    opt_number(entry, key).unwrap_or_else(|| bad(entry, key))
}

fn flag(entry: &Value, key: &str) -> bool {
    field(entry, key)
        .and_then(Value::as_bool)
        .unwrap_or_else(|| bad(entry, key))
}

/// A model by id.
pub fn model(id: &str) -> Option<&'static ModelEntry> {
    models().iter().find(|m| m.id == id)
}

/// A GPU by id.
pub fn gpu(id: &str) -> Option<&'static GpuEntry> {
    gpus().iter().find(|g| g.id == id)
}

/// Catalog GPUs whose WebGPU `GPUAdapterInfo` vendor and architecture match what a browser reported
/// (Dawn's strings: vendor "nvidia"/"amd"/"apple"/"intel", architecture "ampere", "lovelace", "metal-3"…).
/// An empty architecture matches every GPU of the vendor; an unknown vendor matches nothing.
pub fn gpus_for_webgpu(vendor: &str, architecture: &str) -> Vec<&'static GpuEntry> {
    let (vendor, architecture) = (
        vendor.to_ascii_lowercase(),
        architecture.to_ascii_lowercase(),
    );
    if vendor.is_empty() {
        return Vec::new();
    }
    gpus()
        .iter()
        .filter(|g| g.webgpu_vendor.as_deref() == Some(vendor.as_str()))
        .filter(|g| {
            architecture.is_empty()
                || g.webgpu_architecture.as_deref() == Some(architecture.as_str())
        })
        .collect()
}

/// Lowercase alphanumerics only, for loose name matching ("Llama-2-7b-hf" ~ "llama 2 7b").
pub fn normalize_name(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Finds a model by Hugging Face id or name, ignoring case, punctuation and chat/instruct suffixes; failing
/// that, by catalog id compared the same way (ids of entries added for names other tools use, such as
/// ms-swift's `qwen1half-72b-chat-int4`).
pub fn find_model(name: &str) -> Option<&'static ModelEntry> {
    let want = normalize_name(name.rsplit('/').next().unwrap_or(name));
    let strip = |mut s: String| {
        // "…-chat-hf", "…-Instruct", "…-Instruct-SFT": strip such suffixes (post-training stages of one
        // architecture) in any order until none is left.
        while let Some(t) = ["chat", "instruct", "it", "hf", "base", "sft", "dpo"]
            .iter()
            .find_map(|suffix| s.strip_suffix(suffix))
        {
            s = t.to_string();
        }
        s
    };
    let want = strip(want);
    models()
        .iter()
        .find(|m| strip(normalize_name(m.hf_id.rsplit('/').next().unwrap_or(""))) == want)
        .or_else(|| {
            models()
                .iter()
                .find(|m| strip(normalize_name(&m.id)) == want)
        })
}

/// Lowercase word and number tokens of a name, also split where letters meet digits
/// ("RTX4090" → rtx4090, rtx, 4090).
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in s
        .to_ascii_lowercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        out.push(word.to_string());
        let mut piece = String::new();
        for c in word.chars() {
            if !piece.is_empty()
                && piece.ends_with(|p: char| p.is_ascii_digit()) != c.is_ascii_digit()
            {
                out.push(std::mem::take(&mut piece));
            }
            piece.push(c);
        }
        if piece.len() < word.len() {
            out.push(piece);
        }
    }
    out
}

/// Finds a GPU by a loose name ("A100-SXM4-80GB", "NVIDIA GeForce RTX 4090", "H100 80GB HBM3"): every
/// token of the GPU's id but its memory size must appear in the name; the memory size breaks ties.
pub fn find_gpu(name: &str) -> Option<&'static GpuEntry> {
    let have = tokens(name);
    let mut best: Option<(&GpuEntry, usize)> = None;
    for g in gpus() {
        let want = tokens(&g.id.replace('-', " "));
        // The chip (first token) and every model number must appear, so "a10" never matches "A100";
        // the memory size and words such as "sxm" or "super" only break ties.
        let is_mem = |t: &String| t.ends_with("gb") && t.len() > 2;
        let required = |(i, t): &(usize, &String)| {
            *i == 0 || (!is_mem(t) && t.chars().any(|c| c.is_ascii_digit()))
        };
        if !want
            .iter()
            .enumerate()
            .filter(required)
            .all(|(_, t)| have.contains(t))
        {
            continue;
        }
        let score = want.iter().filter(|t| have.contains(t)).count();
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((g, score));
        }
    }
    best.map(|(g, _)| g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_matches_its_reference_count_within_one_percent() {
        // Exception: MiniCPM-MoE-8x2B's only reference is the publisher's rounded "13.6B"; its config
        // (8 experts of 3·2304·5760 in 40 layers, tied 122,753-token embedding) gives 13.87 B, 2% more.
        const EXCEPTIONS: [&str; 1] = ["minicpm-moe-8x2b"];
        for m in models()
            .iter()
            .filter(|m| !EXCEPTIONS.contains(&m.id.as_str()))
        {
            // A vision-language model's reference counts the vision tower and projector too.
            let vision = m.arch().vision.as_ref().map_or(0.0, |v| v.params().total());
            let computed = m.arch().params().total + vision;
            let err = (computed - m.params_reference).abs() / m.params_reference;
            assert!(
                err < 0.01,
                "{}: computed {computed:.0}, reference {} ({:.2}% off)",
                m.id,
                m.params_reference,
                err * 100.0
            );
        }
    }

    #[test]
    fn new_families_import_their_distinctive_fields() {
        let arch = |id: &str| model(id).unwrap_or_else(|| panic!("{id}")).arch().clone();
        // gpt-oss: alternating 128-token sliding window and full attention, every layer MoE.
        let oss = arch("gpt-oss-20b");
        assert_eq!((oss.sliding_window, oss.sliding_fraction), (128, 0.5));
        assert_eq!(oss.moe.map(|m| (m.experts, m.active)), Some((32, 4)));
        // Llama 4: dense layers of intermediate_size_mlp between MoE layers (Maverick), one shared expert of
        // intermediate_size, chunked attention on the 3 in 4 RoPE layers.
        let maverick = arch("llama-4-maverick-17b-128e-instruct");
        let m = maverick.moe.expect("MoE");
        assert_eq!(
            (
                maverick.intermediate,
                m.expert_intermediate,
                m.shared_intermediate,
                m.dense_layers
            ),
            (16384, 8192, 8192, 24)
        );
        assert_eq!(
            (maverick.sliding_window, maverick.sliding_fraction),
            (8192, 0.75)
        );
        assert!(!maverick.tied_embeddings && !maverick.qk_norm);
        assert_eq!(
            arch("llama-4-scout-17b-16e-instruct")
                .moe
                .map(|m| m.dense_layers),
            Some(0)
        );
        // DeepSeek-V3 / Kimi-K2: MLA, leading dense layers, one shared expert.
        let v3 = arch("deepseek-v3");
        assert_eq!(v3.attention, crate::model::AttentionKind::Mla);
        assert_eq!(
            v3.moe.map(|m| (m.dense_layers, m.shared_intermediate)),
            Some((3, 2048))
        );
        assert_eq!(
            arch("kimi-k2-instruct")
                .moe
                .map(|m| (m.experts, m.dense_layers)),
            Some((384, 1))
        );
        // GLM-4.5: q/k norms by flag, q/k/v biases; Air has no q/k norms.
        let glm = arch("glm-4.5");
        assert!(glm.qk_norm && glm.biases == crate::model::Biases::Qkv);
        assert!(!arch("glm-4.5-air").qk_norm);
    }

    #[test]
    fn new_gpus_resolve_by_driver_name_and_webgpu_family() {
        let id = |name: &str| find_gpu(name).map(|g| g.id.as_str());
        assert_eq!(id("NVIDIA GeForce RTX 5070"), Some("rtx-5070"));
        assert_eq!(id("NVIDIA GeForce RTX 5070 Ti"), Some("rtx-5070-ti"));
        assert_eq!(
            id("NVIDIA GeForce RTX 5060 Ti 16GB"),
            Some("rtx-5060-ti-16gb")
        );
        assert_eq!(id("NVIDIA H200"), Some("h200"));
        assert_eq!(id("NVIDIA H200 NVL"), Some("h200-nvl"));
        assert_eq!(id("NVIDIA GB200"), Some("gb200"));
        assert_eq!(id("NVIDIA GB10"), Some("gb10-dgx-spark"));
        assert_eq!(
            id("NVIDIA RTX PRO 6000 Blackwell Workstation Edition"),
            Some("rtx-pro-6000-blackwell")
        );
        assert_eq!(
            id("NVIDIA RTX PRO 6000 Blackwell Server Edition"),
            Some("rtx-pro-6000-blackwell-server")
        );
        assert_eq!(id("NVIDIA RTX 6000 Ada Generation"), Some("rtx-6000-ada"));
        assert_eq!(
            id("AMD Radeon 8060S Graphics"),
            Some("radeon-8060s-strix-halo")
        );
        assert_eq!(id("Apple M4 Pro"), Some("apple-m4-pro"));
        assert_eq!(id("Apple M4 Max"), Some("apple-m4-max"));
        let family = |v: &str, a: &str| -> Vec<&str> {
            gpus_for_webgpu(v, a)
                .iter()
                .map(|g| g.id.as_str())
                .collect()
        };
        let blackwell = family("nvidia", "blackwell");
        assert!(blackwell.contains(&"rtx-5080") && blackwell.contains(&"rtx-pro-6000-blackwell"));
        assert!(!blackwell.contains(&"b200") && !blackwell.contains(&"gb10-dgx-spark"));
        assert!(family("amd", "rdna-3").contains(&"rx-7900-xtx"));
        assert_eq!(family("amd", "rdna-4"), vec!["radeon-ai-pro-r9700"]);
        assert_eq!(family("intel", "xe-2hpg"), vec!["arc-b580", "arc-pro-b60"]);
        assert!(!family("intel", "").contains(&"gaudi-3"));
    }

    #[test]
    fn ids_are_unique_and_url_safe() {
        let mut seen = std::collections::HashSet::new();
        for id in models()
            .iter()
            .map(|m| &m.id)
            .chain(gpus().iter().map(|g| &g.id))
        {
            assert!(seen.insert(id.clone()), "duplicate id {id}");
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'),
                "id not URL-safe: {id}"
            );
        }
        assert!(models().len() >= 125);
        assert!(gpus().len() >= 59);
    }

    // Natively only: the refusals are panics, caught where panics unwind.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn the_reader_takes_absent_and_null_optional_fields_alike_and_refuses_a_broken_entry() {
        let entry: Value = serde_json::from_str(
            r#"{"id":"x","name":"X","bf16_dense_tflops":null,"webgpu_vendor":"nvidia","source":null}"#,
        )
        .unwrap();
        assert_eq!(opt_number(&entry, "bf16_dense_tflops"), None);
        assert_eq!(opt_number(&entry, "fp16_dense_tflops"), None);
        assert_eq!(opt_text(&entry, "webgpu_vendor").as_deref(), Some("nvidia"));
        assert_eq!(opt_text(&entry, "source").unwrap_or_default(), "");
        assert_eq!(text(&entry, "name"), "X");
        assert!(std::panic::catch_unwind(|| number(&entry, "usable_gib")).is_err());
        assert!(std::panic::catch_unwind(|| flag(&entry, "name")).is_err());
    }

    #[test]
    fn every_gpu_has_memory() {
        for g in gpus() {
            assert!(
                g.usable_gib > 0.0 && g.usable_gib <= g.memory_gb_as_sold,
                "{}",
                g.id
            );
        }
    }

    #[test]
    fn webgpu_strings_suggest_a_family() {
        let ada: Vec<&str> = gpus_for_webgpu("nvidia", "lovelace")
            .iter()
            .map(|g| g.id.as_str())
            .collect();
        assert!(ada.contains(&"rtx-4090") && ada.contains(&"l40s") && !ada.contains(&"rtx-3090"));
        assert!(gpus_for_webgpu("google", "swiftshader").is_empty());
        assert!(gpus_for_webgpu("", "").is_empty());
        assert!(!gpus_for_webgpu("apple", "").is_empty());
    }

    #[test]
    fn loose_names_resolve() {
        assert_eq!(
            find_gpu("A100-SXM4-80GB").map(|g| g.id.as_str()),
            Some("a100-80gb")
        );
        assert_eq!(
            find_gpu("NVIDIA GeForce RTX 4090").map(|g| g.id.as_str()),
            Some("rtx-4090")
        );
        assert_eq!(
            find_gpu("NVIDIA H100 80GB HBM3").map(|g| g.id.as_str()),
            Some("h100-pcie")
        );
        assert_eq!(
            find_gpu("H100-SXM5-80GB").map(|g| g.id.as_str()),
            Some("h100-sxm")
        );
        assert_eq!(find_gpu("Tesla T4").map(|g| g.id.as_str()), Some("t4"));
        assert_eq!(find_gpu("A10").map(|g| g.id.as_str()), Some("a10"));
        assert_eq!(
            find_model("meta-llama/Llama-2-7b-chat-hf").map(|m| m.id.as_str()),
            Some("llama-2-7b-hf")
        );
        assert_eq!(
            find_model("Qwen/Qwen2.5-7B-Instruct").map(|m| m.id.as_str()),
            Some("qwen2.5-7b")
        );
        // Names as the reference cases give them: a Hub id under another org, or an ms-swift model type
        // matched by catalog id.
        for (name, id) in [
            ("AI-ModelScope/Mixtral-8x22B-v0.1", "mixtral-8x22b-v0.1"),
            ("OpenBMB/MiniCPM-2B-sft-fp32", "minicpm-2b-sft-fp32"),
            ("qwen1half-72b-chat-int4", "qwen1half-72b-chat-int4"),
            ("codeqwen1half-7b-chat", "codeqwen1half-7b-chat"),
            ("internlm2-7b-sft-chat", "internlm2-7b-sft-chat"),
            ("atom-7b-chat", "atom-7b-chat"),
            ("deepseek-v2-chat", "deepseek-v2-chat"),
        ] {
            assert_eq!(find_model(name).map(|m| m.id.as_str()), Some(id), "{name}");
        }
    }
}
