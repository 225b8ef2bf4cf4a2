//! ragbox's own BERT encoder on candle-core's safetensors loading and the
//! `ragbox-kernels` crate.
//!
//! The batch is never padded: the sequences' tokens lie end to end, the
//! matmuls run over all of them at once, and attention runs per (sequence,
//! head) over that sequence's own tokens only, so no mask is needed.
//! Q, K and V are one matmul; the attention scale is folded into Q's weights;
//! bias + GELU and residual + LayerNorm are single passes; every weight is
//! packed once, here, at load.

use super::EmbedError;
use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device};
use ragbox_kernels::attention::{self, Head, PairedHead};
use ragbox_kernels::buf::Buf;
use ragbox_kernels::gemm::{self, Epilogue, Packed};
use ragbox_kernels::rows::{self, Activation};
use ragbox_kernels::scratch::{self, Taken};
use ragbox_kernels::{Isa, bf16, int8};
use rayon::prelude::*;
use serde::Deserialize;
use std::path::Path;

/// The fields of a Hugging Face `config.json` this encoder uses.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    /// Width of every token vector.
    pub hidden_size: usize,
    /// Attention heads per layer.
    pub num_attention_heads: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Position embeddings: the longest sequence.
    pub max_position_embeddings: usize,
    /// The feed-forward activation.
    #[serde(default = "default_act")]
    pub hidden_act: String,
    /// LayerNorm's epsilon.
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    /// `bert` (or absent) is the only family this encoder computes correctly.
    #[serde(default)]
    pub model_type: Option<String>,
    /// Only `absolute` position embeddings are supported.
    #[serde(default)]
    pub position_embedding_type: Option<String>,
}

fn default_act() -> String {
    "gelu".into()
}

fn default_eps() -> f64 {
    1e-12
}

/// The feed-forward activation `config` names.
fn activation(config: &BertConfig) -> Result<Activation, String> {
    match config.hidden_act.as_str() {
        "gelu" => Ok(Activation::Gelu),
        "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Activation::GeluTanh),
        "relu" => Ok(Activation::Relu),
        other => Err(format!("hidden_act `{other}` is not supported (gelu, gelu_new, relu)")),
    }
}

/// LayerNorm's scale and shift.
struct Norm {
    gamma: Buf<f32>,
    beta: Buf<f32>,
}

/// A linear layer's weight, packed for the path's product: f32, or bfloat16
/// where the CPU multiplies it natively (attention's own products too: `ragbox_kernels::attention`).
enum Weight {
    F32(Packed),
    Bf16(bf16::Packed),
    Int8(int8::Packed),
}

impl Weight {
    /// Packs `w` (`[out, in]`, as a linear layer stores it) for `isa`.
    fn new(isa: Isa, w: &[f32], out: usize, inp: usize) -> Self {
        if isa.has_bf16() {
            Self::Bf16(bf16::Packed::transposed(w, out, inp, inp))
        } else {
            Self::F32(Packed::transposed(w, out, inp, inp))
        }
    }

    /// A product in 8-bit integers, its input channels smoothed by `range`:
    /// how far each reached when the f32 encoder read the calibration text.
    fn int8(w: &[f32], out: usize, inp: usize, range: &[f32]) -> Self {
        Self::Int8(int8::Packed::smoothed(w, out, inp, inp, range))
    }

    /// Output width.
    fn n(&self) -> usize {
        match self {
            Self::F32(p) => p.n(),
            Self::Bf16(p) => p.n(),
            Self::Int8(p) => p.n(),
        }
    }

    /// `c = a · w` (+ epilogue), over the pool.
    fn apply(&self, isa: Isa, a: &[f32], lda: usize, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
        match self {
            Self::F32(p) => gemm::gemm(isa, a, lda, p, c, ldc, epilogue),
            Self::Bf16(p) => bf16::gemm(isa, a, lda, p, c, ldc, epilogue),
            Self::Int8(p) => int8::gemm(isa, a, lda, p, c, ldc, epilogue),
        }
    }
}

