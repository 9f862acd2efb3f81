//! The `vramfit` command line: the same pure model as the page, scriptable outside the browser.
//! Native only (file and stdin I/O); `main.rs` calls [`run`].

use crate::advice::{self, export};
use crate::bytes::{fmt_gib, to_gib};
use crate::catalog::import;
use crate::eval::{self, Report};
use crate::form::Form;
use crate::model::{
    estimate, fewest_gpus, max_model_len_for_users, serve_plan, Engine, Estimate, Job, ServePlan,
};
use crate::share;
use std::io::Read;

const HELP: &str = "vramfit: GPU memory and system RAM estimates for LLM fine-tuning and inference

Usage: vramfit <COMMAND> [OPTIONS]

Commands:
  estimate [FILE] [--config CONFIG.json | --hub OWNER/NAME [--hub-base URL]] [--json]
              Estimate a job given as JSON (a file, or stdin when FILE is omitted or '-').
              Every field is optional; see README for the fields. --config takes the
              architecture from a Hugging Face config.json instead of the job's 'arch';
              --hub fetches it, with the safetensors headers, from the Hub at --hub-base
              (default $HF_ENDPOINT or https://huggingface.co; plain http:// only: this
              build has no TLS, so use an http mirror or --config for the real Hub).
  eval FILE.jsonl [--json] [--case ID]
              Compare the model with measured runs (one JSON case per line); prints one line
              per case and, last, 'summary: evaluated=N skipped=M median_abs_pct=X p90_abs_pct=Y'.
              --case ID prints that case's job and full breakdown instead.
  advise [FILE] [--link QUERY] [--json]
              Verdict, ranked remedies, combinations and solver results for a setup given as
              JSON form fields (model, gpu, gpus, ram_gib, mode, micro_batch, seq_len, …; a file
              or stdin) or as the page's link query (--link 'model=qwen2.5-7b&batch=8').
  serve [FILE] [--json]
              Plan serving (vLLM by default; engine: sglang or transformers) from a JSON object:
              model (catalog id), arch or config (a config.json object); gpu (catalog id) or
              gpu_gib; tensor_parallel, gpu_memory_utilization, max_model_len, max_num_seqs,
              max_num_batched_tokens, kv_dtype (auto|fp8), block_size, enforce_eager, dtype,
              weights (all optional, vLLM's defaults). Prints the per-GPU KV budget (weights,
              activation peak, non-torch, CUDA graphs), blocks, tokens, 'Maximum concurrency'
              and the longest context that fits; with users (N) also the longest max_model_len
              for N concurrent users and the fewest GPUs (TP 1/2/4/8) for max_model_len x N.
  export llamafactory|trl|deepspeed [FILE] [--link QUERY]
              Print the setup as a LLaMA-Factory YAML, a TRL command or a DeepSpeed JSON.
  diagnose [--gpu ID] [--json]
              Read an error log or traceback on stdin and say what ran out (GPU memory, host
              memory, disk, or not memory at all), with the figures it states, in GiB.
  import [--json]
              Read a model config.json, a PEFT adapter_config.json, a training command line,
              LLaMA-Factory/axolotl YAML or DeepSpeed JSON on stdin (what the page's import
              box reads); print the setup understood (form JSON) and the keys ignored.
  bench [N]   Time N estimates (default 100000) and N/100 full advice passes.
  version     Print the version.
  help        Show this help.
";

/// Runs the CLI with the given arguments (without the program name); returns the process exit code.
pub fn run(args: Vec<String>) -> i32 {
    let json = args.iter().any(|a| a == "--json");
    let rest: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--json")
        .collect();
    let result = match rest.first().copied() {
        None | Some("help" | "-h" | "--help") => {
            print!("{HELP}");
            Ok(())
        }
        Some("version" | "-V" | "--version") => {
            println!("vramfit {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Some("estimate") => cmd_estimate(&rest[1..], json),
        Some("eval") => cmd_eval(&rest[1..], json),
        Some("advise") => cmd_advise(&rest[1..], json),
        Some("serve") => cmd_serve(&rest[1..], json),
        Some("export") => cmd_export(&rest[1..]),
        Some("diagnose") => cmd_diagnose(&rest[1..], json),
        Some("import") => cmd_import(json),
        Some("bench") => cmd_bench(&rest[1..]),
        Some(other) => Err(format!("unknown command '{other}' (try 'vramfit help')")),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("vramfit: {e}");
            2
        }
    }
}

fn read_input(path: Option<&str>) -> Result<String, String> {
    match path {
        None | Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("reading stdin: {e}"))?;
            Ok(s)
        }
        Some(p) => std::fs::read_to_string(p).map_err(|e| format!("reading {p}: {e}")),
    }
}

