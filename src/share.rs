//! URL state ⇄ [`Form`]: readable keys (each setting's key from [`crate::settings`]), a version key, catalog ids. Decoding is total: unknown keys are
//! ignored, bad values fall back to the default, and each is reported so the page can say what it ignored.
//! Old links keep working: a missing key means "default", and keys are only ever added.

use crate::form::Form;
use crate::model::limits;
use crate::model::{
    Activation, Architecture, AttentionKind, Biases, ExpertAdapters, Fused, Mla, MlpKind, Moe,
};

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

pub use crate::settings::{enum_from, enum_id};
use crate::settings::{number, SETTINGS};

/// A custom architecture as `key:value` pairs, e.g. `l:32,h:4096,a:32,k:8,d:128,i:14336,v:128256,t:0,mlp:g`,
/// plus `fu:QG` (fused QKV, fused gate/up as 0/1), `act:gelu-new`, `sc:1` (soft-capping), `cm:1` (a causal mask always built), `moe:E/active/width/shared/dense` (then
/// `mx:v4|no`, how PEFT reaches the experts) and `mla:q_rank/kv_rank/nope/rope/v` when present, and a hybrid
/// stack as `hy:` ([`crate::model::Hybrid::link_id`]; links without it decode as plain transformers).
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
    match (a.fused.qkv, a.fused.gate_up) {
        (false, false) => {}
        (qkv, gate_up) => parts.push(format!("fu:{}{}", u8::from(qkv), u8::from(gate_up))),
    }
    match a.activation {
        Activation::Fused => {}
        Activation::GeluNew => parts.push("act:gelu-new".into()),
        Activation::Xielu => parts.push("act:xielu".into()),
    }
    if a.softcap {
        parts.push("sc:1".into());
    }
    if a.causal_mask_always {
        parts.push("cm:1".into());
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
        if m.shared_gate {
            parts.push("msg:1".into());
        }
        match m.peft {
            ExpertAdapters::Merged => {}
            ExpertAdapters::UntilV5 => parts.push("mx:v4".into()),
            ExpertAdapters::Never => parts.push("mx:no".into()),
        }
    }
    if a.attention == AttentionKind::Mla {
        let m = a.mla;
        parts.push(format!(
            "mla:{}/{}/{}/{}/{}",
            m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim
        ));
    }
    if let Some(v) = &a.vision {
        parts.push(format!("vit:{}", v.link_id()));
    }
    if let Some(hy) = a.stack() {
        parts.push(format!("hy:{}", hy.link_id()));
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
            "fu" => {
                let (qkv, gate_up) = match v {
                    "10" => (true, false),
                    "01" => (false, true),
                    "11" => (true, true),
                    "00" => (false, false),
                    _ => return None,
                };
                a.fused = Fused { qkv, gate_up };
            }
            "sc" => a.softcap = number(v, 0, 1)? == 1,
            "cm" => a.causal_mask_always = number(v, 0, 1)? == 1,
            "act" => {
                a.activation = match v {
                    "gelu-new" => Activation::GeluNew,
                    "xielu" => Activation::Xielu,
                    "fused" => Activation::Fused,
                    _ => return None,
                }
            }
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
                    shared_gate: false,
                    peft: Default::default(),
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
            // After `moe` in every link this code writes.
            "msg" => a.moe.as_mut()?.shared_gate = number(v, 0, 1)? == 1,
            "mx" => {
                let m = a.moe.as_mut()?;
                m.peft = match v {
                    "v4" => ExpertAdapters::UntilV5,
                    "no" => ExpertAdapters::Never,
                    _ => return None,
                };
            }
            "vit" => a.vision = Some(crate::model::VisionTower::from_link_id(v)?),
            "hy" => a.hybrid = Some(Box::new(crate::model::Hybrid::from_link_id(v)?)),
            _ => return None,
        }
    }
    a.check().is_ok().then_some(a)
}

/// Encodes a form as a query string (without `?`). Only fields that differ from the default are written,
/// so links stay short and a later default change does not silently alter old links' explicit choices.
pub fn encode(form: &Form) -> String {
    let d = Form::default();
    let mut pairs = vec![format!("v={VERSION}")];
    for setting in SETTINGS {
        let value = (setting.get)(form);
        if value != (setting.get)(&d) {
            pairs.push(format!("{}={}", setting.key, escape(&value)));
        }
    }
    pairs.join("&")
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
        let ok = match crate::settings::by_key(&key) {
            _ if key == "v" => number(&value, 1, VERSION).is_some(),
            Some(setting) => (setting.set)(&mut form, &value),
            None => {
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
    use crate::form::CUSTOM;
    use crate::model::{Checkpointing, Mode, Module, Stack, WeightFormat};

    #[test]
    fn fused_projections_activation_and_expert_reach_round_trip() {
        let mut a = crate::catalog::model("qwen1.5-moe-a2.7b")
            .unwrap()
            .arch()
            .clone();
        a.fused = Fused {
            qkv: true,
            gate_up: false,
        };
        a.activation = Activation::GeluNew;
        a.softcap = true;
        let id = arch_id(&a);
        assert!(
            id.contains("fu:10") && id.contains("act:gelu-new") && id.contains("msg:1"),
            "{id}"
        );
        assert!(id.contains("mx:v4"), "{id}");
        assert_eq!(arch_from(&id), Some(a));
        // Unknown values are refused, not guessed.
        assert_eq!(arch_from("l:2,h:64,a:2,k:2,d:32,i:128,v:100,fu:2"), None);
        assert_eq!(arch_from("l:2,h:64,a:2,k:2,d:32,i:128,v:100,mx:no"), None);
    }

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
            peft_method: crate::model::peft::Method::Vera,
            virtual_tokens: 30,
            trainable_tokens: 42,
            lora_tokens: true,
            butterfly_factors: 2,
            trained_layers: 4,
            projection_rank: 64,
            optimizer_in_backward: true,
            objective: crate::model::preference::Objective::Grpo,
            reference: crate::model::preference::Reference::Precomputed,
            generations: 4,
            completion_tokens: 1024,
            vllm_gib: 20,
            vllm_sleep: true,
            engine: crate::model::Engine::Sglang,
            gpu_util_pct: 85,
            enforce_eager: true,
            max_num_seqs: 64,
            block_size: 32,
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
            hub: String::new(),
            checkpoint: None,
            images: 3,
            train_vision: true,
            torch_version: crate::model::Version::new(2, 1),
            transformers_version: crate::model::Version::new(4, 44),
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
    fn a_hub_model_is_linked_by_its_id_next_to_its_shape() {
        let form = Form {
            model: CUSTOM.into(),
            custom_arch: crate::catalog::model("qwen2.5-7b").unwrap().arch().clone(),
            hub: "Qwen/Qwen2.5-7B".into(),
            ..Form::default()
        };
        let q = encode(&form);
        assert!(q.contains("&hub=Qwen%2FQwen2.5-7B"), "{q}");
        assert_eq!(decode(&q), (form, vec![]));
        // A link may name only the id (the page then loads the shape); a bad id is reported.
        assert_eq!(decode("hub=https://huggingface.co/a/b").0.hub, "a/b");
        let (f, ignored) = decode("hub=not-an-id");
        assert_eq!(f.hub, "");
        assert_eq!(ignored.len(), 1);
        // The id is not written for a catalog model.
        let catalog = Form {
            hub: "a/b".into(),
            ..Form::default()
        };
        assert_eq!(encode(&catalog), "v=1");
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
