#!/usr/bin/env python3
"""golden-grid.py: builds the fake-tensor golden grid in tests/data/golden-grid.jsonl.

Every line is one job run through the real PyTorch / transformers / PEFT / torch.optim code on fake tensors
by `fake_peak.py` (the oracle of exact `torch.cuda.max_memory_allocated`), with the model built from the
catalog entry's config (src/catalog/models.json). `tests/golden_grid.rs` maps each line to a vramfit job and
compares the estimate with the oracle.

Not part of CI: one job takes 15-60 s on two cores. Run by hand, then commit the output:

    python3 -m venv ../.venv-fake && ../.venv-fake/bin/pip install -r ../shared/tools/fake-peak/requirements.txt
    ../.venv-fake/bin/python scripts/golden-grid.py --shard 0/2 &      # one process per core
    ../.venv-fake/bin/python scripts/golden-grid.py --shard 1/2
    ../.venv-fake/bin/python scripts/golden-grid.py --merge

Options: --fake-peak DIR (default ../shared/tools/fake-peak), --only SUBSTRING (job ids), --list.
Shards append to target/golden-grid/shard-I.jsonl and skip jobs already there, so a run can be resumed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "src", "catalog", "models.json")
OUT = os.path.join(ROOT, "tests", "data", "golden-grid.jsonl")
WORK = os.path.join(ROOT, "target", "golden-grid")

# Catalog models in the grid: every family transformers builds from a config (remote-code families such as
# Qwen 1, ChatGLM, Baichuan and InternLM cannot be built offline and are left out).
MODELS = [
    "llama-2-7b-hf", "llama-3.1-8b", "llama-3.2-1b", "mistral-7b-v0.3", "mistral-7b-v0.1", "qwen2.5-7b",
    "qwen2.5-0.5b", "qwen3-8b", "qwen3-30b-a3b", "mixtral-8x7b-v0.1", "gemma-2-2b", "gemma-3-1b-it",
    "phi-3-mini-4k-instruct", "deepseek-v2-lite", "gpt2", "falcon-7b", "gpt-bigcode-santacoder",
    "olmo-2-1124-7b", "gemma-7b", "phi-2",
]

# Hybrid stacks (Mamba / Gated DeltaNet layers). The mamba_ssm, causal-conv1d and fla kernels that a GPU run
# uses cannot run on fake tensors, so transformers takes its torch fallbacks, which save other tensors (the
# SSD scan's chunk-by-chunk fp32 matrices, the delta rule's per-chunk states). Only jobs whose peak lies outside
# the recurrent mixers represent real runs and are run: a full fine-tune's optimizer step, and a checkpointed
# LoRA job on the attention projections, whose peak is the loss's backward (every layer then holds only its
# checkpointed input). `tests/golden_grid.rs` checks that each record's peak is one of those.
HYBRID_MODELS = [
    "falcon-h1-7b-instruct", "nvidia-nemotron-nano-9b-v2", "granite-4.0-h-small", "jamba-v0.1",
    "qwen3-next-80b-a3b-instruct",
]

# Families added after the first grid run a reduced job set (a LoRA base, one change of targets, one of
# checkpointing, a full fine-tune and a generation job) so that all of them fit one process's ~90 minutes.
# Keys of a spec: "jobs" (names from `variants`, default REDUCED), "seq_len" (the base sequence length, when
# `variants`' own rule would pick 1,024 for a model it takes minutes at), "layers" (cut `num_hidden_layers`, and a
# `layer_types` list, to that many: the stacks of hundreds of billions of parameters keep every layer kind, e.g.
# DeepSeek-V3's 3 dense + 2 MoE layers; the record carries "layers" and tests/golden_grid.rs cuts vramfit's
# config the same way), "text_part" (a multimodal config: the language model alone, built from `text_config`;
# the record carries "text_part"), "single_thread_backward" (see Falcon).
REDUCED = ["lora-r16-all-ckpt", "lora-r8-attn-ckpt", "lora-r16-all-nockpt", "full-bf16-ckpt", "infer-b1-p512-n32"]
VL_JOBS = ["lora-r8-attn-ckpt", "lora-r8-attn-nockpt", "infer-b1-p512-n32"]
ADDED = {
    # Falcon's checkpointed backward aborts the process (std::terminate) in autograd's device thread on the fake
    # device; the engine's single-threaded mode runs it (the same ops in the same order: a Gemma 7B job gives
    # the same peak either way).
    "falcon-7b": {"single_thread_backward": True},
    "gpt-bigcode-santacoder": {},
    "gemma-7b": {},
    "phi-2": {},
    "smollm3-3b": {},
    "powerlm-3b": {},
    "stablelm-base-alpha-3b": {},
    "aya-expanse-8b": {},
    "qwen1.5-moe-a2.7b": {},
    "mistral-small-3.1-24b": {"text_part": True},
    "gpt-oss-20b": {"seq_len": 512},
    # Llama 4's `all-linear` LoRA jobs fail in PEFT itself (error records): Llama4Router is an nn.Linear subclass
    # whose forward returns a (scores, logits) tuple, and PEFT's lora.Linear.forward reads `result.dtype`.
    "llama-4-scout-17b-16e-instruct": {"text_part": True, "layers": 4, "seq_len": 512},  # 3 chunked + 1 NoPE
    "glm-4.5-air": {"layers": 3, "seq_len": 512},  # first_k_dense_replace 1 dense + 2 MoE
    # The oracle cannot run DBRX: DbrxExperts loops over the experts hit with `nonzero()` / `torch.where`
    # (data-dependent shapes, DynamicOutputShapeException on fake tensors; no grouped_mm path in transformers
    # 5.24). Its jobs stay in the grid as error records.
    "dbrx-instruct": {"layers": 4, "seq_len": 512},
    "minimax-m2": {"layers": 3, "seq_len": 512},
    "deepseek-v3": {"layers": 5, "seq_len": 512},  # first_k_dense_replace 3 dense + 2 MoE
    "kimi-k2-instruct": {"layers": 3, "seq_len": 512},  # first_k_dense_replace 1 dense + 2 MoE
    "apertus-8b-instruct-2509": {},
    "afm-4.5b": {},  # arcee
    "olmo-3-7b-instruct": {},
    "hunyuan-0.5b-instruct": {},
    # Qwen2.5-VL and Qwen3-VL: their language models (qwen2_5_vl_text, qwen3_vl_text) have no causal-LM class in
    # transformers 5.24 (AutoModelForCausalLM maps neither), so the whole vision-language model is built
    # (`AutoModelForImageTextToText`, "vision_language") and run on text alone: the tower's weights are loaded
    # and idle, the language model runs its own code (multimodal RoPE positions included). LoRA names the
    # language model's attention projections (the towers' are `qkv`/`proj`, so `all-linear` would adapt them
    # too), and no full fine-tune (it would train the tower).
    "qwen2.5-vl-3b-instruct": {"vision_language": True, "jobs": VL_JOBS},
    "qwen3-vl-2b-instruct": {"vision_language": True, "jobs": VL_JOBS},
}

# Keys transformers needs that the catalog's trimmed configs leave to defaults which differ from the real
# model (each value is from the model's published config.json on the Hugging Face Hub).
FIXES = {
    "mixtral": lambda c: {"num_local_experts": c.get("num_experts", 8)},
    "falcon": lambda c: {"new_decoder_architecture": False, "multi_query": True, "parallel_attn": True,
                         "bias": False, "alibi": False},
    "gpt2": lambda c: {"n_embd": c["hidden_size"], "n_layer": c["num_hidden_layers"],
                       "n_head": c["num_attention_heads"], "n_positions": c.get("n_positions", 1024)},
    "gpt_bigcode": lambda c: {"n_embd": c["hidden_size"], "n_layer": c["num_hidden_layers"],
                              "n_head": c["num_attention_heads"], "n_inner": c["intermediate_size"],
                              "n_positions": c.get("max_position_embeddings", 2048), "multi_query": True},
    "deepseek_v2": lambda c: {"n_routed_experts": c.get("num_experts"), "n_shared_experts": 2,
                              "q_lora_rank": None, "topk_method": "greedy", "n_group": 1, "topk_group": 1},
    "gemma2": lambda c: {"hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 256,
                         "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0},
    "gemma3_text": lambda c: {"query_pre_attn_scalar": 256},
    "phi": lambda c: {"partial_rotary_factor": 0.4},
    # databricks/dbrx-instruct config.json: the attention and FFN shapes sit in nested blocks (attn_config
    # {clip_qkv 8, kv_n_heads 8, rope_theta 500000}, ffn_config {ffn_hidden_size 10752, moe_num_experts 16,
    # moe_top_k 4, moe_jitter_eps 0, moe_loss_weight 0.05, moe_normalize_expert_weights 1}), which DbrxConfig
    # builds from its defaults (kv_n_heads 1, 4 experts of 3584) when absent; and its own key names (d_model 6144,
    # n_heads 48, n_layers 40, max_seq_len 32768), which the catalog's hidden_size etc. do not reach in
    # transformers 5's DbrxConfig.
    "dbrx": lambda c: {"d_model": c["hidden_size"], "n_heads": c["num_attention_heads"],
                       "n_layers": c["num_hidden_layers"], "max_seq_len": c["max_position_embeddings"],
                       "attn_config": {"clip_qkv": 8, "kv_n_heads": c["num_key_value_heads"], "rope_theta": 500000},
                       "ffn_config": {"ffn_hidden_size": c["intermediate_size"],
                                      "moe_num_experts": c["num_local_experts"],
                                      "moe_top_k": c["num_experts_per_tok"], "moe_jitter_eps": 0.0,
                                      "moe_loss_weight": 0.05, "moe_normalize_expert_weights": 1.0}},
    # moonshotai/Kimi-K2-Instruct config.json: model_type "kimi_k2" with auto_map to its remote-code copy of
    # DeepSeek-V3 (`modeling_deepseek.DeepseekV3ForCausalLM`), which transformers has as deepseek_v3; n_group 1,
    # topk_group 1 (one expert group; DeepseekV3Config's defaults are DeepSeek-V3's 8 / 4).
    "kimi_k2": lambda c: {"model_type": "deepseek_v3", "n_group": 1, "topk_group": 1},
}


def catalog_configs():
    with open(CATALOG) as f:
        entries = {m["id"]: m for m in json.load(f)}
    out = {}
    for mid in MODELS + HYBRID_MODELS + [m for m in ADDED if m not in MODELS]:
        spec = ADDED.get(mid, {})
        cfg = entries[mid]["config"]
        if spec.get("text_part"):
            cfg = {"tie_word_embeddings": cfg.get("tie_word_embeddings", False), **cfg["text_config"]}
        cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
        if spec.get("layers"):
            cfg = cut_layers(cfg, spec["layers"])
        fix = FIXES.get(cfg["model_type"])
        if fix:
            cfg.update(fix(cfg))
        out[mid] = cfg
    return out


def cut_layers(cfg, n):
    """The config with its first `n` decoder layers (a `layer_types` list cut with them)."""
    cfg = {**cfg, "num_hidden_layers": n}
    if isinstance(cfg.get("layer_types"), list):
        cfg["layer_types"] = cfg["layer_types"][:n]
    return cfg


def lora(r, targets):
    return {"r": r, "alpha": 2 * r, "dropout": 0.0, "target_modules": targets}


ATTN_ONLY = ["q_proj", "k_proj", "v_proj", "o_proj"]


def variants(mid, cfg):
    """The jobs run for one model: a LoRA base and one change at a time from it, plus full, freeze and
    generation jobs. Shapes are real training shapes; very large models get shorter sequences so that one
    job stays under a minute."""
    big = cfg.get("num_hidden_layers", 0) * cfg.get("hidden_size", 0) > 32 * 4096 or "num_experts" in cfg
    s = ADDED.get(mid, {}).get("seq_len") or (512 if big else 1024)
    attn = ATTN_ONLY
    if cfg["model_type"] in ("gpt2", "gpt_bigcode"):
        attn = ["c_attn", "c_proj"]
    elif cfg["model_type"] in ("falcon", "gpt_neox"):
        attn = ["query_key_value", "dense"]
    elif cfg["model_type"] == "dbrx":
        attn = ["Wqkv", "out_proj"]
    elif cfg["model_type"] == "deepseek_v3":
        attn = ["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]
    elif cfg["model_type"] == "phi3":
        attn = ["qkv_proj", "o_proj"]
    elif cfg["model_type"] == "phi":
        attn = ["q_proj", "k_proj", "v_proj", "dense"]
    elif cfg["model_type"] == "deepseek_v2":
        attn = ["q_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"]
    # transformers builds Gemma 2 only with eager attention (its soft-capping is not in SDPA), and gpt-oss too
    # (its per-head attention sinks are not in SDPA).
    default_attn = "eager" if cfg["model_type"] in ("gemma2", "gpt_oss") else "sdpa"
    base = {"mode": "lora", "dtype": "bf16", "optimizer": "adamw", "lora": lora(16, "all-linear"),
            "gradient_checkpointing": True, "attn": default_attn, "batch_size": 2, "seq_len": s}
    jobs = {
        "lora-r16-all-ckpt": {},
        "lora-r8-attn-ckpt": {"lora": lora(8, attn)},
        "lora-r64-all-ckpt-long": {"lora": lora(64, "all-linear"), "batch_size": 1, "seq_len": 2 * s},
        "lora-r16-all-nockpt": {"gradient_checkpointing": False, "batch_size": 1},
        "lora-r8-attn-nockpt": {"lora": lora(8, attn), "gradient_checkpointing": False, "batch_size": 1},
        "lora-eager-ckpt": {"attn": "eager", "batch_size": 1},
        "lora-mixed-ckpt": {"dtype": "mixed", "batch_size": 4, "seq_len": s // 2},
        "full-bf16-ckpt": {"mode": "full", "batch_size": 1},
        "full-bf16-nockpt-fused": {"mode": "full", "optimizer": "adamw_fused", "gradient_checkpointing": False,
                                   "batch_size": 1, "seq_len": s // 2},
        "full-mixed-ckpt": {"mode": "full", "dtype": "mixed", "batch_size": 1, "seq_len": s // 2},
        "full-fp32-sgd": {"mode": "full", "dtype": "fp32", "optimizer": "sgd", "gradient_checkpointing": False,
                          "batch_size": 1, "seq_len": s // 2},
        "freeze2-nockpt": {"mode": "freeze", "freeze_trainable_layers": 2, "gradient_checkpointing": False,
                           "batch_size": 2},
        "infer-b1-p512-n32": {"mode": "inference", "optimizer": "none",
                              "inference": {"batch_size": 1, "prompt_len": 512, "new_tokens": 32}},
        "infer-b4-p2048-n16": {"mode": "inference", "optimizer": "none",
                               "inference": {"batch_size": 4, "prompt_len": s * 2, "new_tokens": 16}},
    }
    if cfg["model_type"] in ("gemma2", "gemma3_text"):
        # transformers asks for eager attention with Gemma 2's soft-capping; both are in the grid.
        jobs["lora-eager-nockpt"] = {"attn": "eager", "gradient_checkpointing": False, "batch_size": 1}
    chosen = ADDED[mid].get("jobs", REDUCED) if mid in ADDED else list(jobs)
    for name in chosen:
        job = {**base, **jobs[name]}
        if job["mode"] != "lora":
            job.pop("lora")
        yield f"{mid}/{name}", job


def hybrid_variants(mid, cfg):
    """The hybrid stacks' jobs (see HYBRID_MODELS): full fine-tunes peaking at the optimizer step and
    checkpointed LoRA on q/k/v/o peaking at the loss. PEFT refuses `all-linear` on Mamba models (it would
    adapt the mixers' `out_proj`), so the LoRA jobs name their targets."""
    big = cfg.get("num_hidden_layers", 0) * cfg.get("hidden_size", 0) > 32 * 4096 or "num_experts" in cfg
    s = 512 if big else 1024
    base = {"mode": "full", "dtype": "bf16", "optimizer": "adamw", "gradient_checkpointing": True,
            "attn": "sdpa", "batch_size": 1, "seq_len": s}
    jobs = {
        "full-bf16-ckpt": {},
        "full-mixed-ckpt": {"dtype": "mixed", "seq_len": s // 2},
        "lora-r8-attn-ckpt": {"mode": "lora", "lora": lora(8, ATTN_ONLY), "batch_size": 2},
        "lora-r16-attn-ckpt-long": {"mode": "lora", "lora": lora(16, ATTN_ONLY), "seq_len": 2 * s},
    }
    for name, change in jobs.items():
        yield f"{mid}/{name}", {**base, **change}


def all_jobs():
    for mid, cfg in catalog_configs().items():
        make = hybrid_variants if mid in HYBRID_MODELS else variants
        for jid, job in make(mid, cfg):
            yield jid, mid, cfg, job


def done_ids(path):
    ids = set()
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                rec = json.loads(line) if line.strip() else {}
                if rec and "error" not in rec:  # failed jobs are tried again
                    ids.add(rec["id"])
    return ids


def arch_overrides(mid):
    """What a record says about the model it ran beside the catalog id: a layer cut and the text part alone."""
    spec = ADDED.get(mid, {})
    return {k: spec[k] for k in ("layers", "text_part") if k in spec}


class vision_language_builder:
    """While active (for a "vision_language" model), fake_peak's `AutoModelForCausalLM.from_config` builds the
    whole model with `AutoModelForImageTextToText` instead."""

    def __init__(self, on):
        self.on = bool(on)

    def __enter__(self):
        if self.on:
            import transformers

            self.saved = transformers.AutoModelForCausalLM.from_config
            build = transformers.AutoModelForImageTextToText.from_config
            transformers.AutoModelForCausalLM.from_config = staticmethod(lambda cfg, **kw: build(cfg, **kw))
        return self

    def __exit__(self, *exc):
        if self.on:
            import transformers

            transformers.AutoModelForCausalLM.from_config = self.saved
        return False


def run_shard(fake_peak_dir, shard, only):
    sys.path.insert(0, fake_peak_dir)
    import fake_peak  # noqa: E402
    import peft  # noqa: E402
    import torch  # noqa: E402
    import transformers  # noqa: E402

    i, n = shard
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, f"shard-{i}.jsonl")
    done = done_ids(path)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__}
    for k, (jid, mid, cfg, job) in enumerate(all_jobs()):
        if k % n != i or jid in done or (only and only not in jid):
            continue
        t0 = time.time()
        try:
            with torch.autograd.set_multithreading_enabled(not ADDED.get(mid, {}).get("single_thread_backward")), \
                    vision_language_builder(ADDED.get(mid, {}).get("vision_language")):
                res = fake_peak.run_job({**job, "model": dict(cfg)})
        except Exception as e:  # a job the oracle cannot run is recorded, not fatal
            rec = {"id": jid, "model": mid, "job": job, **arch_overrides(mid), "error": f"{type(e).__name__}: {e}"}
            traceback.print_exc()
        else:
            rec = {
                "id": jid, "model": mid, "job": job, **arch_overrides(mid),
                "peak_allocated_bytes": res["peak_allocated_bytes"],
                "peak_breakdown_bytes": res["peak_breakdown_bytes"],
                "peak_at": res["peak_at"],
                "phase_peaks_gib": res["phase_peaks_gib"],
                "params_total": res["params_total"],
                "params_trainable": res["params_trainable"],
                "sim_max_reserved_gib": res["allocator_sim"]["max_memory_reserved_gib"],
                "versions": versions,
            }
        with open(path, "a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
        print(f"{jid}: {rec.get('peak_allocated_bytes', rec.get('error'))} ({time.time() - t0:.0f} s)", flush=True)


def merge():
    recs = {}
    for name in sorted(os.listdir(WORK)):
        if name.startswith("shard-"):
            with open(os.path.join(WORK, name)) as f:
                for line in f:
                    if line.strip():
                        rec = json.loads(line)
                        if "error" not in recs.get(rec["id"], {"error": 1}) and "error" in rec:
                            continue  # a later failure never replaces a result
                        recs[rec["id"]] = rec
    with open(OUT, "w") as f:
        for jid in sorted(recs):
            f.write(json.dumps(recs[jid], sort_keys=True) + "\n")
    print(f"{len(recs)} jobs -> {OUT}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fake-peak", default=os.path.join(ROOT, "..", "shared", "tools", "fake-peak"))
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--only", default="")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--merge", action="store_true")
    a = ap.parse_args()
    if a.list:
        for jid, _, _, job in all_jobs():
            print(jid, json.dumps(job))
        return
    if a.merge:
        merge()
        return
    i, n = (int(x) for x in a.shard.split("/"))
    run_shard(a.fake_peak, (i, n), a.only)


if __name__ == "__main__":
    main()
