//! `C = A · B` for the forward pass, with B packed once into column panels.
//!
//! The layout is the classic register-blocked one (as in GotoBLAS, BLIS and
//! ONNX Runtime's MLAS): B is cut into panels of [`NR`] columns stored row by
//! row, so the micro-kernel streams one panel through L1 while it keeps an
//! [`MR`] × [`NR`] tile of C in registers and broadcasts A's values from
//! [`MR`] rows. A layer's weights are packed when the model loads; attention
//! packs its small per-head operands on the fly. The AVX2 path also copies
//! each block of A into strips of [`MR`] rows, column by column, so that its
//! micro-kernel reads A as one sequential stream (see [`blocked`]).

use super::Isa;
use super::buf::Buf;
use super::rows::{self, Activation};
use rayon::prelude::*;

/// Columns of a packed panel: two AVX registers.
pub const NR: usize = 16;
/// Rows of A one micro-kernel call covers: 12 accumulators + 2 B + 1 A register.
pub const MR: usize = 6;
/// Depth of one pass over a panel: a 16 KiB slice of it stays in L1.
const KC: usize = 256;
/// Rows of A per block: a 96 KiB block of A stays in L2 across the panels.
pub(crate) const MC: usize = 96;

/// B (k × n) packed into panels of [`NR`] columns, zero past `n`.
#[derive(Debug, Clone, Default)]
pub struct Packed {
    k: usize,
    n: usize,
    data: Buf<f32>,
}

impl Packed {
    /// Packs the transpose of `w` (`n` rows of `k` values, row stride `ld`):
    /// a linear layer's `[out, in]` weight becomes the `in × out` operand.
    pub fn transposed(w: &[f32], n: usize, k: usize, ld: usize) -> Self {
        let mut p = Self::default();
        p.repack_transposed(w, n, k, ld);
        p
    }

    /// [`Self::transposed`] into this buffer, reusing its memory.
    pub fn repack_transposed(&mut self, w: &[f32], n: usize, k: usize, ld: usize) {
        self.reshape(k, n);
        let panel_len = k * NR;
        for (j, panel) in self.data.to_mut().chunks_exact_mut(panel_len).enumerate() {
            for c in 0..NR.min(n - j * NR) {
                let row = &w[(j * NR + c) * ld..][..k];
                for (p, v) in row.iter().enumerate() {
                    panel[p * NR + c] = *v;
                }
            }
        }
    }

    /// [`Self::transposed`]'s counterpart for `b` already `k × n` (row stride `ld`), reusing memory.
    pub fn repack_rows(&mut self, b: &[f32], k: usize, n: usize, ld: usize) {
        self.reshape(k, n);
        let panel_len = k * NR;
        for (j, panel) in self.data.to_mut().chunks_exact_mut(panel_len).enumerate() {
            let cols = NR.min(n - j * NR);
            for p in 0..k {
                panel[p * NR..][..cols].copy_from_slice(&b[p * ld + j * NR..][..cols]);
            }
        }
    }

    /// A packing of `k × n` read back from `data` (as [`Self::data`] gave it);
    /// `None` when its length does not fit those sizes.
    pub fn from_data(k: usize, n: usize, data: Buf<f32>) -> Option<Self> {
        (data.len() == n.div_ceil(NR) * k * NR).then_some(Self { k, n, data })
    }

    /// The packed values, to keep (see [`Self::from_data`]).
    pub fn data(&self) -> &Buf<f32> {
        &self.data
    }

    /// Columns of B.
    pub fn n(&self) -> usize {
        self.n
    }

    fn reshape(&mut self, k: usize, n: usize) {
        self.k = k;
        self.n = n;
        let data = self.data.to_mut();
        data.clear();
        data.resize(n.div_ceil(NR) * k * NR, 0.0);
    }

    fn view(&self) -> View<'_> {
        View { k: self.k, n: self.n, data: &self.data[..] }
    }
}

/// Consecutive panels of a [`Packed`] B: its columns from some multiple of [`NR`] on.
#[derive(Clone, Copy)]
struct View<'a> {
    k: usize,
    n: usize,
    data: &'a [f32],
}

