//! The index's in-memory form of chunk vectors: int8 codes with one scale per
//! vector (`x ≈ scale · code`, `scale = max|x| / 127`), a quarter of the f32
//! size. A dot product of two codes is exact integer arithmetic times the two
//! scales; for unit vectors of 384 dimensions it is within ~1e-3 of the f32
//! one, so the index ranks by codes and re-scores its best candidates with the
//! store's f32 vectors.

use ragbox_kernels::Isa;
use ragbox_kernels::buf::Buf;
use ragbox_kernels::dot::{dot_f32, dot_i8, dot_i8_rows};
use std::sync::OnceLock;

/// The kernels' path on this CPU, detected once.
pub(crate) fn isa() -> Isa {
    static ISA: OnceLock<Isa> = OnceLock::new();
    *ISA.get_or_init(Isa::detect)
}

/// Exact f32 dot product.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_f32(isa(), a, b)
}

/// One vector's code and scale.
fn quantize_into(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
    let max = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max > 0.0 && max.is_finite()) {
        codes.extend(std::iter::repeat_n(0, vector.len()));
        return 0.0;
    }
    let inverse = 127.0 / max;
    codes.extend(vector.iter().map(|x| (x * inverse).round().clamp(-127.0, 127.0) as i8));
    max / 127.0
}

/// A block of int8 vectors of one dimension: in memory, or mapped from a
/// saved file (shared by every process that maps it; copied on first change).
#[derive(Debug, Clone, Default)]
pub(crate) struct Codes {
    dimension: usize,
    codes: Buf<i8>,
    scales: Buf<f32>,
}

impl Codes {
    /// An empty block of `dimension`-long vectors.
    pub(crate) fn new(dimension: usize) -> Self {
        Self { dimension, codes: Buf::default(), scales: Buf::default() }
    }

    /// A block over `codes` and `scales` as they are (read from a file);
    /// `None` unless there are `dimension` codes per scale.
    pub(crate) fn from_parts(dimension: usize, codes: Buf<i8>, scales: Buf<f32>) -> Option<Self> {
        (dimension > 0 && codes.len() == scales.len().checked_mul(dimension)?).then_some(Self {
            dimension,
            codes,
            scales,
        })
    }

    /// The codes, `dimension` per vector, and the scales, one per vector.
    pub(crate) fn parts(&self) -> (&[i8], &[f32]) {
        (&self.codes, &self.scales)
    }

    /// Appends `vector` (of the block's dimension).
    pub(crate) fn push(&mut self, vector: &[f32]) {
        debug_assert_eq!(vector.len(), self.dimension);
        let scale = quantize_into(vector, self.codes.to_mut());
        self.scales.to_mut().push(scale);
    }

    /// Appends vector `i` of `other`.
    pub(crate) fn push_from(&mut self, other: &Codes, i: usize) {
        let (codes, scale) = other.row(i);
        self.codes.to_mut().extend_from_slice(codes);
        self.scales.to_mut().push(scale);
    }

    /// The vectors' length.
    pub(crate) fn dimension(&self) -> usize {
        self.dimension
    }

    /// Vectors held.
    pub(crate) fn len(&self) -> usize {
        self.scales.len()
    }

    /// Vector `i`'s code and scale.
    pub(crate) fn row(&self, i: usize) -> (&[i8], f32) {
        let d = self.dimension;
        (&self.codes[i * d..(i + 1) * d], self.scales[i])
    }

    /// Approximate dot product of vectors `i` and `j`.
    pub(crate) fn dot(&self, i: usize, j: usize) -> f32 {
        let ((a, sa), (b, sb)) = (self.row(i), self.row(j));
        dot_i8(isa(), a, b) as f32 * sa * sb
    }

    /// Approximate dot products of `query` with vectors `range`, into `out`.
    pub(crate) fn scores(&self, query: &Query, range: std::ops::Range<usize>, out: &mut Vec<f32>) {
        let d = self.dimension;
        let mut raw = vec![0i32; range.len()];
        dot_i8_rows(isa(), &query.codes, &self.codes[range.start * d..range.end * d], &mut raw);
        out.clear();
        out.extend(raw.iter().zip(&self.scales[range]).map(|(&r, &s)| r as f32 * s * query.scale));
    }

    /// Gives back the memory reserved past the vectors held.
    pub(crate) fn shrink(&mut self) {
        if let Buf::Owned(codes) = &mut self.codes {
            codes.shrink_to_fit();
        }
        if let Buf::Owned(scales) = &mut self.scales {
            scales.shrink_to_fit();
        }
    }

    /// Bytes held in memory (mapped ones counted too: they are resident, if shared).
    pub(crate) fn bytes(&self) -> usize {
        fn held<T: ragbox_kernels::buf::Plain>(buf: &Buf<T>) -> usize {
            size_of::<T>()
                * match buf {
                    Buf::Owned(v) => v.capacity(),
                    Buf::Mapped { len, .. } => *len,
                }
        }
        held(&self.codes) + held(&self.scales)
    }

    /// Of [`Self::bytes`], those mapped from a file.
    pub(crate) fn mapped_bytes(&self) -> usize {
        if self.codes.is_mapped() { self.bytes() } else { 0 }
    }
}

/// A query in both forms: its code for ranking, its f32 for re-scoring.
pub(crate) struct Query {
    pub(crate) full: Vec<f32>,
    codes: Vec<i8>,
    scale: f32,
}

impl Query {
    /// Quantises `vector` like the stored ones.
    pub(crate) fn new(vector: &[f32]) -> Self {
        let mut codes = Vec::with_capacity(vector.len());
        let scale = quantize_into(vector, &mut codes);
        Self { full: vector.to_vec(), codes, scale }
    }

    /// Approximate dot product with vector `i` of `block`.
    pub(crate) fn dot(&self, block: &Codes, i: usize) -> f32 {
        let (codes, scale) = block.row(i);
        dot_i8(isa(), &self.codes, codes) as f32 * scale * self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, d: usize) -> Vec<f32> {
        let v = ragbox_kernels::sample::uniform(d, seed, 1.0);
        let n = dot(&v, &v).sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    #[test]
    fn codes_keep_dot_products_within_a_thousandth() {
        let mut block = Codes::new(384);
        let vectors: Vec<Vec<f32>> = (0..50).map(|s| unit(s, 384)).collect();
        vectors.iter().for_each(|v| block.push(v));
        let query = Query::new(&unit(99, 384));
        let mut scores = Vec::new();
        block.scores(&query, 0..50, &mut scores);
        for (i, v) in vectors.iter().enumerate() {
            let exact = dot(&query.full, v);
            assert!((scores[i] - exact).abs() < 2e-3, "{} vs {exact}", scores[i]);
            assert!((query.dot(&block, i) - scores[i]).abs() < 1e-6);
            assert!((block.dot(i, (i + 1) % 50) - dot(v, &vectors[(i + 1) % 50])).abs() < 2e-3);
        }
    }

    #[test]
    fn zero_vectors_and_nan_components_code_to_zero() {
        let mut block = Codes::new(3);
        block.push(&[0.0, 0.0, 0.0]);
        block.push(&[f32::NAN, 1.0, 0.0]);
        assert_eq!(block.row(0), (&[0i8, 0, 0][..], 0.0));
        assert_eq!(block.row(1).0, &[0i8, 127, 0][..]);
        assert_eq!((block.len(), block.parts().0.len()), (2, 6));
    }
}
