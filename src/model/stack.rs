//! Training-stack presets. Stacks differ in how they compute the loss, whether they upcast non-quantized
//! weights, and how the optimizer steps; each preset only sets defaults that the user can still override.
//! Every default below comes from the stack's own docs or code (cited), never from fitting measured cases.

use super::job::{Checkpointing, FrozenSharding, Job, LossImpl, Precision};
use serde::{Deserialize, Serialize};

/// A training or inference stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Stack {
    /// Plain PyTorch + transformers model code, outputs dropped before backward: the fake-tensor grids run
    /// exactly this (`tests/golden_grid.rs`, `golden_peft.rs`, `golden_galore.rs`).
    #[default]
    Generic,
    /// A hand-written loop that keeps the model's outputs through backward (`outputs = model(**batch)`,
    /// `outputs.loss.backward()`): PEFT's method-comparison benchmark, most notebooks and custom trainers.
    /// Confirmed by PEFT's benchmark loop on the oracle (`tests/golden_plain_loop.rs`).
    PlainLoop,
    /// Hugging Face Trainer / TRL SFTTrainer with PEFT. Confirmed by TRL's own trainers on the oracle (SFT,
    /// DPO, ORPO, SimPO, KTO, GRPO: `tests/golden_preference.rs`), with accelerate's bf16 wrapper.
    HfTrainer,
    /// LLaMA-Factory. Its trainer subclasses the HF Trainer over transformers' model code, which the grids
    /// run; its own defaults (checkpointing on, no k-bit upcast) are read from its code, not run.
    LlamaFactory,
    /// axolotl. Its trainer subclasses the HF Trainer over transformers' model code, which the grids run; its
    /// defaults are read from its code, not run.
    Axolotl,
    /// Unsloth. Its Triton kernels and patched model code cannot run on fake tensors: its terms come from its
    /// code (fused cross-entropy, offloaded checkpoints, no k-bit upcast).
    Unsloth,
    /// torchtune. Confirmed by its own models, loss and single-device recipes on the oracle
    /// (`tests/golden_torchtune.rs`).
    Torchtune,
    /// Lightning litgpt. Confirmed by its own model and `finetune/lora.py` step on the oracle
    /// (`tests/golden_litgpt.rs`).
    Litgpt,
    /// ModelScope ms-swift. Its trainer subclasses the HF Trainer over transformers' model code, which the
    /// grids run; its defaults are read from its code, not run.
    MsSwift,
    /// DeepSpeed through accelerate / the HF Trainer. ZeRO's partitioning needs a process group over several
    /// devices, which fake tensors do not give: its terms come from DeepSpeed's code.
    Deepspeed,
    /// PyTorch FSDP through accelerate. Sharding needs a process group over several devices, which fake
    /// tensors do not give: its terms come from PyTorch's and accelerate's code.
    Fsdp,
}

impl Stack {
    /// Every preset, in the order the page lists them.
    pub const ALL: [Stack; 11] = [
        Stack::Generic,
        Stack::PlainLoop,
        Stack::HfTrainer,
        Stack::LlamaFactory,
        Stack::Axolotl,
        Stack::Unsloth,
        Stack::Torchtune,
        Stack::Litgpt,
        Stack::MsSwift,
        Stack::Deepspeed,
        Stack::Fsdp,
    ];

