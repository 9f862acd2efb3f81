//! Hybrid layer stacks: layers whose token mixer is recurrent (Mamba-1, Mamba-2, Gated DeltaNet) instead of,
//! or beside, attention. Such a layer keeps a fixed-size state per sequence (a short convolution window and
//! the SSM / delta-rule state) where an attention layer keeps a KV cache that grows with the context.
//!
//! The families and where each shape comes from (transformers 5.24 `models/<family>/modeling_<family>.py`):
//! - Qwen3-Next (`modeling_qwen3_next.py`): `layer_types` / `full_attention_interval` pick Gated DeltaNet
//!   (`Qwen3NextGatedDeltaNet`) or gated attention (`Qwen3NextAttention`, whose `q_proj` also emits the
//!   output gate); every layer has a sparse-MoE MLP.
//! - Nemotron-H (`modeling_nemotron_h.py`): `hybrid_override_pattern` makes each block one of Mamba-2 (`M`),
//!   attention (`*`), squared-ReLU MLP (`-`) or MoE (`E`), with one RMSNorm per block (`NemotronHBlock`).
//! - Granite-4.0-H (`modeling_granitemoehybrid.py`): `layer_types` pick Mamba-2 or attention; every layer has
//!   a shared gated MLP (`shared_mlp`) and, with `num_local_experts > 0`, a MoE beside it.
//! - Jamba (`modeling_jamba.py`): Mamba-1 (`JambaMambaMixer`) with attention every `attn_layer_period`-th
//!   layer from `attn_layer_offset`, MoE every `expert_layer_period`-th layer from `expert_layer_offset`.
//! - Falcon-H1 (`modeling_falcon_h1.py`): every layer runs attention and a Mamba-2 mixer in parallel on the
//!   same normed input (`FalconH1DecoderLayer`), then a gated MLP.
//!
//! A layer's parameters, its state per sequence and what it saves for backward are functions of
//! [`Hybrid`] here; `arch.rs`, `activations.rs`, `estimate.rs` and `serve.rs` weigh them by the layer
//! counts.

use super::activations::LayerBytes;
use serde::{Deserialize, Serialize};

/// The recurrent token mixer of a hybrid model's non-attention layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mixer {
    /// Mamba-2 / SSD (`Mamba2Mixer`: Nemotron-H, Granite-4.0-H, Falcon-H1).
    #[default]
    Mamba2,
    /// Gated DeltaNet (Qwen3-Next `Qwen3NextGatedDeltaNet`).
    GatedDeltaNet,
    /// Mamba-1 selective scan (`JambaMambaMixer`).
    Mamba1,
}

