//! The job a user describes: model shape, method, precision, optimizer, batch, GPUs. Plain data with defaults,
//! so a JSON object (CLI, `window.vramfit.estimate`) may give only the fields it cares about.

use super::arch::Architecture;
use super::stack::Stack;
use serde::{Deserialize, Serialize};

/// What the run does with the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every parameter trained.
    Full,
    /// LoRA adapters on a frozen 16-bit (or 8-bit) base.
    #[default]
    Lora,
    /// LoRA on a 4-bit quantized base (QLoRA; Dettmers et al. 2023).
    Qlora,
    /// Only the last `freeze_trainable_layers` layers trained (LLaMA-Factory `finetuning_type: freeze`).
    Freeze,
    /// BAdam (Luo et al. 2024, "BAdam: A Memory Efficient Full Parameter Optimization Method"): every weight
    /// trains, one block of `freeze_trainable_layers` layers at a time, with fp32 copies, gradients and Adam
    /// states for that block only (LLaMA-Factory `use_badam`).
    Badam,
    /// LISA (Pan et al. 2024, "Layerwise Importance Sampled AdamW"): `freeze_trainable_layers` sampled layers
    /// plus the embedding and LM head train in each period (LMFlow `--lisa_activated_layers`).
    Lisa,
    /// Generation: prefill plus decoding with a KV cache.
    Inference,
}

/// How the base weights are stored on the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WeightFormat {
    Fp32,
    #[default]
    Bf16,
    Fp16,
    Fp8,
    /// bitsandbytes LLM.int8().
    Int8,
    /// bitsandbytes 4-bit NormalFloat.
    Nf4,
    /// NF4 with double quantization of the absmax constants.
    Nf4Dq,
    /// bitsandbytes 4-bit float.
    Fp4,
    /// GPTQ 4-bit, group size 128.
    GptqInt4,
    /// GPTQ 8-bit, group size 128.
    GptqInt8,
    /// AWQ 4-bit, group size 128.
    AwqInt4,
    /// MXFP4 (OCP microscaling FP4, gpt-oss checkpoints): the routed experts' weights in 4-bit E2M1 with one
    /// E8M0 scale per 32 values; attention, routers, embeddings and the LM head stay bf16 (transformers
    /// `Mxfp4Config`, `integrations/mxfp4.py`). A dense model has no experts, so nothing is quantized.
    Mxfp4,
}

/// Whether the run keeps fp32 master weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Weights, gradients and optimizer states in bf16/fp16 ("pure" 16-bit, e.g. `torch_dtype=bfloat16`).
    #[default]
    Pure16,
    /// fp32 weights with bf16/fp16 autocast (HF Trainer `bf16=True` on an fp32-loaded model; DeepSpeed keeps
    /// 16-bit weights plus fp32 master copies).
    Mixed,
    /// Everything in fp32.
    Fp32,
}

/// The optimizer and how its states are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    /// torch AdamW, fp32 exp_avg and exp_avg_sq.
    #[default]
    Adamw,
    /// AdamW with states in the parameter dtype (bf16).
    Adamw16,
    /// bitsandbytes 8-bit AdamW.
    Adamw8bit,
    /// bitsandbytes paged AdamW (32-bit states in CUDA managed memory).
    PagedAdamw,
    /// bitsandbytes paged 8-bit AdamW.
    PagedAdamw8bit,
    /// Adafactor (factored second moment, no first moment).
    Adafactor,
    /// Plain SGD.
    Sgd,
    /// SGD with momentum.
    SgdMomentum,
    /// Lion (one momentum buffer).
    Lion,
    /// GaLore (Zhao et al. 2024): each decoder weight's gradient projected to rank `projection_rank`, Adam
    /// states on the projection (`galore-torch`).
    Galore,
    /// Q-GaLore (Zhang et al. 2024, `VITA-Group/Q-GaLore`): GaLore with 8-bit Adam states on the projection,
    /// a uint8-stored projector, and the projected decoder weights held in int8 (`QGaLoreLinear`).
    QGalore,
    /// APOLLO (Zhu et al. 2024): random rank-`projection_rank` projection for channel-wise scaling; no SVD.
    Apollo,
    /// Adam-mini (Zhang et al. 2024): full first moment, one second moment per block.
    AdamMini,
    /// LOMO (Lv et al. 2023): SGD fused into backward, no stored gradients, no states.
    Lomo,
    /// AdaLomo (Lv et al. 2023): LOMO with a factored second moment.
    AdaLomo,
    /// No optimizer (inference).
    None,
}

