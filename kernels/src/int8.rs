//! `C = A · B` with A quantised to 8 bits per row and B to 8 bits per column,
//! summed exactly in 32-bit integers, for CPUs with AVX-512 VNNI.
//!
//! `vpdpbusd` multiplies 64 unsigned bytes of A by 64 signed bytes of B and
//! adds each group of four products into one 32-bit lane: 64 multiply-adds
//! per instruction, twice `vdpbf16ps`. The quantisation is dynamic, as ONNX
//! Runtime's quantiser makes it: each row of A gets its own scale and zero
//! point from its own range (asymmetric: a GELU output's range is mostly
//! positive), each column of B a symmetric scale from its largest weight.
//! It is less exact than bf16, so the encoder uses it only where its worst
//! cosine to f32 stays ≥ 0.999 (`bench/results/precision.md`), and evens out
//! A's channels first where their ranges are known ([`Packed::smoothed`]).
//!
//! The loop nest is [`gemm`](super::gemm)'s. B is packed once into panels of
//! [`NR`] columns whose rows are *quads* of B's rows (`b[4p..4p+4][c]` in one
//! 32-bit word), which is what the instruction reads; A is quantised once per
//! product, a row of bytes in memory order being already such quads. The
//! tiles write the raw integer sums (as f32: exact below 2^24, and far below
//! the quantisation's own error above), and one pass per row then applies the
//! zero point, both scales and the epilogue.

use super::Isa;
use super::buf::Buf;
use super::gemm::{self, Blocking, Epilogue};
use rayon::prelude::*;

/// Columns of a packed panel: two AVX-512 registers of 32-bit sums.
pub const NR: usize = 32;
/// Rows of A one micro-kernel call covers: 24 accumulators + 2 B + 1 A of 32 registers.
pub const MR: usize = 12;
/// Quads of depth per pass over a panel: a 24 KiB slice of it stays in L1.
const KC: usize = 192;

/// B (k × n) as signed bytes with a scale per column, packed into panels of
/// [`NR`] columns of row quads, zero past `n` and `k`.
#[derive(Debug, Clone, Default)]
pub struct Packed {
    k: usize,
    n: usize,
    data: Buf<u32>,
    /// Per column: the scale, then the sum of its bytes (as f32), `n` each.
    column: Buf<f32>,
    /// Per row of B, when smoothed: what A's values in that channel are
    /// multiplied by before they are quantised (B's row was multiplied by its inverse).
    smooth: Option<Buf<f32>>,
}

/// SmoothQuant's α: how much of a channel's range smoothing moves from A into B.
const SMOOTH_ALPHA: f32 = 0.5;

impl Packed {
    /// Packs the transpose of `w` (`n` rows of `k` values, row stride `ld`):
    /// a linear layer's `[out, in]` weight becomes the `in × out` operand.
    pub fn transposed(w: &[f32], n: usize, k: usize, ld: usize) -> Self {
        Self::pack(w, n, k, ld, None)
    }

    /// [`Self::transposed`] with A's channels evened out first (SmoothQuant,
    /// α = 0.5): channel `j` of A, whose values reach about `range[j]`, is
    /// divided by `s = sqrt(range[j] / max |B[j][·]|)` as it is quantised and
    /// B's row `j` multiplied by it, so that a few wide channels (the
    /// encoder's outlier dimensions) no longer take most of every row's 256 steps.
    /// The product is the same; its rounding error is smaller.
    pub fn smoothed(w: &[f32], n: usize, k: usize, ld: usize, range: &[f32]) -> Self {
        assert_eq!(range.len(), k, "one range per channel of A");
        let mut largest = vec![0.0f32; k];
        for c in 0..n {
            largest.iter_mut().zip(&w[c * ld..][..k]).for_each(|(m, v)| *m = m.max(v.abs()));
        }
        // Clamped, so that a dead channel or weight row cannot blow the other side up.
        let s: Vec<f32> = range
            .iter()
            .zip(&largest)
            .map(|(&a, &b)| (a.max(1e-5).powf(SMOOTH_ALPHA) / b.max(1e-5).powf(1.0 - SMOOTH_ALPHA)).clamp(1e-3, 1e3))
            .collect();
        Self::pack(w, n, k, ld, Some(&s))
    }

