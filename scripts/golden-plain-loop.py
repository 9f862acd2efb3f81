#!/usr/bin/env python3
"""golden-plain-loop.py: the fake-tensor oracle for a hand-written training loop that keeps the model's outputs.

The common custom loop — `outputs = model(**batch); loss = outputs.loss; loss.backward()` — keeps `outputs`, and
with it the `[B, S, V]` logits, bound through backward and the optimizer step: PEFT's own method-comparison
benchmark does exactly this (`method_comparison/MetaMathQA/run.py`: `outputs = model(**batch, ...)`,
`loss = outputs.loss`, `grad_scaler.scale(loss).backward()`, `clip_grad_norm_`, `optimizer.step()`), as do most
notebooks and custom trainers. The HF Trainer drops the outputs before backward. Every line of
tests/data/golden-plain-loop.jsonl is three steps of that loop as PEFT's benchmark writes it —
`optimizer.zero_grad()`, `outputs = model(**batch)`, `outputs.loss.backward()`, `clip_grad_norm_(…, 1.0)`,
`optimizer.step()` — with `outputs` bound until the next step's forward returns, counted by `fake_peak.py`'s
memory oracle (imported as a module: its model builder, `MemOracle` and fake device), on catalog models (the
model built from src/catalog/models.json's config), with transformers 5.24 computing the loss inside the model.
`tests/golden_plain_loop.rs` compares vramfit's `peak_allocated` (stack `plain-loop`) with the oracle's peak.

The jobs: PEFT's benchmark setup (Llama 3.2 3B, bf16 weights without autocast, LoRA r32 on q/v, batch 4, no
checkpointing) at two lengths, and a few other shapes and modes on Llama 3.2 1B and Qwen2.5 0.5B.

Not part of CI (20-60 s a job on 2 cores). Run by hand, then commit the output:

    ../.venv-fake/bin/python scripts/golden-plain-loop.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "src", "catalog", "models.json")
OUT = os.path.join(ROOT, "tests", "data", "golden-plain-loop.jsonl")


def lora(r, targets):
    return {"r": r, "alpha": 2 * r, "dropout": 0.0, "target_modules": targets}


BASE = {"dtype": "bf16", "optimizer": "adamw", "attn": "sdpa", "max_grad_norm": 1.0, "steps": 3}
JOBS = [
    ("llama-3.2-3b", "lora-r32-qv-b4-s768-nockpt",
     {"mode": "lora", "lora": lora(32, ["q_proj", "v_proj"]), "batch_size": 4, "seq_len": 768,
      "gradient_checkpointing": False}),
    ("llama-3.2-3b", "lora-r32-qv-b4-s384-nockpt",
     {"mode": "lora", "lora": lora(32, ["q_proj", "v_proj"]), "batch_size": 4, "seq_len": 384,
      "gradient_checkpointing": False}),
    ("llama-3.2-1b", "lora-r16-all-b2-s1024-ckpt",
     {"mode": "lora", "lora": lora(16, "all-linear"), "batch_size": 2, "seq_len": 1024,
      "gradient_checkpointing": True}),
    ("llama-3.2-1b", "lora-r16-all-b2-s1024-nockpt",
     {"mode": "lora", "lora": lora(16, "all-linear"), "batch_size": 2, "seq_len": 1024,
      "gradient_checkpointing": False}),
    ("llama-3.2-1b", "full-b1-s1024-ckpt",
     {"mode": "full", "batch_size": 1, "seq_len": 1024, "gradient_checkpointing": True}),
    ("llama-3.2-1b", "lora-r16-all-b4-s512-mixed-ckpt",
     {"mode": "lora", "lora": lora(16, "all-linear"), "dtype": "mixed", "batch_size": 4, "seq_len": 512,
      "gradient_checkpointing": True}),
    ("qwen2.5-0.5b", "lora-r16-all-b2-s1024-ckpt",
     {"mode": "lora", "lora": lora(16, "all-linear"), "batch_size": 2, "seq_len": 1024,
      "gradient_checkpointing": True}),
    ("qwen2.5-0.5b", "full-b2-s1024-nockpt",
     {"mode": "full", "batch_size": 2, "seq_len": 1024, "gradient_checkpointing": False}),
]


def run(fp, job) -> dict:
    """Three steps of PEFT's loop (`method_comparison/MetaMathQA/run.py` `train`) on the oracle."""
    import contextlib

    import torch

    job = {**fp.DEFAULT_JOB, **job, "lora": {**fp.DEFAULT_JOB["lora"], **job.get("lora", {})}}
    fp.setup_fake_gpu()
    fp.install_sdpa_router(job["gpu_arch"])
    fp.patch_transformers()
    torch.manual_seed(0)
    fake_mode = fp._FakeMode()
    model, cfg, n_params = fp.build_model(job, fake_mode)
    oracle = fp.MemOracle(job["gpu_arch"], job["model_kernel_workspaces"])
    for p in model.parameters():
        oracle.track(p, "params")
    for b in model.buffers():
        oracle.track(b, "buffers")
    trainable = [p for p in model.parameters() if p.requires_grad]
    hooks = list(oracle.install_module_hooks(model))
    for p in trainable:
        hooks.append(p.register_post_accumulate_grad_hook(lambda p: oracle.track(p.grad, "grads")))
    amp = (lambda: torch.autocast(fp.FAKE_DEV, dtype=torch.bfloat16)) if job["dtype"] == "mixed" \
        else contextlib.nullcontext
    try:
        with fake_mode, oracle:
            B, S = job["batch_size"], job["seq_len"]
            ids = torch.randint(0, cfg.get_text_config().vocab_size, (B, S), device=fp.FAKE_DEV)
            labels = ids.clone()
            oracle.track(ids, "inputs")
            oracle.track(labels, "inputs")
            opt = fp.make_optimizer(job, trainable)
            outputs = None
            for step in range(job["steps"]):
                oracle.phase = f"zero_grad.{step}"
                opt.zero_grad()
                oracle.phase = f"forward.{step}"
                with amp():
                    outputs = model(input_ids=ids, labels=labels)  # the old outputs die when this returns
                    loss = outputs.loss
                oracle.phase = f"backward.{step}"
                loss.backward()
                for p in trainable:
                    oracle.track(p.grad, "grads")
                oracle.phase = f"clip_grad.{step}"
                torch.nn.utils.clip_grad_norm_(trainable, job["max_grad_norm"], foreach=True)
                oracle.phase = f"optimizer.{step}"
                opt.step()
                for st in opt.state.values():
                    for v in st.values():
                        oracle.track(v, "optimizer_states")
    finally:
        for h in hooks:
            h.remove()
    return {
        "peak_allocated_bytes": oracle.peak,
        "peak_breakdown_bytes": oracle.peak_cat,
        "peak_at": oracle.peak_where,
        "phase_peaks_gib": {k: round(v / fp.GiB, 3) for k, v in oracle.phase_peak.items()},
        "params_total": n_params,
        "params_trainable": sum(p.numel() for p in trainable),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-peak", default=os.path.join(ROOT, "..", "shared", "tools", "fake-peak"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.fake_peak))
    import fake_peak
    import peft
    import torch
    import transformers

    with open(CATALOG) as f:
        entries = {m["id"]: m for m in json.load(f)}
    done = set()
    if os.path.exists(OUT):
        done = {json.loads(l)["id"] for l in open(OUT) if l.strip()}
    versions = {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__}
    for mid, name, spec in JOBS:
        jid = f"{mid}/{name}"
        if a.only not in jid or jid in done:
            continue
        cfg = {k: v for k, v in entries[mid]["config"].items() if not k.startswith("_")}
        job = {**BASE, **spec}
        t0 = time.time()
        try:
            res = run(fake_peak, {**job, "model": cfg})
        except Exception as e:  # recorded, not fatal
            rec = {"id": jid, "model": mid, "job": job, "error": f"{type(e).__name__}: {e}"}
        else:
            rec = {"id": jid, "model": mid, "job": job, "peak_allocated_bytes": res["peak_allocated_bytes"],
                   "peak_breakdown_bytes": res["peak_breakdown_bytes"], "peak_at": res["peak_at"],
                   "phase_peaks_gib": res["phase_peaks_gib"], "params_total": res["params_total"],
                   "params_trainable": res["params_trainable"],
                   "versions": versions}
        with open(OUT, "a") as f:
            f.write(json.dumps(rec, default=str) + "\n")
        print(jid, rec.get("peak_allocated_bytes", rec.get("error")), f"({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