/// One encoder layer, its matrices packed for the path's products.
struct Layer {
    qkv: Weight,
    qkv_bias: Buf<f32>,
    attn_out: Weight,
    attn_out_bias: Buf<f32>,
    attn_norm: Norm,
    ffn_in: Weight,
    ffn_in_bias: Buf<f32>,
    ffn_out: Weight,
    ffn_out_bias: Buf<f32>,
    ffn_norm: Norm,
}

/// How far each input channel of a layer's int8 products reaches (the largest |value|).
#[derive(Clone)]
struct Ranges {
    /// Attention's input product's (the layer's input).
    qkv: Vec<f32>,
    /// The first feed-forward product's (attention's output, normalised).
    ffn_in: Vec<f32>,
}

/// Attention's input product's output: rows of Q, K and V side by side.
#[derive(Clone, Copy)]
enum Qkv<'a> {
    /// As f32 values.
    Values(&'a [f32]),
    /// As bf16 pairs (the hidden width and a head's are even).
    Pairs(&'a [u32]),
}

/// `range[c]` raised to every `|row[c]|` of the rows in `x`.
fn widen(range: &mut [f32], x: &[f32]) {
    for row in x.chunks_exact(range.len()) {
        range.iter_mut().zip(row).for_each(|(m, v)| *m = m.max(v.abs()));
    }
}

/// A loaded BERT encoder.
pub struct Bert {
    isa: Isa,
    hidden: usize,
    heads: usize,
    vocab: usize,
    max_positions: usize,
    eps: f32,
    activation: Activation,
    words: Buf<f32>,
    positions: Buf<f32>,
    /// Token type 0's vector: sentence embedders see one segment.
    token_type: Buf<f32>,
    embed_norm: Norm,
    layers: Vec<Layer>,
}

/// One array of a loaded encoder, as [`Bert::arrays`] lists them.
pub enum Array<'a> {
    /// f32 values.
    F32(&'a Buf<f32>),
    /// Packed bf16 pairs.
    U32(&'a Buf<u32>),
}

/// Where [`Bert::from_arrays`] finds the arrays [`Bert::arrays`] listed.
pub trait Arrays {
    /// The f32 array `name`; `None` when it is absent or not f32.
    fn f32(&self, name: &str) -> Option<Buf<f32>>;
    /// The u32 array `name`; `None` when it is absent or not u32.
    fn u32(&self, name: &str) -> Option<Buf<u32>>;
}

/// Reads named tensors from a safetensors file as f32, checking their shapes.
struct Weights<'a> {
    file: MmapedSafetensors,
    path: &'a Path,
    /// `""` or `"bert."`, whichever the file uses.
    prefix: &'static str,
}

impl Weights<'_> {
    fn bad(&self, message: String) -> EmbedError {
        EmbedError::BadFile { file: self.path.display().to_string(), message }
    }

    fn has(&self, name: &str) -> bool {
        self.file.get(&format!("{}{name}", self.prefix)).is_ok()
    }

    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let tensor = self.file.load(&full, &Device::Cpu).map_err(|e| self.bad(format!("{full}: {e}")))?;
        if tensor.dims() != shape {
            return Err(self.bad(format!("{full} has shape {:?} where the config says {shape:?}", tensor.dims())));
        }
        let values = tensor.to_dtype(DType::F32).and_then(|t| t.flatten_all()).and_then(|t| t.to_vec1::<f32>());
        values.map_err(|e| self.bad(format!("{full}: {e}")))
    }

    /// A LayerNorm's parameters, under either naming (`weight`/`bias` or `gamma`/`beta`).
    fn norm(&self, name: &str, width: usize) -> Result<Norm, EmbedError> {
        let (g, b) = if self.has(&format!("{name}.weight")) { ("weight", "bias") } else { ("gamma", "beta") };
        Ok(Norm {
            gamma: self.get(&format!("{name}.{g}"), &[width])?.into(),
            beta: self.get(&format!("{name}.{b}"), &[width])?.into(),
        })
    }
}

impl Bert {
    /// How many token ids its embedding table has.
    pub(super) fn vocab(&self) -> usize {
        self.vocab
    }