/// A linear module LoRA can adapt, named as in Llama (`q_proj` … `down_proj`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Module {
    Q,
    K,
    V,
    O,
    Gate,
    Up,
    Down,
}

impl Module {
    /// All seven, in layer order.
    pub const ALL: [Module; 7] = [
        Module::Q,
        Module::K,
        Module::V,
        Module::O,
        Module::Gate,
        Module::Up,
        Module::Down,
    ];
}

/// LoRA settings (PEFT `LoraConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Lora {
    /// Rank `r`.
    pub rank: u32,
    /// Adapted modules (`target_modules`).
    pub targets: Vec<Module>,
    /// Input embedding fully trained (`modules_to_save=["embed_tokens"]`).
    pub train_embed: bool,
    /// LM head fully trained (`modules_to_save=["lm_head"]`).
    pub train_lm_head: bool,
    /// DoRA (`use_dora=True`): a magnitude vector per adapted module and extra activations.
    pub dora: bool,
    /// `lora_dropout > 0`: each adapted module keeps a dropped-out copy of its input.
    pub dropout: bool,
    /// The PEFT method (LoRA unless said otherwise); `rank` is its rank (OFT: the block size).
    pub method: super::peft::Method,
    /// Virtual tokens of prompt tuning, prefix tuning and P-tuning (`num_virtual_tokens`).
    pub virtual_tokens: u32,
    /// Width of P-tuning's MLP prompt encoder (`encoder_hidden_size`).
    pub encoder_hidden: u32,
    /// Tokens whose embedding rows PEFT's trainable tokens train (`TrainableTokensConfig.token_indices`,
    /// their count), method [`super::peft::Method::TrainableTokens`].
    pub trainable_tokens: u32,
    /// LoRA with a trainable-tokens delta beside its adapters (`LoraConfig.trainable_token_indices`):
    /// `trainable_tokens` embedding rows train too, as PEFT's trainable tokens train them.
    pub with_tokens: bool,
    /// BOFT's butterfly factors (`BOFTConfig.boft_n_butterfly_factor`, 1 = one block-diagonal rotation).
    /// PEFT falls back to 1 when its CUDA extension (`fbd_cuda`) cannot be built.
    pub butterfly_factors: u32,
}

impl Default for Lora {
    /// r = 16 on every linear module ("all-linear"), dropout 0.05: QLoRA paper practice.
    fn default() -> Self {
        Lora {
            rank: 16,
            targets: Module::ALL.to_vec(),
            train_embed: false,
            train_lm_head: false,
            dora: false,
            dropout: true,
            method: super::peft::Method::Lora,
            virtual_tokens: 20,
            encoder_hidden: 1024,
            trainable_tokens: 10,
            with_tokens: false,
            butterfly_factors: 1,
        }
    }
}

/// Activation (gradient) checkpointing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Checkpointing {
    /// Every activation kept for backward.
    #[default]
    Off,
    /// HF `gradient_checkpointing=True`: each decoder layer's input kept, the layer recomputed in backward.
    Layer,
    /// Unsloth "unsloth" checkpointing: the kept layer inputs are offloaded to host RAM.
    Offload,
}

/// Attention kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AttentionImpl {
    /// Materializes the `heads · s · s` score and probability matrices.
    Eager,
    /// `torch.nn.functional.scaled_dot_product_attention` (memory-efficient / flash backends).
    #[default]
    Sdpa,
    /// FlashAttention-2 (`attn_implementation="flash_attention_2"`).
    Flash2,
}

/// How logits and the cross-entropy loss are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LossImpl {
    /// Full `b·s·V` logits, upcast to fp32 for the loss (HF Llama-family `logits.float()`).
    #[default]
    Fp32Logits,
    /// Full logits kept in 16-bit through the loss (several remote-code families).
    Bf16Logits,
    /// LM head and loss computed in chunks (torchtune `CEWithChunkedOutputLoss`, litgpt `chunked_cross_entropy`).
    Chunked,
    /// Fused linear + cross-entropy kernel that never materializes logits (Liger, Unsloth, Cut Cross-Entropy).
    Fused,
    /// TRL's fused LM head (`add_fused_lm_head`, TRL ≥ 1.15's `SFTTrainer`; its DPO, KTO and GRPO trainers):
    /// per-token log-probabilities from logit tiles, never the `b·s·V` logits
    /// ([`super::loss::trl_fused_head_bytes`]). Objectives TRL computes without it (ORPO, SimPO) keep the model's
    /// fp32 logits.
    TrlFusedHead,
}

