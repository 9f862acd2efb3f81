//! The page's whole state as plain data (what the URL and local storage hold), and the job it describes.

use crate::catalog;
use crate::model::{
    AttentionImpl, Checkpointing, Job, KvDtype, LossImpl, Mode, Module, Offload, Optimizer,
    Parallelism, Precision, Stack, WeightFormat,
};

/// Every input on the page. Catalog ids, not copies of their data, so links stay short.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    pub model: String,
    pub gpu: String,
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
    pub micro_batch: u32,
    pub seq_len: u32,
    pub grad_accum: u32,
    pub checkpointing: Checkpointing,
    pub attention: AttentionImpl,
    pub loss: LossImpl,
    pub parallelism: Parallelism,
    pub offload: Offload,
    pub prompt_tokens: u32,
    pub new_tokens: u32,
    pub concurrent: u32,
    pub kv_dtype: KvDtype,
}

impl Default for Form {
    /// LoRA on Llama 3.1 8B, one RTX 4090, micro-batch 4 × 2048 tokens with checkpointing: a common first try.
    fn default() -> Self {
        Form {
            model: "llama-3.1-8b".into(),
            gpu: "rtx-4090".into(),
            gpus: 1,
            ram_gib: 64,
            stack: Stack::HfTrainer,
            mode: Mode::Lora,
            weights: WeightFormat::Bf16,
            precision: Precision::Pure16,
            optimizer: Optimizer::Adamw,
            lora_rank: 16,
            lora_targets: Module::ALL.to_vec(),
            micro_batch: 4,
            seq_len: 2048,
            grad_accum: 4,
            checkpointing: Checkpointing::Layer,
            attention: AttentionImpl::Sdpa,
            loss: LossImpl::Fp32Logits,
            parallelism: Parallelism::Ddp,
            offload: Offload::None,
            prompt_tokens: 2048,
            new_tokens: 512,
            concurrent: 1,
            kv_dtype: KvDtype::Bf16,
        }
    }
}

impl Form {
    /// The job this form describes (unknown catalog ids fall back to the defaults' model).
    pub fn job(&self) -> Job {
        let arch = catalog::model(&self.model)
            .or_else(|| catalog::model(&Form::default().model))
            .map(|m| m.arch().clone())
            .unwrap_or_default();
        let mut job = Job {
            arch,
            ..Job::default()
        };
        self.stack.apply_defaults(&mut job);
        job.mode = self.mode;
        job.weights = if self.mode == Mode::Qlora && !self.weights.is_bnb_4bit() {
            WeightFormat::Nf4
        } else {
            self.weights
        };
        job.precision = self.precision;
        job.optimizer = if self.mode == Mode::Inference {
            Optimizer::None
        } else {
            self.optimizer
        };
        job.lora.rank = self.lora_rank;
        job.lora.targets = self.lora_targets.clone();
        job.micro_batch = self.micro_batch;
        job.seq_len = self.seq_len;
        job.grad_accum = self.grad_accum;
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
        job
    }

    /// Switches the training stack and takes its defaults for the fields a stack decides.
    pub fn set_stack(&mut self, stack: Stack) {
        let mut job = Job::default();
        stack.apply_defaults(&mut job);
        self.stack = stack;
        self.loss = job.loss;
        self.checkpointing = job.checkpointing;
        if matches!(stack, Stack::Litgpt | Stack::Torchtune) {
            self.precision = job.precision;
        }
    }

    /// Usable memory of one GPU, GiB (0 for an unknown id).
    pub fn gpu_usable_gib(&self) -> f64 {
        catalog::gpu(&self.gpu).map_or(0.0, |g| g.usable_gib)
    }
}
