//! Each setting survives the trips a user makes: into a link and back, and out to a training setup (TRL
//! command, LLaMA-Factory YAML, DeepSpeed JSON) and back in through the importer.
//!
//! What each export carries is decided once per setting, in `SETTINGS` (`Setting::exports`: the names it
//! is written under and the forms on which it travels, or why it cannot): the compiler refuses an entry
//! without that decision, and the tests here hold every decision to the real exports.
//! - A link carries every setting: encode → decode gives the form back.
//! - Each export is read by a real parser (the YAML by serde_yaml, the JSON by serde_json, the command by
//!   the importer after a check of its shape), imported onto a form that shares only what no setup says
//!   (the GPU), and every setting the format carries for that form must come back unchanged.
//! - Every name a decision gives is a key the export really writes, and no key of a setting is left
//!   ignored by the importer.
//! - The random forms vary every setting: a new setting the generator does not set fails
//!   `the_forms_vary_every_setting` until it is added here.
#![cfg(not(target_arch = "wasm32"))]

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use std::collections::{BTreeMap, BTreeSet};
use vramfit::advice::export::{deepspeed_json, llama_factory_yaml, trl_command};
use vramfit::catalog;
use vramfit::doctor::import_setup;
use vramfit::form::{Form, CUSTOM};
use vramfit::model::peft::Method;
use vramfit::model::preference::{Objective, Reference};
use vramfit::model::*;
use vramfit::settings::{self, Carry, SETTINGS};
use vramfit::share;

const FORMATS: [&str; 3] = ["trl", "llama-factory", "deepspeed"];

/// Draws the fields of a form from a list of random words.
struct Pick {
    words: Vec<u32>,
    at: usize,
}

impl Pick {
    fn word(&mut self) -> u32 {
        let w = self.words[self.at % self.words.len()];
        self.at += 1;
        w
    }

    fn one<T: Clone>(&mut self, of: &[T]) -> T {
        of[self.word() as usize % of.len()].clone()
    }

    fn flag(&mut self) -> bool {
        self.word() % 2 == 1
    }

    /// A value in the range of number setting `key`: half the time a small one, otherwise any.
    fn number(&mut self, key: &str) -> u32 {
        let (lo, hi) = settings::range(key);
        assert!(lo < hi, "{key} is not a number setting");
        let w = self.word();
        let span = u64::from(hi - lo) + 1;
        let span = if w % 2 == 0 { span.min(64) } else { span };
        lo + (u64::from(w / 2) % span) as u32
    }
}