/// Which layers of the stack run what, and the recurrent mixer's shape.
///
/// The mixer's widths use Mamba-2's names; a Gated DeltaNet maps onto them exactly (value heads are the
/// heads, key heads the groups that share one key, the key head width the state): its convolution
/// `2·key_dim + value_dim` is Mamba-2's `inner + 2·groups·state` and its state `heads · head_k · head_v`
/// is Mamba-2's `heads · head_dim · state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Hybrid {
    /// The recurrent mixer.
    pub mixer: Mixer,
    /// Layers holding a (full) attention block: the layers that keep a KV cache.
    pub attention_layers: u32,
    /// Layers holding the recurrent mixer.
    pub recurrent_layers: u32,
    /// Layers holding an MLP or MoE block (the Architecture's `moe.dense_layers` of them keep a dense MLP).
    pub mlp_layers: u32,
    /// Mamba-2 `mamba_num_heads` / `mamba_n_heads`; Gated DeltaNet `linear_num_value_heads`; 0 for Mamba-1.
    pub heads: u32,
    /// Mamba-2 `mamba_head_dim` / `mamba_d_head`; Gated DeltaNet `linear_value_head_dim`.
    pub head_dim: u32,
    /// SSM state size `ssm_state_size` / `mamba_d_state`; Gated DeltaNet `linear_key_head_dim`.
    pub state: u32,
    /// Mamba-2 `n_groups` / `mamba_n_groups`; Gated DeltaNet `linear_num_key_heads`; 1 for Mamba-1.
    pub groups: u32,
    /// The mixer's inner width: Mamba-2 `heads·head_dim` (`mamba_expand·hidden` in Granite, `mamba_d_ssm` in
    /// Falcon-H1), Gated DeltaNet the value width, Mamba-1 `mamba_expand·hidden`.
    pub inner: u32,
    /// Depthwise convolution width `conv_kernel` / `mamba_d_conv` / `linear_conv_kernel_dim`.
    pub conv_kernel: u32,
    /// Mamba-1 `mamba_dt_rank` (0 otherwise).
    pub dt_rank: u32,
    /// Mamba-2 SSD chunk (`chunk_size` / `mamba_chunk_size`); Gated DeltaNet 64 (fla's chunk).
    pub chunk: u32,
    /// The convolution has a bias (`use_conv_bias` / `mamba_conv_bias`).
    pub conv_bias: bool,
    /// The in/out projections have biases (`use_bias` / `mamba_proj_bias` / Falcon-H1 `projectors_bias`).
    pub proj_bias: bool,
    /// Mamba-2's gated RMSNorm over the inner width (Nemotron-H, Granite; Falcon-H1 with `mamba_rms_norm`).
    pub gated_norm: bool,
    /// Qwen3-Next gated attention: `q_proj` emits `2·heads·head_dim` (queries and the output gate).
    pub gated_attention: bool,
    /// Serving keeps the SSM state in fp32 (see [`Hybrid::ssm_state_bytes`]).
    pub fp32_state: bool,
    /// The MoE's shared expert has a 1-wide sigmoid gate (`shared_expert_gate`, Qwen3-Next); Granite-4.0-H's
    /// shared MLP and Nemotron-H's shared expert have none.
    pub shared_expert_gate: bool,
}

/// Parameters of one recurrent mixer.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MixerParams {
    /// Weights of its `nn.Linear` layers (what quantizers quantize).
    pub linear: f64,
    /// Everything else: convolution, `A_log`, `D`, `dt_bias`, norms, biases.
    pub small: f64,
    /// Its largest linear layer.
    pub largest: f64,
}

impl Hybrid {
    fn f(x: u32) -> f64 {
        f64::from(x)
    }

    /// Channels of the depthwise causal convolution: Mamba-2 `intermediate_size + 2·n_groups·ssm_state_size`
    /// (`NemotronHMamba2Mixer.conv_dim`), Gated DeltaNet `2·key_dim + value_dim`
    /// (`Qwen3NextGatedDeltaNet.conv_dim`), Mamba-1 `intermediate_size` (`JambaMambaMixer.conv1d`).
    pub fn conv_dim(&self) -> f64 {
        match self.mixer {
            Mixer::Mamba1 => Self::f(self.inner),
            _ => Self::f(self.inner) + 2.0 * Self::f(self.groups) * Self::f(self.state),
        }
    }

    /// Output width of the input projection: Mamba-2 `intermediate_size + conv_dim + num_heads` (gate, x/B/C,
    /// dt: `NemotronHMamba2Mixer.in_proj`); Gated DeltaNet `in_proj_qkvz` (`2·key_dim + 2·value_dim`) plus
    /// `in_proj_ba` (`2·num_v_heads`); Mamba-1 `2·intermediate_size` (x and the gate z).
    pub fn in_proj_width(&self) -> f64 {
        let (inner, heads) = (Self::f(self.inner), Self::f(self.heads));
        let keys = Self::f(self.groups) * Self::f(self.state);
        match self.mixer {
            Mixer::Mamba2 => inner + self.conv_dim() + heads,
            Mixer::GatedDeltaNet => 2.0 * keys + 2.0 * inner + 2.0 * heads,
            Mixer::Mamba1 => 2.0 * inner,
        }
    }

