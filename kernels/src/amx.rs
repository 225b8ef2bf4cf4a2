//! The bfloat16 weight products ([`super::bf16`]) on Intel AMX tiles, where
//! the CPU has AMX-BF16 and the OS lets the process use it.
//!
//! One `tdpbf16ps` multiplies a 16 × 32 tile of A's bf16 values by a 32 × 16
//! tile of B's into 16 × 16 f32 sums: 8,192 multiply-adds, where AVX-512's
//! `vdpbf16ps` does 32. The inputs are rounded as the AVX-512 path rounds
//! them and the sums are f32, so the two paths differ only in the order of
//! their additions. B's tile is 16 rows of pairs of depth, which is what a
//! [`super::bf16::Packed`] panel already holds (two tiles side by side, read
//! with a stride), and A's rows of bf16 pairs are its tiles' rows as they are.
//!
//! Eight tile registers: two of A (32 rows), two of B (32 columns) and four of
//! sums, a 32 × 32 block of C per pass over the depth. Stable Rust has no AMX
//! intrinsics, so the instructions are inline assembly; the tile registers
//! are named in it, and hold nothing between calls ([`block`] configures them
//! and releases them).

use super::BF16_PANEL as NR;

/// Pairs of depth one tile holds: a 64-byte tile row.
pub(crate) const PAIRS: usize = 16;
/// Rows of C one pass computes: two tiles of A.
pub(crate) const ROWS: usize = 32;

/// Whether this process may use AMX-BF16 tiles: the CPU has them, and the OS
/// saves their state for it (asked once; Linux hands it out on request, for
/// the whole process and for good: its signal frames then have room for the
/// tiles, and a signal stack smaller than that is refused from then on).
#[cfg(target_arch = "x86_64")]
pub(crate) fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(os::enable)
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod os {
    /// `arch_prctl` asking for permission to use an extended state component.
    const ARCH_REQ_XCOMP_PERM: libc::c_ulong = 0x1023;
    /// The state component of AMX's tile data.
    const XFEATURE_XTILEDATA: libc::c_ulong = 18;

    /// The CPU has AMX-TILE and AMX-BF16, and the kernel granted the tile data state.
    pub(super) fn enable() -> bool {
        // CPUID leaf 7: EDX bit 22 is AMX-BF16, bit 24 AMX-TILE.
        let leaf = std::arch::x86_64::__cpuid_count(7, 0);
        if leaf.edx & (1 << 22) == 0 || leaf.edx & (1 << 24) == 0 {
            return false;
        }
        // SAFETY: a plain system call with integer arguments; a kernel without
        // AMX support (before 5.16) or refusing it answers an error, and no tile is used then.
        unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
    }
}

/// Other systems: the tile state is not asked for, so the AVX-512 path runs.
#[cfg(all(target_arch = "x86_64", not(target_os = "linux")))]
mod os {
    pub(super) fn enable() -> bool {
        false
    }
}

