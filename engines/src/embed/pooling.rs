//! Turning per-token vectors into one vector per text, as the model's
//! `1_Pooling/config.json` says.

/// How token vectors are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Average of the text's tokens: sentence-transformers' default.
    Mean,
    /// The first token's vector (`[CLS]`), as bge-style models use.
    Cls,
    /// Element-wise maximum over the tokens.
    Max,
}

impl Pooling {
    /// Pools one text's token vectors (`tokens` rows of `width`), which must not be empty.
    pub fn pool(self, tokens: &[f32], width: usize) -> Vec<f32> {
        let mut rows = tokens.chunks_exact(width);
        let mut out = rows.next().map(<[f32]>::to_vec).unwrap_or_else(|| vec![0.0; width]);
        match self {
            Pooling::Cls => {}
            Pooling::Mean => {
                let mut count = 1.0f32;
                for row in rows {
                    out.iter_mut().zip(row).for_each(|(o, v)| *o += v);
                    count += 1.0;
                }
                out.iter_mut().for_each(|o| *o /= count);
            }
            Pooling::Max => {
                for row in rows {
                    out.iter_mut().zip(row).for_each(|(o, v)| *o = o.max(*v));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Pooling;

    #[test]
    fn pools_rows_by_mode() {
        let tokens = [1.0, -2.0, 3.0, 4.0, 5.0, 0.0];
        assert_eq!(Pooling::Mean.pool(&tokens, 2), vec![3.0, 2.0 / 3.0]);
        assert_eq!(Pooling::Cls.pool(&tokens, 2), vec![1.0, -2.0]);
        assert_eq!(Pooling::Max.pool(&tokens, 2), vec![5.0, 4.0]);
        assert_eq!(Pooling::Mean.pool(&tokens[..2], 2), vec![1.0, -2.0]);
    }
}