    /// Parameters of one recurrent mixer on a residual width `h`, from the modules each `__init__` builds:
    /// - Mamba-2 (`NemotronHMamba2Mixer`, `GraniteMoeHybridMambaLayer`, `FalconH1Mixer`): `in_proj`
    ///   `h·in_proj_width` (+ bias), `conv1d` `conv_dim·k` (+ `conv_dim` bias), `dt_bias`, `A_log`, `D` (one
    ///   per head each), the gated RMSNorm weight (`inner`) when present, `out_proj` `inner·h` (+ `h`);
    /// - Gated DeltaNet (`Qwen3NextGatedDeltaNet`): `in_proj_qkvz` and `in_proj_ba` (`h·in_proj_width`),
    ///   `conv1d` `conv_dim·k` without bias, `dt_bias` and `A_log` (one per value head), the gated RMSNorm
    ///   over one head (`head_v_dim`), `out_proj` `value_dim·h`;
    /// - Mamba-1 (`JambaMambaMixer`): `in_proj` `h·2·inner`, `conv1d` `inner·k` (+ `inner`), `x_proj`
    ///   `inner·(dt_rank + 2·state)`, `dt_proj` `dt_rank·inner + inner`, `A_log` `inner·state`, `D` `inner`,
    ///   `out_proj` `inner·h`, and Jamba's `dt_layernorm`, `b_layernorm`, `c_layernorm`
    ///   (`dt_rank + 2·state`).
    pub fn mixer_params(&self, h: f64) -> MixerParams {
        let inner = Self::f(self.inner);
        let heads = Self::f(self.heads);
        let k = Self::f(self.conv_kernel);
        let n = Self::f(self.state);
        let conv = self.conv_dim();
        let width = self.in_proj_width();
        let bias = |on: bool, w: f64| if on { w } else { 0.0 };
        match self.mixer {
            Mixer::Mamba2 => MixerParams {
                linear: h * width + inner * h,
                small: bias(self.proj_bias, width + h)
                    + conv * k
                    + bias(self.conv_bias, conv)
                    + 3.0 * heads
                    + bias(self.gated_norm, inner),
                largest: (h * width).max(inner * h),
            },
            Mixer::GatedDeltaNet => {
                let keys = Self::f(self.groups) * n;
                let qkvz = h * (2.0 * keys + 2.0 * inner);
                MixerParams {
                    linear: h * width + inner * h,
                    small: conv * k + 2.0 * heads + Self::f(self.head_dim),
                    largest: qkvz.max(inner * h),
                }
            }
            Mixer::Mamba1 => {
                let r = Self::f(self.dt_rank);
                MixerParams {
                    linear: h * width + inner * (r + 2.0 * n) + r * inner + inner * h,
                    small: bias(self.proj_bias, width + h)
                        + conv * k
                        + bias(self.conv_bias, conv)
                        + inner
                        + inner * n
                        + inner
                        + r
                        + 2.0 * n,
                    largest: (h * width).max(inner * h),
                }
            }
        }
    }

    /// Elements of one layer's convolution state for one sequence: the last `k − 1` inputs of every
    /// channel, `(conv_kernel − 1) · conv_dim` (vLLM `MambaStateShapeCalculator.mamba2_state_shape`,
    /// `gated_delta_net_state_shape`, `mamba1_state_shape` in `vllm/model_executor/layers/mamba/mamba_utils.py`;
    /// transformers' cache holds the same window).
    pub fn conv_state_elements(&self) -> f64 {
        (Self::f(self.conv_kernel) - 1.0).max(0.0) * self.conv_dim()
    }

    /// Elements of one layer's recurrent state for one sequence: Mamba-2 `num_heads · head_dim · state_size`,
    /// Gated DeltaNet `num_v_heads · head_v_dim · head_k_dim`, Mamba-1 `intermediate_size · state_size`
    /// (the temporal shapes of the same vLLM functions).
    pub fn ssm_state_elements(&self) -> f64 {
        match self.mixer {
            Mixer::Mamba1 => Self::f(self.inner) * Self::f(self.state),
            _ => Self::f(self.heads) * Self::f(self.head_dim) * Self::f(self.state),
        }
    }

    /// Bytes per element of the recurrent state: vLLM keeps the conv state in the model dtype and the SSM
    /// state in `--mamba-ssm-cache-dtype`, `auto` meaning the model dtype
    /// (`MambaStateDtypeCalculator._mamba_state_dtype`, `mamba_utils.py`); for Nemotron-H it replaces `auto`
    /// with the config's `mamba_ssm_cache_dtype`, else `float32` (`NemotronHForCausalLMConfig`,
    /// `vllm/model_executor/models/config.py`: "only float32 is known to have no accuracy issues"), which is
    /// what [`Hybrid::fp32_state`] records.
    pub fn ssm_state_bytes(&self, model_bytes: f64) -> f64 {
        if self.fp32_state {
            4.0
        } else {
            model_bytes
        }
    }