fn form_from(words: Vec<u32>) -> Form {
    let mut p = Pick { words, at: 0 };
    let models = catalog::models();
    let model = if p.word() % 8 == 0 {
        CUSTOM.to_string()
    } else {
        p.one(models).id.clone()
    };
    // A custom model's shape and Hub id; a catalog model's link does not hold them (they mean nothing).
    let custom = model == CUSTOM;
    let custom_arch = if custom {
        p.one(models).arch().clone()
    } else {
        Architecture::default()
    };
    let hub = if custom {
        p.one(&["", "Qwen/Qwen2.5-7B", "someone/private-model"])
            .to_string()
    } else {
        String::new()
    };
    let gpus: Vec<String> = catalog::gpus()
        .iter()
        .map(|g| g.id.clone())
        .chain([CUSTOM.to_string()])
        .collect();
    Form {
        model,
        custom_arch,
        hub,
        checkpoint: None,
        gpu: p.one(&gpus),
        custom_vram_gib: p.number("vram"),
        gpus: p.number("gpus"),
        ram_gib: p.number("ram"),
        stack: p.one(&Stack::ALL),
        mode: p.one(&[
            Mode::Full,
            Mode::Lora,
            Mode::Qlora,
            Mode::Freeze,
            Mode::Badam,
            Mode::Lisa,
            Mode::Inference,
        ]),
        weights: p.one(&[
            WeightFormat::Fp32,
            WeightFormat::Bf16,
            WeightFormat::Fp16,
            WeightFormat::Fp8,
            WeightFormat::Int8,
            WeightFormat::Nf4,
            WeightFormat::Nf4Dq,
            WeightFormat::Fp4,
            WeightFormat::GptqInt4,
            WeightFormat::GptqInt8,
            WeightFormat::AwqInt4,
            WeightFormat::Mxfp4,
        ]),
        precision: p.one(&[Precision::Pure16, Precision::Mixed, Precision::Fp32]),
        optimizer: p.one(&[
            Optimizer::Adamw,
            Optimizer::Adamw16,
            Optimizer::Adamw8bit,
            Optimizer::PagedAdamw,
            Optimizer::PagedAdamw8bit,
            Optimizer::Adafactor,
            Optimizer::Sgd,
            Optimizer::SgdMomentum,
            Optimizer::Lion,
            Optimizer::Galore,
            Optimizer::Apollo,
            Optimizer::AdamMini,
            Optimizer::Lomo,
            Optimizer::AdaLomo,
            Optimizer::None,
        ]),
        lora_rank: p.number("rank"),
        lora_targets: {
            let mask = p.word();
            Module::ALL
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0 || mask % 5 == 0)
                .map(|(_, m)| *m)
                .collect()
        },
        train_embed: p.flag(),
        train_lm_head: p.flag(),
        dora: p.flag(),
        lora_dropout: p.flag(),
        peft_method: p.one(&Method::ALL),
        virtual_tokens: p.number("vtok"),
        trainable_tokens: p.number("ttok"),
        lora_tokens: p.flag(),
        butterfly_factors: p.number("bfly"),
        micro_batch: p.number("batch"),
        seq_len: p.number("seq"),
        grad_accum: p.number("accum"),
        variable_lengths: p.flag(),
        checkpointing: p.one(&[
            Checkpointing::Off,
            Checkpointing::Layer,
            Checkpointing::Offload,
        ]),
        attention: p.one(&[
            AttentionImpl::Eager,
            AttentionImpl::Sdpa,
            AttentionImpl::Flash2,
        ]),
        loss: p.one(&[
            LossImpl::Fp32Logits,
            LossImpl::Bf16Logits,
            LossImpl::Chunked,
            LossImpl::Fused,
        ]),
        parallelism: p.one(&[
            Parallelism::Ddp,
            Parallelism::Zero1,
            Parallelism::Zero2,
            Parallelism::Zero3,
            Parallelism::Pipeline,
            Parallelism::Tensor,
        ]),
        offload: p.one(&[Offload::None, Offload::Optimizer, Offload::ParamOptimizer]),
        prompt_tokens: p.number("prompt"),
        new_tokens: p.number("new"),
        concurrent: p.number("conc"),
        kv_dtype: p.one(&[KvDtype::Bf16, KvDtype::Fp8, KvDtype::Int8, KvDtype::Int4]),
        trained_layers: p.number("ftl"),
        projection_rank: p.number("prank"),
        optimizer_in_backward: p.flag(),
        objective: p.one(&[
            Objective::Sft,
            Objective::Dpo,
            Objective::Orpo,
            Objective::Simpo,
            Objective::Kto,
            Objective::RewardModel,
            Objective::Grpo,
            Objective::Ppo,
        ]),
        reference: p.one(&[
            Reference::Copy,
            Reference::DisabledAdapters,
            Reference::Precomputed,
            Reference::None,
        ]),
        generations: p.number("gens"),
        completion_tokens: p.number("comp"),
        vllm_gib: p.number("vllm"),
        vllm_sleep: p.flag(),
        engine: p.one(&[Engine::Vllm, Engine::Sglang, Engine::Transformers]),
        gpu_util_pct: p.number("gmu"),
        enforce_eager: p.flag(),
        max_num_seqs: p.number("mns"),
        block_size: p.number("block"),
        images: p.number("images"),
        train_vision: p.flag(),
        torch_version: Version::new(1 + p.word() % 3, p.word() % 40),
        transformers_version: Version::new(4 + p.word() % 3, p.word() % 80),
    }
}

fn form_strategy() -> impl Strategy<Value = Form> {
    prop::collection::vec(any::<u32>(), 96).prop_map(form_from)
}

/// The decision of setting `s` for `format`.
fn decision(s: &settings::Setting, format: &str) -> Carry {
    s.exports
        .all()
        .into_iter()
        .find(|(name, _)| *name == format)
        .map(|(_, c)| c)
        .unwrap_or_else(|| panic!("no format {format}"))
}

/// The names a decision writes when it carries the setting on this form.
fn carried(c: Carry, form: &Form) -> Option<&'static [&'static str]> {
    match c {
        Carry::Yes { names, when, .. } if when(form) => Some(names),
        _ => None,
    }
}

