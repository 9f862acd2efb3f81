//! URL state ⇄ [`Form`]: readable keys, a version key, catalog ids. Decoding is total: unknown keys are
//! ignored, bad values fall back to the default, and each is reported so the page can say what it ignored.
//! Old links keep working: a missing key means "default", and keys are only ever added.

use crate::catalog;
use crate::form::{Form, CUSTOM};
use crate::model::limits;
use crate::model::{Architecture, AttentionKind, Biases, Mla, MlpKind, Module, Moe};
use serde::{de::DeserializeOwned, Serialize};

/// Version written into every link (`v=1`).
pub const VERSION: u32 = 1;

/// Longest query string decoded; the rest is ignored (a real link is a few hundred bytes).
const MAX_QUERY: usize = 8192;

/// Something a link held that the page could not use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// A key the page does not know.
    UnknownKey(String),
    /// A known key with a value that is not valid for it.
    BadValue { key: String, value: String },
}

/// The serde (kebab-case) id of a unit enum variant, e.g. `Mode::Qlora` → `"qlora"`.
pub fn enum_id<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The unit enum variant with this serde id, if any.
pub fn enum_from<T: DeserializeOwned>(s: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).ok()
}

fn targets_id(t: &[Module]) -> String {
    if Module::ALL.iter().all(|m| t.contains(m)) {
        return "all".into();
    }
    Module::ALL
        .iter()
        .filter(|m| t.contains(m))
        .map(enum_id)
        .collect::<Vec<_>>()
        .join(",")
}

fn targets_from(s: &str) -> Option<Vec<Module>> {
    if s == "all" {
        return Some(Module::ALL.to_vec());
    }
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',').map(enum_from::<Module>).collect()
}

/// A custom architecture as `key:value` pairs, e.g. `l:32,h:4096,a:32,k:8,d:128,i:14336,v:128256,t:0,mlp:g`,
/// plus `moe:E/active/width/shared/dense` and `mla:q_rank/kv_rank/nope/rope/v` when present.
pub fn arch_id(a: &Architecture) -> String {
    let bias = match a.biases {
        Biases::None => "n",
        Biases::Qkv => "q",
        Biases::All => "a",
    };
    let mut parts = vec![
        format!("l:{}", a.layers),
        format!("h:{}", a.hidden),
        format!("a:{}", a.heads),
        format!("k:{}", a.kv_heads),
        format!("d:{}", a.head_dim),
        format!("i:{}", a.intermediate),
        format!("v:{}", a.vocab),
        format!("t:{}", u8::from(a.tied_embeddings)),
        format!("mlp:{}", if a.mlp == MlpKind::Gated { "g" } else { "p" }),
        format!("bias:{bias}"),
        format!("norms:{}", a.norms_per_layer),
        format!("ln:{}", u8::from(a.layer_norm)),
        format!("qkn:{}", u8::from(a.qk_norm)),
    ];
    if a.learned_positions > 0 {
        parts.push(format!("pos:{}", a.learned_positions));
    }
    if a.sliding_window > 0 {
        parts.push(format!("sw:{}", a.sliding_window));
        parts.push(format!("swf:{}", a.sliding_fraction)); // shortest form that parses back exactly
    }
    if let Some(m) = a.moe {
        parts.push(format!(
            "moe:{}/{}/{}/{}/{}",
            m.experts, m.active, m.expert_intermediate, m.shared_intermediate, m.dense_layers
        ));
    }
    if a.attention == AttentionKind::Mla {
        let m = a.mla;
        parts.push(format!(
            "mla:{}/{}/{}/{}/{}",
            m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
        ));
    }
    parts.join(",")
}