impl<'a> View<'a> {
    /// Panels `from..to`.
    pub(crate) fn panels_range(&self, from: usize, to: usize) -> View<'a> {
        let n = self.n.min(to * NR) - from * NR;
        View { k: self.k, n, data: &self.data[from * self.k * NR..to * self.k * NR] }
    }
}

/// What happens to C's values once the product is complete.
#[derive(Debug, Clone, Copy)]
pub enum Epilogue<'a> {
    /// Nothing.
    None,
    /// Add a bias per column.
    Bias(&'a [f32]),
    /// Add a bias per column, then apply an activation.
    BiasActivation(&'a [f32], Activation),
}

impl<'a> Epilogue<'a> {
    /// The same epilogue for the columns from `col` on.
    pub(crate) fn past_column(self, col: usize) -> Epilogue<'a> {
        match self {
            Epilogue::None => Epilogue::None,
            Epilogue::Bias(bias) => Epilogue::Bias(&bias[col..]),
            Epilogue::BiasActivation(bias, act) => Epilogue::BiasActivation(&bias[col..], act),
        }
    }
}

/// `C = A · B` (+ epilogue), A `m × b.k()` with row stride `lda`, C `m × b.n()`
/// with row stride `ldc`, shared out over the thread pool.
pub fn gemm(isa: Isa, a: &[f32], lda: usize, b: &Packed, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
    let view = b.view();
    shared(b.k, b.n, NR, MR, c, ldc, |row, col, cols, out, ld| {
        let panels = view.panels_range(col / NR, (col + cols).div_ceil(NR));
        gemm_view(isa, &a[row * lda..], lda, panels, out, ld, epilogue.past_column(col));
    });
}

/// Shares out the product `C (m × n) = A (m × k) · B` over the thread pool, for
/// a kernel whose B panels are `nr` columns wide and whose tiles are `mr` rows
/// high (a thread's rows are a multiple of them). `serial(row, col, cols, out,
/// ld)` computes rows `row..` (as many as `out` holds at stride `ld`) of
/// columns `col..col + cols` into `out`; `col` is a multiple of `nr`.
pub(crate) fn shared<F>(k: usize, n: usize, nr: usize, mr: usize, c: &mut [f32], ldc: usize, serial: F)
where
    F: Fn(usize, usize, usize, &mut [f32], usize) + Sync,
{
    let m = c.len().div_ceil(ldc);
    if m == 0 || n == 0 {
        return;
    }
    let threads = rayon::current_num_threads().max(1);
    // Small products are not worth a trip through the pool.
    if m * k * n < 1 << 18 || threads == 1 {
        return serial(0, 0, n, c, ldc);
    }
    if m <= MC {
        // Few rows (a query): split the columns, so that each thread reads only
        // its share of the weights; a row split would stream all of them per thread.
        let panels = n.div_ceil(nr);
        let per_group = panels.div_ceil(threads);
        let groups = panels.div_ceil(per_group);
        let parts: Vec<(usize, usize, Vec<f32>)> = (0..groups)
            .into_par_iter()
            .map(|g| {
                let col = g * per_group * nr;
                let cols = n.min(col + per_group * nr) - col;
                let mut part = vec![0.0f32; m * cols];
                serial(0, col, cols, &mut part, cols);
                (col, cols, part)
            })
            .collect();
        for (col, cols, part) in parts {
            for (r, row) in part.chunks_exact(cols).enumerate() {
                c[r * ldc + col..][..cols].copy_from_slice(row);
            }
        }
        return;
    }
    let per_task = rows_per_task(m, mr);
    c.par_chunks_mut(per_task * ldc).enumerate().for_each(|(t, rows)| serial(t * per_task, 0, n, rows, ldc));
}

/// How many of `m` rows one task of a product takes when the rows are shared
/// out: enough blocks for every thread, at most [`MC`] rows each, whole tiles of `mr`.
pub(crate) fn rows_per_task(m: usize, mr: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    m.div_ceil(threads * 2).next_multiple_of(mr).clamp(mr, MC.next_multiple_of(mr))
}