/// The export in `format`, if the form has one, and the keys a real parser finds in it.
fn export(format: &str, form: &Form) -> Option<(String, BTreeSet<String>)> {
    match format {
        "trl" => {
            let cmd = trl_command(form);
            let keys = trl_keys(&cmd);
            Some((cmd, keys))
        }
        "llama-factory" => {
            let yaml = llama_factory_yaml(form);
            let map: serde_yaml::Mapping = serde_yaml::from_str(&yaml)
                .unwrap_or_else(|e| panic!("the YAML does not parse: {e}\n{yaml}"));
            let keys = map
                .iter()
                .map(|(k, v)| {
                    assert!(
                        !v.is_mapping() && !v.is_sequence(),
                        "{k:?} is not a scalar:\n{yaml}"
                    );
                    k.as_str().expect("string keys").to_string()
                })
                .collect();
            Some((yaml, keys))
        }
        "deepspeed" => {
            let json = deepspeed_json(form)?;
            let v: serde_json::Value = serde_json::from_str(&json).expect("the JSON parses");
            let batch = u64::from(form.micro_batch) * u64::from(form.grad_accum);
            assert_eq!(
                v["train_batch_size"].as_u64(),
                Some(batch * u64::from(form.gpus)),
                "DeepSpeed's batch rule:\n{json}"
            );
            assert!(
                !(v["bf16"]["enabled"] == true && v["fp16"]["enabled"] == true),
                "bf16 and fp16 at once:\n{json}"
            );
            let mut keys = BTreeSet::new();
            flatten("", &v, &mut keys);
            Some((json, keys))
        }
        other => panic!("no format {other}"),
    }
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeSet<String>) {
    match v.as_object() {
        Some(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        None => {
            out.insert(prefix.to_string());
        }
    }
}

/// Checks the command's shape (a launcher or `trl <script>`, one flag a line, each flag once) and returns
/// its flags and its script.
fn trl_keys(cmd: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = cmd.lines().collect();
    for line in &lines[..lines.len() - 1] {
        assert!(line.ends_with(" \\"), "a line without continuation:\n{cmd}");
    }
    let words: Vec<&str> = cmd.split_whitespace().filter(|w| *w != "\\").collect();
    let (script, rest) = match words.as_slice() {
        ["trl", script, rest @ ..] => (script.to_string(), rest),
        ["accelerate", "launch", "--num_processes", n, "-m", module, rest @ ..] => {
            assert!(n.parse::<u32>().is_ok_and(|n| n > 1), "{cmd}");
            let script = module
                .strip_prefix("trl.scripts.")
                .unwrap_or_else(|| panic!("{cmd}"));
            (script.to_string(), rest)
        }
        _ => panic!("neither `trl <script>` nor a launcher:\n{cmd}"),
    };
    let mut keys = BTreeSet::from([script]);
    if words[0] == "accelerate" {
        keys.insert("num_processes".to_string());
    }
    assert!(rest[0].starts_with("--"), "{cmd}");
    for w in rest {
        if let Some(flag) = w.strip_prefix("--") {
            assert!(keys.insert(flag.to_string()), "--{flag} twice:\n{cmd}");
        }
    }
    keys
}

/// The form an export is imported onto: the defaults, with the GPU the setup was written for (no setup
/// names it, and vLLM's share of it is a fraction of its memory).
fn base(form: &Form) -> Form {
    Form {
        gpu: form.gpu.clone(),
        custom_vram_gib: form.custom_vram_gib,
        ..Form::default()
    }
}

/// Exports `form` in `format`, imports it back and compares every setting the format carries.
fn round_trip(format: &str, form: &Form) -> Result<(), TestCaseError> {
    let Some((text, _)) = export(format, form) else {
        return Ok(());
    };
    let back = import_setup(&text, &base(form))
        .map_err(|e| TestCaseError::fail(format!("{format}: {e:?}\n{text}")))?;
    for s in SETTINGS {
        if carried(decision(s, format), form).is_some() {
            prop_assert_eq!(
                (s.get)(&back.form),
                (s.get)(form),
                "{}: `{}` did not come back from\n{}",
                format,
                s.key,
                text
            );
        }
    }
    // The page's and the CLI's import box reads it the same way.
    let detected = vramfit::imports::detect(&text, &base(form))
        .map_err(|e| TestCaseError::fail(format!("{format}: detect: {e}")))?;
    prop_assert_eq!(&detected.form, &back.form, "{}: detect differs", format);
    for item in &back.ignored {
        let key = item.split('=').next().unwrap_or_default();
        prop_assert!(
            settings::by_alias(key).is_none(),
            "{}: `{}`, a setting's own key, was ignored",
            format,
            key
        );
    }
    if format == "llama-factory" {
        // The importer's YAML reader against a real one: the same keys, parsed by serde_yaml and given as
        // JSON (whose keys come sorted, so no reading may depend on the order of the keys).
        let value: serde_json::Value = serde_yaml::from_str(&text).expect("YAML");
        let json = serde_json::to_string(&value).expect("JSON");
        let again = import_setup(&json, &base(form))
            .map_err(|e| TestCaseError::fail(format!("as JSON: {e:?}")))?;
        prop_assert_eq!(&again.form, &back.form, "the YAML read as JSON:\n{}", text);
    }
    if format == "trl" {
        // The flags in reverse order import the same.
        let words: Vec<&str> = text.split_whitespace().filter(|w| *w != "\\").collect();
        let head = if words[0] == "accelerate" { 6 } else { 2 };
        let mut groups: Vec<Vec<&str>> = Vec::new();
        for w in &words[head..] {
            match groups.last_mut() {
                Some(g) if !w.starts_with("--") => g.push(w),
                _ => groups.push(vec![w]),
            }
        }
        groups.reverse();
        let reversed = words[..head]
            .iter()
            .copied()
            .chain(groups.concat())
            .collect::<Vec<_>>()
            .join(" ");
        let again = import_setup(&reversed, &base(form))
            .map_err(|e| TestCaseError::fail(format!("reversed: {e:?}")))?;
        prop_assert_eq!(&again.form, &back.form, "reversed:\n{}", reversed);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_setting_survives_the_link(form in form_strategy()) {
        prop_assert_eq!(share::decode(&share::encode(&form)), (form, vec![]));
    }

    #[test]
    fn every_carried_setting_survives_export_and_import(form in form_strategy()) {
        for format in FORMATS {
            round_trip(format, &form)?;
        }
    }
}

/// Forms drawn the way the property tests draw them, deterministically.
fn sample(n: usize) -> Vec<Form> {
    let mut runner = TestRunner::deterministic();
    let strategy = form_strategy();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).expect("a form").current())
        .collect()
}