/// How the model is spread over the GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Parallelism {
    /// One full replica per GPU (DDP, or a single GPU).
    #[default]
    Ddp,
    /// DeepSpeed ZeRO-1: optimizer states sharded.
    Zero1,
    /// ZeRO-2: optimizer states and gradients sharded.
    Zero2,
    /// ZeRO-3 or FSDP full shard: parameters too.
    Zero3,
    /// Naive model parallel: layers split over GPUs (`device_map="auto"`); one GPU works at a time.
    Pipeline,
    /// Tensor parallel over all GPUs (Megatron-style).
    Tensor,
}

/// How FSDP (ZeRO-3-style sharding) holds frozen base weights when only adapters or some layers train.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FrozenSharding {
    /// Frozen weights sit in FSDP units of their own (accelerate's PEFT auto-wrap policy, FSDP2 per-parameter
    /// sharding): only trainable weights get gradients.
    #[default]
    Separate,
    /// FSDP1 with `use_orig_params=True` and frozen and trainable weights in one `FlatParameter` (a wrap per
    /// decoder block, as Lightning/litgpt do): gradient memory "equivalent to not freezing those parameters"
    /// (PyTorch FSDP API docs, on freezing parameters).
    SharedFlat,
    /// As [`FrozenSharding::SharedFlat`] on PyTorch ≤ 2.1, whose FSDP1 does not reshard frozen weights after
    /// backward: by the optimizer step every block's weights are unsharded (`shared/design/memory-model.md`
    /// §11; the reshard-only hook came with pytorch/pytorch#104186).
    SharedFlatNoReshard,
}

/// What is offloaded to host memory (DeepSpeed `offload_optimizer` / `offload_param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Offload {
    #[default]
    None,
    /// fp32 master weights and optimizer states in host RAM; the step runs on the CPU.
    Optimizer,
    /// Also the parameters (ZeRO-3 only): each layer is fetched when needed.
    ParamOptimizer,
}

/// Where offloaded states go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OffloadDevice {
    #[default]
    Cpu,
    /// ZeRO-Infinity NVMe offload: states on disk, small pinned staging buffers in RAM.
    Nvme,
}

/// KV-cache element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum KvDtype {
    #[default]
    Bf16,
    Fp8,
    Int8,
    Int4,
}

impl KvDtype {
    /// Bytes per cached element.
    pub fn bytes(self) -> f64 {
        match self {
            KvDtype::Bf16 => 2.0,
            KvDtype::Fp8 | KvDtype::Int8 => 1.0,
            KvDtype::Int4 => 0.5,
        }
    }
}

/// Generation settings (mode [`Mode::Inference`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Inference {
    /// Prompt tokens per sequence.
    pub prompt_tokens: u32,
    /// Generated tokens per sequence.
    pub new_tokens: u32,
    /// Sequences generated at once.
    pub batch: u32,
    /// KV-cache dtype.
    pub kv_dtype: KvDtype,
}

impl Default for Inference {
    fn default() -> Self {
        Inference {
            prompt_tokens: 2048,
            new_tokens: 512,
            batch: 1,
            kv_dtype: KvDtype::Bf16,
        }
    }
}

/// A library release, `major.minor` (written `"4.57"` in JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Version {
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32) -> Version {
        Version { major, minor }
    }

    /// Reads `"2.1"`, `"2.1.2"`, `"4.36.0+cu121"` or `"2"` (the patch and local parts are ignored).
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.trim().split(['.', '+']).map(str::parse::<u32>);
        match (parts.next(), parts.next()) {
            (Some(Ok(major)), Some(Ok(minor))) => Some(Version::new(major, minor)),
            (Some(Ok(major)), None) => Some(Version::new(major, 0)),
            _ => None,
        }
    }
}

impl TryFrom<String> for Version {
    type Error = String;
    fn try_from(text: String) -> Result<Version, String> {
        Version::parse(&text).ok_or_else(|| format!("'{text}' is not a version like 2.9"))
    }
}

