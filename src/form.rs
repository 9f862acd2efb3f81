//! The page's whole state as plain data (what the URL and local storage hold), and the job it describes.

use crate::catalog;
use crate::model::{
    Architecture, AttentionImpl, Checkpointing, Job, KvDtype, Lora, LossImpl, Mode, Module,
    Offload, Optimizer, Parallelism, Precision, Stack, Version, Versions, WeightFormat,
};
use serde::{Deserialize, Serialize};

/// A Hub model's stored weights ([`crate::hub::WeightSummary::stored`]) and the id they belong to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HubCheckpoint {
    pub id: String,
    pub stored: crate::model::weights::StoredCheckpoint,
}

/// The id that selects the custom model or GPU instead of a catalog entry.
pub const CUSTOM: &str = "custom";

/// Every input on the page. Catalog ids, not copies of their data, so links stay short. Also the JSON the
/// CLI's `advise` reads (every field optional).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Form {
    /// Catalog model id, or [`CUSTOM`] for `custom_arch`.
    pub model: String,
    /// The shape used when `model` is [`CUSTOM`] (typed in, or imported from a config.json).
    pub custom_arch: Architecture,
    /// Catalog GPU id, or [`CUSTOM`] for a GPU of `custom_vram_gib`.
    pub gpu: String,
    /// Usable memory of a custom GPU, GiB.
    pub custom_vram_gib: u32,
    pub gpus: u32,
    /// Host RAM of the machine, GiB.
    pub ram_gib: u32,
    pub stack: Stack,
    pub mode: Mode,
    pub weights: WeightFormat,
    pub precision: Precision,
    pub optimizer: Optimizer,
    pub lora_rank: u32,
    pub lora_targets: Vec<Module>,
    /// `modules_to_save` includes the embedding.
    pub train_embed: bool,
    /// `modules_to_save` includes the LM head.
    pub train_lm_head: bool,
    pub dora: bool,
    /// `lora_dropout > 0`.
    pub lora_dropout: bool,
    /// The PEFT method (LoRA, its relatives, or a prompt method).
    pub peft_method: crate::model::peft::Method,
    /// Virtual tokens of the prompt methods (`num_virtual_tokens`).
    pub virtual_tokens: u32,
    /// Tokens whose embedding rows PEFT's trainable tokens train (`len(token_indices)`).
    pub trainable_tokens: u32,
    /// LoRA trains those token rows too (`trainable_token_indices`).
    pub lora_tokens: bool,
    /// BOFT's butterfly factors (`boft_n_butterfly_factor`).
    pub butterfly_factors: u32,
    pub micro_batch: u32,
    pub seq_len: u32,
    pub grad_accum: u32,
    /// Batches vary in length (dynamic padding, no packing).
    pub variable_lengths: bool,
    pub checkpointing: Checkpointing,
    pub attention: AttentionImpl,
    pub loss: LossImpl,
    pub parallelism: Parallelism,
    pub offload: Offload,
    pub prompt_tokens: u32,
    pub new_tokens: u32,
    pub concurrent: u32,
    pub kv_dtype: KvDtype,
    /// The Hugging Face Hub id (`owner/name`) `custom_arch` was loaded from; empty otherwise.
    pub hub: String,
    /// The stored weights of the Hub model `hub` names, read from its safetensors headers when it loaded.
    /// Not a setting and not in links: a link names the id, and the page reads the headers again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<HubCheckpoint>,
    /// Layers trained at once: freeze tuning's last layers, BAdam's block, LISA's sampled layers.
    pub trained_layers: u32,
    /// Rank of GaLore's / APOLLO's gradient projection.
    pub projection_rank: u32,
    /// Step each parameter in backward and free its gradient (torchtune `optimizer_in_bwd`).
    pub optimizer_in_backward: bool,
    /// SFT or a preference / RL objective.
    pub objective: crate::model::preference::Objective,
    /// Where DPO's, KTO's, GRPO's or PPO's reference model comes from.
    pub reference: crate::model::preference::Reference,
    /// GRPO: completions per prompt, completion length (PPO's too), and a colocated vLLM engine's GiB.
    pub generations: u32,
    pub completion_tokens: u32,
    pub vllm_gib: u32,
    /// GRPO: the colocated vLLM engine sleeps during the training step (`vllm_enable_sleep_mode`).
    pub vllm_sleep: bool,
    /// Serving: the engine whose startup arithmetic the serving panel redoes.
    pub engine: crate::model::Engine,
    /// Serving: `gpu_memory_utilization` in percent (vLLM default 90).
    pub gpu_util_pct: u32,
    /// Serving: `--enforce-eager` (no CUDA graphs).
    pub enforce_eager: bool,
    /// Serving: `--max-num-seqs` (0: the engine's default).
    pub max_num_seqs: u32,
    /// Serving: tokens per KV block (`--block-size`, vLLM default 16).
    pub block_size: u32,
    /// Images per sample (per prompt in inference) of a vision-language model; 0 for text only.
    pub images: u32,
    /// The vision tower trains (LLaMA-Factory `freeze_vision_tower: false`).
    pub train_vision: bool,
    /// The PyTorch release the job runs on (`major.minor`; today's by default).
    pub torch_version: Version,
    /// The transformers release the job runs on.
    pub transformers_version: Version,
}

