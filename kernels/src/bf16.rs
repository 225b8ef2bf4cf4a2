//! `C = A · B` with A and B rounded to bfloat16 and the sums kept in f32, for
//! the encoder's weight products on CPUs with AVX-512 BF16.
//!
//! `vdpbf16ps` takes 16 pairs of bf16 values from each operand and adds both
//! products of a pair into one f32 lane: 32 multiply-adds per instruction,
//! where an AVX2 FMA does 8 and an AVX-512 one 16. bf16 keeps f32's exponent
//! and 8 bits of its mantissa, so a product rounds its inputs to ~0.4 %, but
//! every sum is f32 (the encoder's worst cosine to f32 is measured in
//! `bench/results/precision.md`).
//!
//! The loop nest is [`gemm`](super::gemm)'s. B is packed once into panels of
//! [`NR`] columns whose rows are *pairs* of B's rows (`b[2p][c]` in the low
//! half of a 32-bit word, `b[2p+1][c]` in the high half), which is what the
//! instruction reads. A is rounded once per product; a row of bf16 values in
//! memory order is already such pairs. Rounding is to nearest even, as the
//! CPU's own conversion (`vcvtne2ps2bf16`) does.

use super::Isa;
use super::amx;
use super::buf::Buf;
use super::gemm::{self, Blocking, Epilogue};
use rayon::prelude::*;

/// Columns of a packed panel: two AVX-512 registers of f32 sums (and two
/// AMX tiles side by side, which read the same panels).
pub const NR: usize = super::BF16_PANEL;
/// Rows of A one micro-kernel call covers: 24 accumulators + 2 B + 1 A of 32 registers.
pub const MR: usize = 12;
/// Pairs of depth per pass over a panel: a 24 KiB slice of it stays in L1.
const KC: usize = 192;

/// `x` rounded to the nearest bfloat16, ties to even; NaN stays NaN.
#[inline(always)]
pub fn to_bf16(x: f32) -> u16 {
    // Written without a branch, so that loops over many values vectorise.
    let bits = x.to_bits();
    let nan = (bits & 0x7fff_ffff) > 0x7f80_0000;
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16;
    (if nan { (bits >> 16) | 0x40 } else { rounded }) as u16
}

/// The f32 a bfloat16 stands for (exact).
pub fn from_bf16(x: u16) -> f32 {
    f32::from_bits((x as u32) << 16)
}

/// B (k × n) in bfloat16, packed into panels of [`NR`] columns of row pairs, zero past `n` and `k`.
#[derive(Debug, Clone, Default)]
pub struct Packed {
    k: usize,
    n: usize,
    data: Buf<u32>,
}

impl Packed {
    /// Packs the transpose of `w` (`n` rows of `k` values, row stride `ld`):
    /// a linear layer's `[out, in]` weight becomes the `in × out` operand.
    pub fn transposed(w: &[f32], n: usize, k: usize, ld: usize) -> Self {
        let pairs = k.div_ceil(2);
        let mut data = vec![0u32; n.div_ceil(NR) * pairs * NR];
        for (j, panel) in data.chunks_exact_mut(pairs * NR).enumerate() {
            for c in 0..NR.min(n - j * NR) {
                let row = &w[(j * NR + c) * ld..][..k];
                for (p, two) in row.chunks(2).enumerate() {
                    panel[p * NR + c] = pair(two);
                }
            }
        }
        Self { k, n, data: data.into() }
    }

    /// A packing of `k × n` read back from `data` (as [`Self::data`] gave it);
    /// `None` when its length does not fit those sizes.
    pub fn from_data(k: usize, n: usize, data: Buf<u32>) -> Option<Self> {
        (data.len() == n.div_ceil(NR) * k.div_ceil(2) * NR).then_some(Self { k, n, data })
    }

    /// The packed values, to keep (see [`Self::from_data`]).
    pub fn data(&self) -> &Buf<u32> {
        &self.data
    }

    /// Columns of B.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Rows of B (A's row length).
    pub fn k(&self) -> usize {
        self.k
    }
}