    /// Packs the transpose of `w`, its row `j` of B (input channel `j`) multiplied by `s[j]` when given.
    fn pack(w: &[f32], n: usize, k: usize, ld: usize, s: Option<&[f32]>) -> Self {
        let quads = k.div_ceil(4);
        let mut data = vec![0u32; n.div_ceil(NR) * quads * NR];
        let mut column = vec![0.0f32; 2 * n];
        let mut scaled = vec![0.0f32; if s.is_some() { k } else { 0 }];
        for c in 0..n {
            let mut row = &w[c * ld..][..k];
            if let Some(s) = s {
                scaled.iter_mut().zip(row).zip(s).for_each(|((o, v), s)| *o = v * s);
                row = &scaled;
            }
            let largest = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            let bytes: Vec<i8> = row.iter().map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8).collect();
            column[c] = scale;
            column[n + c] = bytes.iter().map(|&b| b as f32).sum();
            let panel = &mut data[(c / NR) * quads * NR..][..quads * NR];
            for (p, quad) in bytes.chunks(4).enumerate() {
                let mut word = [0u8; 4];
                word.iter_mut().zip(quad).for_each(|(w, &b)| *w = b as u8);
                panel[p * NR + c % NR] = u32::from_le_bytes(word);
            }
        }
        let smooth = s.map(|s| s.iter().map(|v| 1.0 / v).collect::<Vec<f32>>().into());
        Self { k, n, data: data.into(), column: column.into(), smooth }
    }

    /// A packing of `k × n` read back from `data`, `column` and `smooth` (as
    /// [`Self::data`] gave them); `None` when their lengths do not fit those sizes.
    pub fn from_data(k: usize, n: usize, data: Buf<u32>, column: Buf<f32>, smooth: Option<Buf<f32>>) -> Option<Self> {
        let fits = data.len() == n.div_ceil(NR) * k.div_ceil(4) * NR
            && column.len() == 2 * n
            && smooth.as_ref().is_none_or(|s| s.len() == k);
        fits.then_some(Self { k, n, data, column, smooth })
    }

    /// The packed bytes, the per-column scales and sums, and the smoothing of
    /// A's channels when there is one, to keep (see [`Self::from_data`]).
    pub fn data(&self) -> (&Buf<u32>, &Buf<f32>, Option<&Buf<f32>>) {
        (&self.data, &self.column, self.smooth.as_ref())
    }

    /// Columns of B.
    pub fn n(&self) -> usize {
        self.n
    }
}

/// One row of A quantised: `value ≈ scale · (byte − zero)`.
#[derive(Clone, Copy, Default)]
struct RowScale {
    scale: f32,
    zero: f32,
}

/// `C = A · B` (+ epilogue) with A quantised per row: A `m × b.k` f32 with row
/// stride `lda`, C `m × b.n()` with row stride `ldc`, shared out over the
/// thread pool. On an `isa` without VNNI the same arithmetic runs in plain Rust.
pub fn gemm(isa: Isa, a: &[f32], lda: usize, b: &Packed, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
    let m = c.len().div_ceil(ldc);
    let (a8, scales) = quantised(isa, a, lda, b, m);
    gemm::shared(b.k, b.n, NR, MR, c, ldc, |row, col, cols, out, ld| {
        block(isa, b, &a8, &scales, row, col, cols, out, ld, epilogue)
    });
}