impl From<Version> for String {
    fn from(v: Version) -> String {
        format!("{}.{}", v.major, v.minor)
    }
}

/// The releases of the libraries whose behaviour moves memory by tens of percent. Defaults are current
/// releases; older ones change these terms:
/// - transformers < 4.45 computes the logits of every prompt position at prefill and upcasts them to fp32
///   (`logits_to_keep`/`num_logits_to_keep` came with 4.45);
/// - transformers < 4.48, or PyTorch < 2.5, expands K/V to every query head before SDPA (`repeat_kv`); later
///   releases pass `enable_gqa` when no attention mask is given (`integrations/sdpa_attention.py`,
///   `use_gqa_in_sdpa`);
/// - PyTorch ≤ 2.1 FSDP1 leaves frozen weights of a shared `FlatParameter` unsharded after backward
///   (see [`FrozenSharding::SharedFlatNoReshard`]).
/// - transformers ≥ 5.0 keeps an MoE layer's routed experts as fused 3-D parameters, which PEFT adapts through
///   their merged weight ([`super::activations::merged_expert_lora`]);
/// - transformers ≥ 5.0 makes a frozen vision tower record its forward under PEFT with gradient
///   checkpointing (`enable_input_require_grads` hooks every sub-model, see [`super::vision::input_grads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Versions {
    pub torch: Version,
    pub transformers: Version,
}

impl Default for Versions {
    fn default() -> Self {
        Versions {
            torch: Version::new(2, 15),
            transformers: Version::new(5, 24),
        }
    }
}

impl Versions {
    /// PyTorch releases worth choosing between: today's and one on each side of each release where a term
    /// changes (≤ 2.1 FSDP1 frozen weights, 2.5 SDPA's `enable_gqa`), newest first.
    pub const TORCH_CHOICES: [Version; 5] = [
        Version::new(2, 5),
        Version::new(2, 4),
        Version::new(2, 2),
        Version::new(2, 1),
        Version::new(2, 0),
    ];
    /// transformers releases worth choosing between: one on each side of 4.45 (`logits_to_keep`), 4.48
    /// (GQA-shaped SDPA) and 5.0 (fused MoE experts, a frozen tower's recorded forward, the sliding cache's
    /// slice), newest first.
    pub const TRANSFORMERS_CHOICES: [Version; 6] = [
        Version::new(5, 0),
        Version::new(4, 57),
        Version::new(4, 48),
        Version::new(4, 47),
        Version::new(4, 45),
        Version::new(4, 44),
    ];

    /// Whether SDPA receives K/V expanded to every query head (`repeat_kv`) rather than GQA-shaped. A padding
    /// mask (variable-length batches) also forces the expansion.
    pub fn sdpa_repeats_kv(&self, padded: bool) -> bool {
        padded || self.transformers < Version::new(4, 48) || self.torch < Version::new(2, 5)
    }

    /// Whether prefill computes logits for every prompt position instead of the last one.
    pub fn prefill_logits_all_positions(&self) -> bool {
        self.transformers < Version::new(4, 45)
    }
}