#[test]
fn the_forms_vary_every_setting() {
    let forms = sample(600);
    for s in SETTINGS {
        let seen: BTreeSet<String> = forms.iter().map(|f| (s.get)(f)).collect();
        assert!(
            seen.len() >= 2,
            "the random forms never vary `{}`: set it in `form_from`",
            s.key
        );
    }
}

#[test]
fn every_setting_decides_every_format_and_its_names_are_written() {
    let forms = sample(3000);
    let mut written: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for f in &forms {
        for format in FORMATS {
            if let Some((_, keys)) = export(format, f) {
                written.entry(format).or_default().extend(keys);
            }
        }
    }
    let mut carried_somewhere = 0;
    for s in SETTINGS {
        assert_eq!(s.exports.all().map(|(f, _)| f), FORMATS, "{}", s.key);
        for format in FORMATS {
            match decision(s, format) {
                Carry::Yes {
                    names, otherwise, ..
                } => {
                    carried_somewhere += 1;
                    assert!(!names.is_empty(), "{format}: `{}` names no key", s.key);
                    for n in names {
                        assert!(
                            written[format].contains(*n),
                            "{format}: `{}` says it is written as `{n}`, which no export has",
                            s.key
                        );
                    }
                    // A carried setting travels on some forms, and says why not on the others.
                    let travels = forms
                        .iter()
                        .filter(|f| carried(decision(s, format), f).is_some());
                    let count = travels.count();
                    assert!(count > 0, "{format}: `{}` never travels", s.key);
                    assert!(
                        count == forms.len() || !otherwise.is_empty(),
                        "{format}: `{}` stays behind on some forms without saying why",
                        s.key
                    );
                }
                Carry::No(why) => {
                    assert!(
                        !why.is_empty(),
                        "{format}: `{}` says no without a reason",
                        s.key
                    )
                }
            }
        }
    }
    assert!(carried_somewhere > 40, "{carried_somewhere}");
}