    /// Bytes of one layer's whole state for one sequence: conv state in the model dtype plus the SSM state
    /// (vLLM `MambaSpec.page_size_bytes`: `Σ prod(shape) · dtype_size` over the two, `vllm/v1/kv_cache_interface.py`).
    pub fn state_bytes_per_sequence(&self, model_bytes: f64) -> f64 {
        self.conv_state_elements() * model_bytes
            + self.ssm_state_elements() * self.ssm_state_bytes(model_bytes)
    }

    /// Bytes of one layer's state for one sequence in transformers' cache (`LinearAttentionLayer` in
    /// `cache_utils.py`): the conv state keeps all `conv_kernel` columns (`torch.zeros((*shape[:-1],
    /// conv_kernel_size))`) in the model dtype, and the recurrent state is allocated `zeros_like` the first
    /// final state the mixer returns, which the SSD scan, the delta rule and the selective scan all produce in
    /// fp32 (`mamba2_chunk_scan` upcasts, `torch_chunk_gated_delta_rule` works in fp32; the kernels keep their
    /// states in fp32 too).
    pub fn hf_state_bytes_per_sequence(&self, model_bytes: f64) -> f64 {
        Self::f(self.conv_kernel) * self.conv_dim() * model_bytes + self.ssm_state_elements() * 4.0
    }

    /// One recurrent layer's state on one of `tp` GPUs: heads, groups and the convolution channels are split
    /// (vLLM shards them with `divide(…, tp_world_size)`; when `n_groups` does not divide, groups are
    /// replicated up to `tp`: `extra_groups_for_head_shards`).
    pub fn state_bytes_per_sequence_on(&self, model_bytes: f64, tp: u32) -> f64 {
        let tp = tp.max(1);
        if tp == 1 {
            return self.state_bytes_per_sequence(model_bytes);
        }
        let groups = match self.mixer {
            Mixer::Mamba2 if self.groups % tp != 0 => self.groups + tp - self.groups,
            _ => self.groups,
        };
        let widened = Hybrid { groups, ..*self };
        widened.state_bytes_per_sequence(model_bytes) / f64::from(tp)
    }