fn cmd_estimate(args: &[&str], json: bool) -> Result<(), String> {
    let mut file = None;
    let mut config = None;
    let (mut hub, mut hub_base) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match *a {
            "--config" => config = Some(*it.next().ok_or("--config needs a file")?),
            "--hub" => hub = Some(*it.next().ok_or("--hub needs a model id")?),
            "--hub-base" => hub_base = Some(*it.next().ok_or("--hub-base needs a URL")?),
            f if file.is_none() => file = Some(f),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    let text = if file.is_none() && (config.is_some() || hub.is_some()) {
        String::new()
    } else {
        read_input(file)?
    };
    let mut job = crate::api::parse_job_json(&text).map_err(|e| format!("job JSON: {e}"))?;
    if let Some(path) = config {
        let text = read_input(Some(path))?;
        let imported = import::parse_config_text(&text).map_err(|e| format!("{path}: {e}"))?;
        job.arch = imported.arch;
        if let Some(w) = imported.weights {
            job.weights = w;
        }
    }
    if let Some(id) = hub {
        let (imported, stored) = crate::hub_client::import(id, hub_base)?;
        job.arch = imported.arch;
        if let Some(w) = imported.weights {
            job.weights = w;
        }
        // The headers' exact bytes count where the job holds the weights as stored (`checkpoint_in_use`).
        job.checkpoint = stored;
    }
    let est = estimate(&job);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&est).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", render_estimate(&est));
        print!("{}", render_block_replay(&job));
    }
    Ok(())
}

/// The allocator's totals replayed block by block, where the job is one the replay describes (a training
/// step on one GPU or under DDP; see `model::block_replay`); empty elsewhere.
pub fn render_block_replay(job: &crate::model::Job) -> String {
    let Some(b) = crate::model::block_replay(job) else {
        return String::new();
    };
    format!(
        "\nallocator replayed block by block (CUDACachingAllocator rules, two steps):\n  {:<38}{:>12}\n  {:<38}{:>12}\n  {:<38}{:>12}\n",
        "reserve beside the tensors",
        fmt_gib(b.reserve),
        "wholly free cached segments",
        fmt_gib(b.cache),
        "peak reserved (max_memory_reserved)",
        fmt_gib(b.peak_reserved)
    )
}

/// The human-readable breakdown.
pub fn render_estimate(e: &Estimate) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "parameters: {:.3} B total, {:.3} B trainable\n",
        (e.params.total + e.vision_params) / 1e9,
        e.trainable_params / 1e9
    ));
    out.push_str(&format!("peak phase: {:?}\n\nper GPU:\n", e.phase));
    // The page's labels (one label source for both; English here).
    let lang = crate::i18n::Lang::En;
    for p in &e.gpu {
        out.push_str(&format!(
            "  {:<40} {:>12}\n",
            crate::i18n::component(lang, p.component),
            fmt_gib(p.bytes)
        ));
    }
    out.push_str(&format!(
        "\n  peak tensors (max_memory_allocated)   {:>12}\n  peak reserved (max_memory_reserved)   {:>12}\n  device total (nvidia-smi)             {:>12}\n",
        fmt_gib(e.peak_allocated),
        fmt_gib(e.peak_reserved),
        fmt_gib(e.device_total)
    ));
    if e.fit_need < e.device_total {
        out.push_str(&format!(
            "  {:<38}{:>12}\n",
            "needed to run (reclaimable cache freed)",
            fmt_gib(e.fit_need)
        ));
    }
    out.push_str(&format!(
        "  {:<38}{:>12} – {}\n",
        "likely need per GPU (8 in 10 runs)",
        fmt_gib(e.fit_band.low),
        fmt_gib(e.fit_band.high)
    ));
    out.push_str("\nhost RAM (all processes):\n");
    for p in &e.host {
        out.push_str(&format!(
            "  {:<40} {:>12}\n",
            crate::i18n::host_component(lang, p.component),
            fmt_gib(p.bytes)
        ));
    }
    out.push_str(&format!(
        "  {:<40} {:>12}\n",
        "total",
        fmt_gib(e.host_total)
    ));
    for w in &e.warnings {
        out.push_str(&format!(
            "warning: {}\n",
            crate::i18n::model_warning(lang, *w)
        ));
    }
    out
}