/// `C = A · B` (+ epilogue) with A rounded to bfloat16: A `m × b.k()` f32 with
/// row stride `lda`, C `m × b.n()` with row stride `ldc`, shared out over the
/// thread pool. On an `isa` without BF16 the same arithmetic runs in plain Rust.
pub fn gemm(isa: Isa, a: &[f32], lda: usize, b: &Packed, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
    let m = c.len().div_ceil(ldc);
    let pairs = b.k.div_ceil(2);
    assert!(m == 0 || a.len() >= (m - 1) * lda + b.k, "A too short for {m} rows of {}", b.k);
    // On a cache line (as every scratch buffer): a tile's rows straddle none.
    let mut a16 = super::scratch::U32.take(m * pairs);
    // Rounding A is one pass over it, against k·n multiply-adds per row.
    const ROWS: usize = 64;
    a16.par_chunks_mut(ROWS * pairs).enumerate().for_each(|(t, out)| {
        for (r, row) in out.chunks_exact_mut(pairs).enumerate() {
            round_row(isa, &a[(t * ROWS + r) * lda..][..b.k], row);
        }
    });
    gemm_pairs(isa, &a16, pairs, b, c, ldc, epilogue)
}

/// [`gemm`] with A already rounded: `m` rows of `b.k().div_ceil(2)` bf16
/// pairs at stride `lda` words, starting on a cache line (a scratch buffer).
pub fn gemm_pairs(isa: Isa, a16: &[u32], lda: usize, b: &Packed, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
    let m = c.len().div_ceil(ldc);
    let pairs = b.k.div_ceil(2);
    assert!(lda >= pairs && (m == 0 || a16.len() >= (m - 1) * lda + pairs), "A too short for {m} rows of {pairs}");
    let blocking = Blocking { mr: MR, nr: NR, kc: KC };
    // AMX tiles take the depth 16 pairs at a time (every product of the encoder's).
    let tiles = isa.has_amx() && pairs.is_multiple_of(amx::PAIRS);
    let mr = if tiles { amx::ROWS } else { MR };
    gemm::shared(b.k, b.n, NR, mr, c, ldc, |row, col, cols, out, ld| {
        let first = col / NR;
        let panels = &b.data[first * pairs * NR..(first + cols.div_ceil(NR)) * pairs * NR];
        let a = &a16[row * lda..];
        if tiles {
            amx::block(a, lda, panels, pairs, cols, out, ld);
        } else {
            gemm::blocked(
                a,
                lda,
                panels,
                pairs,
                cols,
                out,
                ld,
                blocking,
                None,
                |kc, a, lda, rows, panel, c, ldc, add| tile(isa, kc, a, lda, rows, panel, c, ldc, add),
            );
        }
        gemm::finish(isa, out, ld, out.len().div_ceil(ld), cols, epilogue.past_column(col));
    });
}

/// One row of f32 into bf16 pairs (`out` holds `row.len().div_ceil(2)` words).
pub(crate) fn round_row(isa: Isa, row: &[f32], out: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `has_bf16` is only set after the CPU was seen to have AVX-512 F, BW and BF16;
    // the function reads and writes within `row` and `out`.
    let done = if isa.has_bf16() { unsafe { avx512::round_row(row, out) } } else { 0 };
    #[cfg(not(target_arch = "x86_64"))]
    let done = {
        let _ = isa;
        0
    };
    for (p, two) in row[done..].chunks(2).enumerate() {
        out[done / 2 + p] = pair(two);
    }
}

/// `out[c]` = the pair (`first[c]`, `second[c]`): two rows of B as one row of pairs.
pub(crate) fn pair_rows(first: &[f32], second: &[f32], out: &mut [u32]) {
    for ((o, &x), &y) in out.iter_mut().zip(first).zip(second) {
        *o = to_bf16(x) as u32 | (to_bf16(y) as u32) << 16;
    }
}

/// One or two values as a bf16 pair: the first in the low half, zero for a missing second.
pub(crate) fn pair(two: &[f32]) -> u32 {
    let high = two.get(1).map_or(0, |&v| to_bf16(v));
    to_bf16(two[0]) as u32 | (high as u32) << 16
}