/// `C = A · B` for the rows of `c` (stride `ldc`) and `cols` columns: A rows of
/// `pairs` bf16 pairs at stride `lda`, `panels` B's packed panels for those
/// columns. `pairs` must be a multiple of [`PAIRS`]; only call this when
/// [`available`] said so.
pub(crate) fn block(a: &[u32], lda: usize, panels: &[u32], pairs: usize, cols: usize, c: &mut [f32], ldc: usize) {
    let m = c.len().div_ceil(ldc);
    if m == 0 || cols == 0 {
        return;
    }
    assert!(pairs > 0 && pairs.is_multiple_of(PAIRS), "depth of {pairs} pairs is not whole tiles");
    assert!(lda >= pairs && a.len() >= (m - 1) * lda + pairs, "A too short for {m} rows of {pairs} pairs");
    assert!(panels.len() >= cols.div_ceil(NR) * pairs * NR, "B too short for {cols} columns");
    assert!(ldc >= cols && c.len() >= (m - 1) * ldc + cols, "C too short for {m} rows of {cols}");
    #[cfg(target_arch = "x86_64")]
    {
        let _tiles = x86::Tiles::configure();
        // The last rows and columns go through buffers of a whole block.
        let mut a_tail = Vec::new();
        let mut c_tail = [0.0f32; ROWS * NR];
        for i in (0..m).step_by(ROWS) {
            let rows = ROWS.min(m - i);
            let (a_block, a_ld) = if rows == ROWS {
                (&a[i * lda..(i + ROWS - 1) * lda + pairs], lda)
            } else {
                a_tail.clear();
                a_tail.resize(ROWS * pairs, 0u32);
                for r in 0..rows {
                    a_tail[r * pairs..][..pairs].copy_from_slice(&a[(i + r) * lda..][..pairs]);
                }
                (&a_tail[..], pairs)
            };
            for j in 0..cols.div_ceil(NR) {
                let panel = &panels[j * pairs * NR..][..pairs * NR];
                let width = NR.min(cols - j * NR);
                let at = i * ldc + j * NR;
                if rows == ROWS && width == NR {
                    let out = &mut c[at..][..(ROWS - 1) * ldc + NR];
                    // SAFETY: the tiles are configured; A holds 32 rows of `pairs` at stride
                    // `a_ld`, the panel `pairs` rows of NR, `out` 32 rows of NR at stride `ldc`.
                    unsafe { x86::pass(pairs, a_block.as_ptr(), a_ld, panel.as_ptr(), out.as_mut_ptr(), ldc) };
                } else {
                    // SAFETY: as above, with `c_tail` 32 rows of NR at stride NR.
                    unsafe { x86::pass(pairs, a_block.as_ptr(), a_ld, panel.as_ptr(), c_tail.as_mut_ptr(), NR) };
                    for r in 0..rows {
                        c[at + r * ldc..][..width].copy_from_slice(&c_tail[r * NR..][..width]);
                    }
                }
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("AMX is never available off x86-64: {lda} {}", panels.len());
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{NR, PAIRS};
    use std::arch::asm;

    /// Rows of a tile.
    const TILE_ROWS: usize = 16;

    /// The tile registers configured for one block's passes on this thread;
    /// released when dropped (on the same thread: the tiles are its state).
    pub(super) struct Tiles(std::marker::PhantomData<*const ()>);

    /// `ldtilecfg`'s operand: palette 1, then each tile's bytes per row and rows.
    #[repr(C, align(64))]
    struct Config {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        bytes_per_row: [u16; 16],
        rows: [u8; 16],
    }

    impl Tiles {
        /// Every tile 16 rows of 64 bytes (the eight that exist).
        pub(super) fn configure() -> Self {
            // Without the OS's grant a tile instruction faults: never reached from a wrongly named `Isa`.
            assert!(super::available(), "AMX tiles used where the OS did not grant them");
            let config = Config {
                palette: 1,
                start_row: 0,
                reserved: [0; 14],
                bytes_per_row: std::array::from_fn(|t| if t < 8 { 64 } else { 0 }),
                rows: std::array::from_fn(|t| if t < 8 { TILE_ROWS as u8 } else { 0 }),
            };
            // SAFETY: `block` is only called once the CPU and OS were seen to support
            // AMX; the operand is a valid 64-byte palette-1 configuration.
            unsafe { asm!("ldtilecfg [{}]", in(reg) &raw const config, options(nostack, readonly)) };
            Self(std::marker::PhantomData)
        }
    }

    impl Drop for Tiles {
        fn drop(&mut self) {
            // SAFETY: the tiles were configured; releasing returns them to their
            // initial state, so a context switch need not save them.
            unsafe { asm!("tilerelease", options(nostack, nomem)) };
        }
    }

    /// One 32 × 32 block of C over the whole depth: sums in tmm0–3, A in tmm4–5, B in tmm6–7.
    ///
    /// One `asm!` from the zeroed sums to their store, with every tile register
    /// declared clobbered: nothing the compiler emits may sit between the steps.
    ///
    /// # Safety
    /// The tiles must be configured ([`Tiles`]); `a` readable for 32 rows of
    /// `pairs` words at stride `lda`, `b` for `pairs` rows of `NR` words, `c`
    /// writable for 32 rows of `NR` values at stride `ldc`; `pairs` a non-zero multiple of 16.
    pub(super) unsafe fn pass(pairs: usize, a: *const u32, lda: usize, b: *const u32, c: *mut f32, ldc: usize) {
        debug_assert!(pairs > 0 && pairs.is_multiple_of(PAIRS));
        // SAFETY: the caller's contract bounds every tile row read or written:
        // A's two tiles advance 64 bytes (16 pairs) a step, B's 16 rows of NR words.
        unsafe {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                "2:",
                "tileloadd tmm4, [{a0} + {sa} * 1]",
                "tileloadd tmm5, [{a1} + {sa} * 1]",
                "tileloadd tmm6, [{b} + {sb} * 1]",
                "tileloadd tmm7, [{b} + {sb} * 1 + 64]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                "add {a0}, 64",
                "add {a1}, 64",
                "add {b}, {b_step}",
                "dec {steps}",
                "jnz 2b",
                "tilestored [{c0} + {sc} * 1], tmm0",
                "tilestored [{c0} + {sc} * 1 + 64], tmm1",
                "tilestored [{c1} + {sc} * 1], tmm2",
                "tilestored [{c1} + {sc} * 1 + 64], tmm3",
                a0 = inout(reg) a => _,
                a1 = inout(reg) a.add(TILE_ROWS * lda) => _,
                b = inout(reg) b => _,
                steps = inout(reg) pairs / PAIRS => _,
                sa = in(reg) lda * 4,
                sb = in(reg) NR * 4,
                b_step = in(reg) PAIRS * NR * 4,
                c0 = in(reg) c,
                c1 = in(reg) c.add(TILE_ROWS * ldc),
                sc = in(reg) ldc * 4,
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                options(nostack),
            );
        }
    }

    /// `rounds` / 16 steps of four independent `tdpbf16ps` chains on this thread
    /// (the peak the benchmarks measure shares against).
    pub(crate) fn peak(rounds: usize) -> f64 {
        let _tiles = Tiles::configure();
        if rounds >= 16 {
            // SAFETY: tiles configured; only tile registers are touched.
            unsafe {
                asm!(
                    "tilezero tmm4",
                    "tilezero tmm5",
                    "tilezero tmm6",
                    "tilezero tmm7",
                    "2:",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    "dec {steps}",
                    "jnz 2b",
                    steps = inout(reg) rounds / 16 => _,
                    out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                    out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
                    options(nostack, nomem),
                );
            }
        }
        rounds as f64
    }
}

/// [`x86::peak`] where AMX is available.
#[cfg(target_arch = "x86_64")]
pub(crate) fn peak(rounds: usize) -> f64 {
    x86::peak(rounds)
}
