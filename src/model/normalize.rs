//! The one place a job is normalized before it is estimated: inputs that cannot run as given are coerced to
//! what would run, and each coercion becomes a [`Warning`] the page and the CLI show. Nothing upstream (the
//! form, the eval, the importers) coerces on its own, so every coercion reaches the user.

use super::estimate::Warning;
use super::job::{Job, Mode, Offload, Parallelism, WeightFormat};

/// The job as it will be estimated, and the warnings about what was changed or looks wrong.
pub fn normalize(job: &Job) -> (Job, Vec<Warning>) {
    let mut warnings = Vec::new();
    let mut job = job.clone();
    // MXFP4 cannot be trained as stored: transformers' `Mxfp4HfQuantizer.is_trainable` is false ("MXFP4
    // quantization don't support training, please consider dequantizing the model first by passing
    // quantization_config=Mxfp4Config(dequantize=True)"), so the Trainer refuses the model, and a run that
    // trains loads it with `Mxfp4Config(dequantize=True)`, which unpacks the experts to bf16 at load
    // (`integrations/mxfp4.py` `convert_moe_packed_tensors`; OpenAI cookbook "Fine-tuning with gpt-oss and
    // Hugging Face Transformers"). Without the Triton kernels transformers dequantizes to bf16 on its own.
    // Every training mode is therefore estimated on bf16 weights (QLoRA then re-quantizes them to NF4, below);
    // inference keeps MXFP4. The page also says so beside the weight format (`Text::mxfp4_trains_bf16`).
    if job.weights == WeightFormat::Mxfp4 && job.is_training() {
        warnings.push(Warning::Mxfp4TrainsDequantized);
        job.weights = WeightFormat::Bf16;
    }
    if job.mode == Mode::Qlora && !job.weights.is_quantized() {
        warnings.push(Warning::QloraNeedsQuantizedBase);
        job.weights = WeightFormat::Nf4;
    }
    // A stack that builds its own untied LM head holds a second vocabulary matrix (`Stack::unties_embeddings`).
    if job.stack.unties_embeddings() {
        job.arch.tied_embeddings = false;
    }
    // A stack with model code of its own has none of transformers' fused projections, Python activations or
    // materialized causal masks (`Stack::runs_own_model_code`; litgpt calls SDPA with `is_causal`).
    if job.stack.runs_own_model_code() {
        job.arch.fused = Default::default();
        job.arch.activation = Default::default();
        job.arch.causal_mask_always = false;
    }
    // torchtune's Gemma 2 attention computes its scores itself, soft-capped, masked and softmaxed in fp32
    // (`torchtune/models/gemma2/_attention.py` `Gemma2Attention.forward`: two `torch.matmul`s around
    // `F.softmax(output.float())`), never SDPA: eager attention whatever was asked. Gemma 2 is the family with
    // soft-capping (`Architecture::softcap`).
    if job.stack == super::stack::Stack::Torchtune && job.arch.softcap {
        job.attention = super::job::AttentionImpl::Eager;
    }
    // A model with learned absolute positions (GPT-2, GPT-BigCode, OPT) cannot look past its position table:
    // `wpe` has `n_positions` rows, so longer inputs fail unless the tokenizer truncates them to
    // `model_max_length`, which is what a run that finished did.
    let positions = job.arch.learned_positions;
    if positions > 0 {
        let inf = &mut job.inference;
        if job.seq_len > positions
            || (job.mode == Mode::Inference
                && inf.prompt_tokens.saturating_add(inf.new_tokens) > positions)
        {
            warnings.push(Warning::SeqBeyondPositions);
        }
        job.seq_len = job.seq_len.min(positions);
        inf.prompt_tokens = inf.prompt_tokens.min(positions);
        inf.new_tokens = inf.new_tokens.min(positions - inf.prompt_tokens);
    }
    // A checkpoint read from the Hub whose stored bytes do not fit the shape in its own format holds tensors
    // the shape does not describe: the shape's bytes are counted, and the user told.
    if let Some(c) = &job.checkpoint {
        if c.format == job.weights
            && job.arch.vision.is_none()
            && !super::weights::checkpoint_fits_shape(&job, c)
        {
            warnings.push(Warning::CheckpointDiffersFromShape);
        }
    }
    if job.micro_batch == 0 || job.seq_len == 0 || job.gpus == 0 {
        warnings.push(Warning::ZeroSize);
    }
    // A sample's image tokens are part of its sequence (`vision`: `seq_len` counts them, as LLaMA-Factory's
    // `cutoff_len` does). A sequence too short for them does not run as given (cutting into an image's tokens
    // leaves features without their placeholders), so it is lengthened to hold them.
    let image_tokens = super::vision::llm_image_tokens(&job)
        .ceil()
        .min(f64::from(super::limits::MAX_TOKENS)) as u32;
    let sequence = if job.is_training() {
        &mut job.seq_len
    } else {
        &mut job.inference.prompt_tokens
    };
    if *sequence < image_tokens {
        warnings.push(Warning::ImagesBeyondSequence);
        *sequence = image_tokens;
    }
    let sharded = matches!(
        job.parallelism,
        Parallelism::Zero1 | Parallelism::Zero2 | Parallelism::Zero3
    );
    if sharded && job.gpus <= 1 && job.offload == Offload::None {
        warnings.push(Warning::ShardingNeedsGpus);
    }
    if job.offload == Offload::ParamOptimizer && job.parallelism != Parallelism::Zero3 {
        warnings.push(Warning::ParamOffloadNeedsZero3);
    }
    if job.mode == Mode::Full && job.weights.is_quantized() {
        warnings.push(Warning::QuantizedFullTraining);
    }
    // Prompt tuning and P-tuning prepend their virtual tokens to every sequence (PEFT
    // `PeftModelForCausalLM.forward` concatenates the prompt embeddings before the input embeddings, and
    // pads the labels with -100): every activation and the logits cover s + n positions.
    if matches!(job.mode, Mode::Lora | Mode::Qlora)
        && matches!(
            job.lora.method,
            super::peft::Method::PromptTuning | super::peft::Method::PTuning
        )
    {
        job.seq_len = job.seq_len.saturating_add(job.lora.virtual_tokens);
    }
    // Paired preference objectives run chosen and rejected sequences in one batch (TRL
    // `concatenated_forward`); GRPO and PPO train on prompt + completion (`seq_len` is the prompt length).
    if job.is_training() {
        let pairs = job.objective.sequences_per_example();
        job.micro_batch = job.micro_batch.saturating_mul(pairs);
        if job.objective.generates() {
            job.seq_len = job.seq_len.saturating_add(job.grpo.completion_tokens);
        }
    }
    (job, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qlora_on_a_16_bit_base_is_estimated_as_nf4_and_says_so() {
        let job = Job {
            mode: Mode::Qlora,
            weights: WeightFormat::Bf16,
            ..Job::default()
        };
        let (n, w) = normalize(&job);
        assert_eq!(n.weights, WeightFormat::Nf4);
        assert!(w.contains(&Warning::QloraNeedsQuantizedBase));
        let (same, none) = normalize(&Job::default());
        assert_eq!((same, none), (Job::default(), vec![]));
    }

    /// MXFP4 trains dequantized: LoRA and full tuning on bf16 weights, QLoRA on NF4; inference keeps MXFP4.
    #[test]
    fn mxfp4_training_is_estimated_dequantized() {
        for (mode, trained_on) in [
            (Mode::Lora, WeightFormat::Bf16),
            (Mode::Full, WeightFormat::Bf16),
            (Mode::Qlora, WeightFormat::Nf4),
            (Mode::Inference, WeightFormat::Mxfp4),
        ] {
            let job = Job {
                mode,
                weights: WeightFormat::Mxfp4,
                ..Job::default()
            };
            assert_eq!(normalize(&job).0.weights, trained_on, "{mode:?}");
        }
        let (_, warnings) = normalize(&Job {
            mode: Mode::Full,
            weights: WeightFormat::Mxfp4,
            ..Job::default()
        });
        assert!(!warnings.contains(&Warning::QuantizedFullTraining));
        assert!(warnings.contains(&Warning::Mxfp4TrainsDequantized));
        let (_, served) = normalize(&Job {
            mode: Mode::Inference,
            weights: WeightFormat::Mxfp4,
            ..Job::default()
        });
        assert!(!served.contains(&Warning::Mxfp4TrainsDequantized));
    }
}
