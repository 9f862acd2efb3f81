#!/usr/bin/env python3
"""golden-preference.py: the fake-tensor oracle for preference tuning, through TRL's own loss code.

Every line of tests/data/golden-preference.jsonl is one training job whose loss is computed by TRL's real
trainer methods, on fake tensors, under `fake_peak.py`'s memory oracle (`runner: "trl"`); nothing of the loss
is re-stated here. `tests/golden_preference.rs` compares vramfit's `peak_allocated` with the oracle's peak.

TRL release: 1.16.0 (`pip install --no-deps trl==1.16.0`, plus `datasets`/`pandas`, which `trl` imports; torch
2.15.0, transformers 5.24.0, peft 0.21.2 unchanged). TRL 1.x has no `concatenated_forward`/`dpo_loss` in
`DPOTrainer` any more; what runs, per objective:
  dpo       `trl.DPOTrainer._compute_loss` (trl/trainer/dpo_trainer.py): one policy forward over chosen+rejected
            stacked on the batch axis (DataCollatorForPreference: 2B rows), with TRL's *fused LM head*
            (`add_fused_lm_head`, trl/trainer/utils.py, and `ChunkedLogProbFunction`, trl/kernels/
            chunked_logprob.py: per-token log-probs from [4096 x 32768] logit tiles, never the [2B, S, V]
            logits), then the reference forward under no_grad (a second model, or with PEFT and no ref_model the
            policy inside `use_adapter(model, None)` = `disable_adapter()`), then the sigmoid loss.
  orpo      `trl.experimental.orpo.ORPOTrainer.compute_loss` -> `concatenated_forward` / `odds_ratio_loss`:
            full logits, chosen NLL over `logits[..., :-1, :].contiguous()`, `selective_log_softmax`.
  simpo     `trl.experimental.cpo.CPOTrainer.compute_loss` with `loss_type="simpo"`, `cpo_alpha=0`.
The model, PEFT wrapping, autocast kernels, SDPA routing and byte counting are fake_peak's (imported as a
module: `build_model`, `MemOracle`, `make_optimizer`, ...). The training step mirrors HF Trainer with TRL's
defaults: `bf16=True` (accelerate wraps each prepared model's forward in `torch.autocast(bfloat16)` and
`convert_outputs_to_fp32`, accelerate/accelerator.py `prepare_model`; the wrapper used here is accelerate's own
`convert_outputs_to_fp32`) on a bf16-loaded model (transformers 5 loads checkpoints in their dtype), AdamW
`adamw_torch_fused` (the transformers default for torch >= 2.8), `max_grad_norm=1.0` (foreach clip),
`zero_grad(set_to_none=True)`, 2 steps.

What is stubbed or patched, and why each is memory-exact (stated, not guessed):
  * `trainer.accelerator`: `device`, `unwrap_model` (identity, single process), `gather`/`gather_for_metrics`
    (return a metrics stand-in whose `.item()` is 0.0; a single-process gather returns its input, and `.item()`
    allocates nothing on the GPU). FakeTensors hold no values, so `.item()` and `if t > 0` cannot run on them.
  * The trainer object is `object.__new__(Trainer)` with the attributes `__init__` sets from `DPOConfig` /
    `ORPOConfig` / `CPOConfig` defaults (`beta`, `loss_type`, ...).
  * Boolean-mask indexing (`x[mask]`, TRL's compact fused head and its metrics) has a data-dependent shape that
    FakeTensors cannot know. Every completion here spans its whole sequence (prompt length 0, no padding), so every
    such mask is all-true; the op is run as CUDA runs it: `nonzero` -> int64 [count, ndim] index, then
    `index.Tensor` with long indices, count = mask.numel().
  * `_use_triton` -> True on the fake GPU (triton is installed with torch, but TRL only uses it for cuda/xpu
    devices; on CUDA TRL takes the Triton path: compact hidden states, and the
    fold kernels update their row statistics / the logit tile in place, allocating nothing). The Triton kernels
    are replaced by no-ops (no allocation, as on the GPU); `_addmm_fp32` by its CUDA branch
    (`torch.addmm(..., out_dtype=float32, out=acc)`: in place, no fp32 copies of the operands).
  * `selective_log_softmax` (ORPO/SimPO) -> TRL's Triton `_LogProbEntropyFunction`, as on CUDA (its device check
    `_supports_trl_loss_kernel` admits the fake GPU as it admits cuda); its launches are no-ops (they write into
    the buffers the function allocates with torch.empty / empty_like, which are counted). Without triton its
    module is imported with a decorator-only `triton` stand-in.
  * `-noamp` jobs: the same job with `bf16=False` (no autocast wrapper, no fp32 output conversion), to separate
    what accelerate's bf16 autocast does from what the loss code does.
  * transformers' `_ignore_causal_mask_sdpa` is told the padding mask is all ones (true for these unpadded
    batches): FakeTensors count as tracing, so transformers would otherwise build a dense [2B,1,S,S] mask and
    SDPA would leave the flash kernel; on a GPU `fast_all(padding_mask)` is True and `is_causal` is used.
  grpo      `trl.GRPOTrainer._compute_loss` (trl/trainer/grpo_trainer.py), the training pass over what
            `_generate_and_score_completions` hands it (prompt and completion ids and masks, advantages; with
            TRL's default `beta=0.0` no reference log-probs; `old_per_token_logps` None, as when
            `num_iterations == 1`): one forward of prompt+completion through TRL's fused LM head, whose labels
            mask the prompt (`labels[:, :-logits_to_keep] = -100`), then the default `dapo` loss. The
            rollout (generation) is not part of it: vramfit models it as its own moment. Its boolean masks
            are not all-true: every completion here is unpadded and `completion_tokens` long, so the shifted
            label mask `[B, P+C-1]` has exactly `B*C` true entries, and the stand-in uses that count.
  kto       `trl.KTOTrainer._compute_loss` (trl/trainer/kto_trainer.py): the KL batch (each example's prompt
            with its neighbour's completion) through the policy under no_grad, the policy's forward, then the
            reference's KL and completion forwards under no_grad (a copy, or the policy with its adapters
            disabled), all through TRL's fused LM head; DataCollatorForUnpairedPreference outputs with every
            completion spanning its sequence (prompt length 0, as for DPO), half the batch desirable. Its
            scalar `kl` is gathered and fed back into the loss, so for KTO the metric gather returns its input
            (a single-process gather does) and `.item()` / truth tests on fake tensors answer 0.0 / True (a
            host read of a scalar: no GPU memory). The label mask `[B]` has B/2 true entries.
  sft       `trl.SFTTrainer.compute_loss` (trl/trainer/sft_trainer.py), TRL >= 1.15: the model called with
            `fused_lm_head=True` (`add_fused_lm_head(..., outputs=("log_probs", "entropy", "is_top1"))` in
            `SFTTrainer.__init__`), the NLL summed from the per-token log-probs over the label mask, and the
            entropy and token-accuracy metrics from the head's per-token outputs: no [B, S, V] logits. Inputs
            as `DataCollatorForLanguageModeling` pads them (ids, attention mask, labels = ids), unpadded.
Not covered: PPO (`trl.experimental.ppo`, its own rollout loop).

Not part of CI (5-40 s a job on 2 cores; 54 jobs, about 15 min). Run by hand, then commit the output:

    ../.venv-fake/bin/python scripts/golden-preference.py [--only SUBSTRING]
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import sys
import time
import traceback
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "src", "catalog", "models.json")
OUT = os.path.join(ROOT, "tests", "data", "golden-preference.jsonl")

MODELS = ["qwen2.5-0.5b", "llama-3.2-1b", "llama-3.1-8b"]
# The 8B model runs a subset: LoRA DPO and ORPO, and full DPO with checkpointing.
BIG = {"llama-3.1-8b": ["dpo-lora-disabled", "orpo-lora", "dpo-full-refcopy-ckpt", "sft-lora"]}
SHAPES = [(1, 1024), (2, 2048)]  # (pairs per device = per_device_train_batch_size, tokens per sequence)
# GRPO: (completions per device, prompt tokens, completion tokens); seq_len = prompt + completion.
GRPO_SHAPES = [(4, 256, 768), (8, 512, 1536)]
# (name, objective, mode, reference)
VARIANTS = [
    ("sft-lora", "sft", "lora", "none"),
    ("sft-full", "sft", "full", "none"),
    ("grpo-lora", "grpo", "lora", "none"),
    ("grpo-full", "grpo", "full", "none"),
    ("kto-lora-disabled", "kto", "lora", "disabled-adapters"),
    ("kto-full-refcopy", "kto", "full", "copy"),
    ("dpo-full-refcopy", "dpo", "full", "copy"),
    ("dpo-lora-disabled", "dpo", "lora", "disabled-adapters"),
    ("orpo-full", "orpo", "full", "none"),
    ("orpo-lora", "orpo", "lora", "none"),
    ("simpo-lora", "simpo", "lora", "none"),
]
# Diagnostic pairs: the same job with accelerate's bf16 autocast off (`bf16=False` on a bf16-loaded model), to
# separate what autocast changes (PEFT's fp32 adapter inputs, the fp32 output copy) from the loss code.
NO_AMP = ["dpo-lora-disabled-nockpt-2x2048", "dpo-lora-disabled-ckpt-2x2048", "orpo-lora-ckpt-2x2048",
          "dpo-full-refcopy-nockpt-2x2048"]


def jobs():
    models = {m["id"]: m for m in json.load(open(CATALOG))}
    for model in MODELS:
        for name, objective, mode, reference in VARIANTS:
            for ckpt in (True, False):
                if objective == "grpo":
                    shapes = [(b, p + c, c) for b, p, c in GRPO_SHAPES]
                elif objective == "kto":  # unpaired: twice the examples of a pair batch (KTO needs B > 1)
                    shapes = [(2 * b, s, 0) for b, s in SHAPES]
                else:
                    shapes = [(b, s, 0) for b, s in SHAPES]
                for b, s, completion in shapes:
                    if objective == "simpo" and (b, s) != (2, 2048):
                        continue
                    if objective in ("grpo", "kto") and model in BIG:
                        continue
                    base = f"{name}-{'ckpt' if ckpt else 'nockpt'}-{b}x{s}" + (f"c{completion}" if completion else "")
                    if model in BIG and not any(base.startswith(v + "-") for v in BIG[model]):
                        continue
                    for amp in (True, False):
                        if not amp and (base not in NO_AMP or model in BIG):
                            continue
                        yield {
                            "id": f"{model}/{base}{'' if amp else '-noamp'}",
                            "model": model, "objective": objective, "reference": reference,
                            "completion_tokens": completion,
                            "job": {"model": models[model]["config"], "mode": mode, "dtype": "bf16",
                                    "optimizer": "adamw_fused", "lr": 1e-6, "batch_size": b, "seq_len": s,
                                    "steps": 2, "gradient_checkpointing": ckpt, "attn": "sdpa",
                                    "max_grad_norm": 1.0, "autocast_bf16": amp,
                                    "lora": {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": "all-linear"}},
                        }


# ---------------------------------------------------------------------------------------------------------------
class _Metric:
    """What a metrics gather returns here: anything numeric about it is 0.0 (see the docstring)."""

    def _self(self, *a, **k):
        return self

    sum = mean = detach = float = cpu = nanmean = max = min = _self
    __truediv__ = __rtruediv__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _self

    def item(self):
        return 0.0

    def __getitem__(self, i):
        return self

    def clamp(self, *a, **k):
        return self

    def __gt__(self, other):
        return True

    __ge__ = __gt__

    def __float__(self):
        return 0.0


class _Accel:
    def __init__(self, device):
        self.device = device

    def unwrap_model(self, m, *a, **k):
        return m

    def gather_for_metrics(self, x, *a, **k):
        return _Metric()

    gather = gather_for_metrics

    def reduce(self, x, *a, **k):
        return _Metric()

    sync_gradients = True
    is_main_process = True  # trl.extras.profiling times the call (report_to=[]: nothing is logged)
    num_processes = 1
    parallelism_config = None  # no sequence or context parallelism (SFTTrainer.compute_loss reads it)

    @contextlib.contextmanager
    def autocast(self, *a, **k):
        yield


class _IdentityAccel(_Accel):
    """KTO's accelerator: a single-process gather returns its input (KTO feeds the gathered `kl` back into the
    loss, so it must stay a tensor)."""

    def gather_for_metrics(self, x, *a, **k):
        return x

    gather = gather_for_metrics


@contextlib.contextmanager
def _scalar_reads(torch):
    """`.item()` and truth tests on fake tensors (host reads of a scalar, no GPU memory) answer 0.0 / True."""
    from torch._subclasses.fake_tensor import FakeTensor

    saved = FakeTensor.item, getattr(FakeTensor, "__bool__", None)
    FakeTensor.item = lambda self: 0.0
    FakeTensor.__bool__ = lambda self: True
    try:
        yield
    finally:
        FakeTensor.item = saved[0]
        if saved[1] is None:
            del FakeTensor.__bool__
        else:
            FakeTensor.__bool__ = saved[1]


def _bool_index_mode(torch, count=lambda mask: mask.numel()):
    """`count(mask)`: how many entries of `mask` are true (all of them, unless the job says otherwise)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten

    class BoolIndex(TorchDispatchMode):
        """x[mask] for all-true masks, the CUDA way: nonzero -> int64 [count, ndim], then index with long indices."""

        def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is aten.index.Tensor and any(i is not None and i.dtype == torch.bool for i in args[1]):
                x, idx = args[0], list(args[1])
                new = []
                for i in idx:
                    if i is not None and i.dtype == torch.bool:
                        nz = aten.empty.memory_format([count(i), i.dim()], dtype=torch.int64, device=i.device)
                        new += [aten.select.int(nz, 1, d) for d in range(i.dim())]
                        del nz
                    else:
                        new.append(i)
                return aten.index.Tensor(x, new)
            if func is aten.nonzero.default:
                m = args[0]
                return aten.empty.memory_format([count(m), m.dim()], dtype=torch.int64, device=m.device)
            return func(*args, **kwargs)

    return BoolIndex()


