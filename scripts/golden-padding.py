#!/usr/bin/env python3
"""golden-padding.py FAKE_PEAK_DIR padded|unpadded SEQ ckpt|nockpt: the fake-tensor oracle with a padding mask.

`fake_peak.py` runs unpadded batches (no attention mask). This runs the same LoRA step of Llama 3.2 1B with
transformers told the batch is padded, so SDPA receives the 4D mask as it does under dynamic padding, and
prints the peak. The figures `tests/golden_grid.rs` checks (`padding_mask_jobs`) came from:

    ../.venv-fake/bin/python scripts/golden-padding.py ../shared/tools/fake-peak padded 1000 nockpt
"""
import sys, json, torch
sys.path.insert(0, sys.argv[1])
import fake_peak
import transformers.masking_utils as mu
padded = sys.argv[2] == "padded"
if padded:
    # Claim the batch is padded: transformers then builds the 4D mask SDPA receives.
    for name in ("_ignore_causal_mask_sdpa",):
        if hasattr(mu, name):
            setattr(mu, name, lambda *a, **k: False)
    real = fake_peak._run_training
    def run(job, model, cfg, oracle, amp, trainable, bwd_nodes, result):
        B, S = job["batch_size"], job["seq_len"]
        orig_forward = model.forward
        def fwd(*a, **k):
            k.setdefault("attention_mask", torch.ones(B, S, dtype=torch.long, device=fake_peak.FAKE_DEV))
            return orig_forward(*a, **k)
        model.forward = fwd
        return real(job, model, cfg, oracle, amp, trainable, bwd_nodes, result)
    fake_peak._run_training = run
models = {m["id"]: m for m in json.load(open(__import__('os').path.join(__import__('os').path.dirname(__file__), '..', 'src', 'catalog', 'models.json')))}
job = {"model": models["llama-3.2-1b"]["config"], "mode": "lora", "dtype": "bf16", "optimizer": "adamw",
       "batch_size": 2, "seq_len": int(sys.argv[3]), "steps": 1, "gradient_checkpointing": sys.argv[4] == "ckpt", "attn": "sdpa",
       "lora": {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": "all-linear"}}
out = fake_peak.run_job(job)
print(sys.argv[2:], round(out["peak_allocated_bytes"]/2**30, 3), out.get("sdpa_backends"), {k: round(v/2**30,3) for k,v in out["peak_breakdown_bytes"].items()})