impl Default for Form {
    /// LoRA on Llama 3.1 8B, one RTX 4090, micro-batch 4 × 2048 tokens with checkpointing: a common first try.
    fn default() -> Self {
        Form {
            model: "llama-3.1-8b".into(),
            custom_arch: Architecture::default(),
            gpu: "rtx-4090".into(),
            custom_vram_gib: 24,
            gpus: 1,
            ram_gib: 64,
            stack: Stack::HfTrainer,
            mode: Mode::Lora,
            weights: WeightFormat::Bf16,
            precision: Precision::Pure16,
            optimizer: Optimizer::Adamw,
            lora_rank: 16,
            lora_targets: Module::ALL.to_vec(),
            train_embed: false,
            train_lm_head: false,
            dora: false,
            lora_dropout: true,
            peft_method: crate::model::peft::Method::Lora,
            virtual_tokens: 20,
            trainable_tokens: 10,
            lora_tokens: false,
            butterfly_factors: 1,
            micro_batch: 4,
            seq_len: 2048,
            grad_accum: 4,
            // The HF Trainer/TRL and LLaMA-Factory default: dynamic padding without packing.
            variable_lengths: true,
            checkpointing: Checkpointing::Layer,
            attention: AttentionImpl::Sdpa,
            loss: LossImpl::Fp32Logits,
            parallelism: Parallelism::Ddp,
            offload: Offload::None,
            prompt_tokens: 2048,
            new_tokens: 512,
            concurrent: 1,
            kv_dtype: KvDtype::Bf16,
            hub: String::new(),
            checkpoint: None,
            trained_layers: 2,
            projection_rank: 128,
            optimizer_in_backward: false,
            objective: crate::model::preference::Objective::Sft,
            reference: crate::model::preference::Reference::Copy,
            generations: 8,
            completion_tokens: 256,
            vllm_gib: 0,
            vllm_sleep: false,
            engine: crate::model::Engine::Vllm,
            gpu_util_pct: 90,
            enforce_eager: false,
            max_num_seqs: 0,
            block_size: 16,
            images: 0,
            train_vision: false,
            torch_version: Versions::default().torch,
            transformers_version: Versions::default().transformers,
        }
    }
}

impl Form {
    /// Checks every number against the range its setting declares ([`crate::settings::SETTINGS`], the same
    /// ranges share links accept), and the custom shape as [`Architecture::check`] does; the error names the
    /// field.
    pub fn check(&self) -> Result<(), String> {
        self.custom_arch
            .check()
            .map_err(|e| format!("custom_arch.{e}"))?;
        for setting in crate::settings::SETTINGS {
            if let Some((lo, hi)) = setting.range {
                let text = (setting.get)(self);
                if crate::settings::number(&text, lo, hi).is_none() {
                    return Err(format!("{}: {text} is outside {lo}…{hi}", setting.field));
                }
            }
        }
        if !self.hub.is_empty() && crate::hub::parse_id(&self.hub).is_err() {
            let shown: String = self.hub.chars().take(40).collect();
            return Err(format!("hub: '{shown}' is not a Hub model id (owner/name)"));
        }
        Ok(())
    }

    /// The job this form describes (unknown catalog ids fall back to the defaults' model).
    pub fn job(&self) -> Job {
        let arch = self.arch();
        let mut job = Job {
            arch,
            ..Job::default()
        };
        self.stack.apply_defaults(&mut job);
        job.mode = self.mode;
        // Kept as chosen: `model::normalize` coerces QLoRA on a 16-bit base to NF4 and warns about it.
        job.weights = self.weights;
        job.precision = self.precision;
        job.optimizer = if self.mode == Mode::Inference {
            Optimizer::None
        } else {
            self.optimizer
        };
        job.lora = self.lora();
        job.micro_batch = self.micro_batch;
        job.seq_len = self.seq_len;
        job.grad_accum = self.grad_accum;
        job.variable_lengths = self.variable_lengths;
        job.checkpointing = self.checkpointing;
        job.attention = self.attention;
        job.loss = self.loss;
        job.gpus = self.gpus;
        job.parallelism = self.parallelism;
        job.offload = self.offload;
        job.inference.prompt_tokens = self.prompt_tokens;
        job.inference.new_tokens = self.new_tokens;
        job.inference.batch = self.concurrent;
        job.inference.kv_dtype = self.kv_dtype;
        job.freeze_trainable_layers = self.trained_layers;
        // The headers describe the Hub model only while the form still shows it unedited.
        job.checkpoint = self
            .checkpoint
            .as_ref()
            .filter(|c| self.model == CUSTOM && !self.hub.is_empty() && c.id == self.hub)
            .map(|c| c.stored);
        job.projection_rank = self.projection_rank;
        job.optimizer_in_backward = self.optimizer_in_backward;
        job.objective = self.objective;
        job.reference = self.reference;
        job.vision.images = self.images;
        job.vision.train_tower = self.train_vision;
        job.versions = Versions {
            torch: self.torch_version,
            transformers: self.transformers_version,
        };
        job.grpo = crate::model::preference::Grpo {
            generations: self.generations,
            completion_tokens: self.completion_tokens,
            vllm_gib: f64::from(self.vllm_gib),
            vllm_sleep: self.vllm_sleep,
        };
        job
    }