/// [`gemm`] for a product whose result feeds a bf16 one: `c16` receives its
/// `m` rows (the epilogue applied) rounded to bfloat16 pairs, `b.n().div_ceil(2)`
/// words a row, as [`bf16::gemm_pairs`](super::bf16::gemm_pairs) reads them.
/// Each thread's rows go through a block of f32 that stays in its cache, where
/// the plain product would write all of them out and the next one read them back.
pub fn gemm_to_bf16(isa: Isa, a: &[f32], lda: usize, b: &Packed, c16: &mut [u32], epilogue: Epilogue) {
    let pairs = b.n.div_ceil(2);
    assert!(pairs > 0 && c16.len().is_multiple_of(pairs), "C holds whole rows of {pairs} pairs");
    let m = c16.len() / pairs;
    let round = |sums: &[f32], out: &mut [u32]| {
        for (row, words) in sums.chunks_exact(b.n).zip(out.chunks_exact_mut(pairs)) {
            super::bf16::round_row(isa, row, words);
        }
    };
    if m <= gemm::MC {
        // Few rows (a query): the plain product splits its columns over the pool.
        let mut sums = super::scratch::F32.take(m * b.n);
        gemm(isa, a, lda, b, &mut sums, b.n, epilogue);
        return round(&sums, c16);
    }
    let (a8, scales) = quantised(isa, a, lda, b, m);
    let per_task = gemm::rows_per_task(m, MR);
    c16.par_chunks_mut(per_task * pairs).enumerate().for_each(|(t, out)| {
        let mut sums = super::scratch::F32.take(out.len() / pairs * b.n);
        block(isa, b, &a8, &scales, t * per_task, 0, b.n, &mut sums, b.n, epilogue);
        round(&sums, out);
    });
}

/// A quantised, one row of quads and one [`RowScale`] per row, for `m` rows.
fn quantised(isa: Isa, a: &[f32], lda: usize, b: &Packed, m: usize) -> (super::scratch::Taken<u32>, Vec<RowScale>) {
    let quads = b.k.div_ceil(4);
    assert!(m == 0 || a.len() >= (m - 1) * lda + b.k, "A too short for {m} rows of {}", b.k);
    let mut a8 = super::scratch::U32.take(m * quads);
    let mut scales = vec![RowScale::default(); m];
    const ROWS: usize = 64;
    a8.par_chunks_mut(ROWS * quads).zip(scales.par_chunks_mut(ROWS)).enumerate().for_each(|(t, (out, scales))| {
        // A smoothed row is multiplied out first: one pass over a row in L1, against k·n multiply-adds.
        let mut smoothed = vec![0.0f32; if b.smooth.is_some() { b.k } else { 0 }];
        for (r, (row, scale)) in out.chunks_exact_mut(quads).zip(scales).enumerate() {
            let mut values = &a[(t * ROWS + r) * lda..][..b.k];
            if let Some(s) = &b.smooth {
                smoothed.iter_mut().zip(values).zip(s.iter()).for_each(|((o, v), s)| *o = v * s);
                values = &smoothed;
            }
            *scale = quantise_row(isa, values, row);
        }
    });
    (a8, scales)
}

/// Rows `row..` (as many as `out` holds at stride `ld`) of columns `col..col + cols` of C.
#[allow(clippy::too_many_arguments)]
fn block(
    isa: Isa,
    b: &Packed,
    a8: &[u32],
    scales: &[RowScale],
    row: usize,
    col: usize,
    cols: usize,
    out: &mut [f32],
    ld: usize,
    epilogue: Epilogue,
) {
    let quads = b.k.div_ceil(4);
    let first = col / NR;
    let panels = &b.data[first * quads * NR..(first + cols.div_ceil(NR)) * quads * NR];
    let blocking = Blocking { mr: MR, nr: NR, kc: KC };
    gemm::blocked(
        &a8[row * quads..],
        quads,
        panels,
        quads,
        cols,
        out,
        ld,
        blocking,
        None,
        |kc, a, lda, rows, panel, c, ldc, add| tile(isa, kc, a, lda, rows, panel, c, ldc, add),
    );
    let (col_scale, col_sum) = b.column.split_at(b.n);
    let columns = (&col_scale[col..col + cols], &col_sum[col..col + cols]);
    dequantise(isa, out, ld, &scales[row..], columns);
    gemm::finish(isa, out, ld, out.len().div_ceil(ld), cols, epilogue.past_column(col));
}