    /// Loads and packs the weights in `path` (safetensors) for `config`, to run
    /// on `isa`. Where `isa` has int8 products (attention's input product and
    /// the first feed-forward one), the encoder first runs in f32 over
    /// `calibration` (token ids, special ones included), and each product's
    /// input channels are smoothed by how far they reached there. (Estimated
    /// from the LayerNorms' gains and shifts instead, as the first feed-forward
    /// product's once were, the later layers' wide channels were missed:
    /// attention's input product in int8 took SciFact's titles to 0.9983
    /// cosine to f32; calibrated, 0.9994.)
    pub fn load(path: &Path, config: &BertConfig, isa: Isa, calibration: &[Vec<u32>]) -> Result<Self, EmbedError> {
        if !isa.has_int8() {
            return Self::pack(path, config, isa, None);
        }
        if calibration.is_empty() {
            return Err(EmbedError::Input(
                "no calibration text fits the model's positions for its int8 products".into(),
            ));
        }
        // Every CPU with int8 products has AVX2 + FMA: the f32 path.
        let reference = Self::pack(path, config, Isa::Avx2Fma, None)?;
        let ranges = reference.input_ranges(calibration)?;
        drop(reference);
        Self::pack(path, config, isa, Some(&ranges))
    }

    /// How far each input channel of every layer's int8 products reaches over `seqs`.
    fn input_ranges(&self, seqs: &[Vec<u32>]) -> Result<Vec<Ranges>, EmbedError> {
        let seqs: Vec<&[u32]> = seqs.iter().map(Vec::as_slice).collect();
        let mut ranges =
            vec![Ranges { qkv: vec![0.0; self.hidden], ffn_in: vec![0.0; self.hidden] }; self.layers.len()];
        self.run(&seqs, Some(&mut ranges))?;
        Ok(ranges)
    }