    /// Stable id used in URLs and JSON.
    pub fn id(self) -> &'static str {
        match self {
            Stack::Generic => "generic",
            Stack::PlainLoop => "plain-loop",
            Stack::HfTrainer => "hf-trainer",
            Stack::LlamaFactory => "llama-factory",
            Stack::Axolotl => "axolotl",
            Stack::Unsloth => "unsloth",
            Stack::Torchtune => "torchtune",
            Stack::Litgpt => "litgpt",
            Stack::MsSwift => "ms-swift",
            Stack::Deepspeed => "deepspeed",
            Stack::Fsdp => "fsdp",
        }
    }

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Generic => "Generic PyTorch",
            Stack::PlainLoop => "Plain loop (outputs kept)",
            Stack::HfTrainer => "HF Trainer / TRL + PEFT",
            Stack::LlamaFactory => "LLaMA-Factory",
            Stack::Axolotl => "axolotl",
            Stack::Unsloth => "Unsloth",
            Stack::Torchtune => "torchtune",
            Stack::Litgpt => "litgpt",
            Stack::MsSwift => "ms-swift",
            Stack::Deepspeed => "DeepSpeed / accelerate",
            Stack::Fsdp => "FSDP / accelerate",
        }
    }

    /// Parses an id (as [`Stack::id`]) or a reference case's `framework` field.
    pub fn from_id(id: &str) -> Option<Stack> {
        let s = match id {
            "fms-acceleration" | "qwen-finetune" | "hf-inference" => Stack::HfTrainer,
            // PEFT's `method_comparison/MetaMathQA/run.py` is a plain loop that keeps `outputs`.
            "peft-bench" => Stack::PlainLoop,
            "fsdp-qlora" => Stack::Fsdp,
            _ => return Stack::ALL.into_iter().find(|s| s.id() == id),
        };
        Some(s)
    }

    /// Whether the stack's training loop keeps the model's output logits bound through backward.
    ///
    /// litgpt's fine-tuning loops (`litgpt/finetune/lora.py`, `adapter.py`, `adapter_v2.py`, `full.py`)
    /// assign `logits = model(input_ids, lm_head_chunk_size=128)`, pass the list to `chunked_cross_entropy`
    /// and call `fabric.backward(loss)` with `logits` still bound; the next iteration's `model(...)` call
    /// rebinds it only when it returns. The chunk outputs therefore live through backward and the optimizer
    /// step. The HF Trainer's `compute_loss` returns the loss alone and drops the outputs
    /// (`transformers/trainer.py`); torchtune's recipes `del logits` before backward
    /// (`recipes/lora_finetune_single_device.py`).
    ///
    /// A plain loop, `outputs = model(**batch); loss = outputs.loss; loss.backward()`, keeps `outputs` and its
    /// logits (in the compute dtype: transformers computes the loss inside the model, on an fp32 copy, and
    /// returns the 16-bit logits) until the next step rebinds the name: PEFT's method-comparison benchmark
    /// (`method_comparison/MetaMathQA/run.py`), measured by the fake-tensor oracle with its outputs kept
    /// (`tests/golden_plain_loop.rs`).
    pub fn keeps_logits_through_backward(self) -> bool {
        matches!(self, Stack::Litgpt | Stack::PlainLoop)
    }

    /// Whether the stack trains preference objectives with TRL's own trainers (`DPOTrainer`, `CPOTrainer`):
    /// the HF Trainer scripts (`trl dpo`) and the generic stack. LLaMA-Factory, ms-swift and the others
    /// subclass or replace their loss code.
    pub fn runs_trl_preference_trainers(self) -> bool {
        matches!(self, Stack::Generic | Stack::HfTrainer)
    }

    /// The loss implementation this stack uses by default.
    ///
    /// - HF transformers Llama-family models upcast logits to fp32 for the loss (`ForCausalLMLoss`:
    ///   `logits = logits.float()`, transformers `loss/loss_utils.py`); TRL's SFT, LLaMA-Factory, axolotl,
    ///   ms-swift and the DeepSpeed/FSDP integrations all run that model code. (TRL's own preference trainers
    ///   replace it: [`Stack::runs_trl_preference_trainers`], `loss::loss_bytes`.)
    /// - Unsloth replaces the loss with its fused, chunked cross-entropy kernel (`unsloth/kernels/cross_entropy_loss.py`)
    ///   and never materializes fp32 logits.
    /// - torchtune recipes use `CEWithChunkedOutputLoss` (8 chunks, `torchtune/modules/loss/ce_chunked_output_loss.py`).
    /// - litgpt uses `chunked_cross_entropy` with `chunk_size=128` (`litgpt/utils.py`).
    pub fn loss(self) -> LossImpl {
        match self {
            Stack::Unsloth => LossImpl::Fused,
            Stack::Torchtune | Stack::Litgpt => LossImpl::Chunked,
            _ => LossImpl::Fp32Logits,
        }
    }

    /// Whether the stack builds a module tree whose LM head is never tied to the input embedding.
    ///
    /// litgpt's `GPT.__init__` creates `lm_head` and `transformer.wte` as two modules and never assigns one
    /// weight to the other (`litgpt/model.py`); its checkpoint converter copies a tied HF matrix into both. A
    /// tied model (Falcon, Gemma, Qwen2.5-0.5B…) therefore holds two vocabulary matrices under litgpt.
    pub fn unties_embeddings(self) -> bool {
        matches!(self, Stack::Litgpt)
    }

    /// Whether the stack runs its own model code rather than transformers' modeling files, so that a family's
    /// fused projections and Python activations ([`super::arch::Fused`], [`super::arch::Activation`]) do not
    /// apply. litgpt's `GPT` (`litgpt/model.py`) builds every family from one block: its fused `qkv` linear
    /// takes LoRA per q/k/v slice (`litgpt/lora.py` `LoRAQKVLinear`: one `r` per enabled slice, as separate
    /// adapters count), its MLP is separate `fc_1`/`fc_2` (and `proj`), and GELU is `F.gelu` (with
    /// `approximate` from the config). torchtune's models (`torchtune/models/*`) load checkpoints through
    /// `convert_weights`, which splits Phi-3's `qkv_proj` and `gate_up_proj` into separate linears, and run
    /// `nn.SiLU` / `F.gelu`.
    pub fn runs_own_model_code(self) -> bool {
        matches!(self, Stack::Litgpt | Stack::Torchtune)
    }

    /// Whether the stack's LoRA layers are built in the model's own dtype and read their input as it comes, so
    /// that an adapter keeps no cast of its own: torchtune's `LoRALinear` (`torchtune/modules/peft/lora.py`,
    /// built under `training.set_default_dtype(bf16)`: `lora_a(dropout(x))` on the bf16 `x`) and litgpt's
    /// `LoRALinear` / `LoRAQKVLinear` (`litgpt/lora.py`, Fabric's `bf16-true` converts the adapters too). Without
    /// dropout (`nn.Identity`) every adapter of a group of modules fed one tensor saves that same tensor, once;
    /// with dropout each saves its own dropped-out copy and mask. `lora_a`'s output is saved in the model dtype.
    /// PEFT instead casts each adapter's input to its fp32 adapter dtype ([`super::activations`]). The
    /// torchtune oracle's saved tensors (`scripts/golden-torchtune.py`) show exactly this.
    pub fn adapters_in_model_dtype(self) -> bool {
        matches!(self, Stack::Litgpt | Stack::Torchtune)
    }

    /// Whether the stack's attention copies K and V to every query head before SDPA, so that SDPA saves them
    /// at the query width: torchtune's `MultiHeadAttention.forward` (`torchtune/modules/attention.py`:
    /// `k.unsqueeze(2).expand(…).flatten(1, 2)`, a copy) for grouped-query models. Its output then needs no
    /// copy for the output projection (the flash kernel lays its output out so that `.transpose(1, 2)` is
    /// contiguous). Measured: the oracle's Llama 3.2 1B layer saves q, k, v and the output at 2 B × 2048 each
    /// per token.
    pub fn expands_kv_heads(self) -> bool {
        matches!(self, Stack::Torchtune)
    }

    /// Whether the stack's RMSNorm runs in fp32 on an upcast input and keeps its fp32 normalized tensor when
    /// the scale trains: torchtune's `RMSNorm.forward` (`torchtune/modules/rms_norm.py`:
    /// `F.rms_norm(x.float(), weight=self.scale).to(x.dtype)`). transformers' norms multiply the weight after
    /// casting back, keeping the 16-bit tensor. The oracle's Llama 3.2 1B layer keeps 8 B × 2048 + 4 per
    /// token in each norm when it trains, 4 B × 2048 + 4 when it does not.
    pub fn norms_keep_fp32(self) -> bool {
        matches!(self, Stack::Torchtune)
    }

    /// Whether weight quantization replaces the LM head too.
    ///
    /// Lightning Fabric's `BitsandbytesPrecision.convert_module` replaces every `torch.nn.Linear` whose name
    /// is not in `ignore_modules` (`lightning/fabric/plugins/precision/bitsandbytes.py`, `_convert_layers`),
    /// and litgpt's `generate` and `finetune` scripts pass none, so `lm_head` is stored in 4 or 8 bits and
    /// dequantized for each matmul. transformers' bitsandbytes integration keeps it in 16-bit
    /// (`get_keys_to_not_convert` skips the output embedding).
    pub fn quantizes_lm_head(self) -> bool {
        matches!(self, Stack::Litgpt)
    }

    /// Whether QLoRA training upcasts every non-quantized parameter to fp32.
    ///
    /// PEFT's `prepare_model_for_kbit_training` casts fp16/bf16 parameters to fp32 (`peft/utils/other.py`);
    /// TRL's SFTTrainer and axolotl call it for k-bit models. LLaMA-Factory does not (its own
    /// `prepare_model_for_training` only upcasts layer norms when `upcast_layernorm` is set); Unsloth,
    /// torchtune and litgpt never do.
    pub fn upcasts_non_quantized(self) -> bool {
        matches!(
            self,
            Stack::HfTrainer | Stack::Axolotl | Stack::MsSwift | Stack::Generic | Stack::PlainLoop
        )
    }

    /// Whether the stack's trainer runs the forward under bf16/fp16 autocast even when the weights are already
    /// 16-bit (pure bf16 loading).
    ///
    /// The HF Trainer with `bf16=True` (TRL, LLaMA-Factory, axolotl and ms-swift all set it with a bf16-loaded
    /// model; transformers 5 loads checkpoints in their own dtype) hands mixed precision to accelerate, whose
    /// `prepare_model` wraps `model.forward` in `torch.autocast` and `convert_outputs_to_fp32`
    /// (accelerate/accelerator.py `prepare_model`). On 16-bit weights the cast is a no-op for the model's own
    /// matmuls, but PEFT casts each adapter input to the fp32 adapter dtype (peft/tuners/lora/layer.py
    /// `_cast_input_dtype`) and autocast casts it back to 16-bit for `lora_A`, so the saved copy is 2 B, not 4 B.
    /// The generic stack (a plain loop), torchtune (`dtype: bf16`, no autocast) and litgpt (`bf16-true`) do not
    /// autocast; Unsloth's kernels run 16-bit adapters.
    pub fn autocasts_16bit_weights(self) -> bool {
        matches!(
            self,
            Stack::HfTrainer | Stack::LlamaFactory | Stack::Axolotl | Stack::MsSwift
        )
    }

    /// Whether the optimizer step allocates a parameter-sized temporary.
    ///
    /// PyTorch ≥ 2.0 AdamW defaults to the multi-tensor `foreach` implementation (`torch/optim/adamw.py`,
    /// `_default_to_fused_or_foreach`), whose `_foreach_*` ops allocate intermediate tensor lists. torchtune's
    /// recipe configs allocate none: its LoRA configs step `torch.optim.AdamW(fused=True)` and its full
    /// single-device configs step inside backward (`optimizer_in_bwd: True`), one parameter at a time
    /// (`recipes/configs/*/*_single_device.yaml`; the oracle's torchtune jobs, `tests/golden_torchtune.rs`).
    pub fn optimizer_step_temp(self) -> bool {
        !matches!(self, Stack::Torchtune)
    }

    /// Gradient checkpointing a stack turns on unless told otherwise.
    ///
    /// LLaMA-Factory enables it by default (`disable_gradient_checkpointing: false`,
    /// `llamafactory/model/model_utils/checkpointing.py`); Unsloth's `use_gradient_checkpointing="unsloth"`
    /// offloads the kept layer inputs to host RAM; torchtune recipes set `enable_activation_checkpointing: True`.
    /// The HF Trainer and the others default to `gradient_checkpointing=False`.
    pub fn checkpointing(self) -> Checkpointing {
        match self {
            Stack::LlamaFactory | Stack::Torchtune => Checkpointing::Layer,
            Stack::Unsloth => Checkpointing::Offload,
            _ => Checkpointing::Off,
        }
    }

    /// How the stack's FSDP wrapping holds frozen weights in LoRA training.
    ///
    /// Lightning's FSDP strategy (litgpt) wraps each transformer `Block` and sets `use_orig_params=True`
    /// (`lightning/fabric/strategies/fsdp.py`), so a block's LoRA and frozen weights share one
    /// `FlatParameter`. accelerate applies PEFT's auto-wrap policy, which wraps the trainable LoRA layers
    /// apart (`accelerate` `fsdp_auto_wrap_policy` for PEFT models, huggingface/accelerate#2253).
    pub fn frozen_sharding(self) -> FrozenSharding {
        match self {
            Stack::Litgpt => FrozenSharding::SharedFlat,
            _ => FrozenSharding::Separate,
        }
    }

    /// The precision regime the stack imposes, if any (see [`Stack::apply_defaults`]).
    pub fn precision(self) -> Option<Precision> {
        match self {
            Stack::Litgpt | Stack::Torchtune => Some(Precision::Pure16),
            Stack::Deepspeed | Stack::Fsdp => Some(Precision::Mixed),
            _ => None,
        }
    }

    /// Sets the job's stack-dependent defaults (the user may override each afterwards).
    ///
    /// Besides [`Stack::loss`], [`Stack::upcasts_non_quantized`], [`Stack::optimizer_step_temp`] and
    /// [`Stack::checkpointing`], [`Stack::frozen_sharding`] and [`Stack::precision`]: litgpt and torchtune train in pure bf16
    /// (`--precision bf16-true`, `dtype: bf16`); DeepSpeed's ZeRO optimizers always step fp32 master
    /// partitions (`deepspeed/runtime/zero/stage_1_and_2.py` `single_partition_of_fp32_groups`), and
    /// accelerate ≥ 0.30 upcasts FSDP's 16-bit sharded weights to fp32 when mixed precision is on
    /// (huggingface/accelerate#2674), so both presets are mixed precision.
    pub fn apply_defaults(self, job: &mut Job) {
        job.stack = self;
        job.loss = self.loss();
        job.upcast_non_quantized = self.upcasts_non_quantized();
        job.optimizer_step_temp = self.optimizer_step_temp();
        job.checkpointing = self.checkpointing();
        job.frozen_sharding = self.frozen_sharding();
        if let Some(precision) = self.precision() {
            job.precision = precision;
        }
    }
}