/// Parses [`arch_id`]'s format; `None` when any part is malformed or the shape is impossible.
pub fn arch_from(s: &str) -> Option<Architecture> {
    let mut a = Architecture::default();
    let dim = |v: &str| number(v, 0, limits::MAX_DIM);
    let five = |v: &str| -> Option<[u32; 5]> {
        let n: Vec<u32> = v.split('/').map(dim).collect::<Option<_>>()?;
        n.try_into().ok()
    };
    for part in s.split(',') {
        let (k, v) = part.split_once(':')?;
        match k {
            "l" => a.layers = dim(v)?,
            "h" => a.hidden = dim(v)?,
            "a" => a.heads = dim(v)?,
            "k" => a.kv_heads = dim(v)?,
            "d" => a.head_dim = dim(v)?,
            "i" => a.intermediate = dim(v)?,
            "v" => a.vocab = dim(v)?,
            "t" => a.tied_embeddings = number(v, 0, 1)? == 1,
            "mlp" => {
                a.mlp = [("g", MlpKind::Gated), ("p", MlpKind::Plain)]
                    .iter()
                    .find(|(id, _)| *id == v)?
                    .1
            }
            "bias" => {
                a.biases = [("n", Biases::None), ("q", Biases::Qkv), ("a", Biases::All)]
                    .iter()
                    .find(|(id, _)| *id == v)?
                    .1
            }
            "norms" => a.norms_per_layer = number(v, 1, 4)?,
            "ln" => a.layer_norm = number(v, 0, 1)? == 1,
            "qkn" => a.qk_norm = number(v, 0, 1)? == 1,
            "pos" => a.learned_positions = dim(v)?,
            "sw" => a.sliding_window = dim(v)?,
            "swf" => {
                a.sliding_fraction = v.parse::<f64>().ok().filter(|f| (0.0..=1.0).contains(f))?
            }
            "moe" => {
                let [experts, active, expert_intermediate, shared_intermediate, dense_layers] =
                    five(v)?;
                a.moe = Some(Moe {
                    experts,
                    active,
                    expert_intermediate,
                    shared_intermediate,
                    dense_layers,
                });
            }
            "mla" => {
                let [q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim] =
                    five(v)?;
                a.attention = AttentionKind::Mla;
                a.mla = Mla {
                    q_lora_rank,
                    kv_lora_rank,
                    qk_nope_head_dim,
                    qk_rope_head_dim,
                    v_head_dim,
                };
            }
            _ => return None,
        }
    }
    a.check().is_ok().then_some(a)
}

fn flag(b: bool) -> String {
    u8::from(b).to_string()
}

fn flag_from(s: &str) -> Option<bool> {
    number(s, 0, 1).map(|v| v == 1)
}