// ---- Table cases: exact texts, written out by hand ---------------------------------------------------

fn words(cmd: &str) -> Vec<String> {
    cmd.replace("\\\n", " ")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The value after `--flag` (`None` for a bare flag, panics when absent).
fn flag(cmd: &str, name: &str) -> Option<String> {
    let w = words(cmd);
    let i = w
        .iter()
        .position(|x| x == &format!("--{name}"))
        .unwrap_or_else(|| panic!("--{name} missing:\n{cmd}"));
    w.get(i + 1).filter(|v| !v.starts_with("--")).cloned()
}

fn has_flag(cmd: &str, name: &str) -> bool {
    words(cmd).contains(&format!("--{name}"))
}

fn yaml(form: &Form) -> serde_yaml::Mapping {
    serde_yaml::from_str(&llama_factory_yaml(form)).unwrap()
}

fn y<'a>(map: &'a serde_yaml::Mapping, key: &str) -> &'a serde_yaml::Value {
    map.get(key)
        .unwrap_or_else(|| panic!("{key} missing: {map:?}"))
}

fn lora() -> Form {
    Form {
        model: "qwen2.5-7b".into(),
        ..Form::default()
    }
}

#[test]
fn precision_is_written_as_dtype_and_autocast() {
    let cases = [
        // (precision, weights, TRL autocast flag and value, TRL dtype, LLaMA-Factory key)
        (
            Precision::Pure16,
            WeightFormat::Bf16,
            ("bf16", None),
            "bfloat16",
            Some("pure_bf16"),
        ),
        (
            Precision::Pure16,
            WeightFormat::Fp16,
            ("fp16", None),
            "float16",
            None,
        ),
        (
            Precision::Mixed,
            WeightFormat::Bf16,
            ("bf16", None),
            "float32",
            Some("bf16"),
        ),
        (
            Precision::Mixed,
            WeightFormat::Fp16,
            ("fp16", None),
            "float32",
            Some("fp16"),
        ),
        (
            Precision::Fp32,
            WeightFormat::Bf16,
            ("bf16", Some("false")),
            "float32",
            None,
        ),
    ];
    for (precision, weights, (amp, amp_value), dtype, lf) in cases {
        let form = Form {
            precision,
            weights,
            parallelism: Parallelism::Zero2,
            gpus: 2,
            ..lora()
        };
        let cmd = trl_command(&form);
        assert_eq!(flag(&cmd, amp).as_deref(), amp_value, "{cmd}");
        assert_eq!(flag(&cmd, "dtype").as_deref(), Some(dtype), "{cmd}");
        let back = import_setup(&cmd, &Form::default()).unwrap().form;
        assert_eq!((back.precision, back.weights), (precision, weights));
        if let Some(key) = lf {
            assert_eq!(y(&yaml(&form), key), &serde_yaml::Value::Bool(true));
            let back = import_setup(&llama_factory_yaml(&form), &Form::default()).unwrap();
            assert_eq!(
                (back.form.precision, back.form.weights),
                (precision, weights)
            );
        }
        let ds: serde_json::Value = serde_json::from_str(&deepspeed_json(&form).unwrap()).unwrap();
        let (bf16, fp16) = match (precision, weights) {
            (Precision::Fp32, _) => (false, false),
            (_, WeightFormat::Fp16) => (false, true),
            _ => (true, false),
        };
        assert_eq!(
            (&ds["bf16"]["enabled"], &ds["fp16"]["enabled"]),
            (&bf16.into(), &fp16.into())
        );
    }
}