    /// Bytes per token one recurrent mixer keeps for backward, on the fused-kernel path a GPU run takes
    /// (`ab` the compute element size; `trained`: its own weights train, so its projections keep inputs).
    ///
    /// - Mamba-2, `mamba_ssm`'s `mamba_split_conv1d_scan_combined` (what the Nemotron-H, Granite and
    ///   Falcon-H1 mixers call in training when the kernels are installed; it fuses the convolution, the SSD
    ///   scan, the gated RMSNorm and `out_proj`): `MambaSplitConv1dScanCombinedFn.forward` saves `zxbcdt`,
    ///   the whole `in_proj` output (`ab · in_proj_width`), the scan output `out_x` (`ab · inner`) and the
    ///   norm's fp32 `rstd` (`4 · groups`); the convolution and the chunk states are recomputed in backward.
    ///   Beside it, `in_proj` keeps its input (`ab · h`) when it trains.
    /// - Gated DeltaNet, `fla`'s `chunk_gated_delta_rule` with `causal-conv1d` (the kernels transformers
    ///   loads for Qwen3-Next): `in_proj_qkvz`/`in_proj_ba` keep their input (`ab·h`, trained); the
    ///   convolution keeps its input (`ab · conv_dim`); `v` is a view of the convolution output, which stays
    ///   (`ab · conv_dim`); `ChunkGatedDeltaRuleFunction` saves the l2-normed `q`, `k` (`ab · 2·key_dim`) with
    ///   their fp32 `rstd` (`4 · 2·groups`), the fp32 cumulative gate (`4 · heads`), `beta` (`ab · heads`) and
    ///   the chunk-local UT matrix `A` (`ab · heads · 64`); the gate's softplus keeps its fp32 input and output
    ///   (`8 · heads`); the gated RMSNorm keeps its input and gate (`ab · 2·value_dim`) and `rstd`
    ///   (`4 · heads`); `out_proj` keeps its input (`ab · value_dim`, trained).
    /// - Mamba-1 (`JambaMambaMixer.cuda_kernels_forward`, `causal_conv1d_fn` and `selective_scan_fn`):
    ///   `in_proj` input (`ab·h`, trained), its output (`ab · 2·inner`: the convolution keeps the `x` half and
    ///   the scan the gate `z`, both views of it), the convolution output (`ab · inner`, kept by `x_proj` and
    ///   the scan), `x_proj`'s output and the three RMSNorms on `dt`, `B`, `C` (fp32 copies,
    ///   `(ab + 4) · (dt_rank + 2·state)`), `dt_proj`'s input and output (`ab · (dt_rank + inner)`), and the
    ///   scan's output and `out_proj`'s input (`ab · 2·inner`).
    ///
    /// The projection outputs are split over tensor-parallel ranks; the inputs are whole on each.
    pub fn saved_bytes_per_token(&self, h: f64, ab: f64, trained: bool) -> LayerBytes {
        let inner = Self::f(self.inner);
        let heads = Self::f(self.heads);
        let groups = Self::f(self.groups);
        let n = Self::f(self.state);
        let input = if trained { ab * h } else { 0.0 };
        match self.mixer {
            Mixer::Mamba2 => LayerBytes {
                replicated: input,
                split: ab * self.in_proj_width() + ab * inner + 4.0 * groups,
            },
            Mixer::GatedDeltaNet => {
                let keys = groups * n;
                let out_in = if trained { ab * inner } else { 0.0 };
                LayerBytes {
                    replicated: input,
                    split: 2.0 * ab * self.conv_dim()
                        + ab * 2.0 * keys
                        + 8.0 * groups
                        + 4.0 * heads
                        + ab * heads * (1.0 + 64.0)
                        + 8.0 * heads
                        + 2.0 * ab * inner
                        + 4.0 * heads
                        + out_in,
                }
            }
            Mixer::Mamba1 => {
                let r = Self::f(self.dt_rank);
                LayerBytes {
                    replicated: input,
                    split: ab * 2.0 * inner
                        + ab * inner
                        + (ab + 4.0) * (r + 2.0 * n)
                        + ab * (r + inner)
                        + ab * 2.0 * inner,
                }
            }
        }
    }

    /// Bytes per token of one recurrent mixer's backward working set beyond what it saved: the gradient of
    /// the projection output (`ab · in_proj_width`), the recomputed convolution output and its gradient
    /// (`2·ab · conv_dim`), the recomputed norm output for `out_proj`'s weight gradient (`ab · inner`), and
    /// for Mamba-2 the SSD scan's fp32 chunk states and their gradient, `2 · 4 · heads·head_dim·state / chunk`
    /// (`_mamba_chunk_scan_combined_bwd` materialises `states` of shape `(batch, chunks, heads, head_dim,
    /// state)`).
    pub fn backward_bytes_per_token(&self, ab: f64) -> f64 {
        let chunk_states = match self.mixer {
            Mixer::Mamba2 => 8.0 * self.ssm_state_elements() / Self::f(self.chunk.max(1)),
            _ => 0.0,
        };
        ab * self.in_proj_width()
            + 2.0 * ab * self.conv_dim()
            + ab * Self::f(self.inner)
            + chunk_states
    }

    /// Bytes per prompt token of one recurrent mixer's forward working set without autograd: the
    /// projection output (`ab · in_proj_width`), the convolution output (`ab · conv_dim`), the scan output
    /// (`ab · inner`) and the residual and normed input (`2·ab · h`); Mamba-2's SSD also holds its fp32
    /// chunk states (`4 · heads·head_dim·state / chunk`).
    pub fn prefill_bytes_per_token(&self, h: f64, ab: f64) -> f64 {
        let chunk_states = match self.mixer {
            Mixer::Mamba2 => 4.0 * self.ssm_state_elements() / Self::f(self.chunk.max(1)),
            _ => 0.0,
        };
        ab * (self.in_proj_width() + self.conv_dim() + Self::f(self.inner) + 2.0 * h) + chunk_states
    }