/// One `rows × NR` tile over `kc` pairs of depth, as in [`gemm`](super::gemm).
#[allow(clippy::too_many_arguments)]
pub(crate) fn tile(
    isa: Isa,
    kc: usize,
    a: &[u32],
    lda: usize,
    rows: usize,
    panel: &[u32],
    c: &mut [f32],
    ldc: usize,
    add: bool,
) {
    assert!((1..=MR).contains(&rows) && a.len() >= (rows - 1) * lda + kc && panel.len() >= kc * NR);
    assert!(c.len() >= (MR - 1) * ldc + NR);
    #[cfg(target_arch = "x86_64")]
    if isa.has_bf16() {
        // SAFETY: `has_bf16` is only set when the CPU has AVX-512 F and BF16; the
        // asserts above bound every pointer the kernel forms.
        return unsafe { avx512::tile(kc, a.as_ptr(), lda, rows, panel.as_ptr(), c.as_mut_ptr(), ldc, add) };
    }
    let _ = isa;
    portable_tile(kc, a, lda, rows, panel, c, ldc, add)
}

/// The micro-kernel in plain Rust: each pair's two exact products added to an f32 sum.
#[allow(clippy::too_many_arguments)]
fn portable_tile(kc: usize, a: &[u32], lda: usize, rows: usize, panel: &[u32], c: &mut [f32], ldc: usize, add: bool) {
    let split = |w: u32| (from_bf16(w as u16), from_bf16((w >> 16) as u16));
    let mut acc = [[0.0f32; NR]; MR];
    for r in 0..rows {
        for (p, b) in panel.chunks_exact(NR).take(kc).enumerate() {
            let (a0, a1) = split(a[r * lda + p]);
            for (x, &bw) in acc[r].iter_mut().zip(b) {
                let (b0, b1) = split(bw);
                *x += a0 * b0 + a1 * b1;
            }
        }
    }
    for (r, acc_row) in acc.iter().enumerate() {
        let out = &mut c[r * ldc..][..NR];
        if add {
            out.iter_mut().zip(acc_row).for_each(|(o, x)| *o += x);
        } else {
            out.copy_from_slice(acc_row);
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// Rounds the first multiple of 32 values of `row` into `out` 32 at a time;
    /// returns how many it did.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BF16; `out` must hold `row.len() / 2` words.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn round_row(row: &[f32], out: &mut [u32]) -> usize {
        let whole = row.len() / 32 * 32;
        debug_assert!(out.len() >= whole / 2);
        // SAFETY: every load is within `row[..whole]`, every store within `out[..whole / 2]`.
        unsafe {
            for i in (0..whole).step_by(32) {
                let lo = _mm512_loadu_ps(row.as_ptr().add(i));
                let hi = _mm512_loadu_ps(row.as_ptr().add(i + 16));
                // The second operand fills the low half: memory order.
                let v: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
                _mm512_storeu_si512(out.as_mut_ptr().add(i / 2).cast(), v);
            }
        }
        whole
    }

    /// The AVX-512 BF16 micro-kernel: 12 × 32 f32 sums, two B loads and twelve
    /// broadcast A pairs per pair of depth.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F and BF16; `a` must be readable for `rows`
    /// rows of `kc` words at stride `lda`, `b` for `kc · NR` words, `c` writable
    /// for `MR` rows of `NR` values at stride `ldc`.
    #[target_feature(enable = "avx512f,avx512bf16")]
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
        // SAFETY (whole body): the caller's contract bounds every offset used;
        // the transmutes reinterpret 512 bits as 32 bf16 values.
        unsafe {
            let ar: [*const u32; MR] = std::array::from_fn(|r| a.add(r.min(rows - 1) * lda));
            let mut acc = [_mm512_setzero_ps(); 2 * MR];
            for p in 0..kc {
                let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(p * NR).cast()));
                let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(b.add(p * NR + 16).cast()));
                for r in 0..MR {
                    let av: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ar[r].add(p) as i32));
                    acc[2 * r] = _mm512_dpbf16_ps(acc[2 * r], av, b0);
                    acc[2 * r + 1] = _mm512_dpbf16_ps(acc[2 * r + 1], av, b1);
                }
            }
            store(&acc, c, ldc, add);
        }
    }

    /// Writes (or with `add`, adds) `MR` rows of two registers of sums to `c`:
    /// the end of every AVX-512 micro-kernel (the int8 one converts its sums first).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F; `c` must be writable for `MR` rows of `NR` values at stride `ldc`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) unsafe fn store(acc: &[__m512; 2 * MR], c: *mut f32, ldc: usize, add: bool) {
        // SAFETY: the caller's contract bounds every offset used.
        unsafe {
            for r in 0..MR {
                let out = c.add(r * ldc);
                let (mut lo, mut hi) = (acc[2 * r], acc[2 * r + 1]);
                if add {
                    lo = _mm512_add_ps(lo, _mm512_loadu_ps(out));
                    hi = _mm512_add_ps(hi, _mm512_loadu_ps(out.add(16)));
                }
                _mm512_storeu_ps(out, lo);
                _mm512_storeu_ps(out.add(16), hi);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::Activation;
    use crate::sample::{self, Case, random};

    #[test]
    fn rounding_is_to_nearest_even_and_keeps_specials() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        // 1 + 2^-8 is halfway between 1 and the next bf16: ties go to even (1.0).
        assert_eq!(to_bf16(1.0 + 1.0 / 256.0), 0x3f80);
        // 1 + 3·2^-8 is halfway between two bf16s: to the even one above.
        assert_eq!(to_bf16(1.0 + 3.0 / 256.0), 0x3f82);
        assert_eq!(to_bf16(-2.5), 0xc020);
        assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
        assert_eq!(from_bf16(to_bf16(f32::INFINITY)), f32::INFINITY);
        assert_eq!(from_bf16(to_bf16(f32::MAX)), f32::INFINITY, "f32::MAX rounds up past bf16's largest");
    }

    #[test]
    fn every_path_matches_the_rounded_reference_on_awkward_shapes() {
        // Odd depths (a half pair), tails of MR and NR, depth across KC pairs,
        // the AMX tiles' whole depths with tails of their 32-row blocks and of
        // a panel, and the encoder's own shapes; serial, row-split and column-split.
        let shapes = [
            (1, 1, 1),
            (1, 384, 1152),
            (5, 7, 17),
            (13, 385, 33),
            (97, 520, 64),
            (50, 600, 200),
            (45, 512, 40),
            (33, 63, 40), // an odd depth in whole AMX tiles: the last pair half zero
            (200, 64, 72),
            (96, 384, 1536),
        ];
        sample::every_path_pool_and_shape(&shapes, |isa, pool, m, k, n| {
            let case = Case::new(m, k, n);
            // `C = bf16(A) · bf16(W)ᵀ`: what the kernel computes, up to the order of its f32 sums.
            let want = case.reference(|v| from_bf16(to_bf16(v)) as f64);
            let packed = Packed::transposed(&case.w, n, k, k);
            let c = case.product(|c, ldc| {
                pool.install(|| gemm(isa, &case.a, case.lda, &packed, c, ldc, Epilogue::Bias(&case.bias)))
            });
            case.check(isa, &c, &want, 1e-5);
            for i in 0..m {
                // The column past each row's last (ldc = n + 1) is not C's: untouched.
                assert!(i + 1 == m || c[i * case.ldc() + n].is_nan(), "{isa:?} {m}x{k}x{n} wrote past row {i}");
            }
        });
    }

    #[test]
    fn it_stays_within_bf16_rounding_of_the_f32_product() {
        // The same product in f32 (gemm) and in bf16: the difference is the
        // inputs' rounding, ~2^-9 relative per factor, shrinking as √k over a sum.
        let (m, k, n) = (40, 384, 96);
        let a = random(m * k, 7);
        let w = random(n * k, 8);
        let bias = random(n, 9);
        let epi = Epilogue::BiasActivation(&bias, Activation::Gelu);
        let exact = sample::f32_product(&a, m, k, &w, n, epi);
        for isa in Isa::available() {
            let mut low = vec![0.0; m * n];
            gemm(isa, &a, k, &Packed::transposed(&w, n, k, k), &mut low, n, epi);
            let worst = sample::worst(&exact, &low);
            // |c| is ~√k/3 ≈ 6.5 here; bf16 inputs move it by ~0.4 % of one term times √k.
            assert!(worst < 0.05, "{isa:?}: {worst}");
            assert!(worst > 0.0, "{isa:?}: bf16 rounding should show");
        }
    }
}