#[test]
fn quantization_is_written_for_each_bitsandbytes_format() {
    for (mode, weights, quant_type, nested, lf_bits, lf_double) in [
        (
            Mode::Qlora,
            WeightFormat::Nf4,
            Some("nf4"),
            false,
            Some(4),
            Some(false),
        ),
        (
            Mode::Qlora,
            WeightFormat::Nf4Dq,
            Some("nf4"),
            true,
            Some(4),
            Some(true),
        ),
        (
            Mode::Qlora,
            WeightFormat::Fp4,
            Some("fp4"),
            false,
            Some(4),
            Some(false),
        ),
        (Mode::Lora, WeightFormat::Int8, None, false, Some(8), None),
    ] {
        let form = Form {
            mode,
            weights,
            ..lora()
        };
        let cmd = trl_command(&form);
        assert_eq!(has_flag(&cmd, "load_in_4bit"), mode == Mode::Qlora, "{cmd}");
        assert_eq!(has_flag(&cmd, "load_in_8bit"), mode == Mode::Lora, "{cmd}");
        if let Some(t) = quant_type {
            assert_eq!(flag(&cmd, "bnb_4bit_quant_type").as_deref(), Some(t));
        }
        assert_eq!(has_flag(&cmd, "use_bnb_nested_quant"), nested);
        let map = yaml(&form);
        assert_eq!(
            map.get("quantization_bit").and_then(|v| v.as_u64()),
            lf_bits
        );
        assert_eq!(
            map.get("double_quantization").and_then(|v| v.as_bool()),
            lf_double
        );
        for text in [cmd, llama_factory_yaml(&form)] {
            let back = import_setup(&text, &Form::default()).unwrap().form;
            assert_eq!((back.mode, back.weights), (mode, weights), "{text}");
        }
    }
    // LLaMA-Factory double-quantizes unless told not to (`double_quantization` defaults to true).
    let f = import_setup(
        "quantization_bit: 4\nfinetuning_type: lora\n",
        &Form::default(),
    )
    .unwrap()
    .form;
    assert_eq!((f.mode, f.weights), (Mode::Qlora, WeightFormat::Nf4Dq));
}

#[test]
fn optimizers_write_their_names_and_arguments() {
    let galore = Form {
        mode: Mode::Full,
        optimizer: Optimizer::Galore,
        projection_rank: 64,
        optimizer_in_backward: true,
        ..lora()
    };
    let cmd = trl_command(&galore);
    assert_eq!(
        flag(&cmd, "optim").as_deref(),
        Some("galore_adamw_layerwise")
    );
    assert_eq!(
        flag(&cmd, "optim_target_modules").as_deref(),
        Some("all-linear")
    );
    assert_eq!(flag(&cmd, "optim_args").as_deref(), Some("rank=64"));
    let map = yaml(&galore);
    assert_eq!(y(&map, "use_galore"), &serde_yaml::Value::Bool(true));
    assert_eq!(y(&map, "galore_rank").as_u64(), Some(64));
    assert_eq!(y(&map, "galore_layerwise"), &serde_yaml::Value::Bool(true));
    assert!(map.get("optim").is_none());

    let apollo = Form {
        optimizer: Optimizer::Apollo,
        optimizer_in_backward: false,
        ..galore.clone()
    };
    let cmd = trl_command(&apollo);
    assert_eq!(flag(&cmd, "optim").as_deref(), Some("apollo_adamw"));
    assert_eq!(y(&yaml(&apollo), "apollo_rank").as_u64(), Some(64));

    let sgd = Form {
        optimizer: Optimizer::SgdMomentum,
        ..lora()
    };
    let cmd = trl_command(&sgd);
    assert_eq!(flag(&cmd, "optim").as_deref(), Some("sgd"));
    assert_eq!(flag(&cmd, "optim_args").as_deref(), Some("momentum=0.9"));
    assert_eq!(y(&yaml(&sgd), "optim_args").as_str(), Some("momentum=0.9"));
    assert_eq!(
        import_setup(&cmd, &Form::default()).unwrap().form.optimizer,
        Optimizer::SgdMomentum
    );
    // transformers' default SGD has no momentum.
    let plain = import_setup("--optim sgd", &Form::default()).unwrap().form;
    assert_eq!(plain.optimizer, Optimizer::Sgd);

    let mini = Form {
        optimizer: Optimizer::AdamMini,
        ..lora()
    };
    assert_eq!(
        y(&yaml(&mini), "use_adam_mini"),
        &serde_yaml::Value::Bool(true)
    );
}