/// [`gemm`] on the calling thread only (attention runs one per head in parallel).
pub fn gemm_serial(isa: Isa, a: &[f32], lda: usize, b: &Packed, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
    gemm_view(isa, a, lda, b.view(), c, ldc, epilogue)
}

fn gemm_view(isa: Isa, a: &[f32], lda: usize, b: View, c: &mut [f32], ldc: usize, epilogue: Epilogue) {
    // Copying A into strips pays where several panels reuse them: with one or
    // two (attention's 32-column context product) it cost a quarter of the rate.
    #[cfg(target_arch = "x86_64")]
    if isa.has_avx2() && b.n > 2 * NR {
        blocked_strips(a, lda, b, c, ldc);
        return finish(isa, c, ldc, c.len().div_ceil(ldc), b.n, epilogue);
    }
    let blocking = Blocking { mr: MR, nr: NR, kc: KC };
    blocked(a, lda, b.data, b.k, b.n, c, ldc, blocking, None, |kc, a, lda, rows, panel, c, ldc, add| {
        tile(isa, kc, a, lda, rows, panel, c, ldc, add)
    });
    finish(isa, c, ldc, c.len().div_ceil(ldc), b.n, epilogue);
}

/// The AVX2 product: [`blocked`] with each `MC × KC` block of A first copied
/// into strips of [`MR`] rows, which every panel then reuses. The micro-kernel
/// reads one sequential stream of A instead of six rows a stride apart:
/// +20–40 % on the encoder's depth-384 products on a Zen 3 core, and the same
/// sums in the same order, so the same results to the bit.
#[cfg(target_arch = "x86_64")]
fn blocked_strips(a: &[f32], lda: usize, b: View, c: &mut [f32], ldc: usize) {
    let mut strips = super::scratch::F32.take(MC.next_multiple_of(MR) * KC);
    let blocking = Blocking { mr: MR, nr: NR, kc: KC };
    blocked(a, lda, b.data, b.k, b.n, c, ldc, blocking, Some(&mut strips), |kc, strip, _, _, panel, c, ldc, add| {
        assert!(strip.len() >= kc * MR && panel.len() >= kc * NR && c.len() >= (MR - 1) * ldc + NR);
        // SAFETY: `has_avx2` paths are only chosen when the CPU has AVX2 and FMA;
        // the assert above bounds every pointer the kernel forms.
        unsafe { avx2::tile(kc, strip.as_ptr(), panel.as_ptr(), c.as_mut_ptr(), ldc, add) }
    });
}

/// A micro-kernel's shape: `mr` rows × `nr` columns of C, `kc` steps of depth per pass.
#[derive(Clone, Copy)]
pub(crate) struct Blocking {
    pub(crate) mr: usize,
    pub(crate) nr: usize,
    pub(crate) kc: usize,
}