    /// The serving request this form describes (mode inference): one request of prompt + new tokens is the
    /// `max_model_len`, the GPUs are the tensor-parallel group, the KV dtype and weights are the form's.
    pub fn serve_request(&self) -> crate::model::ServeRequest {
        use crate::model::{KvDtype, ServeKvDtype};
        let tp = if self.parallelism == Parallelism::Tensor {
            self.gpus.max(1)
        } else {
            1
        };
        // A Hub checkpoint's headers give its stored bytes, which the engine loads whole.
        let served = Job {
            mode: Mode::Inference,
            ..self.job()
        };
        let stored_gib = crate::model::weights::checkpoint_in_use(&served)
            .map(|c| c.total() / f64::from(tp) / crate::bytes::GIB);
        crate::model::ServeRequest {
            engine: Some(self.engine),
            gpu_gib: Some(self.gpu_usable_gib()),
            gpu_name: Some(self.gpu_name()),
            tensor_parallel: Some(tp),
            gpu_memory_utilization: Some(f64::from(self.gpu_util_pct.clamp(1, 100)) / 100.0),
            max_model_len: Some(self.prompt_tokens.saturating_add(self.new_tokens).max(1)),
            kv_dtype: Some(match self.kv_dtype {
                KvDtype::Fp8 => ServeKvDtype::Fp8,
                _ => ServeKvDtype::Auto,
            }),
            enforce_eager: Some(self.enforce_eager),
            max_num_seqs: (self.max_num_seqs > 0).then_some(self.max_num_seqs),
            block_size: Some(self.block_size.max(1)),
            weights: self.weights.is_quantized().then_some(self.weights),
            weights_gib: stored_gib,
            max_position_embeddings: catalog::model(&self.model)
                .and_then(|m| m.max_position_embeddings()),
            ..crate::model::ServeRequest::default()
        }
    }

    /// The LoRA settings this form describes.
    pub fn lora(&self) -> Lora {
        Lora {
            rank: self.lora_rank,
            targets: self.lora_targets.clone(),
            train_embed: self.train_embed,
            train_lm_head: self.train_lm_head,
            dora: self.dora,
            dropout: self.lora_dropout,
            method: self.peft_method,
            virtual_tokens: self.virtual_tokens,
            trainable_tokens: self.trainable_tokens,
            with_tokens: self.lora_tokens,
            butterfly_factors: self.butterfly_factors,
            ..Lora::default()
        }
    }

    /// Takes an adapter's LoRA settings (an imported `adapter_config.json`), switching to LoRA if the
    /// method trained no adapters.
    pub fn set_lora(&mut self, lora: Lora) {
        if !matches!(self.mode, Mode::Lora | Mode::Qlora) {
            self.mode = Mode::Lora;
        }
        self.lora_rank = lora.rank;
        self.lora_targets = lora.targets;
        self.train_embed = lora.train_embed;
        self.train_lm_head = lora.train_lm_head;
        self.dora = lora.dora;
        self.lora_dropout = lora.dropout;
        self.peft_method = lora.method;
        self.virtual_tokens = lora.virtual_tokens;
        self.trainable_tokens = lora.trainable_tokens;
        self.lora_tokens = lora.with_tokens;
        self.butterfly_factors = lora.butterfly_factors;
    }

    /// Switches the training stack and takes its defaults for the fields a stack decides.
    pub fn set_stack(&mut self, stack: Stack) {
        let mut job = Job::default();
        stack.apply_defaults(&mut job);
        self.stack = stack;
        self.loss = job.loss;
        self.checkpointing = job.checkpointing;
        if let Some(precision) = stack.precision() {
            self.precision = precision;
        }
    }

    /// The model's shape: the catalog entry's, or the custom one.
    pub fn arch(&self) -> Architecture {
        match catalog::model(&self.model) {
            Some(m) => m.arch().clone(),
            None => self.custom_arch.clone(),
        }
    }

    /// Usable memory of one GPU, GiB.
    pub fn gpu_usable_gib(&self) -> f64 {
        catalog::gpu(&self.gpu).map_or(f64::from(self.custom_vram_gib), |g| g.usable_gib)
    }

    /// The GPU's display name.
    pub fn gpu_name(&self) -> String {
        catalog::gpu(&self.gpu).map_or_else(
            || format!("GPU {} GiB", self.custom_vram_gib),
            |g| g.name.clone(),
        )
    }
}
