//! Turning per-token vectors into one vector per text, as the model's
//! `1_Pooling/config.json` says.

use candle_core::{D, DType, Result, Tensor};

/// How token vectors are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Average of the real (unpadded) tokens: sentence-transformers' default.
    Mean,
    /// The first token's vector (`[CLS]`), as bge-style models use.
    Cls,
    /// Element-wise maximum over the real tokens.
    Max,
}

impl Pooling {
    /// Pools `hidden` (batch × tokens × dim) under `mask` (batch × tokens, 1 = real).
    pub fn pool(self, hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        match self {
            Pooling::Mean => {
                let sum = hidden.broadcast_mul(&mask)?.sum(1)?;
                let count = mask.sum(1)?.clamp(1e-9, f64::MAX)?;
                sum.broadcast_div(&count)
            }
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1),
            Pooling::Max => {
                // Padding gets a large negative value so it never wins.
                let penalty = ((mask.ones_like()? - &mask)? * -1e9)?;
                hidden.broadcast_add(&penalty)?.max(D::Minus2)
            }
        }
    }
}