/// Everything that decides memory, with defaults for every field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Job {
    /// Model shape.
    pub arch: Architecture,
    /// Training stack whose behaviour the other fields default to.
    pub stack: Stack,
    pub mode: Mode,
    pub weights: WeightFormat,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub lora: Lora,
    /// Trained layers in freeze mode (the last n).
    pub freeze_trainable_layers: u32,
    /// Sequences per GPU per forward pass.
    pub micro_batch: u32,
    /// Tokens per sequence.
    pub seq_len: u32,
    /// Micro-batches accumulated per optimizer step (gradients stay allocated between them).
    pub grad_accum: u32,
    pub checkpointing: Checkpointing,
    pub attention: AttentionImpl,
    pub loss: LossImpl,
    /// GPUs in the job.
    pub gpus: u32,
    pub parallelism: Parallelism,
    pub offload: Offload,
    pub offload_device: OffloadDevice,
    pub inference: Inference,
    /// Dataset held in host RAM, GiB (0 when streamed or memory-mapped).
    pub dataset_gib: f64,
    /// PEFT `prepare_model_for_kbit_training` (and similar): non-quantized parameters upcast to fp32.
    pub upcast_non_quantized: bool,
    /// The optimizer step allocates a parameter-sized temporary (PyTorch `foreach` AdamW, the default).
    pub optimizer_step_temp: bool,
    /// How FSDP holds frozen weights in LoRA/freeze training (matters only when sharded over ≥ 2 GPUs).
    pub frozen_sharding: FrozenSharding,
    /// Batches differ in length (dynamic padding, no packing), so tensor shapes change between steps.
    pub variable_lengths: bool,
    /// Library releases (today's by default).
    pub versions: Versions,
    /// The checkpoint's stored weights, read from its safetensors headers (a Hub model), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<super::weights::StoredCheckpoint>,
    /// Rank of GaLore's and APOLLO's gradient projection (`galore_rank`, `apollo_rank`).
    pub projection_rank: u32,
    /// Each parameter is stepped as soon as its gradient is ready, which is then freed (torchtune
    /// `optimizer_in_bwd`, GaLore layer-wise): no full set of gradients is ever stored.
    pub optimizer_in_backward: bool,
    /// SFT, or a preference / RL objective (`super::preference`).
    pub objective: super::preference::Objective,
    /// Where DPO's, KTO's, GRPO's or PPO's reference model comes from.
    pub reference: super::preference::Reference,
    /// GRPO's generation settings (the completion length is PPO's too).
    pub grpo: super::preference::Grpo,
    /// Images per sample and whether the vision tower trains (a model with a tower, `arch.vision`).
    pub vision: super::vision::VisionSettings,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            arch: Architecture::default(),
            stack: Stack::default(),
            mode: Mode::Lora,
            weights: WeightFormat::Bf16,
            precision: Precision::Pure16,
            optimizer: Optimizer::Adamw,
            lora: Lora::default(),
            freeze_trainable_layers: 2,
            micro_batch: 4,
            seq_len: 2048,
            grad_accum: 4,
            checkpointing: Checkpointing::Layer,
            attention: AttentionImpl::Sdpa,
            loss: LossImpl::Fp32Logits,
            gpus: 1,
            parallelism: Parallelism::Ddp,
            offload: Offload::None,
            offload_device: OffloadDevice::Cpu,
            inference: Inference::default(),
            dataset_gib: 0.0,
            upcast_non_quantized: false,
            optimizer_step_temp: true,
            frozen_sharding: FrozenSharding::Separate,
            variable_lengths: false,
            versions: Versions::default(),
            checkpoint: None,
            projection_rank: 128,
            optimizer_in_backward: false,
            objective: super::preference::Objective::Sft,
            reference: super::preference::Reference::Copy,
            grpo: super::preference::Grpo::default(),
            vision: super::vision::VisionSettings::default(),
        }
    }
}

impl Job {
    /// Whether the job trains (anything but inference).
    pub fn is_training(&self) -> bool {
        self.mode != Mode::Inference
    }

    /// Sequences per optimizer step over all data-parallel ranks: micro-batch × accumulation × replicas.
    pub fn effective_batch(&self) -> u64 {
        let replicas = match self.parallelism {
            Parallelism::Pipeline | Parallelism::Tensor => 1,
            _ => self.gpus.max(1),
        };
        u64::from(self.micro_batch)
            .saturating_mul(u64::from(self.grad_accum.max(1)))
            .saturating_mul(u64::from(replicas))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The releases the page offers fall on both sides of every change the model knows.
    #[test]
    fn the_choices_straddle_every_change() {
        let today = Versions::default();
        let tf: Vec<Versions> = Versions::TRANSFORMERS_CHOICES
            .iter()
            .map(|&transformers| Versions {
                transformers,
                ..today
            })
            .collect();
        let both =
            |f: &dyn Fn(&Versions) -> bool, vs: &[Versions]| vs.iter().any(f) && !vs.iter().all(f);
        assert!(both(&|v| v.prefill_logits_all_positions(), &tf));
        assert!(both(&|v| v.sdpa_repeats_kv(false), &tf));
        assert!(both(&|v| v.transformers >= Version::new(5, 0), &tf));
        let torch: Vec<Versions> = Versions::TORCH_CHOICES
            .iter()
            .map(|&torch| Versions { torch, ..today })
            .collect();
        assert!(both(&|v| v.sdpa_repeats_kv(false), &torch));
        assert!(both(&|v| v.torch <= Version::new(2, 1), &torch));
    }
}