    /// The link form of the stack (`src/share.rs`, key `hy`): the mixer (`m2`, `gdn`, `m1`), then
    /// `attention/recurrent/mlp` layers, `heads/head_dim/state/groups/inner/conv_kernel/dt_rank/chunk`, and
    /// six 0/1 flags `conv_bias, proj_bias, gated_norm, gated_attention, fp32_state, shared_expert_gate`,
    /// `/`-separated.
    pub fn link_id(&self) -> String {
        let mixer = match self.mixer {
            Mixer::Mamba2 => "m2",
            Mixer::GatedDeltaNet => "gdn",
            Mixer::Mamba1 => "m1",
        };
        let flags: String = [
            self.conv_bias,
            self.proj_bias,
            self.gated_norm,
            self.gated_attention,
            self.fp32_state,
            self.shared_expert_gate,
        ]
        .iter()
        .map(|f| if *f { '1' } else { '0' })
        .collect();
        format!(
            "{mixer}/{}/{}/{}/{}/{}/{}/{}/{}/{}/{}/{}/{flags}",
            self.attention_layers,
            self.recurrent_layers,
            self.mlp_layers,
            self.heads,
            self.head_dim,
            self.state,
            self.groups,
            self.inner,
            self.conv_kernel,
            self.dt_rank,
            self.chunk
        )
    }

    /// Parses [`Hybrid::link_id`]; `None` when any part is malformed (sizes are checked with the shape).
    pub fn from_link_id(s: &str) -> Option<Hybrid> {
        let parts: Vec<&str> = s.split('/').collect();
        let [mixer, rest @ .., flags] = parts.as_slice() else {
            return None;
        };
        let mixer = match *mixer {
            "m2" => Mixer::Mamba2,
            "gdn" => Mixer::GatedDeltaNet,
            "m1" => Mixer::Mamba1,
            _ => return None,
        };
        let n: Vec<u32> = rest
            .iter()
            .map(|v| {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| *n <= super::limits::MAX_DIM)
            })
            .collect::<Option<_>>()?;
        let [attention_layers, recurrent_layers, mlp_layers, heads, head_dim, state, groups, inner, conv_kernel, dt_rank, chunk] =
            n.as_slice()
        else {
            return None;
        };
        let f: Vec<bool> = flags
            .chars()
            .map(|c| match c {
                '0' => Some(false),
                '1' => Some(true),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let [conv_bias, proj_bias, gated_norm, gated_attention, fp32_state, shared_expert_gate] =
            f.as_slice()
        else {
            return None;
        };
        Some(Hybrid {
            mixer,
            attention_layers: *attention_layers,
            recurrent_layers: *recurrent_layers,
            mlp_layers: *mlp_layers,
            heads: *heads,
            head_dim: *head_dim,
            state: *state,
            groups: *groups,
            inner: *inner,
            conv_kernel: *conv_kernel,
            dt_rank: *dt_rank,
            chunk: *chunk,
            conv_bias: *conv_bias,
            proj_bias: *proj_bias,
            gated_norm: *gated_norm,
            gated_attention: *gated_attention,
            fp32_state: *fp32_state,
            shared_expert_gate: *shared_expert_gate,
        })
    }

    /// Checks the shape; the error names the field.
    pub fn check(&self, layers: u32) -> Result<(), String> {
        use super::limits::{in_range, MAX_DIM};
        in_range("hybrid.attention_layers", self.attention_layers, 0, layers)?;
        in_range("hybrid.recurrent_layers", self.recurrent_layers, 0, layers)?;
        in_range("hybrid.mlp_layers", self.mlp_layers, 0, layers)?;
        let recurrent = self.recurrent_layers > 0;
        let lo = u32::from(recurrent);
        in_range("hybrid.inner", self.inner, lo, MAX_DIM)?;
        in_range("hybrid.state", self.state, lo, MAX_DIM)?;
        in_range("hybrid.conv_kernel", self.conv_kernel, lo, 1 << 12)?;
        in_range("hybrid.groups", self.groups, lo, MAX_DIM)?;
        in_range("hybrid.head_dim", self.head_dim, 0, MAX_DIM)?;
        in_range("hybrid.dt_rank", self.dt_rank, 0, MAX_DIM)?;
        in_range("hybrid.chunk", self.chunk, 0, MAX_DIM)?;
        let heads_lo = u32::from(recurrent && self.mixer != Mixer::Mamba1);
        in_range("hybrid.heads", self.heads, heads_lo, MAX_DIM)?;
        if self.attention_layers + self.recurrent_layers + self.mlp_layers == 0 {
            return Err(
                "hybrid.attention_layers: a hybrid stack needs at least one layer kind".into(),
            );
        }
        Ok(())
    }
}

/// Shares of the layers that hold attention, an MLP and the recurrent mixer: `(1, 1, 0)` for a plain
/// transformer, `(attention_layers, mlp_layers, recurrent_layers) / layers` for a hybrid.
pub fn layer_shares(arch: &super::Architecture) -> (f64, f64, f64) {
    match arch.stack() {
        None => (1.0, 1.0, 0.0),
        Some(hy) => {
            let l = f64::from(arch.layers.max(1));
            (
                f64::from(hy.attention_layers.min(arch.layers)) / l,
                f64::from(hy.mlp_layers.min(arch.layers)) / l,
                f64::from(hy.recurrent_layers.min(arch.layers)) / l,
            )
        }
    }
}

/// One layer's bytes per token, by block: what every layer has (norms, residual) and what its attention, MLP
/// and recurrent mixer keep when it has them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LayerKinds {
    pub common: LayerBytes,
    pub attention: LayerBytes,
    pub mlp: LayerBytes,
    pub recurrent: LayerBytes,
}

