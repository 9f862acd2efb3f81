#!/usr/bin/env python3
"""golden-peft.py: the fake-tensor oracle for PEFT methods other than LoRA.

`fake_peak.py` builds LoRA adapters with `peft.LoraConfig`; this script runs the same oracle with that name
bound to another PEFT config (IA3, LoHa, LoKr, VeRA, AdaLoRA, OFT, BOFT, prompt tuning, prefix tuning, P-tuning, and
LoRA with `trainable_token_indices`),
so every method runs through PEFT's real code on fake tensors. Writes tests/data/golden-peft.jsonl (one job a
line, the oracle's output plus the method and its parameters); `tests/golden_peft.rs` compares vramfit.

Not part of CI (15-60 s a job). Run by hand, then commit the output:

    ../.venv-fake/bin/python scripts/golden-peft.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "src", "catalog", "models.json")
OUT = os.path.join(ROOT, "tests", "data", "golden-peft.jsonl")

ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
ALL = ATTN + ["gate_proj", "up_proj", "down_proj"]

# (method, PEFT config factory arguments). Module lists use the Llama names of the grid models.
METHODS = {
    "ia3": {"target_modules": ["k_proj", "v_proj", "down_proj"], "feedforward_modules": ["down_proj"]},
    "loha-r8": {"r": 8, "alpha": 16, "target_modules": ATTN},
    "lokr-r8": {"r": 8, "alpha": 16, "target_modules": ATTN},
    "vera-r256": {"r": 256, "target_modules": ALL},
    "adalora-r8": {"init_r": 8, "target_r": 4, "total_step": 1000, "target_modules": ALL},
    "oft-b32": {"oft_block_size": 32, "r": 0, "target_modules": ATTN},
    # BOFT: block size 32, no multiplicative dropout, `boft_n_butterfly_factor=1` (one block-diagonal factor).
    # PEFT sets the factor to 1 itself when its CUDA extension (`fbd_cuda`) cannot be built, as here.
    "boft-b32": {"boft_block_size": 32, "boft_n_butterfly_factor": 1, "boft_dropout": 0.0, "target_modules": ATTN},
    "prompt-20": {"num_virtual_tokens": 20},
    "prefix-20": {"num_virtual_tokens": 20},
    "ptuning-20": {"num_virtual_tokens": 20, "encoder_hidden_size": 512},
    # LoRA with a trainable-tokens delta beside it (`LoraConfig.trainable_token_indices`): 100 embedding rows.
    "loratok-r8": {"r": 8, "lora_alpha": 16, "target_modules": ALL, "trainable_token_indices": list(range(100))},
}
MODELS = ["llama-3.2-1b", "qwen2.5-0.5b"]


def config_factory(method: str, args: dict, real_lora):
    import peft

    kind = method.split("-")[0]
    def make(**_lora_kwargs):
        common = {"task_type": "CAUSAL_LM"}
        if kind == "ia3":
            return peft.IA3Config(**args, **common)
        if kind == "loha":
            return peft.LoHaConfig(**args, **common)
        if kind == "lokr":
            return peft.LoKrConfig(**args, **common)
        if kind == "vera":
            return peft.VeraConfig(**args, **common)
        if kind == "adalora":
            return peft.AdaLoraConfig(**args, **common)
        if kind == "oft":
            return peft.OFTConfig(**args, **common)
        if kind == "boft":
            return peft.BOFTConfig(**args, **common)
        if kind == "prompt":
            return peft.PromptTuningConfig(**args, **common)
        if kind == "prefix":
            return peft.PrefixTuningConfig(**args, **common)
        if kind == "ptuning":
            return peft.PromptEncoderConfig(**args, **common)
        if kind == "loratok":
            return real_lora(**args, **common)
        raise ValueError(method)
    return make


def jobs():
    models = {m["id"]: m for m in json.load(open(CATALOG))}
    for model in MODELS:
        for method, args in METHODS.items():
            # PEFT refuses prefix tuning with gradient checkpointing.
            for ckpt in ((False,) if method.startswith("prefix") else (True, False)):
                yield {
                    "id": f"{model}/{method}-{'ckpt' if ckpt else 'nockpt'}",
                    "model": model,
                    "method": method,
                    "method_args": args,
                    "job": {"model": models[model]["config"], "mode": "lora", "dtype": "bf16",
                            "optimizer": "adamw", "batch_size": 2, "seq_len": 512, "steps": 2,
                            "gradient_checkpointing": ckpt, "attn": "sdpa",
                            "lora": {"r": 8, "alpha": 16, "dropout": 0.0, "target_modules": "all-linear"}},
                }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-peak", default=os.path.join(ROOT, "..", "shared", "tools", "fake-peak"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    sys.path.insert(0, a.fake_peak)
    import fake_peak
    import peft

    import torch
    # LyCORIS layers (LoHa, LoKr) draw `torch.rand(1) > module_dropout` in every training forward; on fake
    # tensors that comparison has no value. With module_dropout = 0 it is always true: answer it so.
    real_rand = torch.rand
    torch.rand = lambda *s, **k: 1.0 if s == (1,) and not k else real_rand(*s, **k)
    # Prompt-learning models keep their virtual-token indices in a dict attribute (`prompt_tokens`), which
    # the oracle's meta-to-fake pass does not visit: convert those too.
    real_meta_to_fake = fake_peak._meta_to_fake

    def meta_to_fake(model, fake_mode, device=fake_peak.FAKE_DEV):
        real_meta_to_fake(model, fake_mode, device)
        for mod in model.modules():
            for v in list(vars(mod).values()):
                if isinstance(v, dict):
                    for k, t in list(v.items()):
                        if isinstance(t, torch.Tensor) and t.device.type == "meta":
                            with fake_mode:
                                v[k] = torch.empty(tuple(t.shape), dtype=t.dtype, device=device)

    fake_peak._meta_to_fake = meta_to_fake
    # BOFT builds its butterfly permutation matrices with index arithmetic on tensors (`int(pos * r)`,
    # `boft/layer.py` `block_butterfly_perm`), which a meta tensor cannot answer: build them on the CPU, as
    # their values never reach the GPU's byte count (the `boft_P` buffer they fill is made on the meta device
    # and becomes a fake GPU tensor like every other buffer).
    import peft.tuners.boft.layer as boft_layer

    def on_cpu(f):
        def run(*args, **kwargs):
            with torch.device("cpu"):
                return f(*args, **kwargs)
        return run

    boft_layer.BOFTLayer.block_butterfly_perm = on_cpu(boft_layer.BOFTLayer.block_butterfly_perm)
    boft_layer.BOFTLayer.perm2mat = on_cpu(boft_layer.BOFTLayer.perm2mat)
    done = set()
    if os.path.exists(OUT):
        done = {r["id"] for r in map(json.loads, filter(str.strip, open(OUT))) if "error" not in r}
        keep = [l for l in open(OUT) if l.strip() and "error" not in json.loads(l)]
        open(OUT, "w").writelines(keep)
    real = peft.LoraConfig
    for j in jobs():
        if a.only not in j["id"] or j["id"] in done:
            continue
        peft.LoraConfig = config_factory(j["method"], j["method_args"], real)
        try:
            out = fake_peak.run_job(dict(j["job"]))
            rec = {"id": j["id"], "model": j["model"], "method": j["method"], "method_args": j["method_args"],
                   "job": {k: v for k, v in j["job"].items() if k != "model"}, **out}
        except Exception as e:  # recorded, so a later run can retry or the test can skip it
            rec = {"id": j["id"], "model": j["model"], "method": j["method"], "error": repr(e)[:500],
                   "trace": traceback.format_exc()[-1500:]}
        finally:
            peft.LoraConfig = real
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(rec["id"], rec.get("peak_allocated_bytes", rec.get("error")), flush=True)


if __name__ == "__main__":
    main()