/// Encodes a form as a query string (without `?`). Only fields that differ from the default are written,
/// so links stay short and a later default change does not silently alter old links' explicit choices.
pub fn encode(form: &Form) -> String {
    let d = Form::default();
    let mut pairs: Vec<(&str, String)> = vec![("v", VERSION.to_string())];
    let mut put = |k: &'static str, v: String, dv: String| {
        if v != dv {
            pairs.push((k, v));
        }
    };
    put("model", form.model.clone(), d.model.clone());
    let arch = if form.model == CUSTOM {
        arch_id(&form.custom_arch)
    } else {
        String::new()
    };
    put("arch", arch, String::new());
    put("gpu", form.gpu.clone(), d.gpu.clone());
    put(
        "vram",
        form.custom_vram_gib.to_string(),
        d.custom_vram_gib.to_string(),
    );
    put("gpus", form.gpus.to_string(), d.gpus.to_string());
    put("ram", form.ram_gib.to_string(), d.ram_gib.to_string());
    put("stack", enum_id(&form.stack), enum_id(&d.stack));
    put("mode", enum_id(&form.mode), enum_id(&d.mode));
    put("weights", enum_id(&form.weights), enum_id(&d.weights));
    put("precision", enum_id(&form.precision), enum_id(&d.precision));
    put("optim", enum_id(&form.optimizer), enum_id(&d.optimizer));
    put("rank", form.lora_rank.to_string(), d.lora_rank.to_string());
    put(
        "targets",
        targets_id(&form.lora_targets),
        targets_id(&d.lora_targets),
    );
    put("embed", flag(form.train_embed), flag(d.train_embed));
    put("head", flag(form.train_lm_head), flag(d.train_lm_head));
    put("dora", flag(form.dora), flag(d.dora));
    put("dropout", flag(form.lora_dropout), flag(d.lora_dropout));
    put(
        "batch",
        form.micro_batch.to_string(),
        d.micro_batch.to_string(),
    );
    put("seq", form.seq_len.to_string(), d.seq_len.to_string());
    put(
        "accum",
        form.grad_accum.to_string(),
        d.grad_accum.to_string(),
    );
    put(
        "varlen",
        flag(form.variable_lengths),
        flag(d.variable_lengths),
    );
    put(
        "ckpt",
        enum_id(&form.checkpointing),
        enum_id(&d.checkpointing),
    );
    put("attn", enum_id(&form.attention), enum_id(&d.attention));
    put("loss", enum_id(&form.loss), enum_id(&d.loss));
    put("par", enum_id(&form.parallelism), enum_id(&d.parallelism));
    put("offload", enum_id(&form.offload), enum_id(&d.offload));
    put(
        "prompt",
        form.prompt_tokens.to_string(),
        d.prompt_tokens.to_string(),
    );
    put("new", form.new_tokens.to_string(), d.new_tokens.to_string());
    put(
        "conc",
        form.concurrent.to_string(),
        d.concurrent.to_string(),
    );
    put("kv", enum_id(&form.kv_dtype), enum_id(&d.kv_dtype));
    pairs
        .into_iter()
        .map(|(k, v)| format!("{k}={}", escape(&v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
fn escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~,".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` and `+`; invalid escapes are kept as text.
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a whole number within `lo..=hi`.
fn number(s: &str, lo: u32, hi: u32) -> Option<u32> {
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|v| (lo..=hi).contains(v))
}

/// Decodes a query string (with or without the leading `?`). Never panics; whatever it cannot use is
/// listed in the second value and left at its default.
pub fn decode(query: &str) -> (Form, Vec<Ignored>) {
    let mut form = Form::default();
    let mut ignored = Vec::new();
    let query = query.strip_prefix('?').unwrap_or(query);
    let query = match query.char_indices().nth(MAX_QUERY) {
        Some((cut, _)) => &query[..cut],
        None => query,
    };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (unescape(k), unescape(v));
        let ok = match key.as_str() {
            "v" => number(&value, 1, VERSION).is_some(),
            "model" if value == CUSTOM => set(&mut form.model, Some(value.clone())),
            "model" => set(
                &mut form.model,
                catalog::model(&value).map(|m| m.id.clone()),
            ),
            "arch" => set(&mut form.custom_arch, arch_from(&value)),
            "gpu" if value == CUSTOM => set(&mut form.gpu, Some(value.clone())),
            "gpu" => set(&mut form.gpu, catalog::gpu(&value).map(|g| g.id.clone())),
            "vram" => set(
                &mut form.custom_vram_gib,
                number(&value, 1, limits::MAX_MEMORY_GIB),
            ),
            "gpus" => set(&mut form.gpus, number(&value, 1, limits::MAX_GPUS)),
            "ram" => set(&mut form.ram_gib, number(&value, 1, limits::MAX_MEMORY_GIB)),
            "stack" => set(&mut form.stack, enum_from(&value)),
            "mode" => set(&mut form.mode, enum_from(&value)),
            "weights" => set(&mut form.weights, enum_from(&value)),
            "precision" => set(&mut form.precision, enum_from(&value)),
            "optim" => set(&mut form.optimizer, enum_from(&value)),
            "rank" => set(&mut form.lora_rank, number(&value, 1, limits::MAX_RANK)),
            "targets" => set(&mut form.lora_targets, targets_from(&value)),
            "embed" => set(&mut form.train_embed, flag_from(&value)),
            "head" => set(&mut form.train_lm_head, flag_from(&value)),
            "dora" => set(&mut form.dora, flag_from(&value)),
            "dropout" => set(&mut form.lora_dropout, flag_from(&value)),
            "batch" => set(&mut form.micro_batch, number(&value, 1, limits::MAX_BATCH)),
            "seq" => set(&mut form.seq_len, number(&value, 1, limits::MAX_TOKENS)),
            "accum" => set(&mut form.grad_accum, number(&value, 1, limits::MAX_BATCH)),
            "varlen" => set(&mut form.variable_lengths, flag_from(&value)),
            "ckpt" => set(&mut form.checkpointing, enum_from(&value)),
            "attn" => set(&mut form.attention, enum_from(&value)),
            "loss" => set(&mut form.loss, enum_from(&value)),
            "par" => set(&mut form.parallelism, enum_from(&value)),
            "offload" => set(&mut form.offload, enum_from(&value)),
            "prompt" => set(
                &mut form.prompt_tokens,
                number(&value, 1, limits::MAX_TOKENS),
            ),
            "new" => set(&mut form.new_tokens, number(&value, 0, limits::MAX_TOKENS)),
            "conc" => set(&mut form.concurrent, number(&value, 1, limits::MAX_BATCH)),
            "kv" => set(&mut form.kv_dtype, enum_from(&value)),
            _ => {
                ignored.push(Ignored::UnknownKey(shorten(&key)));
                continue;
            }
        };
        if !ok {
            ignored.push(Ignored::BadValue {
                key: shorten(&key),
                value: shorten(&value),
            });
        }
    }
    (form, ignored)
}

fn set<T>(slot: &mut T, value: Option<T>) -> bool {
    match value {
        Some(v) => {
            *slot = v;
            true
        }
        None => false,
    }
}

/// Caps text echoed back in notices.
fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Checkpointing, Mode, Stack, WeightFormat};

    #[test]
    fn default_form_encodes_to_version_only() {
        assert_eq!(encode(&Form::default()), "v=1");
        assert_eq!(decode("v=1"), (Form::default(), vec![]));
    }

    #[test]
    fn every_field_round_trips() {
        let form = Form {
            model: "qwen2.5-7b".into(),
            custom_arch: Architecture::default(),
            gpu: "a100-80gb".into(),
            custom_vram_gib: 24,
            gpus: 8,
            ram_gib: 512,
            stack: Stack::Unsloth,
            mode: Mode::Qlora,
            weights: WeightFormat::Nf4Dq,
            precision: crate::model::Precision::Mixed,
            optimizer: crate::model::Optimizer::PagedAdamw8bit,
            lora_rank: 64,
            lora_targets: vec![Module::Q, Module::V],
            train_embed: true,
            train_lm_head: true,
            dora: true,
            lora_dropout: false,
            micro_batch: 3,
            seq_len: 8192,
            grad_accum: 16,
            variable_lengths: false,
            checkpointing: Checkpointing::Offload,
            attention: crate::model::AttentionImpl::Flash2,
            loss: crate::model::LossImpl::Fused,
            parallelism: crate::model::Parallelism::Zero3,
            offload: crate::model::Offload::Optimizer,
            prompt_tokens: 100,
            new_tokens: 0,
            concurrent: 7,
            kv_dtype: crate::model::KvDtype::Fp8,
        };
        let q = encode(&form);
        assert_eq!(decode(&q), (form, vec![]), "{q}");
    }

    #[test]
    fn custom_model_and_gpu_round_trip_every_catalog_shape() {
        for m in crate::catalog::models() {
            let form = Form {
                model: CUSTOM.into(),
                custom_arch: m.arch().clone(),
                gpu: CUSTOM.into(),
                custom_vram_gib: 37,
                ..Form::default()
            };
            assert_eq!(decode(&encode(&form)), (form, vec![]), "{}", m.id);
        }
        assert_eq!(arch_from("l:0,h:1,a:1,k:1,d:1,v:1"), None);
        assert_eq!(arch_from("l:2,a:4,k:8"), None);
        assert_eq!(arch_from("nonsense"), None);
    }

    #[test]
    fn garbage_falls_back_and_is_reported() {
        let (form, ignored) = decode("?v=1&batch=-3&model=nope&zzz=1&seq=%ZZ&%");
        assert_eq!(form, Form::default());
        assert_eq!(ignored.len(), 5, "{ignored:?}");
        assert!(ignored.contains(&Ignored::UnknownKey("zzz".into())));
        assert!(ignored.contains(&Ignored::BadValue {
            key: "batch".into(),
            value: "-3".into()
        }));
    }

    #[cfg(not(target_arch = "wasm32"))]
    proptest::proptest! {
        #[test]
        fn decoding_never_panics(s in ".{0,300}") {
            let _ = decode(&s);
        }

        #[test]
        fn numbers_round_trip(batch in 1u32..100_000, seq in 1u32..1_000_000, rank in 1u32..4096) {
            let form = Form { micro_batch: batch, seq_len: seq, lora_rank: rank, ..Form::default() };
            proptest::prop_assert_eq!(decode(&encode(&form)).0, form);
        }
    }
}