fn scaled(b: LayerBytes, s: f64) -> LayerBytes {
    LayerBytes {
        replicated: b.replicated * s,
        split: b.split * s,
    }
}

fn sum(a: LayerBytes, b: LayerBytes) -> LayerBytes {
    LayerBytes {
        replicated: a.replicated + b.replicated,
        split: a.split + b.split,
    }
}

fn larger(a: LayerBytes, b: LayerBytes) -> LayerBytes {
    if a.per_rank(1.0) >= b.per_rank(1.0) {
        a
    } else {
        b
    }
}

impl LayerKinds {
    /// The average over the stack's layers: each block weighted by the share of layers holding it.
    pub fn average(&self, arch: &super::Architecture) -> LayerBytes {
        let (a, m, r) = layer_shares(arch);
        [
            self.common,
            scaled(self.attention, a),
            scaled(self.mlp, m),
            scaled(self.recurrent, r),
        ]
        .into_iter()
        .fold(LayerBytes::default(), sum)
    }

    /// The largest single layer (what a recomputed layer holds under checkpointing). Layers hold both
    /// mixers when the attention and recurrent shares add past one (Falcon-H1), else one or the other; an MLP
    /// sits beside the mixer when the three shares add past one (Qwen3-Next, Jamba, Granite), else it is a
    /// block of its own (Nemotron-H).
    pub fn largest(&self, arch: &super::Architecture) -> LayerBytes {
        let (a, m, r) = layer_shares(arch);
        let eps = 1e-9;
        let pick = |b: LayerBytes, share: f64| {
            if share > 0.0 {
                b
            } else {
                LayerBytes::default()
            }
        };
        let (att, mlp, rec) = (
            pick(self.attention, a),
            pick(self.mlp, m),
            pick(self.recurrent, r),
        );
        let mixer = if a + r > 1.0 + eps {
            sum(att, rec)
        } else {
            larger(att, rec)
        };
        let body = if a + r + m > 1.0 + eps {
            sum(mixer, mlp)
        } else {
            larger(mixer, mlp)
        };
        sum(self.common, body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Qwen3-Next-80B-A3B's Gated DeltaNet (16 key heads, 32 value heads, 128 wide, kernel 4).
    fn gdn() -> Hybrid {
        Hybrid {
            mixer: Mixer::GatedDeltaNet,
            attention_layers: 12,
            recurrent_layers: 36,
            mlp_layers: 48,
            heads: 32,
            head_dim: 128,
            state: 128,
            groups: 16,
            inner: 4096,
            conv_kernel: 4,
            chunk: 64,
            ..Hybrid::default()
        }
    }

    #[test]
    fn gated_deltanet_shapes_by_hand() {
        let g = gdn();
        // conv_dim = 2·16·128 + 32·128 = 8192 (`Conv1d(8192, 8192, kernel_size=4)` in the printed model).
        assert_eq!(g.conv_dim(), 8192.0);
        // in_proj_qkvz 12288 wide + in_proj_ba 64.
        assert_eq!(g.in_proj_width(), 12288.0 + 64.0);
        // 2048·12352 + 4096·2048 linear; conv 32768 + dt/A 64 + norm 128 small: 33,718,464 in all, the
        // per-layer count of the GDN block in Qwen3-Next's printed model (its 1-layer dump: 1,648,531,648 =
        // this + the MoE block 1,614,809,088 + two norms 4096).
        let p = g.mixer_params(2048.0);
        assert_eq!(p.linear + p.small, 33_718_464.0);
        // State per sequence: conv 3·8192 bf16 = 48 KiB, recurrent 32·128·128 bf16 = 1 MiB.
        assert_eq!(
            g.state_bytes_per_sequence(2.0),
            3.0 * 8192.0 * 2.0 + 524_288.0 * 2.0
        );
    }

    #[test]
    fn mamba2_shapes_by_hand() {
        // Nemotron-H-8B: 128 heads × 64, 8 groups, state 128, kernel 4, conv bias, gated norm.
        let m = Hybrid {
            attention_layers: 4,
            recurrent_layers: 24,
            mlp_layers: 24,
            heads: 128,
            head_dim: 64,
            state: 128,
            groups: 8,
            inner: 8192,
            conv_kernel: 4,
            chunk: 128,
            conv_bias: true,
            gated_norm: true,
            fp32_state: true,
            ..Hybrid::default()
        };
        // conv_dim 8192 + 2·8·128 = 10240; in_proj 8192 + 10240 + 128 = 18560.
        assert_eq!((m.conv_dim(), m.in_proj_width()), (10240.0, 18560.0));
        let p = m.mixer_params(4096.0);
        assert_eq!(p.linear, 4096.0 * 18560.0 + 8192.0 * 4096.0);
        assert_eq!(p.small, 10240.0 * 4.0 + 10240.0 + 3.0 * 128.0 + 8192.0);
        // State: 3·10240 bf16 + 128·64·128 fp32 = 61,440 + 4,194,304 bytes.
        assert_eq!(m.state_bytes_per_sequence(2.0), 61_440.0 + 4_194_304.0);
        // TP 2 halves it; TP 16 replicates the 8 groups up to 16.
        assert_eq!(
            m.state_bytes_per_sequence_on(2.0, 2),
            m.state_bytes_per_sequence(2.0) / 2.0
        );
        assert!(m.state_bytes_per_sequence_on(2.0, 16) > m.state_bytes_per_sequence(2.0) / 16.0);
    }

    #[test]
    fn mamba1_shapes_by_hand() {
        // Jamba: inner 8192, state 16, dt rank 256, kernel 4.
        let j = Hybrid {
            mixer: Mixer::Mamba1,
            attention_layers: 4,
            recurrent_layers: 28,
            mlp_layers: 32,
            groups: 1,
            inner: 8192,
            state: 16,
            dt_rank: 256,
            conv_kernel: 4,
            conv_bias: true,
            ..Hybrid::default()
        };
        let p = j.mixer_params(4096.0);
        // in_proj 4096·16384 = 67,108,864 + x_proj 8192·288 = 2,359,296 + dt_proj 256·8192 = 2,097,152 +
        // out_proj 8192·4096 = 33,554,432 linear; conv 32,768 + its bias 8192 + dt bias 8192 + A 131,072 +
        // D 8192 + norms 288 small: 105,308,448, a Jamba-v0.1 Mamba layer as transformers builds it
        // (its 28 Mamba layers hold 2,948,636,544).
        assert_eq!(p.linear + p.small, 105_308_448.0);
        // State: conv 3·8192, ssm 8192·16.
        assert_eq!(j.conv_state_elements(), 24_576.0);
        assert_eq!(j.ssm_state_elements(), 131_072.0);
    }
}