fn cmd_eval(args: &[&str], json: bool) -> Result<(), String> {
    let path = args.first().ok_or("eval needs a JSONL file")?;
    if let Some(i) = args.iter().position(|a| *a == "--case") {
        let id = args.get(i + 1).ok_or("--case needs a case id")?;
        let text = read_input(Some(path))?;
        let case: serde_json::Value = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|c| c.get("id").and_then(|v| v.as_str()) == Some(id))
            .ok_or_else(|| format!("no case '{id}' in {path}"))?;
        let job = eval::job_from_case(&case)?;
        println!(
            "{}",
            serde_json::to_string(&job).map_err(|e| e.to_string())?
        );
        print!("{}", render_estimate(&crate::model::estimate(&job)));
        print!("{}", render_block_replay(&job));
        let r = eval::evaluate_case(&case)?;
        println!(
            "compared {}: predicted {:.2} GiB, measured {:.2} GiB ({:+.1}%)",
            r.metric, r.predicted_gib, r.measured_gib, r.error_pct
        );
        return Ok(());
    }
    let report = eval::evaluate_jsonl(&read_input(Some(path))?);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", render_report(&report));
    }
    Ok(())
}

/// One line per case, the skips with reasons, accuracy by group, and the summary line last.
pub fn render_report(r: &Report) -> String {
    let mut out = String::new();
    out.push_str("id predicted_gib measured_gib error_pct metric\n");
    for c in &r.results {
        out.push_str(&format!(
            "{} {:.2} {:.2} {:+.1} {}\n",
            c.id, c.predicted_gib, c.measured_gib, c.error_pct, c.metric
        ));
    }
    for s in &r.skipped {
        out.push_str(&format!("skipped {}: {}\n", s.id, s.reason));
    }
    type GroupKey = fn(&eval::CaseResult) -> String;
    let groups: [(&str, GroupKey); 3] = [
        ("tier", |c| c.tier.clone()),
        ("task", |c| c.task.clone()),
        ("framework", |c| c.framework.clone()),
    ];
    for (name, key) in groups {
        let mut keys: Vec<String> = r.results.iter().map(key).collect();
        keys.sort();
        keys.dedup();
        for k in keys {
            let st = eval::stats(r.results.iter().filter(|c| key(c) == k));
            out.push_str(&format!(
                "group {name}={k} n={} median_abs_pct={:.1} p90_abs_pct={:.1}\n",
                st.n, st.median_abs_pct, st.p90_abs_pct
            ));
        }
    }
    let ab = eval::stats(r.results.iter().filter(|c| c.tier == "A" || c.tier == "B"));
    out.push_str(&format!(
        "group tier=A+B n={} median_abs_pct={:.1} p90_abs_pct={:.1}\n",
        ab.n, ab.median_abs_pct, ab.p90_abs_pct
    ));
    let tier_ab = || r.results.iter().filter(|c| c.tier == "A" || c.tier == "B");
    let (coverage, above) = eval::band_coverage(tier_ab());
    out.push_str(&format!(
        "tier=A+B under_predicted_10pct={} of {} ({:.1}%) band_coverage_pct={:.1} above_band={}\n",
        eval::under_predicted(tier_ab()),
        ab.n,
        100.0 * eval::under_predicted(tier_ab()) as f64 / ab.n.max(1) as f64,
        100.0 * coverage,
        above
    ));
    for row in eval::band_table(tier_ab()) {
        out.push_str(&format!(
            "band {:?} n={} p10={:.2} p90={:.2}\n",
            row.kind, row.n, row.p10, row.p90
        ));
    }
    // The block replay beside the fitted reserve, on the tier A/B reserved readings in its scope.
    let replayed: Vec<eval::CaseResult> = tier_ab()
        .filter_map(|c| {
            c.replayed_gib.map(|g| eval::CaseResult {
                predicted_gib: g,
                error_pct: (g - c.measured_gib) / c.measured_gib * 100.0,
                ..c.clone()
            })
        })
        .collect();
    let fitted = tier_ab().filter(|c| c.replayed_gib.is_some());
    let (f, b) = (eval::stats(fitted.clone()), eval::stats(&replayed));
    out.push_str(&format!(
        "tier=A+B reserved, block replay: n={} median_abs_pct={:.1} p90_abs_pct={:.1} under_predicted_10pct={} (fitted reserve on the same cases: {:.1} / {:.1} / {})\n",
        b.n,
        b.median_abs_pct,
        b.p90_abs_pct,
        eval::under_predicted(&replayed),
        f.median_abs_pct,
        f.p90_abs_pct,
        eval::under_predicted(fitted)
    ));
    let st = eval::stats(&r.results);
    out.push_str(&format!(
        "summary: evaluated={} skipped={} median_abs_pct={:.1} p90_abs_pct={:.1}\n",
        r.results.len(),
        r.skipped.len(),
        st.median_abs_pct,
        st.p90_abs_pct
    ));
    out
}