/// The blocked loop nest around a micro-kernel: `C = A · B` for A with `depth`
/// values a row (stride `lda`) and B packed as panels of `nr` columns, `depth`
/// rows each. `tile(kc, a, lda, rows, panel, c, ldc, add)` computes (or with
/// `add`, adds) one `rows × nr` tile over `kc` steps of depth into `mr` rows of `c`.
/// With `strips` (room for `MC` rows of `kc` values), each block of A is first
/// copied there as strips of `mr` rows, step by step (`strip[p * mr + r]`, rows
/// past `m` zero), and `tile` gets a strip instead of A's rows.
#[allow(clippy::too_many_arguments)]
pub(crate) fn blocked<T: Copy + Default, F>(
    a: &[T],
    lda: usize,
    panels: &[T],
    depth: usize,
    n: usize,
    c: &mut [f32],
    ldc: usize,
    b: Blocking,
    mut strips: Option<&mut [T]>,
    tile: F,
) where
    F: Fn(usize, &[T], usize, usize, &[T], &mut [f32], usize, bool),
{
    let m = c.len().div_ceil(ldc);
    assert!(m == 0 || c.len() >= (m - 1) * ldc + n, "C too short for {m} rows of {n}");
    assert!(m == 0 || a.len() >= (m - 1) * lda + depth, "A too short for {m} rows of {depth}");
    let mut tail = vec![0.0f32; b.mr * b.nr];
    for i0 in (0..m).step_by(MC) {
        let mc = MC.min(m - i0);
        for k0 in (0..depth).step_by(b.kc) {
            let kc = b.kc.min(depth - k0);
            if let Some(strips) = strips.as_deref_mut() {
                for (ii, strip) in (0..mc).step_by(b.mr).zip(strips.chunks_exact_mut(b.mr * kc)) {
                    for r in 0..b.mr {
                        let column = strip[r..].iter_mut().step_by(b.mr);
                        if ii + r < mc {
                            column.zip(&a[(i0 + ii + r) * lda + k0..][..kc]).for_each(|(s, &v)| *s = v);
                        } else {
                            column.for_each(|s| *s = T::default());
                        }
                    }
                }
            }
            for j in 0..n.div_ceil(b.nr) {
                let panel = &panels[j * depth * b.nr + k0 * b.nr..][..kc * b.nr];
                let cols = b.nr.min(n - j * b.nr);
                for ii in (0..mc).step_by(b.mr) {
                    let rows = b.mr.min(mc - ii);
                    let a_tile = match strips.as_deref() {
                        Some(strips) => &strips[ii * kc..][..b.mr * kc],
                        None => &a[(i0 + ii) * lda + k0..],
                    };
                    let c_at = (i0 + ii) * ldc + j * b.nr;
                    if rows == b.mr && cols == b.nr {
                        tile(kc, a_tile, lda, rows, panel, &mut c[c_at..], ldc, k0 > 0);
                    } else {
                        // A partial tile goes through a full-size buffer.
                        tile(kc, a_tile, lda, rows, panel, &mut tail, b.nr, false);
                        for r in 0..rows {
                            let out = &mut c[c_at + r * ldc..][..cols];
                            let src = &tail[r * b.nr..][..cols];
                            if k0 > 0 {
                                out.iter_mut().zip(src).for_each(|(o, s)| *o += s);
                            } else {
                                out.copy_from_slice(src);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Applies `epilogue` to `rows` finished rows of `n` values at stride `ldc`.
pub(crate) fn finish(isa: Isa, c: &mut [f32], ldc: usize, rows: usize, n: usize, epilogue: Epilogue) {
    let (bias, act) = match epilogue {
        Epilogue::None => return,
        Epilogue::Bias(bias) => (bias, None),
        Epilogue::BiasActivation(bias, act) => (bias, Some(act)),
    };
    for r in 0..rows {
        let row = &mut c[r * ldc..][..n];
        match act {
            Some(act) => rows::bias_activation(isa, row, n, bias, act),
            None => row.iter_mut().zip(bias).for_each(|(v, b)| *v += b),
        }
    }
}

/// One `rows × NR` tile: `C (+)= A[rows × kc] · panel[kc × NR]`, A read in
/// place (row stride `lda`). `c` must hold `MR` rows of stride `ldc` (full or
/// a scratch tile); A rows past `rows` are not read.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn tile(isa: Isa, kc: usize, a: &[f32], lda: usize, rows: usize, panel: &[f32], c: &mut [f32], ldc: usize, add: bool) {
    assert!((1..=MR).contains(&rows) && a.len() >= (rows - 1) * lda + kc && panel.len() >= kc * NR);
    assert!(c.len() >= (MR - 1) * ldc + NR);
    #[cfg(target_arch = "x86_64")]
    if isa.has_avx2() {
        // SAFETY: `has_avx2` paths are only chosen when the CPU has both; the asserts above
        // bound every pointer the kernel forms.
        return unsafe { avx2::tile_rows(kc, a.as_ptr(), lda, rows, panel.as_ptr(), c.as_mut_ptr(), ldc, add) };
    }
    portable_tile(kc, a, lda, rows, panel, c, ldc, add)
}

/// The micro-kernel in plain Rust: fixed-size arrays the compiler keeps in
/// vector registers on any target.
#[allow(clippy::too_many_arguments)]
fn portable_tile(kc: usize, a: &[f32], lda: usize, rows: usize, panel: &[f32], c: &mut [f32], ldc: usize, add: bool) {
    let mut acc = [[0.0f32; NR]; MR];
    let row_at: [usize; MR] = std::array::from_fn(|r| r.min(rows - 1) * lda);
    for (p, b) in panel.chunks_exact(NR).take(kc).enumerate() {
        for r in 0..MR {
            let av = a[row_at[r] + p];
            for (x, bv) in acc[r].iter_mut().zip(b) {
                *x += av * bv;
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
mod avx2 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// The AVX2 + FMA micro-kernel: 6 × 16 accumulators, two B loads and six
    /// broadcasts from one strip of A per step of k.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `strip` must be readable for `kc · MR`
    /// values, `b` for `kc · NR`, `c` writable for `MR` rows of `NR` values at
    /// stride `ldc`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile(kc: usize, strip: *const f32, b: *const f32, c: *mut f32, ldc: usize, add: bool) {
        // SAFETY (whole body): the caller's contract bounds every offset used.
        unsafe {
            let mut acc = [_mm256_setzero_ps(); 2 * MR];
            for p in 0..kc {
                let b0 = _mm256_loadu_ps(b.add(p * NR));
                let b1 = _mm256_loadu_ps(b.add(p * NR + 8));
                for r in 0..MR {
                    let av = _mm256_broadcast_ss(&*strip.add(p * MR + r));
                    acc[2 * r] = _mm256_fmadd_ps(av, b0, acc[2 * r]);
                    acc[2 * r + 1] = _mm256_fmadd_ps(av, b1, acc[2 * r + 1]);
                }
            }
            store(&acc, c, ldc, add);
        }
    }

    /// [`tile`] with A read in place: `rows` rows at stride `lda` (the last
    /// one repeated past `rows`). Its loop is [`tile`]'s, as the bf16 and int8
    /// micro-kernels' are, each with its own registers and multiply-add: kept
    /// apart, as a shared body would hide which instructions each path runs.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `a` must be readable for `rows` rows of
    /// `kc` values at stride `lda`, `b` for `kc · NR` values, `c` writable for
    /// `MR` rows of `NR` values at stride `ldc`.
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn tile_rows(
        kc: usize,
        a: *const f32,
        lda: usize,
        rows: usize,
        b: *const f32,
        c: *mut f32,
        ldc: usize,
        add: bool,
    ) {
        // SAFETY (whole body): the caller's contract bounds every offset used.
        unsafe {
            let ar: [*const f32; MR] = std::array::from_fn(|r| a.add(r.min(rows - 1) * lda));
            let mut acc = [_mm256_setzero_ps(); 2 * MR];
            for p in 0..kc {
                let b0 = _mm256_loadu_ps(b.add(p * NR));
                let b1 = _mm256_loadu_ps(b.add(p * NR + 8));
                for r in 0..MR {
                    let av = _mm256_broadcast_ss(&*ar[r].add(p));
                    acc[2 * r] = _mm256_fmadd_ps(av, b0, acc[2 * r]);
                    acc[2 * r + 1] = _mm256_fmadd_ps(av, b1, acc[2 * r + 1]);
                }
            }
            store(&acc, c, ldc, add);
        }
    }

    /// Writes (or with `add`, adds) the 6 × 16 sums to `c`. (`bf16::avx512::store`
    /// takes the same steps on 16-lane registers: per-ISA twins, apart because
    /// their intrinsics differ.)
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `c` must be writable for `MR` rows of `NR` values at stride `ldc`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn store(acc: &[__m256; 2 * MR], c: *mut f32, ldc: usize, add: bool) {
        // SAFETY: the caller's contract bounds every offset used.
        unsafe {
            for r in 0..MR {
                let out = c.add(r * ldc);
                let (mut lo, mut hi) = (acc[2 * r], acc[2 * r + 1]);
                if add {
                    lo = _mm256_add_ps(lo, _mm256_loadu_ps(out));
                    hi = _mm256_add_ps(hi, _mm256_loadu_ps(out.add(8)));
                }
                _mm256_storeu_ps(out, lo);
                _mm256_storeu_ps(out.add(8), hi);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::{self, Case, random};

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_in_strips_sums_to_the_bit_what_a_in_place_does() {
        // Vectors already in a store must not move when the loop nest changes:
        // the same sums in the same order, tails of MR, NR and KC included.
        if !Isa::available().contains(&Isa::Avx2Fma) {
            return;
        }
        for &(m, k, n) in &[(1, 384, 1152), (7, 300, 33), (257, 520, 40), (23, 384, 1536), (100, 1536, 384)] {
            let lda = k + 3;
            let a = random(m * lda, (m * k) as u64);
            let packed = Packed::transposed(&random(n * k, n as u64), n, k, k);
            let mut strips = vec![0.0f32; m * n];
            blocked_strips(&a, lda, packed.view(), &mut strips, n);
            let mut rows = vec![0.0f32; m * n];
            let blocking = Blocking { mr: MR, nr: NR, kc: KC };
            blocked(&a, lda, &packed.data, k, n, &mut rows, n, blocking, None, |kc, a, lda, r, panel, c, ldc, add| {
                tile(Isa::Avx2Fma, kc, a, lda, r, panel, c, ldc, add)
            });
            assert!(strips.iter().zip(&rows).all(|(x, y)| x.to_bits() == y.to_bits()), "{m}x{k}x{n}");
        }
    }

    #[test]
    fn every_path_matches_the_reference_on_awkward_shapes() {
        // m, k, n: single rows, tails of MR and NR, k across KC blocks, 257.
        // Serial, row-split and column-split products, on pools of several sizes.
        let shapes = [
            (1, 1, 1),
            (1, 384, 1152),
            (5, 7, 17),
            (7, 300, 33),
            (257, 257, 40),
            (97, 520, 16),
            (13, 32, 257),
            (50, 600, 200),
            (96, 384, 1536),
        ];
        sample::every_path_pool_and_shape(&shapes, |isa, pool, m, k, n| {
            let case = Case::new(m, k, n);
            // C = A · Wᵀ in f64, the plain reference.
            let want = case.reference(|v| v as f64);
            let packed = Packed::transposed(&case.w, n, k, k);
            let c = case.product(|c, ldc| {
                pool.install(|| gemm(isa, &case.a, case.lda, &packed, c, ldc, Epilogue::Bias(&case.bias)))
            });
            case.check(isa, &c, &want, 1e-4);
            // The same B from rows (k × n) gives the same product.
            let mut b = vec![0.0; k * n];
            for p in 0..k {
                for j in 0..n {
                    b[p * n + j] = case.w[j * k + p];
                }
            }
            let mut from_rows = Packed::default();
            from_rows.repack_rows(&b, k, n, n);
            assert_eq!(&from_rows.data[..], &packed.data[..]);
        });
    }

    #[test]
    fn the_activation_epilogue_applies_after_the_whole_sum() {
        for isa in Isa::available() {
            let (m, k, n) = (20, 600, 48);
            let a = random(m * k, 1);
            let w = random(n * k, 2);
            let bias = random(n, 3);
            let packed = Packed::transposed(&w, n, k, k);
            let mut plain = vec![0.0; m * n];
            gemm(isa, &a, k, &packed, &mut plain, n, Epilogue::Bias(&bias));
            rows::bias_activation(isa, &mut plain, n, &vec![0.0; n], Activation::Relu);
            let mut fused = vec![0.0; m * n];
            gemm(isa, &a, k, &packed, &mut fused, n, Epilogue::BiasActivation(&bias, Activation::Relu));
            assert_eq!(plain, fused, "{isa:?}");
        }
    }
}
