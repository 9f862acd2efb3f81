#!/usr/bin/env python3
"""golden-galore.py: the fake-tensor oracle for GaLore, through galore-torch's own optimizer.

`fake_peak.py` runs a full fine-tune step with torch's AdamW; this script runs the same oracle with the optimizer
replaced by `galore_torch.GaLoreAdamW` (galore-torch 1.0, `pip install --no-deps galore-torch`), built the way
the GaLore README and the HF Trainer's `optim="galore_adamw"` build it: the 2-D weights of the decoder's
attention and MLP modules (`optim_target_modules=["attn", "mlp"]`; transformers `trainer.py`
`_get_galore_optimizer`) in a group with `rank`, `update_proj_gap`, `scale` and `proj_type="std"`, every other
parameter (embeddings, norms, the LM head) in a plain AdamW group. Step 0 computes every projector by SVD
(`GaLoreProjector.project` at `iter % update_proj_gap == 0`), so two steps cover both the SVD step and a plain
one. Writes tests/data/golden-galore.jsonl; `tests/golden_galore.rs` compares vramfit.

galore-torch's package imports its 8-bit optimizer, which imports bitsandbytes; that import is given an empty
stand-in (the 8-bit optimizer is not used here). The optimizer's per-parameter `projector` (a Python object
holding the orthogonal matrix) is not a tensor; the oracle counts its matrix when it is allocated, and only
the tensors in the optimizer state are labelled "optimizer_states".

Not part of CI (20-60 s a job). Run by hand, then commit the output:

    ../.venv-fake/bin/python scripts/golden-galore.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "src", "catalog", "models.json")
OUT = os.path.join(ROOT, "tests", "data", "golden-galore.jsonl")

MODELS = ["llama-3.2-1b", "qwen2.5-0.5b"]
RANKS = [128, 512]
SHAPES = [(2, 1024)]
TARGETS = ("attn", "mlp")


def jobs():
    models = {m["id"]: m for m in json.load(open(CATALOG))}
    for model in MODELS:
        for rank in RANKS:
            for ckpt in (True, False):
                for b, s in SHAPES:
                    yield {
                        "id": f"{model}/galore-r{rank}-{'ckpt' if ckpt else 'nockpt'}-{b}x{s}",
                        "model": model,
                        "rank": rank,
                        "job": {"model": models[model]["config"], "mode": "full", "dtype": "bf16",
                                "optimizer": "galore_adamw", "lr": 1e-5, "batch_size": b, "seq_len": s,
                                "steps": 2, "gradient_checkpointing": ckpt, "attn": "sdpa"},
                    }


def _import_galore():
    if "bitsandbytes" not in sys.modules:  # galore_torch/__init__.py imports its 8-bit optimizer
        bnb = types.ModuleType("bitsandbytes")
        optim = types.ModuleType("bitsandbytes.optim")
        optimizer = types.ModuleType("bitsandbytes.optim.optimizer")
        optimizer.Optimizer2State = object
        bnb.optim, optim.optimizer = optim, optimizer
        sys.modules.update({"bitsandbytes": bnb, "bitsandbytes.optim": optim,
                            "bitsandbytes.optim.optimizer": optimizer})
    import galore_torch

    return galore_torch


class _TensorState(dict):
    """The optimizer state as the oracle reads it: tensors only (a GaLore projector is a Python object)."""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-peak", default=os.path.join(ROOT, "..", "shared", "tools", "fake-peak"))
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    sys.path.insert(0, a.fake_peak)
    import fake_peak
    import torch

    galore_torch = _import_galore()
    real_make = fake_peak.make_optimizer
    current = {}

    def make_optimizer(job, params):
        if job["optimizer"] != "galore_adamw":
            return real_make(job, params)
        model = current["model"]
        galore, other = [], []
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            decoder_linear = p.dim() == 2 and "layers." in name and any(t in name for t in ("self_attn", "mlp"))
            (galore if decoder_linear else other).append(p)
        opt = galore_torch.GaLoreAdamW(
            [{"params": other},
             {"params": galore, "rank": current["rank"], "update_proj_gap": 200, "scale": 0.25,
              "proj_type": "std"}],
            lr=job["lr"], weight_decay=job["weight_decay"])
        real_state = opt.state

        class StateView:
            def values(self):
                for st in real_state.values():
                    yield {k: v for k, v in st.items() if isinstance(v, torch.Tensor)}

        opt_view = types.SimpleNamespace(step=opt.step, zero_grad=opt.zero_grad, state=StateView(),
                                         param_groups=opt.param_groups)
        return opt_view

    fake_peak.make_optimizer = make_optimizer
    real_build = fake_peak.build_model

    def build_model(job, fake_mode):
        model, cfg, n = real_build(job, fake_mode)
        current["model"] = model
        return model, cfg, n

    fake_peak.build_model = build_model

    done = set()
    if os.path.exists(OUT):
        keep = [l for l in open(OUT) if l.strip() and "error" not in json.loads(l)]
        done = {json.loads(l)["id"] for l in keep}
        open(OUT, "w").writelines(keep)
    for j in jobs():
        if a.only not in j["id"] or j["id"] in done:
            continue
        current["rank"] = j["rank"]
        try:
            out = fake_peak.run_job({**fake_peak.DEFAULT_JOB, **j["job"]})
            rec = {"id": j["id"], "model": j["model"], "rank": j["rank"], "update_proj_gap": 200,
                   "targets": list(TARGETS), "job": {k: v for k, v in j["job"].items() if k != "model"}, **out}
        except Exception as e:  # recorded, so a later run can retry or the test can skip it
            rec = {"id": j["id"], "model": j["model"], "error": repr(e)[:500],
                   "trace": traceback.format_exc()[-2000:]}
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(rec["id"], rec.get("peak_allocated_gib", rec.get("error")), rec.get("peak_at"), flush=True)


if __name__ == "__main__":
    main()