/// Reads a form from `--link QUERY`, else from JSON (file or stdin).
fn read_form(args: &[&str]) -> Result<Form, String> {
    let mut it = args.iter();
    let mut file = None;
    while let Some(a) = it.next() {
        match *a {
            "--link" => {
                let q = it.next().ok_or("--link needs the query string")?;
                let q = q.split_once('?').map_or(*q, |(_, q)| q);
                let (form, ignored) = share::decode(q);
                for i in ignored {
                    eprintln!("vramfit: ignored in link: {i:?}");
                }
                return Ok(form);
            }
            f if file.is_none() => file = Some(f),
            other => return Err(format!("unexpected argument '{other}'")),
        }
    }
    let text = read_input(file)?;
    if text.trim().is_empty() {
        return Ok(Form::default());
    }
    crate::api::form_from_json(&text).map_err(|e| format!("form JSON: {e}"))
}

fn cmd_advise(args: &[&str], json: bool) -> Result<(), String> {
    let form = read_form(args)?;
    let advice = advice::advise(&form);
    if json {
        let out = serde_json::json!({
            "verdict": advice.verdict,
            "estimate": advice.estimate,
            "speed": advice.speed,
            "remedies": advice.remedies,
            "combinations": advice.combinations,
            "solutions": advice.solutions,
            "hardware_warnings": advice.hardware,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let v = &advice.verdict;
    println!(
        "verdict: {:?}: needs {} per GPU of {} usable; host RAM {} of {}",
        v.fit,
        fmt_gib(v.vram_need),
        fmt_gib(v.vram_have),
        fmt_gib(v.ram_need),
        fmt_gib(v.ram_have)
    );
    if let Some(s) = advice.speed {
        println!(
            "speed (rough): {:.1} s per step, {:.0} tokens/s",
            s.seconds, s.tokens_per_s
        );
    }
    println!("\nremedies (fitting first, cheapest first):");
    for r in advice.remedies.iter().chain(&advice.combinations) {
        println!(
            "  {:<40} saves {:>10}  {:<5} slowdown {:>6}  {}",
            format!("{:?}", r.changes),
            fmt_gib(r.saved),
            if r.fits { "fits" } else { "" },
            r.slowdown
                .map_or("?".into(), |s| format!("{:+.0}%", s * 100.0)),
            r.caveats
                .iter()
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let s = &advice.solutions;
    println!("\nsolvers:");
    println!("  largest micro-batch that fits: {:?}", s.max_batch);
    println!("  longest sequence that fits:    {:?} tokens", s.max_seq);
    println!("  fewest GPUs:                   {:?}", s.min_gpus);
    println!("  smallest catalog GPU:          {:?}", s.smallest_gpu);
    println!("  host RAM needed:               {}", fmt_gib(s.ram_needed));
    Ok(())
}

fn cmd_serve(args: &[&str], json: bool) -> Result<(), String> {
    let file = match args {
        [] => None,
        [f] => Some(*f),
        [_, extra, ..] => return Err(format!("unexpected argument '{extra}'")),
    };
    let text = read_input(file)?;
    let input = crate::api::serve_input_from_json(&text).map_err(|e| format!("serve JSON: {e}"))?;
    let plan = serve_plan(&input.arch, &input.request)?;
    let solved = match input.users {
        Some(users) => Some((
            users,
            max_model_len_for_users(&input.arch, &input.request, users)?,
            fewest_gpus(&input.arch, &input.request, plan.max_model_len, users)?,
        )),
        None => None,
    };
    if json {
        let mut out = serde_json::to_value(&plan).map_err(|e| e.to_string())?;
        if let (Some((users, len, gpus)), Some(obj)) = (&solved, out.as_object_mut()) {
            obj.insert("users".into(), (*users).into());
            obj.insert("max_model_len_for_users".into(), serde_json::json!(len));
            obj.insert(
                "fewest_gpus".into(),
                serde_json::json!(gpus.as_ref().map(|p| p.tensor_parallel)),
            );
        }
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
    } else {
        print!("{}", render_serve_plan(&plan));
        if let Some((users, len, gpus)) = solved {
            println!("\nfor {users} concurrent users:");
            match len {
                Some(l) => println!("  longest max_model_len:          {l} tokens"),
                None => println!("  longest max_model_len:          none fits"),
            }
            match gpus {
                Some(p) => println!(
                    "  fewest GPUs at {} tokens:      {} (tensor parallel; {:.2}x concurrency)",
                    plan.max_model_len, p.tensor_parallel, p.max_concurrency
                ),
                None => println!(
                    "  fewest GPUs at {} tokens:      more than 8",
                    plan.max_model_len
                ),
            }
        }
    }
    Ok(())
}

/// The human-readable serving plan.
pub fn render_serve_plan(p: &ServePlan) -> String {
    let gib = |g: f64| fmt_gib(g * crate::bytes::GIB);
    let mut out = String::new();
    let engine = match p.engine {
        Engine::Vllm => "vLLM",
        Engine::Sglang => "SGLang",
        Engine::Transformers => "transformers",
    };
    out.push_str(&format!(
        "engine: {engine}, tensor parallel {}, per GPU {} × {} = {}\n",
        p.tensor_parallel,
        gib(p.gpu_gib),
        p.gpu_memory_utilization,
        gib(p.requested_gib)
    ));
    out.push_str(&format!(
        "settings: max_model_len {}, max_num_seqs {}, max_num_batched_tokens {}, block_size {}, KV {} B/element, CUDA graphs {}\n\nper GPU:\n",
        p.max_model_len,
        p.max_num_seqs,
        p.max_num_batched_tokens,
        p.block_size,
        p.kv_dtype_bytes,
        if p.enforce_eager { "off" } else { "on" }
    ));
    for (name, v) in [
        ("weights", p.weights_gib),
        ("activation peak", p.activation_peak_gib),
        ("non-torch (CUDA, NCCL)", p.non_torch_gib),
        ("KV cache", p.kv_cache_gib),
        ("CUDA graphs (outside)", p.cuda_graph_gib),
        ("process total", p.process_gib),
    ] {
        out.push_str(&format!("  {name:<24} {:>12}\n", gib(v)));
    }
    if p.engine == Engine::Vllm {
        out.push_str(&format!(
            "\nKV: {:.1} KiB per token; {} blocks of {} tokens in {} group(s) of {} layers; vLLM prints {} tokens\n",
            p.kv_bytes_per_token / 1024.0,
            p.gpu_blocks,
            p.block_size,
            p.kv_groups,
            p.layers_per_group,
            p.kv_tokens
        ));
    } else {
        out.push_str(&format!(
            "\nKV: {:.1} KiB per token; {} tokens held\n",
            p.kv_bytes_per_token / 1024.0,
            p.kv_tokens
        ));
    }
    out.push_str(&format!(
        "Maximum concurrency for {} tokens per request: {:.2}x ({} blocks per request)\n",
        p.max_model_len, p.max_concurrency, p.blocks_per_request
    ));
    out.push_str(&format!(
        "longest context one request can have: {} tokens\n",
        p.max_model_len_that_fits
    ));
    match &p.reason {
        None => out.push_str("verdict: fits\n"),
        Some(r) => out.push_str(&format!("verdict: does not fit: {r}\n")),
    }
    for w in &p.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

fn cmd_export(args: &[&str]) -> Result<(), String> {
    let (kind, rest) = args
        .split_first()
        .ok_or("export needs a format: llamafactory, trl or deepspeed")?;
    let form = read_form(rest)?;
    let text = match *kind {
        "llamafactory" => export::llama_factory_yaml(&form),
        "trl" => export::trl_command(&form),
        "deepspeed" => export::deepspeed_json(&form)
            .ok_or("no ZeRO stage or offload is set: DeepSpeed is not used")?,
        other => return Err(format!("unknown export format '{other}'")),
    };
    println!("{text}");
    Ok(())
}

fn cmd_diagnose(args: &[&str], json: bool) -> Result<(), String> {
    let gpu = match args.iter().position(|a| *a == "--gpu") {
        Some(i) => {
            let id = args.get(i + 1).ok_or("--gpu needs a catalog GPU id")?;
            Some(
                crate::catalog::gpu(id)
                    .ok_or_else(|| format!("no catalog GPU '{id}'"))?
                    .usable_gib,
            )
        }
        None => None,
    };
    let d = crate::doctor::diagnose(&read_input(None)?, gpu);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&d).map_err(|e| e.to_string())?
        );
    } else {
        println!("kind: {:?} ({:?})", d.kind, d.source);
        if !d.evidence.is_empty() {
            println!("evidence: {}", d.evidence);
        }
        let n = serde_json::to_value(d.numbers).map_err(|e| e.to_string())?;
        for (k, v) in n.as_object().into_iter().flatten() {
            if let Some(g) = v.as_f64() {
                println!("  {k:<26} {g:.2} GiB");
            }
        }
        for h in &d.hints {
            println!("hint: {h:?}");
        }
    }
    Ok(())
}

/// Reads any text the page's import box reads (`crate::imports::detect`: a model or adapter config, or a
/// training setup) and prints the form it gives.
fn cmd_import(json: bool) -> Result<(), String> {
    use crate::imports::Understood;
    let d = crate::imports::detect(&read_input(None)?, &Form::default())?;
    let (format, used, ignored) = match &d.understood {
        Understood::Model { model_type, .. } => (
            "config.json",
            vec![format!(
                "model_type={}",
                model_type.as_deref().unwrap_or("?")
            )],
            Vec::new(),
        ),
        Understood::Adapter {
            unknown_targets, ..
        } => ("adapter_config.json", Vec::new(), unknown_targets.clone()),
        Understood::Setup {
            format,
            used,
            ignored,
        } => (*format, used.clone(), ignored.clone()),
    };
    if json {
        let out = serde_json::json!({
            "format": format, "form": d.form, "job": d.form.job(), "used": used, "ignored": ignored,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{}",
            serde_json::to_string_pretty(&d.form).map_err(|e| e.to_string())?
        );
        println!(
            "format: {format}\nused: {}\nignored: {}",
            used.join(", "),
            ignored.join(", ")
        );
    }
    Ok(())
}

fn cmd_bench(args: &[&str]) -> Result<(), String> {
    let n: u32 = match args.first() {
        Some(a) => a
            .parse()
            .map_err(|_| format!("bench: '{a}' is not a count"))?,
        None => 100_000,
    };
    let mut job = Job::default();
    let start = std::time::Instant::now();
    let mut sink = 0.0;
    for i in 0..n.max(1) {
        job.micro_batch = 1 + i % 8;
        sink += estimate(std::hint::black_box(&job)).device_total;
    }
    let per = start.elapsed().as_secs_f64() / f64::from(n.max(1));
    println!(
        "estimate: {:.2} µs per call over {n} calls (checksum {:.1} GiB)",
        per * 1e6,
        to_gib(sink) / f64::from(n.max(1))
    );
    let replays = (n / 1000).max(1);
    let start = std::time::Instant::now();
    let mut replayed = 0.0;
    for i in 0..replays {
        job.micro_batch = 1 + i % 8;
        replayed +=
            crate::model::block_replay(std::hint::black_box(&job)).map_or(0.0, |b| b.peak_reserved);
    }
    let per_replay = start.elapsed().as_secs_f64() / f64::from(replays);
    println!(
        "block replay: {:.0} µs per call over {replays} calls (checksum {:.1} GiB)",
        per_replay * 1e6,
        to_gib(replayed) / f64::from(replays)
    );
    let passes = (n / 100).max(1);
    let forms = [
        Form::default(),
        Form {
            mode: crate::model::Mode::Full,
            ..Form::default()
        },
        Form {
            mode: crate::model::Mode::Inference,
            ..Form::default()
        },
    ];
    let start = std::time::Instant::now();
    let mut count = 0usize;
    for i in 0..passes {
        count += advice::advise(&forms[i as usize % forms.len()])
            .remedies
            .len();
    }
    let per = start.elapsed().as_secs_f64() / f64::from(passes);
    println!(
        "advice pass: {:.2} ms per pass over {passes} passes ({count} remedies)",
        per * 1e3
    );
    Ok(())
}