#[test]
fn deepspeed_files_are_named_for_their_stage_and_offload() {
    for (parallelism, offload, file) in [
        (Parallelism::Zero1, Offload::None, "ds_z1_config.json"),
        (Parallelism::Zero2, Offload::None, "ds_z2_config.json"),
        (
            Parallelism::Zero2,
            Offload::Optimizer,
            "ds_z2_offload_config.json",
        ),
        (Parallelism::Zero3, Offload::None, "ds_z3_config.json"),
        (
            Parallelism::Zero3,
            Offload::Optimizer,
            "ds_z3_offload_optimizer_config.json",
        ),
        (
            Parallelism::Zero3,
            Offload::ParamOptimizer,
            "ds_z3_offload_config.json",
        ),
    ] {
        let form = Form {
            parallelism,
            offload,
            gpus: 4,
            micro_batch: 3,
            grad_accum: 8,
            ..lora()
        };
        assert_eq!(
            flag(&trl_command(&form), "deepspeed").as_deref(),
            Some(file)
        );
        assert_eq!(y(&yaml(&form), "deepspeed").as_str(), Some(file));
        let ds: serde_json::Value = serde_json::from_str(&deepspeed_json(&form).unwrap()).unwrap();
        assert_eq!(ds["train_batch_size"], 96);
        assert_eq!(
            ds["zero_optimization"].get("offload_param").is_some(),
            offload == Offload::ParamOptimizer
        );
        for text in [
            format!("--deepspeed {file}"),
            deepspeed_json(&form).unwrap(),
        ] {
            let f = import_setup(&text, &Form::default()).unwrap().form;
            assert_eq!((f.parallelism, f.offload), (parallelism, offload), "{text}");
        }
    }
    // LLaMA-Factory's own examples/deepspeed files (ds_z3_offload_config.json offloads the parameters too).
    for (file, parallelism, offload) in [
        (
            "examples/deepspeed/ds_z0_config.json",
            Parallelism::Ddp,
            Offload::None,
        ),
        (
            "examples/deepspeed/ds_z2_offload_config.json",
            Parallelism::Zero2,
            Offload::Optimizer,
        ),
        (
            "examples/deepspeed/ds_z3_offload_config.json",
            Parallelism::Zero3,
            Offload::ParamOptimizer,
        ),
    ] {
        let f = import_setup(&format!("deepspeed: {file}\n"), &Form::default())
            .unwrap()
            .form;
        assert_eq!((f.parallelism, f.offload), (parallelism, offload), "{file}");
    }
    // The GPU count comes back from DeepSpeed's batch rule.
    let j = r#"{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4,
        "zero_optimization": {"stage": 2}}"#;
    assert_eq!(import_setup(j, &Form::default()).unwrap().form.gpus, 8);
}

#[test]
fn adapters_write_their_modules() {
    let form = Form {
        train_embed: true,
        train_lm_head: true,
        lora_targets: vec![Module::Q, Module::V],
        ..lora()
    };
    let cmd = trl_command(&form);
    assert_eq!(flag(&cmd, "lora_target_modules").as_deref(), Some("q_proj"));
    assert!(
        cmd.contains("--lora_modules_to_save embed_tokens lm_head"),
        "{cmd}"
    );
    assert_eq!(
        y(&yaml(&form), "additional_target").as_str(),
        Some("embed_tokens,lm_head")
    );
    let oft = Form {
        peft_method: Method::Oft,
        lora_rank: 32,
        ..lora()
    };
    let map = yaml(&oft);
    assert_eq!(y(&map, "finetuning_type").as_str(), Some("oft"));
    assert_eq!(y(&map, "oft_block_size").as_u64(), Some(32));
    assert_eq!(y(&map, "oft_target").as_str(), Some("all"));
    assert!(map.get("lora_rank").is_none() && map.get("lora_dropout").is_none());
    let back = import_setup(&llama_factory_yaml(&oft), &Form::default())
        .unwrap()
        .form;
    assert_eq!((back.peft_method, back.lora_rank), (Method::Oft, 32));
}