def _patch_trl(fp, torch):
    import transformers.masking_utils as mu
    import trl.kernels.chunked_logprob as cl
    import trl.trainer.utils as tu

    real_ignore = mu._ignore_causal_mask_sdpa
    if not getattr(real_ignore, "_golden", False):
        def ignore(padding_mask, *a, **k):  # the batches are unpadded: the mask is all ones
            return real_ignore(None, *a, **k)
        ignore._golden = True
        mu._ignore_causal_mask_sdpa = ignore

    on_gpu = lambda device: device.type in ("cuda", fp.FAKE_DEV)  # noqa: E731
    cl._use_triton = on_gpu
    tu._use_triton = on_gpu

    class _NoAllocKernel:  # a Triton launch writes into buffers it is given; it allocates nothing
        def __getitem__(self, grid):
            return lambda *a, **k: None

    cl._forward_kernel = _NoAllocKernel()
    cl._backward_kernel = _NoAllocKernel()
    cl.triton = types.SimpleNamespace(cdiv=lambda a, b: (a + b - 1) // b)

    def addmm_fp32(acc, a, b):  # CUDA branch: torch.addmm(acc, a, b, out_dtype=torch.float32, out=acc), in place
        return None

    cl._addmm_fp32 = addmm_fp32

    # `selective_log_softmax` (ORPO, CPO/SimPO `get_batch_logps`) takes TRL's Triton kernel on CUDA
    # (trl/kernels/logprob_entropy.py `_LogProbEntropyFunction`: fp32 [rows] outputs, saves the logits, backward
    # one `empty_like(logits)` gradient). Import that module with a stand-in `triton` (decorators only), give it
    # no-op launches, and route the fake GPU to it as CUDA is routed.
    if not getattr(tu, "_golden_patched", False):
        tu._golden_patched = True
        try:  # triton ships with torch's Linux wheels (it is installed here, but cannot launch on the fake GPU)
            import trl.kernels.logprob_entropy as le
        except ImportError:
            tl = types.SimpleNamespace(constexpr=object, int64=None, float32=None)
            stub = types.ModuleType("triton")
            stub.jit = lambda f=None, **k: f if f is not None else (lambda g: g)
            stub.cdiv = lambda a, b: (a + b - 1) // b
            stub.language = tl
            saved = {k: sys.modules.get(k) for k in ("triton", "triton.language")}
            sys.modules["triton"], sys.modules["triton.language"] = stub, tl
            try:
                import trl.kernels.logprob_entropy as le
            finally:
                for k, v in saved.items():
                    if v is None:
                        sys.modules.pop(k, None)
                    else:
                        sys.modules[k] = v
        le._forward_kernel = _NoAllocKernel()
        le._backward_kernel = _NoAllocKernel()
        le.triton = types.SimpleNamespace(cdiv=lambda a, b: (a + b - 1) // b)
        tu._fused_logprob_entropy = le.selective_log_softmax_and_entropy
        real_supports = tu._supports_trl_loss_kernel

        def supports(logits, index=None, row_mask=None):
            if logits.device.type != fp.FAKE_DEV:
                return real_supports(logits, index, row_mask)
            # the same checks, with the fake GPU in place of "cuda" (trl/trainer/utils.py `_supports_trl_loss_kernel`)
            ok = (logits.dtype in (torch.float16, torch.bfloat16, torch.float32) and 1 <= logits.ndim <= 3
                  and logits.stride(-1) == 1 and logits.shape[-1] > 0)
            if index is not None:
                ok = ok and index.shape == logits.shape[:-1] and index.dtype in (torch.int32, torch.int64) \
                    and index.device == logits.device
            if row_mask is not None:
                ok = ok and index is not None and row_mask.shape == index.shape and row_mask.device == logits.device
            return ok

        tu._supports_trl_loss_kernel = supports
        tu.is_triton_available = lambda: True


def _wrap_like_accelerate(model, torch, dev, enabled):
    """accelerate `prepare_model` with native bf16 AMP: forward under autocast, outputs converted to fp32."""
    if not enabled:
        return
    from accelerate.utils.operations import convert_outputs_to_fp32

    fwd = model.forward

    def autocast_forward(*a, **k):
        with torch.autocast(dev, dtype=torch.bfloat16):
            return fwd(*a, **k)

    model.forward = convert_outputs_to_fp32(autocast_forward)


def make_trainer(objective, model, ref_model, dev, cfg_dir):
    from collections import defaultdict

    if objective == "kto":
        from trl import KTOConfig, KTOTrainer

        args = KTOConfig(output_dir=cfg_dir, report_to=[], bf16=False)
        tr = object.__new__(KTOTrainer)
        tr.model, tr.ref_model = model, ref_model
        tr.beta = args.beta
        tr.precompute_ref_logps = args.precompute_ref_log_probs
        tr.loss_type = args.loss_type
        tr.desirable_weight = args.desirable_weight
        tr.undesirable_weight = args.undesirable_weight
        tr.calculate_KL = args.loss_type not in ["apo_zero_unpaired"]
        tr.aux_loss_enabled = False
        tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        tr._total_train_tokens = 0
        tr._tp_size = 1
        tr.maybe_activation_offload_context = contextlib.nullcontext()
    elif objective == "grpo":
        from trl import GRPOConfig, GRPOTrainer
        import trl.trainer.grpo_trainer as gt

        args = GRPOConfig(output_dir=cfg_dir, report_to=[], bf16=False)
        tr = object.__new__(GRPOTrainer)
        tr.model, tr.ref_model = model, None
        tr.beta = args.beta
        tr.loss_type = args.loss_type
        tr.epsilon_low = args.epsilon
        tr.epsilon_high = args.epsilon_high if args.epsilon_high is not None else args.epsilon
        tr.importance_sampling_level = args.importance_sampling_level
        tr.top_entropy_quantile = args.top_entropy_quantile
        tr.off_policy_mask_threshold = args.off_policy_mask_threshold
        tr.use_vllm = False
        tr.vllm_importance_sampling_correction = args.vllm_importance_sampling_correction
        tr.entropy_coef = args.entropy_coef
        tr.use_adaptive_entropy = args.use_adaptive_entropy
        tr._entropy_bonus_enabled = tr.entropy_coef != 0.0 or tr.use_adaptive_entropy
        tr.aux_loss_enabled = False
        tr.current_gradient_accumulation_steps = 1
        tr.max_completion_length = args.max_completion_length
        tr.temperature = args.temperature
        tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        # Metric reductions over a single process (`nanmin`/`nanmax` of a gathered tensor): no GPU memory.
        gt.nanmin = gt.nanmax = lambda x: _Metric()
    elif objective == "sft":
        from trl import SFTConfig, SFTTrainer

        args = SFTConfig(output_dir=cfg_dir, report_to=[], bf16=False)  # bf16=True: applied by hand (no GPU here)
        tr = object.__new__(SFTTrainer)
        tr.model = model
        tr.aux_loss_enabled = False
        tr.compute_loss_func = None
        tr.label_smoother = None
        tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        tr._total_train_tokens = 0
        tr._tp_size = 1
        tr.maybe_activation_offload_context = contextlib.nullcontext()
    elif objective == "dpo":
        from trl import DPOConfig, DPOTrainer

        args = DPOConfig(output_dir=cfg_dir, report_to=[], bf16=False)  # bf16=True: applied by hand (no GPU here)
        tr = object.__new__(DPOTrainer)
        tr.model, tr.ref_model = model, ref_model
        tr.beta = args.beta
        tr.precompute_ref_logps = args.precompute_ref_log_probs
        tr.loss_types = args.loss_type
        tr.loss_weights = args.loss_weights or [1.0] * len(tr.loss_types)
        tr.ld_alpha = args.ld_alpha
        tr.f_divergence_type = args.f_divergence_type
        tr.f_alpha_divergence_coef = args.f_alpha_divergence_coef
        tr.label_smoothing = args.label_smoothing
        tr.use_weighting = args.use_weighting
        tr.aux_loss_enabled = False
        tr.router_aux_loss_coef = 0.0
        tr._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
        tr._total_train_tokens = 0
        tr._tp_size = 1
        tr.maybe_activation_offload_context = contextlib.nullcontext()
    else:
        if objective == "orpo":
            from trl.experimental.orpo import ORPOConfig, ORPOTrainer as T

            args = ORPOConfig(output_dir=cfg_dir, report_to=[], bf16=False)
        else:
            from trl.experimental.cpo import CPOConfig, CPOTrainer as T

            args = CPOConfig(output_dir=cfg_dir, report_to=[], bf16=False, loss_type="simpo", cpo_alpha=0.0)
        tr = object.__new__(T)
        tr.model = model
        tr._peft_has_been_casted_to_bf16 = False
        tr.is_encoder_decoder = False
        tr.padding_value = 0
        tr.pad_token_id = 0
        tr.beta = args.beta
        tr.aux_loss_enabled = False
        tr._stored_metrics = defaultdict(lambda: defaultdict(list))
        if objective == "simpo":
            tr.label_smoothing = args.label_smoothing
            tr.loss_type = args.loss_type
            tr.cpo_alpha = args.cpo_alpha
            tr.simpo_gamma = args.simpo_gamma
            tr.alpha = args.alpha
            tr.aux_loss_coef = 0.0
    tr.args = types.SimpleNamespace(**{k: getattr(args, k) for k in vars(args) if not k.startswith("_")})
    tr.args.device = torch_device(dev)
    tr.accelerator = (_IdentityAccel if objective == "kto" else _Accel)(torch_device(dev))
    return tr, args


def torch_device(dev):
    import torch

    return torch.device(dev)


def make_inputs(objective, B, S, vocab, dev, oracle, torch, completion=0):
    """DataCollatorForPreference (DPO) / DPODataCollatorWithPadding (ORPO, CPO) outputs for unpadded pairs whose
    completion is the whole sequence."""
    ids = lambda *s: torch.randint(0, vocab, s, device=dev)  # noqa: E731
    ones = lambda *s: torch.ones(s, dtype=torch.long, device=dev)  # noqa: E731
    if objective == "kto":
        half = B // 2
        inp = {"input_ids": ids(B, S), "attention_mask": ones(B, S), "completion_mask": ones(B, S),
               "KL_input_ids": ids(B, S), "KL_attention_mask": ones(B, S), "KL_completion_mask": ones(B, S),
               "label": torch.cat([torch.ones(half, dtype=torch.bool, device=dev),
                                   torch.zeros(B - half, dtype=torch.bool, device=dev)])}
    elif objective == "grpo":
        C = completion
        P = S - C
        inp = {"prompt_ids": ids(B, P), "prompt_mask": ones(B, P), "completion_ids": ids(B, C),
               "completion_mask": ones(B, C),
               "advantages": torch.zeros(B, dtype=torch.float32, device=dev),
               "num_items_in_batch": torch.tensor(float(B * C), device=dev)}
    elif objective == "sft":
        input_ids = ids(B, S)
        inp = {"input_ids": input_ids, "attention_mask": ones(B, S), "labels": input_ids.clone()}
    elif objective == "dpo":
        inp = {"input_ids": ids(2 * B, S), "attention_mask": ones(2 * B, S), "completion_mask": ones(2 * B, S)}
    else:
        inp = {}
        for side in ("chosen", "rejected"):
            inp[f"{side}_input_ids"] = ids(B, S)
            inp[f"{side}_attention_mask"] = ones(B, S)
            inp[f"{side}_labels"] = ids(B, S)
        inp["prompt_input_ids"] = ids(B, 1)[:, :0]
        inp["prompt_attention_mask"] = ones(B, 1)[:, :0]
    for v in inp.values():
        oracle.track(v, "inputs")
    return inp


def run(spec) -> dict:
    import fake_peak as fp
    import torch
    from peft import PeftModel
    from trl.trainer.utils import add_fused_lm_head

    job = {**fp.DEFAULT_JOB, **spec["job"]}
    job["lora"] = {**fp.DEFAULT_JOB["lora"], **job["lora"]}
    objective, reference = spec["objective"], spec["reference"]
    t0 = time.time()
    fp.setup_fake_gpu()
    fp.install_sdpa_router(job["gpu_arch"])
    fp.patch_transformers()
    _patch_trl(fp, torch)
    fp.SDPA_STATS.clear()
    torch.manual_seed(0)
    fake_mode = fp._FakeMode()
    model, cfg, n_params = fp.build_model(job, fake_mode)
    ref = None
    if reference == "copy":
        ref, _, _ = fp.build_model({**job, "mode": "inference"}, fake_mode)
    peft_model = isinstance(model, PeftModel)
    if objective == "kto":  # KTOTrainer.__init__
        add_fused_lm_head(model.get_base_model() if peft_model else model,
                          outputs=("log_probs", "entropy", "mean_logits"))
        if ref is not None:
            add_fused_lm_head(ref)
    if objective == "grpo":  # GRPOTrainer.__init__
        add_fused_lm_head(model.get_base_model() if peft_model else model, temperature=1.0,
                          cast_lm_head_to_fp32=False, outputs=("log_probs", "entropy"))
    if objective == "sft":  # SFTTrainer.__init__
        add_fused_lm_head(model.get_base_model() if peft_model else model,
                          outputs=("log_probs", "entropy", "is_top1"))
    if objective == "dpo":  # DPOTrainer.__init__
        add_fused_lm_head(model.get_base_model() if peft_model else model,
                          outputs=("log_probs", "entropy", "mean_logits", "is_top1"))
        if ref is not None:
            add_fused_lm_head(ref)
    dev = fp.FAKE_DEV
    _wrap_like_accelerate(model, torch, dev, job["autocast_bf16"])
    if ref is not None:
        _wrap_like_accelerate(ref, torch, dev, job["autocast_bf16"])
    trainer, args = make_trainer(objective, model, ref, dev, "/tmp/golden-preference-cfg")

    oracle = fp.MemOracle(job["gpu_arch"], job["model_kernel_workspaces"])
    for p in model.parameters():
        oracle.track(p, "params")
    for b in model.buffers():
        oracle.track(b, "buffers")
    if ref is not None:
        for p in ref.parameters():
            oracle.track(p, "ref_params")
        for b in ref.buffers():
            oracle.track(b, "ref_params")
    trainable = [p for p in model.parameters() if p.requires_grad]
    hooks = list(oracle.install_module_hooks(model))
    if ref is not None:  # module names for the reference too (peak location)
        names = {id(m): "ref." + n for n, m in ref.named_modules()}
        oracle.module_names.update(names)
    for p in trainable:
        hooks.append(p.register_post_accumulate_grad_hook(lambda p: oracle.track(p.grad, "grads")))
    if objective == "grpo":  # the shifted label mask [B, P+C-1] keeps the C completion positions of each row
        B, S, C = job["batch_size"], job["seq_len"], spec["completion_tokens"]
        bool_index = _bool_index_mode(torch, lambda m: B * C if tuple(m.shape) == (B, S - 1) else m.numel())
    elif objective == "kto":  # the label mask [B] marks half the batch desirable
        B = job["batch_size"]
        bool_index = _bool_index_mode(torch, lambda m: B // 2 if tuple(m.shape) == (B,) else m.numel())
    else:
        bool_index = _bool_index_mode(torch)
    end_of_step = []
    result = {}
    try:
        reads = _scalar_reads(torch) if objective == "kto" else contextlib.nullcontext()
        with fake_mode, oracle, bool_index, reads:
            inputs = make_inputs(objective, job["batch_size"], job["seq_len"], cfg.get_text_config().vocab_size,
                                 dev, oracle, torch, spec["completion_tokens"])
            opt = fp.make_optimizer(job, trainable)
            for step in range(job["steps"]):
                model.train()
                oracle.phase = f"forward.{step}"
                if objective == "grpo":  # GRPOTrainer.compute_loss -> _compute_loss
                    loss = trainer._compute_loss(model, inputs)
                else:
                    loss = trainer.compute_loss(model, inputs)  # Trainer.training_step
                if step == 0:
                    result["after_forward0_gib"] = fp._gib_dict(oracle.snapshot())
                oracle.phase = f"backward.{step}"
                loss.backward()
                loss = None
                for p in trainable:
                    oracle.track(p.grad, "grads")
                oracle.phase = f"clip_grad.{step}"
                torch.nn.utils.clip_grad_norm_(trainable, job["max_grad_norm"], foreach=True)
                oracle.phase = f"optimizer.{step}"
                opt.step()
                for st in opt.state.values():
                    for v in st.values():
                        oracle.track(v, "optimizer_states")
                oracle.phase = f"zero_grad.{step}"
                opt.zero_grad(set_to_none=True)
                end_of_step.append(oracle.total)
            del inputs
    finally:
        for h in hooks:
            h.remove()
    GiB = fp.GiB
    return {
        "peak_allocated_bytes": oracle.peak,
        "peak_allocated_gib": round(oracle.peak / GiB, 3),
        "peak_breakdown_gib": fp._gib_dict(oracle.peak_cat),
        "peak_breakdown_bytes": oracle.peak_cat,
        "peak_at": oracle.peak_where,
        "phase_peaks_gib": {k: round(v / GiB, 3) for k, v in oracle.phase_peak.items()},
        "end_of_step_gib": [round(v / GiB, 3) for v in end_of_step],
        "allocator_sim": {"max_memory_allocated_gib": round(oracle.sim.peak_allocated / GiB, 3),
                          "max_memory_reserved_gib": round(oracle.sim.peak_reserved / GiB, 3)},
        **result,
        "params_total": n_params,
        "params_trainable": sum(p.numel() for p in trainable),
        "sdpa_backends": dict(fp.SDPA_STATS),
        "n_aten_ops": oracle.n_ops,
        "elapsed_s": round(time.time() - t0, 1),
        "trainer_defaults": {k: getattr(args, k) for k in ("beta", "loss_type", "max_grad_norm", "cpo_alpha",
                                                           "simpo_gamma", "epsilon", "num_generations") if hasattr(args, k)},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-peak", default=os.path.join(ROOT, "..", "shared", "tools", "fake-peak"))
    ap.add_argument("--only", default="")
    ap.add_argument("--redo", action="store_true", help="rerun jobs already in the output")
    a = ap.parse_args()
    sys.path.insert(0, a.fake_peak)
    import trl

    done = set()
    if os.path.exists(OUT) and not a.redo:
        keep = [l for l in open(OUT) if l.strip() and "error" not in json.loads(l)]
        done = {json.loads(l)["id"] for l in keep}
        open(OUT, "w").writelines(keep)
    for j in jobs():
        if a.only not in j["id"] or j["id"] in done:
            continue
        head = {"id": j["id"], "runner": "trl", "trl_version": trl.__version__, "model": j["model"],
                "objective": j["objective"], "reference": j["reference"],
                "completion_tokens": j["completion_tokens"],
                "job": {k: v for k, v in j["job"].items() if k != "model"}}
        try:
            rec = {**head, **run(j)}
        except Exception as e:  # recorded, so a later run can retry or the test can skip it
            rec = {**head, "error": repr(e)[:500], "trace": traceback.format_exc()[-3000:]}
        if a.redo and os.path.exists(OUT):
            lines = [l for l in open(OUT) if l.strip() and json.loads(l)["id"] != j["id"]]
            open(OUT, "w").writelines(lines)
        with open(OUT, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(rec["id"], rec.get("peak_allocated_gib", rec.get("error")), rec.get("peak_at"), rec.get("elapsed_s"),
              flush=True)


if __name__ == "__main__":
    main()