    /// [`Self::load`] with the int8 products' ranges (`None`: no int8 product).
    fn pack(path: &Path, config: &BertConfig, isa: Isa, ranges: Option<&[Ranges]>) -> Result<Self, EmbedError> {
        let bad_config = |message: String| EmbedError::BadFile { file: "config.json".into(), message };
        if let Some(family) = config.model_type.as_deref().filter(|t| *t != "bert") {
            return Err(bad_config(format!(
                "model_type `{family}` is not supported: ragbox computes BERT encoders (model_type `bert`)"
            )));
        }
        if let Some(kind) = config.position_embedding_type.as_deref().filter(|t| *t != "absolute") {
            return Err(bad_config(format!("position_embedding_type `{kind}` is not supported, only `absolute`")));
        }
        let activation = activation(config).map_err(bad_config)?;
        let (h, heads, ffn) = (config.hidden_size, config.num_attention_heads, config.intermediate_size);
        if heads == 0 || h == 0 || h % heads != 0 {
            return Err(bad_config(format!("hidden_size {h} is not a multiple of num_attention_heads {heads}")));
        }
        // SAFETY: the file is mapped read-only and ragbox never writes a model
        // file while it is loaded; everything is copied out before this returns.
        let file = unsafe { MmapedSafetensors::new(path) }
            .map_err(|e| EmbedError::BadFile { file: path.display().to_string(), message: e.to_string() })?;
        let mut w = Weights { file, path, prefix: "" };
        if !w.has("embeddings.word_embeddings.weight") {
            w.prefix = "bert.";
        }
        let word_shape = w
            .file
            .get(&format!("{}embeddings.word_embeddings.weight", w.prefix))
            .map(|t| t.shape().to_vec())
            .map_err(|_| w.bad("no embeddings.word_embeddings.weight: not a BERT model".into()))?;
        let vocab = word_shape.first().copied().unwrap_or(0);
        let words = w.get("embeddings.word_embeddings.weight", &[vocab, h])?;
        let positions = w.get("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?;
        let types = w.file.get(&format!("{}embeddings.token_type_embeddings.weight", w.prefix));
        let token_type = match types {
            Ok(t) => {
                let rows = t.shape().first().copied().unwrap_or(0);
                let all = w.get("embeddings.token_type_embeddings.weight", &[rows, h])?;
                all.get(..h).map(<[f32]>::to_vec).ok_or_else(|| w.bad("token_type_embeddings is empty".into()))?
            }
            Err(_) => vec![0.0; h],
        };
        let embed_norm = w.norm("embeddings.LayerNorm", h)?;
        let scale = 1.0 / ((h / heads) as f32).sqrt();
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let at = |name: &str| format!("encoder.layer.{i}.{name}");
            // Q, K and V stacked as one [3h, h] weight; Q scaled so that scores need no pass of their own.
            let mut qkv = Vec::with_capacity(3 * h * h);
            let mut qkv_bias = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                let mut weight = w.get(&at(&format!("attention.self.{part}.weight")), &[h, h])?;
                let mut bias = w.get(&at(&format!("attention.self.{part}.bias")), &[h])?;
                if part == "query" {
                    weight.iter_mut().chain(bias.iter_mut()).for_each(|v| *v *= scale);
                }
                qkv.extend(weight);
                qkv_bias.extend(bias);
            }
            let linear = |name: &str, out: usize, inp: usize| -> Result<(Vec<f32>, Buf<f32>), EmbedError> {
                let weight = w.get(&at(&format!("{name}.weight")), &[out, inp])?;
                Ok((weight, w.get(&at(&format!("{name}.bias")), &[out])?.into()))
            };
            let (attn_out, attn_out_bias) = linear("attention.output.dense", h, h)?;
            let attn_out = Weight::new(isa, &attn_out, h, h);
            let attn_norm = w.norm(&at("attention.output.LayerNorm"), h)?;
            let (ffn_in, ffn_in_bias) = linear("intermediate.dense", ffn, h)?;
            let ffn_in = match ranges {
                Some(r) => Weight::int8(&ffn_in, ffn, h, &r[i].ffn_in),
                None => Weight::new(isa, &ffn_in, ffn, h),
            };
            let (ffn_out, ffn_out_bias) = linear("output.dense", h, ffn)?;
            let ffn_out = Weight::new(isa, &ffn_out, h, ffn);
            let qkv = match ranges {
                Some(r) => Weight::int8(&qkv, 3 * h, h, &r[i].qkv),
                None => Weight::new(isa, &qkv, 3 * h, h),
            };
            layers.push(Layer {
                qkv,
                qkv_bias: qkv_bias.into(),
                attn_out,
                attn_out_bias,
                attn_norm,
                ffn_in,
                ffn_in_bias,
                ffn_out,
                ffn_out_bias,
                ffn_norm: w.norm(&at("output.LayerNorm"), h)?,
            });
        }
        Ok(Self {
            isa,
            hidden: h,
            heads,
            vocab,
            max_positions: config.max_position_embeddings,
            eps: config.layer_norm_eps as f32,
            activation,
            words: words.into(),
            positions: positions.into(),
            token_type: token_type.into(),
            embed_norm,
            layers,
        })
    }

    /// Every array the encoder reads, named, in a fixed order: what a packed
    /// model file keeps so that [`Self::from_arrays`] can map it back.
    pub fn arrays(&self) -> Vec<(String, Array<'_>)> {
        let mut out = vec![
            ("words".to_string(), Array::F32(&self.words)),
            ("positions".into(), Array::F32(&self.positions)),
            ("token_type".into(), Array::F32(&self.token_type)),
            ("embed_norm.gamma".into(), Array::F32(&self.embed_norm.gamma)),
            ("embed_norm.beta".into(), Array::F32(&self.embed_norm.beta)),
        ];
        /// A weight's arrays: its packed values, and an int8 packing's column
        /// scales and sums and its smoothing of the input's channels.
        fn weight<'a>(name: String, w: &'a Weight) -> Vec<(String, Array<'a>)> {
            match w {
                Weight::F32(p) => vec![(name, Array::F32(p.data()))],
                Weight::Bf16(p) => vec![(name, Array::U32(p.data()))],
                Weight::Int8(p) => {
                    let (data, columns, smooth) = p.data();
                    let mut arrays = vec![(format!("{name}.columns"), Array::F32(columns))];
                    arrays.extend(smooth.map(|s| (format!("{name}.smooth"), Array::F32(s))));
                    arrays.push((name, Array::U32(data)));
                    arrays
                }
            }
        }
        for (i, l) in self.layers.iter().enumerate() {
            let at = |name: &str| format!("layer.{i}.{name}");
            out.extend(weight(at("qkv"), &l.qkv));
            out.push((at("qkv_bias"), Array::F32(&l.qkv_bias)));
            out.extend(weight(at("attn_out"), &l.attn_out));
            out.push((at("attn_out_bias"), Array::F32(&l.attn_out_bias)));
            out.push((at("attn_norm.gamma"), Array::F32(&l.attn_norm.gamma)));
            out.push((at("attn_norm.beta"), Array::F32(&l.attn_norm.beta)));
            out.extend(weight(at("ffn_in"), &l.ffn_in));
            out.push((at("ffn_in_bias"), Array::F32(&l.ffn_in_bias)));
            out.extend(weight(at("ffn_out"), &l.ffn_out));
            out.push((at("ffn_out_bias"), Array::F32(&l.ffn_out_bias)));
            out.push((at("ffn_norm.gamma"), Array::F32(&l.ffn_norm.gamma)));
            out.push((at("ffn_norm.beta"), Array::F32(&l.ffn_norm.beta)));
        }
        out
    }

    /// The encoder [`Self::arrays`] listed, its arrays taken from `arrays`
    /// (a mapped file: nothing is copied), for `config` on `isa`.
    pub fn from_arrays(arrays: &dyn Arrays, config: &BertConfig, isa: Isa) -> Result<Self, String> {
        let (h, heads, ffn) = (config.hidden_size, config.num_attention_heads, config.intermediate_size);
        let activation = activation(config)?;
        if heads == 0 || h == 0 || h % heads != 0 {
            return Err(format!("hidden_size {h} is not a multiple of num_attention_heads {heads}"));
        }
        let f32s = |name: &str, len: usize| {
            arrays.f32(name).filter(|b| b.len() == len).ok_or_else(|| format!("no f32 array {name} of {len} values"))
        };
        let norm = |name: &str| {
            Ok::<_, String>(Norm { gamma: f32s(&format!("{name}.gamma"), h)?, beta: f32s(&format!("{name}.beta"), h)? })
        };
        let weight = |name: &str, inp: usize, out: usize| -> Result<Weight, String> {
            let packed = if isa.has_bf16() {
                arrays.u32(name).and_then(|d| bf16::Packed::from_data(inp, out, d)).map(Weight::Bf16)
            } else {
                arrays.f32(name).and_then(|d| Packed::from_data(inp, out, d)).map(Weight::F32)
            };
            packed.ok_or_else(|| format!("no packed {name} of {inp} × {out}"))
        };
        // Attention's input product and the first feed-forward one: int8 where the path has it.
        let int8_or = |name: &str, inp: usize, out: usize| -> Result<Weight, String> {
            if !isa.has_int8() {
                return weight(name, inp, out);
            }
            let columns = arrays.f32(&format!("{name}.columns"));
            let smooth = arrays.f32(&format!("{name}.smooth"));
            let packed =
                arrays.u32(name).zip(columns).and_then(|(d, c)| int8::Packed::from_data(inp, out, d, c, smooth));
            packed.map(Weight::Int8).ok_or_else(|| format!("no int8 {name} of {inp} × {out}"))
        };
        let words = arrays.f32("words").filter(|w| !w.is_empty() && w.len() % h == 0).ok_or("no word table")?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for i in 0..config.num_hidden_layers {
            let at = |name: &str| format!("layer.{i}.{name}");
            layers.push(Layer {
                qkv: int8_or(&at("qkv"), h, 3 * h)?,
                qkv_bias: f32s(&at("qkv_bias"), 3 * h)?,
                attn_out: weight(&at("attn_out"), h, h)?,
                attn_out_bias: f32s(&at("attn_out_bias"), h)?,
                attn_norm: norm(&at("attn_norm"))?,
                ffn_in: int8_or(&at("ffn_in"), h, ffn)?,
                ffn_in_bias: f32s(&at("ffn_in_bias"), ffn)?,
                ffn_out: weight(&at("ffn_out"), ffn, h)?,
                ffn_out_bias: f32s(&at("ffn_out_bias"), h)?,
                ffn_norm: norm(&at("ffn_norm"))?,
            });
        }
        Ok(Self {
            isa,
            hidden: h,
            heads,
            vocab: words.len() / h,
            max_positions: config.max_position_embeddings,
            eps: config.layer_norm_eps as f32,
            activation,
            words,
            positions: f32s("positions", config.max_position_embeddings * h)?,
            token_type: f32s("token_type", h)?,
            embed_norm: norm("embed_norm")?,
            layers,
        })
    }

    /// Whether the arrays are borrowed from a shared mapping.
    pub fn is_mapped(&self) -> bool {
        self.words.is_mapped()
    }

    /// The kernel path in use.
    pub fn isa(&self) -> Isa {
        self.isa
    }

    /// The longest sequence the position embeddings cover.
    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// Width of the token vectors [`Self::forward`] returns.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The last layer's token vectors for `seqs`, end to end (`Σ len × hidden`).
    pub fn forward(&self, seqs: &[&[u32]]) -> Result<Taken<f32>, EmbedError> {
        self.run(seqs, None)
    }

    /// [`Self::forward`], widening `ranges` (one per layer) by the int8 products' inputs on the way.
    fn run(&self, seqs: &[&[u32]], mut ranges: Option<&mut [Ranges]>) -> Result<Taken<f32>, EmbedError> {
        let h = self.hidden;
        let mut spans = Vec::with_capacity(seqs.len());
        let mut total = 0;
        for ids in seqs {
            if ids.len() > self.max_positions {
                return Err(EmbedError::Input(format!(
                    "a sequence of {} tokens is over the model's {} positions",
                    ids.len(),
                    self.max_positions
                )));
            }
            if let Some(id) = ids.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(EmbedError::Input(format!(
                    "token id {id} is past the model's vocabulary of {}: the tokenizer does not match the weights",
                    self.vocab
                )));
            }
            spans.push((total, ids.len()));
            total += ids.len();
        }
        // Buffers kept from the pass before: each is written whole before it is read.
        let mut x = scratch::F32.take(total * h);
        for (ids, &(start, len)) in seqs.iter().zip(&spans) {
            let rows = &mut x[start * h..][..len * h];
            for (row, &id) in rows.chunks_exact_mut(h).zip(ids.iter()) {
                let word = &self.words[id as usize * h..][..h];
                row.iter_mut().zip(word).zip(self.token_type.iter()).for_each(|((r, w), t)| *r = w + t);
            }
            // Positions 0..len are the table's first rows: the residual of the first norm.
            let norm = &self.embed_norm;
            rows::add_layer_norm(self.isa, rows, &self.positions[..len * h], &norm.gamma, &norm.beta, self.eps);
        }
        let mut ctx = scratch::F32.take(total * h);
        let mut tmp = scratch::F32.take(total * h);
        for (i, layer) in self.layers.iter().enumerate() {
            if let Some(r) = ranges.as_deref_mut() {
                widen(&mut r[i].qkv, &x);
            }
            self.self_attention(layer, &x, &spans, &mut ctx);
            layer.attn_out.apply(self.isa, &ctx, h, &mut tmp, h, Epilogue::Bias(&layer.attn_out_bias));
            self.add_norm(&mut tmp, &x, &layer.attn_norm);
            std::mem::swap(&mut x, &mut tmp);
            if let Some(r) = ranges.as_deref_mut() {
                widen(&mut r[i].ffn_in, &x);
            }
            self.feed_forward(layer, &x, &mut tmp);
            self.add_norm(&mut tmp, &x, &layer.ffn_norm);
            std::mem::swap(&mut x, &mut tmp);
        }
        Ok(x)
    }

    /// `out` = the layer's feed-forward products on `x` (without the residual).
    fn feed_forward(&self, layer: &Layer, x: &[f32], out: &mut [f32]) {
        let (h, width) = (self.hidden, layer.ffn_in.n());
        let rows = x.len() / h;
        let act = Epilogue::BiasActivation(&layer.ffn_in_bias, self.activation);
        let bias = Epilogue::Bias(&layer.ffn_out_bias);
        if let (Weight::Int8(first), Weight::Bf16(second)) = (&layer.ffn_in, &layer.ffn_out) {
            // The second product reads the first's output in bf16: rounded as it is made.
            let pairs = width.div_ceil(2);
            let mut inner = scratch::U32.take(rows * pairs);
            int8::gemm_to_bf16(self.isa, x, h, first, &mut inner, act);
            return bf16::gemm_pairs(self.isa, &inner, pairs, second, out, h, bias);
        }
        let mut inner = scratch::F32.take(rows * width);
        layer.ffn_in.apply(self.isa, x, h, &mut inner, width, act);
        layer.ffn_out.apply(self.isa, &inner, width, out, h, bias);
    }

    /// `x = LayerNorm(x + residual)`, rows shared out over the pool.
    fn add_norm(&self, x: &mut [f32], residual: &[f32], norm: &Norm) {
        const ROWS: usize = 32;
        let chunk = ROWS * self.hidden;
        x.par_chunks_mut(chunk).zip(residual.par_chunks(chunk)).for_each(|(x, residual)| {
            rows::add_layer_norm(self.isa, x, residual, &norm.gamma, &norm.beta, self.eps);
        });
    }

    /// `ctx` = the layer's attention over `x`, before its output product.
    fn self_attention(&self, layer: &Layer, x: &[f32], spans: &[(usize, usize)], ctx: &mut [f32]) {
        let h = self.hidden;
        let rows = x.len() / h;
        let bias = Epilogue::Bias(&layer.qkv_bias);
        if let Weight::Int8(w) = &layer.qkv
            && self.isa.has_bf16()
            && (h / self.heads).is_multiple_of(2)
        {
            // Attention reads Q, K and V in bf16: rounded as the product makes them.
            let mut qkv = scratch::U32.take(rows * 3 * h / 2);
            int8::gemm_to_bf16(self.isa, x, h, w, &mut qkv, bias);
            return self.attention(Qkv::Pairs(&qkv), spans, ctx);
        }
        let mut qkv = scratch::F32.take(rows * 3 * h);
        layer.qkv.apply(self.isa, x, h, &mut qkv, 3 * h, bias);
        self.attention(Qkv::Values(&qkv), spans, ctx)
    }

    /// Scaled dot-product attention per (sequence, head), in parallel, into `ctx`.
    fn attention(&self, qkv: Qkv, spans: &[(usize, usize)], ctx: &mut [f32]) {
        let (h, isa) = (self.hidden, self.isa);
        let dh = h / self.heads;
        let jobs: Vec<(usize, usize)> = spans
            .iter()
            .enumerate()
            .filter(|(_, (_, len))| *len > 0)
            .flat_map(|(s, _)| (0..self.heads).map(move |head| (s, head)))
            .collect();
        // Every head's output in one buffer, a slice per job in job order (a buffer per job
        // would fill the pool with small ones and push the activations' out).
        let mut outputs = scratch::F32.take(jobs.iter().map(|&(s, _)| spans[s].1 * dh).sum());
        let mut slices = Vec::with_capacity(jobs.len());
        let mut rest = &mut outputs[..];
        for &(s, _) in &jobs {
            let (one, tail) = std::mem::take(&mut rest).split_at_mut(spans[s].1 * dh);
            slices.push(one);
            rest = tail;
        }
        jobs.par_iter().zip(slices).for_each(|(&(s, head), out)| {
            let (start, len) = spans[s];
            match qkv {
                Qkv::Values(qkv) => {
                    let (q, ld) = (&qkv[start * 3 * h + head * dh..], 3 * h);
                    attention::head(isa, Head { q, k: &q[h..], v: &q[2 * h..], ld, len, dh }, out, dh);
                }
                Qkv::Pairs(qkv) => {
                    let (q, ld, h) = (&qkv[(start * 3 * h + head * dh) / 2..], 3 * h / 2, h / 2);
                    attention::head_pairs(isa, PairedHead { q, k: &q[h..], v: &q[2 * h..], ld, len, dh }, out, dh);
                }
            }
        });
        let mut at = 0;
        for &(s, head) in &jobs {
            let (start, len) = spans[s];
            for (r, row) in outputs[at..][..len * dh].chunks_exact(dh).enumerate() {
                ctx[(start + r) * h + head * dh..][..dh].copy_from_slice(row);
            }
            at += len * dh;
        }
    }
}