#[test]
fn objectives_write_their_script_stage_and_fields() {
    let grpo = Form {
        objective: Objective::Grpo,
        generations: 16,
        completion_tokens: 1024,
        vllm_gib: 20,
        vllm_sleep: true,
        gpu: CUSTOM.into(),
        custom_vram_gib: 80,
        reference: Reference::None,
        ..lora()
    };
    let cmd = trl_command(&grpo);
    assert!(cmd.starts_with("trl grpo"), "{cmd}");
    assert_eq!(flag(&cmd, "num_generations").as_deref(), Some("16"));
    assert_eq!(flag(&cmd, "max_completion_length").as_deref(), Some("1024"));
    assert_eq!(flag(&cmd, "vllm_mode").as_deref(), Some("colocate"));
    assert_eq!(
        flag(&cmd, "vllm_gpu_memory_utilization").as_deref(),
        Some("0.25")
    );
    assert!(has_flag(&cmd, "vllm_enable_sleep_mode"));
    assert_eq!(flag(&cmd, "beta").as_deref(), Some("0.0"));
    // GRPOConfig has no prompt length.
    assert!(!has_flag(&cmd, "max_length"), "{cmd}");

    // A GRPO command as a user writes it, onto a page with an 80 GiB GPU.
    let page = Form {
        gpu: CUSTOM.into(),
        custom_vram_gib: 80,
        ..Form::default()
    };
    let f = import_setup(
        "trl grpo --model_name_or_path Qwen/Qwen2.5-7B --use_vllm --vllm_gpu_memory_utilization 0.5 \
         --num_generations 4 --max_completion_length 2048 --beta 0.001 --use_peft",
        &page,
    )
    .unwrap()
    .form;
    assert_eq!(
        (f.objective, f.generations, f.completion_tokens, f.vllm_gib),
        (Objective::Grpo, 4, 2048, 40)
    );
    assert_eq!(f.reference, Reference::DisabledAdapters);

    let dpo = Form {
        objective: Objective::Dpo,
        reference: Reference::Precomputed,
        ..lora()
    };
    let cmd = trl_command(&dpo);
    assert!(cmd.starts_with("trl dpo") && has_flag(&cmd, "precompute_ref_log_probs"));
    // LLaMA-Factory has no such key (it sets `precompute_ref_log_probs = False` itself).
    assert!(yaml(&dpo).get("precompute_ref_log_probs").is_none());

    let orpo = Form {
        objective: Objective::Orpo,
        ..lora()
    };
    let map = yaml(&orpo);
    assert_eq!(
        (y(&map, "stage").as_str(), y(&map, "pref_loss").as_str()),
        (Some("dpo"), Some("orpo"))
    );
    let ppo = Form {
        objective: Objective::Ppo,
        ..lora()
    };
    assert_eq!(y(&yaml(&ppo), "stage").as_str(), Some("ppo"));
    let f = import_setup(&llama_factory_yaml(&ppo), &Form::default())
        .unwrap()
        .form;
    assert_eq!(
        (f.objective, f.reference),
        (Objective::Ppo, Reference::DisabledAdapters)
    );
}

#[test]
fn an_instruct_model_is_not_its_base() {
    for m in catalog::models() {
        let f = import_setup(
            &format!("--model_name_or_path {}", m.hf_id),
            &Form::default(),
        )
        .unwrap()
        .form;
        assert_eq!(f.model, m.id, "{}", m.hf_id);
    }
}

#[test]
fn adapter_configs_give_their_method_rank_and_tokens() {
    // PEFT `adapter_config.json` (`peft_type`, `r`, `oft_block_size`, `num_virtual_tokens`, `use_dora`,
    // `lora_dropout`, `modules_to_save`): what no training-setup export carries comes in this way.
    for (json, method, rank, tokens) in [
        (
            r#"{"peft_type":"LORA","r":8,"target_modules":["q_proj","v_proj"],"use_dora":true,"lora_dropout":0.1,"modules_to_save":["lm_head"]}"#,
            Method::Lora,
            8,
            None,
        ),
        (
            r#"{"peft_type":"OFT","oft_block_size":16,"r":0,"target_modules":["q_proj"]}"#,
            Method::Oft,
            16,
            None,
        ),
        (
            r#"{"peft_type":"PROMPT_TUNING","num_virtual_tokens":30}"#,
            Method::PromptTuning,
            16,
            Some(30),
        ),
    ] {
        let d = vramfit::imports::detect(json, &Form::default()).unwrap();
        let f = d.form;
        assert_eq!(f.peft_method, method, "{json}");
        if tokens.is_none() {
            assert_eq!(f.lora_rank, rank, "{json}");
        }
        if let Some(t) = tokens {
            assert_eq!(f.virtual_tokens, t);
        }
        if method == Method::Lora {
            assert!(f.dora && f.lora_dropout && f.train_lm_head && !f.train_embed);
            assert_eq!(f.lora_targets, vec![Module::Q, Module::V]);
        }
    }
}