/// The integer sums in `out` (rows of stride `ld`) to values: each row's zero
/// point times each column's byte sum taken off, then both scales applied.
fn dequantise(isa: Isa, out: &mut [f32], ld: usize, rows: &[RowScale], (scale, sum): (&[f32], &[f32])) {
    #[inline(always)]
    fn body(out: &mut [f32], ld: usize, rows: &[RowScale], (scale, sum): (&[f32], &[f32])) {
        for (out_row, &RowScale { scale: sa, zero }) in out.chunks_mut(ld).zip(rows) {
            for ((v, sb), s) in out_row[..scale.len()].iter_mut().zip(scale).zip(sum) {
                *v = (*v - zero * s) * sa * sb;
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    if isa.has_int8() {
        #[target_feature(enable = "avx512f")]
        fn wide(out: &mut [f32], ld: usize, rows: &[RowScale], columns: (&[f32], &[f32])) {
            body(out, ld, rows, columns)
        }
        // SAFETY: `has_int8` is only set after the CPU was seen to have AVX-512 F.
        return unsafe { wide(out, ld, rows, (scale, sum)) };
    }
    let _ = isa;
    body(out, ld, rows, (scale, sum))
}

/// Quantises `row` to unsigned bytes into `out` (quads, zero-padded), returning its scale.
fn quantise_row(isa: Isa, row: &[f32], out: &mut [u32]) -> RowScale {
    #[cfg(target_arch = "x86_64")]
    if isa.has_int8() {
        #[target_feature(enable = "avx512f,avx512bw")]
        fn wide(row: &[f32], out: &mut [u32]) -> RowScale {
            quantise_row_body(row, out)
        }
        // SAFETY: `has_int8` is only set after the CPU was seen to have AVX-512 F and BW.
        return unsafe { wide(row, out) };
    }
    let _ = isa;
    quantise_row_body(row, out)
}

/// [`quantise_row`]'s loops, written to vectorise (rounding to even is one instruction).
#[inline(always)]
fn quantise_row_body(row: &[f32], out: &mut [u32]) -> RowScale {
    let (mut lo, mut hi) = ([0.0f32; 16], [0.0f32; 16]);
    let mut chunks = row.chunks_exact(16);
    for chunk in &mut chunks {
        for i in 0..16 {
            lo[i] = lo[i].min(chunk[i]);
            hi[i] = hi[i].max(chunk[i]);
        }
    }
    for &v in chunks.remainder() {
        lo[0] = lo[0].min(v);
        hi[0] = hi[0].max(v);
    }
    let (lo, hi) = (lo.iter().fold(0.0f32, |a, &b| a.min(b)), hi.iter().fold(0.0f32, |a, &b| a.max(b)));
    // The range always holds 0, so that padding and exact zeros stay exact.
    let scale = if hi > lo { (hi - lo) / 255.0 } else { 1.0 };
    let zero = (-lo / scale).round_ties_even().clamp(0.0, 255.0);
    let inv = 1.0 / scale;
    let byte = |v: f32| (v * inv + zero).round_ties_even().clamp(0.0, 255.0) as u8 as u32;
    let mut quads = row.chunks_exact(4);
    for (word, q) in out.iter_mut().zip(&mut quads) {
        *word = byte(q[0]) | byte(q[1]) << 8 | byte(q[2]) << 16 | byte(q[3]) << 24;
    }
    let tail = quads.remainder();
    if !tail.is_empty() {
        let mut bytes = [zero as u8; 4];
        bytes.iter_mut().zip(tail).for_each(|(b, &v)| *b = byte(v) as u8);
        out[row.len() / 4] = u32::from_le_bytes(bytes);
    }
    RowScale { scale, zero }
}

/// One `rows × NR` tile of raw integer sums over `kc` quads of depth.
#[allow(clippy::too_many_arguments)]
fn tile(isa: Isa, kc: usize, a: &[u32], lda: usize, rows: usize, panel: &[u32], c: &mut [f32], ldc: usize, add: bool) {
    assert!((1..=MR).contains(&rows) && a.len() >= (rows - 1) * lda + kc && panel.len() >= kc * NR);
    assert!(c.len() >= (MR - 1) * ldc + NR);
    #[cfg(target_arch = "x86_64")]
    if isa.has_int8() {
        // SAFETY: `has_int8` is only set when the CPU has AVX-512 F and VNNI; the
        // asserts above bound every pointer the kernel forms.
        return unsafe { avx512::tile(kc, a.as_ptr(), lda, rows, panel.as_ptr(), c.as_mut_ptr(), ldc, add) };
    }
    let _ = isa;
    portable_tile(kc, a, lda, rows, panel, c, ldc, add)
}

/// The micro-kernel in plain Rust: four byte products a word, summed exactly.
#[allow(clippy::too_many_arguments)]
fn portable_tile(kc: usize, a: &[u32], lda: usize, rows: usize, panel: &[u32], c: &mut [f32], ldc: usize, add: bool) {
    let mut acc = [[0i32; NR]; MR];
    for r in 0..rows {
        for (p, b) in panel.chunks_exact(NR).take(kc).enumerate() {
            let av = a[r * lda + p].to_le_bytes();
            for (x, bw) in acc[r].iter_mut().zip(b) {
                let bv = bw.to_le_bytes();
                *x += (0..4).map(|j| av[j] as i32 * bv[j] as i8 as i32).sum::<i32>();
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        let out = &mut c[r * ldc..][..NR];
        for (o, &x) in out.iter_mut().zip(acc_row) {
            *o = if add { *o + x as f32 } else { x as f32 };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// The AVX-512 VNNI micro-kernel: 12 × 32 integer sums, two B loads and
    /// twelve broadcast A quads per quad of depth (`bf16::avx512::tile`'s loop
    /// with integer registers and `vpdpbusd`: per-ISA twins, kept apart).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and VNNI; `a` must be readable for `rows`
    /// rows of `kc` words at stride `lda`, `b` for `kc · NR` words, `c` writable
    /// for `MR` rows of `NR` values at stride `ldc`.
    #[target_feature(enable = "avx512f,avx512vnni")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn tile(
        kc: usize,
        a: *const u32,
        lda: usize,
        rows: usize,
        b: *const u32,
        c: *mut f32,
        ldc: usize,
        add: bool,
    ) {
        // SAFETY (whole body): the caller's contract bounds every offset used.
        unsafe {
            let ar: [*const u32; MR] = std::array::from_fn(|r| a.add(r.min(rows - 1) * lda));
            let mut acc = [_mm512_setzero_si512(); 2 * MR];
            for p in 0..kc {
                let b0 = _mm512_loadu_si512(b.add(p * NR).cast());
                let b1 = _mm512_loadu_si512(b.add(p * NR + 16).cast());
                for r in 0..MR {
                    let av = _mm512_set1_epi32(*ar[r].add(p) as i32);
                    acc[2 * r] = _mm512_dpbusd_epi32(acc[2 * r], av, b0);
                    acc[2 * r + 1] = _mm512_dpbusd_epi32(acc[2 * r + 1], av, b1);
                }
            }
            let sums: [__m512; 2 * MR] = std::array::from_fn(|i| _mm512_cvtepi32_ps(acc[i]));
            crate::bf16::avx512::store(&sums, c, ldc, add);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{self, Case, random};

    #[test]
    fn every_path_computes_the_quantised_product_exactly() {
        // The product of the quantised values (recomputed here in f64) is what
        // every path must give, up to f32 rounding of the result; shapes with
        // depth tails (not a multiple of 4), MR and NR tails, depth across KC,
        // a single row, and serial, row-split and column-split runs.
        let shapes = [(1, 1, 1), (1, 384, 1536), (5, 7, 17), (13, 385, 33), (97, 1536, 64), (50, 600, 200)];
        sample::every_path_pool_and_shape(&shapes, |isa, pool, m, k, n| {
            let mut case = Case::new(m, k, n);
            // Post-GELU-like rows: mostly positive, a few negatives down to -0.17.
            case.a.iter_mut().for_each(|v| *v = v.max(-0.17) * 3.0);
            let (lda, packed) = (case.lda, Packed::transposed(&case.w, n, k, k));
            let c = case.product(|c, ldc| pool.install(|| gemm(isa, &case.a, lda, &packed, c, ldc, Epilogue::None)));
            for i in 0..m {
                let mut bytes = vec![0u32; k.div_ceil(4)];
                let RowScale { scale, zero } = quantise_row(isa, &case.a[i * lda..][..k], &mut bytes);
                let qa: Vec<f64> =
                    bytes.iter().flat_map(|w| w.to_le_bytes()).take(k).map(|b| b as f64 - zero as f64).collect();
                for j in 0..n {
                    let sb = packed.column[j] as f64;
                    let want: f64 = (0..k)
                        .map(|p| qa[p] * ((case.w[j * k + p] / sb as f32).round().clamp(-127.0, 127.0) as f64))
                        .sum::<f64>()
                        * scale as f64
                        * sb;
                    let got = c[i * case.ldc() + j] as f64;
                    assert!(
                        (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "{isa:?} {m}x{k}x{n} at {i},{j}: {got} vs {want}"
                    );
                }
            }
        });
    }

    #[test]
    fn the_bf16_output_is_the_plain_product_rounded() {
        // Rows under and over a task's block (MC), an odd width (a half pair per
        // row), with the activation epilogue; serial, row-split and column-split runs.
        let shapes = [(1, 384, 1536), (40, 64, 33), (97, 384, 1536), (250, 100, 33)];
        sample::every_path_pool_and_shape(&shapes, |isa, pool, m, k, n| {
            let Case { a, lda, w, .. } = Case::new(m, k, n);
            let packed = Packed::smoothed(&w, n, k, k, &vec![1.5; k]);
            let bias = random(n, 3);
            let epilogue = Epilogue::BiasActivation(&bias, crate::rows::Activation::Gelu);
            let mut c = vec![0.0; m * n];
            pool.install(|| gemm(isa, &a, lda, &packed, &mut c, n, epilogue));
            let pairs = n.div_ceil(2);
            let mut want = vec![0u32; m * pairs];
            for (row, words) in c.chunks_exact(n).zip(want.chunks_exact_mut(pairs)) {
                crate::bf16::round_row(isa, row, words);
            }
            let mut got = vec![0u32; m * pairs];
            pool.install(|| gemm_to_bf16(isa, &a, lda, &packed, &mut got, epilogue));
            assert!(got == want, "{isa:?} {m}x{k}x{n}: differs from the product rounded");
        });
    }

    #[test]
    fn it_stays_within_8_bit_rounding_of_the_f32_product() {
        let (m, k, n) = (40, 1536, 96);
        let a: Vec<f32> = random(m * k, 7).iter().map(|v| v.max(-0.17)).collect();
        let w = random(n * k, 8);
        let bias = random(n, 9);
        let exact = sample::f32_product(&a, m, k, &w, n, Epilogue::Bias(&bias));
        let scale = exact.iter().fold(0.0f32, |s, v| s.max(v.abs()));
        for isa in Isa::available() {
            let mut low = vec![0.0; m * n];
            gemm(isa, &a, k, &Packed::transposed(&w, n, k, k), &mut low, n, Epilogue::Bias(&bias));
            let worst = sample::worst(&exact, &low);
            assert!(worst < 0.01 * scale, "{isa:?}: {worst} of {scale}");
            assert!(worst > 0.0, "{isa:?}: 8-bit rounding should show");
        }
    }

    #[test]
    fn smoothing_a_few_wide_channels_makes_the_product_closer() {
        // A LayerNorm's output: most channels within ±1, four of them twenty times wider.
        let (m, k, n) = (24, 384, 64);
        let wide = |j: usize| if j % 97 == 5 { 20.0 } else { 1.0 };
        let a: Vec<f32> = random(m * k, 3).iter().enumerate().map(|(i, v)| v * wide(i % k)).collect();
        let w = random(n * k, 4);
        let range: Vec<f32> = (0..k).map(wide).collect();
        let exact = sample::f32_product(&a, m, k, &w, n, Epilogue::None);
        let error = |packed: &Packed, isa| {
            let mut c = vec![0.0; m * n];
            gemm(isa, &a, k, packed, &mut c, n, Epilogue::None);
            exact.iter().zip(&c).map(|(x, y)| ((x - y) as f64).powi(2)).sum::<f64>().sqrt()
        };
        let smoothed = Packed::smoothed(&w, n, k, k, &range);
        let kept = Packed::from_data(k, n, smoothed.data.clone(), smoothed.column.clone(), smoothed.smooth.clone());
        for isa in Isa::available() {
            let (plain, even) = (error(&Packed::transposed(&w, n, k, k), isa), error(&smoothed, isa));
            assert!(even < 0.5 * plain, "{isa:?}: smoothed error {even} against {plain}");
            assert_eq!(error(kept.as_ref().expect("its own data fits"), isa), even, "{isa:?}: read back differs");
        }
    }
}
